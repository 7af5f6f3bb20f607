//! Makes a WASI preview 2 command component of a preview-1 command module, with the preview-1
//! adapter that Wasmtime publishes (as `wasm-tools component new --adapt` does):
//!
//! ```sh
//! cargo run --release -p pathprof --example componentize -- IN.wasm OUT.wasm
//! ```
//!
//! `scripts/large-programs.sh` uses it to profile large programs as components.

use wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = &args[..] else {
        eprintln!("usage: componentize IN.wasm OUT.wasm");
        std::process::exit(2);
    };
    let fail = |what: &str, e: &dyn std::fmt::Display| -> ! {
        eprintln!("componentize: {what}: {e}");
        std::process::exit(1);
    };
    let module = std::fs::read(input).unwrap_or_else(|e| fail(input, &e));
    let component = wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .and_then(|e| e.adapter("wasi_snapshot_preview1", WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER))
        .and_then(|mut e| e.encode())
        .unwrap_or_else(|e| fail(input, &format!("{e:#}")));
    std::fs::write(output, component).unwrap_or_else(|e| fail(output, &e));
}
