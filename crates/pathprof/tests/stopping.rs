//! A profile is never lost: a program stopped by `SIGINT`, `SIGTERM` or `--time-limit` ends its run
//! as a trap ends it — its profile written, consistent and marked stopped, the exit status the
//! shell expects — and a second signal ends pathprof at once. Snapshots while a program runs are
//! whole profiles of the run so far.

mod common;

use common::{check_balance, pathprof};
use pathprof_core::profile::{Profile, U64};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A program that never ends: a loop that calls a function with two paths, alternately.
const FOREVER: &str = include_str!("common/forever.wat");

fn program(dir: &Path, name: &str, wat: &str) {
    std::fs::write(dir.join(name), wat::parse_str(wat).unwrap()).unwrap();
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    pathprof()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill").args(["-s", name, &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill -s {name}");
}

/// Waits for `child` to end, at most `limit`; its exit status, or `None` if it has not ended.
fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn read(path: &Path) -> Profile {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Profile::from_json(&text).unwrap()
}

/// The interesting paths of a `ppp` run: those of a `bl` run a fifth of a second long.
fn interesting(dir: &Path) {
    let out = pathprof()
        .current_dir(dir)
        .args(["run", "--quiet", "--time-limit", "0.2", "-o", "test.prof", "forever.wasm"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn signals_and_time_limits_stop_the_run_with_its_profile() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    program(d, "forever.wasm", FOREVER);
    interesting(d);
    let modes: [&[&str]; 6] = [
        &["--mode", "bl"],
        &["--mode", "pep"],
        &["--mode", "kbl"],
        &["--mode", "ppp", "--interesting", "test.prof"],
        &["--mode", "events"],
        &["--mode", "none"],
    ];
    for mode in modes {
        for (how, code, reason) in [("INT", 130, "SIGINT"), ("TERM", 143, "SIGTERM"), ("limit", 124, "time limit")] {
            let mut args = vec!["run", "--quiet", "-o", "p.json"];
            args.extend(mode);
            if how == "limit" {
                args.extend(["--time-limit", "1"]);
            }
            args.push("forever.wasm");
            let mut child = spawn(d, &args);
            if how != "limit" {
                std::thread::sleep(Duration::from_millis(700));
                signal(&child, how);
            }
            let status = wait(&mut child, Duration::from_secs(20));
            if status.is_none() {
                child.kill().unwrap();
            }
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            assert_eq!(status, Some(code), "{mode:?} {how}: {stderr}");
            let p = read(&d.join("p.json"));
            assert_eq!(p.stopped.as_deref(), Some(reason), "{mode:?} {how}");
            assert_eq!((p.exit_code, p.trap.as_deref()), (code, None), "{mode:?} {how}");
            if mode[1] == "none" {
                continue;
            }
            assert!(p.open_activations_at_exit >= 1, "{mode:?} {how}: _start is still running");
            if mode[1] != "pep" {
                assert!(p.path_executions.0 > 0, "{mode:?} {how}: the loop ran");
                check_balance(&p);
            }
            std::fs::remove_file(d.join("p.json")).unwrap();
        }
    }
}

/// A guest blocked in a host call (reading its standard input) stops once the call returns; a
/// second signal ends pathprof at once, without a profile.
#[test]
fn a_second_signal_ends_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let reads = r#"(module
      (import "wasi_snapshot_preview1" "fd_read" (func $read (param i32 i32 i32 i32) (result i32)))
      (memory (export "memory") 1)
      (func (export "_start")
        (i32.store (i32.const 0) (i32.const 16))
        (i32.store (i32.const 4) (i32.const 8))
        (drop (call $read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 8)))))"#;
    program(d, "reads.wasm", reads);
    let mut child = spawn(d, &["run", "--quiet", "-o", "p.json", "reads.wasm"]);
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, "INT");
    assert_eq!(wait(&mut child, Duration::from_millis(500)), None, "blocked in fd_read, it cannot stop yet");
    signal(&child, "INT");
    assert_eq!(wait(&mut child, Duration::from_secs(10)), Some(130));
    assert!(!d.join("p.json").exists());
}

#[test]
fn hpp_and_bench_stop_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    program(d, "forever.wasm", FOREVER);
    let mut hpp = spawn(d, &["hpp", "--json", "hpp.json", "forever.wasm"]);
    std::thread::sleep(Duration::from_millis(700));
    signal(&hpp, "INT");
    assert_eq!(wait(&mut hpp, Duration::from_secs(20)), Some(130));
    let figures: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("hpp.json")).unwrap()).unwrap();
    assert_eq!(figures["stopped"], "SIGINT");
    assert!(figures["branches"].as_u64().unwrap() > 0);

    let corpus = d.join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    program(&corpus, "forever.wasm", FOREVER);
    let mut bench = spawn(d, &["bench", "corpus", "--json", "bench.json"]);
    std::thread::sleep(Duration::from_millis(700));
    signal(&bench, "TERM");
    assert_eq!(wait(&mut bench, Duration::from_secs(20)), Some(143));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("bench.json")).unwrap()).unwrap();
    assert_eq!(report["stopped"], "SIGTERM");
    assert_eq!(report["programs"].as_array().unwrap().len(), 0);
}

/// A program that runs a fixed number of rounds of the loop of [`FOREVER`].
const ROUNDS: &str = r#"
(module
  (func $step (param $i i32) (result i32)
    (if (result i32) (i32.and (local.get $i) (i32.const 1))
      (then (i32.add (local.get $i) (i32.const 3)))
      (else (i32.sub (local.get $i) (i32.const 1)))))
  (func (export "_start") (local $i i32) (local $n i32)
    (loop $l
      (local.set $i (call $step (local.get $i)))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $n) (i32.const 400000000))))))
"#;

/// Every path's count, by function and ID.
fn counts(p: &Profile) -> HashMap<(u32, U64), u64> {
    p.functions.iter().flat_map(|f| f.paths().iter().map(move |x| ((f.index, x.id), x.count.0))).collect()
}

#[test]
fn snapshots_are_whole_profiles_of_the_run_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    program(d, "rounds.wasm", ROUNDS);
    for mode in ["bl", "pep:every:7"] {
        let run = |args: &[&str]| {
            let mut all = vec!["run", "--quiet", "--deterministic", "--mode", mode];
            all.extend(args);
            all.push("rounds.wasm");
            let out = pathprof().current_dir(d).args(all).output().unwrap();
            assert!(out.status.success(), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        };
        run(&["-o", "plain.json"]);
        run(&["-o", "p.json", "--snapshot-every", "0.1", "--snapshot-files"]);
        let last = read(&d.join("p.json"));
        let plain = read(&d.join("plain.json"));
        assert_eq!(counts(&last), counts(&plain), "{mode}: snapshots change nothing of the run");
        assert!(last.snapshot.is_none() && last.run_id.is_some());
        let mut before = HashMap::new();
        let mut index = 1;
        while d.join(format!("p.{index}.json")).exists() {
            let s = read(&d.join(format!("p.{index}.json")));
            let info = s.snapshot.unwrap_or_else(|| panic!("{mode}: p.{index}.json is a snapshot"));
            assert_eq!((info.index, &s.run_id), (index, &last.run_id), "{mode}");
            let now = counts(&s);
            for (path, n) in &before {
                assert!(now.get(path).is_some_and(|m| m >= n), "{mode}: counts never go down");
            }
            before = now;
            index += 1;
        }
        assert!(index > 4, "{mode}: {} snapshots of a run of a second or more", index - 1);
        for (path, n) in &before {
            assert!(counts(&last).get(path).is_some_and(|m| m >= n), "{mode}");
        }
        // A snapshot holds the ones before it: they do not add up.
        let out = pathprof().current_dir(d).args(["merge", "p.1.json", "p.2.json", "-o", "sum.json"]).output();
        let stderr = String::from_utf8(out.unwrap().stderr).unwrap();
        assert!(stderr.contains("merge only its last"), "{stderr}");
        for f in std::fs::read_dir(d).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "json") {
                std::fs::remove_file(f).unwrap();
            }
        }
    }
    let out = pathprof().current_dir(d).args(["run", "--mode", "kbl", "--snapshot-every", "1", "rounds.wasm"]).output();
    let stderr = String::from_utf8(out.unwrap().stderr).unwrap();
    assert!(stderr.contains("--snapshot-every does not apply to --mode kbl"), "{stderr}");
}
