//! `pathprof run --mode ppp` and `pathprof report --untested` through the command line: a "test"
//! run and a "field" run of one program with other inputs, the field run's untested paths against
//! the independent oracle of two `bl` profiles (the paths of the field run that the test run did not
//! take), a hand-edited profile as the interesting paths, and the errors of wrong inputs.

mod common;

use common::{pathprof, Run};
use pathprof_core::profile::{CounterKind, InterestingRule, PathCount, Profile};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `f(n)` goes round its loop `n` times; each round takes one of four ways by `i mod 4` and, past
/// 4, one of two more by `i mod 3`. A small `n` tests only some of the ways.
const PROGRAM: &str = r#"
(module
  (global $acc (mut i32) (i32.const 0))
  (func $f (export "f") (param $n i32) (result i32)
    (local $i i32)
    (block $done
      (loop $top
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (block $b3 (block $b2 (block $b1 (block $b0
          (br_table $b0 $b1 $b2 $b3 (i32.and (local.get $i) (i32.const 3))))
          (global.set $acc (i32.add (global.get $acc) (i32.const 1))) (br $b3))
          (global.set $acc (i32.xor (global.get $acc) (i32.const 5))) (br $b3))
          (global.set $acc (i32.mul (global.get $acc) (i32.const 3))))
        (if (i32.gt_u (local.get $i) (i32.const 4))
          (then (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 3)))
            (then (global.set $acc (i32.add (global.get $acc) (i32.const 7)))))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $top)))
    (global.get $acc))
  (func $g (export "g") (param $x i32) (result i32)
    (if (result i32) (local.get $x) (then (i32.const 1)) (else (i32.const 2)))))
"#;

/// Runs `pathprof run --quiet -o OUT EXTRA... m.wasm ARGS` in `dir`.
fn run(dir: &Path, out: &str, extra: &[&str], args: &[&str]) -> Run {
    let output = pathprof()
        .current_dir(dir)
        .args(["run", "--quiet", "-o", out])
        .args(extra)
        .arg("m.wasm")
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{extra:?} {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    let profile = Profile::from_json(&std::fs::read_to_string(dir.join(out)).unwrap()).unwrap();
    Run { output, profile }
}

/// A folder with `PROGRAM` as `m.wasm`.
fn program() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.wasm"), wat::parse_str(PROGRAM).unwrap()).unwrap();
    dir
}

/// `(function, start, end, blocks) → count` of every path that ran.
type Paths = BTreeMap<(u32, String, String, Vec<u32>), u64>;

fn paths_of(p: &Profile) -> Paths {
    paths_where(p, |_| true)
}

/// The paths of a `ppp` profile that are not interesting: untested, in a residual profile.
fn untested_of(p: &Profile) -> Paths {
    paths_where(p, |x| x.interesting == Some(false))
}

fn paths_where(p: &Profile, keep: impl Fn(&PathCount) -> bool + Copy) -> Paths {
    p.functions
        .iter()
        .flat_map(|f| {
            f.paths()
                .iter()
                .filter(move |x| keep(x))
                .map(move |x| ((f.index, x.start.to_string(), x.end.to_string(), x.blocks.clone()), x.count.0))
        })
        .collect()
}

fn report(dir: &Path, args: &[&str]) -> String {
    let out = pathprof().current_dir(dir).arg("report").args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn untested_paths_of_a_field_run() {
    let dir = program();
    let dir = dir.path();
    let test = run(dir, "test.json", &["--invoke", "f"], &["3"]);
    let field_bl = run(dir, "field-bl.json", &["--invoke", "f"], &["11"]);
    let field = run(dir, "field.json", &["--mode", "ppp", "--interesting", "test.json", "--invoke", "f"], &["11"]);
    assert_eq!(field.output.stdout, field_bl.output.stdout, "the program's results are its own");

    // The oracle: the field run's paths that the test run did not take, with their counts.
    let (tested, in_field) = (paths_of(&test.profile), paths_of(&field_bl.profile));
    let want: Paths = in_field.iter().filter(|(k, _)| !tested.contains_key(*k)).map(|(k, c)| (k.clone(), *c)).collect();
    assert!(!want.is_empty() && want.len() < in_field.len(), "some field paths are tested, some not: {want:?}");
    assert_eq!(paths_of(&field.profile), in_field, "ppp counts every path exactly");
    assert_eq!(untested_of(&field.profile), want);
    let info = field.profile.mode.ppp().unwrap();
    assert_eq!(info.interesting_from, ["test.json"]);
    assert_eq!(info.residual_paths.0, want.len() as u64);
    assert_eq!(info.residual_executions.0, want.values().sum::<u64>());
    // The interesting paths of `f` are those of the test run: `g` never ran there, so none of its.
    let f = field.profile.functions.iter().find(|x| x.name.as_deref() == Some("f")).unwrap();
    assert_eq!(f.ppp().unwrap().interesting, tested.keys().filter(|k| k.0 == f.index).count() as u64);

    // The report: Table 3.1's figures, from the two bl profiles.
    let json: Value =
        serde_json::from_str(&report(dir, &["field.json", "--untested", "--json", "--top", "100"])).unwrap();
    assert_eq!(json["paths"], want.len());
    let executions: u64 = want.values().sum();
    assert_eq!(json["executions"], executions);
    let share = executions as f64 / in_field.values().sum::<u64>() as f64;
    assert!((json["executions_share"].as_f64().unwrap() - share).abs() < 1e-12);
    assert!((json["paths_share"].as_f64().unwrap() - want.len() as f64 / in_field.len() as f64).abs() < 1e-12);
    assert_eq!(json["functions_with_untested_paths"], 1);
    // Untested edges: those of untested paths that no tested path takes (block to block or exit).
    let edges = |paths: &Paths| -> BTreeSet<(u32, String, String)> {
        paths
            .keys()
            .flat_map(|(f, _, end, blocks)| {
                let steps = blocks.windows(2).map(move |w| (*f, w[0].to_string(), format!("B{}", w[1])));
                steps.chain(blocks.last().map(|&b| (*f, b.to_string(), end.clone())))
            })
            .collect()
    };
    let new_edges = edges(&want).difference(&edges(&tested)).count();
    assert_eq!(json["untested_edges"], new_edges);
    let listed = json["untested"].as_array().unwrap();
    assert_eq!(listed.len(), want.len());
    assert!(listed.windows(2).all(|w| w[0]["count"].as_u64() >= w[1]["count"].as_u64()), "by decreasing count");
    let text = report(dir, &["field.json", "--untested"]);
    assert!(text.contains("untested paths") && text.contains("% executions on untested paths"), "{text}");
    assert!(text.contains(&format!("{:>12}", want.len())), "{text}");
    // The hot paths mark the untested ones.
    assert!(report(dir, &["field.json", "--top", "100"]).contains("(untested)"));
    // With slots in every function, the same counts and the same untested paths.
    let slots =
        run(dir, "slots.json", &["--mode", "ppp:slots", "--interesting", "test.json", "--invoke", "f"], &["11"]);
    assert_eq!(paths_of(&slots.profile), in_field);
    let f = slots.profile.functions.iter().find(|x| x.name.as_deref() == Some("f")).unwrap();
    assert_eq!(f.profiled().unwrap().counters, CounterKind::Ppp);
    assert_eq!(untested_of(&slots.profile), want);
}

#[test]
fn a_profile_edited_by_hand_is_a_set_of_interesting_paths() {
    let dir = program();
    let dir = dir.path();
    let test = run(dir, "test.json", &["--invoke", "f"], &["9"]);
    // Remove the hottest path of `f` from the profile.
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("test.json")).unwrap()).unwrap();
    let functions = doc["functions"].as_array_mut().unwrap();
    let f = functions.iter_mut().find(|f| f["name"] == "f").unwrap();
    let removed = f["paths"].as_array_mut().unwrap().remove(0);
    // Keep the edited profile consistent: its total is the sum of the paths it lists.
    let total = doc["path_executions"].as_u64().unwrap() - removed["count"].as_u64().unwrap();
    doc["path_executions"] = total.into();
    std::fs::write(dir.join("edited.json"), serde_json::to_string(&doc).unwrap()).unwrap();
    let field = run(dir, "field.json", &["--mode", "ppp", "--interesting", "edited.json", "--invoke", "f"], &["9"]);
    let untested: Vec<(u64, u64)> = field
        .profile
        .functions
        .iter()
        .flat_map(|f| f.paths().iter().filter(|x| x.interesting == Some(false)).map(|x| (x.id.0, x.count.0)))
        .collect();
    assert_eq!(untested, [(removed["id"].as_u64().unwrap(), removed["count"].as_u64().unwrap())]);
    assert_eq!(paths_of(&field.profile), paths_of(&test.profile));
}

#[test]
fn wrong_interesting_profiles_are_refused() {
    let dir = program();
    let dir = dir.path();
    std::fs::write(dir.join("other.wasm"), wat::parse_str(common::KBL_LOOP).unwrap()).unwrap();
    run(dir, "test.json", &["--invoke", "f"], &["3"]);
    let other =
        pathprof().current_dir(dir).args(["run", "--quiet", "-o", "other.json", "other.wasm"]).output().unwrap();
    assert!(other.status.success());
    for (args, expect) in [
        (&["--mode", "ppp"][..], "--mode ppp needs --interesting"),
        (&["--interesting", "test.json"], "--interesting does not apply to --mode bl"),
        (&["--mode", "ppp", "--interesting", "other.json"], "other.json is a profile of another module"),
        (&["--mode", "ppp", "--interesting", "missing.json"], "cannot read missing.json"),
        (&["--mode", "ppp:2", "--interesting", "test.json"], "unknown mode \"ppp:2\""),
        (&["--mode", "ppp", "--interesting-coverage", "0.5"], "choose among the paths of --interesting profiles"),
        (
            &["--mode", "ppp", "--interesting", "test.json", "--interesting-coverage", "0"],
            "the share must lie in (0, 1]",
        ),
        (
            &["--mode", "ppp", "--interesting", "test.json", "--interesting-coverage", "1.5"],
            "the share must lie in (0, 1]",
        ),
    ] {
        let out = pathprof()
            .current_dir(dir)
            .args(["run", "--quiet", "-o", "p.json"])
            .args(args)
            .args(["--invoke", "f", "m.wasm", "3"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
    for (args, expect) in [
        (&["--interesting-top", "0"][..], "--interesting-top"),
        (&["--interesting-top", "1", "--interesting-coverage", "0.5"], "cannot be used with"),
    ] {
        let out = pathprof()
            .current_dir(dir)
            .args(["run", "--quiet", "-o", "p.json", "--mode", "ppp", "--interesting", "test.json"])
            .args(args)
            .args(["--invoke", "f", "m.wasm", "3"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
    assert!(!dir.join("p.json").exists());
    let out = pathprof().current_dir(dir).args(["report", "--untested", "test.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("untested paths come from `pathprof run --mode ppp`"));
}

/// The interesting paths chosen among those of a test suite of two runs (their union, counts added
/// up): the hottest covering a share of the executions, or the hottest of each function; the
/// profile records the rule.
#[test]
fn interesting_paths_chosen_by_coverage_or_per_function() {
    let dir = program();
    let dir = dir.path();
    let (a, b) = (run(dir, "a.json", &["--invoke", "f"], &["3"]), run(dir, "b.json", &["--invoke", "f"], &["9"]));
    // The oracle: the suite's paths, their counts added up.
    let mut suite = paths_of(&a.profile);
    for (k, c) in paths_of(&b.profile) {
        *suite.entry(k).or_default() += c;
    }
    let total: u64 = suite.values().sum();
    let field_bl = paths_of(&run(dir, "field-bl.json", &["--invoke", "f"], &["11"]).profile);
    assert!(suite.keys().all(|k| field_bl.contains_key(k)), "the field run takes every path of the suite");
    let suite_args = ["--mode", "ppp", "--interesting", "a.json", "--interesting", "b.json"];
    let field = |name: &str, extra: &[&str]| {
        let args: Vec<&str> = suite_args.iter().chain(extra).chain(&["--invoke", "f"]).copied().collect();
        let p = run(dir, name, &args, &["11"]).profile;
        assert_eq!(paths_of(&p), field_bl, "{extra:?}: every path counted exactly");
        let chosen: Paths = paths_where(&p, |x| x.interesting == Some(true))
            .into_keys()
            .map(|k| {
                let c = suite[&k];
                (k, c)
            })
            .collect();
        (p, chosen)
    };

    let (p, chosen) = field("coverage.json", &["--interesting-coverage", "0.6"]);
    let carried: u64 = chosen.values().sum();
    let least = *chosen.values().min().unwrap();
    assert!(carried as f64 >= 0.6 * total as f64, "{carried} of {total}");
    assert!(((carried - least) as f64) < 0.6 * total as f64, "as few paths as reach the share");
    assert!(suite.iter().all(|(k, &c)| chosen.contains_key(k) || c <= least), "the hottest paths");
    assert!(chosen.len() < suite.len());
    let info = p.mode.ppp().unwrap();
    assert_eq!(info.chosen_by, InterestingRule::Coverage { share: 0.6 });
    assert!((info.chosen_share.unwrap() - carried as f64 / total as f64).abs() < 1e-12);
    assert_eq!(info.interesting.0, chosen.len() as u64);
    let text = report(dir, &["coverage.json"]);
    assert!(text.contains("the hottest covering 60% of the executions"), "{text}");

    let (p, chosen) = field("top.json", &["--interesting-top", "2"]);
    assert_eq!(chosen.len(), 2, "g never ran in the suite: f's two hottest paths");
    let least = *chosen.values().min().unwrap();
    assert!(suite.iter().all(|(k, &c)| chosen.contains_key(k) || c <= least));
    assert_eq!(p.mode.ppp().unwrap().chosen_by, InterestingRule::Top { per_function: 2 });

    // Without a rule, every path of the suite.
    let (p, chosen) = field("all.json", &[]);
    assert_eq!(chosen, suite);
    let info = p.mode.ppp().unwrap();
    assert_eq!((info.chosen_by, info.chosen_share), (InterestingRule::Executed, Some(1.0)));
}
