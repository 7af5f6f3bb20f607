//! Depth-1 interprocedural path segments counted as supergraph paths (`--mode ippp`)
//! [PPP07 §3.4.3–3.4.5]: the segments are exactly those `ips:1` counts from its stream (the oracle),
//! on fixtures/c/recursion.c and on a module with direct, indirect and host calls, a callee shared
//! by two callers ([PPP07 Fig. 3.14]'s `bar`), a callee whose first path ends at a loop header and a
//! function left without probes between a call and its callee; the Ball–Larus counts are `bl`'s;
//! interesting segments make the others residual; a function whose supergraph IDs would need more
//! than 64 bits drops calls until they fit, and the segments rooted there are named; an indirect
//! call reads its digit among the functions of its type; with `ippp:slots`, the interesting
//! supergraph paths count in slots, whose facts merge and are checked on read. Segments of up to
//! `K` calls (`ippp:K`) are `ips:K`'s on the same modules.

mod common;

use common::{check_segment_roots, function, pathprof, run_in, Run};
use pathprof::modes::ips::{facts, IpsFacts, IpsStep, Mark};
use pathprof_core::profile::Profile;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

fn recursion() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/c/recursion.wasm"))
}

/// Path counts by function and path ID.
fn counts(p: &Profile) -> BTreeMap<(u32, u64), u64> {
    p.functions.iter().flat_map(|f| f.paths().iter().map(move |x| ((f.index, x.id.0), x.count.0))).collect()
}

/// The segments and their counts.
fn segments(f: &IpsFacts) -> HashMap<Vec<IpsStep>, u64> {
    f.ips.iter().map(|s| (s.steps.clone(), s.count.0)).collect()
}

/// Runs `run` of the module in `dir` with arguments `args` in each of `modes`, each run succeeding.
fn runs<const N: usize>(dir: &Path, wasm: &Path, args: &[&str], modes: [&str; N]) -> [Run; N] {
    modes.map(|mode| {
        let r = run_in(dir, &["--mode", mode, "--invoke", "run"], wasm, args);
        assert!(r.output.status.success(), "{mode}: {}", String::from_utf8_lossy(&r.output.stderr));
        r
    })
}

/// The module `wat`'s `run` with arguments `args` in `ips:1` and in `ippp`, which print the same
/// and count segments with nothing mismatched; with the module's folder and file.
fn ips_and_ippp(wat: &str, args: &[&str]) -> (tempfile::TempDir, PathBuf, Run, Run) {
    let (dir, wasm) = common::wat_module(wat);
    let [ips, ippp] = runs(dir.path(), &wasm, args, ["ips:1", "ippp"]);
    assert_eq!(ippp.output.stdout, ips.output.stdout);
    assert_eq!(facts(&ippp.profile.mode).unwrap().mismatched.0, 0);
    (dir, wasm, ips, ippp)
}

/// The module `wat`'s `run` with argument 6 in `bl`, `ips:2` and `ippp:2`: `ippp:2` prints what
/// `bl` prints, counts its Ball–Larus paths, mismatches nothing, and counts `ips:2`'s segments but
/// those at the roots it names as not counted; with the module's folder and file, the `ippp:2` run,
/// its facts, and how many of `ips:2`'s segments were left out as not counted.
fn ippp_2_as_bl_and_ips_2(wat: &str) -> (tempfile::TempDir, PathBuf, Run, IpsFacts, usize) {
    let (dir, wasm) = common::wat_module(wat);
    let [bl, ips, ippp] = runs(dir.path(), &wasm, &["6"], ["bl", "ips:2", "ippp:2"]);
    assert_eq!(ippp.output.stdout, bl.output.stdout, "the program's result");
    assert_eq!(counts(&ippp.profile), counts(&bl.profile), "the Ball–Larus counts are bl's");
    let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
    assert_eq!(b.mismatched.0, 0);
    let (want, left) = common::without_not_counted(segments(&a), &b);
    assert_eq!(segments(&b), want, "the segments are ips:2's");
    check_segment_roots(&ippp.profile, &b);
    (dir, wasm, ippp, b, left)
}

/// The map `pathprof instrument --mode MODE` writes for module `wasm` in `dir`.
fn instrument_map(dir: &Path, wasm: &Path, mode: &str) -> serde_json::Value {
    let out =
        pathprof().current_dir(dir).args(["instrument", "--mode", mode, "-o", "out.wasm"]).arg(wasm).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(dir.join("out.wasm.map.json")).unwrap()).unwrap()
}

#[test]
fn recursion_counts_the_segments_of_ips_1() {
    let dir = tempfile::tempdir().unwrap();
    let ips = run_in(dir.path(), &["--mode", "ips:1"], recursion(), &[]);
    let ippp = run_in(dir.path(), &["--mode", "ippp"], recursion(), &[]);
    let bl = run_in(dir.path(), &[], recursion(), &[]);
    assert!(ippp.output.status.success(), "{}", String::from_utf8_lossy(&ippp.output.stderr));
    let want = std::fs::read(recursion().with_extension("stdout.expected")).unwrap();
    assert_eq!(ippp.output.stdout, want, "the program's output changed");
    assert_eq!(ippp.profile.mode.name(), "ippp");
    let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
    assert_eq!(segments(&b), segments(&a));
    assert_eq!((b.k, b.mismatched.0, b.open_activations.0, b.not_counted.as_ref()), (1, 0, 0, None));
    assert_eq!(b.segments.0, 25);
    check_segment_roots(&ippp.profile, &b);
    assert_eq!(counts(&ippp.profile), counts(&bl.profile), "the Ball–Larus counts are bl's");
}

/// A bytecode interpreter in C whose handlers dispatch by tail calls (`musttail`, built with
/// `-mtail-call`): every handler has probes, the first handler of a program hands its path to the
/// call that entered it, and the segments are `ips:1`'s.
#[test]
fn a_tail_calling_interpreter_counts_the_segments_of_ips_1() {
    let wasm = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/c/tail_calls.wasm"));
    let dir = tempfile::tempdir().unwrap();
    let [ips, ippp] = ["ips:1", "ippp"].map(|mode| run_in(dir.path(), &["--mode", mode], wasm, &[]));
    let want = std::fs::read(wasm.with_extension("stdout.expected")).unwrap();
    assert_eq!(ippp.output.stdout, want, "the program's output changed");
    let p = &ippp.profile;
    let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&p.mode).unwrap());
    assert_eq!((b.mismatched.0, b.not_counted.as_ref()), (0, None));
    assert_eq!(segments(&b), segments(&a), "the segments are ips:1's");
    let handlers: Vec<_> =
        p.functions.iter().filter(|f| f.name.as_deref().is_some_and(|n| n.starts_with("op_"))).collect();
    assert_eq!(handlers.len(), 10);
    assert!(handlers.iter().all(|f| f.skip_reason().is_none()), "every handler has probes");
    // Each program starts with PUSH: the call that runs a program is taken by op_push (whose first
    // subpath ends at its call of `count`), three rounds of three programs.
    let into_push: u64 = (b.ips.iter())
        .filter(|s| matches!(shape(p, &s.steps), (_, Some(callee), false) if callee == "op_push"))
        .map(|s| s.count.0)
        .sum();
    assert_eq!(into_push, 9);
    check_segment_roots(p, &b);
}

/// [PPP07 Fig. 3.14]'s `bar`, called by `foo1` and `foo2`; `baz`, whose first path ends at its
/// loop's header; `ind`, which calls either through a table; `clock`, which calls the host.
const CALLS: &str = r#"
(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $now (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (global $acc (mut i32) (i32.const 0))
  (type $t (func (param i32)))
  (table 2 funcref)
  (elem (i32.const 0) $bar $baz)
  (func $bar (param $x i32)
    (if (local.get $x)
      (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))
      (else (global.set $acc (i32.mul (global.get $acc) (i32.const 3))))))
  (func $baz (param $x i32) (local $i i32)
    (local.set $i (i32.const 3))
    (loop $l
      (global.set $acc (i32.add (global.get $acc) (local.get $i)))
      (br_if $l (local.tee $i (i32.sub (local.get $i) (i32.const 1))))))
  (func $foo1 (param $x i32)
    (call $bar (local.get $x))
    (if (local.get $x) (then (global.set $acc (i32.xor (global.get $acc) (i32.const 5))))))
  (func $foo2 (param $x i32)
    (if (local.get $x) (then (global.set $acc (i32.sub (global.get $acc) (i32.const 2)))))
    (call $bar (i32.eqz (local.get $x))))
  (func $ind (param $x i32)
    (call_indirect (type $t) (local.get $x) (i32.and (local.get $x) (i32.const 1))))
  (func $clock
    (drop (call $now (i32.const 1) (i64.const 0) (i32.const 0))))
  (func (export "run") (param $n i32) (result i32) (local $i i32)
    (loop $top
      (call $foo1 (i32.and (local.get $i) (i32.const 1)))
      (call $foo2 (i32.eqz (i32.rem_u (local.get $i) (i32.const 3))))
      (call $ind (local.get $i))
      (call $clock)
      (br_if $top (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (global.get $acc)))
"#;

/// The steps of a depth-1 segment by function name: the caller's, the callee's (`None` for none)
/// and whether it went on in the caller.
fn shape(p: &Profile, steps: &[IpsStep]) -> (String, Option<String>, bool) {
    let name = |i: u32| p.functions.iter().find(|f| f.index == i).and_then(|f| f.name.clone()).unwrap_or_default();
    match steps {
        [IpsStep::Sub(root), IpsStep::Mark(Mark::Call), rest @ ..] => match rest {
            [IpsStep::Sub(callee)] => (name(root.function), Some(name(callee.function)), false),
            [IpsStep::Sub(callee), IpsStep::Mark(Mark::Return), IpsStep::Sub(_)] => {
                (name(root.function), Some(name(callee.function)), true)
            }
            [IpsStep::Mark(Mark::Return), IpsStep::Sub(_)] => (name(root.function), None, true),
            _ => panic!("not a depth-1 segment: {steps:?}"),
        },
        _ => panic!("not a segment: {steps:?}"),
    }
}

#[test]
fn direct_indirect_and_host_calls_count_the_segments_of_ips_1() {
    let (dir, wasm) = common::wat_module(CALLS);
    let [ips, ippp, bl] = runs(dir.path(), &wasm, &["12"], ["ips:1", "ippp", "bl"]);
    assert_eq!(ippp.output.stdout, bl.output.stdout, "the program's result is its own");
    let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
    assert_eq!(segments(&b), segments(&a));
    assert_eq!((b.mismatched.0, b.open_activations.0, b.not_counted.as_ref()), (0, 0, None));
    assert_eq!(counts(&ippp.profile), counts(&bl.profile));
    let p = &ippp.profile;
    // Counted from the source, over i = 0..12.
    let mut by_shape: HashMap<(String, Option<String>, bool), u64> = HashMap::new();
    let mut bar_paths: HashMap<(String, u64), u64> = HashMap::new();
    for s in &b.ips {
        let key = shape(p, &s.steps);
        *by_shape.entry(key.clone()).or_default() += s.count.0;
        if let (Some("bar"), IpsStep::Sub(callee)) = (key.1.as_deref(), &s.steps[2]) {
            *bar_paths.entry((key.0, callee.path.0)).or_default() += s.count.0;
        }
    }
    let of = |caller: &str, callee: Option<&str>, back: bool| {
        by_shape.get(&(caller.to_string(), callee.map(str::to_string), back)).copied().unwrap_or(0)
    };
    assert_eq!(of("foo1", Some("bar"), true), 12);
    assert_eq!(of("foo2", Some("bar"), true), 12);
    // Through the table: bar for even i, baz (whose first path ends at its header) for odd i.
    assert_eq!(of("ind", Some("bar"), true), 6);
    assert_eq!(of("ind", Some("baz"), false), 6);
    assert_eq!(of("clock", None, true), 12, "a host function has no head");
    // Fig. 3.14: bar's two paths in each context — foo1 passes i & 1, foo2 i % 3 != 0.
    let mut contexts: Vec<(String, u64)> =
        bar_paths.into_iter().filter(|((c, _), _)| c.starts_with("foo")).map(|((c, _), n)| (c, n)).collect();
    contexts.sort();
    assert_eq!(contexts, [("foo1".into(), 6), ("foo1".into(), 6), ("foo2".into(), 4), ("foo2".into(), 8)]);
}

/// `skip` makes a tail call of `bar`: its path ends before the call, and it publishes that path as
/// its head before it leaves, so the segment from `run` goes through `skip` and back, as the stream
/// has it; `bar`, entered by the tail call, takes no call. `run` calls `skip` directly and through a
/// table.
#[test]
fn a_function_making_a_tail_call_hands_its_own_path_to_its_caller() {
    let wat = r#"(module
      (global $acc (mut i32) (i32.const 0))
      (func $bar (param $x i32)
        (if (local.get $x)
          (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))
          (else (global.set $acc (i32.mul (global.get $acc) (i32.const 3))))))
      (type $t (func (param i32)))
      (table 1 funcref)
      (elem (i32.const 0) $skip)
      (func $skip (param $x i32)
        (if (i32.and (local.get $x) (i32.const 2))
          (then (global.set $acc (i32.xor (global.get $acc) (i32.const 5)))))
        (return_call $bar (i32.and (local.get $x) (i32.const 1))))
      (func $run (export "run") (param $n i32) (result i32) (local $i i32)
        (loop $top
          (call $skip (local.get $i))
          (call_indirect (type $t) (i32.add (local.get $i) (i32.const 1)) (i32.const 0))
          (br_if $top (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
        (global.get $acc)))"#;
    let (_dir, _, ips, ippp) = ips_and_ippp(wat, &["9"]);
    let p = &ippp.profile;
    assert!(function(p, "skip").skip_reason().is_none(), "skip has probes");
    let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&p.mode).unwrap());
    assert_eq!((b.mismatched.0, b.not_counted.as_ref()), (0, None));
    assert_eq!(segments(&b), segments(&a), "the segments are ips:1's");
    let skip = function(p, "skip");
    let mut through: HashMap<u64, u64> = HashMap::new();
    for s in &b.ips {
        let (caller, callee, returned) = shape(p, &s.steps);
        if caller == "run" {
            // skip's path ends at its exit (the tail call): the segment goes on in run.
            assert_eq!((callee.as_deref(), returned), (Some("skip"), true), "{s:?}");
            let IpsStep::Sub(head) = &s.steps[2] else { unreachable!() };
            *through.entry(head.path.0).or_default() += s.count.0;
        }
    }
    // skip's two paths: x & 2 is set for x = i in 2, 3, 6, 7 and for x = i + 1 in 2, 3, 6, 7 (i in
    // 0..9), and each ran as often in skip's own counts.
    let mut got: Vec<u64> = through.values().copied().collect();
    got.sort();
    assert_eq!(got, [8, 10]);
    for (path, n) in through {
        assert_eq!(skip.paths().iter().find(|x| x.id.0 == path).map(|x| x.count.0), Some(n));
    }
}

/// A field run in `ippp` with a test run's segments (`ips:1`) as interesting: its residual segments
/// are exactly the field run's own (profiled alone) that the test run did not take.
#[test]
fn interesting_segments_make_the_others_residual() {
    let (dir, wasm) = common::wat_module(CALLS);
    let dir = dir.path();
    let run = |out: &str, extra: &[&str], n: &str| {
        let output = pathprof()
            .current_dir(dir)
            .args(["run", "--quiet", "-o", out, "--invoke", "run"])
            .args(extra)
            .arg(&wasm)
            .arg(n)
            .output()
            .unwrap();
        assert!(output.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&output.stderr));
        Profile::from_json(&std::fs::read_to_string(dir.join(out)).unwrap()).unwrap()
    };
    let test = run("test.json", &["--mode", "ips:1"], "1");
    let alone = run("alone.json", &["--mode", "ips:1"], "7");
    let tested = segments(&facts(&test.mode).unwrap());
    let alone = facts(&alone.mode).unwrap();
    let want: Vec<_> = alone.ips.iter().filter(|s| !tested.contains_key(&s.steps)).collect();
    assert!(!want.is_empty() && want.len() < alone.ips.len());
    // Slots, in every function, change none of it.
    for mode in ["ippp:slots", "ippp"] {
        let field = run("field.json", &["--mode", mode, "--interesting", "test.json"], "7");
        let got = facts(&field.mode).unwrap();
        assert_eq!(segments(&got), segments(&alone), "{mode}: the field run's segments are its own");
        let residual = got.residual.as_ref().expect("residual segments");
        assert_eq!(residual.segments.0, want.len() as u64, "{mode}");
        assert_eq!(residual.executions.0, want.iter().map(|s| s.count.0).sum::<u64>(), "{mode}");
        for s in &got.ips {
            assert_eq!(s.interesting, Some(tested.contains_key(&s.steps)), "{mode}: {s:?}");
        }
        let ends: u64 = counts(&field).values().sum();
        match (mode, &got.slots) {
            ("ippp", slots) => assert_eq!(slots, &None, "no function needs slots"),
            (_, Some(slots)) => {
                assert!(slots.path_ends.0 > 0 && slots.path_ends.0 < ends, "{slots:?} of {ends}");
                assert!(slots.slots.0 >= slots.interesting.0, "{slots:?}");
            }
            (_, None) => panic!("{mode}: no slots"),
        }
    }
    let text = pathprof().current_dir(dir).args(["report", "field.json", "--untested"]).output().unwrap();
    assert!(text.status.success(), "{}", String::from_utf8_lossy(&text.stderr));
    // Segments of the mode's depth only, and from ips profiles.
    run("two.json", &["--mode", "ips:2"], "1");
    run("bl.json", &[], "1");
    for (mode, given, expect) in [
        ("ippp", "two.json", "--mode ippp takes interesting segments of one call, not 2"),
        ("ippp", "bl.json", "--mode ippp takes ips profiles as --interesting"),
        ("ippp:2", "test.json", "--mode ippp:2 takes interesting segments of up to 2 calls, not 1"),
    ] {
        let out = pathprof()
            .current_dir(dir)
            .args(["run", "--quiet", "-o", "x.json", "--invoke", "run", "--mode", mode, "--interesting", given])
            .arg(&wasm)
            .arg("7")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
    }
    assert!(!dir.join("x.json").exists());
    let out = pathprof()
        .current_dir(dir)
        .args(["run", "--quiet", "-o", "x.json", "--invoke", "run", "--mode", "ippp:slots"])
        .arg(&wasm)
        .arg("7")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.lines().count() == 1, "{stderr}");
    assert!(stderr.contains("--mode ippp:slots needs --interesting"), "{stderr}");
    assert!(!dir.join("x.json").exists());
}

/// `many` calls `bar`, which has two paths from its entry, 130 times on one path: its supergraph
/// has 2^130 IDs, in three words — the last 63 calls add their digits to the key, the 63 before
/// them to the first high key, the first four to the second — and its segments are exactly
/// `ips:1`'s.
#[test]
fn a_supergraph_of_three_words_counts_every_segment() {
    let (dir, wasm, ips, ippp) = ips_and_ippp(&common::many_calls_module(130, 1), &[]);
    let b = facts(&ippp.profile.mode).unwrap();
    assert!(b.not_counted.is_none());
    assert_eq!(segments(&b), segments(&facts(&ips.profile.mode).unwrap()));
    assert_eq!(counts(&ippp.profile), counts(&ips.profile));
    let many = function(&ippp.profile, "many").index;
    let words = call_words(&instrument_map(dir.path(), &wasm, "ippp"), many);
    let want: Vec<(u64, bool)> = (0..130).map(|c| (if c < 4 { 2 } else { (129 - c) / 63 }, false)).collect();
    assert_eq!(words, want);
}

/// The word each call of function `f` adds its digit to, and whether it is dropped, as `map` says.
fn call_words(map: &serde_json::Value, f: u32) -> Vec<(u64, bool)> {
    let f = map["functions"].as_array().unwrap().iter().find(|g| g["index"] == f).unwrap();
    let calls = f["state"]["supergraph"]["calls"].as_array().unwrap();
    calls.iter().map(|c| (c["word"].as_u64().unwrap_or(0), c["dropped"].as_bool().unwrap_or(false))).collect()
}

/// `many` calls `bar`, which has 2^32 paths from its entry, 257 times on one path: its supergraph
/// would have 2^8224 IDs. One call adds its digit to the key, one to each of the 255 high keys
/// (the most a function of 257 calls may have), and one (the first, all radices being equal) adds
/// none; the segments rooted there are named as not counted, and every other segment is `ips:1`'s.
/// With interesting segments at all but the last ten calls, the first of those ten is dropped
/// instead.
#[test]
fn a_supergraph_beyond_its_words_drops_calls() {
    let (dir, wasm, ips, ippp) = ips_and_ippp(&common::many_calls_module(257, 32), &[]);
    let p = &ippp.profile;
    let many = function(p, "many").index;
    let b = facts(&p.mode).unwrap();
    let n = b.not_counted.as_ref().expect("segments not counted");
    let roots: Vec<(u32, u32, u64)> = n.roots.iter().map(|r| (r.function, r.part, r.count.0)).collect();
    let mut parts: Vec<u32> = roots.iter().map(|r| r.1).collect();
    parts.sort_unstable();
    assert_eq!(parts, [0]);
    assert!(roots.iter().all(|&(f, _, count)| f == many && count == 2), "{roots:?}");
    assert_eq!((n.functions.as_slice(), n.path_ends.0, n.executions.0), (&[many][..], 2, 2));
    let (want, left) = common::without_not_counted(segments(&facts(&ips.profile.mode).unwrap()), &b);
    assert_eq!(left, 2, "the dropped call, in many's two runs, roots one of bar's two paths");
    // run's four calls; few's two calls, each of bar's two paths; many's 256 other calls, with
    // x = 1 and with x = 0.
    assert_eq!(want.len(), 4 + 4 + 2 * 256);
    assert_eq!(segments(&b), want);
    check_segment_roots(p, &b);
    assert_eq!(counts(p), counts(&ips.profile));
    let written = dir.path().join("ippp.json");
    std::fs::write(&written, p.to_json()).unwrap();
    let report = pathprof().arg("report").arg(&written).output().unwrap();
    let report = String::from_utf8(report.stdout).unwrap();
    assert!(report.contains("segments at some calls of 1 function were not counted"), "{report}");
    // Residual profiling against the ips:1 run: every counted segment was tested, and the report
    // says how many executions it could not judge.
    std::fs::write(dir.path().join("test.json"), ips.profile.to_json()).unwrap();
    let field = run_in(dir.path(), &["--mode", "ippp", "--interesting", "test.json", "--invoke", "run"], &wasm, &[]);
    std::fs::write(&written, field.profile.to_json()).unwrap();
    let untested = |json: bool| {
        let out =
            pathprof().args(["report", "--untested"]).args(json.then_some("--json")).arg(&written).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let json: serde_json::Value = serde_json::from_str(&untested(true)).unwrap();
    assert_eq!((json["paths"].as_u64(), json["not_counted_executions"].as_u64()), (Some(0), Some(2)));
    let text = untested(false);
    assert!(text.lines().any(|l| l.contains("executions of segments not counted") && l.ends_with(" 2")), "{text}");
    // With the segments of many's last ten calls left out of the interesting ones, the calls
    // dropped are among those ten: the numbering truncates no call an interesting segment takes.
    let mut test: serde_json::Value = serde_json::from_str(&ips.profile.to_json()).unwrap();
    let facts_json = &mut test["mode_facts"];
    let kept: Vec<serde_json::Value> = (facts_json["ips"].as_array().unwrap().iter())
        .filter(|s| !(s["steps"][0]["function"] == many && s["steps"][0]["part"].as_u64().unwrap() >= 247))
        .cloned()
        .collect();
    let executions: u64 = kept.iter().map(|s| s["count"].as_u64().unwrap()).sum();
    facts_json["segments"] = kept.len().into();
    facts_json["executions"] = executions.into();
    facts_json["ips"] = kept.into();
    std::fs::write(dir.path().join("some.json"), test.to_string()).unwrap();
    let field = run_in(dir.path(), &["--mode", "ippp", "--interesting", "some.json", "--invoke", "run"], &wasm, &[]);
    let n = facts(&field.profile.mode).unwrap().not_counted.expect("segments not counted");
    let mut parts: Vec<u32> = n.roots.iter().map(|r| r.part).collect();
    parts.sort_unstable();
    assert_eq!(parts, [247]);
    // The map says which word each call adds its digit to.
    let words = call_words(&instrument_map(dir.path(), &wasm, "ippp"), many);
    let want: Vec<(u64, bool)> = (0..257).map(|c| if c < 1 { (0, true) } else { (256 - c, false) }).collect();
    assert_eq!(words, want);
}

/// `run` calls through a table of functions of two types: `$t` (`bar`, 2 paths from its entry;
/// `baz`, 4), `$u` (`wide`, 8; `one`, 1), and `$t2`, a type equal to `$t`. Each indirect call reads
/// its digit among the functions of its type only — radix 2 + 4 + 2 for `$t` and `$t2`, 8 + 1 + 2
/// for `$u`, not the table's 15 + 2 — and the segments are `ips:1`'s.
#[test]
fn an_indirect_call_reads_its_digit_among_the_functions_of_its_type() {
    let wat = r#"(module
      (global $acc (mut i32) (i32.const 0))
      (type $t (func (param i32)))
      (type $u (func (param i32 i32) (result i32)))
      (type $t2 (func (param i32)))
      (table 4 funcref)
      (elem (i32.const 0) $bar $wide $baz $one)
      (func $bar (type $t) (param $x i32)
        (if (local.get $x)
          (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))
          (else (global.set $acc (i32.mul (global.get $acc) (i32.const 3))))))
      (func $baz (type $t) (param $x i32)
        (if (i32.and (local.get $x) (i32.const 1))
          (then (global.set $acc (i32.add (global.get $acc) (i32.const 5)))))
        (if (i32.and (local.get $x) (i32.const 2))
          (then (global.set $acc (i32.xor (global.get $acc) (i32.const 7))))))
      (func $wide (type $u) (param $x i32) (param $y i32) (result i32)
        (if (i32.and (local.get $x) (i32.const 1)) (then (local.set $y (i32.add (local.get $y) (i32.const 1)))))
        (if (i32.and (local.get $x) (i32.const 2)) (then (local.set $y (i32.mul (local.get $y) (i32.const 3)))))
        (if (i32.and (local.get $x) (i32.const 4)) (then (local.set $y (i32.sub (local.get $y) (i32.const 2)))))
        (local.get $y))
      (func $one (type $u) (param $x i32) (param $y i32) (result i32) (i32.add (local.get $x) (local.get $y)))
      (func $run (export "run") (param $n i32) (result i32) (local $i i32)
        (loop $top
          (call_indirect (type $t) (local.get $i) (i32.shl (i32.and (local.get $i) (i32.const 1)) (i32.const 1)))
          (global.set $acc (i32.add (global.get $acc)
            (call_indirect (type $u) (local.get $i) (global.get $acc)
              (i32.add (i32.const 1) (i32.shl (i32.and (i32.shr_u (local.get $i) (i32.const 1)) (i32.const 1)) (i32.const 1))))))
          (call_indirect (type $t2) (local.get $i) (i32.const 2))
          (br_if $top (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
        (global.get $acc)))"#;
    let (dir, wasm, ips, ippp) = ips_and_ippp(wat, &["16"]);
    let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
    assert_eq!((b.mismatched.0, b.not_counted.as_ref()), (0, None));
    assert_eq!(segments(&b), segments(&a));
    // Every callee of every type ran: bar, baz (twice per round), wide and one.
    let p = &ippp.profile;
    let callees: std::collections::BTreeSet<String> = b.ips.iter().filter_map(|s| shape(p, &s.steps).1).collect();
    assert_eq!(callees.into_iter().collect::<Vec<_>>(), ["bar", "baz", "one", "wide"]);
    let map = instrument_map(dir.path(), &wasm, "ippp");
    let run_index = function(p, "run").index;
    let run_map = map["functions"].as_array().unwrap().iter().find(|f| f["index"] == run_index).unwrap();
    let calls = run_map["state"]["supergraph"]["calls"].as_array().expect("run's calls");
    let radices: Vec<u64> = calls.iter().map(|c| c["radix"].as_u64().unwrap()).collect();
    assert_eq!(radices, [8, 11, 8]);
    assert_eq!(calls[0]["base"], calls[2]["base"], "$t and $t2 are one type");
    assert_ne!(calls[0]["base"], calls[1]["base"]);
}

/// A table holds `a` of type `$base` and `b` of `$derived`, a subtype of it (its result narrower):
/// a `call_indirect` of `$base` may call either, so it reads its digit among every function a table
/// holds, and its segments are `ips:1`'s (a type class of `$base`'s own would not hold `b`).
#[test]
fn an_indirect_call_of_a_type_with_subtypes_reads_among_all_referenced_functions() {
    let wat = r#"(module
      (global $acc (mut i32) (i32.const 0))
      (type $base (sub (func (param i32) (result anyref))))
      (type $derived (sub $base (func (param i32) (result eqref))))
      (table 2 funcref)
      (elem (i32.const 0) $a $b)
      (func $a (type $base) (param $x i32) (result anyref)
        (if (local.get $x)
          (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))
          (else (global.set $acc (i32.mul (global.get $acc) (i32.const 3)))))
        (ref.null any))
      (func $b (type $derived) (param $x i32) (result eqref)
        (if (i32.and (local.get $x) (i32.const 2))
          (then (global.set $acc (i32.xor (global.get $acc) (i32.const 5))))
          (else (global.set $acc (i32.sub (global.get $acc) (i32.const 7)))))
        (ref.null eq))
      (func $run (export "run") (param $n i32) (result i32) (local $i i32)
        (loop $top
          (drop (call_indirect (type $base) (local.get $i) (i32.and (local.get $i) (i32.const 1))))
          (br_if $top (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
        (global.get $acc)))"#;
    let (_dir, _, ips, ippp) = ips_and_ippp(wat, &["12"]);
    let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
    assert_eq!((b.mismatched.0, b.not_counted.as_ref()), (0, None));
    assert_eq!(segments(&b), segments(&a));
    let p = &ippp.profile;
    let mut through: HashMap<String, u64> = HashMap::new();
    for s in &b.ips {
        if let (_, Some(callee), _) = shape(p, &s.steps) {
            *through.entry(callee).or_default() += s.count.0;
        }
    }
    assert_eq!((through.get("a"), through.get("b")), (Some(&6), Some(&6)), "{through:?}");
}

/// `u` publishes its head and tail-calls `g`, whose own call of `h` arms and uses the head word
/// before `run` reads `u`'s head.
const TAIL_CALL_THEN_CALLS: &str = r#"(module
      (global $acc (mut i32) (i32.const 0))
      (func $h (param $x i32)
        (if (i32.and (local.get $x) (i32.const 2))
          (then (global.set $acc (i32.xor (global.get $acc) (i32.const 5))))
          (else (global.set $acc (i32.sub (global.get $acc) (i32.const 7))))))
      (func $g (param $x i32) (call $h (local.get $x)))
      (func $u (param $x i32)
        (if (i32.and (local.get $x) (i32.const 1))
          (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))
          (else (global.set $acc (i32.mul (global.get $acc) (i32.const 3)))))
        (return_call $g (local.get $x)))
      (func $run (export "run") (param $n i32) (result i32) (local $i i32)
        (loop $top
          (call $u (local.get $i))
          (br_if $top (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
        (global.get $acc)))"#;

/// In [`TAIL_CALL_THEN_CALLS`], `g` must put the word back, so that `run` reads `u`'s head (as the
/// stream has it), not `h`'s.
#[test]
fn a_head_published_before_a_tail_call_outlives_the_calls_after_it() {
    let (_dir, _, ips, ippp) = ips_and_ippp(TAIL_CALL_THEN_CALLS, &["8"]);
    let p = &ippp.profile;
    let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&p.mode).unwrap());
    assert_eq!((b.mismatched.0, b.not_counted.as_ref()), (0, None));
    assert_eq!(segments(&b), segments(&a), "the segments are ips:1's");
    let mut from_run: HashMap<u64, u64> = HashMap::new();
    for s in &b.ips {
        let (caller, callee, _) = shape(p, &s.steps);
        if caller == "run" {
            assert_eq!(callee.as_deref(), Some("u"), "run's call is taken by u: {s:?}");
            let IpsStep::Sub(head) = &s.steps[2] else { unreachable!() };
            *from_run.entry(head.path.0).or_default() += s.count.0;
        }
    }
    // u's two paths, x & 1 over x = 0..8; g's segments through h are counted too.
    assert_eq!(from_run.into_values().collect::<Vec<_>>(), [4, 4]);
    assert!(b.ips.iter().any(|s| shape(p, &s.steps).0 == "g"), "g's call of h");
}

/// An edit of a profile's JSON.
type Edit = fn(&mut serde_json::Value);

/// The slots of an `ippp:slots` profile add up: `merge` of two runs adds their path ends in slots,
/// and a profile whose slots say what no run writes is refused in one line by `report` and `merge`.
#[test]
fn slot_facts_merge_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let run = |out: &str, mode: &str, extra: &[&str]| {
        let status = pathprof()
            .current_dir(dir)
            .args(["run", "--quiet", "--mode", mode, "-o", out])
            .args(extra)
            .arg(recursion())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{mode}");
    };
    run("test.json", "ips:1", &[]);
    run("p.json", "ippp:slots", &["--interesting", "test.json"]);
    let read = |f: &str| Profile::from_json(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
    let one = facts(&read("p.json").mode).unwrap().slots.expect("slots");
    let merged = pathprof().current_dir(dir).args(["merge", "p.json", "p.json", "-o", "m.json"]).output().unwrap();
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let two = facts(&read("m.json").mode).unwrap().slots.expect("slots");
    assert_eq!((two.path_ends.0, &two.functions), (2 * one.path_ends.0, &one.functions));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("p.json")).unwrap()).unwrap();
    let edits: [(&str, Edit); 3] = [
        ("the slots' totals are not the sums", |d| d["mode_facts"]["slots"]["slots"] = 1.into()),
        ("fewer slots, or a narrower span", |d| d["mode_facts"]["slots"]["functions"][0]["slots"] = 0.into()),
        ("not each once in order", |d| {
            let first = d["mode_facts"]["slots"]["functions"][0].clone();
            d["mode_facts"]["slots"]["functions"].as_array_mut().unwrap().push(first);
        }),
    ];
    for (expect, edit) in edits {
        let mut d = doc.clone();
        edit(&mut d);
        std::fs::write(dir.join("bad.json"), serde_json::to_string(&d).unwrap()).unwrap();
        for args in [&["report", "bad.json"][..], &["merge", "bad.json", "p.json", "-o", "x.json"]] {
            let out = pathprof().current_dir(dir).args(args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?} {expect}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.contains(expect), "{args:?}: {stderr}");
        }
        assert!(!dir.join("x.json").exists());
    }
}

/// `g`, which throws when its argument is 5, with its tag and the global it changes.
const THROWER: &str = r#"
  (tag $e)
  (global $acc (mut i32) (i32.const 0))
  (func $g (param $x i32)
    (if (i32.eq (local.get $x) (i32.const 5)) (then (throw $e)))
    (if (i32.and (local.get $x) (i32.const 1))
      (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))
      (else (global.set $acc (i32.mul (global.get $acc) (i32.const 3))))))"#;

/// A module of [`THROWER`] and the functions `rest`.
fn with_thrower(rest: &str) -> String {
    format!("(module{THROWER}{rest}")
}

/// `f` calls `g` twice inside a `try_table`, and `g` throws when its argument is 5: both may throw,
/// and both have probes. A run that throws nothing counts `ips:1`'s segments; in a run that throws,
/// the two paths of `f` whose call of `g` unwound (at x = 4 and x = 5) count as Ball–Larus paths —
/// the counts are `bl`'s — but root no segment: they are the mismatched path ends.
fn throws() -> String {
    with_thrower(
        r#"
  (func $f (param $x i32)
    (block $caught
      (try_table (catch $e $caught)
        (call $g (local.get $x))
        (call $g (i32.add (local.get $x) (i32.const 1))))
      (return))
    (global.set $acc (i32.sub (global.get $acc) (i32.const 7))))
  (func (export "run") (param $n i32) (result i32)
    (local $i i32)
    (loop $l
      (call $f (local.get $i))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (global.get $acc)))
"#,
    )
}

#[test]
fn functions_that_may_throw_count_segments_and_name_the_paths_that_unwound() {
    // Nothing thrown: the segments of ips:1.
    let (dir, wasm, ips, ippp) = ips_and_ippp(&throws(), &["4"]);
    let f = facts(&ippp.profile.mode).unwrap();
    assert!(["f", "g"].iter().all(|n| function(&ippp.profile, n).skip_reason().is_none()), "f and g have probes");
    assert_eq!(segments(&f), segments(&facts(&ips.profile.mode).unwrap()));
    assert_eq!(f.segments.0, 6, "run's call of f, f's two calls of g on its two paths into g");
    let [two, deeper] = runs(dir.path(), &wasm, &["4"], ["ips:2", "ippp:2"]);
    let deeper = facts(&deeper.profile.mode).unwrap();
    assert_eq!((deeper.mismatched.0, deeper.not_counted.as_ref()), (0, None));
    assert_eq!(segments(&deeper), segments(&facts(&two.profile.mode).unwrap()), "ippp:2's are ips:2's");
    // Thrown at x = 5, twice.
    let [bl, thrown] = runs(dir.path(), &wasm, &["7"], ["bl", "ippp"]);
    assert_eq!(thrown.output.stdout, bl.output.stdout);
    assert_eq!(counts(&thrown.profile), counts(&bl.profile), "the Ball–Larus counts are bl's");
    let t = facts(&thrown.profile.mode).unwrap();
    assert_eq!(t.mismatched.0, 2, "f's two paths whose call of g unwound");
    let written = dir.path().join("thrown.json");
    std::fs::write(&written, thrown.profile.to_json()).unwrap();
    let report = String::from_utf8(pathprof().arg("report").arg(&written).output().unwrap().stdout).unwrap();
    assert!(report.contains("; 2 path ends with a call that unwound (their segments not counted)"), "{report}");
    // Each other path end of f roots its segments: 5 runs of f that returned, 2 calls each.
    let into_g = |s: &IpsStep| matches!(s, IpsStep::Sub(sub) if sub.function == function(&thrown.profile, "g").index);
    let f_index = function(&thrown.profile, "f").index;
    let from_f: u64 = (t.ips.iter())
        .filter(|s| {
            matches!(&s.steps[0], IpsStep::Sub(sub) if sub.function == f_index) && s.steps.get(2).is_some_and(into_g)
        })
        .map(|s| s.count.0)
        .sum();
    assert_eq!(from_f, 5 * 2);
}

/// `b` publishes its head and tail-calls `c`, whose call of `g` saves the head word and arms it;
/// at `x = 5` `g` throws and `c` catches: the path that ends at `c`'s landing puts the word back
/// where the call saved it, so that `run` reads `b`'s head (a call that unwinds never reads its
/// own), and the program runs as it does uninstrumented.
#[test]
fn a_call_that_unwinds_to_a_landing_puts_the_head_word_back() {
    let wat = with_thrower(
        r#"
      (func $c (param $x i32)
        (block $caught
          (try_table (catch $e $caught)
            (call $g (local.get $x)))
          (return))
        (global.set $acc (i32.sub (global.get $acc) (i32.const 7))))
      (func $b (param $x i32)
        (if (i32.and (local.get $x) (i32.const 2))
          (then (global.set $acc (i32.xor (global.get $acc) (i32.const 5)))))
        (return_call $c (local.get $x)))
      (func $run (export "run") (param $n i32) (result i32) (local $i i32)
        (loop $l
          (call $b (local.get $i))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
        (global.get $acc)))"#,
    );
    let (dir, wasm) = common::wat_module(&wat);
    let [bl, ips, ippp] = runs(dir.path(), &wasm, &["8"], ["bl", "ips:1", "ippp"]);
    assert_eq!(ippp.output.stdout, bl.output.stdout, "the program's result");
    assert_eq!(counts(&ippp.profile), counts(&bl.profile), "the Ball–Larus counts are bl's");
    let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
    assert_eq!(b.mismatched.0, 1, "c's path that ended at its landing");
    // run's segments through b are ips:1's: b's two paths over x & 2 for x = 0..8.
    let from_run = |f: &IpsFacts, p: &Profile| -> HashMap<Vec<IpsStep>, u64> {
        let run = function(p, "run").index;
        segments(f).into_iter().filter(|(s, _)| matches!(&s[0], IpsStep::Sub(r) if r.function == run)).collect()
    };
    let want = from_run(&a, &ips.profile);
    assert_eq!(want.values().sum::<u64>(), 8);
    assert_eq!(from_run(&b, &ippp.profile), want);
    // So do segments of more calls, whose calls put back every head word.
    for (deep, deeper) in [("ips:2", "ippp:2"), ("ips:3", "ippp:3")] {
        let [ips, ippp] = runs(dir.path(), &wasm, &["8"], [deep, deeper]);
        assert_eq!(ippp.output.stdout, bl.output.stdout, "{deeper}: the program's result");
        assert_eq!(counts(&ippp.profile), counts(&bl.profile), "{deeper}: the Ball–Larus counts are bl's");
        let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
        assert_eq!(b.mismatched.0, 1, "{deeper}: c's path that ended at its landing");
        assert_eq!(from_run(&b, &ippp.profile), from_run(&a, &ips.profile), "{deeper}");
    }
}

/// The segments of up to `K` calls, for `K` from 2 to 4, are `ips:K`'s on the modules above and
/// the C fixtures: the output is the program's, the Ball–Larus counts are `bl`'s, and some
/// segments enter a callee's callee (what only heads of depth 1 and more tell) — but in
/// [`TAIL_CALL_THEN_CALLS`], whose calls of `u` return from `u`'s first path. None is left out:
/// in the tail-calling interpreter, whose `printf` internals have so many paths that heads of
/// depth 1 of them do not fit beside their callers' digits in 64 bits, those calls add their
/// digits to a high key.
#[test]
fn segments_of_up_to_k_calls_are_those_of_ips_k() {
    let fixture = |name: &str| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/c")).join(name);
    let mut modules: Vec<(tempfile::TempDir, PathBuf, Vec<&str>, bool)> = Vec::new();
    for (wat, nests) in [(CALLS, true), (TAIL_CALL_THEN_CALLS, false)] {
        let (dir, wasm) = common::wat_module(wat);
        modules.push((dir, wasm, vec!["--invoke", "run", "--", "7"], nests));
    }
    for name in ["recursion.wasm", "tail_calls.wasm"] {
        modules.push((tempfile::tempdir().unwrap(), fixture(name), Vec::new(), true));
    }
    let mut wide = 0;
    for (dir, wasm, args, nests) in &modules {
        let (flags, rest) = args.split_at(args.iter().position(|&a| a == "--").map_or(args.len(), |i| i));
        let rest: Vec<&str> = rest.iter().skip(1).copied().collect();
        let run = |mode: &str| {
            let r = run_in(dir.path(), &[&["--mode", mode][..], flags].concat(), wasm, &rest);
            assert!(r.output.status.success(), "{mode}: {}", String::from_utf8_lossy(&r.output.stderr));
            r
        };
        let bl = run("bl");
        for k in 2..=4 {
            let (ips, ippp) = (run(&format!("ips:{k}")), run(&format!("ippp:{k}")));
            let what = format!("{}, K = {k}", wasm.display());
            assert_eq!(ippp.output.stdout, bl.output.stdout, "{what}: the output");
            assert_eq!(ippp.profile.mode.name(), "ippp");
            assert_eq!(counts(&ippp.profile), counts(&bl.profile), "{what}: the Ball–Larus counts");
            let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
            assert_eq!((b.k, b.mismatched.0), (k, 0), "{what}");
            assert!(b.not_counted.is_none(), "{what}: {:?}", b.not_counted);
            assert_eq!(segments(&b), segments(&a), "{what}: the segments are ips:{k}'s");
            check_segment_roots(&ippp.profile, &b);
            let map = instrument_map(dir.path(), wasm, &format!("ippp:{k}"));
            let functions = map["functions"].as_array().unwrap().iter();
            wide += functions.filter(|f| f["state"]["supergraph"]["calls"].to_string().contains("\"word\"")).count();
            let nested = b.ips.iter().any(|s| {
                let mut open = 0;
                s.steps.iter().any(|t| {
                    open += match t {
                        IpsStep::Mark(Mark::Call) => 1,
                        IpsStep::Mark(Mark::Return) => -1,
                        IpsStep::Sub(_) => 0,
                    };
                    open >= 2
                })
            });
            assert_eq!(nested, *nests, "{what}: a segment enters a callee's callee");
        }
    }
    assert!(wide > 0, "the interpreter's calls into printf's internals add digits to a high key");
}

/// Heads of depth 1 so large that, one after the other, they would pass 2^64: `big` has 2^30 paths
/// from its entry and sits in a table, and each of 14 functions of type `$v` reads `big`'s head
/// twice on one path (about 2^61 heads each), before `g0` and `g1` (type `$u`), which `h` calls
/// through the table. Each function's heads take at most a fair share of the space (these 14 an
/// equal share of what the small ones leave), so every head lies inside it and `h` reads `g0`'s
/// and `g1`'s where they are: `ippp:2` counts `ips:2`'s segments and the program runs as it does
/// under `bl`.
#[test]
fn heads_of_every_depth_fit_in_their_space() {
    let bits = bit_tests(30);
    let fillers: String = (0..14)
        .map(|i| {
            format!(
                "(func $f{i} (type $v) (param $x i32) (param $y i32)
                   (if (local.get $x) (then (call_indirect (type $t) (local.get $y) (i32.const 0))))
                   (call_indirect (type $t) (local.get $y) (i32.const 0)))\n"
            )
        })
        .collect();
    let names: String = (0..14).map(|i| format!(" $f{i}")).collect();
    let calls: String = (0..14).map(|i| format!("(call $f{i} (local.get $i) (local.get $i))\n")).collect();
    let wat = format!(
        r#"(module
          (type $t (func (param i32)))
          (type $v (func (param i32 i32)))
          (type $u (func (param i64)))
          (global $acc (mut i32) (i32.const 0))
          (table 17 funcref)
          (elem (i32.const 0) $big{names} $g0 $g1)
          (func $big (type $t) (param $x i32)
            {bits})
          {fillers}
          (func $g0 (type $u) (param $x i64) (call_indirect (type $t) (i32.wrap_i64 (local.get $x)) (i32.const 0)))
          (func $g1 (type $u) (param $x i64)
            (if (i64.eqz (local.get $x)) (then (global.set $acc (i32.const 7))))
            (call_indirect (type $t) (i32.wrap_i64 (local.get $x)) (i32.const 0)))
          (func $h (param $i i32)
            (call_indirect (type $u) (i64.extend_i32_u (local.get $i))
              (i32.add (i32.const 15) (i32.and (local.get $i) (i32.const 1)))))
          (func $run (export "run") (param $n i32) (result i32) (local $i i32)
            (loop $l
              (call $h (local.get $i))
              {calls}
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
            (global.get $acc)))"#
    );
    let (_dir, _, ippp, b, _) = ippp_2_as_bl_and_ips_2(&wat);
    // h's calls through the table, into g0 and g1, are counted: 3 each over i = 0..6.
    let h = function(&ippp.profile, "h").index;
    let into = |name: &str| -> u64 {
        let g = function(&ippp.profile, name).index;
        (b.ips.iter())
            .filter(|s| matches!(&s.steps[..3], [IpsStep::Sub(r), _, IpsStep::Sub(c)] if r.function == h && c.function == g))
            .map(|s| s.count.0)
            .sum()
    };
    assert_eq!((into("g0"), into("g1")), (3, 3));
}

/// A function whose heads of depth 1 need more than an equal share of that depth's space, while
/// the others need little: `a` calls `b` (2^31 paths from its entry) under a test and then again,
/// so that its 2 paths from the entry and the two heads of `b` on one of them make 2^63 heads, more
/// than a third of 2^64 (`run`, `a` and `b` are instrumented). It takes what `run` and `b` leave
/// and drops neither call: every segment of `ips:2` is counted, those from `run` through `a`'s
/// first call of `b` among them.
#[test]
fn a_function_needing_more_than_an_equal_share_of_a_depth_takes_what_the_others_leave() {
    let wat = format!(
        r#"(module
          (global $acc (mut i32) (i32.const 0))
          (func $b (param $x i32)
            {b})
          (func $a (param $x i32)
            (if (i32.and (local.get $x) (i32.const 1)) (then (call $b (local.get $x))))
            (call $b (i32.xor (local.get $x) (i32.const -1))))
          (func $run (export "run") (param $n i32) (result i32) (local $i i32)
            (loop $l
              (call $a (i32.mul (local.get $i) (i32.const 0x9e3779b1)))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
            (global.get $acc)))"#,
        b = bit_tests(31),
    );
    let (dir, wasm, ippp, b, left) = ippp_2_as_bl_and_ips_2(&wat);
    assert!(b.not_counted.is_none(), "{:?}", b.not_counted);
    assert_eq!(left, 0);
    let p = &ippp.profile;
    let (run, a, callee) = (function(p, "run").index, function(p, "a").index, function(p, "b").index);
    // run → a → b in each of the six rounds: in the three whose argument is odd, through a's first
    // call, which an equal share would have dropped.
    let through = (b.ips.iter())
        .filter(|s| {
            matches!(s.steps.get(..5), Some([IpsStep::Sub(r), _, IpsStep::Sub(x), _, IpsStep::Sub(y)])
                if r.function == run && x.function == a && y.function == callee)
        })
        .map(|s| s.count.0)
        .sum::<u64>();
    assert_eq!(through, 6);
    let map = instrument_map(dir.path(), &wasm, "ippp:2");
    let f = map["functions"].as_array().unwrap().iter().find(|f| f["index"] == a).unwrap();
    let level = &f["state"]["supergraph"]["levels"][0];
    assert_eq!(level["keys"].as_u64(), Some(1 << 62), "{level}");
    let dropped = level["calls"].as_array().unwrap().iter().filter(|c| c["dropped"] == true).count();
    assert_eq!(dropped, 0, "{level}");
}

/// `count` `if`s, each testing one bit of `$x` from bit 0: `2^count` paths.
fn bit_tests(count: u32) -> String {
    (0..count)
        .map(|i| {
            format!("(if (i32.and (local.get $x) (i32.const {})) (then (global.set $acc (i32.add (global.get $acc) (i32.const {i})))))\n", 1u32 << i)
        })
        .collect()
}

/// `root` (2^30 paths) calls `mid` 257 times, whose heads of depth 1 are 2^41 (2^21 first paths,
/// and the 2^20 heads of `wide`, which it calls when bit 20 of its argument is set): none fits in
/// the key beside the paths, and each high key holds one. The last 255 calls take the 255 high keys;
/// the first two, which would not fit, read `mid`'s heads of depth 0 instead, which name every
/// walk that goes no deeper into `mid`: the second call in the last high key, the first in the one
/// before it. When `mid` does not call `wide`, the segments from `root` through those two calls
/// are counted; when it does, such a segment needs to know what `mid` entered, and is not. `ippp:2`
/// otherwise counts `ips:2`'s segments, and the program runs as it does under `bl`.
#[test]
fn a_call_whose_deepest_head_would_not_fit_reads_a_shallower_one() {
    let wat = format!(
        r#"(module
          (global $acc (mut i32) (i32.const 0))
          (func $wide (param $x i32)
            {wide})
          (func $mid (param $x i32)
            {mid}
            (if (i32.and (local.get $x) (i32.const 0x100000)) (then (call $wide (local.get $x)))))
          (func $root (param $x i32)
            {root}
            {calls})
          (func $run (export "run") (param $n i32) (result i32) (local $i i32)
            (loop $l
              (call $root (i32.shl (local.get $i) (i32.const 20)))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
            (global.get $acc)))"#,
        wide = bit_tests(20),
        mid = bit_tests(20),
        root = bit_tests(30),
        calls = "(call $mid (local.get $x))\n".repeat(257),
    );
    let (dir, wasm, ippp, b, left) = ippp_2_as_bl_and_ips_2(&wat);
    // root's first two calls of mid root a segment each in each of the six rounds: those of the
    // three rounds (i = 0, 2, 4) whose mid does not call wide are counted, the others not.
    let p = &ippp.profile;
    let (root, mid) = (function(p, "root").index, function(p, "mid").index);
    let n = b.not_counted.as_ref().expect("segments not counted");
    let mut roots: Vec<(u32, u32, u64)> = n.roots.iter().map(|r| (r.function, r.part, r.count.0)).collect();
    roots.sort_unstable();
    // (Each round's root takes a path of its own: its argument's bits differ.)
    assert_eq!(roots, [[(root, 0, 1); 3], [(root, 1, 1); 3]].concat());
    assert_eq!(left, 6);
    // The map says which head root's call reads.
    let map = instrument_map(dir.path(), &wasm, "ippp:2");
    let supergraph = |index: u32| {
        let f = map["functions"].as_array().unwrap().iter().find(|f| f["index"] == index).unwrap();
        f["state"]["supergraph"].clone()
    };
    let (r, m) = (supergraph(root), supergraph(mid));
    let depths: Vec<u64> = [vec![0, 0], vec![1; 255]].concat();
    assert_eq!(r["depths"], serde_json::json!(depths), "{r}");
    let call = |c: usize| {
        (r["calls"][c]["radix"].as_u64(), r["calls"][c]["word"].as_u64(), r["calls"][c]["dropped"].as_bool())
    };
    let want: Vec<_> = [(1 << 21, 254), (1 << 21, 255)]
        .into_iter()
        .chain((2..257).map(|c| (1 << 41, 257 - c)))
        .map(|(radix, word)| (Some(radix), Some(word), None))
        .collect();
    assert_eq!((0..257).map(call).collect::<Vec<_>>(), want, "{r}");
    assert_eq!(m["depths"], serde_json::json!([1]), "{m}");
    assert_eq!(m["levels"][0]["keys"].as_u64(), Some(1 << 20), "{m}");
}

/// The segments of up to `K` calls that an `ips:K` run of the same input took, given as the
/// interesting ones, name the heads of every depth the callees publish: `ippp:K:slots` counts every
/// path end of each function with slots in its slots (`run` of [`CALLS`] among them, whose calls
/// read heads of depth 1 and more), its segments are `ips:K`'s and none is residual; with the
/// segments of another input, those that input did not take are residual, as `ips:K` finds them.
#[test]
fn segments_of_k_calls_that_were_tested_count_in_slots() {
    let (dir, wasm) = common::wat_module(CALLS);
    let dir = dir.path();
    // `run` is the module's last function.
    let run_index = |p: &Profile| p.functions.iter().map(|f| f.index).max().unwrap();
    let ips = |out: &str, k: usize, n: &str| {
        let mode = format!("ips:{k}");
        let status = pathprof()
            .current_dir(dir)
            .args(["run", "--quiet", "-o", out, "--mode", &mode, "--invoke", "run"])
            .arg(&wasm)
            .arg(n)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{mode}");
        Profile::from_json(&std::fs::read_to_string(dir.join(out)).unwrap()).unwrap()
    };
    let [bl] = runs(dir, &wasm, &["7"], ["bl"]);
    for k in 2..=4 {
        let mode = format!("ippp:{k}:slots");
        let field = ips("field.json", k, "7");
        let slotted = |tested: &str| {
            let r = run_in(dir, &["--mode", &mode, "--invoke", "run", "--interesting", tested], &wasm, &["7"]);
            assert!(r.output.status.success(), "{mode}: {}", String::from_utf8_lossy(&r.output.stderr));
            assert_eq!(r.output.stdout, bl.output.stdout, "{mode}: the output");
            assert_eq!(r.profile.mode.name(), "ippp");
            assert_eq!(counts(&r.profile), counts(&bl.profile), "{mode}: the Ball–Larus counts");
            let got = facts(&r.profile.mode).unwrap();
            assert_eq!(got.mismatched.0, 0);
            assert_eq!(segments(&got), segments(&facts(&field.mode).unwrap()), "{mode}: the segments are ips:{k}'s");
            (r, got)
        };
        // Tested on the same input: every supergraph path that runs is interesting.
        let (same, got) = slotted("field.json");
        assert_eq!(got.residual.as_ref().map(|r| r.segments.0), Some(0), "{mode}");
        let slots = got.slots.expect("slots");
        let with: Vec<u32> = slots.functions.iter().map(|f| f.function).collect();
        assert!(with.contains(&run_index(&same.profile)), "{mode}: run has slots: {with:?}");
        let ends: u64 = counts(&same.profile).iter().filter(|((f, _), _)| with.contains(f)).map(|(_, c)| c).sum();
        assert_eq!(slots.path_ends.0, ends, "{mode}: every path end of a function with slots counts in them");
        // Tested on another input: what it did not take is residual.
        let tested = segments(&facts(&ips("test.json", k, "1").mode).unwrap());
        let (_, got) = slotted("test.json");
        let untested: Vec<_> = got.ips.iter().filter(|s| !tested.contains_key(&s.steps)).collect();
        assert!(!untested.is_empty(), "{mode}");
        let residual = got.residual.as_ref().expect("residual segments");
        assert_eq!(residual.segments.0, untested.len() as u64, "{mode}");
        assert_eq!(residual.executions.0, untested.iter().map(|s| s.count.0).sum::<u64>(), "{mode}");
        let slots = got.slots.expect("slots");
        assert!(slots.path_ends.0 > 0, "{mode}: {slots:?}");
    }
}
