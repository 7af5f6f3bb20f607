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

/// A loop whose body is 36 diamonds in a row (2^36 paths, 64-bit path IDs), each arm chosen by a
/// bit of a scrambled iteration count modulo 61 (61 paths run), and a small function beside it.
fn wide_loop() -> String {
    let mut body = String::new();
    for k in 0..36 {
        body += &format!(
            "(if (i64.ne (i64.and (local.get $h) (i64.const {})) (i64.const 0))
               (then (local.set $acc (i64.add (local.get $acc) (i64.const {k}))))
               (else (local.set $acc (i64.xor (local.get $acc) (i64.const {})))))\n",
            1u64 << k,
            k + 7
        );
    }
    format!(
        r#"(module
  (global $out (mut i64) (i64.const 0))
  (func $small (param $x i64) (result i64)
    (if (result i64) (i64.eqz (i64.and (local.get $x) (i64.const 1)))
      (then (i64.add (local.get $x) (i64.const 1))) (else (local.get $x))))
  (func $wide (export "wide") (param $n i32)
    (local $i i32) (local $h i64) (local $acc i64)
    (loop $top
      (local.set $h (i64.mul (i64.extend_i32_u (i32.rem_u (local.get $i) (i32.const 61)))
                             (i64.const 0x9e3779b97f4a7c15)))
      {body}
      (global.set $out (call $small (local.get $acc)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $top (i32.lt_u (local.get $i) (local.get $n)))))
  (func (export "_start") (call $wide (i32.const 1000000))))"#
    )
}

/// Timer sampling of a function whose path IDs exceed 32 bits: its samples reach the host with
/// their whole IDs, and every sampled path is one that the exact profile counted.
#[test]
fn timer_samples_of_functions_with_64_bit_path_ids_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.wasm");
    std::fs::write(&path, wat::parse_str(wide_loop()).unwrap()).unwrap();
    let exact = run_in(dir.path(), &[], &path, &[]);
    let wide = common::function(&exact.profile, "wide");
    assert!(wide.num_paths() > 1 << 32, "{} paths", wide.num_paths());
    let sampled = run_in(dir.path(), &["--mode", "pep", "--tick-ms", "0.05"], &path, &[]);
    assert!(sampled.output.status.success(), "{}", String::from_utf8_lossy(&sampled.output.stderr));
    let counted: std::collections::HashSet<_> =
        wide.paths().iter().map(|p| (p.id, p.start, p.end, p.blocks.clone())).collect();
    let samples = common::function(&sampled.profile, "wide").paths();
    assert!(!samples.is_empty(), "no samples of the wide function");
    for p in samples {
        assert!(counted.contains(&(p.id, p.start, p.end, p.blocks.clone())), "path {} never ran", p.id.0);
    }
    let taken: u64 = sampled.profile.functions.iter().flat_map(|f| f.paths()).map(|p| p.count.0).sum();
    assert_eq!(taken, sampled.profile.mode.sampling().unwrap().samples_taken);
}
