//! What being stoppable costs the program. A run stops at the guest's next function entry or loop
//! header, through Wasmtime's epoch checks there (a load, a compare and a branch; components and
//! runs that take snapshots) or through stop polls (one load; core modules otherwise; `stop`). This
//! runs every program of the corpus uninstrumented three ways, interleaved, `ROUNDS` times each: as
//! it is under an engine without epoch interruption, under one with it, and with its polls
//! (`pathprof_wasm::polls`) under the first; and prints the ratios of the medians of their bench
//! regions to the first.
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
    let (mut ratios, mut poll_ratios) = (Vec::new(), Vec::new());
    println!("{:<44} {:>10} {:>8} {:>8}", "program", "median ms", "epochs", "polls");
    for wasm in found {
        let folder = wasm.parent().unwrap();
        let name = wasm.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&wasm).unwrap();
        let polled = pathprof_wasm::polls::add_polls(&bytes).unwrap();
        let (m_off, m_on) = (Module::new(&off, &bytes).unwrap(), Module::new(&on, &bytes).unwrap());
        let m_polls = Module::new(&off, &polled).unwrap();
        let (mut t_off, mut t_on, mut t_polls) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            t_off.push(run(&off, &m_off, folder, &name));
            t_on.push(run(&on, &m_on, folder, &name));
            t_polls.push(run(&off, &m_polls, folder, &name));
        }
        let (a, b, c) = (median(t_off), median(t_on), median(t_polls));
        let label = wasm.strip_prefix(&corpus).unwrap_or(&wasm).display().to_string();
        if a < 1e-3 {
            println!("{label:<44} {:>10.3} {:>8}", a * 1e3, "(short)");
            continue;
        }
        ratios.push(b / a);
        poll_ratios.push(c / a);
        println!("{label:<44} {:>10.1} {:>8.3} {:>8.3}", a * 1e3, b / a, c / a);
    }
    for (what, ratios) in [("epochs", &ratios), ("polls", &poll_ratios)] {
        let geomean = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let max = ratios.iter().copied().fold(f64::NAN, f64::max);
        println!("{what}: geometric mean {geomean:.3}, maximum {max:.3}, over {} programs", ratios.len());
    }
}
