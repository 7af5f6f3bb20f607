//! How long the poll pass takes (`pathprof_wasm::polls::add_polls`, which every `pathprof run` of a
//! core module goes through before compiling, cached compile or not), on each module given:
//!
//! ```sh
//! cargo run --release -p pathprof-wasm --example polls_time -- APP.wasm...
//! ```

use std::error::Error;
use std::time::Instant;

fn main() -> Result<(), Box<dyn Error>> {
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let start = Instant::now();
        let polled = pathprof_wasm::polls::add_polls(&bytes).map_err(|e| format!("{path}: {e}"))?;
        let seconds = start.elapsed().as_secs_f64();
        println!("{path}: {} bytes in, {} bytes out, {seconds:.3} s", bytes.len(), polled.len());
    }
    Ok(())
}
