//! What `run` checks before it works, what it grants the program, and how the report sums up what it
//! left out: errors found before instrumenting, seeded random numbers, skipped functions by reason.

mod common;

use common::{fails_cleanly, pathprof, run_wat};
use pathprof_core::profile::{FunctionState, Profile};
use std::collections::BTreeMap;

/// Writes 16 random bytes to stdout and takes a branch on each byte's low bit.
const RANDOM: &str = r#"
(module
  (import "wasi_snapshot_preview1" "random_get" (func $random (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $odd (mut i32) (i32.const 0))
  (func (export "_start")
    (local $i i32)
    (drop (call $random (i32.const 64) (i32.const 16)))
    (loop $bytes
      (if (i32.and (i32.load8_u offset=64 (local.get $i)) (i32.const 1))
        (then (global.set $odd (i32.add (global.get $odd) (i32.const 1)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $bytes (i32.lt_u (local.get $i) (i32.const 16))))
    (i32.store (i32.const 0) (i32.const 64))
    (i32.store (i32.const 4) (i32.const 16))
    (drop (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
"#;

fn path_counts(p: &Profile) -> BTreeMap<(u32, u64), u64> {
    p.functions.iter().flat_map(|f| f.paths().iter().map(move |x| ((f.index, x.id.0), x.count.0))).collect()
}

#[test]
fn a_random_seed_makes_runs_repeat() {
    let seeded = |seed: &str| run_wat(RANDOM, &["--random-seed", seed], &[]);
    let (a, b, c) = (seeded("7"), seeded("7"), seeded("8"));
    assert_eq!(a.output.stdout.len(), 16);
    assert_eq!(a.output.stdout, b.output.stdout);
    assert_eq!(path_counts(&a.profile), path_counts(&b.profile));
    assert_ne!(a.output.stdout, c.output.stdout, "another seed, other numbers");
    // Unseeded runs draw from the host: 16 equal bytes twice would be a 2^-128 chance.
    let (x, y) = (run_wat(RANDOM, &[], &[]), run_wat(RANDOM, &[], &[]));
    assert_ne!(x.output.stdout, y.output.stdout);
}

/// Prints a line, so that a run that went ahead would show.
const HELLO: &str = r#"
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "ran\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 4))
    (drop (call $write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
"#;

#[test]
fn output_directories_and_imports_are_checked_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.wat"), HELLO).unwrap();
    for args in [["run", "-o", "missing/p.json", "hello.wat"], ["hpp", "--json", "missing/h.json", "hello.wat"]] {
        let out = pathprof().current_dir(dir.path()).args(args).output().unwrap();
        assert!(out.stdout.is_empty(), "the program ran: {}", String::from_utf8_lossy(&out.stdout));
        fails_cleanly(dir.path(), &args, "does not exist");
    }
    let unknown = HELLO.replace(r#""wasi_snapshot_preview1" "fd_write""#, r#""env" "print""#);
    std::fs::write(dir.path().join("env.wat"), unknown).unwrap();
    fails_cleanly(dir.path(), &["run", "env.wat"], "env.wat: unknown import: env::print");
    fails_cleanly(dir.path(), &["hpp", "env.wat"], "unknown import: env::print");
}

/// Seven functions that never run and one that does.
const MANY: &str = r#"
(module
  (func $a (drop (i32.const 1))) (func $b (drop (i32.const 2))) (func $c (drop (i32.const 3)))
  (func $d (drop (i32.const 4))) (func $e (drop (i32.const 5))) (func $f (drop (i32.const 6)))
  (func $g (drop (i32.const 7)))
  (func (export "_start")))
"#;

#[test]
fn skipped_functions_are_summed_up_by_reason_after_the_hot_paths() {
    let mut p = run_wat(MANY, &[], &[]).profile;
    // The instrumented functions that did not run are listed without their names.
    assert!(p.functions.iter().take(7).all(|f| f.name.is_none() && f.paths().is_empty()));
    for (f, name) in p.functions.iter_mut().zip(["a", "b", "c", "d", "e", "f", "g"]) {
        let reason = if name == "g" { "uses stack switching" } else { "uses legacy exception handling" };
        f.name = Some(name.into());
        f.state = FunctionState::Skipped { reason: reason.into() };
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.prof"), p.to_json()).unwrap();
    let out = pathprof().current_dir(dir.path()).args(["report", "p.prof"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1 functions instrumented, 7 skipped"), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let at = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle}: {text}"));
    let (paths, skipped) = (at("start→end"), at("skipped functions (not instrumented): 7"));
    assert!(paths < skipped, "hot paths first: {text}");
    assert!(lines[skipped + 1]
        .trim_start()
        .starts_with("6  uses legacy exception handling: a [0], b [1], c [2] and 3 more"));
    assert!(lines[skipped + 2].trim_start().starts_with("1  uses stack switching: g [6]"), "{text}");
    assert_eq!(lines.len(), skipped + 3, "{text}");
}

/// `down` recurses `n` times, its frames kept apart by a value it adds after the call returns.
const DEEP: &str = r#"
(module
  (func $down (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (i32.add (local.get $n) (call $down (i32.sub (local.get $n) (i32.const 1)))))))
  (func (export "run") (param $n i32) (result i32) (call $down (local.get $n))))
"#;

/// A recursion 40,000 deep needs more than Wasmtime's default wasm stack of 512 KiB (frames of 16
/// bytes and more), and runs, in every mode whose probes make frames larger; one that does not end
/// exhausts the stack, and its profile counts every activation it left open, more than the 65,536
/// frames a backtrace kept before.
#[test]
fn the_wasm_stack_holds_what_probes_add_to_frames() {
    let (dir, wasm) = common::wat_module(DEEP);
    for mode in ["bl", "ippp:2", "kbl"] {
        let r = common::run_in(dir.path(), &["--mode", mode, "--invoke", "run"], &wasm, &["40000"]);
        let stdout = String::from_utf8_lossy(&r.output.stdout);
        assert!(r.output.status.success(), "{mode}: {}", String::from_utf8_lossy(&r.output.stderr));
        assert!(stdout.contains("800020000"), "{mode}: {stdout}");
        assert_eq!(r.profile.trap, None);
    }
    let r = common::run_in(dir.path(), &["--mode", "bl", "--invoke", "run"], &wasm, &["2000000000"]);
    assert!(!r.output.status.success());
    let trap = r.profile.trap.as_deref().unwrap_or_default();
    assert!(trap.contains("call stack exhausted"), "{trap}");
    let open = r.profile.open_activations_at_exit;
    assert!(open > 1 << 16, "{open} activations left open");
}
