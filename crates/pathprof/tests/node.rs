//! Profiling under Node: programs of ../shared/corpus whose paths are the same in every run,
//! instrumented with `pathprof instrument`, run under Node's WASI with pathprof's JavaScript host
//! (`js/pathprof-node.mjs`), and decoded with `pathprof decode`, give the profile `pathprof run`
//! gives — the same paths, counts, edges, events, k-iteration path forests, interprocedural path
//! segments and open activations — in every mode the host runs; the programs print what they
//! should. And `scripts/hints-v8.mjs` tells a hinted module's changed code from an unhinted one's.
//!
//! Needs a Node whose V8 has multi-memory (Node 22 or later): `PATHPROF_NODE`, else `node` on the
//! path. Skipped, with a message, when there is none or the corpus is absent — unless
//! `PATHPROF_REQUIRE_NODE` is set (as CI sets it, having installed one), when its absence fails.

mod common;

use common::corpus_dir;
use common::elsewhere::{exits, half_interesting, js, Case};
use pathprof_core::profile::Profile;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `(module (memory 0) (memory 0))`: what a Node without multi-memory refuses.
const TWO_MEMORIES: &str = "[0,97,115,109,1,0,0,0,5,5,2,0,0,0,0]";

/// Short programs of the corpus whose paths do not vary from run to run.
const PROGRAMS: &[&str] = &[
    "shootout/shootout-ackermann.wasm",
    "shootout/shootout-gimli.wasm",
    "shootout/shootout-memmove.wasm",
    "shootout/shootout-ratelimit.wasm",
];

/// A Node with multi-memory, or why there is none.
fn node() -> Result<PathBuf, String> {
    let node = std::env::var_os("PATHPROF_NODE").map_or_else(|| PathBuf::from("node"), PathBuf::from);
    let probe = format!("process.exit(WebAssembly.validate(new Uint8Array({TWO_MEMORIES})) ? 0 : 3)");
    match Command::new(&node).args(["-e", &probe]).output() {
        Err(e) => Err(format!("no Node ({}: {e})", node.display())),
        Ok(o) if o.status.code() == Some(3) => Err(format!("{} has no WebAssembly multi-memory", node.display())),
        Ok(o) if !o.status.success() => {
            Err(format!("{} fails: {}", node.display(), String::from_utf8_lossy(&o.stderr)))
        }
        Ok(_) => Ok(node),
    }
}

/// A Node to run the tests with, or `None` (with a message) where the tests skip.
fn node_or_skip() -> Option<PathBuf> {
    match node() {
        Ok(node) => Some(node),
        Err(why) if std::env::var_os("PATHPROF_REQUIRE_NODE").is_some() => {
            panic!("PATHPROF_REQUIRE_NODE is set, but {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// Profiles `wasm` in `mode` with `pathprof run` and under Node, and requires the same profile.
fn same_profile_under_node(node: &Path, wasm: &Path, mode: &str, interesting: Option<&Path>) -> Profile {
    same_ending_under_node(node, wasm, mode, interesting, 0)
}

/// [`same_profile_under_node`] for a program that exits with `status` (134: it traps).
fn same_ending_under_node(node: &Path, wasm: &Path, mode: &str, interesting: Option<&Path>, status: i32) -> Profile {
    let case = Case::new(wasm, mode, interesting, status);
    let stdout = exits(
        Command::new(node)
            .current_dir(wasm.parent().unwrap())
            .arg("--no-warnings")
            .arg(js("pathprof-node.mjs"))
            .arg(&case.map)
            .arg(&case.instrumented)
            .arg("-o")
            .arg(case.dump())
            .args(["--dir", "."]),
        &format!("{} under Node", case.name),
        status,
    );
    case.same_as_run(&stdout)
}

#[test]
fn node_profiles_equal_embedded_ones() {
    let Some(node) = node_or_skip() else { return };
    let Some(corpus) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    for program in PROGRAMS {
        let wasm = corpus.join(program);
        same_profile_under_node(&node, &wasm, "bl", None);
        for mode in ["kbl:4", "events", "events:pd", "events:dec", "pep:every:7", "ippp", "ippp:2", "ips:2"] {
            same_profile_under_node(&node, &wasm, mode, None);
        }
        // Half the paths interesting: the others are residual, counted by the host's import.
        let tmp = tempfile::tempdir().unwrap();
        let interesting = half_interesting(&wasm, tmp.path());
        let ppp = same_profile_under_node(&node, &wasm, "ppp", Some(&interesting));
        let residual = ppp.functions.iter().flat_map(|f| f.paths()).filter(|p| p.interesting == Some(false)).count();
        assert!(residual > 0, "{program}: some paths are residual");
        // The run's own segments interesting: its supergraph paths count in slots.
        let segments = tmp.path().join("ips.json");
        let mut run = common::pathprof();
        run.current_dir(wasm.parent().unwrap()).args(["run", "--quiet", "--mode", "ips:1", "--dir", ".", "-o"]);
        exits(run.arg(&segments).arg(wasm.file_name().unwrap()), "run --mode ips:1", 0);
        let slots = same_profile_under_node(&node, &wasm, "ippp:slots", Some(&segments));
        let facts = pathprof::modes::ips::facts(&slots.mode).unwrap();
        assert!(facts.slots.is_some_and(|s| s.path_ends.0 > 0), "{program}: path ends counted in slots");
    }
}

/// `many` calls `bar` (2^32 paths from its entry) 257 times on one path: one call adds its digit
/// to the key, one to each of the 255 high keys, which the module writes to the profiler's memory
/// before it passes the ID to `count_path`, and one is dropped. The JavaScript host counts the IDs of 256 words as `pathprof
/// run` counts them.
#[test]
fn supergraph_ids_of_several_words_are_counted_as_pathprof_run_counts_them() {
    use pathprof::modes::ips::{facts, IpsStep};
    let Some(node) = node_or_skip() else { return };
    let (_dir, wasm) = common::wat_module(&common::many_calls_module(257, 32));
    let p = same_profile_under_node(&node, &wasm, "ippp", None);
    let f = facts(&p.mode).unwrap();
    let many = p.functions.iter().find(|f| f.name.as_deref() == Some("many")).unwrap().index;
    let rooted = |s: &&pathprof::modes::ips::IpsCount| matches!(&s.steps[0], IpsStep::Sub(r) if r.function == many);
    // Each of the 256 calls that add a digit, in many's two runs.
    assert_eq!(f.ips.iter().filter(rooted).count(), 2 * 256);
    assert_eq!(f.not_counted.as_ref().map(|n| n.executions.0), Some(2));
}

/// Activations left open by `proc_exit` and by a trap, three calls deep: `$outer` → `$middle` →
/// `$inner`, each with a loop, under `_start`.
const DEEP_ENDING: &str = r#"
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (memory (export "memory") 1)
  (global $how (mut i32) (i32.const 0))
  (func $inner (param $n i32)
    (loop $l
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $l (i32.gt_s (local.get $n) (i32.const 0))))
    (if (global.get $how) (then unreachable))
    (call $proc_exit (i32.const 3)))
  (func $middle (param $n i32)
    (if (i32.gt_s (local.get $n) (i32.const 5)) (then (call $inner (local.get $n))) (else (call $inner (i32.const 9)))))
  (func $outer (param $n i32)
    (loop $l
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br_if $l (i32.lt_s (local.get $n) (i32.const 4))))
    (call $middle (local.get $n)))
  (func (export "_start") (call $outer (i32.const 0))))
"#;

#[test]
fn activations_left_open_are_counted_as_pathprof_run_counts_them() {
    let Some(node) = node_or_skip() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let exiting = tmp.path().join("exits.wasm");
    std::fs::write(&exiting, wat::parse_str(DEEP_ENDING).unwrap()).unwrap();
    // The same program with `$how` set: it traps where the other exits.
    let trapping = tmp.path().join("traps.wasm");
    std::fs::write(
        &trapping,
        wat::parse_str(DEEP_ENDING.replace("(mut i32) (i32.const 0)", "(mut i32) (i32.const 1)")).unwrap(),
    )
    .unwrap();
    for mode in ["bl", "kbl:2", "events"] {
        let exited = same_ending_under_node(&node, &exiting, mode, None, 3);
        assert_eq!((exited.exit_code, exited.open_activations_at_exit), (3, 4), "{mode}");
        let trapped = same_ending_under_node(&node, &trapping, mode, None, 134);
        assert_eq!(trapped.open_activations_at_exit, 4, "{mode}");
    }
}

/// `run` calls the host's `back`, which calls back into `cb` (whose first path becomes the head of
/// `run`'s call) and then into `other`, whose own call of `h` arms and uses the head word after `cb`
/// has published its head; `run` also calls through a table, which `back` makes read its digit in
/// the whole head space. Driven by a script of its own (the module is no WASI program).
const CALLS_BACK: &str = r#"
(module
  (import "env" "back" (func $back (param i32)))
  (global $acc (mut i32) (i32.const 0))
  (type $t (func (param i32)))
  (table 1 funcref)
  (elem (i32.const 0) $in_table)
  (func $cb (export "cb") (param $x i32)
    (if (i32.and (local.get $x) (i32.const 1))
      (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))
      (else (global.set $acc (i32.mul (global.get $acc) (i32.const 3))))))
  (func $h (param $x i32)
    (if (i32.and (local.get $x) (i32.const 2))
      (then (global.set $acc (i32.xor (global.get $acc) (i32.const 5))))
      (else (global.set $acc (i32.sub (global.get $acc) (i32.const 7))))))
  (func $other (export "other") (param $x i32) (call $h (local.get $x)))
  (func $in_table (param $x i32)
    (if (i32.and (local.get $x) (i32.const 4))
      (then (global.set $acc (i32.add (global.get $acc) (i32.const 11))))))
  (func $run (export "run") (param $n i32) (result i32) (local $i i32)
    (loop $top
      (call $back (local.get $i))
      (call_indirect (type $t) (local.get $i) (i32.const 0))
      (br_if $top (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
    (global.get $acc)))
"#;

/// Runs `run(n)` of the module instrumented as `case` under Node, with `back` calling `cb` and then
/// `other`, and decodes the dump.
fn calls_back_under_node(node: &Path, case: &Case, n: u32) -> Profile {
    let script = case.tmp.path().join("drive.mjs");
    std::fs::write(
        &script,
        format!(
            "import {{ readFileSync, writeFileSync }} from 'node:fs';
import {{ pathToFileURL }} from 'node:url';
const [hostModule, map, wasm, out] = process.argv.slice(2);
const {{ PathprofHost }} = await import(pathToFileURL(hostModule).href);
const host = new PathprofHost(readFileSync(map, 'utf8'));
let e = null;
const back = (x) => {{ e.cb(x); e.other(x); }};
({{ instance: {{ exports: e }} }} = await host.instantiate(readFileSync(wasm), {{ env: {{ back }} }}));
e.run({n});
writeFileSync(out, await host.dump({{ exitCode: 0 }}));
"
        ),
    )
    .unwrap();
    exits(
        Command::new(node)
            .arg("--no-warnings")
            .arg(&script)
            .arg(js("pathprof-host.mjs"))
            .arg(&case.map)
            .arg(&case.instrumented)
            .arg(case.dump()),
        &format!("{} under Node", case.name),
        0,
    );
    let decoded = case.tmp.path().join("decoded.json");
    let mut decode = common::pathprof();
    decode.arg("decode").arg(&case.map).arg(case.dump()).arg("-o").arg(&decoded);
    exits(&mut decode, &format!("decode {}", case.name), 0);
    common::elsewhere::read_profile(&decoded)
}

/// A host function that calls back into the program (what Emscripten's glue does) hands the call
/// to the function it calls first, whose head outlives the calls that follow before the call
/// returns: `ippp` counts the segments `ips:1` counts under the same host.
#[test]
fn a_host_function_calling_back_hands_its_call_to_the_function_it_calls() {
    use pathprof::modes::ips::{facts, IpsStep};
    let Some(node) = node_or_skip() else { return };
    let (_dir, wasm) = common::wat_module(CALLS_BACK);
    let [ips, ippp] = ["ips:1", "ippp"].map(|mode| calls_back_under_node(&node, &Case::new(&wasm, mode, None, 0), 8));
    let (a, b) = (facts(&ips.mode).unwrap(), facts(&ippp.mode).unwrap());
    assert_eq!((b.mismatched.0, b.not_counted.as_ref()), (0, None));
    let segments = |f: &pathprof::modes::ips::IpsFacts| -> std::collections::HashMap<Vec<IpsStep>, u64> {
        f.ips.iter().map(|s| (s.steps.clone(), s.count.0)).collect()
    };
    assert_eq!(segments(&b), segments(&a), "the segments are ips:1's");
    let name = |i: u32| ippp.functions.iter().find(|f| f.index == i).and_then(|f| f.name.clone()).unwrap_or_default();
    // run's two calls, each through one of two paths of its callee, over i = 0..8.
    let mut by_head: std::collections::BTreeMap<(String, u64), u64> = std::collections::BTreeMap::new();
    for s in &b.ips {
        if let [IpsStep::Sub(root), _, IpsStep::Sub(callee), ..] = s.steps.as_slice() {
            if name(root.function) == "run" {
                *by_head.entry((name(callee.function), callee.path.0)).or_default() += s.count.0;
            }
        }
    }
    let mut from_run: std::collections::BTreeMap<String, Vec<u64>> = std::collections::BTreeMap::new();
    for ((callee, _), n) in by_head {
        from_run.entry(callee).or_default().push(n);
    }
    let want = [("cb".to_string(), vec![4, 4]), ("in_table".to_string(), vec![4, 4])];
    assert_eq!(from_run, want.into_iter().collect(), "run's calls are taken by cb and in_table");
    // Every head word is put back around the host's call: segments of 2 calls are ips:2's.
    let [ips, ippp] = ["ips:2", "ippp:2"].map(|mode| calls_back_under_node(&node, &Case::new(&wasm, mode, None, 0), 8));
    let (a, b) = (facts(&ips.mode).unwrap(), facts(&ippp.mode).unwrap());
    assert_eq!((b.k, b.mismatched.0, b.not_counted.as_ref()), (2, 0, None));
    assert_eq!(segments(&b), segments(&a), "the segments are ips:2's");
}

/// `scripts/hints-v8.mjs` times a module with V8's branch hinting on and off and says whether V8
/// compiled other code: it did for the module hinted from its profile, and did not for the same
/// module without hints (the control). Skipped where the Node prints no compiled code.
#[test]
fn hints_v8_says_whether_v8_compiled_other_code_with_the_hints() {
    let Some(node) = node_or_skip() else { return };
    // BRANCHY's loop, 100,000 times round, as a WASI command.
    let start = r#"(module (memory (export "memory") 1) (func (export "_start") (drop (call $f (i32.const 100000))))"#;
    let (dir, wasm) = common::wat_module(&common::BRANCHY.replacen("(module", start, 1));
    let (profile, hinted) = (dir.path().join("p.json"), dir.path().join("hinted.wasm"));
    exits(common::pathprof().args(["run", "--quiet", "--mode", "bl", "-o"]).arg(&profile).arg(&wasm), "run", 0);
    exits(common::pathprof().arg("hint").arg(&profile).arg(&wasm).arg("-o").arg(&hinted), "hint", 0);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/hints-v8.mjs");
    let changed = |module: &Path| -> serde_json::Value {
        let what = format!("hints-v8.mjs on {}", module.display());
        let line =
            String::from_utf8(exits(Command::new(&node).arg(&script).args(["--runs", "1"]).arg(module), &what, 0))
                .unwrap();
        if line.starts_with("skipped:") {
            return serde_json::Value::Null;
        }
        let report: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        report["code_changed"].clone()
    };
    match (changed(&hinted), changed(&wasm)) {
        (serde_json::Value::Null, serde_json::Value::Null) => {
            eprintln!("skipped: {} prints no compiled code or has no branch hinting", node.display())
        }
        (hinted, plain) => assert_eq!((hinted, plain), (true.into(), false.into()), "code_changed: hinted, unhinted"),
    }
}
