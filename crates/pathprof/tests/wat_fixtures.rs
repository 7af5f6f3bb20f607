//! End-to-end runs of small modules whose path counts are counted by hand.

mod common;

use common::{check_balance, function, run_wat, total};
use pathprof_core::profile::Endpoint;

/// A loop of `n` iterations whose body takes one arm for odd `i` and the other for even `i`.
const LOOP: &str = r#"
(module
  (func $work (export "work") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (block $done
      (loop $top
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.and (local.get $i) (i32.const 1))
          (then (local.set $acc (i32.add (local.get $acc) (i32.const 3))))
          (else (local.set $acc (i32.add (local.get $acc) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $top)))
    (local.get $acc))
  (func (export "_start") (drop (call $work (i32.const 10))) (drop (call $work (i32.const 7)))))
"#;

#[test]
fn loop_with_branch_counts_each_iteration() {
    let run = run_wat(LOOP, &[], &[]);
    assert!(run.output.status.success());
    check_balance(&run.profile);
    let work = function(&run.profile, "work");
    // Two calls: one path from the entry to the loop header each.
    assert_eq!(total(work, |p| p.start == Endpoint::Entry), 2);
    assert_eq!(total(work, |p| p.end == Endpoint::Exit), 2);
    // 10 + 7 iterations go round the loop: header to header.
    let header = work.blocks.iter().find(|b| b.loop_header).unwrap().id;
    let round: Vec<_> = work
        .paths()
        .iter()
        .filter(|p| p.start == Endpoint::Block(header) && p.end == Endpoint::Block(header))
        .collect();
    assert_eq!(round.len(), 2, "two paths round the loop: odd and even");
    let mut counts: Vec<u64> = round.iter().map(|p| p.count.0).collect();
    counts.sort_unstable();
    // Odd i: 5 (of 10) + 3 (of 7) = 8; even i: 5 + 4 = 9.
    assert_eq!(counts, vec![8, 9]);
    // The two arms are different blocks: the paths differ in exactly one block.
    let diff: Vec<_> = round[0].blocks.iter().zip(&round[1].blocks).filter(|(a, b)| a != b).collect();
    assert_eq!(diff.len(), 1);
    assert_eq!(run.profile.path_executions.0, 2 + 2 + 17 + 1);
}

#[test]
fn invoke_calls_an_export_with_arguments() {
    let run = run_wat(LOOP, &["--invoke", "work"], &["7"]);
    assert!(run.output.status.success());
    assert_eq!(String::from_utf8_lossy(&run.output.stdout), "13\n");
    let work = function(&run.profile, "work");
    assert_eq!(total(work, |p| p.start != Endpoint::Entry && p.end != Endpoint::Exit), 7);
}

/// `br_table` dispatch inside a loop: i % 4 picks one of four cases, 12 iterations.
const SWITCH: &str = r#"
(module
  (global $sum (mut i32) (i32.const 0))
  (func $dispatch (export "dispatch")
    (local $i i32)
    (loop $top
      (block $c3 (block $c2 (block $c1 (block $c0
        (br_table $c0 $c1 $c2 $c3 (i32.rem_u (local.get $i) (i32.const 4))))
        (global.set $sum (i32.add (global.get $sum) (i32.const 1))) (br $c3))
        (global.set $sum (i32.add (global.get $sum) (i32.const 2))) (br $c3))
        (global.set $sum (i32.add (global.get $sum) (i32.const 3))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $top (i32.lt_u (local.get $i) (i32.const 12)))))
  (func (export "_start") (call $dispatch)))
"#;

#[test]
fn br_table_cases_are_counted_separately() {
    let run = run_wat(SWITCH, &[], &[]);
    assert!(run.output.status.success());
    check_balance(&run.profile);
    let f = function(&run.profile, "dispatch");
    let header = f.blocks.iter().find(|b| b.loop_header).unwrap().id;
    // 12 iterations: 11 go back to the header, the last leaves; each case runs 3 times.
    assert_eq!(total(f, |p| p.end == Endpoint::Block(header) && p.start == Endpoint::Block(header)), 11);
    assert_eq!(total(f, |p| p.start == Endpoint::Block(header) && p.end == Endpoint::Exit), 1);
    let mut by_path: Vec<u64> =
        f.paths().iter().filter(|p| p.start == Endpoint::Block(header)).map(|p| p.count.0).collect();
    by_path.sort_unstable();
    // Case 3 runs at i = 3, 7, 11; the last of them leaves the loop.
    assert_eq!(by_path, vec![1, 2, 3, 3, 3]);
}

/// Recursion: fib(10) makes 177 calls; 89 of them hit the base case.
const FIB: &str = r#"
(module
  (func $fib (export "fib") (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add (call $fib (i32.sub (local.get $n) (i32.const 1)))
                     (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func (export "_start") (drop (call $fib (i32.const 10)))))
"#;

#[test]
fn recursion_counts_every_activation() {
    let run = run_wat(FIB, &[], &[]);
    check_balance(&run.profile);
    let f = function(&run.profile, "fib");
    assert_eq!(f.num_paths(), 2);
    let mut counts: Vec<u64> = f.paths().iter().map(|p| p.count.0).collect();
    counts.sort_unstable();
    assert_eq!(counts, vec![88, 89]);
}

/// A trap in the middle of a loop: the profile is still written, with the open activations.
const TRAP: &str = r#"
(module
  (func $div (export "div") (param $n i32) (result i32)
    (local $acc i32)
    (loop $top
      (local.set $acc (i32.add (local.get $acc) (i32.div_u (i32.const 100) (local.get $n))))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br $top))
    (unreachable))
  (func (export "_start") (drop (call $div (i32.const 5)))))
"#;

#[test]
fn trap_still_writes_the_profile() {
    let run = run_wat(TRAP, &[], &[]);
    assert_eq!(run.output.status.code(), Some(134));
    let p = &run.profile;
    assert!(p.trap.as_deref().unwrap_or("").contains("divide by zero"), "{:?}", p.trap);
    assert_eq!(p.open_activations_at_exit, 2, "_start and div are on the stack");
    check_balance(p);
    let f = function(p, "div");
    // Five iterations completed (n = 5..1) and went back to the header; the sixth trapped.
    assert_eq!(total(f, |x| x.start != Endpoint::Entry), 5);
    assert_eq!(total(f, |x| x.start == Endpoint::Entry), 1);
}

/// `proc_exit` from a nested call: the exit status is the program's, activations are open.
const EXIT: &str = r#"
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (func $inner (call $exit (i32.const 7)))
  (func $outer (call $inner))
  (func (export "_start") (call $outer)))
"#;

#[test]
fn proc_exit_keeps_the_exit_status() {
    let run = run_wat(EXIT, &[], &[]);
    assert_eq!(run.output.status.code(), Some(7));
    assert_eq!(run.profile.exit_code, 7);
    assert_eq!(run.profile.trap, None);
    assert_eq!(run.profile.open_activations_at_exit, 3);
    assert_eq!(run.profile.path_executions.0, 0);
}

/// Tail calls end the caller's path before they leave; multi-value results go through the wrapper.
const TAIL: &str = r#"
(module
  (func $pair (param $x i32) (result i32 i64)
    (if (i32.eqz (local.get $x)) (then (return (i32.const 1) (i64.const 2))))
    (i32.const 3) (i64.const 4))
  (func $count (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (return_call $count (i32.sub (local.get $n) (i32.const 1))))))
  (func (export "_start")
    (drop (call $count (i32.const 6)))
    (drop (drop (call $pair (i32.const 0))))
    (drop (drop (call $pair (i32.const 1))))
    (drop (drop (call $pair (i32.const 0))))))
"#;

#[test]
fn tail_calls_and_multi_value() {
    let run = run_wat(TAIL, &[], &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    check_balance(&run.profile);
    let count = function(&run.profile, "count");
    let mut c: Vec<u64> = count.paths().iter().map(|p| p.count.0).collect();
    c.sort_unstable();
    assert_eq!(c, vec![1, 6], "six tail calls, one base case");
    let pair = function(&run.profile, "pair");
    let mut c: Vec<u64> = pair.paths().iter().map(|p| p.count.0).collect();
    c.sort_unstable();
    assert_eq!(c, vec![1, 2], "early return twice, fall-through once");
}

/// Legacy exception handling (`try`, `catch`) is not supported: the function is left as it was,
/// byte for byte, with the reason in the map, and the others are instrumented. (Wasmtime does not
/// run it, so the module is only instrumented.)
const UNSUPPORTED: &str = r#"
(module
  (tag $e)
  (func $legacy (param $x i32) (result i32)
    try (result i32)
      local.get $x
      if
        throw $e
      end
      i32.const 1
    catch $e
      i32.const 2
    end)
  (func $plain (param $x i32) (result i32)
    (if (result i32) (local.get $x) (then (i32.const 1)) (else (i32.const 2))))
  (func (export "_start")
    (drop (call $legacy (i32.const 1)))
    (drop (call $plain (i32.const 1)))))
"#;

#[test]
fn unsupported_functions_are_skipped_with_a_reason() {
    let wasm = wat::parse_str(UNSUPPORTED).unwrap();
    let inst = pathprof_wasm::instrument(&wasm, &pathprof_wasm::InstrumentOptions::default()).unwrap();
    let reasons: Vec<Option<&str>> = inst
        .map
        .functions
        .iter()
        .map(|f| match &f.state {
            pathprof_wasm::map::ProbeState::Skipped { reason } => Some(reason.as_str()),
            pathprof_wasm::map::ProbeState::Instrumented(_) => None,
        })
        .collect();
    assert_eq!(reasons.len(), 3);
    assert!(reasons[0].is_some_and(|r| r.contains("legacy exception handling")), "{reasons:?}");
    assert_eq!(&reasons[1..], [None, None]);
    pathprof_wasm::module::validate(&inst.bytes).unwrap();
    // The skipped body is the original's, byte for byte.
    let bodies = |bytes: &[u8]| -> Vec<Vec<u8>> {
        wasmparser::Parser::new(0)
            .parse_all(bytes)
            .filter_map(|p| match p.unwrap() {
                wasmparser::Payload::CodeSectionEntry(body) => Some(body.as_bytes().to_vec()),
                _ => None,
            })
            .collect()
    };
    let (before, after) = (bodies(&wasm), bodies(&inst.bytes));
    assert!(after.contains(&before[0]), "the legacy function is left as it was");
    assert!(!after.contains(&before[1]), "the plain function is instrumented");
}

/// `n` diamonds in a row; diamond `k` takes its `then` arm when bit `k % 64` of the argument is set.
fn diamonds(n: usize) -> String {
    let mut body = String::new();
    for k in 0..n {
        body.push_str(&format!(
            "(if (i32.wrap_i64 (i64.and (i64.shr_u (local.get $bits) (i64.const {})) (i64.const 1)))
               (then (global.set $g (i32.add (global.get $g) (i32.const {}))))
               (else (global.set $g (i32.sub (global.get $g) (i32.const 1)))))\n",
            k % 64,
            k + 1
        ));
    }
    format!(
        r#"(module
          (global $g (mut i32) (i32.const 0))
          (func $chain (export "chain") (param $bits i64) {body})
          (func (export "_start")
            (call $chain (i64.const 0x5555555555555555))
            (call $chain (i64.const -1))
            (call $chain (i64.const 0x5555555555555555))))"#
    )
}

/// Checks that every executed path of `chain` takes the `then` arm of diamond `k` exactly when the
/// bit pattern says so, by looking at which arm blocks the regenerated path visits.
fn check_diamond_paths(n: usize) -> (u64, usize) {
    let run = run_wat(&diamonds(n), &[], &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    check_balance(&run.profile);
    let f = function(&run.profile, "chain");
    // Blocks: entry, then for each diamond its then-arm, else-arm and merge, in offset order.
    let arm_then = |k: usize| 1 + 3 * k as u32;
    let arm_else = |k: usize| 2 + 3 * k as u32;
    let mut visits_then = vec![0u64; n];
    let mut visits_else = vec![0u64; n];
    for p in f.paths() {
        for &b in &p.blocks {
            for k in 0..n {
                if b == arm_then(k) {
                    visits_then[k] += p.count.0;
                }
                if b == arm_else(k) {
                    visits_else[k] += p.count.0;
                }
            }
        }
    }
    for k in 0..n {
        // 0x55..: even bits set. Calls: pattern, all ones, pattern.
        let then_expected = if (k % 64) % 2 == 0 { 3 } else { 1 };
        assert_eq!((visits_then[k], visits_else[k]), (then_expected, 3 - then_expected), "diamond {k}");
    }
    (f.num_paths(), f.cut_blocks().len())
}

#[test]
fn wide_functions_use_a_64_bit_register_and_hash_counters() {
    // 2^40 paths: no cuts, but a 64-bit register and host-side counting.
    let (paths, cuts) = check_diamond_paths(40);
    assert_eq!(paths, 1 << 40);
    assert_eq!(cuts, 0);
}

#[test]
fn functions_beyond_64_bits_are_cut_at_merges_and_stay_exact() {
    // 2^80 paths do not fit: merges are cut so that every path ID fits in 64 bits.
    let (paths, cuts) = check_diamond_paths(80);
    assert!(cuts > 0);
    assert!(paths > 1 << 40, "cutting only as much as needed ({paths} paths)");
}

#[test]
fn mode_none_runs_uninstrumented() {
    let run = run_wat(LOOP, &["--mode", "none"], &[]);
    assert!(run.output.status.success());
    assert_eq!(run.profile.mode.name(), "none");
    assert!(run.profile.functions.is_empty());
    assert_eq!(run.profile.path_executions.0, 0);
}

#[test]
fn edge_profile_changes_placement_not_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.wasm");
    std::fs::write(&path, wat::parse_str(SWITCH).unwrap()).unwrap();
    let first = common::run_in(dir.path(), &[], &path, &[]);
    let profile = dir.path().join("first.json");
    std::fs::write(&profile, first.profile.to_json()).unwrap();
    let second = common::run_in(dir.path(), &["--edge-profile", profile.to_str().unwrap()], &path, &[]);
    assert!(second.output.status.success(), "{}", String::from_utf8_lossy(&second.output.stderr));
    let key = |r: &common::Run| {
        let mut v: Vec<_> = function(&r.profile, "dispatch")
            .paths()
            .iter()
            .map(|p| (p.blocks.clone(), p.start, p.end, p.count.0))
            .collect();
        v.sort();
        v
    };
    assert_eq!(key(&first), key(&second));
    // A spanning tree of the measured frequencies keeps the hot edges free of increments.
    let executed = |r: &common::Run| function(&r.profile, "dispatch").profiled().unwrap().increments_executed.0;
    assert!(executed(&second) <= executed(&first), "{} > {}", executed(&second), executed(&first));
    assert!(function(&second.profile, "dispatch").profiled().unwrap().increments > 0);

    // A profile of another module is refused.
    let other = dir.path().join("other.wasm");
    std::fs::write(&other, wat::parse_str(FIB).unwrap()).unwrap();
    let out = common::pathprof()
        .current_dir(dir.path())
        .args(["run", "--quiet", "-o", "x.json", "--edge-profile", profile.to_str().unwrap()])
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("profile of another module"));
}

/// A tight loop (counted in a local) in a recursive function: each activation runs the loop, then
/// calls itself; the innermost one traps right after its loop, with its iterations still pending.
const RECURSIVE_LOOP: &str = r#"
(module
  (func $f (export "f") (param $d i32) (param $n i32)
    (local $i i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (if (local.get $d)
      (then (call $f (i32.sub (local.get $d) (i32.const 1)) (local.get $n)))
      (else (if (global.get $trap) (then unreachable)))))
  (global $trap (mut i32) (i32.const 0))
  (func (export "_start")
    (call $f (i32.const 3) (i32.const 10))
    (global.set $trap (i32.const 1))
    (call $f (i32.const 2) (i32.const 7))))
"#;

#[test]
fn loop_counters_are_exact_across_recursion_and_traps() {
    let run = run_wat(RECURSIVE_LOOP, &[], &[]);
    assert_eq!(run.output.status.code(), Some(134));
    let p = &run.profile;
    assert_eq!(p.open_activations_at_exit, 4, "_start and three activations of f");
    check_balance(p);
    let f = function(p, "f");
    let header = f.blocks.iter().find(|b| b.loop_header).unwrap().id;
    // First call: 4 activations × 9 back edges (i = 1..9 < 10); second call: 3 × 6 (i = 1..6 < 7),
    // the last 6 of them still pending in the trapping activation.
    assert_eq!(total(f, |x| x.start == Endpoint::Block(header) && x.end == Endpoint::Block(header)), 4 * 9 + 3 * 6);
    // Every activation entered the loop once; only the 4 activations of the first call returned (in
    // the second, the innermost trapped while the other two waited for their calls).
    assert_eq!(total(f, |x| x.start == Endpoint::Entry), 7);
    assert_eq!(total(f, |x| x.start == Endpoint::Block(header) && x.end == Endpoint::Exit), 4);
}

/// A loop whose way around is counted at its header, with a second way around through a call (a
/// `br` that takes the counter's decrement), trapping inside the loop (`1 / (m - i)` at `i = m`).
const TRAP_IN_LOOP: &str = r#"
(module
  (func $g)
  (func $f (export "f") (param $n i32) (param $m i32)
    (local $i i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (drop (i32.div_u (i32.const 1) (i32.sub (local.get $m) (local.get $i))))
      (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 3)))
        (then (call $g) (br $l)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n)))))
  (func (export "_start")
    (call $f (i32.const 10) (i32.const 100))
    (call $f (i32.const 10) (i32.const 5))))
"#;

#[test]
fn loop_counted_at_its_header_is_exact_when_the_loop_traps() {
    let run = run_wat(TRAP_IN_LOOP, &[], &[]);
    assert_eq!(run.output.status.code(), Some(134));
    let p = &run.profile;
    check_balance(p);
    let f = function(p, "f");
    let header = f.blocks.iter().find(|b| b.loop_header).unwrap().id;
    let mut around: Vec<_> =
        f.paths().iter().filter(|x| x.start == Endpoint::Block(header) && x.end == Endpoint::Block(header)).collect();
    // The way through the call's arm comes first in the body.
    around.sort_by_key(|x| x.blocks[1]);
    let counts: Vec<u64> = around.iter().map(|x| x.count.0).collect();
    // f(10, 100): i = 3, 6, 9 go round through the call, i = 1, 2, 4, 5, 7, 8 by `br_if`, i = 10 leaves.
    // f(10, 5): i = 3 through the call; i = 1, 2 and 4 by `br_if` (4 after the call's flush, still in
    // the slot when i = 5 traps).
    assert_eq!(counts, vec![3 + 1, 6 + 3]);
    assert_eq!(total(f, |x| x.start == Endpoint::Entry), 2);
    assert_eq!(total(f, |x| x.start == Endpoint::Block(header) && x.end == Endpoint::Exit), 1);
}

/// A loop with a nested loop and no call, whose header counts in runs: the recursive calls after it
/// reuse its slot, and the last activation traps inside it (`1 / (t - i)` at `i = t`) with a run
/// pending.
const RUNS_IN_LOOP: &str = r#"
(module
  (global $t (mut i32) (i32.const 0))
  (func $f (export "f") (param $d i32) (param $n i32)
    (local $i i32) (local $k i32)
    (loop $l
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 4)))
        (then
          (local.set $k (i32.const 0))
          (loop $inner
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br_if $inner (i32.lt_u (local.get $k) (i32.const 3))))))
      (drop (i32.div_u (i32.const 1) (i32.sub (global.get $t) (local.get $i))))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (if (local.get $d)
      (then (call $f (i32.sub (local.get $d) (i32.const 1)) (local.get $n)))))
  (func (export "_start")
    (call $f (i32.const 3) (i32.const 10))
    (global.set $t (i32.const 7))
    (call $f (i32.const 0) (i32.const 10))))
"#;

#[test]
fn loop_counted_in_runs_is_exact_across_recursion_and_traps() {
    let run = run_wat(RUNS_IN_LOOP, &[], &[]);
    assert_eq!(run.output.status.code(), Some(134));
    let p = &run.profile;
    check_balance(p);
    let f = function(p, "f");
    let headers: Vec<u32> = f.blocks.iter().filter(|b| b.loop_header).map(|b| b.id).collect();
    let (outer, inner) = (Endpoint::Block(headers[0]), Endpoint::Block(headers[1]));
    // f(3, 10): 4 activations, each going round at i = 1..9, through the inner loop at i = 4 and 8.
    // f(0, 10) traps at i = 7: round through the inner loop at i = 4, the short way at i = 1, 2, 3,
    // 5 and 6, the last two a run still pending in the slot.
    assert_eq!(total(f, |x| x.start == outer && x.end == outer), 4 * 7 + 5);
    assert_eq!(total(f, |x| x.start == inner && x.end == outer), 4 * 2 + 1);
    assert_eq!(total(f, |x| x.start == Endpoint::Entry), 5);
    assert_eq!(total(f, |x| x.end == Endpoint::Exit), 4);
}

/// A loop of `rounds` iterations over 15 diamonds (2^15 paths through its body, more than an array
/// takes): diamond `k < 12` takes its `then` arm when bit `k` of `i mod 4096` is set, the others
/// never do, so 4096 distinct paths run, each `rounds / 4096` times — four times the slots of the
/// function's table.
fn many_hashed_paths(rounds: u32) -> String {
    let mut body = String::new();
    for k in 0..15 {
        body += &format!(
            "(if (i32.and (i32.shr_u (i32.and (local.get $i) (i32.const 4095)) (i32.const {k})) (i32.const 1))
               (then (global.set $g (i32.add (global.get $g) (i32.const {}))))
               (else (global.set $g (i32.sub (global.get $g) (i32.const 1)))))\n",
            k + 1
        );
    }
    format!(
        r#"(module
          (global $g (mut i32) (i32.const 0))
          (func $spread (export "spread")
            (local $i i32)
            (loop $top
              {body}
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $top (i32.lt_u (local.get $i) (i32.const {rounds})))))
          (func (export "_start") (call $spread)))"#
    )
}

/// The hash table in the profiler's memory holds 1,024 paths; the other paths of the function go
/// to the host. Every count is still exact.
#[test]
fn hash_counted_paths_are_exact_beyond_the_table() {
    let (rounds, patterns) = (4096 * 25, 4096u64);
    let run = run_wat(&many_hashed_paths(rounds), &[], &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    check_balance(&run.profile);
    let f = function(&run.profile, "spread");
    assert_eq!(f.profiled().unwrap().counters, pathprof_core::profile::CounterKind::Hash);
    let header = f.paths().iter().find(|p| p.start != Endpoint::Entry).unwrap().start;
    // Round trips of the loop, by count: the last round leaves the loop, so its pattern (4095) comes
    // back to the header once less than the others.
    let mut by_count: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for p in f.paths().iter().filter(|p| p.start == header && p.end == header) {
        *by_count.entry(p.count.0).or_default() += 1;
    }
    let each = u64::from(rounds) / patterns;
    assert_eq!(by_count, [(each - 1, 1), (each, patterns - 1)].into_iter().collect());
    assert_eq!(total(f, |p| p.start == Endpoint::Entry), 1);
    assert_eq!(total(f, |p| p.end == Endpoint::Exit), 1);

    // The table held most of the paths it has slots for; the host counted the others, and no more.
    let bytes = wat::parse_str(many_hashed_paths(rounds)).unwrap();
    let prepared =
        pathprof::Prepared::new(&bytes, "m.wasm", &pathprof::Mode::parse("bl").unwrap(), &pathprof::Inputs::default())
            .unwrap();
    let config = pathprof::RunConfig { args: vec!["m.wasm".into()], capture_output: true, ..Default::default() };
    let run = prepared.run(&pathprof_runtime::engine().unwrap(), &config).unwrap();
    let host_entries = run.host_bytes / 16;
    let distinct = f.paths().len() as u64;
    assert!(
        host_entries > 0 && host_entries + 512 < distinct,
        "{host_entries} of {distinct} paths counted by the host"
    );
}
