//! `pathprof bench`: each mode's overhead (and, for `pep`, accuracy) against the uninstrumented
//! programs of a Sightglass-style corpus, side by side in one run.

use anyhow::{bail, Result};
use pathprof::bench::{bench, BenchOptions};
use pathprof::files::write_atomically;
use pathprof::render;
use pathprof::Registry;
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
    /// Also write the figures as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<i32> {
    if a.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if !a.min_seconds.is_finite() || a.min_seconds < 0.0 {
        bail!("--min-seconds must be a number of seconds, at least 0");
    }
    let options = BenchOptions {
        modes: Registry::built_in().parse_list(&a.modes)?,
        min_runs: a.runs,
        max_runs: a.max_runs.max(a.runs),
        spread: a.spread,
        budget_seconds: a.budget,
        filter: a.filter,
        min_seconds: a.min_seconds,
    };
    let mut out = std::io::stdout();
    render::bench::header(&mut out, &options.modes)?;
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
    Ok(0)
}

/// The help of `--modes`.
fn modes_help() -> String {
    format!("Modes to compare with none, comma-separated, each as for `run --mode`: {}", Registry::built_in().grammar())
}
