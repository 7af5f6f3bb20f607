//! `pathprof bench`: overhead of each profiling mode against the uninstrumented program, measured side
//! by side in one run.
//!
//! For every program of a Sightglass-style corpus, the original and each mode's instrumented module
//! run in fresh instances, interleaved (none, mode, none, mode, …), each run timed over its bench
//! region (`bench.start` → `bench.end`). Every run compiles its module afresh, because where compiled
//! code lands can change a program's speed by tens of per cent; short programs run once unmeasured
//! first, so that the fresh code is not timed cold. Every run's output is checked against
//! the program's expected files: a changed output is an error, not a data point. Runs repeat until the
//! medians are stable (relative median absolute deviation at most `--spread`), between `--runs` and
//! `--max-runs` rounds and within `--budget` seconds per program.
//!
//! Modes: `bl` (exact Ball–Larus counting), `pep` (sampled; `pep:S`, `pep:S:T` and `pep:every:N` for
//! other samplings) and `kbl:K` (k-BLPP: the path IDs streamed into a k-slab forest for sequences of up
//! to `K` paths). When `bl` is among the modes, every other mode's median is also given over `bl`'s.
//! A `pep` mode's profile of every run is compared with the exact profile of the program (seed 004
//! §6.3–6.4, as `pathprof compare`), which gives the overhead/accuracy trade-off of each sampling
//! in one run.

use anyhow::{anyhow, bail, Context, Result};
use pathprof_core::accuracy::{compare_functions, Accuracy, HOT_THRESHOLD};
use pathprof_core::profile::FunctionProfile;
use pathprof_runtime::RunConfig;
use pathprof_wasm::map::{Counters, RawCounts};
use pathprof_wasm::{InstrumentOptions, ModuleInfo};
use serde::Serialize;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Largest `K` of a `kbl:K` mode (as for `pathprof run -k`).
pub const MAX_K: usize = 64;

/// A profiling mode to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The uninstrumented program.
    None,
    /// Exact Ball–Larus path counting.
    Bl,
    /// Sampled path profiling, with this sampling.
    Pep(PepSampling),
    /// k-BLPP with sequences of up to this many paths.
    Kbl(usize),
}

/// How a `pep` mode samples (`pathprof run --mode pep --samples S --stride T` or `--every N`; the
/// timer ticks at `run`'s default period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PepSampling {
    /// At every tick, a rotating stride of `1..=stride` path ends go by, then `samples` are taken.
    Timer { samples: u32, stride: u32 },
    /// Every `N`-th path end, counted by the host (deterministic; every path end calls it).
    Every(u64),
}

impl Default for PepSampling {
    fn default() -> Self {
        let d = pathprof_runtime::Sampling::default();
        PepSampling::Timer { samples: d.samples, stride: d.stride }
    }
}

impl PepSampling {
    /// The runtime's sampling settings.
    pub fn sampling(self) -> pathprof_runtime::Sampling {
        let d = pathprof_runtime::Sampling::default();
        match self {
            PepSampling::Timer { samples, stride } => pathprof_runtime::Sampling { samples, stride, ..d },
            PepSampling::Every(n) => pathprof_runtime::Sampling { every: Some(n), ..d },
        }
    }

    /// Reads what follows `pep:`: `S`, `S:T` or `every:N`.
    fn parse(spec: &str, settings: &str) -> Result<PepSampling> {
        let whole = |what: &str, v: &str, max: u64| -> Result<u64> {
            match v.parse::<u64>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => bail!("mode {spec:?}: {what} must be a whole number from 1 to {max}"),
            }
        };
        if let Some(n) = settings.strip_prefix("every:") {
            return Ok(PepSampling::Every(whole("N", n, u64::MAX)?));
        }
        let (s, t) = match settings.split_once(':') {
            Some((s, t)) => (s, Some(t)),
            None => (settings, None),
        };
        let samples = whole("S", s, u64::from(crate::MAX_SAMPLES_PER_TICK))? as u32;
        let stride = match t {
            Some(t) => whole("T", t, u64::from(u32::MAX))? as u32,
            None => pathprof_runtime::Sampling::default().stride,
        };
        Ok(PepSampling::Timer { samples, stride })
    }
}

impl Mode {
    /// Reads `none`, `bl`, `pep`, `pep:S`, `pep:S:T`, `pep:every:N` or `kbl:K`.
    pub fn parse(spec: &str) -> Result<Mode> {
        let valid = format!("valid modes: none, bl, pep, pep:S, pep:S:T, pep:every:N, kbl:K with K from 1 to {MAX_K}");
        Ok(match spec {
            "none" => Mode::None,
            "bl" => Mode::Bl,
            "pep" => Mode::Pep(PepSampling::default()),
            _ => {
                if let Some(settings) = spec.strip_prefix("pep:") {
                    Mode::Pep(PepSampling::parse(spec, settings)?)
                } else if let Some(k) = spec.strip_prefix("kbl:") {
                    match k.parse::<usize>() {
                        Ok(k) if (1..=MAX_K).contains(&k) => Mode::Kbl(k),
                        _ => bail!("mode {spec:?}: K must be a whole number from 1 to {MAX_K} ({valid})"),
                    }
                } else {
                    bail!("unknown mode {spec:?} ({valid})")
                }
            }
        })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let default_stride = pathprof_runtime::Sampling::default().stride;
        match *self {
            Mode::None => f.write_str("none"),
            Mode::Bl => f.write_str("bl"),
            Mode::Pep(s) if s == PepSampling::default() => f.write_str("pep"),
            Mode::Pep(PepSampling::Timer { samples, stride }) if stride == default_stride => {
                write!(f, "pep:{samples}")
            }
            Mode::Pep(PepSampling::Timer { samples, stride }) => write!(f, "pep:{samples}:{stride}"),
            Mode::Pep(PepSampling::Every(n)) => write!(f, "pep:every:{n}"),
            Mode::Kbl(k) => write!(f, "kbl:{k}"),
        }
    }
}

/// The modes of a `--modes` list, checked and spelt canonically (`kbl:08` is `kbl:8`); a mode given
/// twice is an error.
pub fn parse_modes(specs: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for spec in specs {
        let name = Mode::parse(spec.trim())?.to_string();
        if out.contains(&name) {
            bail!("mode {name} is given twice");
        }
        out.push(name);
    }
    Ok(out)
}

/// Options of one benchmark session.
pub struct BenchOptions {
    /// Modes to compare with `none` (see [`Mode::parse`]).
    pub modes: Vec<String>,
    pub min_runs: usize,
    pub max_runs: usize,
    pub spread: f64,
    pub budget_seconds: f64,
    pub filter: Option<String>,
    /// Programs whose uninstrumented bench region is shorter keep their row but are left out of the
    /// summary (never less than [`MIN_TIMED_SECONDS`]).
    pub min_seconds: f64,
}

impl BenchOptions {
    /// Shortest uninstrumented bench region that the summary takes.
    pub fn timed_from(&self) -> f64 {
        self.min_seconds.max(MIN_TIMED_SECONDS)
    }
}

/// Figures of one mode on one program.
#[derive(Serialize)]
pub struct ModeFigures {
    pub mode: String,
    pub runs: usize,
    pub median_seconds: f64,
    /// Median absolute deviation relative to the median.
    pub spread: f64,
    /// Median of this mode over median of `none`.
    pub ratio: f64,
    pub instrumentation_seconds: f64,
    pub compile_seconds: f64,
    /// Compile time over the original's.
    pub compile_ratio: f64,
    /// Code section size over the original's.
    pub code_growth: f64,
    /// Bytes of counters in the profiler's memory plus the host's hash entries; in `kbl` modes also
    /// the stream buffer and the k-slab forest's nodes.
    pub profiler_memory_bytes: u64,
    /// Median of this mode over median of `bl`, when `bl` is among the modes (not for `bl` itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_bl: Option<f64>,
    /// `kbl` modes: nodes of the run's k-slab forest (the largest over the runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ksf_nodes: Option<u64>,
    /// `pep` modes: accuracy of the sampled profiles against the exact one, median over the runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<AccuracyFigures>,
}

/// Accuracy of a sampled profile (seed 004 §6.3–6.4, as `pathprof compare`), as fractions.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct AccuracyFigures {
    /// Wall weight matching of the hot paths by branch flow.
    pub paths: f64,
    pub relative_overlap: f64,
    pub absolute_overlap: f64,
}

impl AccuracyFigures {
    /// Each figure's median over `runs`; `None` without runs.
    fn median_of(runs: &[Accuracy]) -> Option<AccuracyFigures> {
        let of = |f: fn(&Accuracy) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        (!runs.is_empty()).then(|| AccuracyFigures {
            paths: of(|a| a.paths),
            relative_overlap: of(|a| a.relative_overlap),
            absolute_overlap: of(|a| a.absolute_overlap),
        })
    }
}

/// Shortest uninstrumented bench region whose ratios the summary takes: below it the region is about
/// as long as the host calls that delimit it (a program whose compiler folded the measured work
/// away), and its ratios are noise. Such programs keep their row, marked, and the summary names them.
pub const MIN_TIMED_SECONDS: f64 = 1e-6;

/// Figures of one program.
#[derive(Serialize)]
pub struct ProgramFigures {
    pub program: String,
    pub code_bytes: usize,
    /// Whether the uninstrumented bench region lasts at least [`BenchOptions::timed_from`], so that the
    /// summary takes its ratios.
    pub timed: bool,
    pub none_median_seconds: f64,
    pub none_spread: f64,
    pub none_runs: usize,
    pub none_compile_seconds: f64,
    pub modes: Vec<ModeFigures>,
}

/// Corpus-wide summary of one mode.
#[derive(Serialize)]
pub struct ModeSummary {
    pub mode: String,
    /// Programs summarised: those whose bench region is timed.
    pub programs: usize,
    /// Programs left out: bench region shorter than [`BenchOptions::timed_from`].
    pub untimed: Vec<String>,
    pub geomean_ratio: f64,
    pub max_ratio: f64,
    pub max_program: String,
    /// The same over `bl`'s medians, when `bl` is among the modes (not for `bl` itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_bl: Option<RatioSummary>,
    /// `pep` modes: the accuracy figures over the summarised programs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<AccuracySummary>,
}

/// One accuracy figure over the programs: its mean and its lowest value.
#[derive(Serialize)]
pub struct AccuracyRange {
    pub mean: f64,
    pub min: f64,
    pub min_program: String,
}

impl AccuracyRange {
    /// `None` without figures.
    fn of(figures: &[(f64, &str)]) -> Option<AccuracyRange> {
        let (min, min_program) = figures.iter().copied().min_by(|a, b| a.0.total_cmp(&b.0))?;
        let mean = figures.iter().map(|(f, _)| f).sum::<f64>() / figures.len() as f64;
        Some(AccuracyRange { mean, min, min_program: min_program.to_string() })
    }
}

/// A `pep` mode's accuracy over the programs.
#[derive(Serialize)]
pub struct AccuracySummary {
    pub paths: AccuracyRange,
    pub relative_overlap: AccuracyRange,
    pub absolute_overlap: AccuracyRange,
}

impl AccuracySummary {
    /// `None` without figures.
    fn of(figures: &[(AccuracyFigures, &str)]) -> Option<AccuracySummary> {
        let range = |f: fn(&AccuracyFigures) -> f64| {
            AccuracyRange::of(&figures.iter().map(|(a, p)| (f(a), *p)).collect::<Vec<_>>())
        };
        Some(AccuracySummary {
            paths: range(|a| a.paths)?,
            relative_overlap: range(|a| a.relative_overlap)?,
            absolute_overlap: range(|a| a.absolute_overlap)?,
        })
    }
}

/// Geometric mean and maximum of one mode's ratios over the programs.
#[derive(Serialize)]
pub struct RatioSummary {
    pub geomean: f64,
    pub max: f64,
    pub max_program: String,
}

impl RatioSummary {
    /// `None` without ratios.
    fn of(ratios: &[(f64, &str)]) -> Option<RatioSummary> {
        let (max, max_program) = ratios.iter().copied().max_by(|a, b| a.0.total_cmp(&b.0))?;
        let geomean = (ratios.iter().map(|(r, _)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        Some(RatioSummary { geomean, max, max_program: max_program.to_string() })
    }
}

#[derive(Serialize)]
pub struct BenchReport {
    pub programs: Vec<ProgramFigures>,
    pub summary: Vec<ModeSummary>,
}

struct Variant {
    mode: Mode,
    /// The module to run, compiled afresh for every round (see [`measure`]).
    code: Vec<u8>,
    map: Option<pathprof_wasm::ProfileMap>,
    instrumentation_seconds: f64,
    compile_seconds: f64,
    code_bytes: usize,
    times: Vec<f64>,
    hash_entries: usize,
    ksf_nodes: usize,
    /// `pep` modes: each run's accuracy against the exact profile.
    accuracy: Vec<Accuracy>,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn spread(v: &[f64]) -> f64 {
    let m = median(v);
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    if m > 0.0 {
        median(&dev) / m
    } else {
        0.0
    }
}

/// The `.wasm` files under `dir`, sorted.
pub fn programs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let p = entry?.path();
        if p.is_dir() {
            out.extend(programs(&p)?);
        } else if p.extension().is_some_and(|e| e == "wasm") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// `<stem>.<stream>.expected` beside the program, else `default.<stream>.expected`.
pub fn expected_output(wasm: &Path, stream: &str) -> Option<PathBuf> {
    let dir = wasm.parent()?;
    let stem = wasm.file_stem()?.to_string_lossy();
    [format!("{stem}.{stream}.expected"), format!("default.{stream}.expected")]
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

fn instrument_for(mode: Mode, bytes: &[u8]) -> Result<(Vec<u8>, Option<pathprof_wasm::ProfileMap>, f64)> {
    let options = match mode {
        Mode::None => return Ok((bytes.to_vec(), None, 0.0)),
        Mode::Bl => InstrumentOptions::default(),
        Mode::Pep(sampling) => InstrumentOptions {
            sampled: true,
            sample_buffer: sampling.sampling().sample_buffer(),
            ..InstrumentOptions::default()
        },
        Mode::Kbl(_) => InstrumentOptions { stream: true, ..InstrumentOptions::default() },
    };
    let t = Instant::now();
    let inst = pathprof_wasm::instrument(bytes, &options)?;
    Ok((inst.bytes, Some(inst.map), t.elapsed().as_secs_f64()))
}

/// Benchmarks every program under `dir`.
pub fn bench(dir: &Path, options: &BenchOptions, mut progress: impl FnMut(&ProgramFigures)) -> Result<BenchReport> {
    let modes: Vec<Mode> = parse_modes(&options.modes)?.iter().map(|m| Mode::parse(m)).collect::<Result<_>>()?;
    let engine = pathprof_runtime::engine()?;
    let dir = dir.canonicalize().with_context(|| format!("cannot read {}", dir.display()))?;
    let mut report = BenchReport { programs: Vec::new(), summary: Vec::new() };
    for wasm in programs(&dir)? {
        let name = wasm.strip_prefix(&dir).unwrap_or(&wasm).display().to_string();
        if options.filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let figures = bench_program(&engine, &wasm, &name, &modes, options).with_context(|| name.clone())?;
        progress(&figures);
        report.programs.push(figures);
    }
    for mode in modes.iter().filter(|m| **m != Mode::None).map(Mode::to_string) {
        let figures: Vec<(&ModeFigures, &str)> = report
            .programs
            .iter()
            .filter(|p| p.timed)
            .flat_map(|p| p.modes.iter().filter(|m| m.mode == mode).map(move |m| (m, p.program.as_str())))
            .collect();
        let untimed = report.programs.iter().filter(|p| !p.timed).map(|p| p.program.clone()).collect();
        let ratios: Vec<(f64, &str)> = figures.iter().map(|(m, p)| (m.ratio, *p)).collect();
        let Some(all) = RatioSummary::of(&ratios) else {
            continue;
        };
        let vs_bl: Vec<(f64, &str)> = figures.iter().filter_map(|(m, p)| Some((m.vs_bl?, *p))).collect();
        let accuracy: Vec<(AccuracyFigures, &str)> =
            figures.iter().filter_map(|(m, p)| Some((m.accuracy?, *p))).collect();
        report.summary.push(ModeSummary {
            mode,
            programs: ratios.len(),
            untimed,
            geomean_ratio: all.geomean,
            max_ratio: all.max,
            max_program: all.max_program,
            vs_bl: RatioSummary::of(&vs_bl),
            accuracy: AccuracySummary::of(&accuracy),
        });
    }
    Ok(report)
}

/// What the table rows leave out, as a line under a program's row (nothing when there is nothing to
/// add): each mode's median over `bl`'s, each `kbl` mode's k-slab-forest nodes, and each `pep` mode's
/// accuracy.
pub fn write_details(out: &mut impl Write, p: &ProgramFigures) -> Result<()> {
    let vs_bl: Vec<String> = p.modes.iter().filter_map(|m| Some(format!("{} {:.3}", m.mode, m.vs_bl?))).collect();
    let ksf: Vec<String> = p.modes.iter().filter_map(|m| Some(format!("{} {}", m.mode, m.ksf_nodes?))).collect();
    let accuracy: Vec<String> = p
        .modes
        .iter()
        .filter_map(|m| {
            let a = m.accuracy?;
            Some(format!(
                "{} {:.2} / {:.2} / {:.2}",
                m.mode,
                a.paths * 100.0,
                a.relative_overlap * 100.0,
                a.absolute_overlap * 100.0
            ))
        })
        .collect();
    let mut parts = Vec::new();
    if !vs_bl.is_empty() {
        parts.push(format!("vs bl: {}", vs_bl.join(", ")));
    }
    if !ksf.is_empty() {
        parts.push(format!("k-SF nodes: {}", ksf.join(", ")));
    }
    if !accuracy.is_empty() {
        parts.push(format!("accuracy (paths / relative / absolute overlap, %): {}", accuracy.join(", ")));
    }
    if !parts.is_empty() {
        writeln!(out, "{:<40} {}", "", parts.join("; "))?;
        out.flush()?;
    }
    Ok(())
}

/// The corpus-wide ratios over `bl` and the accuracy of sampled modes, one line per mode that has them.
pub fn write_summary_vs_bl(out: &mut impl Write, r: &BenchReport) -> Result<()> {
    for s in &r.summary {
        if let Some(v) = &s.vs_bl {
            writeln!(
                out,
                "{} against bl: geometric mean ratio {:.3}, maximum {:.3} ({})",
                s.mode, v.geomean, v.max, v.max_program
            )?;
        }
    }
    for s in &r.summary {
        if let Some(a) = &s.accuracy {
            let range = |name: &str, r: &AccuracyRange| {
                format!("{name} mean {:.2} %, lowest {:.2} % ({})", r.mean * 100.0, r.min * 100.0, r.min_program)
            };
            writeln!(
                out,
                "{} accuracy: {}; {}; {}",
                s.mode,
                range("path accuracy", &a.paths),
                range("relative overlap", &a.relative_overlap),
                range("absolute overlap", &a.absolute_overlap)
            )?;
        }
    }
    Ok(())
}

fn bench_program(
    engine: &pathprof_runtime::Engine,
    wasm: &Path,
    name: &str,
    modes: &[Mode],
    options: &BenchOptions,
) -> Result<ProgramFigures> {
    let bytes = std::fs::read(wasm)?;
    let info = ModuleInfo::read(&bytes)?;
    let expected: Vec<Option<Vec<u8>>> = ["stdout", "stderr"]
        .iter()
        .map(|s| expected_output(wasm, s).map(std::fs::read).transpose())
        .collect::<Result<_, _>>()?;
    let mut variants = Vec::new();
    for &mode in std::iter::once(&Mode::None).chain(modes.iter().filter(|m| **m != Mode::None)) {
        let (code, map, instrumentation_seconds) = instrument_for(mode, &bytes)?;
        let code_bytes = ModuleInfo::read(&code)?.code_size();
        let (_, compile_seconds) = pathprof_runtime::compile(engine, &code)?;
        variants.push(Variant {
            mode,
            code,
            map,
            instrumentation_seconds,
            compile_seconds,
            code_bytes,
            times: Vec::new(),
            hash_entries: 0,
            ksf_nodes: 0,
            accuracy: Vec::new(),
        });
    }
    let config = RunConfig {
        dirs: vec![(wasm.parent().unwrap().to_path_buf(), ".".to_string())],
        args: vec![wasm.file_name().unwrap().to_string_lossy().into_owned()],
        capture_output: true,
        ..RunConfig::default()
    };
    // Sampled profiles are compared with an exact one of the same program (the corpus's programs are
    // deterministic: every run takes the same paths): that of a `bl` run, measured when `bl` is among
    // the modes, else one more run.
    let sampled = modes.iter().any(|m| matches!(m, Mode::Pep(_)));
    let exact = match sampled && !modes.contains(&Mode::Bl) {
        true => Some(exact_profile(engine, &bytes, &config, name)?),
        false => None,
    };
    measure(engine, &mut variants, &config, &expected, options, name, exact)?;

    let none = &variants[0];
    let none_median = median(&none.times);
    let bl_median = variants.iter().find(|v| v.mode == Mode::Bl).map(|v| median(&v.times));
    let modes = variants[1..]
        .iter()
        .map(|v| {
            let counter_bytes: u64 = v.map.as_ref().map_or(0, |m| {
                m.functions
                    .iter()
                    .filter_map(|f| f.probes.as_ref())
                    .filter(|p| matches!(p.counters, Counters::Array { .. }))
                    .map(|p| 8 * p.plan.num_paths())
                    .sum()
            });
            let kbl = matches!(v.mode, Mode::Kbl(_));
            let stream_bytes = v.map.as_ref().and_then(|m| m.stream.as_ref()).map_or(0, |s| 8 * u64::from(s.capacity));
            let ksf_bytes = if kbl { (v.ksf_nodes * pathprof_core::kpath::NODE_BYTES) as u64 } else { 0 };
            ModeFigures {
                mode: v.mode.to_string(),
                runs: v.times.len(),
                median_seconds: median(&v.times),
                spread: spread(&v.times),
                ratio: median(&v.times) / none_median,
                instrumentation_seconds: v.instrumentation_seconds,
                compile_seconds: v.compile_seconds,
                compile_ratio: v.compile_seconds / none.compile_seconds,
                code_growth: v.code_bytes as f64 / none.code_bytes.max(1) as f64,
                profiler_memory_bytes: counter_bytes + 16 * v.hash_entries as u64 + stream_bytes + ksf_bytes,
                vs_bl: bl_median.filter(|_| v.mode != Mode::Bl).map(|b| median(&v.times) / b),
                ksf_nodes: kbl.then_some(v.ksf_nodes as u64),
                accuracy: AccuracyFigures::median_of(&v.accuracy),
            }
        })
        .collect();
    Ok(ProgramFigures {
        program: name.to_string(),
        code_bytes: info.code_size(),
        timed: none_median >= options.timed_from(),
        none_median_seconds: none_median,
        none_spread: spread(&none.times),
        none_runs: none.times.len(),
        none_compile_seconds: none.compile_seconds,
        modes,
    })
}

/// The exact profile of one unmeasured `bl` run.
fn exact_profile(
    engine: &pathprof_runtime::Engine,
    bytes: &[u8],
    config: &RunConfig,
    name: &str,
) -> Result<Vec<FunctionProfile>> {
    let (code, map, _) = instrument_for(Mode::Bl, bytes)?;
    let map = map.expect("bl mode has a map");
    let out = pathprof_runtime::run(engine, &code, Some(&map), config)?;
    completed(&out, name, Mode::Bl)?;
    profiles(&map, &out.counts, name, Mode::Bl)
}

/// Fails unless the run exited with status 0, without a trap.
fn completed(out: &pathprof_runtime::RunOutcome, name: &str, mode: Mode) -> Result<()> {
    if out.exit_code != 0 || out.trap.is_some() {
        bail!("{name} in mode {mode}: exit {} {}", out.exit_code, out.trap.as_deref().unwrap_or_default());
    }
    Ok(())
}

/// The function profiles of a run's counts.
fn profiles(
    map: &pathprof_wasm::ProfileMap,
    counts: &RawCounts,
    name: &str,
    mode: Mode,
) -> Result<Vec<FunctionProfile>> {
    map.function_profiles(counts).map_err(|e| anyhow!("{name} in mode {mode}: {e}"))
}

/// Programs whose median run is shorter than this run once unmeasured before each measured run (all
/// do in the first round).
const WARM_UP_BELOW_SECONDS: f64 = 0.05;

fn measure(
    engine: &pathprof_runtime::Engine,
    variants: &mut [Variant],
    config: &RunConfig,
    expected: &[Option<Vec<u8>>],
    options: &BenchOptions,
    name: &str,
    mut exact: Option<Vec<FunctionProfile>>,
) -> Result<()> {
    let start = Instant::now();
    let mut config = config.clone();
    let mut reference: Option<(Vec<u8>, Vec<u8>)> = None;
    let sampled = variants.iter().any(|v| matches!(v.mode, Mode::Pep(_)));
    // Counts of `pep` runs that wait for the exact profile (those before `bl`'s first run).
    let mut pending: Vec<(usize, RawCounts)> = Vec::new();
    for round in 0.. {
        let enough = round >= options.min_runs
            && (round >= options.max_runs
                || start.elapsed().as_secs_f64() > options.budget_seconds
                || variants.iter().all(|v| spread(&v.times) <= options.spread));
        if enough {
            break;
        }
        for (i, v) in variants.iter_mut().enumerate() {
            match v.mode {
                Mode::Kbl(k) => config.k = k,
                Mode::Pep(sampling) => config.sampling = sampling.sampling(),
                Mode::None | Mode::Bl => {}
            }
            // Where the compiled code and its data land in memory can shift a program's speed by tens of
            // per cent (keccak: 9.0 or 11.7 ms, whichever the process draws, uninstrumented as well).
            // A fresh compilation per run lets every mode draw from the same placements.
            // A short program (and any program in the first round) first runs once unmeasured, so that
            // its fresh code is not timed cold.
            let (module, _) = pathprof_runtime::compile(engine, &v.code)?;
            if v.times.is_empty() || median(&v.times) < WARM_UP_BELOW_SECONDS {
                pathprof_runtime::run_module(engine, &module, v.map.as_ref(), &config)?;
            }
            let out = pathprof_runtime::run_module(engine, &module, v.map.as_ref(), &config)?;
            completed(&out, name, v.mode)?;
            for (i, (stream, got)) in [("stdout", &out.stdout), ("stderr", &out.stderr)].into_iter().enumerate() {
                let want = match (&expected[i], &reference) {
                    (Some(e), _) => e,
                    (None, Some(r)) => {
                        if i == 0 {
                            &r.0
                        } else {
                            &r.1
                        }
                    }
                    (None, None) => continue,
                };
                if got != want {
                    bail!("{name} in mode {}: {stream} differs from the expected output", v.mode);
                }
            }
            if reference.is_none() {
                reference = Some((out.stdout.clone(), out.stderr.clone()));
            }
            v.times.push(out.bench_region_seconds.unwrap_or(out.wall_seconds));
            v.hash_entries = out.hash_entries;
            v.ksf_nodes = v.ksf_nodes.max(out.ksf.map_or(0, |f| f.nodes));
            match (v.mode, &v.map) {
                (Mode::Bl, Some(map)) if sampled && exact.is_none() => {
                    exact = Some(profiles(map, &out.counts, name, v.mode)?);
                }
                (Mode::Pep(_), _) => pending.push((i, out.counts)),
                _ => {}
            }
        }
        if let Some(exact) = &exact {
            for (i, counts) in pending.drain(..) {
                let v = &mut variants[i];
                let map = v.map.as_ref().expect("pep mode has a map");
                v.accuracy.push(compare_functions(exact, &profiles(map, &counts, name, v.mode)?, HOT_THRESHOLD));
            }
        }
    }
    Ok(())
}
