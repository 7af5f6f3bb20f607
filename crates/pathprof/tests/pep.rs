//! Sampled profiling (PEP): `--every 1` is the exact profile, sparser sampling converges to it as the
//! density rises, and timer-driven sampling takes samples without changing the program's behaviour.

mod common;

use common::{run_in, Run};
use pathprof_core::accuracy::{compare_functions, path_weights, HOT_THRESHOLD};

/// A loop of 200 000 iterations: a 1-in-10 arm, a 1-in-3 arm, and a call every 7th iteration.
const SKEWED: &str = r#"
(module
  (global $acc (mut i32) (i32.const 0))
  (func $leaf (param $x i32) (global.set $acc (i32.xor (global.get $acc) (local.get $x))))
  (func $work (export "work") (param $n i32)
    (local $i i32)
    (loop $top
      (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 10)))
        (then (global.set $acc (i32.add (global.get $acc) (i32.const 3))))
        (else (global.set $acc (i32.sub (global.get $acc) (i32.const 1)))))
      (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 3)))
        (then (global.set $acc (i32.mul (global.get $acc) (i32.const 5)))))
      (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 7)))
        (then (call $leaf (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $top (i32.lt_u (local.get $i) (local.get $n)))))
  (func (export "_start") (call $work (i32.const 200000))))
"#;

fn run(mode: &[&str]) -> Run {
    run_with(mode, &[])
}

fn run_with(mode: &[&str], args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.wasm");
    std::fs::write(&path, wat::parse_str(SKEWED).unwrap()).unwrap();
    let run = run_in(dir.path(), mode, &path, args);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    run
}

#[test]
fn every_path_end_sampled_is_the_exact_profile() {
    let exact = run(&[]);
    let sampled = run(&["--mode", "pep", "--every", "1"]);
    assert_eq!(sampled.profile.mode.name(), "pep");
    let s = sampled.profile.mode.sampling().unwrap();
    assert_eq!((s.every, s.ticks), (Some(1), 0));
    assert_eq!(s.samples_taken, exact.profile.path_executions.0);
    for (a, b) in exact.profile.functions.iter().zip(&sampled.profile.functions) {
        assert_eq!(path_weights(a), path_weights(b), "{:?}", a.name);
        assert_eq!(a.edges(), b.edges());
    }
    let acc = compare_functions(&exact.profile.functions, &sampled.profile.functions, HOT_THRESHOLD);
    assert_eq!((acc.paths, acc.relative_overlap), (1.0, 1.0));
    assert!((acc.absolute_overlap - 1.0).abs() < 1e-9);
}

#[test]
fn sampled_profiles_converge_as_sampling_gets_denser() {
    let exact = run(&[]);
    let mut previous = 0.0;
    for every in ["1009", "97", "13", "1"] {
        let sampled = run(&["--mode", "pep", "--every", every]);
        let n: u64 = every.parse().unwrap();
        let taken = sampled.profile.mode.sampling().unwrap().samples_taken;
        // The n-th, 2n-th, … path ends.
        assert_eq!(taken, exact.profile.path_executions.0 / n);
        let acc = compare_functions(&exact.profile.functions, &sampled.profile.functions, HOT_THRESHOLD);
        assert!(acc.absolute_overlap >= previous - 1e-9, "every {every}: {acc:?} after {previous}");
        assert!(acc.relative_overlap > 0.9, "every {every}: {acc:?}");
        previous = acc.absolute_overlap;
    }
    assert!((previous - 1.0).abs() < 1e-9);
}

#[test]
fn timer_sampling_takes_samples_of_the_hot_paths() {
    // 20 million iterations: long enough for many ticks.
    let n = ["20000000"];
    let exact = run_with(&["--invoke", "work"], &n);
    let sampled =
        run_with(&["--invoke", "work", "--mode", "pep", "--samples", "64", "--stride", "17", "--tick-ms", "0.2"], &n);
    let s = sampled.profile.mode.sampling().unwrap();
    assert_eq!((s.samples, s.stride, s.every), (64, 17, None));
    assert!(s.ticks > 0 && s.samples_taken > 0 && s.samples_taken <= 64 * s.ticks, "{s:?}");
    assert_eq!(s.samples_taken, sampled.profile.path_executions.0);
    // Whatever was sampled is a real path of the exact profile.
    let work = |r: &Run| r.profile.functions.iter().find(|f| f.name.as_deref() == Some("work")).unwrap().clone();
    let known = path_weights(&work(&exact));
    for key in path_weights(&work(&sampled)).keys() {
        assert!(known.contains_key(key), "{key:?}");
    }
    // The loop's paths are hot enough to be found with a few thousand samples.
    let acc = compare_functions([&work(&exact)], &[work(&sampled)], HOT_THRESHOLD);
    assert!(s.samples_taken < 1000 || acc.paths > 0.9, "{acc:?} from {s:?}");
}

#[test]
fn bad_sampling_flags_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.wasm");
    std::fs::write(&path, wat::parse_str(SKEWED).unwrap()).unwrap();
    for flags in [&["--every", "0"][..], &["--samples", "0"], &["--samples", "1048577"], &["--tick-ms", "-1"]] {
        let out = common::pathprof()
            .current_dir(dir.path())
            .args(["run", "--quiet", "--mode", "pep", "-o", "p.json"])
            .args(flags)
            .arg(&path)
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{flags:?}");
        assert!(!dir.path().join("p.json").exists());
    }
}
