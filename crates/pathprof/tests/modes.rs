//! The modes through every entry point: one grammar for `run`, `instrument` and `bench`, written back
//! in its shortest form; the library's `profile` gives the profile `pathprof run` writes; `pathprof
//! instrument` writes each mode's module and a map that names its sink.

mod common;

use common::{pathprof, run_wat, KBL_LOOP};
use pathprof::{Mode, RunConfig};
use pathprof_core::profile::{FunctionProfile, ProfileMode};

#[test]
fn the_grammar_reads_and_writes_every_mode() {
    for (spec, canonical, name) in [
        ("none", "none", "none"),
        ("bl", "bl", "bl"),
        ("pep", "pep", "pep"),
        ("pep:64", "pep", "pep"),
        ("pep:64:17", "pep", "pep"),
        ("pep:8", "pep:8", "pep"),
        ("pep:8:17", "pep:8", "pep"),
        ("pep:8:3", "pep:8:3", "pep"),
        ("pep:every:100", "pep:every:100", "pep"),
        ("pep:dup", "pep:dup", "pep"),
        ("pep:64:17:dup", "pep:dup", "pep"),
        ("pep:8:dup", "pep:8:dup", "pep"),
        ("pep:8:3:dup", "pep:8:3:dup", "pep"),
        ("kbl", "kbl", "kbl"),
        ("kbl:4", "kbl", "kbl"),
        ("kbl:04", "kbl", "kbl"),
        ("kbl:1", "kbl:1", "kbl"),
        ("kbl:64", "kbl:64", "kbl"),
        ("ppp", "ppp", "ppp"),
        ("ppp:slots", "ppp:slots", "ppp"),
        ("events", "events", "events"),
        ("events:pc", "events", "events"),
        ("events:pc:auto", "events", "events"),
        ("events:pc:merges", "events:pc:merges", "events"),
        ("events:pc:none", "events:pc:none", "events"),
        ("events:pd", "events:pd", "events"),
        ("events:pd:auto", "events:pd", "events"),
        ("events:pd:merges", "events:pd:merges", "events"),
        ("events:dec", "events:dec", "events"),
        ("events:dec:auto", "events:dec", "events"),
    ] {
        let mode = Mode::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!((mode.to_string().as_str(), mode.name()), (canonical, name), "{spec}");
        assert_eq!(Mode::parse(canonical).unwrap(), mode, "{spec} reads back");
        assert_eq!(mode.sink().is_none(), spec == "none");
    }
    for bad in [
        "",
        "BL",
        "bl:",
        "none:1",
        "pep:",
        "pep:1:2:3",
        "pep:every",
        "pep:every:x",
        "pep:every:5:dup",
        "pep:dup:8",
        "pep::dup",
        "kbl:",
        "kbl:x",
        "kbl:4:4",
        "ppp:",
        "ppp:all",
        "events:",
        "events:pc:",
        "events:pc:auto:x",
        "events:dec:none",
        "events:PC",
    ] {
        assert!(Mode::parse(bad).is_err(), "{bad:?} is refused");
    }
}

/// A function's index, its paths' IDs and counts, and its forest as JSON.
type Recorded = (u32, Vec<(u64, u64)>, Option<String>);

/// What the functions of a profile recorded.
fn paths_and_forests(functions: &[FunctionProfile]) -> Vec<Recorded> {
    functions
        .iter()
        .map(|f| {
            let paths = f.paths().iter().map(|p| (p.id.0, p.count.0)).collect();
            (f.index, paths, f.kipf().map(|k| serde_json::to_string(k).unwrap()))
        })
        .collect()
}

#[test]
fn the_library_gives_the_profile_the_command_writes() {
    let bytes = wat::parse_str(KBL_LOOP).unwrap();
    for spec in ["bl", "kbl:3", "pep:every:1"] {
        let cli = run_wat(KBL_LOOP, &["--mode", spec], &[]);
        assert!(cli.output.status.success(), "{spec}");
        let config = RunConfig { args: vec!["m.wasm".into()], capture_output: true, ..RunConfig::default() };
        let lib = pathprof::profile(&bytes, &Mode::parse(spec).unwrap(), &config).unwrap();
        assert_eq!(lib.mode.name(), cli.profile.mode.name(), "{spec}");
        assert_eq!(paths_and_forests(&lib.functions), paths_and_forests(&cli.profile.functions), "{spec}");
        assert_eq!(lib.path_executions, cli.profile.path_executions, "{spec}");
        assert_eq!(lib.module.sha256, cli.profile.module.sha256);
        match (spec, &lib.mode) {
            ("bl", ProfileMode::Bl) => {}
            ("kbl:3", ProfileMode::Kbl(k)) => assert_eq!(k.k, 3),
            ("pep:every:1", ProfileMode::Pep(s)) => {
                assert_eq!((s.every, s.samples_taken), (Some(1), lib.path_executions.0))
            }
            (spec, mode) => panic!("{spec} gave a {mode} profile"),
        }
    }
}

#[test]
fn instrument_writes_the_module_of_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.wasm"), wat::parse_str(KBL_LOOP).unwrap()).unwrap();
    for (spec, sink) in [("bl", "count"), ("pep", "sample"), ("pep:every:3", "sample"), ("kbl:2", "stream")] {
        let out = pathprof()
            .current_dir(dir.path())
            .args(["instrument", "--mode", spec, "m.wasm", "-o", "out.wasm"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{spec}: {}", String::from_utf8_lossy(&out.stderr));
        let map: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("out.wasm.map.json")).unwrap()).unwrap();
        assert_eq!(map["sink"]["kind"], sink, "{spec}");
        let buffer = &map["sink"]["buffer"];
        match spec {
            "pep" => assert_eq!(buffer["slots"], 64),
            "pep:every:3" => assert!(buffer.is_null()),
            _ => {}
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let canonical = Mode::parse(spec).unwrap().to_string();
        assert!(stderr.contains(&format!("instrumented for {canonical})")), "{stderr}");
    }
}
