//! The recipe of docs/ARCHITECTURE.md ("How to add a mode") followed from outside pathprof: a toy
//! mode, `entries`, that counts how often each function is entered, written as a program using
//! pathprof as a library would write it — a kind and a mode in one file, registered beside
//! pathprof's own — and run, written, read back, merged and reported through the same entry points
//! as the built-in modes. The fixture's counts are known from its source (fixtures/c/recursion.c:
//! `fib(15)` makes 1973 calls, 15 of which raise the depth mark).

use pathprof::modes::{Given, Mode, ModeKind, ModeRun, ProfilingMode, Registry, Report, Setting, SnapshotSink};
use pathprof::{mode_identity, Inputs, ModeFlags, Prepared, RunConfig};
use pathprof_core::profile::{Endpoint, Extension, FunctionProfile, Profile, ProfileMode};
use pathprof_runtime::{CountCollector, Engine, Program};
use pathprof_wasm::{ProfileMap, SinkKind};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;

/// The kind of the toy mode.
struct Entries;

/// The toy mode: it has no settings.
#[derive(Clone, Copy, Debug, PartialEq)]
struct EntriesMode;

/// The entries of every function that ran, by name (or index), from a profile's facts.
fn entries(mode: &ProfileMode) -> BTreeMap<String, u64> {
    let ProfileMode::Extension(x) = mode else { panic!("an entries profile has its facts") };
    serde_json::from_value(x.facts["entries"].clone()).expect("entries are counts by function")
}

impl ModeKind for Entries {
    fn name(&self) -> &'static str {
        "entries"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["entries"]
    }

    fn parse(&self, _: &str, settings: Option<&str>) -> Option<anyhow::Result<Mode>> {
        settings.is_none().then(|| Ok(Mode::new(EntriesMode)))
    }

    fn merge(&self, a: &ProfileMode, b: &ProfileMode) -> anyhow::Result<ProfileMode> {
        let mut sum = entries(a);
        for (f, n) in entries(b) {
            *sum.entry(f).or_default() += n;
        }
        Ok(facts(sum))
    }

    fn report(&self, out: &mut dyn Write, p: &Profile, _: usize, _: Option<&str>) -> anyhow::Result<Report> {
        for (f, n) in entries(&p.mode) {
            writeln!(out, "  entered {f} {n} times")?;
        }
        Ok(Report::Done)
    }
}

fn facts(entries: BTreeMap<String, u64>) -> ProfileMode {
    ProfileMode::Extension(Extension { name: "entries".into(), facts: serde_json::json!({ "entries": entries }) })
}

impl ProfilingMode for EntriesMode {
    fn kind(&self) -> &'static dyn ModeKind {
        &Entries
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("entries")
    }

    fn accepts(&self, setting: Setting) -> bool {
        setting == Setting::EdgeProfile
    }

    /// Exact path counts, of which the paths from a function's entry are its entries.
    fn sink(&self) -> Option<SinkKind> {
        Some(SinkKind::Count)
    }

    fn run(
        &self,
        engine: &Engine,
        program: &Program,
        map: Option<&ProfileMap>,
        config: &RunConfig,
        _: Option<&SnapshotSink>,
    ) -> anyhow::Result<ModeRun> {
        let map = map.expect("an instrumented run has its map");
        let (outcome, counted) =
            pathprof_runtime::run_module(engine, program, Some(map), CountCollector::new(map)?, config)?;
        Ok(ModeRun { outcome, counts: counted.counts, facts: Box::new(()), host_bytes: 0, figures: Vec::new() })
    }

    fn profile_mode(
        &self,
        _: &ModeRun,
        functions: &[FunctionProfile],
        _: Option<&ProfileMap>,
        _: &Given,
    ) -> anyhow::Result<ProfileMode> {
        let mut entries = BTreeMap::new();
        for f in functions {
            let n: u64 = f.paths().iter().filter(|p| p.start == Endpoint::Entry).map(|p| p.count.0).sum();
            if n > 0 {
                entries.insert(f.name.clone().unwrap_or_else(|| f.index.to_string()), n);
            }
        }
        Ok(facts(entries))
    }

    mode_identity!();
}

fn fixture() -> Vec<u8> {
    std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/c/recursion.wasm")).unwrap()
}

fn config() -> RunConfig {
    RunConfig { args: vec!["recursion.wasm".into()], capture_output: true, ..RunConfig::default() }
}

#[test]
fn a_mode_added_outside_pathprof_runs_through_the_registry() {
    let registry = Registry::built_in().with(&Entries).unwrap();
    assert!(registry.clone().with(&Entries).is_err(), "a name is registered once");
    assert!(Registry::built_in().with(&pathprof::modes::bl::Bl).is_err(), "built-in names are taken");
    assert!(registry.grammar().ends_with(", entries"), "{}", registry.grammar());
    let mode = registry.parse("entries").unwrap();
    assert_eq!((mode.to_string().as_str(), mode.name()), ("entries", "entries"));
    assert!(mode.is::<Entries>() && !mode.is_baseline());
    assert_eq!(registry.parse("entries").unwrap(), mode);
    assert!(registry.parse("entries:2").unwrap_err().to_string().contains("valid modes: none, bl"));
    assert!(Registry::built_in().parse("entries").is_err(), "pathprof's own registry does not know it");
    let k = ModeFlags { k: Some(3), ..ModeFlags::default() };
    let err = registry.with_flags("entries", &k, &[]).unwrap_err().to_string();
    assert_eq!(err, "-k does not apply to --mode entries");
    let err = registry.with_flags("entries", &ModeFlags::default(), &[Setting::Interesting]).unwrap_err();
    assert_eq!(err.to_string(), "--interesting does not apply to --mode entries");

    // Run on the fixture: the program's own output, and the entries its source gives.
    let bytes = fixture();
    let prepared = Prepared::new(&bytes, "recursion.wasm", &mode, &Inputs::default()).unwrap();
    let engine = pathprof_runtime::engine().unwrap();
    let run = prepared.run(&engine, &config()).unwrap();
    assert_eq!(run.outcome.exit_code, 0);
    let expected = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/c/recursion.stdout.expected"));
    assert_eq!(run.outcome.stdout, expected.unwrap());
    let profile = prepared.profile(&run, &config()).unwrap();
    let counted = entries(&profile.mode);
    assert_eq!(counted.get("fib"), Some(&1973), "{counted:?}");
    assert_eq!(counted.get("new_max_depth"), Some(&15), "{counted:?}");
    assert_eq!(counted.get("__original_main"), Some(&1), "{counted:?}");

    // Written and read back, merged with itself, reported.
    let text = profile.to_json();
    let read = Profile::from_json(&text).unwrap();
    assert_eq!(read, profile);
    let merged = pathprof::merge::merge(&registry, &[("a".into(), read.clone()), ("b".into(), read)]).unwrap();
    assert_eq!(entries(&merged.mode).get("fib"), Some(&(2 * 1973)));
    assert_eq!(merged.runs, 2);
    assert!(pathprof::merge::merge(&Registry::built_in(), &[("a".into(), profile.clone())]).is_err());
    let mut out = Vec::new();
    let rank = pathprof::view::Rank::Cost;
    pathprof::render::paths::text(&mut out, &registry, &profile, 10, None, rank).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with("pathprof: entries profile of recursion.wasm"), "{out}");
    assert!(out.contains("  entered fib 1973 times\n"), "{out}");
}
