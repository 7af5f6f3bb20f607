//! Bursty k-BLPP (`--mode kbl:K:burst`) [KBL13 §6]: paths streamed only during bursts. Its roots are
//! the exact Ball–Larus counts; every sequence it records is one the exact forest has, at most as
//! often; a burst that lasts the whole run gives the exact forest.

mod common;

use common::{pathprof, run_in, run_wat, wat_module, KBL_LOOP};
use pathprof_core::profile::{FunctionProfile, KipfProfile, Profile, U64};
use std::collections::HashMap;

/// A loop of three million rounds, each taking one of four ways chosen by a linear congruential
/// generator, and calling a function with a loop of its own on one of them: long enough for
/// bursts of a fraction of a millisecond to open many times.
const LCG_LOOP: &str = r#"
(module
  (func $work (param $n i32) (result i32)
    (local $i i32) (local $x i32) (local $acc i32)
    (local.set $x (i32.const 12345))
    (block $done
      (loop $top
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $x (i32.add (i32.mul (local.get $x) (i32.const 1103515245)) (i32.const 12345)))
        (if (i32.and (i32.shr_u (local.get $x) (i32.const 16)) (i32.const 1))
          (then (local.set $acc (i32.add (local.get $acc) (i32.const 3))))
          (else (local.set $acc (i32.xor (local.get $acc) (local.get $x)))))
        (if (i32.eqz (i32.and (i32.shr_u (local.get $x) (i32.const 20)) (i32.const 3)))
          (then (local.set $acc (i32.add (local.get $acc) (call $inner (local.get $x))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $top)))
    (local.get $acc))
  (func $inner (param $x i32) (result i32)
    (local $j i32)
    (loop $l
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $j) (i32.and (local.get $x) (i32.const 3)))))
    (local.get $j))
  (func (export "_start") (drop (call $work (i32.const 3000000)))))
"#;

/// Every function's k-IPF, by function index.
fn forests(p: &Profile) -> HashMap<u32, &KipfProfile> {
    p.functions.iter().filter_map(|f| f.kipf().map(|k| (f.index, k))).collect()
}

/// Every function's paths with their counts and blocks.
fn paths(p: &Profile) -> Vec<(u32, U64, U64, Vec<u32>)> {
    let mut out: Vec<_> = p
        .functions
        .iter()
        .flat_map(|f: &FunctionProfile| f.paths().iter().map(move |q| (f.index, q.id, q.count, q.blocks.clone())))
        .collect();
    out.sort();
    out
}

#[test]
fn a_burst_for_the_whole_run_gives_the_exact_forest() {
    for k in ["2", "3", "5"] {
        let exact = run_wat(KBL_LOOP, &["--mode", "kbl", "-k", k], &[]);
        // K in the mode, or (`kbl:burst`) as a flag.
        let mode = format!("kbl:{k}:burst");
        let always: Vec<&str> = match k {
            "2" => vec!["--mode", "kbl:burst", "-k", k, "--burst-ms", "1", "--burst-every", "1"],
            _ => vec!["--mode", mode.as_str(), "--burst-ms", "1", "--burst-every", "1"],
        };
        let burst = run_wat(KBL_LOOP, &always, &[]);
        assert!(burst.output.status.success(), "{}", String::from_utf8_lossy(&burst.output.stderr));
        assert_eq!(forests(&burst.profile), forests(&exact.profile), "k = {k}");
        assert_eq!(paths(&burst.profile), paths(&exact.profile));
        let b = burst.profile.mode.kbl().unwrap().bursts.clone().unwrap();
        assert_eq!((b.ms, b.every_ms, b.opened.0), (1.0, 1.0, 1));
    }
}

#[test]
fn sampled_sequences_ran_and_roots_are_exact() {
    let (dir, app) = wat_module(LCG_LOOP);
    let run = |extra: &[&str]| run_in(dir.path(), extra, &app, &[]);
    let bl = run(&[]);
    let exact = run(&["--mode", "kbl:4"]);
    let burst = run(&["--mode", "kbl:4:burst", "--burst-ms", "0.2", "--burst-every", "2"]);
    assert!(burst.output.status.success(), "{}", String::from_utf8_lossy(&burst.output.stderr));
    assert_eq!(paths(&burst.profile), paths(&bl.profile), "the roots are the Ball–Larus counts");
    let info = burst.profile.mode.kbl().unwrap().bursts.clone().unwrap();
    assert!(info.opened.0 >= 1, "no burst opened in a run of {} s", burst.profile.wall_seconds);
    assert!(info.streamed_path_ends.0 > 0 && info.streamed_path_ends.0 < info.path_ends.0, "{info:?}");
    assert_eq!(info.path_ends, bl.profile.path_executions);
    let exact_forests = forests(&exact.profile);
    let mut sampled_nodes = 0;
    for (index, kipf) in forests(&burst.profile) {
        let whole = exact_forests[&index];
        // Roots: every path, with its exact count.
        let roots = |k: &KipfProfile| k.roots.iter().map(|r| (r.path, r.count)).collect::<Vec<_>>();
        assert_eq!(roots(kipf), roots(whole));
        kipf.for_each_node(|sequence, node| {
            let Some(truth) = whole.node(sequence) else {
                panic!("function {index}: sequence {sequence:?} never ran");
            };
            assert!(node.count <= truth.count, "{sequence:?}: {} > {}", node.count.0, truth.count.0);
            sampled_nodes += usize::from(sequence.len() > 1);
        });
    }
    assert!(sampled_nodes > 0, "bursts recorded no sequence");
    // `compare` reports the sampled forest's accuracy against the exact one.
    let (e, s) = (dir.path().join("exact.json"), dir.path().join("burst.json"));
    std::fs::write(&e, serde_json::to_string(&exact.profile).unwrap()).unwrap();
    std::fs::write(&s, serde_json::to_string(&burst.profile).unwrap()).unwrap();
    let out = pathprof().arg("compare").args([&e, &s]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("hot 4-path coverage") && text.contains("4-path accuracy"), "{text}");
    assert!(text.contains("bursts of 0.2 ms every 2 ms"), "{text}");
    // Two bursty runs merge: counts, bursts and streamed path ends add up; a bursty and an exact
    // profile do not.
    let merged = dir.path().join("merged.json");
    let out = pathprof().arg("merge").args([&s, &s]).arg("-o").arg(&merged).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let twice = Profile::from_json(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    let b = twice.mode.kbl().unwrap().bursts.clone().unwrap();
    assert_eq!((b.opened.0, b.streamed_path_ends.0), (2 * info.opened.0, 2 * info.streamed_path_ends.0));
    let out = pathprof().arg("merge").args([&s, &e]).arg("-o").arg(dir.path().join("no.json")).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bursts"), "{err}");
}

/// A loop with one way around, counted in a local (a loop counter), running for the whole run.
const COUNTED_LOOP: &str = r#"
(module
  (func $count (param $n i32) (result i32)
    (local $i i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $i))
  (func (export "_start") (drop (call $count (i32.const 30000000)))))
"#;

#[test]
fn a_loop_counted_in_a_local_is_sampled_and_streams_whole_in_a_window() {
    let (dir, app) = wat_module(COUNTED_LOOP);
    // The loop is counted in a local in bursts as in `bl`.
    let map = dir.path().join("i.wasm.map.json");
    let out = pathprof()
        .args(["instrument", "--mode", "kbl:3:burst", "-o"])
        .arg(dir.path().join("i.wasm"))
        .arg(&app)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&map).unwrap();
    assert!(text.contains("\"loop_counters\":[{") || text.contains("\"loop_counters\": [{"), "no loop counter");
    let run = |extra: &[&str]| run_in(dir.path(), extra, &app, &[]);
    let exact = run(&["--mode", "kbl:3"]);
    let truth = forests(&exact.profile);
    // One burst for the whole run: the counter's paths are streamed when the exit path ends.
    let whole = run(&["--mode", "kbl:3:burst", "--burst-ms", "1", "--burst-every", "1"]);
    assert!(whole.output.status.success(), "{}", String::from_utf8_lossy(&whole.output.stderr));
    let info = whole.profile.mode.kbl().unwrap().bursts.clone().unwrap();
    // Every path end but `_start`'s, whose activations end one path each (counted in an array).
    assert_eq!(info.streamed_path_ends.0, info.path_ends.0 - 1, "{info:?}");
    assert_eq!(forests(&whole.profile), truth);
    // Short bursts, the first after the loop began: windows open and close inside it, at the
    // counter's tests of the flag, and what they streamed ran.
    let short = run(&["--mode", "kbl:3:burst", "--burst-ms", "0.2", "--burst-every", "1"]);
    assert!(short.output.status.success(), "{}", String::from_utf8_lossy(&short.output.stderr));
    let info = short.profile.mode.kbl().unwrap().bursts.clone().unwrap();
    assert!(info.opened.0 >= 2 && info.streamed_path_ends.0 > 0, "{info:?}");
    assert!(info.streamed_path_ends.0 < info.path_ends.0 - 1, "{info:?}");
    let mut deep = 0;
    for (index, kipf) in forests(&short.profile) {
        kipf.for_each_node(|sequence, node| {
            let truth = truth[&index].node(sequence).unwrap_or_else(|| panic!("{sequence:?} never ran"));
            assert!(node.count <= truth.count, "{sequence:?}: {} > {}", node.count.0, truth.count.0);
            deep += usize::from(sequence.len() == 3);
        });
    }
    assert!(deep > 0, "no sequence of three paths was sampled");
}

#[test]
fn burst_settings_are_checked() {
    let (dir, _) = wat_module(KBL_LOOP);
    let fails = |args: &[&str], expect: &str| {
        let mut all = vec!["run", "--quiet", "-o", "p.json"];
        all.extend(args);
        all.push("m.wasm");
        let out = pathprof().current_dir(dir.path()).args(&all).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(expect), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!dir.path().join("p.json").exists());
    };
    fails(&["--mode", "kbl:4", "--burst-ms", "2"], "--burst-ms");
    fails(&["--mode", "kbl:4:burst", "--burst-ms", "0"], "--burst-ms must be");
    fails(&["--mode", "kbl:4:burst", "--burst-every", "nan"], "--burst-every must be");
    fails(&["--mode", "kbl:4:bursts"], "K must be");
    fails(&["--mode", "kbl:4:burst", "-k", "3"], "gives its settings already");
}

/// A loop whose every round takes another of 2^16 ways (the bits of its counter): too many paths
/// for an array, so its function counts them in a table of 1,024 slots, which cannot hold them.
fn wide_loop() -> String {
    let mut body = String::new();
    for bit in 0..16 {
        body.push_str(&format!(
            "(if (i32.and (local.get $i) (i32.const {})) (then (local.set $acc (i32.add (local.get $acc) \
             (i32.const {bit})))) (else (local.set $acc (i32.xor (local.get $acc) (i32.const {bit})))))\n",
            1 << bit
        ));
    }
    format!(
        r#"(module
  (func $wide (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (loop $l
      {body}
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $acc))
  (func (export "_start") (drop (call $wide (i32.const 200000)))))"#
    )
}

/// A function counted in a table: the paths the table cannot hold go into the stream as counts, so
/// that the roots stay `bl`'s counts with or without a burst open, and a burst for the whole run
/// still gives the exact forest.
#[test]
fn a_function_counted_in_a_table_keeps_exact_counts() {
    let wat = wide_loop();
    let (dir, app) = wat_module(&wat);
    let instrumented = dir.path().join("i.wasm");
    let out =
        pathprof().args(["instrument", "--mode", "kbl:3:burst", "-o"]).arg(&instrumented).arg(&app).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let map = std::fs::read_to_string(dir.path().join("i.wasm.map.json")).unwrap();
    assert!(map.contains(r#""kind":"burst_table""#), "the wide function is not counted in a table");
    let run = |extra: &[&str]| run_in(dir.path(), extra, &app, &[]);
    let bl = run(&[]);
    assert!(bl.profile.path_executions.0 > 200_000);
    let exact = run(&["--mode", "kbl:3"]);
    for bursts in [["--burst-ms", "1", "--burst-every", "100000"], ["--burst-ms", "1", "--burst-every", "1"]] {
        let burst = run(&[&["--mode", "kbl:3:burst"][..], &bursts[..]].concat());
        assert!(burst.output.status.success(), "{}", String::from_utf8_lossy(&burst.output.stderr));
        let (ours, theirs) = (paths(&burst.profile), paths(&bl.profile));
        let total = |p: &[(u32, U64, U64, Vec<u32>)]| p.iter().map(|q| q.2 .0).sum::<u64>();
        assert!(
            ours == theirs,
            "{bursts:?}: {} paths counted {} times, bl {} and {}",
            ours.len(),
            total(&ours),
            theirs.len(),
            total(&theirs)
        );
        let info = burst.profile.mode.kbl().unwrap().bursts.clone().unwrap();
        assert_eq!(info.path_ends, bl.profile.path_executions);
        if bursts[3] == "1" {
            assert!(forests(&burst.profile) == forests(&exact.profile), "a burst for the whole run");
        } else {
            assert_eq!(info.streamed_path_ends.0, 0, "no burst, nothing streamed as a sequence");
        }
    }
}
