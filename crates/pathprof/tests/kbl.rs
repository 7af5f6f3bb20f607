//! Multi-iteration path profiling (`--mode kbl`): the k-IPF of a run, counted by hand; its first
//! level is the Ball–Larus profile; a callee's paths stay out of its caller's sequences.

mod common;

use common::{function, kbl_loop_work_paths, path_id, run_wat, KBL_LOOP};
use pathprof_core::profile::{FunctionProfile, KipfNodeProfile};

/// Count of the sequence of paths `seq` (path IDs) in `f`'s k-IPF.
fn count(f: &FunctionProfile, seq: &[u64]) -> u64 {
    let mut level: &Vec<KipfNodeProfile> = &f.kipf().unwrap().roots;
    let mut c = 0;
    for p in seq {
        match level.iter().find(|n| n.path.0 == *p) {
            Some(n) => {
                c = n.count.0;
                level = &n.children;
            }
            None => return 0,
        }
    }
    c
}

/// The IDs of the two paths of `f` that satisfy `pred`, the one through fewer blocks first.
fn shortest_first(f: &FunctionProfile, pred: impl Fn(&pathprof_core::profile::PathCount) -> bool) -> [u64; 2] {
    let mut paths: Vec<_> = f.paths().iter().filter(|p| pred(p)).collect();
    paths.sort_by_key(|p| p.blocks.len());
    assert_eq!(paths.len(), 2, "{:?}", paths.iter().map(|p| p.id.0).collect::<Vec<_>>());
    assert!(paths[0].blocks.len() < paths[1].blocks.len(), "the two paths have as many blocks");
    [paths[0].id.0, paths[1].id.0]
}

#[test]
fn kipf_of_a_loop_by_hand() {
    let run = run_wat(KBL_LOOP, &["--mode", "kbl", "-k", "3"], &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    let bl = run_wat(KBL_LOOP, &[], &[]);
    let work = function(&run.profile, "work");
    assert_eq!(work.kipf().unwrap().k, 3);
    let [entry, even, odd, exit] = kbl_loop_work_paths(work);
    assert_eq!(count(work, &[entry]), 1);
    assert_eq!(count(work, &[even]), 5);
    assert_eq!(count(work, &[odd]), 5);
    assert_eq!(count(work, &[even, odd]), 5);
    assert_eq!(count(work, &[odd, even]), 4);
    assert_eq!(count(work, &[odd, exit]), 1);
    assert_eq!(count(work, &[entry, even, odd]), 1);
    assert_eq!(count(work, &[even, odd, even]), 4);
    assert_eq!(count(work, &[odd, even, odd]), 4);
    assert_eq!(count(work, &[even, odd, exit]), 1);
    // Nothing longer than k.
    assert_eq!(count(work, &[entry, even, odd, even]), 0);
    // The calls to $odd between the rounds are not in work's sequences: $odd's own forest has them,
    // 4 paths a call (entry to header, two rounds, header to exit).
    let odd_fn = function(&run.profile, "odd");
    assert_eq!(odd_fn.kipf().unwrap().roots.iter().map(|r| r.count.0).sum::<u64>(), 5 * 4);
    // The first level is the Ball–Larus profile.
    for (a, b) in run.profile.functions.iter().zip(&bl.profile.functions) {
        let mut x: Vec<_> = a.paths().iter().map(|p| (p.id, p.count, p.blocks.clone())).collect();
        let mut y: Vec<_> = b.paths().iter().map(|p| (p.id, p.count, p.blocks.clone())).collect();
        x.sort();
        y.sort();
        assert_eq!(x, y, "{:?}", a.name);
        let roots: Vec<(u64, u64)> = a.kipf().unwrap().roots.iter().map(|r| (r.path.0, r.count.0)).collect();
        let mut bl_counts: Vec<(u64, u64)> = b.paths().iter().map(|p| (p.id.0, p.count.0)).collect();
        bl_counts.sort();
        assert_eq!(roots, bl_counts);
    }
}

#[test]
fn k_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.wasm");
    std::fs::write(&path, wat::parse_str(KBL_LOOP).unwrap()).unwrap();
    for k in ["0", "65"] {
        let out = common::pathprof()
            .current_dir(dir.path())
            .args(["run", "--quiet", "--mode", "kbl", "-k", k, "-o", "p.json"])
            .arg(&path)
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0));
        assert!(!dir.path().join("p.json").exists());
    }
}

/// A start function that ends 5000 paths, alternately two different ones, so that it fills the
/// stream buffer before instantiation returns.
const START_FILLS_BUFFER: &str = r#"
(module
  (global $acc (mut i32) (i32.const 0))
  (func $init
    (local $i i32)
    (loop $top
      (if (i32.and (local.get $i) (i32.const 1))
        (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))
        (else (global.set $acc (i32.add (global.get $acc) (i32.const 2)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $top (i32.lt_u (local.get $i) (i32.const 5000)))))
  (start $init)
  (func (export "_start")))
"#;

/// Found while writing the stream host of the wasm-smith differential test: the host took the
/// profiler's memory from the instance, so a buffer filled by the start function was not drained;
/// the program went on appending past the buffer, over the counter arrays, and the items beyond the
/// capacity were lost.
#[test]
fn stream_filled_by_the_start_function() {
    let run = run_wat(START_FILLS_BUFFER, &["--mode", "kbl", "-k", "2"], &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    let bl = run_wat(START_FILLS_BUFFER, &[], &[]);
    for (a, b) in run.profile.functions.iter().zip(&bl.profile.functions) {
        let mut x: Vec<_> = a.paths().iter().map(|p| (p.id, p.count)).collect();
        let mut y: Vec<_> = b.paths().iter().map(|p| (p.id, p.count)).collect();
        x.sort();
        y.sort();
        assert_eq!(x, y, "function {}", a.index);
    }
    let total: u64 = run.profile.functions.iter().flat_map(|f| f.paths()).map(|p| p.count.0).sum();
    assert_eq!(total, 5001 + 1);
    // Over 4,096 items: one buffer handed over when full, one at the end.
    let kbl = run.profile.mode.kbl().unwrap();
    assert_eq!(kbl.stream_handovers.0, 2);
    assert!(kbl.stream_wait_seconds >= 0.0 && kbl.stream_wait_seconds <= run.profile.wall_seconds);
}

/// `spin(n)` loops n times; called with 0, 0, 2, 0 and 1 (recursively from inside its own loop for the
/// last call), most of its activations end one path, entry to exit.
const SHORT_ACTIVATIONS: &str = r#"
(module
  (func $spin (export "spin") (param $n i32) (result i32)
    (local $i i32)
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (block $done
      (loop $top
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.eq (local.get $n) (i32.const 2))
          (then (drop (call $spin (i32.const 0)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $top)))
    (local.get $i))
  (func (export "_start")
    (drop (call $spin (i32.const 0)))
    (drop (call $spin (i32.const 2)))
    (drop (call $spin (i32.const 1)))))
"#;

/// Activations that end a single path are counted without the stream: the roots still equal the
/// Ball–Larus counts, and the sequences of the other activations are not disturbed by them.
#[test]
fn single_path_activations_stay_out_of_the_stream() {
    let run = run_wat(SHORT_ACTIVATIONS, &["--mode", "kbl", "-k", "3"], &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    let spin = function(&run.profile, "spin");
    use pathprof_core::profile::Endpoint;
    let header = spin.blocks.iter().find(|b| b.loop_header).unwrap().id;
    let direct = path_id(spin, |p| p.start == Endpoint::Entry && p.end == Endpoint::Exit);
    let into = path_id(spin, |p| p.start == Endpoint::Entry && p.end == Endpoint::Block(header));
    let out = path_id(spin, |p| p.start == Endpoint::Block(header) && p.end == Endpoint::Exit);
    // The two rounds: the one through the call has one block more.
    let [plain, with_call] =
        shortest_first(spin, |p| p.start == Endpoint::Block(header) && p.end == Endpoint::Block(header));
    // spin(0) three times (once from spin(2)'s first round, once from its second): direct paths.
    assert_eq!(count(spin, &[direct]), 3);
    assert!(spin.kipf().unwrap().roots.iter().find(|r| r.path.0 == direct).unwrap().children.is_empty());
    // spin(2): into, with_call, with_call, out; spin(1): into, plain, out.
    assert_eq!(count(spin, &[into, with_call, with_call]), 1);
    assert_eq!(count(spin, &[with_call, with_call, out]), 1);
    assert_eq!(count(spin, &[into, plain, out]), 1);
    assert_eq!(count(spin, &[with_call, out]), 1);
    assert_eq!(count(spin, &[plain, out]), 1);
    assert_eq!(count(spin, &[out]), 2);
    // Streamed: two entries, and the 4 + 3 paths of the two activations that looped.
    assert_eq!(run.profile.mode.kbl().unwrap().stream_items.0, 2 + 7 + 2);
}

/// `deep(n)` loops once around and then, when `n > 0`, calls `deep(n - 1)` on its way out: the
/// activations nest, and the exit paths of `deep(1)` … `deep(4)` come back to back in the stream, the
/// same item four times, which the module sends as one item and a run.
const NESTED_EXITS: &str = r#"
(module
  (func $deep (export "deep") (param $n i32)
    (local $i i32)
    (loop $top
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $top (i32.lt_u (local.get $i) (i32.const 2))))
    (if (local.get $n) (then (call $deep (i32.sub (local.get $n) (i32.const 1))))))
  (func (export "_start") (call $deep (i32.const 4))))
"#;

/// A run of identical exit items closes as many activations, each with its own sequences.
#[test]
fn back_to_back_exits_of_nested_activations() {
    let run = run_wat(NESTED_EXITS, &["--mode", "kbl", "-k", "3"], &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    let deep = function(&run.profile, "deep");
    use pathprof_core::profile::Endpoint;
    let header = deep.blocks.iter().find(|b| b.loop_header).unwrap().id;
    let into = path_id(deep, |p| p.start == Endpoint::Entry);
    let round = path_id(deep, |p| p.start == Endpoint::Block(header) && p.end == Endpoint::Block(header));
    // Out of the loop: with the call (one block more) or without.
    let [leaf, call] = shortest_first(deep, |p| p.start == Endpoint::Block(header) && p.end == Endpoint::Exit);
    assert_eq!(count(deep, &[into]), 5);
    assert_eq!(count(deep, &[round]), 5);
    assert_eq!(count(deep, &[leaf]), 1);
    assert_eq!(count(deep, &[call]), 4);
    // Every activation: into, round, out.
    assert_eq!(count(deep, &[into, round]), 5);
    assert_eq!(count(deep, &[into, round, call]), 4);
    assert_eq!(count(deep, &[into, round, leaf]), 1);
    assert_eq!(count(deep, &[round, call]), 4);
    assert_eq!(count(deep, &[round, leaf]), 1);
    // Nothing crosses from one activation into another, in the stream's order or the nesting's.
    for (a, b) in [(round, into), (leaf, call), (call, call), (round, round)] {
        assert_eq!(count(deep, &[a, b]), 0, "{a} then {b}");
    }
    // Five entries, fifteen paths and five exits.
    assert_eq!(run.profile.mode.kbl().unwrap().stream_items.0, 5 + 15 + 5);
}
