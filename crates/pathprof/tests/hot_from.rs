//! `--hot-from PROFILE[:SHARE]`: only the functions that carried SHARE of a guiding profile's branch
//! flow are instrumented, the hottest first [PEP05 §3.4]; the others run as they were and the
//! profile says why. On `fixtures/hot_warm_cold.wat` — `$hot` ends 60,000 paths through two
//! branches, `$warm` 40,000, `$cold` one through one branch, `_start` (function 3) one through
//! none —, the instrumented functions count exactly what `bl` counts, and `compare` charges a
//! sampled run for the paths its guide left out.

mod common;

use common::pathprof;
use pathprof_core::profile::Profile;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hot_warm_cold.wat")
}

fn run(dir: &Path, name: &str, args: &[&str]) -> Profile {
    let out = dir.join(name);
    let o = pathprof().args(["run", "--quiet", "-o"]).arg(&out).args(args).arg(fixture()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Profile::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

/// The names of the instrumented functions, and the reasons of the others.
fn instrumented(p: &Profile) -> (Vec<String>, Vec<String>) {
    let name = |f: &pathprof_core::profile::FunctionProfile| f.name.clone().unwrap_or_else(|| f.index.to_string());
    let on = p.functions.iter().filter(|f| f.is_instrumented()).map(name).collect();
    let off = p.functions.iter().filter_map(|f| f.skip_reason().map(|r| format!("{} ({r})", name(f)))).collect();
    (on, off)
}

#[test]
fn only_the_hot_functions_carry_probes_and_count_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let guide = run(tmp.path(), "guide.json", &["--mode", "bl"]);
    assert_eq!(guide.path_executions.0, 60_001 + 40_001 + 2);
    let g = tmp.path().join("guide.json").display().to_string();

    // 0.99 of the flow: $hot and $warm reach it, $cold and _start (no flow) are left alone.
    let default = run(tmp.path(), "default.json", &["--mode", "bl", "--hot-from", &g]);
    let cold = "cold in the guiding profile";
    assert_eq!(
        instrumented(&default),
        (vec!["hot".into(), "warm".into()], vec![format!("cold ({cold})"), format!("3 ({cold})")])
    );
    // Half: $hot alone, with the counts of the guide.
    let half = run(tmp.path(), "half.json", &["--mode", "bl", "--hot-from", &format!("{g}:0.5")]);
    assert_eq!(instrumented(&half).0, ["hot"]);
    let paths = |p: &Profile, name: &str| p.functions.iter().find(|f| f.name.as_deref() == Some(name)).unwrap().clone();
    assert_eq!(paths(&half, "hot"), paths(&guide, "hot"));
    assert_eq!(half.path_executions.0, 60_001);
    // The whole: every function whose paths took a branch.
    let all = run(tmp.path(), "all.json", &["--mode", "bl", "--hot-from", &format!("{g}:1")]);
    assert_eq!(instrumented(&all).0, ["hot", "warm", "cold"]);

    // Sampling every path end of $hot only: 60 % of the flow is seen.
    run(tmp.path(), "sampled.json", &["--mode", "pep:every:1", "--hot-from", &format!("{g}:0.5")]);
    let o = pathprof().arg("compare").arg(tmp.path().join("guide.json")).arg(tmp.path().join("sampled.json")).output();
    let text = String::from_utf8(o.unwrap().stdout).unwrap();
    assert!(text.contains("path accuracy (Wall weight matching, hot above 0.125% of branch flow): 60.00%"), "{text}");
}

#[test]
fn hot_from_is_refused_where_it_does_not_apply() {
    let tmp = tempfile::tempdir().unwrap();
    run(tmp.path(), "guide.json", &["--mode", "bl"]);
    let g = tmp.path().join("guide.json").display().to_string();
    let other = tmp.path().join("other.wat");
    std::fs::write(&other, "(module (func (export \"_start\")))").unwrap();
    let cases: [(&[&str], &Path, &str); 4] = [
        (&["--mode", "kbl", "--hot-from", &g], &fixture(), "--hot-from does not apply to --mode kbl"),
        (&["--mode", "bl", "--hot-from", &format!("{g}:1.5")], &fixture(), "the share must lie in (0, 1]"),
        (&["--mode", "bl", "--hot-from", &format!("{g}:0")], &fixture(), "the share must lie in (0, 1]"),
        (&["--mode", "pep", "--hot-from", &g], &other, "is a profile of another module"),
    ];
    for (args, app, expect) in cases {
        let o = pathprof().args(["run", "--quiet", "-o"]).arg(tmp.path().join("x.json")).args(args).arg(app).output();
        let o = o.unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("pathprof: error: ") && stderr.contains(expect), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1);
    }
}
