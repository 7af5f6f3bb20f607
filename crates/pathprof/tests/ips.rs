//! Interprocedural path segments (`--mode ips[:K]`) [PPP07 §3.4.1–3.4.2] on fixtures/c/recursion.c,
//! counted from its source: `fib(15)` makes 1973 calls, 986 of them inner calls that call `fib`
//! twice; of the 1972 calls `fib` makes of itself, 987 reach a leaf and 985 an inner call; the
//! first descent's leaf, at depth 15, also calls `new_max_depth`, as 14 inner calls do.

mod common;

use common::{check_segment_roots, function, path_calls, pathprof, run_in};
use pathprof::modes::ips::{facts, IpsFacts, IpsStep, Mark};
use pathprof_core::profile::Profile;
use std::path::Path;

fn recursion() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/c/recursion.wasm"))
}

fn run_ips(k: usize) -> (Profile, IpsFacts) {
    let dir = tempfile::tempdir().unwrap();
    let mode = format!("ips:{k}");
    let run = run_in(dir.path(), &["--mode", &mode], recursion(), &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    let want = std::fs::read(recursion().with_extension("stdout.expected")).unwrap();
    assert_eq!(run.output.stdout, want, "the program's output changed");
    let facts = facts(&run.profile.mode).unwrap();
    assert_eq!(facts.k, k);
    assert_eq!((facts.mismatched.0, facts.open_activations.0), (0, 0));
    (run.profile, facts)
}

#[test]
fn fibonacci_at_depth_1() {
    let (p, facts) = run_ips(1);
    check_segment_roots(&p, &facts);
    let fib = function(&p, "fib");
    let fib_calls = path_calls(fib);
    let max_depth = function(&p, "new_max_depth").index;
    // Segments from fib into fib: the callee's first subpath, and back when it made no call.
    let (mut leaf_and_back, mut stopped_in_callee, mut into_max_depth) = (0, 0, 0);
    for s in &facts.ips {
        let [IpsStep::Sub(root), IpsStep::Mark(Mark::Call), rest @ ..] = &s.steps[..] else { panic!("{s:?}") };
        if root.function != fib.index {
            continue;
        }
        match rest {
            [IpsStep::Sub(callee), IpsStep::Mark(Mark::Return), IpsStep::Sub(back)] => {
                assert_eq!((back.function, back.path, back.part), (root.function, root.path, root.part + 1));
                if callee.function == max_depth {
                    into_max_depth += s.count.0;
                } else {
                    assert_eq!((callee.function, fib_calls[&callee.path.0]), (fib.index, 0), "{s:?}");
                    leaf_and_back += s.count.0;
                }
            }
            [IpsStep::Sub(callee)] => {
                assert_eq!(callee.function, fib.index);
                assert!(fib_calls[&callee.path.0] > 0, "a callee's subpath that ends at a call: {s:?}");
                stopped_in_callee += s.count.0;
            }
            _ => panic!("a depth-1 segment of fib: {s:?}"),
        }
    }
    assert_eq!(leaf_and_back, 986);
    assert_eq!(stopped_in_callee, 985 + 1);
    assert_eq!(into_max_depth, 15);
    // The Ball–Larus counts are a `bl` run's.
    let dir = tempfile::tempdir().unwrap();
    let bl = run_in(dir.path(), &[], recursion(), &[]).profile;
    let counts = |p: &Profile| {
        let mut v: Vec<_> =
            p.functions.iter().flat_map(|f| f.paths().iter().map(|x| (f.index, x.id.0, x.count.0))).collect();
        v.sort();
        v
    };
    assert_eq!(counts(&p), counts(&bl));
}

#[test]
fn fibonacci_at_depth_2() {
    let (p, facts) = run_ips(2);
    check_segment_roots(&p, &facts);
    let fib = function(&p, "fib");
    let fib_calls = path_calls(fib);
    // fib(n)'s second call, fib(n - 2), reaches a leaf for n = 2 and 3, which fib(15) calls 377 and
    // 233 times: those segments come back to fib(n)'s last part, which ends at its exit.
    let leaf = |s: &IpsStep| matches!(s, IpsStep::Sub(x) if x.function == fib.index && fib_calls[&x.path.0] == 0);
    let second_to_leaf: u64 = facts
        .ips
        .iter()
        .filter(|s| match &s.steps[..] {
            [IpsStep::Sub(root), IpsStep::Mark(Mark::Call), callee, IpsStep::Mark(Mark::Return), IpsStep::Sub(back)] => {
                root.function == fib.index && root.part + 1 == fib_calls[&root.path.0] && leaf(callee) && back.part == root.part + 1
            }
            _ => false,
        })
        .map(|s| s.count.0)
        .sum();
    assert_eq!(second_to_leaf, 377 + 233);
    // No segment follows more than two calls.
    for s in &facts.ips {
        assert!(s.steps.iter().filter(|x| **x == IpsStep::Mark(Mark::Call)).count() <= 2, "{s:?}");
    }
}

#[test]
fn merged_profiles_add_their_segments() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.json");
    let status = pathprof()
        .args(["run", "--quiet", "--mode", "ips:2", "-o"])
        .arg(&one)
        .arg(recursion())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let two = dir.path().join("two.json");
    let out = pathprof().arg("merge").arg(&one).arg(&one).arg("-o").arg(&two).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let read = |p: &Path| facts(&Profile::from_json(&std::fs::read_to_string(p).unwrap()).unwrap().mode).unwrap();
    let (a, b) = (read(&one), read(&two));
    assert_eq!(b.segments, a.segments);
    assert_eq!(b.executions.0, 2 * a.executions.0);
    for (x, y) in a.ips.iter().zip(&b.ips) {
        assert_eq!((&x.steps, 2 * x.count.0), (&y.steps, y.count.0));
    }
    // A text report lists the segments with their source lines.
    let out = pathprof().arg("report").arg(&one).args(["--top", "3"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("interprocedural path segments of up to 2 calls"), "{text}");
    assert!(text.contains("recursion.c:25"), "{text}");
}

/// `run(from, to)` calls `f(i)` for `i` in `from..to`; `f` calls `g` twice with opposite parities of
/// `i`, and a third time for `i > 5`. A test run of `f(0)` takes both ways through `g`, so that
/// `f(1)`, which takes them in the other order, runs only tested paths but untested segments.
const SEGMENTS: &str = r#"
(module
  (global $acc (mut i32) (i32.const 0))
  (func $g (param $x i32)
    (if (local.get $x)
      (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))
      (else (global.set $acc (i32.mul (global.get $acc) (i32.const 3))))))
  (func $f (param $x i32)
    (call $g (i32.and (local.get $x) (i32.const 1)))
    (call $g (i32.eqz (i32.and (local.get $x) (i32.const 1))))
    (if (i32.gt_u (local.get $x) (i32.const 5))
      (then (call $g (local.get $x)))))
  (func (export "run") (param $from i32) (param $to i32) (result i32)
    (local $i i32)
    (local.set $i (local.get $from))
    (block $done
      (loop $top
        (br_if $done (i32.ge_u (local.get $i) (local.get $to)))
        (call $f (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $top)))
    (global.get $acc)))
"#;

/// Interprocedural residual path profiling [PPP07 §3.5.2]: a test run's segments are the
/// interesting ones of a field run; the untested segments are those of the field run (profiled on
/// its own) that the test run did not take, and those whose every Ball–Larus path the test run took
/// are the ones intraprocedural residual profiling misses.
#[test]
fn untested_segments_of_a_field_run() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("m.wasm"), wat::parse_str(SEGMENTS).unwrap()).unwrap();
    let run = |out: &str, extra: &[&str], args: &[&str]| {
        let output = pathprof()
            .current_dir(dir)
            .args(["run", "--quiet", "-o", out, "--invoke", "run"])
            .args(extra)
            .arg("m.wasm")
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&output.stderr));
        let p = Profile::from_json(&std::fs::read_to_string(dir.join(out)).unwrap()).unwrap();
        (output.stdout, p)
    };
    for k in ["1", "2"] {
        let mode = format!("ips:{k}");
        let (_, test) = run("test.json", &["--mode", &mode], &["0", "1"]);
        let (want_out, alone) = run("alone.json", &["--mode", &mode], &["1", "8"]);
        let (out, field) = run("field.json", &["--mode", &mode, "--interesting", "test.json"], &["1", "8"]);
        assert_eq!(out, want_out, "the program's result is its own");
        // The oracle: the field run's segments, profiled alone, that the test run did not take.
        let tested: Vec<_> = facts(&test.mode).unwrap().ips.into_iter().map(|s| s.steps).collect();
        let tested_paths: std::collections::HashSet<(u32, u64)> =
            test.functions.iter().flat_map(|f| f.paths().iter().map(move |x| (f.index, x.id.0))).collect();
        let alone = facts(&alone.mode).unwrap();
        let want: Vec<_> = alone.ips.iter().filter(|s| !tested.contains(&s.steps)).collect();
        let missed = want
            .iter()
            .filter(|s| {
                s.steps
                    .iter()
                    .all(|x| !matches!(x, IpsStep::Sub(sub) if !tested_paths.contains(&(sub.function, sub.path.0))))
            })
            .count();
        assert!(
            !want.is_empty() && missed > 0 && missed < want.len(),
            "k = {k}: {} untested, {missed} missed",
            want.len()
        );

        let facts = facts(&field.mode).unwrap();
        let residual = facts.residual.as_ref().expect("a field run with interesting segments");
        assert_eq!(residual.interesting_from, ["test.json"]);
        assert_eq!(residual.interesting.0, tested.len() as u64);
        assert_eq!(residual.segments.0, want.len() as u64);
        assert_eq!(residual.executions.0, want.iter().map(|s| s.count.0).sum::<u64>());
        for s in &facts.ips {
            assert_eq!(s.interesting, Some(tested.contains(&s.steps)), "k = {k}: {s:?}");
        }
        let json: serde_json::Value = serde_json::from_slice(
            &pathprof()
                .current_dir(dir)
                .args(["report", "field.json", "--untested", "--json"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        assert_eq!(json["paths"], want.len());
        assert_eq!(json["missed_by_intraprocedural"], missed);
        assert_eq!(json["untested"].as_array().unwrap().len(), want.len());
        let share = want.iter().map(|s| s.count.0).sum::<u64>() as f64 / alone.executions.0 as f64;
        assert!((json["executions_share"].as_f64().unwrap() - share).abs() < 1e-12);
        let text = pathprof().current_dir(dir).args(["report", "field.json", "--untested"]).output().unwrap();
        let text = String::from_utf8(text.stdout).unwrap();
        assert!(text.contains("untested segments of tested paths only"), "{text}");
        assert!(text.contains("intraprocedural RPP misses it"), "{text}");
    }
    // Interesting segments must be segments of the same depth, from ips profiles.
    run("one.json", &["--mode", "ips:1"], &["0", "1"]);
    run("bl.json", &[], &["0", "1"]);
    for (given, expect) in [
        ("one.json", "--mode ips:2 takes interesting segments of up to 2 calls, not 1"),
        ("bl.json", "--mode ips:2 takes ips profiles as --interesting"),
    ] {
        let out = pathprof()
            .current_dir(dir)
            .args(["run", "--quiet", "-o", "x.json", "--invoke", "run", "--mode", "ips:2", "--interesting", given])
            .args(["m.wasm", "1", "8"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
    }
    assert!(!dir.join("x.json").exists());
}

/// An edit of a profile's JSON.
type Edit = fn(&mut serde_json::Value);

/// A profile whose segments say what no run writes is refused in one line, by `report` and `merge`.
#[test]
fn edited_segments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let status = pathprof()
        .args(["run", "--quiet", "--mode", "ips:2", "-o"])
        .arg(dir.join("p.json"))
        .arg(recursion())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("p.json")).unwrap()).unwrap();
    let edits: [(&str, Edit); 6] = [
        ("are not the number and the sum", |d| d["mode_facts"]["executions"] = 1.into()),
        ("a segment with count 0", |d| d["mode_facts"]["ips"][0]["count"] = 0.into()),
        ("listed twice", |d| {
            let first = d["mode_facts"]["ips"][0].clone();
            d["mode_facts"]["ips"].as_array_mut().unwrap()[1] = first;
        }),
        ("two subpaths in a row", |d| {
            d["mode_facts"]["ips"][0]["steps"].as_array_mut().unwrap().remove(1);
        }),
        ("more calls than k", |d| {
            let steps = d["mode_facts"]["ips"][0]["steps"].as_array_mut().unwrap();
            let (sub, call) = (steps[0].clone(), steps[1].clone());
            for _ in 0..3 {
                steps.insert(0, call.clone());
                steps.insert(0, sub.clone());
            }
        }),
        ("without the interesting segments", |d| d["mode_facts"]["ips"][0]["interesting"] = true.into()),
    ];
    for (expect, edit) in edits {
        let mut d = doc.clone();
        edit(&mut d);
        std::fs::write(dir.join("bad.json"), serde_json::to_string(&d).unwrap()).unwrap();
        for args in [&["report", "bad.json"][..], &["merge", "bad.json", "p.json", "-o", "m.json"]] {
            let out = pathprof().current_dir(dir).args(args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?} {expect}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains(expect), "{args:?}: {stderr}");
        }
        assert!(!dir.join("m.json").exists());
    }
}
