//! Branch hints from a profile (`pathprof hint`): the section's bytes, checked against the module's
//! own operators; the module otherwise byte for byte as it was; hints a module had kept unless the
//! profile contradicts them; hinted programs that run as before with hinting on and off; and hints
//! from sampled profiles that agree with those from exact ones.

mod common;

use common::{corpus_config, corpus_dir, pathprof, BRANCHY};
use pathprof::hint::{hint, HintOptions};
use pathprof::{Inputs, Mode, Prepared, RunConfig};
use pathprof_core::profile::Profile;
use pathprof_runtime::{EngineOptions, NoCollector};
use pathprof_wasm::hints::{read_hints, write_hints, Hints, BRANCH_HINT_SECTION};
use std::collections::BTreeMap;

/// The offset, from its body's start, of every `br_if` and `if` of every defined function, read
/// with wasmparser's operator reader (and the function's index).
fn branch_offsets(module: &[u8]) -> BTreeMap<u32, Vec<(u32, &'static str)>> {
    let mut out = BTreeMap::new();
    let mut imports = 0;
    let mut k = 0;
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        match payload.unwrap() {
            wasmparser::Payload::ImportSection(r) => {
                imports +=
                    r.into_imports().filter(|i| matches!(i.as_ref().unwrap().ty, wasmparser::TypeRef::Func(_))).count()
                        as u32;
            }
            wasmparser::Payload::CodeSectionEntry(body) => {
                let start = body.range().start;
                let mut ops = body.get_operators_reader().unwrap();
                let mut found = Vec::new();
                while !ops.eof() {
                    let (op, at) = ops.read_with_offset().unwrap();
                    match op {
                        wasmparser::Operator::BrIf { .. } => found.push(((at - start) as u32, "br_if")),
                        wasmparser::Operator::If { .. } => found.push(((at - start) as u32, "if")),
                        _ => {}
                    }
                }
                out.insert(imports + k, found);
                k += 1;
            }
            _ => {}
        }
    }
    out
}

fn profile_of(bytes: &[u8], mode: &str, invoke: Option<(&str, &str)>) -> Profile {
    let mut config = RunConfig { args: vec!["m.wasm".into()], capture_output: true, ..RunConfig::default() };
    if let Some((f, arg)) = invoke {
        config.invoke = Some(f.into());
        config.args.push(arg.into());
    }
    pathprof::profile(bytes, &Mode::parse(mode).unwrap(), &config).unwrap()
}

/// The module's bytes without its branch hint section.
fn without_hints(module: &[u8]) -> Vec<u8> {
    write_hints(module, &Hints::new()).unwrap()
}

#[test]
fn hints_name_the_branches_the_profile_saw_biased() {
    let bytes = wat::parse_str(BRANCHY).unwrap();
    let profile = profile_of(&bytes, "bl", Some(("f", "1000")));
    let hinted = hint(&bytes, &profile, &HintOptions { min_count: 1, min_bias: 0.9 }).unwrap();
    let offsets = branch_offsets(&bytes);
    let ops = &offsets[&0];
    assert_eq!(ops.iter().map(|(_, op)| *op).collect::<Vec<_>>(), ["if", "if", "br_if"]);
    // The loop goes round: its br_if is likely taken; the reset is never taken; the third-of-the-time
    // `if` is not biased enough.
    let expected: BTreeMap<u32, bool> = [(ops[1].0, false), (ops[2].0, true)].into_iter().collect();
    let read = read_hints(&hinted.bytes).unwrap();
    assert_eq!(read, [(0, expected)].into_iter().collect::<Hints>());
    assert_eq!((hinted.branches, hinted.ran, hinted.hinted, hinted.kept, hinted.dropped), (3, 3, 2, 0, 0));
    // The section is well formed, comes before the code section, and is the only change.
    wasmparser::Validator::new().validate_all(&hinted.bytes).unwrap();
    let mut order = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(&hinted.bytes) {
        match payload.unwrap() {
            wasmparser::Payload::CustomSection(c) if c.name() == BRANCH_HINT_SECTION => order.push("hints"),
            wasmparser::Payload::CodeSectionStart { .. } => order.push("code"),
            _ => {}
        }
    }
    assert_eq!(order, ["hints", "code"]);
    assert_eq!(without_hints(&hinted.bytes), bytes);
    // Higher thresholds hint fewer branches.
    let strict = hint(&bytes, &profile, &HintOptions { min_count: 2000, min_bias: 0.9 }).unwrap();
    assert_eq!((strict.hinted, strict.bytes == bytes), (0, true));
    // A profile of another module is refused.
    let other = wat::parse_str("(module (func (export \"f\") (param i32) (result i32) (local.get 0)))").unwrap();
    assert!(hint(&other, &profile, &HintOptions::default()).unwrap_err().to_string().contains("another module"));
}

/// A loop over `i` whose body is an `if`-`else` made of blocks, as compilers emit it: even `i` leave
/// the inner block by a `br_if` (half the time) and jump to the join; odd `i` reach a `br_if` to the
/// join that is never taken, then fall through to it. After the join, a `br_if` out of the loop
/// that is never taken either, to where the loop's own exit also goes (once per call).
const JOIN: &str = r#"
(module
  (func $f (export "f") (param $n i32) (result i32) (local $i i32) (local $acc i32)
    (block $done
      (loop $l
        (block $join
          (block $even
            (br_if $even (i32.eqz (i32.and (local.get $i) (i32.const 1))))
            (br_if $join (i32.gt_u (local.get $i) (i32.const 1000000)))
            (local.set $acc (i32.sub (local.get $acc) (i32.const 1)))
            (br $join))
          (local.set $acc (i32.add (local.get $acc) (i32.const 3))))
        (br_if $done (i32.eq (local.get $acc) (i32.const -12345)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br_if $l (i32.lt_u (local.get $i) (local.get $n)))))
    (local.get $acc)))
"#;

#[test]
fn a_br_if_is_hinted_unlikely_only_where_it_leads_is_cold() {
    let bytes = wat::parse_str(JOIN).unwrap();
    let profile = profile_of(&bytes, "bl", Some(("f", "1000")));
    let ops = &branch_offsets(&bytes)[&0];
    assert_eq!(ops.iter().map(|(_, op)| *op).collect::<Vec<_>>(), ["br_if"; 4]);
    let hinted = hint(&bytes, &profile, &HintOptions { min_count: 1, min_bias: 0.9 }).unwrap();
    // Cranelift marks an unlikely `br_if`'s destination cold. The second `br_if` never branches,
    // but the join it leads to runs at every iteration: it is left unhinted. The third leads where
    // the loop ends, once in 1000 iterations: hinted unlikely. The loop's `br_if` is likely; the
    // first, taken half the time, is not biased.
    let expected: Hints = [(0, [(ops[2].0, false), (ops[3].0, true)].into_iter().collect())].into();
    assert_eq!(read_hints(&hinted.bytes).unwrap(), expected);
    assert_eq!((hinted.ran, hinted.hinted, hinted.hot_target), (4, 2, 1));
    // The blocks marked cold: where the loop ends, reached once by each of the two hinted branches'
    // unlikely side; the join left alone ran 1000 times.
    assert_eq!((hinted.cold, hinted.spared), (2, 1000));
}

#[test]
fn hints_of_the_module_are_kept_unless_contradicted() {
    let bytes = wat::parse_str(BRANCHY).unwrap();
    let ops = &branch_offsets(&bytes)[&0];
    // The module's own hints: the third-of-the-time `if` unlikely (kept: the profile agrees, though
    // not strongly enough to hint it), the reset likely (contradicted: it never ran), the loop
    // unlikely (contradicted: it goes round).
    let own: Hints = [(0, [(ops[0].0, false), (ops[1].0, true), (ops[2].0, false)].into_iter().collect())].into();
    let with_own = write_hints(&bytes, &own).unwrap();
    let profile = profile_of(&with_own, "bl", Some(("f", "1000")));
    let hinted = hint(&with_own, &profile, &HintOptions { min_count: 1, min_bias: 0.9 }).unwrap();
    let expected: Hints = [(0, [(ops[0].0, false), (ops[1].0, false), (ops[2].0, true)].into_iter().collect())].into();
    assert_eq!(read_hints(&hinted.bytes).unwrap(), expected);
    assert_eq!((hinted.hinted, hinted.kept, hinted.dropped), (2, 1, 2));
    wasmparser::Validator::new().validate_all(&hinted.bytes).unwrap();
    // A hint the profile contradicts, though not strongly enough to hint the other way, is dropped.
    let contradicted: Hints = [(0, [(ops[0].0, true)].into_iter().collect())].into();
    let with_own = write_hints(&bytes, &contradicted).unwrap();
    let profile = profile_of(&with_own, "bl", Some(("f", "1000")));
    let hinted = hint(&with_own, &profile, &HintOptions { min_count: 1, min_bias: 0.9 }).unwrap();
    assert!(!read_hints(&hinted.bytes).unwrap()[&0].contains_key(&ops[0].0));
    assert_eq!((hinted.kept, hinted.dropped), (0, 1));
    // Hints of offsets where no branch is are refused.
    let wrong: Hints = [(0, [(ops[0].0 + 1, true)].into_iter().collect())].into();
    assert!(write_hints(&bytes, &wrong).is_err());
}

#[test]
fn hints_from_sampled_profiles_agree_with_exact_ones() {
    let bytes = wat::parse_str(BRANCHY).unwrap();
    let options = HintOptions { min_count: 1, min_bias: 0.9 };
    let exact = hint(&bytes, &profile_of(&bytes, "bl", Some(("f", "1000"))), &options).unwrap();
    let sampled = hint(&bytes, &profile_of(&bytes, "pep:every:1", Some(("f", "1000"))), &options).unwrap();
    assert_eq!(sampled.hints, exact.hints);
    let sparse = hint(&bytes, &profile_of(&bytes, "pep:every:7", Some(("f", "7000"))), &options).unwrap();
    for (func, hints) in &sparse.hints {
        for (offset, taken) in hints {
            assert_eq!(exact.hints[func].get(offset), Some(taken), "a sampled hint agrees with the exact one");
        }
    }
}

#[test]
fn the_command_writes_the_hinted_program() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("m.wasm"), wat::parse_str(BRANCHY).unwrap()).unwrap();
    let run = ["run", "--quiet", "-o", "p.prof", "--invoke", "f", "m.wasm", "1000"];
    assert!(pathprof().current_dir(d).args(run).output().unwrap().status.success());
    let hint = ["hint", "p.prof", "m.wasm", "-o", "h.wasm", "--min-count", "1"];
    let out = pathprof().current_dir(d).args(hint).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("2 of its 3 branches hinted (3 ran in the profile)"), "{stderr}");
    assert_eq!(read_hints(&std::fs::read(d.join("h.wasm")).unwrap()).unwrap().len(), 1);
    let report = pathprof().current_dir(d).args(["report", "p.prof", "--branches", "--min-count", "1"]).output();
    let text = String::from_utf8(report.unwrap().stdout).unwrap();
    assert!(text.contains("most biased") && text.contains("br_if") && text.contains("99.9%"), "{text}");
    let even = text.split("most evenly split").nth(1).unwrap();
    assert!(even.lines().nth(2).is_some_and(|l| l.contains("33.4%")), "{text}");
}

/// Every program of the corpus, hinted from a profile of it, writes the same output with hinting
/// off and on in the engine.
#[test]
fn hinted_corpus_programs_run_as_before() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let off =
        pathprof_runtime::engine_with(&EngineOptions { branch_hinting: false, cache: None, polls: false }).unwrap();
    let on = pathprof_runtime::engine_with(&EngineOptions { branch_hinting: true, cache: None, polls: false }).unwrap();
    let mut changed = 0;
    for wasm in pathprof::bench::programs(&dir).unwrap() {
        let name = wasm.strip_prefix(&dir).unwrap().display().to_string();
        let bytes = std::fs::read(&wasm).unwrap();
        let config = RunConfig { random_seed: Some(1), ..corpus_config(&wasm) };
        let prepared = Prepared::new(&bytes, &name, &Mode::parse("bl").unwrap(), &Inputs::default()).unwrap();
        let run = prepared.run(&off, &config).unwrap();
        let profile = prepared.profile(&run, &config).unwrap();
        let hinted = hint(&bytes, &profile, &HintOptions::default()).unwrap();
        assert!(hinted.hinted > 0, "{name}: hot biased branches are hinted");
        let output = |engine: &pathprof_runtime::Engine| {
            let (program, _) = pathprof_runtime::compile(engine, &hinted.bytes).unwrap();
            let (out, ()) = pathprof_runtime::run_module(engine, &program, None, NoCollector, &config).unwrap();
            (out.exit_code, out.stdout, out.stderr, program.text().map(<[u8]>::to_vec))
        };
        let (a, b) = (output(&off), output(&on));
        assert_eq!((&a.0, &a.1, &a.2), (&b.0, &b.1, &b.2), "{name}: the same output with hinting on");
        assert_eq!((a.0, &a.1), (run.outcome.exit_code, &run.outcome.stdout), "{name}: as the profiled run");
        changed += usize::from(a.3 != b.3);
    }
    assert!(changed > 0, "hints change the machine code of some programs");
}

/// A WASI program whose branch goes one way in `20 × argc` of every 100 rounds, and that exits 3
/// when given three arguments.
const ARGS_PROGRAM: &str = r#"
(module
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $sizes (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (func (export "_start") (local $i i32) (local $argc i32) (local $acc i32)
    (drop (call $sizes (i32.const 0) (i32.const 4)))
    (local.set $argc (i32.load (i32.const 0)))
    (if (i32.eq (local.get $argc) (i32.const 4)) (then (call $exit (i32.const 3))))
    (loop $l
      (if (i32.lt_u (i32.rem_u (local.get $i) (i32.const 100)) (i32.mul (local.get $argc) (i32.const 20)))
        (then (local.set $acc (i32.add (local.get $acc) (i32.const 1))))
        (else (local.set $acc (i32.sub (local.get $acc) (i32.const 1)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 100000))))
    (if (i32.eq (local.get $acc) (i32.const 12345)) (then (call $exit (i32.const 9))))))
"#;

/// `bench --hints` takes the hints of its `other` variant from a run with `<stem>.small.args` where
/// the file is there, and has no such variant where it is not; its `pep` variant is always there.
#[test]
fn hints_from_another_input_take_the_small_args() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), wat::parse_str(ARGS_PROGRAM).unwrap()).unwrap();
    let options = pathprof::bench::hints::HintBenchOptions {
        rounds: pathprof::bench::Rounds { min_runs: 1, max_runs: 1, spread: 1.0, budget_seconds: 10.0 },
        filter: None,
        hints: HintOptions::default(),
        stopper: None,
    };
    let bench = || pathprof::bench::hints::bench_hints(dir.path(), &options, |_| {});
    let report = bench().unwrap();
    assert_eq!(report.programs.len(), 1);
    assert_eq!(report.programs[0].other_input_ratio, None, "no other input");
    // Hints from a pep profile of the same input run too, as a variant of their own.
    let pep = report.summary.iter().find(|s| s.variant == "pep").expect("a pep variant");
    assert_eq!(pep.programs, 1);
    assert!(report.programs[0].pep_ratio.is_finite() && report.programs[0].pep_ratio > 0.0);
    assert!(report.programs[0].pep_hinted <= report.programs[0].branches);
    std::fs::write(dir.path().join("p.small.args"), "a\nb\n").unwrap();
    let report = bench().unwrap();
    assert!(report.programs[0].other_input_ratio.is_some(), "hints from the run with two arguments");
    // Three arguments make the program fail: the other run is refused, so it had them.
    std::fs::write(dir.path().join("p.small.args"), "a\nb\nc\n").unwrap();
    let err = format!("{:#}", bench().err().expect("the run with three arguments exits 3"));
    assert!(err.contains("profiled run"), "{err}");
}
