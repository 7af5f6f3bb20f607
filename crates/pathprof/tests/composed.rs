//! A composed component, as wasm-compose makes one: a program and a library, each a component
//! nested in the composition, the program calling the library for every number from 1 to 1000
//! (tests/fixtures/composed). pathprof profiles a core module of either nested component, joined
//! to the host through the components that hold it. The oracle is arithmetic: the Collatz steps of
//! 1 to 1000, computed here, are the program's output and the library's loop counts.

mod common;

use common::{check_balance, composed_component, fails_as_usage, fails_cleanly, function, pathprof, total};
use pathprof::{Inputs, Mode, Prepared, RunConfig};
use pathprof_core::profile::{Endpoint, Profile};
use pathprof_wasm::component::{ComponentInfo, CoreModulePath};

/// The Collatz steps of `n` down to 1, odd steps (3n + 1) and even steps (n / 2) apart.
fn collatz(mut n: u64) -> (u64, u64) {
    let (mut odd, mut even) = (0, 0);
    while n > 1 {
        if n % 2 == 1 {
            n = 3 * n + 1;
            odd += 1;
        } else {
            n /= 2;
            even += 1;
        }
    }
    (odd, even)
}

/// What the program prints: the steps of 1 to 1000, their sum and the most.
fn expected_output() -> (Vec<u8>, u64, u64) {
    let steps: Vec<(u64, u64)> = (1..=1000).map(collatz).collect();
    let sum: u64 = steps.iter().map(|(o, e)| o + e).sum();
    let most = steps.iter().map(|(o, e)| o + e).max().unwrap();
    let (odd, even) = steps.iter().fold((0, 0), |(a, b), (o, e)| (a + o, b + e));
    (format!("{sum}\n{most}\n").into_bytes(), odd, even)
}

fn config() -> RunConfig {
    RunConfig { args: vec!["composed.wasm".into()], capture_output: true, ..RunConfig::default() }
}

/// Profiles core module `module` (the program's when `None`) of `program` in `mode`.
fn profile(program: &[u8], mode: &str, module: Option<&CoreModulePath>) -> (Profile, Vec<u8>) {
    let mode = Mode::parse(mode).unwrap();
    let inputs = Inputs { core_module: module, ..Default::default() };
    let prepared = Prepared::new(program, "composed.wasm", &mode, &inputs).unwrap();
    let engine = pathprof_runtime::engine().unwrap();
    let run = prepared.run(&engine, &config()).unwrap();
    let profile = prepared.profile(&run, &config()).unwrap();
    (profile, run.outcome.stdout)
}

/// The program's module (the default) and the library's, each in every mode that reads the
/// profiler's memory or calls the host: the program's output is the stock run's, and the counts
/// are the arithmetic's.
#[test]
fn a_module_of_either_nested_component_is_profiled() {
    let composed = composed_component();
    let info = ComponentInfo::read(&composed).unwrap();
    assert!(info.modules.iter().all(|m| !m.within.is_empty()), "every module lies in a nested component");
    assert_eq!(info.program().unwrap().path().to_string(), "0/0", "the program's module");
    let library: CoreModulePath = "1/0".parse().unwrap();
    assert!(info.module(&library).is_ok());

    let (expected, odd, even) = expected_output();
    let (_, stock) = profile(&composed, "none", None);
    assert_eq!(stock, expected, "the stock run");
    for mode in ["bl", "kbl:3", "events", "pep:every:1"] {
        let (program, out) = profile(&composed, mode, None);
        assert_eq!(out, expected, "{mode}: the program's output");
        assert_eq!((program.module.core_module, &program.module.core_module_within[..]), (Some(0), &[0][..]));
        assert_eq!(program.exit_code, 0, "{mode}");
        let start = function(&program, "start");
        // One entry, 999 turns of the loop, one exit: every path of `start` counted once in bl,
        // kbl and events, and sampled once per path end in pep:every:1.
        assert_eq!(total(start, |_| true), 1001, "{mode}: start's paths");
        assert_eq!(total(function(&program, "print"), |p| p.start == Endpoint::Entry), 2, "{mode}");

        let (lib, out) = profile(&composed, mode, Some(&library));
        assert_eq!(out, expected, "{mode}: the program's output with the library profiled");
        assert_eq!((lib.module.core_module, &lib.module.core_module_within[..]), (Some(0), &[1][..]));
        let steps = function(&lib, "collatz");
        let mut turns: Vec<u64> = steps
            .paths()
            .iter()
            .filter(|p| matches!((p.start, p.end), (Endpoint::Block(_), Endpoint::Block(_))))
            .map(|p| p.count.0)
            .collect();
        turns.sort();
        assert_eq!(turns, [odd.min(even), odd.max(even)], "{mode}: the library's odd and even steps");
        assert_eq!(total(steps, |p| p.start == Endpoint::Entry), 1000, "{mode}: calls of the library");
        if mode != "pep:every:1" {
            check_balance(&program);
            check_balance(&lib);
        }
    }
}

/// The command line names a nested component's module as `1/0`; the profile records where it lies,
/// and the report says so. `instrument` writes a component that validates, and `hint` hints the
/// module in place: the hinted composition runs as before.
#[test]
fn the_cli_names_nested_modules() {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("composed.wasm");
    std::fs::write(&app, composed_component()).unwrap();
    let out = tmp.path().join("lib.json");
    let run = pathprof().args(["run", "--core-module", "1/0", "-o"]).arg(&out).arg(&app).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert_eq!(run.stdout, expected_output().0);
    assert!(stderr.contains("(its core module 1/0)") && stderr.contains("collatz"), "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("\"core_module_within\""), "{text}");
    let lib = Profile::from_json(&text).unwrap();
    assert_eq!((lib.module.core_module, lib.module.core_module_within.clone()), (Some(0), vec![1]));

    let instrumented = tmp.path().join("i.wasm");
    let st = pathprof().args(["instrument", "--core-module", "1/0"]).arg(&app).arg("-o").arg(&instrumented).output();
    let st = st.unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    pathprof_wasm::module::validate(&std::fs::read(&instrumented).unwrap()).unwrap();

    let hinted = tmp.path().join("hinted.wasm");
    let st = pathprof().arg("hint").arg(&out).arg(&app).arg("-o").arg(&hinted).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let hinted_bytes = std::fs::read(&hinted).unwrap();
    pathprof_wasm::module::validate(&hinted_bytes).unwrap();
    let info = ComponentInfo::read(&hinted_bytes).unwrap();
    let module = info.module(&"1/0".parse().unwrap()).unwrap();
    let hints = pathprof_wasm::hints::read_hints(&hinted_bytes[module.range.clone()]).unwrap();
    assert!(!hints.is_empty(), "the library's module carries hints");
    let (_, stdout) = profile(&hinted_bytes, "none", None);
    assert_eq!(stdout, expected_output().0);

    let clean = tempfile::tempdir().unwrap();
    let app = app.to_str().unwrap();
    fails_cleanly(clean.path(), &["run", "--core-module", "7/0", "-o", "x.json", app], "defines no core module 7/0");
    fails_as_usage(clean.path(), &["run", "--core-module", "1/x", "-o", "x.json", app], "not a core module's index");
}

/// `--core-module all` profiles every core module with code, each in a run of its own, and writes
/// each profile beside the `-o` file; the program's output is printed once. Each profile is its
/// module's: the library's counts the Collatz steps, the program's its loop, the preview-1
/// adapter's the program's two writes.
#[test]
fn every_core_module_is_profiled() {
    let tmp = tempfile::tempdir().unwrap();
    let composed = composed_component();
    let app = tmp.path().join("composed.wasm");
    std::fs::write(&app, &composed).unwrap();
    let out = tmp.path().join("p.json");
    let run = pathprof().args(["run", "--core-module", "all", "-o"]).arg(&out).arg(&app).output().unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let (expected, odd, even) = expected_output();
    assert_eq!(run.stdout, expected, "the program's output, once");
    let info = ComponentInfo::read(&composed).unwrap();
    let with_code: Vec<String> =
        info.modules.iter().filter(|m| m.code_size > 0).map(|m| m.path().to_string()).collect();
    assert!(with_code.len() >= 3, "{with_code:?}");
    let mut written: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    written.sort();
    let mut files: Vec<String> = with_code.iter().map(|m| format!("p.{}.json", m.replace('/', "-"))).collect();
    files.sort();
    assert_eq!(written, files);
    let read = |path: &str| {
        let file = tmp.path().join(format!("p.{}.json", path.replace('/', "-")));
        Profile::from_json(&std::fs::read_to_string(file).unwrap()).unwrap()
    };
    for path in &with_code {
        let profile = read(path);
        let recorded = profile
            .module
            .core_module
            .map(|index| CoreModulePath { within: profile.module.core_module_within.clone(), index });
        assert_eq!(recorded.map(|r| r.to_string()).as_ref(), Some(path), "the profile of {path}");
        check_balance(&profile);
    }
    let library = read("1/0");
    let loops =
        total(function(&library, "collatz"), |p| matches!((p.start, p.end), (Endpoint::Block(_), Endpoint::Block(_))));
    assert_eq!(loops, odd + even);
    assert_eq!(total(function(&read("0/0"), "start"), |_| true), 1001);
    let adapter = info.modules.iter().find(|m| m.name.as_deref().is_some_and(|n| n.contains("adapter"))).unwrap();
    let adapter = read(&adapter.path().to_string());
    assert!(adapter
        .functions
        .iter()
        .any(|f| f.name.as_deref() == Some("fd_write") && total(f, |p| p.start == Endpoint::Entry) == 2));

    let clean = tempfile::tempdir().unwrap();
    let edge = tmp.path().join("p.1-0.json");
    let app = app.to_str().unwrap();
    fails_cleanly(
        clean.path(),
        &["run", "--core-module", "all", "--edge-profile", edge.to_str().unwrap(), app],
        "takes no profile of one module",
    );
    let module = tmp.path().join("lib.wasm");
    std::fs::write(&module, wat::parse_str("(module (func (export \"_start\")))").unwrap()).unwrap();
    fails_cleanly(clean.path(), &["run", "--core-module", "all", module.to_str().unwrap()], "this is a module");
}

/// A nested component instantiated twice holds two instances of its module, each of which would
/// hand the host a memory of its own: refused in one line, as a module instantiated twice is.
#[test]
fn a_component_instantiated_twice_is_refused() {
    let component = wat::parse_str(
        r#"(component
             (component $c
               (core module $m
                 (func (export "f") (param i32) (result i32)
                   local.get 0
                   if (result i32) i32.const 1 else i32.const 2 end))
               (core instance (instantiate $m)))
             (instance (instantiate $c))
             (instance (instantiate $c)))"#,
    )
    .unwrap();
    let info = ComponentInfo::read(&component).unwrap();
    assert_eq!(info.program().unwrap().path().to_string(), "0/0");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("twice.wasm"), &component).unwrap();
    fails_cleanly(dir.path(), &["instrument", "twice.wasm", "-o", "out.wasm"], "component 0 is instantiated 2 times");
}
