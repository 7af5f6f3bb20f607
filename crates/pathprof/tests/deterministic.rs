//! `--deterministic`: what a program can observe — its clocks, its random numbers — repeats from
//! run to run, and so does its profile.

mod common;

use common::{corpus_config, corpus_dir, pathprof};
use pathprof::{Inputs, Mode, Prepared, RunConfig};
use pathprof_core::profile::Profile;

/// Writes the wall clock's reading, then the monotonic clock's twice, as raw bytes.
const CLOCKS: &str = r#"
(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $time (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    (drop (call $time (i32.const 0) (i64.const 1) (i32.const 16)))
    (drop (call $time (i32.const 1) (i64.const 1) (i32.const 24)))
    (drop (call $time (i32.const 1) (i64.const 1) (i32.const 32)))
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 24))
    (drop (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
"#;

#[test]
fn a_program_reading_the_clock_reads_the_same_in_every_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("clocks.wasm"), wat::parse_str(CLOCKS).unwrap()).unwrap();
    let run = |extra: &[&str]| {
        let out = pathprof()
            .current_dir(dir.path())
            .args(["run", "--quiet"])
            .args(extra)
            .arg("clocks.wasm")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let words: Vec<u64> = out.stdout.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(words.len(), 3);
        words
    };
    let first = run(&["--deterministic"]);
    assert_eq!(first, run(&["--deterministic"]), "the same readings in every run");
    // 2000-01-01, and a monotonic clock one step further at each reading.
    assert_eq!(first[0], 946_684_800 * 1_000_000_000);
    assert_eq!(first[2] - first[1], 1_000_000);
    assert_ne!(run(&[])[0], first[0], "the real clock otherwise");
    let p = Profile::from_json(&std::fs::read_to_string(dir.path().join("pathprof.json")).unwrap()).unwrap();
    assert!(!p.deterministic && p.random_seed.is_none());
    run(&["--deterministic", "-o", "d.json"]);
    let p = Profile::from_json(&std::fs::read_to_string(dir.path().join("d.json")).unwrap()).unwrap();
    assert!(p.deterministic);
    assert_eq!(p.random_seed, Some(0));
}

/// Every program of the corpus, run twice deterministically, takes the same paths the same number
/// of times (some read the clock or random numbers, and differ from run to run otherwise).
#[test]
fn corpus_programs_repeat_exactly() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let engine = pathprof_runtime::engine().unwrap();
    let bl = Mode::parse("bl").unwrap();
    for wasm in pathprof::bench::programs(&dir).unwrap() {
        let name = wasm.strip_prefix(&dir).unwrap().display().to_string();
        let bytes = std::fs::read(&wasm).unwrap();
        let config = RunConfig { deterministic: true, ..corpus_config(&wasm) };
        let prepared = Prepared::new(&bytes, &name, &bl, &Inputs::default()).unwrap();
        let profile = || {
            let run = prepared.run(&engine, &config).unwrap();
            let p = prepared.profile(&run, &config).unwrap();
            let paths: Vec<_> = p.functions.iter().map(|f| (f.index, f.paths().to_vec())).collect();
            (run.outcome.stdout, run.outcome.exit_code, paths)
        };
        assert!(profile() == profile(), "{name}: two deterministic runs differ");
    }
}
