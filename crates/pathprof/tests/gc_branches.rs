//! Typed-reference branches (`br_on_null`, `br_on_non_null`, `br_on_cast`, `br_on_cast_fail`), as
//! the compilers of garbage-collected languages (Kotlin, Dart, Java, OCaml) emit them: each ends a
//! block with two edges, taken and not, one of them backward into a loop. The counts are checked
//! against what the program does, computed by hand, in every mode that counts paths exactly.

mod common;

use common::{check_balance, function, run_wat, total};
use pathprof_core::profile::{Endpoint, FunctionProfile, Profile};

/// `len` walks a linked list with `br_on_null` (forward: the empty list, and out of the loop at
/// the last node) and `br_on_non_null` (backward, to the loop's header, with the next node); it
/// is called on lists of 0 to 9 nodes.
/// `walk` walks them too, with `br_on_null` forward only, in a loop entered with an empty stack
/// (where `pep:dup` can switch copies). `classify` tells a null (3 calls), an `i31` (4 calls), a node (5 calls) and another struct
/// (2 calls) apart with `br_on_null`, `br_on_cast` and `br_on_cast_fail`. The exit status is
/// the sum of `len`'s and `walk`'s results (45 each) and `classify`'s (0·3 + (1+2+3+4) + 3·5 +
/// 4·2 = 33): 123.
const GC: &str = r#"(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (type $node (struct (field $next (ref null $node))))
  (type $box (struct (field i32)))
  (type $step (func (param (ref $node))))
  (func $len (param $l (ref null $node)) (result i32) (local $n i32)
    (block $done
      (br_on_null $done (local.get $l))
      (loop $next (type $step)
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (struct.get $node $next)
        (br_on_null $done)
        (br_on_non_null $next)
        (unreachable)))
    (local.get $n))
  (func $walk (param $l (ref null $node)) (result i32) (local $n i32)
    (block $done
      (drop (br_on_null $done (local.get $l)))
      (loop $next
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (local.set $l (struct.get $node $next (local.get $l)))
        (drop (br_on_null $done (local.get $l)))
        (br $next)))
    (local.get $n))
  (func $classify (param $r anyref) (result i32)
    (block $null
      (block $i31 (result (ref i31))
        (block $other (result anyref)
          (local.get $r)
          (br_on_null $null)
          (br_on_cast $i31 (ref any) (ref i31))
          (br_on_cast_fail $other (ref any) (ref $node))
          (drop)
          (return (i32.const 3)))
        (drop)
        (return (i32.const 4)))
      (return (i31.get_s)))
    (i32.const 0))
  (func (export "_start") (local $list (ref null $node)) (local $i i32) (local $sum i32)
    (loop $lists
      (local.set $sum (i32.add (local.get $sum) (call $len (local.get $list))))
      (local.set $sum (i32.add (local.get $sum) (call $walk (local.get $list))))
      (local.set $list (struct.new $node (local.get $list)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $lists (i32.lt_u (local.get $i) (i32.const 10))))
    (local.set $i (i32.const 0))
    (loop $values
      (local.set $sum (i32.add (local.get $sum) (call $classify (ref.null any))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $values (i32.lt_u (local.get $i) (i32.const 3))))
    (local.set $i (i32.const 1))
    (loop $values
      (local.set $sum (i32.add (local.get $sum) (call $classify (ref.i31 (local.get $i)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $values (i32.le_u (local.get $i) (i32.const 4))))
    (local.set $i (i32.const 0))
    (loop $values
      (local.set $sum (i32.add (local.get $sum) (call $classify (struct.new $node (ref.null $node)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $values (i32.lt_u (local.get $i) (i32.const 5))))
    (local.set $i (i32.const 0))
    (loop $values
      (local.set $sum (i32.add (local.get $sum) (call $classify (struct.new $box (i32.const 7)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $values (i32.lt_u (local.get $i) (i32.const 2))))
    (call $proc_exit (local.get $sum))))"#;

/// `len`'s paths by where they start and end: (entry→exit, entry→header, header→header, header→exit).
fn len_paths(len: &FunctionProfile) -> [u64; 4] {
    let between = |s: fn(&Endpoint) -> bool, e: fn(&Endpoint) -> bool| total(len, |p| s(&p.start) && e(&p.end));
    let entry = |x: &Endpoint| *x == Endpoint::Entry;
    let exit = |x: &Endpoint| *x == Endpoint::Exit;
    let header = |x: &Endpoint| matches!(x, Endpoint::Block(_));
    [between(entry, exit), between(entry, header), between(header, header), between(header, exit)]
}

fn check(profile: &Profile, mode: &str) {
    assert!(profile.functions.iter().all(|f| f.is_instrumented()), "{mode}: every function instrumented");
    // The empty list; the nine others enter the loop, turn 0 + 1 + ... + 8 times, and leave it.
    assert_eq!(len_paths(function(profile, "len")), [1, 9, 36, 9], "{mode}: len");
    assert_eq!(len_paths(function(profile, "walk")), [1, 9, 36, 9], "{mode}: walk");
    let mut classify: Vec<u64> = function(profile, "classify").paths().iter().map(|p| p.count.0).collect();
    classify.sort();
    assert_eq!(classify, [2, 3, 4, 5], "{mode}: classify, one path per kind of value");
    check_balance(profile);
}

#[test]
fn typed_reference_branches_are_counted_exactly() {
    let bl = run_wat(GC, &[], &[]);
    assert_eq!(bl.output.status.code(), Some(123), "{}", String::from_utf8_lossy(&bl.output.stderr));
    check(&bl.profile, "bl");
    let dir = tempfile::tempdir().unwrap();
    let interesting = dir.path().join("bl.json");
    std::fs::write(&interesting, serde_json::to_string(&bl.profile).unwrap()).unwrap();
    let interesting = interesting.to_str().unwrap();
    for mode in ["kbl", "events", "ppp", "pep:every:1"] {
        let run = if mode == "ppp" {
            run_wat(GC, &["--mode", mode, "--interesting", interesting], &[])
        } else {
            run_wat(GC, &["--mode", mode], &[])
        };
        assert_eq!(run.output.status.code(), Some(123), "{mode}: {}", String::from_utf8_lossy(&run.output.stderr));
        check(&run.profile, mode);
    }
}

/// With a copy of every function that switches to its instrumented copy (`pep:dup`), the
/// typed-reference branches inside the switch's wrappers are relabeled: the module validates, runs
/// as before, and every function is instrumented.
#[test]
fn typed_reference_branches_run_in_function_copies() {
    let run = run_wat(GC, &["--mode", "pep:dup"], &[]);
    assert_eq!(run.output.status.code(), Some(123), "{}", String::from_utf8_lossy(&run.output.stderr));
    assert!(run.profile.functions.iter().all(|f| f.is_instrumented()));
    assert_eq!(run.profile.mode.sampling().map(|s| s.function_copies), Some(true));
}

/// The garbage-collected objects the program allocates (`gc_new`: ten list nodes, five nodes and
/// two boxes to classify) and the fields it reads (`gc_access`: one `struct.get` per node visited
/// by `len` and by `walk`, 45 each), in every strategy. The last box is allocated on `_start`'s
/// path that `proc_exit` leaves open: counted directly (`dec`), within the stated bound by paths.
#[test]
fn events_count_allocations_and_accesses_of_gc_objects() {
    for mode in ["events", "events:pd", "events:dec"] {
        let run = run_wat(GC, &["--mode", mode, "--events", "gc_new,gc_access"], &[]);
        assert_eq!(run.output.status.code(), Some(123), "{mode}");
        let info = run.profile.mode.events().unwrap();
        if mode == "events:dec" {
            assert_eq!(info.totals.get("gc_new"), Some(17), "{mode}");
        } else {
            assert_eq!(info.totals.get("gc_new"), Some(16), "{mode}");
            let bound = info.undercount_bound.as_ref().expect("an open path");
            assert!(bound.get("gc_new").unwrap() >= 1, "{mode}: {bound:?}");
        }
        assert_eq!(info.totals.get("gc_access"), Some(90), "{mode}");
        let len = function(&run.profile, "len").events().unwrap();
        assert_eq!((len.get("gc_new"), len.get("gc_access")), (Some(0), Some(45)), "{mode}");
    }
}

/// `report --branches` lists the typed-reference branches with the others, each with how often
/// it went to its label; `hint` never hints them (the branch hinting proposal covers `br_if` and
/// `if`), and counts only the branches it may hint.
#[test]
fn typed_reference_branches_are_reported_but_not_hinted() {
    use pathprof::hint::{branches, hint, HintOptions};
    use pathprof_wasm::hints::BranchOp;
    let program = wat::parse_str(GC).unwrap();
    let bl = run_wat(GC, &[], &[]);
    let (biased, even) = branches(&program, &bl.profile, None, (1, 0.5), 100).unwrap();
    let mut seen: Vec<(String, &str, u64, u64)> = even
        .iter()
        .filter(|b| !b.site.op.hintable())
        .map(|b| (b.function.name.clone().unwrap(), b.site.op.name(), b.counts.total(), b.counts.taken))
        .collect();
    seen.sort();
    // (function, operator, executions, taken): `len`'s loop turns 45 times, leaving at the null
    // 9 times and going round with the next node 36 times.
    let expected = [
        ("classify", "br_on_cast", 11, 4),
        ("classify", "br_on_cast_fail", 7, 2),
        ("classify", "br_on_null", 14, 3),
        ("len", "br_on_non_null", 36, 36),
        ("len", "br_on_null", 10, 1),
        ("len", "br_on_null", 45, 9),
        ("walk", "br_on_null", 10, 1),
        ("walk", "br_on_null", 45, 9),
    ];
    let expected: Vec<(String, &str, u64, u64)> =
        expected.iter().map(|&(f, op, n, t)| (f.to_string(), op, n, t)).collect();
    assert_eq!(seen, expected);
    assert!(biased.iter().any(|b| b.site.op == BranchOp::BrOnNonNull), "always taken: the most biased");

    let hinted = hint(&program, &bl.profile, &HintOptions { min_count: 1, ..HintOptions::default() }).unwrap();
    let sites = pathprof_wasm::hints::branch_sites(&program).unwrap();
    let hintable = sites.iter().flatten().filter(|s| s.op.hintable()).count();
    assert_eq!(hinted.branches, hintable);
    assert!(hinted.hinted > 0);
    let written = pathprof_wasm::hints::read_hints(&hinted.bytes).unwrap();
    for (func, offsets) in &written {
        let defined = &sites[*func as usize - 1];
        for offset in offsets.keys() {
            let site = defined.iter().find(|s| s.offset == *offset).unwrap();
            assert!(site.op.hintable(), "function {func} offset {offset}: {:?}", site.op);
        }
    }
}
