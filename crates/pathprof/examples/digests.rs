//! Prints a digest of every instrumented module, its map, and (with `--run`) its profile, for every
//! program of a folder and every mode, so that a change meant to leave the instrumentation as it was
//! can be checked against the digests of the version before it:
//!
//! ```sh
//! cargo run --release -p pathprof --example digests -- ../shared/corpus > before.tsv
//! # ... the change ...
//! cargo run --release -p pathprof --example digests -- ../shared/corpus > after.tsv
//! diff before.tsv after.tsv
//! ```
//!
//! Each line is `program mode module-sha256 map-sha256 [profile-sha256]`. Profiles are digested
//! without their times (every field whose name ends in `_seconds`), and only for the deterministic
//! modes (timer sampling is not). Mode `trace` is the instrumentation of `pathprof hpp`; `ppp` modes
//! take the paths of a `bl` run as the interesting ones. Programs run as `pathprof bench` runs them:
//! their folder pre-opened as `.`, their file name as their only argument, and their random numbers
//! seeded.

use pathprof::profiled::ProfiledModule;
use pathprof::{Inputs, Interesting, Mode, Prepared, RunConfig};
use pathprof_core::plan::ExtraCuts;
use pathprof_core::PlanOptions;
use pathprof_wasm::{InstrumentOptions, SinkKind};
use sha2::{Digest, Sha256};
use std::path::Path;

const MODES: &[&str] = &[
    "bl",
    "pep",
    "pep:8:5",
    "pep:every:97",
    "pep:dup",
    "kbl",
    "kbl:8",
    "ppp",
    "ppp:slots",
    "events",
    "events:pd",
    "events:dec",
    "events:pc:merges",
    "events:pd:none",
];

/// Modes whose profiles repeat from run to run.
fn deterministic(mode: &str) -> bool {
    !mode.starts_with("pep") || mode.starts_with("pep:every")
}

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The profile's JSON without its times.
fn timeless(json: &str) -> String {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.retain(|k, _| !k.ends_with("_seconds"));
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: serde_json::Value = serde_json::from_str(json).expect("a profile is JSON");
    strip(&mut v);
    v.to_string()
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = args.iter().any(|a| a == "--run");
    let dirs: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let engine = pathprof_runtime::engine()?;
    for dir in dirs {
        for wasm in pathprof::bench::programs(Path::new(dir))? {
            let bytes = std::fs::read(&wasm)?;
            let name = wasm.display().to_string();
            let folder = wasm.parent().unwrap().to_path_buf();
            let config = RunConfig {
                dirs: vec![(folder, ".".to_string())],
                args: vec![wasm.file_name().unwrap().to_string_lossy().into_owned()],
                capture_output: true,
                random_seed: Some(1),
                ..RunConfig::default()
            };
            let bl = pathprof::profile(&bytes, &Mode::parse("bl")?, &config)?;
            let mut interesting = Interesting::default();
            interesting.add("bl", &bl.functions);
            for spec in MODES {
                let mode = Mode::parse(spec)?;
                let ppp = spec.starts_with("ppp");
                let inputs = Inputs { interesting: ppp.then_some(&interesting), ..Inputs::default() };
                let prepared = Prepared::new(&bytes, &name, &mode, &inputs)?;
                let map = prepared.map.as_ref().map(|m| m.to_json()).unwrap_or_default();
                let mut line = format!("{name}\t{spec}\t{}\t{}", sha(&prepared.code), sha(map.as_bytes()));
                if run && deterministic(spec) {
                    let r = prepared.run(&engine, &config)?;
                    let profile = prepared.profile(&r, &config)?;
                    line += &format!("\t{}", sha(timeless(&profile.to_json()).as_bytes()));
                }
                println!("{line}");
            }
            let options = InstrumentOptions {
                sink: SinkKind::Trace,
                plan: PlanOptions { cuts: ExtraCuts::Blocks, ..PlanOptions::default() },
                ..InstrumentOptions::default()
            };
            let inst = ProfiledModule::of(&bytes, None)?.instrument(&bytes, &options)?;
            println!("{name}\ttrace\t{}\t{}", sha(&inst.bytes), sha(inst.map.to_json().as_bytes()));
        }
    }
    Ok(())
}
