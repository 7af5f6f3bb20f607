//! The hardware path profiler's simulator [PPP07 ch. 5] on real runs (`pathprof hpp`).
//!
//! * With the Ball–Larus mapping, a stack that never overflows and a table with room for every
//!   path, the table's counts equal the `bl` profile of the same program exactly: each `bl` path,
//!   regenerated from its ID, is turned here into its descriptor (start address, branches,
//!   outcomes) and split as the hardware splits long paths; the simulator gets its paths from the
//!   branch trace instead. On small modules and on the deterministic corpus programs.
//! * The program's output is unchanged under the trace.
//! * The command's figures and errors.

mod common;

use common::{corpus_config, corpus_dir, expected, fails_cleanly, pathprof, DETERMINISTIC};
use pathprof::hpp::{simulate, HppRun, HppSettings};
use pathprof::{Inputs, Mode, Prepared, RunConfig};
use pathprof_core::dag::DagEdgeKind;
use pathprof_core::hpp::{Descriptor, HptConfig, IndexFn, Mapping, Replacement, SimulatorOptions};
use pathprof_core::regen::{self, PathPoint};
use pathprof_wasm::branches::{module_branches, EdgeBranch};
use std::collections::BTreeMap;

const MAX_LENGTH: u8 = 32;

/// A table that holds every path of these programs without evicting one.
fn roomy() -> HppSettings {
    HppSettings {
        simulator: SimulatorOptions {
            mapping: Mapping::BallLarus,
            stack_capacity: None,
            max_length: MAX_LENGTH,
            tables: vec![HptConfig { entries: 1 << 20, ways: 32, replacement: Replacement::Lfu, index: IndexFn::Xor }],
            window: 0,
            ..SimulatorOptions::default()
        },
        ..HppSettings::default()
    }
}

/// The descriptors of the paths of a `bl` run of `bytes`, with their counts.
fn oracle(bytes: &[u8], config: &RunConfig) -> BTreeMap<Descriptor, u64> {
    let prepared = Prepared::new(bytes, "program", &Mode::parse("bl").unwrap(), &Inputs::default()).unwrap();
    let engine = pathprof_runtime::engine().unwrap();
    let run = prepared.run(&engine, config).unwrap();
    let profile = prepared.profile(&run, config).unwrap();
    let map = prepared.map.as_ref().unwrap();
    let (info, branches) = module_branches(bytes).unwrap();
    let mut want = BTreeMap::new();
    for f in &profile.functions {
        let Some(fb) = branches[(f.index - info.num_imported_funcs) as usize].as_ref() else { continue };
        let plan = &map.functions.iter().find(|m| m.index == f.index).unwrap().probes().unwrap().plan;
        assert!(plan.overflow_cuts.is_empty(), "function {} is cut", f.index);
        let offset = |b: u32| fb.blocks[b as usize].offset;
        for p in f.paths() {
            let path = regen::regenerate(&plan.dag, &plan.numbering, p.id.0).unwrap();
            let start = match path.start {
                PathPoint::Boundary | PathPoint::Throw => offset(fb.entry_block),
                PathPoint::Block(h) => offset(h),
            };
            let mut pieces = Vec::new();
            let mut d = Descriptor::at(start);
            let n = path.edges.len();
            for (i, &e) in path.edges.iter().enumerate() {
                let e = match plan.dag.edges[e as usize].kind {
                    // The virtual entry's edge into the entry block stands for no CFG edge.
                    DagEdgeKind::Real(e) | DagEdgeKind::End(e, _) if (e as usize) < fb.edges.len() => e as usize,
                    _ => continue,
                };
                let (outcome, width) = fb.edges[e].outcome();
                let (outcome, width) = match fb.targets[e] {
                    // A return counts in the path's events only [PPP07 Table 5.1].
                    None => continue,
                    Some(c) if fb.loop_headers[c as usize] => (if width == 0 { 1 } else { outcome }, width.max(1)),
                    Some(_) if fb.edges[e] == EdgeBranch::FallThrough => continue,
                    Some(_) => (outcome, width),
                };
                d = d.then(outcome, width);
                if i + 1 < n && (d.length >= MAX_LENGTH || d.bits > 96) {
                    pieces.push(d);
                    d = Descriptor::at(offset(fb.targets[e].unwrap()));
                }
            }
            pieces.push(d);
            for d in pieces {
                *want.entry(d).or_default() += p.count.0;
            }
        }
    }
    want
}

/// The simulated run of `bytes` with a roomy table, its table checked against the oracle.
fn check(name: &str, bytes: &[u8], config: &RunConfig) -> HppRun {
    let want = oracle(bytes, config);
    let hpp = simulate(bytes, name, &roomy(), config).unwrap();
    let r = &hpp.report;
    assert_eq!(r.tables[0].stats.evictions, 0, "{name}: the table has room for every path");
    assert_eq!((r.trace.unmatched_calls, r.trace.stray_items, r.open_paths), (0, 0, 0), "{name}");
    let got: BTreeMap<Descriptor, u64> = r.table.iter().copied().collect();
    let exact: BTreeMap<Descriptor, u64> = r.exact.iter().copied().collect();
    assert_eq!(got, exact, "{name}: a table with room for every path is the exact profile");
    if got != want {
        let missing: Vec<_> = want.iter().filter(|(d, c)| got.get(d) != Some(c)).take(5).collect();
        let extra: Vec<_> = got.iter().filter(|(d, c)| want.get(d) != Some(c)).take(5).collect();
        panic!(
            "{name}: {} paths in bl, {} in the table; bl's not matched: {missing:?}; table's: {extra:?}",
            want.len(),
            got.len()
        );
    }
    assert!((r.tables[0].complete_overlap - 100.0).abs() < 1e-6);
    hpp
}

const SMALL: &str = r#"
(module
  (memory 1)
  (func $pick (param $x i32) (result i32)
    (block $c (block $b (block $a
      (br_table $a $b $c $a (i32.rem_u (local.get $x) (i32.const 4))))
      (return (i32.const 10)))
      (return (i32.load (i32.const 0))))
    (i32.const 30))
  (func $fib (param $n i32) (result i32)
    (if (result i32) (i32.lt_u (local.get $n) (i32.const 2))
      (then (local.get $n))
      (else (i32.add (call $fib (i32.sub (local.get $n) (i32.const 1)))
                     (call $fib (i32.sub (local.get $n) (i32.const 2)))))))
  (func $long (param $x i32) (result i32)
    (local $i i32)
    (loop $l
      ;; forty conditional branches in a row: descriptors split at 32
      (local.set $x (i32.add (local.get $x) (i32.const 1)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -1)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -2))) (br_if 0 (i32.eq (local.get $x) (i32.const -3)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -4))) (br_if 0 (i32.eq (local.get $x) (i32.const -5)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -6))) (br_if 0 (i32.eq (local.get $x) (i32.const -7)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -8))) (br_if 0 (i32.eq (local.get $x) (i32.const -9)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -10))) (br_if 0 (i32.eq (local.get $x) (i32.const -11)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -12))) (br_if 0 (i32.eq (local.get $x) (i32.const -13)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -14))) (br_if 0 (i32.eq (local.get $x) (i32.const -15)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -16))) (br_if 0 (i32.eq (local.get $x) (i32.const -17)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -18))) (br_if 0 (i32.eq (local.get $x) (i32.const -19)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -20))) (br_if 0 (i32.eq (local.get $x) (i32.const -21)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -22))) (br_if 0 (i32.eq (local.get $x) (i32.const -23)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -24))) (br_if 0 (i32.eq (local.get $x) (i32.const -25)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -26))) (br_if 0 (i32.eq (local.get $x) (i32.const -27)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -28))) (br_if 0 (i32.eq (local.get $x) (i32.const -29)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -30))) (br_if 0 (i32.eq (local.get $x) (i32.const -31)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -32))) (br_if 0 (i32.eq (local.get $x) (i32.const -33)))
      (br_if 0 (i32.eq (local.get $x) (i32.const -34))) (br_if 0 (i32.eq (local.get $x) (i32.const -35)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 5))))
    (local.get $x))
  (func (export "_start")
    (local $i i32)
    (loop $l
      (drop (call $pick (local.get $i)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 11))))
    (drop (call $fib (i32.const 9)))
    (drop (call $long (i32.const 0)))))
"#;

#[test]
fn ball_larus_mapping_counts_the_paths_of_bl_on_small_modules() {
    let config = RunConfig::default();
    for (name, wat) in [("small", SMALL), ("kbl_loop", common::KBL_LOOP)] {
        let bytes = wat::parse_str(wat).unwrap();
        let hpp = check(name, &bytes, &config);
        assert!(hpp.report.distinct_paths >= 5, "{name}: {}", hpp.report.distinct_paths);
        if name == "small" {
            // The forty-branch path is split: the simulator saw splits.
            assert!(hpp.report.stack.splits >= 5, "{:?}", hpp.report.stack);
        }
    }
}

#[test]
fn ball_larus_mapping_counts_the_paths_of_bl_on_the_corpus() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    for name in DETERMINISTIC {
        let wasm = dir.join(name);
        let bytes = std::fs::read(&wasm).unwrap();
        let hpp = check(name, &bytes, &corpus_config(&wasm));
        assert_eq!(hpp.outcome.exit_code, 0, "{name}");
        if let Some(file) = expected(&wasm, "stdout") {
            assert!(hpp.outcome.stdout == std::fs::read(file).unwrap(), "{name}: its output changed under the trace");
        }
        eprintln!("{name}: {} paths", hpp.report.distinct_paths);
    }
}

#[test]
fn the_command_prints_its_figures_and_a_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("small.wasm");
    std::fs::write(&wasm, wat::parse_str(SMALL).unwrap()).unwrap();
    let svg = dir.path().join("sweep.svg");
    let json = dir.path().join("hpp.json");
    let out =
        pathprof().args(["hpp", "--sweep", "--svg"]).arg(&svg).arg("--json").arg(&json).arg(&wasm).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("complete overlap"), "{err}");
    assert!(err.contains("sweep:"), "{err}");
    assert_eq!(err.lines().filter(|l| l.contains("-way lfu")).count(), 41, "{err}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.matches("<polyline").count() == 5);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["tables"].as_array().unwrap().len(), 41);
    assert!(v["branches"].as_u64().unwrap() > 100);
}

#[test]
fn bad_options_are_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("small.wasm");
    std::fs::write(&wasm, wat::parse_str(SMALL).unwrap()).unwrap();
    for (args, says) in [
        (&["--ways", "3"][..], "not a multiple"),
        (&["--replacement", "fifo"][..], "lfu or lru"),
        (&["--extend", "loops:0"][..], "loops:N or calls:N"),
        (&["--mapping", "wpp", "--extend", "calls:1"][..], "--mapping wpp"),
        (&["--svg", "x.svg"][..], "--sweep"),
        (&["--metric", "cycles"][..], "frequency, instructions or memory"),
    ] {
        let args: Vec<&str> = ["hpp"].iter().chain(args).chain(&["small.wasm"]).copied().collect();
        fails_cleanly(dir.path(), &args, says);
    }
}
