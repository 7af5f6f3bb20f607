//! `pathprof bench --hints`: what branch hints from a profile make of a program's speed, measured
//! side by side in one run.
//!
//! For every program of a corpus (set up as [`bench`](super) sets it up), a `bl` profile of one run
//! gives the branch hints ([`crate::hint`]) of the program's module. The hinted module then runs,
//! interleaved and each run compiled afresh, in four variants:
//!
//! * `off` — with branch hinting off in the engine: the baseline, the code compiled as without hints;
//! * `on` — with it on: Cranelift lays the unlikely side of every hinted branch out of line;
//! * `inverted` — the hints turned round, with it on: a control that must not be faster;
//! * `other` — hints from a profile of another input than the timed one (where the program's folder
//!   has a `small.input` beside its `default.input`, the profile is of a run on the small one; where
//!   a `<stem>.small.args` lies beside the program, of a run with those arguments), with hinting on;
//! * `pep` — hints from a `pep` profile of the timed input (sampled edge counts [PEP05 §6.5]), with
//!   hinting on. Its counts are samples: a branch is hinted when its samples reach the least count
//!   scaled by the share of path ends sampled (the samples taken over the `bl` run's path ends), and
//!   at least 29.
//!
//! Each variant's ratio is its median over `off`'s. The machine code of the hinted module compiled
//! with hinting off and on is compared, so that a ratio near 1 is known to come from changed code
//! that runs as fast, not from hints the engine ignored.

use super::corpus::{each_program, Setup};
use super::rounds::{median, spread, Rounds};
use super::MIN_TIMED_SECONDS;
use crate::hint::{hint, inverted, with_hints, HintOptions};
use crate::inputs::Inputs;
use crate::modes::bl::Bl;
use crate::modes::Mode;
use crate::profiler::Prepared;
use anyhow::{Context, Result};
use pathprof_core::profile::Profile;
use pathprof_runtime::{EngineOptions, RunConfig, Stopper};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of a benchmark of branch hints.
pub struct HintBenchOptions {
    pub rounds: Rounds,
    pub filter: Option<String>,
    pub hints: HintOptions,
    pub stopper: Option<Stopper>,
}

/// The figures of one program.
#[derive(Serialize)]
pub struct HintFigures {
    pub program: String,
    /// Two-way branches of the module, and those hinted.
    pub branches: usize,
    pub hinted: usize,
    /// Whether the machine code of the hinted module differs with hinting on (none for a
    /// component, whose code is not compared).
    pub code_changed: Option<bool>,
    pub runs: usize,
    pub off_median_seconds: f64,
    pub off_spread: f64,
    /// Medians over `off`'s.
    pub on_ratio: f64,
    pub inverted_ratio: f64,
    /// With hints from another input, when the corpus has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_input_ratio: Option<f64>,
    /// Branches hinted from the `pep` profile, and the ratio with those hints.
    pub pep_hinted: usize,
    pub pep_ratio: f64,
}

impl HintFigures {
    /// Whether the unhinted bench region is long enough to time ([`MIN_TIMED_SECONDS`]).
    pub fn timed(&self) -> bool {
        self.off_median_seconds >= MIN_TIMED_SECONDS
    }
}

/// A variant's ratios over the programs.
#[derive(Serialize)]
pub struct HintSummary {
    pub variant: &'static str,
    pub programs: usize,
    pub geomean_ratio: f64,
    /// Programs at least 2 % faster, and at least 1 % slower.
    pub faster_2_percent: Vec<String>,
    pub slower_1_percent: Vec<String>,
}

#[derive(Serialize)]
pub struct HintReport {
    pub programs: Vec<HintFigures>,
    pub summary: Vec<HintSummary>,
    /// Over the programs that `bl`'s hints make at least 2 % faster: the speedup of `pep`'s hints
    /// as a share of theirs (the sum of `1 − pep` over the sum of `1 − on`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pep_share_of_speedup: Option<f64>,
    /// Programs whose bench region is too short to time, left out of the summary.
    pub untimed: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<&'static str>,
}

/// One way of running the hinted program.
struct Variant {
    name: &'static str,
    engine: pathprof_runtime::Engine,
    code: Vec<u8>,
    times: Vec<f64>,
}

/// The largest ratio of a variant that made a program faster: at least 2 %.
const FASTER: f64 = 0.98;

/// One variant's ratio (hinted over unhinted median) in a program's figures, when measured.
type Ratio = fn(&HintFigures) -> Option<f64>;

/// Benchmarks the branch hints of every program under `dir`.
pub fn bench_hints(
    dir: &Path,
    options: &HintBenchOptions,
    mut progress: impl FnMut(&HintFigures),
) -> Result<HintReport> {
    let off = pathprof_runtime::engine_with(&EngineOptions { branch_hinting: false, cache: None, polls: false })?;
    let on = pathprof_runtime::engine_with(&EngineOptions { branch_hinting: true, cache: None, polls: false })?;
    let (programs, stopped) = each_program(
        dir,
        options.filter.as_deref(),
        options.stopper.as_ref(),
        |wasm, name| bench_program(&off, &on, wasm, name, options),
        &mut progress,
    )?;
    // A bench region too short to time gives noise, as in `bench`: such programs keep their row.
    let untimed: Vec<String> = programs.iter().filter(|f| !f.timed()).map(|f| f.program.clone()).collect();
    let sped_up = programs.iter().filter(|f| f.timed() && f.on_ratio <= FASTER);
    let (pep, bl) = sped_up.fold((0.0, 0.0), |(p, b), f| (p + 1.0 - f.pep_ratio, b + 1.0 - f.on_ratio));
    let pep_share_of_speedup = (bl > 0.0).then(|| pep / bl);
    let mut report = HintReport { programs, summary: Vec::new(), pep_share_of_speedup, untimed, stopped };
    let ratios: [(&'static str, Ratio); 4] = [
        ("on", |f| Some(f.on_ratio)),
        ("inverted", |f| Some(f.inverted_ratio)),
        ("other input", |f| f.other_input_ratio),
        ("pep", |f| Some(f.pep_ratio)),
    ];
    for (variant, ratio) in ratios {
        let of: Vec<(f64, &str)> = report
            .programs
            .iter()
            .filter(|f| f.timed())
            .filter_map(|f| Some((ratio(f)?, f.program.as_str())))
            .collect();
        if of.is_empty() {
            continue;
        }
        let geomean = (of.iter().map(|(r, _)| r.ln()).sum::<f64>() / of.len() as f64).exp();
        report.summary.push(HintSummary {
            variant,
            programs: of.len(),
            geomean_ratio: geomean,
            faster_2_percent: of.iter().filter(|(r, _)| *r <= FASTER).map(|(_, p)| p.to_string()).collect(),
            slower_1_percent: of.iter().filter(|(r, _)| *r >= 1.01).map(|(_, p)| p.to_string()).collect(),
        });
    }
    Ok(report)
}

/// A profile of `setup`'s program in `mode` from a run with `config`; `None` when the run was
/// stopped.
fn profile_of(
    engine: &pathprof_runtime::Engine,
    setup: &Setup,
    config: &RunConfig,
    name: &str,
    mode: &Mode,
) -> Result<Option<Profile>> {
    let prepared = Prepared::new(&setup.bytes, name, mode, &Inputs::default())?;
    let run = prepared.run(engine, config)?;
    if run.outcome.stopped.is_some() {
        return Ok(None);
    }
    setup.status.check(&run.outcome, format_args!("{name}: the profiled run ({mode})"))?;
    prepared.profile(&run, config).map(Some)
}

/// The hints of `setup`'s program from a `bl` run with `config` (its whole profile), with that
/// profile; `None` when the run was stopped.
fn hints_from(
    engine: &pathprof_runtime::Engine,
    setup: &Setup,
    config: &RunConfig,
    name: &str,
    options: &HintOptions,
) -> Result<Option<(crate::hint::Hinted, Profile)>> {
    let Some(profile) = profile_of(engine, setup, config, name, &Mode::new(Bl))? else { return Ok(None) };
    Ok(Some((hint(&setup.bytes, &profile, options)?, profile)))
}

/// The fewest samples of a branch that `pep`'s hints take: with fewer, a branch whose bias is below
/// 0.9 goes one way in every sample more than 5 % of the time (0.9^29 < 0.05).
const MIN_SAMPLES: u64 = 29;

/// The hints of `setup`'s program from a `pep` run with `config`, whose sample counts are held to
/// `options`' least count scaled by the share of `exact`'s path ends the run sampled, and to at
/// least [`MIN_SAMPLES`]; `None` when the run was stopped.
fn pep_hints(
    engine: &pathprof_runtime::Engine,
    setup: &Setup,
    config: &RunConfig,
    name: &str,
    options: &HintOptions,
    exact: &Profile,
) -> Result<Option<crate::hint::Hinted>> {
    let pep = Mode::parse("pep").expect("pep is a mode");
    let Some(profile) = profile_of(engine, setup, config, name, &pep)? else { return Ok(None) };
    let taken = profile.mode.sampling().map_or(0, |s| s.samples_taken);
    let share = if exact.path_executions.0 == 0 { 1.0 } else { taken as f64 / exact.path_executions.0 as f64 };
    let min_count = ((options.min_count as f64 * share.min(1.0)).round() as u64).max(MIN_SAMPLES);
    hint(&setup.bytes, &profile, &HintOptions { min_count, ..*options }).map(Some)
}

/// A folder like `folder` but whose `default.input` is its `small.input`: another input to profile
/// on (`None` when the folder has no small input).
fn other_input(folder: &Path) -> Result<Option<tempfile::TempDir>> {
    if !folder.join("small.input").is_file() || !folder.join("default.input").is_file() {
        return Ok(None);
    }
    let dir = tempfile::tempdir()?;
    for entry in std::fs::read_dir(folder)? {
        let path = entry?.path();
        let name = path.file_name().expect("an entry has a name");
        let source: PathBuf = if name == "default.input" { folder.join("small.input") } else { path.clone() };
        std::fs::copy(&source, dir.path().join(name)).with_context(|| format!("cannot copy {}", source.display()))?;
    }
    Ok(Some(dir))
}

/// The figures of one program, or `None` when a run of it was stopped.
fn bench_program(
    off: &pathprof_runtime::Engine,
    on: &pathprof_runtime::Engine,
    wasm: &Path,
    name: &str,
    options: &HintBenchOptions,
) -> Result<Option<HintFigures>> {
    let setup = Setup::of(wasm, name, options.stopper.as_ref())?;
    let Some((hinted, exact)) = hints_from(off, &setup, &setup.config, name, &options.hints)? else {
        return Ok(None);
    };
    let Some(from_pep) = pep_hints(off, &setup, &setup.config, name, &options.hints, &exact)? else {
        return Ok(None);
    };
    let pep_hinted = from_pep.hinted;
    let core_module = None;
    let mut variants = vec![
        Variant { name: "off", engine: off.clone(), code: hinted.bytes.clone(), times: Vec::new() },
        Variant { name: "on", engine: on.clone(), code: hinted.bytes.clone(), times: Vec::new() },
        Variant {
            name: "inverted",
            engine: on.clone(),
            code: with_hints(&setup.bytes, core_module, &inverted(&hinted.hints))?,
            times: Vec::new(),
        },
        Variant { name: "pep", engine: on.clone(), code: from_pep.bytes, times: Vec::new() },
    ];
    let folder = wasm.parent().expect("a program is in a folder");
    let other = other_input(folder)?;
    if other.is_some() || setup.other_args.is_some() {
        let mut config = setup.config.clone();
        if let Some(other) = &other {
            config.dirs[0].0 = other.path().to_path_buf();
        }
        if let Some(args) = &setup.other_args {
            config.args = args.clone();
        }
        let Some((from_other, _)) = hints_from(off, &setup, &config, name, &options.hints)? else { return Ok(None) };
        variants.push(Variant { name: "other", engine: on.clone(), code: from_other.bytes, times: Vec::new() });
    }
    let text = |engine: &pathprof_runtime::Engine| -> Result<Option<[u8; 32]>> {
        let (program, _) = pathprof_runtime::compile(engine, &hinted.bytes)?;
        Ok(program.text().map(|t| Sha256::digest(t).into()))
    };
    let code_changed = match (text(off)?, text(on)?) {
        (Some(a), Some(b)) => Some(a != b),
        _ => None,
    };
    if !measure(&mut variants, &setup, options, name)? {
        return Ok(None);
    }
    let off_median = median(&variants[0].times);
    let ratio = |name: &str| variants.iter().find(|v| v.name == name).map(|v| median(&v.times) / off_median);
    Ok(Some(HintFigures {
        program: name.to_string(),
        branches: hinted.branches,
        hinted: hinted.hinted,
        code_changed,
        runs: variants[0].times.len(),
        off_median_seconds: off_median,
        off_spread: spread(&variants[0].times),
        on_ratio: ratio("on").expect("the variant on"),
        inverted_ratio: ratio("inverted").expect("the variant inverted"),
        other_input_ratio: ratio("other"),
        pep_hinted,
        pep_ratio: ratio("pep").expect("the variant pep"),
    }))
}

/// Runs the variants in rounds, interleaved, until their medians are stable; `false` when a run
/// was stopped.
fn measure(variants: &mut [Variant], setup: &Setup, options: &HintBenchOptions, name: &str) -> Result<bool> {
    let start = Instant::now();
    let mut reference = None;
    for round in 0.. {
        if options.rounds.enough(round, start, variants.iter().map(|v| v.times.as_slice())) {
            break;
        }
        for v in variants.iter_mut() {
            // A fresh compilation per run, and a run unmeasured before the first (see `bench`).
            let (program, _) = pathprof_runtime::compile(&v.engine, &v.code)?;
            let run = || {
                pathprof_runtime::run_module(&v.engine, &program, None, pathprof_runtime::NoCollector, &setup.config)
            };
            if v.times.is_empty() {
                run()?;
            }
            let (out, ()) = run()?;
            if out.stopped.is_some() {
                return Ok(false);
            }
            setup.status.check(&out, format_args!("{name} with hints {}", v.name))?;
            setup.check_output(name, &format!("hints {}", v.name), &out, &mut reference)?;
            v.times.push(out.bench_region_seconds.unwrap_or(out.wall_seconds));
        }
    }
    Ok(true)
}
