//! Mode `events` through the command line, on programs whose events are counted by hand: every
//! strategy and every cut gives the same totals, per function and overall; a `proc_exit` or a trap
//! mid-path gives totals within the bounds the profile states; `report --by EVENT` ranks paths by
//! their events; bad event options are refused.

mod common;

use common::{fails_cleanly, function, pathprof, run_wat, Run};
use pathprof_core::profile::Profile;

/// `work(10)` runs a loop ten times: odd rounds load a byte, even rounds store 8 bytes and call the
/// allocator. `_start` calls `work` and then `TAIL`.
fn program(tail: &str) -> String {
    format!(
        r#"(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (func $malloc (param i32) (result i32) (local.get 0))
  (func $work (param $n i32)
    (local $i i32)
    (loop $l
      (if (i32.and (local.get $i) (i32.const 1))
        (then (drop (i32.load8_u (local.get $i))))
        (else
          (i64.store (i32.const 8) (i64.const 1))
          (drop (call $malloc (i32.const 4)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n)))))
  (func $_start (export "_start") (local $zero i32)
    (call $work (i32.const 10))
    {tail}))"#
    )
}

/// The events counted, and the user's event.
const EVENT_FLAGS: &[&str] = &[
    "--events",
    "load,store,call,div,bytes_loaded,bytes_stored,alloc",
    "--alloc-fn",
    "malloc",
    "--event",
    "adds=i32.add",
];

fn modes() -> Vec<&'static str> {
    vec![
        "events",
        "events:pc:none",
        "events:pc:merges",
        "events:pd",
        "events:pd:none",
        "events:pd:merges",
        "events:dec",
    ]
}

/// The profile's totals, in order.
fn totals(p: &Profile) -> Vec<(String, u64)> {
    p.mode.events().expect("an events profile").totals.0.iter().map(|(n, v)| (n.clone(), v.0)).collect()
}

/// Runs `wat` in `mode` with the events of [`EVENT_FLAGS`].
fn run_mode(wat: &str, mode: &str) -> Run {
    let mut args = vec!["--mode", mode];
    args.extend(EVENT_FLAGS);
    run_wat(wat, &args, &[])
}

fn named(values: &[u64]) -> Vec<(String, u64)> {
    let names = ["load", "store", "call", "div", "bytes_loaded", "bytes_stored", "alloc", "adds"];
    names.iter().map(|n| n.to_string()).zip(values.iter().copied()).collect()
}

#[test]
fn every_strategy_counts_the_events_counted_by_hand() {
    let wat = program("");
    for mode in modes() {
        let run = run_mode(&wat, mode);
        assert!(run.output.status.success(), "{mode}: {}", String::from_utf8_lossy(&run.output.stderr));
        let p = &run.profile;
        // 5 loads of 1 byte, 5 stores of 8 bytes, 5 calls of malloc and the call of work, 10 adds.
        assert_eq!(totals(p), named(&[5, 5, 6, 0, 5, 40, 5, 10]), "{mode}");
        let work = function(p, "work").events().unwrap();
        assert_eq!(work.values().collect::<Vec<_>>(), [5, 5, 5, 0, 5, 40, 5, 10], "{mode}");
        let start = function(p, "_start").events().unwrap();
        assert_eq!(start.get("call"), Some(1), "{mode}");
        let info = p.mode.events().unwrap();
        assert_eq!((info.undercount_bound.as_ref(), info.overcount_bound.as_ref()), (None, None), "{mode}");
        assert_eq!(info.alloc_functions, ["malloc"]);
        assert_eq!(info.user_events, [("adds".to_string(), vec!["i32.add".to_string()])]);
        // Every block carries its vector, and pc lists paths that add up to the totals.
        assert!(p.functions.iter().flat_map(|f| &f.blocks).all(|b| b.events.len() == 8), "{mode}");
        let listed: usize = p.functions.iter().map(|f| f.paths().len()).sum();
        assert_eq!(listed > 0, mode.starts_with("events:pc") || mode == "events", "{mode}");
    }
}

#[test]
fn an_exit_or_a_trap_mid_path_stays_within_the_stated_bounds() {
    // proc_exit from `_start`, whose path never ends: path counting misses its two calls, and says
    // so; direct counting counts them (proc_exit is a call, after which nothing of its stretch was
    // counted).
    let exit = program("(call $exit (i32.const 3)) (drop (i32.load (i32.const 0)))");
    for mode in modes() {
        let run = run_mode(&exit, mode);
        assert_eq!(run.output.status.code(), Some(3), "{mode}");
        let info = run.profile.mode.events().unwrap().clone();
        let call = info.totals.get("call").unwrap();
        if mode == "events:dec" {
            assert_eq!(totals(&run.profile), named(&[5, 5, 7, 0, 5, 40, 5, 10]), "{mode}");
            assert_eq!((info.undercount_bound, info.overcount_bound), (None, None), "{mode}");
        } else {
            assert_eq!(call, 5, "{mode}: _start's two calls are on its open path");
            let bound = info.undercount_bound.expect("an open path");
            assert!(call + bound.get("call").unwrap() >= 7, "{mode}: {bound:?}");
            // The load after the exit never ran, but is on the open path: within the bound.
            assert!(bound.get("load").unwrap() >= 1, "{mode}");
        }
    }
    // A division by zero after the loop: the trapping stretch holds the division, so direct
    // counting states that it may have counted it (and the drop after it) without their running.
    let trap = program("(drop (i32.div_u (i32.const 1) (local.get $zero))) (drop (i32.load (i32.const 0)))");
    for mode in modes() {
        let run = run_mode(&trap, mode);
        assert_eq!(run.output.status.code(), Some(134), "{mode}");
        let info = run.profile.mode.events().unwrap().clone();
        let (load, div) = (info.totals.get("load").unwrap(), info.totals.get("div").unwrap());
        if mode == "events:dec" {
            // The stretch after the call of work: the division and the load after it, counted.
            assert_eq!((load, div), (6, 1), "{mode}");
            let over = info.overcount_bound.expect("a trap in a stretch");
            assert!(load - over.get("load").unwrap() <= 5 && div - over.get("div").unwrap() == 0, "{over:?}");
        } else {
            assert_eq!((load, div), (5, 0), "{mode}: _start's path is open");
            let under = info.undercount_bound.expect("an open path");
            assert!(under.get("div").unwrap() >= 1 && under.get("call").unwrap() >= 1, "{under:?}");
        }
    }
}

#[test]
fn report_ranks_paths_by_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("m.wasm");
    std::fs::write(&wasm, wat::parse_str(program("")).unwrap()).unwrap();
    let profile = dir.path().join("p.json");
    let mut args = vec!["run", "--quiet", "-o", profile.to_str().unwrap(), "--mode", "events"];
    args.extend(EVENT_FLAGS);
    args.push(wasm.to_str().unwrap());
    assert!(pathprof().args(&args).status().unwrap().success());
    let report = |by: &str, json: bool| {
        let mut cmd = pathprof();
        cmd.args(["report", "--by", by]).arg(&profile);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let doc: serde_json::Value = serde_json::from_str(&report("bytes_stored", true)).unwrap();
    let paths = doc["paths"].as_array().unwrap();
    // The even rounds' paths store 8 bytes each: 40 bytes in all, on work's paths only.
    let stored: u64 = paths.iter().map(|p| p["events"].as_u64().unwrap()).sum();
    assert_eq!(stored, 40);
    assert!(paths.iter().all(|p| p["name"] == "work"));
    assert_eq!(doc["functions"][0]["name"], "work");
    let text = report("load", false);
    assert!(text.contains("paths by load") && text.contains("functions by load"), "{text}");
}

#[test]
fn bad_event_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("m.wasm");
    std::fs::write(&wasm, wat::parse_str(program("")).unwrap()).unwrap();
    for (args, message) in [
        (&["--mode", "events", "--events", "loads"][..], "unknown event \"loads\""),
        (&["--mode", "events", "--alloc-fn", "calloc"], "--alloc-fn calloc: no function of that name"),
        (&["--mode", "events", "--events", "alloc"], "event alloc needs --alloc-fn NAME"),
        (&["--mode", "events", "--event", "x=i32.frobnicate"], "--event x: no operator \"i32.frobnicate\""),
        (&["--mode", "events", "--event", "x"], "expected NAME=OPERATOR"),
        (&["--mode", "events", "--events", "load,load"], "event \"load\" is given twice"),
        (&["--mode", "bl", "--events", "load"], "--events, --alloc-fn and --event do not apply to --mode bl"),
        (&["--mode", "bl", "--strategy", "pd"], "--strategy does not apply to --mode bl"),
        (&["--mode", "events:pd", "--cut", "none"], "give them either in the mode or as flags"),
        (&["--mode", "events", "--strategy", "fast"], "--strategy fast: the strategy is pc, pd or dec"),
        (&["--mode", "events", "--strategy", "dec", "--cut", "merges"], "events:dec counts no paths"),
    ] {
        let args: Vec<&str> = ["run", "-o", "p.json"].iter().chain(args).chain(&["m.wasm"]).copied().collect();
        fails_cleanly(dir.path(), &args, message);
    }
    // Reports by an event need an events profile that counts it.
    let bl = run_wat(&program(""), &[], &[]);
    let file = dir.path().join("bl.json");
    std::fs::write(&file, bl.profile.to_json()).unwrap();
    let out = pathprof().args(["report", "--by", "load"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("events come from `pathprof run --mode events`"));
}
