//! `pathprof bench`: each mode's overhead (and, for `pep`, accuracy) against the uninstrumented
//! programs of a Sightglass-style corpus, side by side in one run.

use anyhow::{bail, Context, Result};
use pathprof::bench::hints::{bench_hints, HintBenchOptions};
use pathprof::bench::{bench, BenchOptions, Rounds};
use pathprof::files::write_atomically;
use pathprof::hint::HintOptions;
use pathprof::modes::Setting;
use pathprof::render;
use pathprof::{Mode, ModeFlags, Registry};
use pathprof_runtime::Stopper;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Folder of programs (searched recursively for `.wasm` files).
    corpus: PathBuf,
    #[arg(long, default_value = "bl", value_delimiter = ',', help = modes_help())]
    modes: Vec<String>,
    /// Least number of runs per mode.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Most runs per mode.
    #[arg(long, default_value_t = 200)]
    max_runs: usize,
    /// Stop repeating once every mode's median absolute deviation is within this fraction.
    #[arg(long, default_value_t = 0.02)]
    spread: f64,
    /// Seconds of runs per program after which no more rounds start.
    #[arg(long, default_value_t = 60.0)]
    budget: f64,
    /// Only programs whose path contains this string.
    #[arg(long)]
    filter: Option<String>,
    /// Leave programs whose uninstrumented bench region lasts less than this many seconds out of
    /// the summary (they keep their row).
    #[arg(long, default_value_t = 0.0)]
    min_seconds: f64,
    /// Also measure each mode that takes --hot-from (bl, pep) guided: instrumenting only the
    /// functions that carried SHARE of an exact profile's branch flow (shown as `MODE hot`).
    #[arg(long, value_name = "SHARE", allow_negative_numbers = true)]
    hot_share: Option<f64>,
    /// Also measure each mode that takes --edge-profile (bl, pep, kbl, ppp, events) numbered from
    /// the profile of one unmeasured run of MODE (bl for exact edge counts, pep for sampled ones),
    /// instead of static estimates (shown as `MODE edges`); with --hot-share too, also both
    /// together (`MODE hot edges`).
    #[arg(long, value_name = "MODE")]
    edge_profile_from: Option<String>,
    /// Also measure each mode that takes interesting segments (ippp) with the segments of one
    /// unmeasured ips:1 run as interesting (shown as `MODE tested`); ippp:slots always takes them.
    #[arg(long)]
    tested_segments: bool,
    /// Measure each kbl mode folded on each of these numbers of threads (shown as `MODE ×N`), side
    /// by side (default: the cores the program leaves free).
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = clap::value_parser!(u16).range(1..=256))]
    fold_threads: Vec<u16>,
    /// Also write the figures as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Measure branch hints instead of modes: each program's module with hints from a bl profile of
    /// it, run with branch hinting off and on, with the hints inverted, with hints from a pep
    /// profile of it, and with hints from another input where the corpus has one.
    #[arg(long, conflicts_with = "modes")]
    hints: bool,
}

pub fn run(a: Args, stopper: &Stopper) -> Result<i32> {
    if a.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if !a.min_seconds.is_finite() || a.min_seconds < 0.0 {
        bail!("--min-seconds must be a number of seconds, at least 0");
    }
    if let Some(share) = a.hot_share {
        pathprof::inputs::check_share(share).context("--hot-share")?;
    }
    let rounds =
        Rounds { min_runs: a.runs, max_runs: a.max_runs.max(a.runs), spread: a.spread, budget_seconds: a.budget };
    if a.hints {
        return hints(a, rounds, stopper);
    }
    let options = BenchOptions {
        modes: with_fold_threads(Registry::built_in().parse_list(&a.modes)?, &a.fold_threads)?,
        rounds,
        filter: a.filter,
        min_seconds: a.min_seconds,
        stopper: Some(stopper.clone()),
        hot_share: a.hot_share,
        edge_profile_from: a.edge_profile_from.as_deref().map(edge_guide).transpose()?,
        tested_segments: a.tested_segments,
    };
    if options.tested_segments && !options.labels().iter().any(|l| l.ends_with(" tested")) {
        bail!("--tested-segments: none of the modes measured takes interesting segments (ippp does)");
    }
    if options.edge_profile_from.is_some() && !options.edge_guided() {
        bail!("--edge-profile-from: none of the modes measured takes an edge profile");
    }
    let mut out = std::io::stdout();
    render::bench::header(&mut out, &options.labels())?;
    let result = bench(&a.corpus, &options, |p| {
        let mut out = std::io::stdout();
        let _ = render::bench::row(&mut out, p);
        let _ = render::bench::details(&mut out, p);
    })?;
    render::bench::summary(&mut out, &result, options.timed_from())?;
    render::bench::summary_vs_bl(&mut out, &result)?;
    if let Some(path) = a.json {
        write_atomically(&path, serde_json::to_string_pretty(&result)?.as_bytes())?;
    }
    match stopper.reason() {
        Some(reason) => {
            eprintln!("pathprof: bench stopped ({}): {} programs measured", reason.name(), result.programs.len());
            Ok(reason.exit_code())
        }
        None => Ok(0),
    }
}

/// The mode of `--edge-profile-from`: one whose profile has paths without other inputs.
fn edge_guide(spec: &str) -> Result<Mode> {
    let guide = Registry::built_in().parse(spec).context("--edge-profile-from")?;
    if guide.is_baseline() || guide.requires(Setting::Interesting) {
        bail!("--edge-profile-from takes a mode that profiles paths on its own (bl, pep, …), not {guide}");
    }
    Ok(guide)
}

/// The help of `--modes`.
fn modes_help() -> String {
    format!("Modes to compare with none, comma-separated, each as for `run --mode`: {}", Registry::built_in().grammar())
}

/// `bench --hints`.
fn hints(a: Args, rounds: Rounds, stopper: &Stopper) -> Result<i32> {
    let options =
        HintBenchOptions { rounds, filter: a.filter, hints: HintOptions::default(), stopper: Some(stopper.clone()) };
    let mut out = std::io::stdout();
    render::hints::header(&mut out)?;
    let report = bench_hints(&a.corpus, &options, |f| {
        let _ = render::hints::row(&mut std::io::stdout(), f);
    })?;
    render::hints::summary(&mut out, &report)?;
    if let Some(path) = a.json {
        write_atomically(&path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    Ok(stopper.reason().map_or(0, |r| r.exit_code()))
}

/// `modes`, each that folds a stream once per number of `threads` when some are given.
fn with_fold_threads(modes: Vec<Mode>, threads: &[u16]) -> Result<Vec<Mode>> {
    let mut out = Vec::new();
    for mode in modes {
        if threads.is_empty() || !mode.accepts(Setting::FoldThreads) {
            out.push(mode);
            continue;
        }
        for &n in threads {
            out.push(mode.with_flags(&ModeFlags { fold_threads: Some(usize::from(n)), ..ModeFlags::default() })?);
        }
    }
    Ok(out)
}
