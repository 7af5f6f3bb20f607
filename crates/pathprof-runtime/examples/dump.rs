fn main() {
    let args: Vec<String> = std::env::args().collect();
    let engine = pathprof_runtime::engine().unwrap();
    let mut bytes = std::fs::read(&args[1]).unwrap();
    if args.len() > 3 {
        let mut o = pathprof_wasm::InstrumentOptions::default();
        o.sampled = true;
        o.sample_buffer = Some(64);
        bytes = pathprof_wasm::instrument(&bytes, &o).unwrap().bytes;
        std::fs::write(format!("{}.wasm", args[2]), &bytes).unwrap();
    }
    let elf = engine.precompile_module(&bytes).unwrap();
    std::fs::write(&args[2], elf).unwrap();
}
