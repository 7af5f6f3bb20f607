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
//! The programs and how they run: [`corpus`]; how many rounds: [`Rounds`].
//!
//! Modes: `bl` (exact Ball–Larus counting), `pep` (sampled; `pep:S`, `pep:S:T` and `pep:every:N` for
//! other samplings) and `kbl[:K]` (k-BLPP: the path IDs streamed into a k-slab forest for sequences
//! of up to `K` paths, 4 when not given; `kbl:K:burst` streamed during bursts only). When `bl` is among the modes, every other mode's median is also given over `bl`'s.
//! A `pep` mode's profile of every run is compared with the exact profile of the program ([PEP05
//! §6.3–6.4], as `pathprof compare`), which gives the overhead/accuracy trade-off of each sampling
//! in one run.
//!
//! Guided variants, measured beside the modes they guide: `--hot-share` instruments only the
//! functions hot in an exact profile of the program (`MODE hot`); `--edge-profile-from MODE` numbers
//! paths and places increments by the edge frequencies of one unmeasured run of `MODE` (`bl`, or a
//! sampled `pep`) [PEP05 §3.4, Fig. 4], instead of static estimates (`MODE edges`); with both, also
//! the two together (`MODE hot edges`), as PEP's VM instruments only the methods it optimizes,
//! numbered from the edge profile it has of them.

mod corpus;
mod guide;
pub mod hints;
mod rounds;

pub use corpus::{expected_output, programs};
pub use rounds::Rounds;

use corpus::{each_program, Setup};
use guide::{label, Guide};
use rounds::{median, spread};

use crate::inputs::{HotFunctions, Inputs, Interesting};
use crate::modes::bl::Bl;
use crate::modes::ippp::{Ippp, IpppMode};
use crate::modes::none::Uninstrumented;
use crate::modes::{Mode, ModeRun, Setting};
use crate::profiler::Prepared;
use anyhow::{Context, Result};
use pathprof_core::accuracy::{compare_functions, Accuracy, HOT_THRESHOLD};
use pathprof_core::profile::{FunctionProfile, InterestingRule};
use pathprof_runtime::Stopper;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// Options of one benchmark session.
pub struct BenchOptions {
    /// Modes to compare with `none`.
    pub modes: Vec<Mode>,
    pub rounds: Rounds,
    pub filter: Option<String>,
    /// Programs whose uninstrumented bench region is shorter keep their row but are left out of the
    /// summary (never less than [`MIN_TIMED_SECONDS`]).
    pub min_seconds: f64,
    /// What may stop the benchmark (a signal): the program being measured is left out, and the
    /// report covers those measured before.
    pub stopper: Option<Stopper>,
    /// Also measure each mode that takes `--hot-from` guided: instrumenting only the functions
    /// that carried this share of the branch flow of an exact profile of the program.
    pub hot_share: Option<f64>,
    /// Also measure each mode that takes `--edge-profile` numbered from the profile of one
    /// unmeasured run of this mode.
    pub edge_profile_from: Option<Mode>,
    /// Also measure each mode that takes interesting segments (`ippp`) with those of one
    /// unmeasured `ips:K` run (which `ippp[:K]:slots`, needing them, always takes).
    pub tested_segments: bool,
}

impl BenchOptions {
    /// What each measured variant is called, in the order of the table's columns.
    pub fn labels(&self) -> Vec<String> {
        self.variants().map(|(mode, guide)| label(mode, guide)).collect()
    }

    /// The variants measured besides the baseline, in the order of the table's columns: each
    /// mode, and after it the mode guided as the options ask, where it takes that guide.
    fn variants(&self) -> impl Iterator<Item = (&Mode, Guide)> {
        let modes = self.modes.iter().filter(|m| !m.is_baseline());
        modes.flat_map(|m| {
            [Guide::Unguided, Guide::Hot, Guide::Edges, Guide::HotEdges, Guide::Tested]
                .into_iter()
                .filter(|&g| self.guides(m, g))
                .map(move |g| (m, g))
        })
    }

    /// Whether some mode is also measured numbered from an edge profile
    /// ([`BenchOptions::edge_profile_from`] given, and a mode that takes one).
    pub fn edge_guided(&self) -> bool {
        self.variants().any(|(_, g)| g.edges())
    }

    /// Whether `mode` is measured with `guide`.
    fn guides(&self, mode: &Mode, guide: Guide) -> bool {
        match guide {
            Guide::Unguided => true,
            Guide::Hot => self.hot_share.is_some() && mode.accepts(Setting::HotFrom),
            Guide::Edges => self.edge_profile_from.is_some() && mode.accepts(Setting::EdgeProfile),
            Guide::HotEdges => self.guides(mode, Guide::Hot) && self.guides(mode, Guide::Edges),
            Guide::Tested => self.tested_segments && mode.is::<Ippp>() && !mode.requires(Setting::Interesting),
        }
    }

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
    /// The figures the mode gives of each run (`kbl` modes: `ksf_nodes`, the nodes of the run's
    /// k-slab forest), the largest over the runs, by key.
    #[serde(flatten)]
    pub figures: BTreeMap<&'static str, u64>,
    /// The labels of `figures`, by key.
    #[serde(skip)]
    pub figure_labels: BTreeMap<&'static str, &'static str>,
    /// `pep` modes: accuracy of the sampled profiles against the exact one, median over the runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<AccuracyFigures>,
}

/// Accuracy of a sampled profile [PEP05 §6.3–6.4, as `pathprof compare`], as fractions.
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
/// away; an empty region measures 0.5 µs on an idle machine and 1 µs on a loaded one), and its
/// ratios are noise. Such programs keep their row, marked, and the summary names them.
pub const MIN_TIMED_SECONDS: f64 = 1e-5;

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
    /// Why the benchmark stopped before measuring every program, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<&'static str>,
}

struct Variant<'a> {
    prepared: Prepared<'a>,
    /// The mode, and what guides it.
    label: String,
    guide: Guide,
    compile_seconds: f64,
    code_bytes: usize,
    times: Vec<f64>,
    host_bytes: u64,
    /// The largest of each figure of the runs, with its label.
    figures: BTreeMap<&'static str, (&'static str, u64)>,
    /// `pep` modes: each run's accuracy against the exact profile.
    accuracy: Vec<Accuracy>,
}

impl Variant<'_> {
    fn mode(&self) -> &Mode {
        &self.prepared.mode
    }
}

/// Benchmarks every program under `dir`.
pub fn bench(dir: &Path, options: &BenchOptions, mut progress: impl FnMut(&ProgramFigures)) -> Result<BenchReport> {
    let modes = &options.modes;
    // Both sides of every ratio stop the same way: core modules through their polls, components
    // through epoch interruption (`pathprof_runtime::stop`).
    let polls = pathprof_runtime::engine_with(&pathprof_runtime::EngineOptions { polls: true, ..Default::default() })?;
    let epochs = pathprof_runtime::engine()?;
    let (programs, stopped) = each_program(
        dir,
        options.filter.as_deref(),
        options.stopper.as_ref(),
        |wasm, name| bench_program([&polls, &epochs], wasm, name, modes, options),
        &mut progress,
    )?;
    let mut report = BenchReport { programs, summary: Vec::new(), stopped };
    for mode in options.labels() {
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

/// The figures of one program, or `None` when a run of it was stopped.
fn bench_program(
    [polls, epochs]: [&pathprof_runtime::Engine; 2],
    wasm: &Path,
    name: &str,
    modes: &[Mode],
    options: &BenchOptions,
) -> Result<Option<ProgramFigures>> {
    let setup = Setup::of(wasm, name, options.stopper.as_ref())?;
    let engine = if pathprof_wasm::component::is_component(&setup.bytes) { epochs } else { polls };
    let (bytes, config) = (&setup.bytes, &setup.config);
    // Sampled profiles are compared with an exact one of the same program (the corpus's programs are
    // deterministic: every run takes the same paths), and modes that need interesting paths take
    // those of an exact one: that of one more `bl` run before the measured ones for them, else of a
    // measured `bl` run when `bl` is among the modes.
    let sampled = modes.iter().any(|m| m.sampled());
    let preferential = modes.iter().any(|m| m.requires(Setting::Interesting));
    let guided = options.variants().any(|(_, g)| g.hot());
    let exact = match (sampled && !modes.iter().any(|m| m.is::<Bl>())) || preferential || guided {
        true => match exact_profile(engine, &setup, name)? {
            Some(exact) => Some(exact),
            None => return Ok(None),
        },
        false => None,
    };
    let interesting = exact.as_ref().filter(|_| preferential).map(|exact| {
        let mut interesting = Interesting::default();
        interesting.add("a bl run", exact);
        interesting
    });
    // Modes that need interesting segments, or are measured with them, take those of one more
    // `ips:K` run, K their segments' depth.
    let depth = |mode: &Mode| mode.settings::<IpppMode>().map_or(1, |m| m.k);
    let mut tested: BTreeMap<usize, Interesting> = BTreeMap::new();
    for (mode, guide) in options.variants() {
        let wants = mode.is::<Ippp>() && (mode.requires(Setting::Interesting) || guide == Guide::Tested);
        let k = depth(mode);
        if !wants || tested.contains_key(&k) {
            continue;
        }
        let Some((prepared, run)) = unmeasured_run(engine, &setup, name, &Mode::parse(&format!("ips:{k}"))?)? else {
            return Ok(None);
        };
        let profile = prepared.profile(&run, config)?;
        let what = format!("an ips:{k} run");
        tested.insert(k, Interesting::of(bytes, &[(what, profile)], InterestingRule::Executed)?);
    }
    let hot = match (exact.as_ref(), options.hot_share) {
        (Some(exact), Some(share)) if guided => Some(HotFunctions::of_functions(exact, share)?),
        _ => None,
    };
    let edges = match &options.edge_profile_from {
        Some(guide) if options.edge_guided() => match unmeasured_run(engine, &setup, name, guide)? {
            Some((prepared, run)) => Some(prepared.profile(&run, config)?),
            None => return Ok(None),
        },
        _ => None,
    };
    let mut variants = Vec::new();
    let baseline = Mode::new(Uninstrumented);
    for (mode, guide) in std::iter::once((&baseline, Guide::Unguided)).chain(options.variants()) {
        let takes = mode.requires(Setting::Interesting);
        let inputs = Inputs {
            interesting: match mode.is::<Ippp>() {
                true => tested.get(&depth(mode)).filter(|_| takes || guide == Guide::Tested),
                false => interesting.as_ref().filter(|_| takes),
            },
            hot: hot.as_ref().filter(|_| guide.hot()),
            edge_profile: edges.as_ref().filter(|_| guide.edges()),
            ..Inputs::default()
        };
        let prepared = Prepared::new(bytes, name, mode, &inputs)?;
        let code_bytes = prepared.code_size()?;
        let (_, compile_seconds) = pathprof_runtime::compile(engine, &prepared.code)?;
        variants.push(Variant {
            label: label(mode, guide),
            guide,
            prepared,
            compile_seconds,
            code_bytes,
            times: Vec::new(),
            host_bytes: 0,
            figures: BTreeMap::new(),
            accuracy: Vec::new(),
        });
    }
    if !measure(engine, &mut variants, &setup, options, name, exact)? {
        return Ok(None);
    }

    let none = &variants[0];
    let none_median = median(&none.times);
    let bl_median =
        variants.iter().find(|v| v.mode().is::<Bl>() && v.guide == Guide::Unguided).map(|v| median(&v.times));
    let modes = variants[1..]
        .iter()
        .map(|v| {
            // The counter arrays in the profiler's memory, and what the host kept.
            let counter_bytes: u64 = v.prepared.map.as_ref().map_or(0, |m| m.arrays().iter().map(|a| a.bytes()).sum());
            ModeFigures {
                mode: v.label.clone(),
                runs: v.times.len(),
                median_seconds: median(&v.times),
                spread: spread(&v.times),
                ratio: median(&v.times) / none_median,
                instrumentation_seconds: v.prepared.instrumentation_seconds.unwrap_or(0.0),
                compile_seconds: v.compile_seconds,
                compile_ratio: v.compile_seconds / none.compile_seconds,
                code_growth: v.code_bytes as f64 / none.code_bytes.max(1) as f64,
                profiler_memory_bytes: counter_bytes + v.host_bytes,
                vs_bl: bl_median
                    .filter(|_| !v.mode().is::<Bl>() || v.guide != Guide::Unguided)
                    .map(|b| median(&v.times) / b),
                figures: v.figures.iter().map(|(&key, &(_, value))| (key, value)).collect(),
                figure_labels: v.figures.iter().map(|(&key, &(label, _))| (key, label)).collect(),
                accuracy: AccuracyFigures::median_of(&v.accuracy),
            }
        })
        .collect();
    Ok(Some(ProgramFigures {
        program: name.to_string(),
        code_bytes: variants[0].prepared.original_code_size(),
        timed: none_median >= options.timed_from(),
        none_median_seconds: none_median,
        none_spread: spread(&none.times),
        none_runs: none.times.len(),
        none_compile_seconds: none.compile_seconds,
        modes,
    }))
}

/// One unmeasured run of `mode`, its exit status checked; `None` when the run was stopped.
fn unmeasured_run<'a>(
    engine: &pathprof_runtime::Engine,
    setup: &'a Setup,
    name: &str,
    mode: &Mode,
) -> Result<Option<(Prepared<'a>, ModeRun)>> {
    let prepared = Prepared::new(&setup.bytes, name, mode, &Inputs::default())?;
    let run = prepared.run(engine, &setup.config)?;
    if run.outcome.stopped.is_some() {
        return Ok(None);
    }
    setup.status.check(&run.outcome, format_args!("{name} in mode {}", prepared.mode))?;
    Ok(Some((prepared, run)))
}

/// The exact profile of one unmeasured `bl` run; `None` when the run was stopped.
fn exact_profile(engine: &pathprof_runtime::Engine, setup: &Setup, name: &str) -> Result<Option<Vec<FunctionProfile>>> {
    match unmeasured_run(engine, setup, name, &Mode::new(Bl))? {
        Some((prepared, run)) => profiles(&prepared, &run, name).map(Some),
        None => Ok(None),
    }
}

/// The function profiles of a run.
fn profiles(prepared: &Prepared, run: &ModeRun, name: &str) -> Result<Vec<FunctionProfile>> {
    prepared.functions(run).with_context(|| format!("{name} in mode {}", prepared.mode))
}

/// Programs whose median run is shorter than this run once unmeasured before each measured run (all
/// do in the first round).
const WARM_UP_BELOW_SECONDS: f64 = 0.05;

/// Runs the variants in rounds until their medians are stable; `false` when a run was stopped.
fn measure(
    engine: &pathprof_runtime::Engine,
    variants: &mut [Variant],
    setup: &Setup,
    options: &BenchOptions,
    name: &str,
    mut exact: Option<Vec<FunctionProfile>>,
) -> Result<bool> {
    let start = Instant::now();
    let (config, status) = (&setup.config, setup.status);
    let mut reference: Option<(Vec<u8>, Vec<u8>)> = None;
    let sampled = variants.iter().any(|v| v.mode().sampled());
    // `pep` runs that wait for the exact profile (those before `bl`'s first run).
    let mut pending: Vec<(usize, ModeRun)> = Vec::new();
    for round in 0.. {
        if options.rounds.enough(round, start, variants.iter().map(|v| v.times.as_slice())) {
            break;
        }
        for (i, v) in variants.iter_mut().enumerate() {
            // Where the compiled code and its data land in memory can shift a program's speed by tens of
            // per cent (keccak: 9.0 or 11.7 ms, whichever the process draws, uninstrumented as well).
            // A fresh compilation per run lets every mode draw from the same placements.
            // A short program (and any program in the first round) first runs once unmeasured, so that
            // its fresh code is not timed cold.
            let (module, _) = pathprof_runtime::compile(engine, &v.prepared.code)?;
            if v.times.is_empty() || median(&v.times) < WARM_UP_BELOW_SECONDS {
                let warm_up = v.prepared.run_compiled(engine, &module, config)?;
                if warm_up.outcome.stopped.is_some() {
                    return Ok(false);
                }
            }
            let run = v.prepared.run_compiled(engine, &module, config)?;
            if run.outcome.stopped.is_some() {
                return Ok(false);
            }
            status.check(&run.outcome, format_args!("{name} in mode {}", v.mode()))?;
            let out = &run.outcome;
            setup.check_output(name, &format!("mode {}", v.mode()), out, &mut reference)?;
            v.times.push(out.bench_region_seconds.unwrap_or(out.wall_seconds));
            v.host_bytes = run.host_bytes;
            for f in &run.figures {
                let (_, value) = v.figures.entry(f.key).or_insert((f.label, 0));
                *value = (*value).max(f.value);
            }
            if v.mode().is::<Bl>() {
                // What the numbering and placement cost the counted paths: the figure that an edge
                // profile lowers.
                let functions = profiles(&v.prepared, &run, name)?;
                let executed = functions.iter().filter_map(|f| f.profiled()).map(|f| f.increments_executed.0);
                v.figures.insert("increments_executed", ("increments executed", executed.fold(0, u64::saturating_add)));
                if sampled && exact.is_none() {
                    exact = Some(functions);
                }
            } else if v.mode().sampled() {
                pending.push((i, run));
            }
        }
        if let Some(exact) = &exact {
            for (i, run) in pending.drain(..) {
                let v = &mut variants[i];
                v.accuracy.push(compare_functions(exact, &profiles(&v.prepared, &run, name)?, HOT_THRESHOLD));
            }
        }
    }
    Ok(true)
}
