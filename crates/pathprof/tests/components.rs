//! Components (WASI preview 2 commands): the C fixtures, made into components with the preview-1
//! adapter (wit-component, and the adapter Wasmtime publishes as a crate), are profiled in every
//! mode that calls the host or reads the profiler's memory. The oracle is the same fixture run as a
//! core module: the component runs the same module, so its profile has the same functions, paths
//! and counts, and the program the same output.

mod common;

use common::{component_of, fails_cleanly, pathprof};
use pathprof::profiled::ProfiledModule;
use pathprof::{Mode, Prepared, RunConfig};
use pathprof_core::profile::{InterestingRule, Profile};
use pathprof_runtime::CountCollector;
use pathprof_wasm::InstrumentOptions;
use std::path::{Path, PathBuf};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/c")
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(format!("{name}.wasm"))).unwrap()
}

fn config(name: &str) -> RunConfig {
    RunConfig { args: vec![format!("{name}.wasm")], capture_output: true, random_seed: Some(7), ..RunConfig::default() }
}

/// Profiles `program` in `mode`, returning the profile and the program's stdout.
fn profile(program: &[u8], name: &str, mode: &str) -> (Profile, Vec<u8>) {
    let mode = Mode::parse(mode).unwrap();
    let prepared = Prepared::new(program, name, &mode, &Default::default()).unwrap();
    let engine = pathprof_runtime::engine().unwrap();
    let run = prepared.run(&engine, &config(name)).unwrap();
    let profile = prepared.profile(&run, &config(name)).unwrap();
    (profile, run.outcome.stdout)
}

const FIXTURES: [(&str, i32); 4] = [("branches", 0), ("nested", 0), ("recursion", 0), ("early_exit", 1)];

/// Every fixture, as a component, in every mode with host calls or the profiler's memory: the
/// profile of the module it holds, path for path.
#[test]
fn components_profile_as_their_modules_do() {
    for (name, status) in FIXTURES {
        let module = fixture(name);
        let component = component_of(&module);
        let expected = std::fs::read(fixtures_dir().join(format!("{name}.stdout.expected"))).unwrap();
        for mode in ["bl", "kbl:3", "pep:every:3", "events", "events:pd", "events:dec"] {
            let (of_module, module_out) = profile(&module, name, mode);
            let (of_component, component_out) = profile(&component, name, mode);
            assert_eq!(module_out, expected, "{name} {mode}: the module's output");
            assert_eq!(component_out, expected, "{name} {mode}: the component's output");
            // A preview-2 command ends with success or failure: exit(3) is a failure.
            assert_eq!(of_component.exit_code, status, "{name} {mode}");
            assert_eq!(of_component.trap, None, "{name} {mode}");
            assert!(of_module.functions.iter().any(|f| f.is_instrumented()), "{name} {mode}: nothing profiled");
            assert_eq!(of_component.path_executions, of_module.path_executions, "{name} {mode}");
            assert_eq!(of_component.functions, of_module.functions, "{name} {mode}: function profiles");
            assert_eq!(of_component.open_activations_at_exit, of_module.open_activations_at_exit, "{name} {mode}");
            assert_eq!(of_component.module.core_module, Some(0), "{name} {mode}: the program's module");
            assert_eq!(of_module.module.core_module, None);
        }
    }
}

/// Preferential profiling of a component against its own `bl` profile counts what the module's
/// does against the module's.
#[test]
fn components_profile_preferentially_as_their_modules_do() {
    let module = fixture("nested");
    let component = component_of(&module);
    let ppp = |program: &[u8]| {
        let (bl, _) = profile(program, "nested", "bl");
        let interesting =
            pathprof::Interesting::of(program, &[("bl".to_string(), bl)], InterestingRule::Executed).unwrap();
        let inputs = pathprof::Inputs { interesting: Some(&interesting), ..Default::default() };
        let mode = Mode::parse("ppp:slots").unwrap();
        let prepared = Prepared::new(program, "nested", &mode, &inputs).unwrap();
        let engine = pathprof_runtime::engine().unwrap();
        let run = prepared.run(&engine, &config("nested")).unwrap();
        prepared.profile(&run, &config("nested")).unwrap()
    };
    let (of_module, of_component) = (ppp(&module), ppp(&component));
    assert!(of_module.path_executions.0 > 0);
    assert_eq!(of_component.functions, of_module.functions);
    assert_eq!(of_component.mode, of_module.mode);
}

/// A program that traps inside two profiled frames: the component's profile has the module's counts,
/// trap and open activations (the adapter's frames are not the profiled module's).
#[test]
fn a_trap_in_a_component_keeps_the_counts_and_the_open_frames() {
    let module = wat::parse_str(
        r#"(module
             (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
             (memory (export "memory") 1)
             (global $calls (mut i32) (i32.const 0))
             (func $leaf (param $x i32) (result i32)
               local.get $x
               i32.const 3
               i32.rem_u
               if (result i32)
                 local.get $x
                 i32.const 1
                 i32.add
               else
                 local.get $x
                 i32.const 2
                 i32.mul
               end)
             (func $inner (param $k i32)
               global.get $calls
               i32.const 1
               i32.add
               global.set $calls
               global.get $calls
               i32.const 7
               i32.eq
               if
                 unreachable
               end
               local.get $k
               call $leaf
               drop)
             (func (export "_start")
               (local $i i32)
               loop $l
                 local.get $i
                 call $inner
                 local.get $i
                 i32.const 1
                 i32.add
                 local.tee $i
                 i32.const 100
                 i32.lt_u
                 br_if $l
               end
               i32.const 0
               call $exit))"#,
    )
    .unwrap();
    let component = component_of(&module);
    for mode in ["bl", "kbl"] {
        let (of_module, _) = profile(&module, "trap", mode);
        let (of_component, _) = profile(&component, "trap", mode);
        assert!(of_module.trap.as_deref().is_some_and(|t| t.contains("unreachable")), "{:?}", of_module.trap);
        assert_eq!(of_component.trap, of_module.trap, "{mode}");
        assert_eq!(of_component.exit_code, pathprof_runtime::TRAP_EXIT_CODE);
        assert_eq!(of_module.open_activations_at_exit, 2, "{mode}: inner and _start");
        assert_eq!(of_component.open_activations_at_exit, 2, "{mode}");
        // Six calls of $leaf (function 1, after the import), one path each.
        let leaf = of_component.functions.iter().find(|f| f.index == 1).unwrap();
        assert_eq!(leaf.paths().iter().map(|p| p.count.0).sum::<u64>(), 6, "{mode}");
        assert_eq!(of_component.functions, of_module.functions, "{mode}");
    }
}

/// Functions counted by the host (no array, no table) call it through the component's hooks, with
/// no profiler memory at all, or with arrays for some functions beside: the counts are the module's.
#[test]
fn host_counted_paths_reach_the_host_through_the_component() {
    let module = fixture("branches");
    let component = component_of(&module);
    let engine = pathprof_runtime::engine().unwrap();
    let counts = |program: &[u8], options: &InstrumentOptions| {
        let profiled = ProfiledModule::of(program, None).unwrap();
        let inst = profiled.instrument(program, options).unwrap();
        let collector = CountCollector::new(&inst.map).unwrap();
        let (outcome, counted) =
            pathprof_runtime::run(&engine, &inst.bytes, Some(&inst.map), collector, &config("branches")).unwrap();
        assert_eq!(outcome.exit_code, 0);
        (inst, inst_counts(counted.counts))
    };
    let (_, expected) = counts(&module, &InstrumentOptions::default());
    let all_host = InstrumentOptions { array_max_paths: 0, array_max_bytes: 0, ..InstrumentOptions::default() };
    let some_host = InstrumentOptions { array_max_bytes: 64, ..InstrumentOptions::default() };
    for options in [all_host, some_host] {
        let (inst, got) = counts(&component, &options);
        assert!(inst.map.sink.import().is_some() && inst.hooks_export.is_some());
        assert_eq!(got, expected);
    }
}

/// Path counts by function, each function's sorted.
fn inst_counts(counts: pathprof_wasm::map::RawCounts) -> Vec<(u32, Vec<(u64, u64)>)> {
    let mut out: Vec<_> = counts
        .into_iter()
        .map(|(f, mut paths)| {
            paths.retain(|&(_, n)| n > 0);
            paths.sort_unstable();
            (f, paths)
        })
        .filter(|(_, paths)| !paths.is_empty())
        .collect();
    out.sort_unstable();
    out
}

/// A component that imports anything but WASI is refused before any work, with its name.
#[test]
fn components_with_unknown_imports_are_refused() {
    let wat = r#"(component
        (import "acme:db/query" (func $q))
        (core module $m (func (export "f")))
        (core instance (instantiate $m)))"#;
    let bytes = wat::parse_str(wat).unwrap();
    let engine = pathprof_runtime::engine().unwrap();
    let err = pathprof_runtime::check_imports(&engine, &bytes).unwrap_err().to_string();
    assert!(err.contains("acme:db/query"), "{err}");
}

/// The CLI: `run` profiles a component and prints its hot paths, the program's output untouched;
/// `instrument` writes a component that validates; `--invoke` is refused.
#[test]
fn the_cli_runs_and_instruments_components() {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("branches.component.wasm");
    std::fs::write(&app, component_of(&fixture("branches"))).unwrap();
    let out = tmp.path().join("p.json");
    let run = pathprof().arg("run").arg("-o").arg(&out).arg(&app).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert_eq!(run.stdout, std::fs::read(fixtures_dir().join("branches.stdout.expected")).unwrap());
    assert!(stderr.contains("(its core module 0)") && stderr.contains("classify"), "{stderr}");
    let profile = Profile::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(profile.module.core_module, Some(0));
    assert!(profile.path_executions.0 > 0);

    let instrumented = tmp.path().join("i.wasm");
    let st = pathprof().arg("instrument").arg(&app).arg("-o").arg(&instrumented).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let bytes = std::fs::read(&instrumented).unwrap();
    assert!(pathprof_wasm::component::is_component(&bytes));
    pathprof_wasm::module::validate(&bytes).unwrap();
    // The component and its map, run by the runtime, count the paths `run` counted.
    let map_text = std::fs::read_to_string(tmp.path().join("i.wasm.map.json")).unwrap();
    let map = pathprof_wasm::ProfileMap::from_json(&map_text).unwrap();
    let engine = pathprof_runtime::engine().unwrap();
    let collector = CountCollector::new(&map).unwrap();
    let (outcome, counted) =
        pathprof_runtime::run(&engine, &bytes, Some(&map), collector, &config("branches")).unwrap();
    assert_eq!(outcome.exit_code, 0);
    let paths = |functions: &[pathprof_core::profile::FunctionProfile]| {
        functions.iter().flat_map(|f| f.paths().iter().map(|p| (f.index, p.id.0, p.count.0))).collect::<Vec<_>>()
    };
    assert_eq!(paths(&map.function_profiles(&counted.counts).unwrap()), paths(&profile.functions));

    let clean = tempfile::tempdir().unwrap();
    fails_cleanly(clean.path(), &["run", "--invoke", "main", app.to_str().unwrap()], "--invoke");
}

/// `--core-module N` profiles another core module of the component: here the preview-1 adapter,
/// which the program calls for its output. A module index the component does not define, or the
/// option given for a module, is refused in one line.
#[test]
fn another_core_module_can_be_chosen() {
    let tmp = tempfile::tempdir().unwrap();
    let component = component_of(&fixture("branches"));
    let info = pathprof_wasm::component::ComponentInfo::read(&component).unwrap();
    let adapter = info
        .modules
        .iter()
        .find(|m| m.name.as_deref().is_some_and(|n| n.contains("adapter")))
        .expect("the adapter's module");
    assert_ne!(info.program().unwrap().index, adapter.index);
    let app = tmp.path().join("branches.component.wasm");
    std::fs::write(&app, &component).unwrap();
    let out = tmp.path().join("adapter.json");
    let run = pathprof()
        .args(["run", "--quiet", "--core-module", &adapter.index.to_string(), "-o"])
        .arg(&out)
        .arg(&app)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.stdout, std::fs::read(fixtures_dir().join("branches.stdout.expected")).unwrap());
    let profile = Profile::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(profile.module.core_module, Some(adapter.index));
    assert!(profile.path_executions.0 > 0);

    // Refused in a directory of their own, where no profile may be left behind.
    let clean = tempfile::tempdir().unwrap();
    let (app, module) = (app.to_str().unwrap(), fixtures_dir().join("branches.wasm"));
    fails_cleanly(clean.path(), &["run", "--core-module", "99", "-o", "x.json", app], "defines no core module 99");
    fails_cleanly(
        clean.path(),
        &["run", "--core-module", "0", "-o", "x.json", module.to_str().unwrap()],
        "this is a module",
    );
    // A profile of the adapter is no edge profile for the program's module.
    fails_cleanly(
        clean.path(),
        &["run", "--edge-profile", out.to_str().unwrap(), "-o", "x.json", app],
        &format!("profiles core module {} of the component, not {}", adapter.index, info.program().unwrap().index),
    );
}

/// A program module with a start function that would call the host before the component has
/// joined the module to it is refused, not run with a hook that traps or loses counts; without
/// host calls it is profiled.
#[test]
fn a_start_function_that_needs_the_host_is_refused() {
    let module = wat::parse_str(
        r#"(module
             (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
             (memory (export "memory") 1)
             (global $g (mut i32) (i32.const 0))
             (func $init (global.set $g (i32.const 1)))
             (start $init)
             (func (export "_start")
               global.get $g
               if
                 i32.const 0
                 call $exit
               end))"#,
    )
    .unwrap();
    let component = component_of(&module);
    let profiled = ProfiledModule::of(&component, None).unwrap();
    assert_eq!(profiled.core_module().map(|m| m.index), Some(0), "the program's module, not the adapter's or a shim");
    let all_host = InstrumentOptions { array_max_paths: 0, array_max_bytes: 0, ..InstrumentOptions::default() };
    let Err(err) = profiled.instrument(&component, &all_host) else { panic!("instrumented") };
    let err = format!("{err:#}");
    assert!(err.contains("start function"), "{err}");
    let (of_component, _) = profile(&component, "start", "bl");
    let (of_module, _) = profile(&module, "start", "bl");
    assert_eq!(of_component.functions, of_module.functions);
    // $init's path; _start's is still open when it calls proc_exit.
    assert_eq!(of_component.path_executions.0, 1);
    assert_eq!(of_component.open_activations_at_exit, 1);

    // `--core-module all` in a mode that calls the host: the modules with a start function (the
    // program's, and the adapter's) are left out with a warning, the others with code profiled.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("start.wasm"), &component).unwrap();
    let run = pathprof()
        .current_dir(dir.path())
        .args(["run", "--quiet", "--mode", "kbl", "--core-module", "all", "-o", "p.json", "start.wasm"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("core module 0 is not profiled") && stderr.contains("start function"), "{stderr}");
    let info = pathprof_wasm::component::ComponentInfo::read(&component).unwrap();
    let with_code: Vec<_> = info.modules.iter().filter(|m| m.code_size > 0).collect();
    assert!(with_code.iter().any(|m| m.start) && with_code.iter().any(|m| !m.start));
    for m in with_code {
        let written = dir.path().join(format!("p.{}.json", m.index)).exists();
        assert_eq!(written, !m.start, "core module {}", m.index);
    }
}

/// `pathprof bench` measures a component as it measures a module: every mode's ratio, the growth
/// of the profiled module's code, and the sampled mode's accuracy against the exact profile.
#[test]
fn bench_measures_components() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("nested.wasm"), component_of(&fixture("nested"))).unwrap();
    let json = dir.path().join("bench.json");
    let out = pathprof()
        .arg("bench")
        .arg(dir.path())
        .args(["--modes", "bl,pep:every:7,kbl", "--runs", "1", "--max-runs", "1", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let modes = report["programs"][0]["modes"].as_array().unwrap();
    let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(names, ["bl", "pep:every:7", "kbl"]);
    for m in modes {
        assert!(m["ratio"].as_f64().unwrap() > 0.0, "{m}");
        assert!(m["code_growth"].as_f64().unwrap() > 1.0, "{m}");
    }
    assert!(modes[1]["accuracy"].is_object(), "{}", modes[1]);
}

/// The hardware path profiler's simulator runs on a component's program module as on the module: the
/// same branch stream, so the same table, exact profile and instruction count.
#[test]
fn hpp_simulates_components_as_their_modules() {
    let module = fixture("branches");
    let component = component_of(&module);
    let settings = pathprof::hpp::HppSettings::default();
    let simulate = |program: &[u8]| {
        let mut run = pathprof::hpp::simulate(program, "branches", &settings, &config("branches")).unwrap();
        run.report.table.sort_unstable();
        run.report.exact.sort_unstable();
        run
    };
    let (of_module, of_component) = (simulate(&module), simulate(&component));
    assert_eq!(of_component.outcome.stdout, of_module.outcome.stdout);
    assert!(
        of_module.report.instructions > 0 && !of_module.report.exact.is_empty() && !of_module.report.table.is_empty()
    );
    assert_eq!(of_component.report.instructions, of_module.report.instructions);
    assert_eq!(of_component.report.distinct_paths, of_module.report.distinct_paths);
    assert_eq!(of_component.report.table, of_module.report.table);
    assert_eq!(of_component.report.exact, of_module.report.exact);
}

/// A component that imports the Sightglass `bench` instance runs, and its bench region is measured
/// as the module's is; an instance of another name is still refused.
#[test]
fn components_import_the_bench_instance() {
    let module = wat::parse_str(
        r#"(module
          (import "bench" "start" (func $start))
          (import "bench" "end" (func $end))
          (memory (export "memory") 1)
          (func (export "_start") (local $i i32)
            (call $start)
            (loop $l
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (i32.const 100000))))
            (call $end)))"#,
    )
    .unwrap();
    let component = component_of(&module);
    let engine = pathprof_runtime::engine().unwrap();
    pathprof_runtime::check_imports(&engine, &component).unwrap();
    for (program, name) in [(&module, "m"), (&component, "c")] {
        let (profile, _) = profile(program, name, "bl");
        let region = profile.bench_region_seconds.expect("a bench region");
        assert!(region > 0.0 && region <= profile.wall_seconds, "{name}: {region} of {}", profile.wall_seconds);
        assert!(profile.module.core_module.is_some() == (name == "c"), "{name}");
    }
    let other = wat::parse_str(
        r#"(component
        (import "benchmark" (instance (export "start" (func))))
        (core module $m (func (export "f")))
        (core instance (instantiate $m)))"#,
    )
    .unwrap();
    let err = pathprof_runtime::check_imports(&engine, &other).unwrap_err().to_string();
    assert!(err.contains("benchmark"), "{err}");
}
