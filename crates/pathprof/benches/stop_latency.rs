//! How soon a signal stops a program in a tight loop: `pathprof run` (each mode) on a program that
//! never ends, `SIGINT` once it has run a second, and the time from the signal to pathprof's exit —
//! the guest stopped at its next loop header or function entry, the run concluded, the profile
//! written. Ten runs per mode; the median and the maximum.
//!
//! ```sh
//! cargo bench -p pathprof --bench stop_latency
//! ```

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs per mode.
const RUNS: usize = 10;

/// A loop calling a function of two paths, forever (the program of the stopping tests).
const FOREVER: &str = include_str!("../tests/common/forever.wat");

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("forever.wasm");
    std::fs::write(&wasm, wat::parse_str(FOREVER).unwrap()).unwrap();
    let out = dir.path().join("p.json");
    println!("{:<8} {:>6} {:>10} {:>10}", "mode", "runs", "median ms", "max ms");
    for mode in ["none", "bl", "pep", "kbl:8", "events"] {
        let mut latencies = Vec::new();
        for _ in 0..RUNS {
            let mut child = Command::new(env!("CARGO_BIN_EXE_pathprof"))
                .args(["run", "--quiet", "--mode", mode, "-o"])
                .arg(&out)
                .arg(&wasm)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_secs(1));
            let pid = libc::pid_t::try_from(child.id()).unwrap();
            let signalled = Instant::now();
            // The signal straight from this process: spawning `kill` took 0.2–0.3 s about once in
            // 25 runs on a loaded machine, which this bench then counted as pathprof's.
            // SAFETY: `kill` has no memory-safety preconditions; `pid` is our child, not yet reaped.
            assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
            let status = child.wait().unwrap();
            latencies.push(signalled.elapsed().as_secs_f64() * 1e3);
            assert_eq!(status.code(), Some(130), "{mode}: pathprof exits 130 on SIGINT");
        }
        latencies.sort_by(f64::total_cmp);
        println!(
            "{mode:<8} {:>6} {:>10.1} {:>10.1}",
            latencies.len(),
            latencies[latencies.len() / 2],
            latencies[latencies.len() - 1]
        );
    }
}
