//! Reports people act on and the formats other tools read: paths ranked by cost, source views with
//! demangled names, merged profiles, pprof, speedscope and folded exports, and the HTML page — each
//! checked against an independent oracle (operators counted by wasmparser, event counts, a protobuf
//! decoder of the test's own, speedscope's JSON schema, a headless browser).

mod common;

use common::{browser, fails_cleanly, function, headless, pathprof, run_in, run_wat, KBL_LOOP};
use pathprof_core::profile::{FunctionProfile, Profile};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Output;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/c").join(name)
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Saves `p` as `name` in `dir`.
fn save(dir: &Path, name: &str, p: &Profile) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, p.to_json()).unwrap();
    path
}

/// A loop whose frequent path is short and whose rare path (1 round in 10) is long: by count the
/// short one is hottest, by cost the long one.
fn skewed() -> String {
    let step = "(local.set $x (i32.xor (local.get $x) (i32.shl (local.get $x) (i32.const 3))))\n";
    format!(
        r#"(module
  (func $f (export "_start")
    (local $i i32) (local $x i32)
    (loop $top
      (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 10)))
        (then {}))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $top (i32.lt_u (local.get $i) (i32.const 100))))))"#,
        step.repeat(20)
    )
}

/// Every block's operators counted by wasmparser from the module's bytes: the operators whose offset
/// lies in the block's byte range.
fn check_block_ops(wasm: &[u8], p: &Profile) {
    let mut offsets: Vec<Vec<usize>> = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        if let wasmparser::Payload::CodeSectionEntry(body) = payload.unwrap() {
            let mut ops = body.get_operators_reader().unwrap();
            let mut list = Vec::new();
            while !ops.eof() {
                list.push(ops.original_position());
                ops.read().unwrap();
            }
            offsets.push(list);
        }
    }
    let first_defined = p.functions.iter().map(|f| f.index).min().unwrap();
    let mut checked = 0;
    for f in &p.functions {
        let ops = &offsets[(f.index - first_defined) as usize];
        for b in &f.blocks {
            let expected = ops.iter().filter(|&&o| (b.offset as usize..b.end as usize).contains(&o)).count();
            assert_eq!(b.ops as usize, expected, "function {} block {}", f.index, b.id);
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn paths_are_ranked_by_cost_or_count() {
    let run = run_wat(&skewed(), &[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let path = save(dir.path(), "p.prof", &run.profile);
    check_block_ops(&wat::parse_str(skewed()).unwrap(), &run.profile);
    let f = function(&run.profile, "f");
    let ops = |id: u64| {
        let path = f.paths().iter().find(|p| p.id.0 == id).unwrap();
        path.blocks.iter().map(|&b| u64::from(f.blocks[b as usize].ops)).sum::<u64>()
    };
    let by = |rank: &str| -> serde_json::Value {
        serde_json::from_str(&ok(pathprof().args(["report", "--json", "--by", rank]).arg(&path).output().unwrap()))
            .unwrap()
    };
    let (cost, count) = (by("cost"), by("count"));
    assert_eq!(cost["ranked_by"], "cost");
    let total: u64 = f.paths().iter().map(|p| p.count.0 * ops(p.id.0)).sum();
    assert_eq!(cost["operators_executed"], total);
    for doc in [&cost, &count] {
        for p in doc["paths"].as_array().unwrap() {
            let (id, n) = (p["id"].as_u64().unwrap(), p["count"].as_u64().unwrap());
            assert_eq!(p["ops"].as_u64().unwrap(), ops(id));
            assert_eq!(p["operators"].as_u64().unwrap(), n * ops(id));
            let share = p["operators_share"].as_f64().unwrap();
            assert!((share - (n * ops(id)) as f64 / total as f64).abs() < 1e-12);
        }
    }
    let key = |doc: &serde_json::Value, field: &str| -> Vec<u64> {
        doc["paths"].as_array().unwrap().iter().map(|p| p[field].as_u64().unwrap()).collect()
    };
    let mut sorted = key(&cost, "operators");
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(key(&cost, "operators"), sorted);
    let mut sorted = key(&count, "count");
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(key(&count, "count"), sorted);
    // The loop's frequent round is hottest by count, its rare long round by cost.
    assert_ne!(cost["paths"][0]["id"], count["paths"][0]["id"]);
    assert_eq!(count["paths"][0]["count"], 89);
    assert_eq!(cost["paths"][0]["count"], 10);
    // The text report ranks the same way, and says what the shares are of.
    let text = ok(pathprof().args(["report"]).arg(&path).output().unwrap());
    let grouped = format!("{},{:03}", total / 1000, total % 1000);
    assert!((1000..1_000_000).contains(&total));
    assert!(text.contains(&format!("the counted paths executed {grouped} operators")), "{text}");
    let first = text.lines().find(|l| l.trim_start().starts_with("1 ") && l.contains('%')).unwrap();
    assert!(first.contains(&format!("#{}", cost["paths"][0]["id"])), "{text}");
}

/// The operators the counted paths executed equal the `instr` events an `events` profile counts,
/// on the C fixtures and the corpus's deterministic programs.
#[test]
fn operators_executed_equal_instr_events() {
    let mut programs: Vec<(PathBuf, PathBuf)> = ["branches.wasm", "nested.wasm", "recursion.wasm", "early_exit.wasm"]
        .iter()
        .map(|n| (fixture(n), fixture("")))
        .collect();
    if let Some(corpus) = common::corpus_dir() {
        for rel in common::DETERMINISTIC.iter().take(4) {
            let wasm = corpus.join(rel);
            programs.push((wasm.clone(), wasm.parent().unwrap().to_path_buf()));
        }
    }
    for (wasm, cwd) in &programs {
        let extra = |mode: &str| vec!["--mode".to_string(), mode.to_string(), "--dir".into(), ".".into()];
        let bl = run_in(cwd, &extra("bl").iter().map(String::as_str).collect::<Vec<_>>(), wasm, &[]);
        let events = run_in(cwd, &extra("events").iter().map(String::as_str).collect::<Vec<_>>(), wasm, &[]);
        check_block_ops(&std::fs::read(wasm).unwrap(), &bl.profile);
        let cost: u128 = bl
            .profile
            .functions
            .iter()
            .flat_map(|f| f.paths().iter().map(move |p| (f, p)))
            .map(|(f, p)| {
                u128::from(p.count.0) * p.blocks.iter().map(|&b| u128::from(f.blocks[b as usize].ops)).sum::<u128>()
            })
            .sum();
        let instr = events.profile.mode.events().unwrap().totals.get("instr").unwrap();
        assert_eq!(cost, u128::from(instr), "{}", wasm.display());
        let dir = tempfile::tempdir().unwrap();
        let path = save(dir.path(), "p.prof", &bl.profile);
        let json: serde_json::Value =
            serde_json::from_str(&ok(pathprof().args(["report", "--json"]).arg(&path).output().unwrap())).unwrap();
        assert_eq!(json["operators_executed"].as_u64().map(u128::from), Some(cost));
    }
}

#[test]
fn source_view_prints_the_lines_a_path_runs() {
    let wasm = fixture("branches.wasm");
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &[], &wasm, &[]);
    let path = save(dir.path(), "p.prof", &run.profile);
    let source = std::fs::read_to_string(fixture("branches.c")).unwrap();
    let source: Vec<&str> = source.lines().collect();
    let root = fixture("");
    let text = ok(pathprof()
        .current_dir(dir.path())
        .args(["report", "--source", "--top", "5", "--source-root"])
        .arg(&root)
        .arg(&path)
        .output()
        .unwrap());
    let mut shown = 0;
    for line in text.lines().filter(|l| l.starts_with("    branches.c:")) {
        let (at, code) = line.trim_start().split_once(" | ").unwrap_or_else(|| panic!("no text: {line}"));
        let n: usize = at.trim_end().rsplit_once(':').unwrap().1.parse().unwrap();
        assert_eq!(code, source[n - 1].trim_end(), "{line}");
        shown += 1;
    }
    assert!(shown >= 5, "{text}");
    assert!(!text.contains("not found"), "{text}");
    // Each path's lines are its blocks' lines in order, repeats in a row once.
    let hot: Vec<(String, Vec<String>)> = {
        let mut out = Vec::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix('#') {
                out.push((rest.to_string(), Vec::new()));
            } else if let (Some(last), Some(at)) = (out.last_mut(), l.strip_prefix("    ")) {
                last.1.push(at.split(" | ").next().unwrap().trim_end().to_string());
            }
        }
        out
    };
    assert_eq!(hot.len(), 5);
    for (head, lines) in &hot {
        let name = head.split(" [").next().unwrap().split_once(' ').unwrap().1;
        let id: u64 = head.split(" path ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        let f = function(&run.profile, name);
        let p = f.paths().iter().find(|p| p.id.0 == id).unwrap();
        let mut expected: Vec<String> = p.blocks.iter().filter_map(|&b| f.blocks[b as usize].line.clone()).collect();
        expected.dedup();
        assert_eq!(lines, &expected, "{head}");
    }
    // Without the root the files are not found, and the report says so.
    let text = ok(pathprof().current_dir(dir.path()).args(["report", "--source"]).arg(&path).output().unwrap());
    assert!(text.contains("source files not found (see --source-root): branches.c"), "{text}");
    fails_cleanly(dir.path(), &["report", "--source", "--source-root", "missing", "p.prof"], "missing");
}

#[test]
fn names_are_demangled() {
    let wat = r#"(module
      (func $_ZN4core3fmt5write17h0123456789abcdefE (param i32) (result i32)
        (if (result i32) (local.get 0) (then (i32.const 1)) (else (i32.const 2))))
      (func $_Z3fooi (drop (call $_ZN4core3fmt5write17h0123456789abcdefE (i32.const 1))))
      (func (export "_start") (call $_Z3fooi)))"#;
    let run = run_wat(wat, &[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let path = save(dir.path(), "p.prof", &run.profile);
    let text = ok(pathprof().args(["report", "--source"]).arg(&path).output().unwrap());
    assert!(text.contains("core::fmt::write [0]") && text.contains("foo(int) [1]"), "{text}");
    assert!(!text.contains("_ZN4core"), "{text}");
    for name in ["foo(int)", "_Z3fooi"] {
        let text = ok(pathprof().args(["report", "--function", name]).arg(&path).output().unwrap());
        assert!(text.contains("foo(int) [1]") && !text.contains("core::fmt::write [0]"), "{text}");
    }
}

/// Exported `a` runs the `then` arm of `$pick` 3 times and its `else` arm once; `b` runs the `else`
/// arm 5 times.
const TWO_ENTRIES: &str = r#"
(module
  (func $pick (param i32) (result i32)
    (if (result i32) (local.get 0) (then (i32.const 7)) (else (i32.const 9))))
  (func (export "a")
    (drop (call $pick (i32.const 1))) (drop (call $pick (i32.const 1)))
    (drop (call $pick (i32.const 1))) (drop (call $pick (i32.const 0))))
  (func (export "b")
    (local $i i32)
    (loop $l
      (drop (call $pick (i32.const 0)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 5))))))
"#;

/// `(function index, path ID) → count` of every path of `p`.
fn path_counts(p: &Profile) -> BTreeMap<(u32, u64), u64> {
    p.functions.iter().flat_map(|f| f.paths().iter().map(move |x| ((f.index, x.id.0), x.count.0))).collect()
}

/// `(function index, sequence of path IDs) → count` of every k-IPF node of `p`.
fn forest_counts(p: &Profile) -> BTreeMap<(u32, Vec<u64>), u64> {
    let mut out = BTreeMap::new();
    for f in &p.functions {
        if let Some(k) = f.kipf() {
            k.for_each_node(|seq, node| {
                out.insert((f.index, seq.iter().map(|x| x.0).collect()), node.count.0);
            });
        }
    }
    out
}

fn sum_maps<K: Ord + Clone>(a: &BTreeMap<K, u64>, b: &BTreeMap<K, u64>) -> BTreeMap<K, u64> {
    let mut out = a.clone();
    for (k, v) in b {
        *out.entry(k.clone()).or_insert(0) += v;
    }
    out
}

#[test]
fn merged_profiles_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("m.wasm");
    std::fs::write(&wasm, wat::parse_str(TWO_ENTRIES).unwrap()).unwrap();
    let run = |mode: &str, entry: &str, extra: &[&str]| {
        let mut args = vec!["--mode", mode, "--invoke", entry];
        args.extend_from_slice(extra);
        run_in(dir.path(), &args, &wasm, &[]).profile
    };
    let merge = |name: &str, profiles: &[(&str, &Profile)]| -> Profile {
        let mut cmd = pathprof();
        cmd.current_dir(dir.path()).arg("merge");
        for (file, p) in profiles {
            cmd.arg(save(dir.path(), file, p));
        }
        ok(cmd.args(["-o", name]).output().unwrap());
        Profile::from_json(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap()
    };
    // Ball–Larus: the counts of both, and the hand count of `$pick`'s arms.
    let (a, b) = (run("bl", "a", &[]), run("bl", "b", &[]));
    let m = merge("bl.prof", &[("a.prof", &a), ("b.prof", &b)]);
    assert_eq!(path_counts(&m), sum_maps(&path_counts(&a), &path_counts(&b)));
    assert_eq!(m.runs, 2);
    assert_eq!(m.path_executions.0, a.path_executions.0 + b.path_executions.0);
    let pick = &m.functions[0];
    let arms: Vec<u64> = pick.paths().iter().map(|p| p.count.0).collect();
    assert_eq!(arms, [6, 3]);
    let edges: u64 = pick.edges().iter().filter(|e| e.from == 0).map(|e| e.count.0).sum();
    assert_eq!(edges, 9);
    let text = ok(pathprof().current_dir(dir.path()).args(["report", "bl.prof"]).output().unwrap());
    assert!(text.contains("2 runs merged"), "{text}");
    // Three runs, one given twice.
    let m3 = merge("bl3.prof", &[("a.prof", &a), ("b.prof", &b), ("a2.prof", &a)]);
    assert_eq!(path_counts(&m3), sum_maps(&path_counts(&m), &path_counts(&a)));

    // k-BLPP: forests add node by node.
    let (ka, kb) = (run("kbl", "a", &[]), run("kbl", "b", &[]));
    let km = merge("kbl.prof", &[("ka.prof", &ka), ("kb.prof", &kb)]);
    assert_eq!(forest_counts(&km), sum_maps(&forest_counts(&ka), &forest_counts(&kb)));
    assert_eq!(path_counts(&km), path_counts(&m));

    // Events: totals add.
    let (ea, eb) = (run("events", "a", &[]), run("events", "b", &[]));
    let em = merge("ev.prof", &[("ea.prof", &ea), ("eb.prof", &eb)]);
    let totals = |p: &Profile| p.mode.events().unwrap().totals.values().collect::<Vec<u64>>();
    let expected: Vec<u64> = totals(&ea).iter().zip(totals(&eb)).map(|(x, y)| x + y).collect();
    assert_eq!(totals(&em), expected);

    // Preferential: with `a`'s paths interesting, `b`'s `else` arm is residual in neither merge
    // order twice, and residual figures are those of the union.
    let interesting = save(dir.path(), "interesting.prof", &a);
    let arg = interesting.to_str().unwrap();
    let (pa, pb) = (run("ppp", "a", &["--interesting", arg]), run("ppp", "b", &["--interesting", arg]));
    let pm = merge("ppp.prof", &[("pa.prof", &pa), ("pb.prof", &pb)]);
    assert_eq!(path_counts(&pm), sum_maps(&path_counts(&pa), &path_counts(&pb)));
    let info = pm.mode.ppp().unwrap();
    let residual: Vec<_> =
        pm.functions.iter().flat_map(|f| f.paths().iter()).filter(|p| p.interesting == Some(false)).collect();
    assert_eq!(info.residual_paths.0, residual.len() as u64);
    assert_eq!(info.residual_executions.0, residual.iter().map(|p| p.count.0).sum::<u64>());
    assert!(info.residual_paths.0 > 0);
    for f in &pm.functions {
        let (Some(x), Some(y)) = (f.ppp(), pb.functions[f.index as usize].ppp()) else { continue };
        assert!(x.untested.len() >= y.untested.len());
        assert_eq!(x.untested_edges, x.untested.len() as u64);
    }

    // Profiles that do not add up.
    fails_cleanly(dir.path(), &["merge", "a.prof", "ka.prof", "-o", "x.prof"], "not a bl one");
    let k2 = run("kbl", "a", &["-k", "2"]);
    save(dir.path(), "k2.prof", &k2);
    fails_cleanly(dir.path(), &["merge", "ka.prof", "k2.prof", "-o", "x.prof"], "k = 2");
    let other = run_wat(KBL_LOOP, &[], &[]).profile;
    save(dir.path(), "other.prof", &other);
    fails_cleanly(dir.path(), &["merge", "a.prof", "other.prof", "-o", "x.prof"], "another module");
    fails_cleanly(dir.path(), &["merge", "a.prof", "b.prof", "-o", "nowhere/x.prof"], "does not exist");
    for f in ["a2.prof", "k2.prof", "other.prof"] {
        std::fs::remove_file(dir.path().join(f)).unwrap();
    }
}

/// A protobuf message decoded by field number: varints and length-delimited fields (all
/// `profile.proto` uses), packed repeated varints unpacked.
#[derive(Default, Debug)]
struct Message {
    varints: HashMap<u64, Vec<u64>>,
    bytes: HashMap<u64, Vec<Vec<u8>>>,
}

fn varint(buf: &[u8], at: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = buf[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

fn decode(buf: &[u8]) -> Message {
    let mut m = Message::default();
    let mut at = 0;
    while at < buf.len() {
        let key = varint(buf, &mut at);
        match key & 7 {
            0 => m.varints.entry(key >> 3).or_default().push(varint(buf, &mut at)),
            2 => {
                let len = varint(buf, &mut at) as usize;
                m.bytes.entry(key >> 3).or_default().push(buf[at..at + len].to_vec());
                at += len;
            }
            t => panic!("wire type {t} is not used by profile.proto"),
        }
    }
    m
}

impl Message {
    fn int(&self, field: u64) -> u64 {
        self.varints.get(&field).map_or(0, |v| v[0])
    }
    /// A repeated varint field, packed or not.
    fn ints(&self, field: u64) -> Vec<u64> {
        let mut out = self.varints.get(&field).cloned().unwrap_or_default();
        for packed in self.bytes.get(&field).into_iter().flatten() {
            let mut at = 0;
            while at < packed.len() {
                out.push(varint(packed, &mut at));
            }
        }
        out
    }
    fn messages(&self, field: u64) -> Vec<Message> {
        self.bytes.get(&field).into_iter().flatten().map(|b| decode(b)).collect()
    }
}

/// The profile of a C fixture, saved, with the directory it is in.
fn fixture_profile(name: &str, mode: &str) -> (tempfile::TempDir, PathBuf, Profile) {
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path(), &["--mode", mode], &fixture(name), &[]);
    let path = save(dir.path(), "p.prof", &run.profile);
    (dir, path, run.profile)
}

fn cost(f: &FunctionProfile, p: &pathprof_core::profile::PathCount) -> u64 {
    p.count.0 * p.blocks.iter().map(|&b| u64::from(f.blocks[b as usize].ops)).sum::<u64>()
}

#[test]
fn pprof_export_decodes_to_the_paths() {
    let (dir, path, p) = fixture_profile("branches.wasm", "bl");
    let out = dir.path().join("p.pb.gz");
    ok(pathprof().args(["export", "--pprof"]).arg(&out).arg(&path).output().unwrap());
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(std::fs::File::open(&out).unwrap()), &mut raw)
        .unwrap();
    let m = decode(&raw);
    let strings: Vec<String> = m.bytes[&6].iter().map(|b| String::from_utf8(b.clone()).unwrap()).collect();
    assert_eq!(strings[0], "");
    let s = |i: u64| strings[i as usize].as_str();
    let types: Vec<(String, String)> =
        m.messages(1).iter().map(|t| (s(t.int(1)).to_string(), s(t.int(2)).to_string())).collect();
    assert_eq!(types, [("executions".into(), "count".into()), ("operators".into(), "count".into())]);
    assert_eq!(s(m.int(14)), "operators");
    let mapping = &m.messages(3)[0];
    assert_eq!(s(mapping.int(6)), p.module.sha256);
    let functions: HashMap<u64, Message> = m.messages(5).into_iter().map(|f| (f.int(1), f)).collect();
    let locations: HashMap<u64, Message> = m.messages(4).into_iter().map(|l| (l.int(1), l)).collect();
    let samples = m.messages(2);
    let executed: usize = p.functions.iter().map(|f| f.paths().len()).sum();
    assert_eq!(samples.len(), executed);
    for sample in &samples {
        let labels: HashMap<&str, u64> = sample.messages(3).iter().map(|l| (s(l.int(1)), l.int(3))).collect();
        // The leaf location's function names the profile's function.
        let locs: Vec<&Message> = sample.ints(1).iter().map(|id| &locations[id]).collect();
        let leaf_line = &locs[0].messages(4)[0];
        let system = s(functions[&leaf_line.int(1)].int(3));
        let f = function(&p, system);
        let path = f.paths().iter().find(|x| x.id.0 == labels["path"]).unwrap();
        assert_eq!(sample.ints(2), [path.count.0, cost(f, path)]);
        let addresses: Vec<u64> = locs.iter().map(|l| l.int(3)).collect();
        let blocks: Vec<u64> = path.blocks.iter().rev().map(|&b| f.blocks[b as usize].offset).collect();
        assert_eq!(addresses, blocks);
        for (loc, &b) in locs.iter().zip(path.blocks.iter().rev()) {
            let line = &loc.messages(4)[0];
            let want = f.blocks[b as usize].line.as_deref().and_then(|l| l.rsplit_once(':')).unwrap_or(("", "0"));
            assert_eq!(line.int(2).to_string(), want.1);
            assert_eq!(s(functions[&line.int(1)].int(4)), want.0);
        }
    }
}

#[test]
fn speedscope_export_follows_the_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/speedscope-file-format-schema.json")).unwrap();
    // The schema's root is a reference into its definitions.
    let validator = jsonschema::validator_for(&schema).unwrap();
    for (name, mode) in [("branches.wasm", "bl"), ("nested.wasm", "kbl"), ("recursion.wasm", "pep:every:3")] {
        let (_dir, path, p) = fixture_profile(name, mode);
        let text = ok(pathprof().args(["export", "--speedscope", "-"]).arg(&path).output().unwrap());
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
        let total_cost: u64 = p.functions.iter().flat_map(|f| f.paths().iter().map(move |x| cost(f, x))).sum();
        let sum = |i: usize| {
            doc["profiles"][i]["weights"].as_array().unwrap().iter().map(|w| w.as_f64().unwrap()).sum::<f64>()
        };
        assert_eq!(sum(0), total_cost as f64, "{name}");
        assert_eq!(sum(1), p.path_executions.0 as f64, "{name}");
        assert_eq!(doc["profiles"][0]["endValue"].as_f64().unwrap(), total_cost as f64);
    }
    // A document that breaks the schema is caught: the check can fail.
    let bad = serde_json::json!({"$schema": "https://www.speedscope.app/file-format-schema.prof", "shared": {"frames": [{}]}, "profiles": []});
    assert!(!validator.is_valid(&bad));
}

#[test]
fn folded_paths_and_flame_graphs_of_any_profile() {
    let (dir, path, p) = fixture_profile("branches.wasm", "bl");
    let weights = |weight: &str| -> u64 {
        let text = ok(pathprof().args(["export", "--folded", "-", "--weight", weight]).arg(&path).output().unwrap());
        text.lines()
            .map(|l| {
                let (stack, w) = l.rsplit_once(' ').unwrap();
                assert_eq!(stack.matches(';').count(), 1, "{l}");
                w.parse::<u64>().unwrap()
            })
            .sum()
    };
    assert_eq!(weights("count"), p.path_executions.0);
    let total_cost: u64 = p.functions.iter().flat_map(|f| f.paths().iter().map(move |x| cost(f, x))).sum();
    assert_eq!(weights("cost"), total_cost);
    let svg = dir.path().join("f.svg");
    ok(pathprof().args(["export", "--svg"]).arg(&svg).arg(&path).output().unwrap());
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("paths of branches.wasm (bl profile)") && svg.contains("classify [9]"), "no title");
    fails_cleanly(dir.path(), &["export", "--folded", "-", "--weight", "size", "p.prof"], "unknown weight");
    fails_cleanly(dir.path(), &["export", "--pprof", "-", "p.prof"], "give it a file");
    fails_cleanly(dir.path(), &["export", "--svg", "nowhere/f.svg", "p.prof"], "does not exist");
}

/// Files are written with the usual mode of new files: 0666 less the umask.
#[test]
fn files_get_the_usual_mode() {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::PermissionsExt;
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let Some(umask) = status.lines().find_map(|l| l.strip_prefix("Umask:")) else { return };
        let umask = u32::from_str_radix(umask.trim(), 8).unwrap();
        let (dir, path, _) = fixture_profile("branches.wasm", "bl");
        let svg = dir.path().join("f.svg");
        ok(pathprof().args(["export", "--svg"]).arg(&svg).arg(&path).output().unwrap());
        let written = dir.path().join("profile-mode.prof");
        ok(pathprof().args(["merge"]).arg(&path).arg("-o").arg(&written).output().unwrap());
        for file in [&svg, &written] {
            let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o666 & !umask, "{}", file.display());
        }
    }
}

#[test]
fn html_page_renders_headless_without_errors() {
    let (dir, path, p) = fixture_profile("branches.wasm", "bl");
    let page = dir.path().join("report.html");
    ok(pathprof()
        .args(["report", "--top", "7", "--source-root"])
        .arg(fixture(""))
        .arg("--html")
        .arg(&page)
        .arg(&path)
        .output()
        .unwrap());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"), "self-contained");
    assert!(html.contains("for (i = 0; i &lt; n; i++) {"), "source text");
    let Some(chromium) = browser() else {
        eprintln!("skipped: no headless browser");
        return;
    };
    let profile_dir = tempfile::tempdir().unwrap();
    let out = headless(&chromium, profile_dir.path())
        .arg("--virtual-time-budget=5000")
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && dom.contains("data-ready=\"1\""), "not rendered: {dom:.2000}");
    assert!(!dom.contains("data-errors"), "script errors: {dom:.2000}");
    let executed = p.functions.iter().filter(|f| !f.paths().is_empty()).count();
    assert!(dom.contains(&format!("data-functions=\"{executed}\"")), "functions table");
    assert!(dom.contains("data-paths=\"7\""), "hot paths");
}

#[test]
fn report_options_fail_cleanly() {
    let (dir, _path, _) = fixture_profile("branches.wasm", "bl");
    fails_cleanly(dir.path(), &["report", "--by", "load", "p.prof"], "events");
    fails_cleanly(dir.path(), &["report", "--html", "nowhere/r.html", "p.prof"], "does not exist");
}

/// Every part on a corpus program (bz2, with DWARF lines): two runs merged add up, the merged
/// profile exports to pprof and speedscope that read back to its paths, and the source and HTML
/// reports name its lines.
#[test]
fn corpus_program_merged_exported_and_reported() {
    let Some(corpus) = common::corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let wasm = corpus.join("bz2/benchmark.wasm");
    let cwd = wasm.parent().unwrap();
    let (a, b) = (run_in(cwd, &["--dir", "."], &wasm, &[]).profile, run_in(cwd, &["--dir", "."], &wasm, &[]).profile);
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (save(dir.path(), "a.prof", &a), save(dir.path(), "b.prof", &b));
    let merged_path = dir.path().join("ab.prof");
    ok(pathprof().arg("merge").arg(&pa).arg(&pb).arg("-o").arg(&merged_path).output().unwrap());
    let merged = Profile::from_json(&std::fs::read_to_string(&merged_path).unwrap()).unwrap();
    assert_eq!(merged.runs, 2);
    assert_eq!(path_counts(&merged), sum_maps(&path_counts(&a), &path_counts(&b)));

    let pb_gz = dir.path().join("m.pb.gz");
    let ss = dir.path().join("m.speedscope.json");
    ok(pathprof()
        .args(["export", "--pprof"])
        .arg(&pb_gz)
        .arg("--speedscope")
        .arg(&ss)
        .arg(&merged_path)
        .output()
        .unwrap());
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(std::fs::File::open(&pb_gz).unwrap()), &mut raw)
        .unwrap();
    let samples = decode(&raw).messages(2);
    let distinct: usize = merged.functions.iter().map(|f| f.paths().len()).sum();
    assert_eq!(samples.len(), distinct);
    let executions: u64 = samples.iter().map(|s| s.ints(2)[0]).sum();
    assert_eq!(executions, merged.path_executions.0);
    let total_cost: u64 = merged.functions.iter().flat_map(|f| f.paths().iter().map(move |x| cost(f, x))).sum();
    assert_eq!(samples.iter().map(|s| s.ints(2)[1]).sum::<u64>(), total_cost);
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/speedscope-file-format-schema.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&ss).unwrap()).unwrap();
    assert!(jsonschema::validator_for(&schema).unwrap().is_valid(&doc));

    let source = ok(pathprof().args(["report", "--source", "--top", "3"]).arg(&merged_path).output().unwrap());
    assert!(source.contains("benchmark.c:"), "{source}");
    let html = dir.path().join("m.html");
    ok(pathprof().args(["report", "--html"]).arg(&html).arg(&merged_path).output().unwrap());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("benchmark.c:") && page.contains("over 2 runs"), "{page:.500}");
}
