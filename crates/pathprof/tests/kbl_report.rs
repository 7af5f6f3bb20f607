//! `pathprof report` and `pathprof export` on k-iteration path profiles: folded stacks and forest
//! statistics of a loop counted by hand, the hottest sequence in the report, the flame graph, and the
//! error for a profile without k-iteration path forests.

mod common;

use common::{function, kbl_loop_work_paths, run_wat, KBL_LOOP};
use pathprof_core::profile::{Endpoint, FunctionProfile, KipfStats, Profile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A profile written to a temporary folder, for `report` and `export` to read.
struct Saved {
    dir: tempfile::TempDir,
    profile: Profile,
    path: PathBuf,
}

fn profile_of(wat: &str, extra: &[&str]) -> Saved {
    let run = run_wat(wat, extra, &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.json");
    std::fs::write(&path, run.profile.to_json()).unwrap();
    Saved { dir, profile: run.profile, path }
}

fn pathprof_on(saved: &Saved, args: &[&str]) -> Output {
    common::pathprof().current_dir(saved.dir.path()).args(args).arg(&saved.path).output().unwrap()
}

fn stdout_of(out: &Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The folded stacks `pathprof export --folded` writes for `saved` (with `extra` arguments).
fn folded(saved: &Saved, extra: &[&str]) -> String {
    let out = saved.dir.path().join("out.folded");
    let mut args = vec!["export", "--folded", out.to_str().unwrap()];
    args.extend(extra);
    stdout_of(&pathprof_on(saved, &args));
    std::fs::read_to_string(out).unwrap()
}

/// A folded line split into its function frame, the path IDs of its path frames, and its count.
fn parse_line(line: &str) -> (String, Vec<u64>, u64) {
    let (stack, count) = line.rsplit_once(' ').unwrap();
    let mut frames = stack.split(';');
    let function = frames.next().unwrap().to_string();
    let ids = frames
        .map(|frame| {
            assert!(frame.starts_with("path ") && frame.ends_with(')'), "path frame {frame:?}");
            frame["path ".len()..].split(' ').next().unwrap().parse().unwrap()
        })
        .collect();
    (function, ids, count.parse().unwrap())
}

/// The paths of `$odd`: entry, round, exit.
fn odd_paths(odd: &FunctionProfile) -> [u64; 3] {
    let by = |s: Endpoint, e: Endpoint| odd.paths().iter().find(|p| p.start == s && p.end == e).unwrap().id.0;
    let header = odd.blocks.iter().find(|b| b.loop_header).unwrap().id;
    let h = Endpoint::Block(header);
    [by(Endpoint::Entry, h), by(h, h), by(h, Endpoint::Exit)]
}

#[test]
fn folded_stacks_of_a_loop_by_hand() {
    let saved = profile_of(KBL_LOOP, &["--mode", "kbl", "-k", "3"]);
    let text = folded(&saved, &[]);
    let mut by_function: BTreeMap<String, BTreeMap<Vec<u64>, u64>> = BTreeMap::new();
    for line in text.lines() {
        let (f, ids, count) = parse_line(line);
        assert!(count > 0, "{line}");
        assert!(by_function.entry(f).or_default().insert(ids, count).is_none(), "one line per node: {line}");
    }
    // A function's lines add up to its root counts, the Ball–Larus path executions.
    for f in saved.profile.functions.iter().filter(|f| f.kipf().is_some()) {
        let label = match &f.name {
            Some(n) => format!("{n} [{}]", f.index),
            None => format!("func[{}]", f.index),
        };
        let roots: u64 = f.kipf().unwrap().roots.iter().map(|r| r.count.0).sum();
        let paths: u64 = f.paths().iter().map(|p| p.count.0).sum();
        let lines: u64 = by_function.get(&label).map_or(0, |l| l.values().sum());
        assert_eq!((lines, roots), (paths, paths), "{label}");
    }
    // work runs E V O V O V O V O V O X: with k = 3, a sequence's self count is how often it ran
    // without a third path (or the end of the activation) after it.
    let [e, v, o, x] = kbl_loop_work_paths(function(&saved.profile, "work"));
    let expected: BTreeMap<Vec<u64>, u64> =
        [(vec![e, v, o], 1), (vec![v, o, v], 4), (vec![v, o, x], 1), (vec![o, v, o], 4), (vec![o, x], 1), (vec![x], 1)]
            .into_iter()
            .collect();
    assert_eq!(by_function["work [0]"], expected);
    // $odd runs E R R X five times.
    let [e, r, x] = odd_paths(function(&saved.profile, "odd"));
    let expected: BTreeMap<Vec<u64>, u64> =
        [(vec![e, r, r], 5), (vec![r, r, x], 5), (vec![r, x], 5), (vec![x], 5)].into_iter().collect();
    assert_eq!(by_function["odd [1]"], expected);
    assert_eq!(by_function.len(), 3, "work, odd and _start: {:?}", by_function.keys());

    // --function keeps one function's lines; `-` writes to standard output.
    let only = stdout_of(&pathprof_on(&saved, &["export", "--folded", "-", "--function", "odd"]));
    assert_eq!(only.lines().count(), 4);
    assert!(only.lines().all(|l| l.starts_with("odd [1];path ")), "{only}");

    // With k = 1 the stacks are the Ball–Larus paths.
    let saved = profile_of(KBL_LOOP, &["--mode", "kbl", "-k", "1"]);
    let work = function(&saved.profile, "work");
    let lines: BTreeMap<Vec<u64>, u64> =
        folded(&saved, &["--function", "work"]).lines().map(parse_line).map(|(_, ids, c)| (ids, c)).collect();
    let paths: BTreeMap<Vec<u64>, u64> = work.paths().iter().map(|p| (vec![p.id.0], p.count.0)).collect();
    assert_eq!(lines, paths);
}

#[test]
fn forest_statistics_by_hand() {
    let saved = profile_of(KBL_LOOP, &["--mode", "kbl", "-k", "3"]);
    let stats = |name: &str| function(&saved.profile, name).kipf().unwrap().stats();
    // work: internal E, EV, V, VO, O, OV; leaves EVO, VOV, VOX, OVO (depth 3), OX (2), X (1).
    let work = stats("work");
    assert_eq!(work, KipfStats { nodes: 12, internal_nodes: 6, child_edges: 8, leaves: 6, leaf_depth_sum: 15 });
    assert_eq!(work.roots(), 4);
    assert_eq!(work.avg_leaf_depth(), Some(2.5));
    // odd: internal E, ER, R, RR; leaves ERR, RRX (depth 3), RX (2), X (1).
    let odd = stats("odd");
    assert_eq!(odd, KipfStats { nodes: 8, internal_nodes: 4, child_edges: 5, leaves: 4, leaf_depth_sum: 9 });
    assert_eq!(odd.avg_degree(), Some(1.25));
    assert_eq!(odd.avg_leaf_depth(), Some(2.25));
    // _start: one path.
    let program = work + odd + KipfStats { nodes: 1, internal_nodes: 0, child_edges: 0, leaves: 1, leaf_depth_sum: 1 };

    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&pathprof_on(&saved, &["report", "--json", "--function", "work"]))).unwrap();
    let p = &json["kipf_stats"]["program"];
    assert_eq!(p["nodes"], program.nodes);
    assert_eq!(p["internal_nodes"], 10);
    assert_eq!(p["child_edges"], 13);
    assert_eq!(p["leaves"], 11);
    assert_eq!(p["leaf_depth_sum"], 25);
    assert_eq!(p["roots"], 8);
    assert!((p["avg_degree"].as_f64().unwrap() - 1.3).abs() < 1e-9);
    assert!((p["avg_leaf_depth"].as_f64().unwrap() - 25.0 / 11.0).abs() < 1e-9);
    let shown = json["kipf_stats"]["functions"].as_array().unwrap();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0]["name"], "work");
    assert_eq!(shown[0]["stats"]["nodes"], 12);
    assert!((shown[0]["stats"]["avg_degree"].as_f64().unwrap() - 8.0 / 6.0).abs() < 1e-9);

    let text = stdout_of(&pathprof_on(&saved, &["report"]));
    let row = |label: &str| {
        let line = text.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("{text}"));
        line.trim_start()[label.len()..].split_whitespace().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(row("whole program"), ["8", "21", "10", "1.30", "11", "2.27"]);
    assert_eq!(row("work [0]"), ["4", "12", "6", "1.33", "6", "2.50"]);
    assert_eq!(row("odd [1]"), ["3", "8", "4", "1.25", "4", "2.25"]);
}

#[test]
fn report_shows_the_hottest_sequences() {
    let saved = profile_of(KBL_LOOP, &["--mode", "kbl", "-k", "3"]);
    let [e, v, o, x] = kbl_loop_work_paths(function(&saved.profile, "work"));
    let text = stdout_of(&pathprof_on(&saved, &["report", "--function", "work", "--top", "4"]));
    let section = &text[text.find("hottest sequences of 2 to 3 paths").unwrap_or_else(|| panic!("{text}"))..];
    let rows: Vec<(u64, String)> = section
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let rank: usize = w.next()?.parse().ok()?;
            let count: u64 = w.next()?.parse().ok()?;
            Some((rank, count, w.collect::<Vec<_>>().join(" ")))
        })
        .map(|(_, c, s)| (c, s))
        .collect();
    // By count, longer sequences first among equal counts, then by path IDs.
    let seq = |ids: &[u64]| ids.iter().map(u64::to_string).collect::<Vec<_>>().join(" → ");
    let mut threes = [vec![o, v, o], vec![v, o, v]];
    threes.sort();
    assert_eq!(rows, [(5, seq(&[v, o])), (4, seq(&threes[0])), (4, seq(&threes[1])), (4, seq(&[o, v]))], "{text}");
    // Every path of the sequences, expanded to its blocks.
    let work = function(&saved.profile, "work");
    for id in [v, o] {
        let p = work.paths().iter().find(|p| p.id.0 == id).unwrap();
        let blocks: Vec<String> = p.blocks.iter().map(|b| format!("B{b}")).collect();
        let expansion = format!("path {id} [{}→{}]: {}", p.start, p.end, blocks.join(" "));
        assert!(section.lines().any(|l| l.trim() == expansion), "{expansion:?} in {text}");
    }
    assert!(!section.contains(&format!("path {e} [")) && !section.contains(&format!("path {x} [")), "{text}");
    // The Ball–Larus table is still there, before the new section.
    assert!(text.find(" start→end ").unwrap() < text.find("k-iteration paths (k = 3)").unwrap(), "{text}");

    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&pathprof_on(&saved, &["report", "--json", "--function", "work"]))).unwrap();
    assert_eq!(json["k"], 3);
    assert_eq!(json["paths"].as_array().unwrap().len(), 4);
    let first = &json["sequences"][0];
    assert_eq!(first["count"], 5);
    assert_eq!(first["name"], "work");
    let ids: Vec<u64> = first["paths"].as_array().unwrap().iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [v, o]);
    assert!(!first["paths"][0]["blocks"].as_array().unwrap().is_empty());

    // k = 1: no sequences of several paths.
    let one = profile_of(KBL_LOOP, &["--mode", "kbl", "-k", "1"]);
    let text = stdout_of(&pathprof_on(&one, &["report"]));
    assert!(
        text.contains("k-iteration paths (k = 1)") && text.contains("no sequence of 2 or more paths ran"),
        "{text}"
    );

    // Profiles of other modes report as before.
    for mode in ["bl", "pep:every:1"] {
        let other = profile_of(KBL_LOOP, &["--mode", mode]);
        let text = stdout_of(&pathprof_on(&other, &["report"]));
        assert!(!text.contains("k-iteration") && !text.contains("hottest sequences"), "{text}");
        let json: serde_json::Value =
            serde_json::from_str(&stdout_of(&pathprof_on(&other, &["report", "--json"]))).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["mode", "module", "operators_executed", "path_executions", "paths", "ranked_by"]);
    }
}

/// The C fixture's paths are shown with their source lines, in the report and in the folded frames.
#[test]
fn source_lines_of_a_c_loop_nest() {
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/c/nested.wasm");
    let dir = tempfile::tempdir().unwrap();
    let run = common::run_in(dir.path(), &["--mode", "kbl", "-k", "4"], &wasm, &[]);
    assert!(run.output.status.success(), "{}", String::from_utf8_lossy(&run.output.stderr));
    let path = dir.path().join("nested.json");
    std::fs::write(&path, run.profile.to_json()).unwrap();
    let saved = Saved { dir, profile: run.profile, path };
    let text = stdout_of(&pathprof_on(&saved, &["report", "--function", "triangle", "--top", "3"]));
    let section = &text[text.find("hottest sequences").unwrap_or_else(|| panic!("{text}"))..];
    assert!(section.lines().any(|l| l.trim_start().starts_with("path ") && l.ends_with("(nested.c:17)")), "{text}");
    let stacks = stdout_of(&pathprof_on(&saved, &["export", "--folded", "-", "--function", "triangle"]));
    assert!(stacks.lines().all(|l| l.starts_with("triangle [")), "{stacks}");
    assert!(stacks.contains(";path 0 (nested.c:17);"), "{stacks}");
}

#[test]
fn svg_flame_graph() {
    let saved = profile_of(KBL_LOOP, &["--mode", "kbl", "-k", "3"]);
    let svg_path = saved.dir.path().join("flame.svg");
    let folded_path = saved.dir.path().join("both.folded");
    let out = pathprof_on(
        &saved,
        &["export", "--svg", svg_path.to_str().unwrap(), "--folded", folded_path.to_str().unwrap()],
    );
    stdout_of(&out);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<?xml") && svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("k-iteration paths of m.wasm (k = 3)"));
    assert!(svg.contains("work [0]") && svg.contains("odd [1]"));
    assert!(svg.contains("path "));
    assert_eq!(std::fs::read_to_string(&folded_path).unwrap(), folded(&saved, &[]));

    let only = stdout_of(&pathprof_on(&saved, &["export", "--svg", "-", "--function", "odd"]));
    assert!(only.contains("odd [1]") && !only.contains("work [0]"));
}

#[test]
fn export_needs_paths() {
    let none = profile_of(KBL_LOOP, &["--mode", "none"]);
    for flag in ["--folded", "--svg", "--pprof", "--speedscope"] {
        let out_path = none.dir.path().join("out");
        let out = pathprof_on(&none, &["export", flag, out_path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("pathprof: error: ") && stderr.contains("no paths"), "{stderr}");
        assert!(out.stdout.is_empty());
        assert!(!out_path.exists());
    }
    let kbl = profile_of(KBL_LOOP, &["--mode", "kbl"]);
    let out = pathprof_on(&kbl, &["export", "--folded", "-", "--function", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stderr).unwrap().lines().count(), 1);
    // No output named: a usage error.
    let out = pathprof_on(&kbl, &["export"]);
    assert_eq!(out.status.code(), Some(2));
}

/// With k = 64 the forest nests 64 levels deep; the profile is read back, reported and exported.
#[test]
fn deepest_forests_read_back() {
    let saved = profile_of(&KBL_LOOP.replace("(i32.const 10)", "(i32.const 200)"), &["--mode", "kbl", "-k", "64"]);
    let work = function(&saved.profile, "work");
    // 202 paths in one activation: 202 − 63 windows of 64 paths.
    fn at_depth(nodes: &[pathprof_core::profile::KipfNodeProfile], depth: usize) -> u64 {
        if depth == 1 {
            return nodes.iter().map(|n| n.count.0).sum();
        }
        nodes.iter().map(|n| at_depth(&n.children, depth - 1)).sum()
    }
    let roots = &work.kipf().unwrap().roots;
    assert_eq!(at_depth(roots, 64), 139);
    assert_eq!(at_depth(roots, 65), 0);
    stdout_of(&pathprof_on(&saved, &["report", "--top", "3"]));
    let folded = folded(&saved, &[]);
    assert!(folded.lines().any(|l| l.matches(';').count() == 64), "{folded}");
}
