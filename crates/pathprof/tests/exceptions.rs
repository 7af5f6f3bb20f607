//! Exception handling (`try_table`, `throw`, `throw_ref`): a path ends where an exception is raised,
//! a handler's landing starts new paths, and a function that an exception leaves counts the path
//! that raised it. The counts are checked against what the program does, computed by hand.

mod common;

use common::{check_balance, function, run_wat, total};
use pathprof_core::profile::{Endpoint, FunctionProfile};

/// `run` calls `check(i)` for i in 0..30 inside a `try_table` that catches `$e`; `check` throws
/// for multiples of 3 (10 times) and returns otherwise (20 times). Then `top` catches, with
/// `catch_all`, what `mid` lets through from `check(3)`; `mid` rethrows with `throw_ref` after a
/// cleanup. The exit status is the number of exceptions `run` caught.
const THROWS: &str = r#"(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (tag $e (param i32))
  (global $cleanups (mut i32) (i32.const 0))
  (func $check (param $i i32) (result i32)
    local.get $i
    i32.const 3
    i32.rem_u
    i32.eqz
    if
      local.get $i
      throw $e
    end
    local.get $i)
  (func $mid
    block $cleanup (result exnref)
      try_table (catch_all_ref $cleanup)
        i32.const 3
        call $check
        drop
      end
      return
    end
    global.get $cleanups
    i32.const 1
    i32.add
    global.set $cleanups
    throw_ref)
  (func $top
    block $h
      try_table (catch_all $h)
        call $mid
      end
    end)
  (func $run (export "_start")
    (local $i i32) (local $caught i32)
    loop $l
      block $done
        block $h (result i32)
          try_table (catch $e $h)
            local.get $i
            call $check
            drop
          end
          br $done
        end
        drop
        local.get $caught
        i32.const 1
        i32.add
        local.set $caught
      end
      local.get $i
      i32.const 1
      i32.add
      local.tee $i
      i32.const 30
      i32.lt_u
      br_if $l
    end
    call $top
    local.get $caught
    global.get $cleanups
    i32.add
    call $proc_exit))"#;

fn ended_by_throw(f: &FunctionProfile) -> u64 {
    total(f, |p| p.end == Endpoint::Throw)
}

fn from_landing(f: &FunctionProfile) -> u64 {
    total(f, |p| matches!(p.start, Endpoint::Block(b) if f.blocks[b as usize].landing))
}

#[test]
fn paths_end_where_exceptions_are_raised_and_start_where_they_are_caught() {
    let run = run_wat(THROWS, &[], &[]);
    // 10 caught by `run`, 1 cleanup in `mid`.
    assert_eq!(run.output.status.code(), Some(11), "{}", String::from_utf8_lossy(&run.output.stderr));
    let p = &run.profile;
    check_balance(p);
    assert!(p.functions.iter().all(|f| f.is_instrumented()), "every function is instrumented");

    // `check`: 11 throws (10 from `run`, 1 from `mid`), 20 returns; one path each.
    let check = function(p, "check");
    let thrown: Vec<_> = check.paths().iter().filter(|x| x.end == Endpoint::Throw).collect();
    assert_eq!(thrown.len(), 1);
    assert_eq!(thrown[0].count.0, 11);
    assert_eq!(total(check, |x| x.end == Endpoint::Exit), 20);
    assert_eq!(total(check, |x| x.start == Endpoint::Entry), 31);

    // `run`: each throw ends the loop iteration's path at the call, and the handler's path starts
    // at the landing, 10 times; the other 20 iterations take the loop's normal paths.
    let r = function(p, "run");
    assert_eq!(ended_by_throw(r), 10);
    assert_eq!(from_landing(r), 10);
    assert_eq!(total(r, |x| x.start == Endpoint::Entry), 1);
    // 30 iterations, but the last one's path is still open when `proc_exit` ends the program.
    let header = r.blocks.iter().find(|b| b.loop_header).expect("a loop header").id;
    assert_eq!(total(r, |x| x.start == Endpoint::Block(header)), 29);
    assert_eq!(total(r, |x| x.end == Endpoint::Block(header)), 30);
    assert_eq!(p.open_activations_at_exit, 1);

    // `mid`: the exception from `check` lands in its cleanup, which rethrows out of `mid`.
    let mid = function(p, "mid");
    assert_eq!(ended_by_throw(mid), 2);
    assert_eq!(from_landing(mid), 1);
    assert_eq!(total(mid, |x| x.end == Endpoint::Exit), 0);
    // `top`: `mid`'s exception ends its entry path and lands where the function returns.
    let top = function(p, "top");
    assert_eq!(ended_by_throw(top), 1);
    assert_eq!(from_landing(top), 1);
    assert_eq!(total(top, |x| x.end == Endpoint::Exit), 1);
}

#[test]
fn every_mode_runs_a_program_that_throws() {
    let bl = run_wat(THROWS, &[], &[]);
    let check_bl = function(&bl.profile, "check");
    let dir = tempfile::tempdir().unwrap();
    let interesting = dir.path().join("bl.json");
    std::fs::write(&interesting, serde_json::to_string(&bl.profile).unwrap()).unwrap();
    let interesting = interesting.to_str().unwrap();
    for mode in ["kbl", "pep", "pep:dup", "ppp", "events"] {
        let run = if mode == "ppp" {
            run_wat(THROWS, &["--mode", mode, "--interesting", interesting], &[])
        } else {
            run_wat(THROWS, &["--mode", mode], &[])
        };
        assert_eq!(run.output.status.code(), Some(11), "{mode}: {}", String::from_utf8_lossy(&run.output.stderr));
        check_balance(&run.profile);
        if let Some(sampling) = run.profile.mode.sampling() {
            assert_eq!(sampling.function_copies, mode == "pep:dup", "{mode}: the profile says how it sampled");
        }
        // The exact modes count `check`'s paths as `bl` does (`pep` samples too few path ends here).
        if !mode.starts_with("pep") {
            let counts = |f: &FunctionProfile| {
                let mut v: Vec<_> = f.paths().iter().map(|x| (x.end, x.blocks.clone(), x.count.0)).collect();
                v.sort();
                v
            };
            assert_eq!(counts(function(&run.profile, "check")), counts(check_bl), "{mode}");
        }
    }
}

/// An exception that no handler catches ends the run as a trap does (exit status 134) and the
/// profile says so; every activation it left counted its path, so none is open.
#[test]
fn an_uncaught_exception_ends_the_run_and_says_so() {
    let wat = r#"(module
      (tag $e)
      (func $deep (param $n i32)
        local.get $n
        if
          local.get $n
          i32.const 1
          i32.sub
          call $deep
          return
        end
        throw $e)
      (func (export "_start")
        i32.const 4
        call $deep))"#;
    for mode in ["none", "bl", "kbl", "events"] {
        let run = run_wat(wat, &["--mode", mode], &[]);
        assert_eq!(run.output.status.code(), Some(134), "{mode}");
        assert_eq!(run.profile.trap.as_deref(), Some("uncaught exception"), "{mode}");
        assert_eq!(run.profile.open_activations_at_exit, 0, "{mode}");
        if mode != "none" {
            check_balance(&run.profile);
            // Five activations of `deep` and `_start`'s: the innermost raised it, the others
            // were left by it at their call.
            let deep = function(&run.profile, "deep");
            assert_eq!(ended_by_throw(deep), 5, "{mode}");
            assert_eq!(total(deep, |x| x.end == Endpoint::Throw && x.blocks.len() == 2 && x.blocks[1] == 1), 4);
        }
    }
}
