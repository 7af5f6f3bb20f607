//! `pathprof bench` on a one-program corpus: `kbl:K` modes run with their k and report their k-slab
//! forest, `pep` modes run with their sampling and report their accuracy, every mode is compared with
//! `bl` when `bl` is measured, and bad mode lists are refused; a program whose bench region is empty,
//! or shorter than `--min-seconds`, keeps its row but is left out of the summary, which says so;
//! `.args`, `.dirs` and `.exit.expected` files beside a program give its arguments, directories and
//! exit status.

mod common;

use common::pathprof;
use serde_json::Value;
use std::path::Path;

/// A loop of 100 000 iterations alternating between two paths, between `bench.start` and `bench.end`.
const PROGRAM: &str = r#"
(module
  (import "bench" "start" (func $start))
  (import "bench" "end" (func $end))
  (global $acc (mut i32) (i32.const 0))
  (func $work (param $n i32)
    (local $i i32)
    (loop $top
      (if (i32.and (local.get $i) (i32.const 1))
        (then (global.set $acc (i32.add (global.get $acc) (i32.const 3))))
        (else (global.set $acc (i32.xor (global.get $acc) (local.get $i)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $top (i32.lt_u (local.get $i) (local.get $n)))))
  (func (export "_start")
    (call $start)
    (call $work (i32.const 100000))
    (call $end)))
"#;

/// Writes the one-program corpus into `dir`.
fn corpus(dir: &Path) {
    std::fs::write(dir.join("loop.wasm"), wat::parse_str(PROGRAM).unwrap()).unwrap();
}

/// Runs `pathprof bench` on `dir` with `args`, which must succeed: its stdout and its JSON report.
fn bench(dir: &Path, args: &[&str]) -> (String, Value) {
    let json = dir.join("bench.json");
    let out = pathprof().arg("bench").arg(dir).args(args).arg("--json").arg(&json).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (stdout, report)
}

fn mode<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["programs"][0]["modes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mode"] == name)
        .unwrap_or_else(|| panic!("no mode {name} in {report}"))
}

#[test]
fn kbl_modes_report_their_forest_and_the_ratio_to_bl() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let (stdout, report) = bench(dir.path(), &["--modes", "bl,kbl:2,kbl:8", "--runs", "1", "--max-runs", "1"]);
    assert!(stdout.contains("vs bl: kbl:2 "), "{stdout}");
    assert!(stdout.contains("k-SF nodes: kbl:2 "), "{stdout}");
    assert!(stdout.contains("kbl:8 against bl: geometric mean ratio"), "{stdout}");
    let bl = mode(&report, "bl");
    assert!(bl.get("ksf_nodes").is_none() && bl.get("vs_bl").is_none(), "{bl}");
    // The loop's paths alternate: the deeper forest holds longer sequences of them, in more nodes.
    let nodes = |m: &str| mode(&report, m)["ksf_nodes"].as_u64().unwrap_or_else(|| panic!("{m}: no ksf_nodes"));
    assert!(nodes("kbl:2") >= 3, "{report}");
    assert!(nodes("kbl:8") > nodes("kbl:2"), "{report}");
    for m in ["kbl:2", "kbl:8"] {
        let figures = mode(&report, m);
        let expected = figures["median_seconds"].as_f64().unwrap() / bl["median_seconds"].as_f64().unwrap();
        let vs_bl = figures["vs_bl"].as_f64().unwrap();
        assert!((vs_bl - expected).abs() <= 1e-9 * expected, "{m}: vs_bl {vs_bl}, medians give {expected}");
    }
    let summary = report["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 3, "{report}");
    assert!(summary.iter().all(|s| (s["mode"] == "bl") == s.get("vs_bl").is_none()), "{report}");
}

/// Each `ippp` mode that takes interesting segments takes those of an `ips` run of its own depth:
/// `ippp:2:slots` always, `ippp` and `ippp:2` measured with them too under `--tested-segments`.
#[test]
fn ippp_modes_take_the_segments_of_their_own_depth() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let args = ["--modes", "ippp,ippp:2,ippp:2:slots", "--tested-segments", "--runs", "1", "--max-runs", "1"];
    let (_, report) = bench(dir.path(), &args);
    let modes: Vec<&str> = report["summary"].as_array().unwrap().iter().map(|s| s["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["ippp", "ippp tested", "ippp:2", "ippp:2 tested", "ippp:2:slots"], "{report}");
}

#[test]
fn kbl_modes_are_measured_on_each_number_of_fold_threads() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let args = ["--modes", "bl,kbl:3", "--fold-threads", "1,3", "--runs", "1", "--max-runs", "1"];
    let (stdout, report) = bench(dir.path(), &args);
    assert!(stdout.contains("kbl:3 ×1 ms") && stdout.contains("kbl:3 ×3 ms"), "{stdout}");
    let modes: Vec<&str> = report["summary"].as_array().unwrap().iter().map(|s| s["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["bl", "kbl:3 ×1", "kbl:3 ×3"], "{report}");
    // The forest is the same whichever threads fold it.
    let nodes = |m: &str| mode(&report, m)["ksf_nodes"].as_u64().unwrap();
    assert_eq!(nodes("kbl:3 ×1"), nodes("kbl:3 ×3"), "{report}");
}

/// A bench region with nothing in it, as when a compiler folds the measured work away.
const EMPTY_REGION: &str = r#"
(module
  (import "bench" "start" (func $start))
  (import "bench" "end" (func $end))
  (func (export "_start") (call $start) (call $end)))
"#;

#[test]
fn programs_with_an_empty_bench_region_are_left_out_of_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    std::fs::write(dir.path().join("empty.wasm"), wat::parse_str(EMPTY_REGION).unwrap()).unwrap();
    let (stdout, report) = bench(dir.path(), &["--modes", "bl", "--runs", "3", "--max-runs", "3"]);
    let programs = report["programs"].as_array().unwrap();
    let timed = |name: &str| programs.iter().find(|p| p["program"] == name).unwrap()["timed"].as_bool().unwrap();
    assert!(!timed("empty.wasm") && timed("loop.wasm"), "{report}");
    let bl = &report["summary"][0];
    assert_eq!(bl["programs"], 1, "{report}");
    assert_eq!(bl["untimed"], serde_json::json!(["empty.wasm"]), "{report}");
    assert_eq!(bl["max_program"], "loop.wasm", "{report}");
    let loop_ratio =
        programs.iter().find(|p| p["program"] == "loop.wasm").unwrap()["modes"][0]["ratio"].as_f64().unwrap();
    assert!((bl["geomean_ratio"].as_f64().unwrap() - loop_ratio).abs() < 1e-12, "{report}");
    assert!(stdout.contains("bl: geometric mean ratio") && stdout.contains("over 1 programs"), "{stdout}");
    assert!(stdout.contains("too short to time): empty.wasm"), "{stdout}");
    let row = stdout.lines().find(|l| l.starts_with("empty.wasm")).unwrap();
    assert!(row.contains('*'), "{row}");
}

#[test]
fn ppp_modes_count_the_paths_of_a_bl_run_as_interesting() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let (stdout, report) = bench(dir.path(), &["--modes", "ppp,ppp:slots,bl", "--runs", "1", "--max-runs", "1"]);
    for m in ["ppp", "ppp:slots"] {
        assert!(mode(&report, m)["ratio"].as_f64().unwrap() > 0.0, "{report}");
        assert!(mode(&report, m)["vs_bl"].as_f64().is_some(), "{report}");
    }
    // With every path of the run interesting, `ppp` counts the loop's function densely, as `bl`
    // does, and `ppp:slots` in slots of 16 bytes.
    let memory = |m: &str| mode(&report, m)["profiler_memory_bytes"].as_u64().unwrap();
    assert_eq!(memory("ppp"), memory("bl"), "{report}");
    assert!(stdout.contains("ppp:slots against bl"), "{stdout}");
}

/// `ips` takes interesting segments but runs without them: `bench` measures it as it is, with the
/// number of segments that ran.
#[test]
fn ips_modes_report_their_segments() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let (stdout, report) = bench(dir.path(), &["--modes", "bl,ips,ips:2", "--runs", "1", "--max-runs", "1"]);
    for m in ["ips", "ips:2"] {
        assert!(mode(&report, m)["segments"].as_u64().unwrap() > 0, "{report}");
        assert!(mode(&report, m)["vs_bl"].as_f64().is_some(), "{report}");
    }
    assert!(stdout.contains("IPSs: ips "), "{stdout}");
}

#[test]
fn pep_modes_sample_as_asked_and_report_their_accuracy() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let (stdout, report) =
        bench(dir.path(), &["--modes", "pep:every:1,pep:every:1000,pep:4:3", "--runs", "2", "--max-runs", "2"]);
    let accuracy = |m: &str, figure: &str| mode(&report, m)["accuracy"][figure].as_f64().unwrap();
    // Sampling every path end records the exact profile.
    for figure in ["paths", "relative_overlap", "absolute_overlap"] {
        assert_eq!(accuracy("pep:every:1", figure), 1.0, "{figure}: {report}");
    }
    // Every 1000th of the program's path ends: nearly all are the loop's, which alternate between its
    // two paths, so only one of the two is ever sampled. Hand-computed, per iteration: the loop's
    // branch goes either way half of the time (relative overlap 1 - |1/2 - 1| there), its back edge
    // is nearly always taken (overlap 1), each weighing the same; of the edges, the back edge holds
    // 1/3 of the flow and each side of the branch 1/3, of which the sampled side holds all.
    let close = |m: &str, figure: &str, want: f64| {
        let got = accuracy(m, figure);
        assert!((got - want).abs() < 1e-4, "{m} {figure}: {got}, hand-computed {want}");
    };
    close("pep:every:1000", "paths", 0.5);
    close("pep:every:1000", "relative_overlap", 0.75);
    close("pep:every:1000", "absolute_overlap", 2.0 / 3.0);
    let timer = accuracy("pep:4:3", "absolute_overlap");
    assert!((0.0..=1.0).contains(&timer), "{report}");
    assert!(stdout.contains("accuracy (paths / relative / absolute overlap, %): pep:every:1 100.00 / 100.00 / 100.00"));
    let summary = report["summary"].as_array().unwrap();
    let every = summary.iter().find(|s| s["mode"] == "pep:every:1000").unwrap();
    assert_eq!(every["accuracy"]["paths"]["min"], mode(&report, "pep:every:1000")["accuracy"]["paths"], "{report}");
    assert_eq!(every["accuracy"]["absolute_overlap"]["min_program"], "loop.wasm", "{report}");
    assert!(stdout.contains("pep:every:1 accuracy: path accuracy mean 100.00 %"), "{stdout}");
}

#[test]
fn with_bl_measured_its_runs_give_the_exact_profile_even_to_pep_modes_listed_first() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let (_, report) =
        bench(dir.path(), &["--modes", "pep:every:1,bl,pep:every:1000", "--runs", "1", "--max-runs", "1"]);
    for figure in ["paths", "relative_overlap", "absolute_overlap"] {
        assert_eq!(mode(&report, "pep:every:1")["accuracy"][figure], 1.0, "{figure}: {report}");
    }
    let paths = mode(&report, "pep:every:1000")["accuracy"]["paths"].as_f64().unwrap();
    assert!((paths - 0.5).abs() < 1e-4, "{report}");
    assert!(mode(&report, "bl").get("accuracy").is_none(), "{report}");
}

#[test]
fn programs_shorter_than_min_seconds_are_left_out_of_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let (stdout, report) =
        bench(dir.path(), &["--modes", "bl", "--runs", "1", "--max-runs", "1", "--min-seconds", "1000"]);
    assert_eq!(report["programs"][0]["timed"], false, "{report}");
    assert_eq!(report["summary"], serde_json::json!([]), "{report}");
    assert!(
        stdout.contains("left out (uninstrumented bench region under 1000 s, --min-seconds): loop.wasm"),
        "{stdout}"
    );
    let bad = pathprof().arg("bench").arg(dir.path()).args(["--min-seconds=-1"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--min-seconds must be"), "{bad:?}");
}

#[test]
fn bad_mode_lists_are_refused_before_any_run() {
    for (modes, message) in [
        ("bl,kbl,kbl:4", "mode kbl is given twice"),
        ("bl:2", "unknown mode \"bl:2\" (valid modes: none, bl, pep[:S[:T]][:dup], pep:every:N, kbl[:K][:burst], ppp[:slots], events[:STRATEGY[:CUT]], ips[:K], ippp[:K], ippp[:K]:slots)"),
        ("fast", "unknown mode \"fast\" (valid modes: none, bl, pep[:S[:T]][:dup], pep:every:N, kbl[:K][:burst], ppp[:slots], events[:STRATEGY[:CUT]], ips[:K], ippp[:K], ippp[:K]:slots)"),
        ("kbl:0", "mode \"kbl:0\": K must be a whole number from 1 to 64"),
        ("kbl:65", "mode \"kbl:65\": K must be a whole number from 1 to 64"),
        ("kbl:8,kbl:08", "mode kbl:8 is given twice"),
        ("kbl:8:burst,kbl:08:burst", "mode kbl:8:burst is given twice"),
        ("kbl:8:bursts", "mode \"kbl:8:bursts\": K must be a whole number from 1 to 64, optionally followed by :burst"),
        ("pep:0", "mode \"pep:0\": S must be a whole number from 1 to 1048576"),
        ("pep:1048577", "mode \"pep:1048577\": S must be a whole number from 1 to 1048576"),
        ("pep:16:0", "mode \"pep:16:0\": T must be a whole number from 1 to"),
        ("pep:16:x", "mode \"pep:16:x\": T must be a whole number from 1 to"),
        ("pep:every:0", "mode \"pep:every:0\": N must be a whole number from 1 to"),
        ("pep,pep:64:17", "mode pep is given twice"),
        ("pep:8:17,pep:8", "mode pep:8 is given twice"),
        ("events,events:pc:auto", "mode events is given twice"),
        ("events:pd:auto,events:pd", "mode events:pd is given twice"),
        ("events:fast", "mode \"events:fast\": the strategy is pc, pd or dec"),
        ("events:pc:all", "mode \"events:pc:all\": paths are cut at none, merges or auto, not \"all\""),
        ("events:dec:merges", "events:dec counts no paths: there are none to cut"),
        ("ips:0", "mode \"ips:0\": K must be a whole number from 1 to 4"),
        ("ips:5", "mode \"ips:5\": K must be a whole number from 1 to 4"),
        ("ips,ips:1", "mode ips is given twice"),
    ] {
        check(&[], modes, message);
    }
    check(&["--tested-segments"], "bl", "--tested-segments: none of the modes measured takes interesting segments");
    check(&["--tested-segments"], "ippp:slots", "--tested-segments: none of the modes measured takes");

    fn check(flags: &[&str], modes: &str, message: &str) {
        let dir = tempfile::tempdir().unwrap();
        corpus(dir.path());
        let out = pathprof().arg("bench").arg(dir.path()).args(["--modes", modes]).args(flags).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "--modes {modes}: {stderr}");
        assert!(stderr.contains(message), "--modes {modes}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "--modes {modes}: nothing is measured: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn a_hot_share_outside_zero_to_one_is_refused_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    for share in ["0", "1.5", "-1", "NaN"] {
        let out = pathprof().arg("bench").arg(dir.path()).args(["--modes", "pep", "--hot-share", share]).output();
        let out = out.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "--hot-share {share}: {stderr}");
        assert!(stderr.contains("--hot-share: the share must lie in (0, 1]"), "--hot-share {share}: {stderr}");
        assert!(out.stdout.is_empty(), "--hot-share {share}: nothing is measured");
    }
}

/// Exits with `10 × argc + errno`, `errno` that of `fd_prestat_get` on the second pre-opened
/// directory (0 when it exists).
const ARGS_AND_DIRS: &str = r#"
(module
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $sizes (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $prestat (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (import "bench" "start" (func $start))
  (import "bench" "end" (func $end))
  (memory (export "memory") 1)
  (func (export "_start")
    (call $start)
    (drop (call $sizes (i32.const 0) (i32.const 4)))
    (call $end)
    (call $exit
      (i32.add (i32.mul (i32.load (i32.const 0)) (i32.const 10)) (call $prestat (i32.const 4) (i32.const 16))))))
"#;

#[test]
fn programs_get_the_arguments_directories_and_exit_status_their_files_give() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tool.wasm"), wat::parse_str(ARGS_AND_DIRS).unwrap()).unwrap();
    let once = ["--modes", "bl", "--runs", "1", "--max-runs", "1"];
    // Without the files: one argument, no second directory (errno 8, badf), and an exit status
    // other than 0 is a failure.
    let out = pathprof().arg("bench").arg(dir.path()).args(once).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("exit 18"), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("tool.args"), "-x\n\nin.txt\n").unwrap();
    std::fs::write(dir.path().join("tool.dirs"), "data::/data\n").unwrap();
    std::fs::write(dir.path().join("tool.exit.expected"), "30\n").unwrap();
    let (_, report) = bench(dir.path(), &once);
    assert_eq!(mode(&report, "bl")["runs"], 1);
    std::fs::write(dir.path().join("tool.dirs"), "data\n").unwrap();
    let out = pathprof().arg("bench").arg(dir.path()).args(once).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not HOST::GUEST"));
}

#[test]
fn with_a_hot_share_modes_are_also_measured_guided() {
    let dir = tempfile::tempdir().unwrap();
    corpus(dir.path());
    let (stdout, report) =
        bench(dir.path(), &["--modes", "bl,pep:every:1,kbl", "--hot-share", "0.5", "--runs", "1", "--max-runs", "1"]);
    let header = stdout.lines().next().unwrap();
    let columns: Vec<&str> = header.split(" | ").skip(1).map(|c| c.split(" ms").next().unwrap().trim()).collect();
    // kbl does not take --hot-from: measured once.
    assert_eq!(columns, ["bl", "bl hot", "pep:every:1", "pep:every:1 hot", "kbl"], "{header}");
    let modes: Vec<&str> =
        report["programs"][0]["modes"].as_array().unwrap().iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, columns);
    // `$work` ran all but one of the path ends: alone in the guided build, which samples it whole.
    assert_eq!(mode(&report, "pep:every:1 hot")["accuracy"]["paths"].as_f64().unwrap(), 1.0, "{report}");
    assert!(mode(&report, "bl hot")["vs_bl"].as_f64().is_some(), "{report}");
    let summary: Vec<&str> =
        report["summary"].as_array().unwrap().iter().map(|s| s["mode"].as_str().unwrap()).collect();
    assert_eq!(summary, columns);
}

#[test]
fn with_a_hot_share_and_an_edge_profile_the_two_guides_are_also_measured_together() {
    let dir = tempfile::tempdir().unwrap();
    let biased = PROGRAM
        .replace("(i32.and (local.get $i) (i32.const 1))", "(i32.eqz (i32.rem_u (local.get $i) (i32.const 10)))");
    std::fs::write(dir.path().join("biased.wasm"), wat::parse_str(&biased).unwrap()).unwrap();
    let args = ["--modes", "bl,pep:every:1", "--hot-share", "0.5", "--edge-profile-from", "bl", "--runs", "1"];
    let (stdout, report) = bench(dir.path(), &[&args[..], &["--max-runs", "1"]].concat());
    let header = stdout.lines().next().unwrap();
    let columns: Vec<&str> = header.split(" | ").skip(1).map(|c| c.split(" ms").next().unwrap().trim()).collect();
    assert_eq!(
        columns,
        [
            "bl",
            "bl hot",
            "bl edges",
            "bl hot edges",
            "pep:every:1",
            "pep:every:1 hot",
            "pep:every:1 edges",
            "pep:every:1 hot edges"
        ],
        "{header}"
    );
    // Guided by both, `$work` alone is instrumented (`_start` carries no branch flow), numbered
    // from the profile: the loop's increment moves to the arm taken one time in ten, as with the
    // edge profile alone, and the guided build's code is the smaller.
    let figure = |m: &str, key: &str| mode(&report, m)[key].as_f64().unwrap_or_else(|| panic!("{m} {key}: {report}"));
    assert!(figure("bl hot edges", "increments_executed") < figure("bl hot", "increments_executed"), "{report}");
    assert_eq!(figure("bl hot edges", "increments_executed"), figure("bl edges", "increments_executed"), "{report}");
    assert!(figure("bl hot edges", "code_growth") < figure("bl edges", "code_growth"), "{report}");
    assert_eq!(mode(&report, "pep:every:1 hot edges")["accuracy"]["paths"].as_f64().unwrap(), 1.0, "{report}");
}

#[test]
fn with_an_edge_profile_modes_are_also_measured_numbered_from_it() {
    let dir = tempfile::tempdir().unwrap();
    // The corpus's loop, its branch taking the `then` arm one time in ten.
    let biased = PROGRAM
        .replace("(i32.and (local.get $i) (i32.const 1))", "(i32.eqz (i32.rem_u (local.get $i) (i32.const 10)))");
    assert_ne!(biased, PROGRAM);
    std::fs::write(dir.path().join("biased.wasm"), wat::parse_str(&biased).unwrap()).unwrap();
    let once = ["--runs", "1", "--max-runs", "1"];
    for guide in ["bl", "pep:every:1"] {
        let args = [&["--modes", "bl,pep:every:1", "--edge-profile-from", guide][..], &once].concat();
        let (stdout, report) = bench(dir.path(), &args);
        let header = stdout.lines().next().unwrap();
        let columns: Vec<&str> = header.split(" | ").skip(1).map(|c| c.split(" ms").next().unwrap().trim()).collect();
        assert_eq!(columns, ["bl", "bl edges", "pep:every:1", "pep:every:1 edges"], "{header}");
        // Static estimates cannot tell the branch's arms apart; the profile (exact, or sampled at
        // every path end) puts the loop's increment on the arm taken one time in ten.
        let executed = |m: &str| mode(&report, m)["increments_executed"].as_u64().unwrap();
        assert!(executed("bl edges") < executed("bl"), "{guide}: {report}");
        assert!(executed("bl edges") <= 100_000 / 10 + 10, "{guide}: {report}");
        assert_eq!(mode(&report, "pep:every:1 edges")["accuracy"]["paths"].as_f64().unwrap(), 1.0, "{report}");
        assert!(mode(&report, "bl edges")["vs_bl"].as_f64().is_some(), "{report}");
    }
    for (modes, guide, message) in [
        ("bl", "none", "takes a mode that profiles paths"),
        ("bl", "ppp", "takes a mode that profiles paths"),
        ("bl", "nonsense", "--edge-profile-from"),
        ("ips:1", "bl", "none of the modes measured takes an edge profile"),
    ] {
        let out = pathprof()
            .arg("bench")
            .arg(dir.path())
            .args(["--modes", modes, "--edge-profile-from", guide])
            .args(once)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(message), "{modes} {guide}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}
