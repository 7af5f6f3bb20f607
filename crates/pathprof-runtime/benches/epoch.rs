//! What epoch interruption costs the program. Every engine pathprof builds checks the epoch at each
//! function entry and loop header (a load and a compare), so that a signal, a time limit or a
//! snapshot can stop or pause the guest (`stop`). This runs every program of the corpus
//! uninstrumented under two engines that differ only in that setting, interleaved, `ROUNDS` times
//! each, and prints the ratio of the medians of their bench regions (with / without).
//!
//! ```sh
//! cargo bench -p pathprof-runtime --bench epoch [-- CORPUS]
//! ```

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wasmtime::{Caller, Config, Engine, Linker, Module, Store};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::WasiCtxBuilder;

const ROUNDS: usize = 7;

struct Host {
    wasi: WasiP1Ctx,
    start: Option<Instant>,
    region: Duration,
}

fn engine(epoch: bool) -> Engine {
    let mut config = Config::new();
    config.epoch_interruption(epoch);
    Engine::new(&config).unwrap()
}

/// The bench region of one run of `module` (in `folder`, as the corpus's conventions say).
fn run(engine: &Engine, module: &Module, folder: &Path, name: &str) -> f64 {
    let mut wasi = WasiCtxBuilder::new();
    wasi.stdout(MemoryOutputPipe::new(1 << 26)).stderr(MemoryOutputPipe::new(1 << 26));
    wasi.args(&[name]);
    wasi.preopened_dir(folder, ".", wasmtime_wasi::FsPerms::ReadWrite).unwrap();
    let mut store = Store::new(engine, Host { wasi: wasi.build_p1(), start: None, region: Duration::ZERO });
    store.set_epoch_deadline(u64::MAX);
    let mut linker: Linker<Host> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |h: &mut Host| &mut h.wasi).unwrap();
    linker.func_wrap("bench", "start", |mut c: Caller<'_, Host>| c.data_mut().start = Some(Instant::now())).unwrap();
    linker
        .func_wrap("bench", "end", |mut c: Caller<'_, Host>| {
            let host = c.data_mut();
            if let Some(s) = host.start.take() {
                host.region += s.elapsed();
            }
        })
        .unwrap();
    let instance = linker.instantiate(&mut store, module).unwrap();
    let start = instance.get_typed_func::<(), ()>(&mut store, "_start").unwrap();
    // Programs may end through proc_exit; the region is what they measured.
    let _ = start.call(&mut store, ());
    store.data().region.as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn programs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            programs(&path, out);
        } else if path.extension().is_some_and(|e| e == "wasm") {
            out.push(path);
        }
    }
}

fn main() {
    let corpus = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus")), PathBuf::from);
    let mut found = Vec::new();
    programs(&corpus, &mut found);
    if found.is_empty() {
        println!("no programs under {}", corpus.display());
        return;
    }
    let (off, on) = (engine(false), engine(true));
    let mut ratios = Vec::new();
    println!("{:<44} {:>10} {:>8}", "program", "median ms", "ratio");
    for wasm in found {
        let folder = wasm.parent().unwrap();
        let name = wasm.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&wasm).unwrap();
        let (m_off, m_on) = (Module::new(&off, &bytes).unwrap(), Module::new(&on, &bytes).unwrap());
        let (mut t_off, mut t_on) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            t_off.push(run(&off, &m_off, folder, &name));
            t_on.push(run(&on, &m_on, folder, &name));
        }
        let (a, b) = (median(t_off), median(t_on));
        let label = wasm.strip_prefix(&corpus).unwrap_or(&wasm).display().to_string();
        if a < 1e-3 {
            println!("{label:<44} {:>10.3} {:>8}", a * 1e3, "(short)");
            continue;
        }
        ratios.push(b / a);
        println!("{label:<44} {:>10.1} {:>8.3}", a * 1e3, b / a);
    }
    let geomean = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
    let max = ratios.iter().copied().fold(f64::NAN, f64::max);
    println!("geometric mean {geomean:.3}, maximum {max:.3}, over {} programs", ratios.len());
}
