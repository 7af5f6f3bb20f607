//! Profiling modes, and the one registry that ties each to its parts in the other layers.
//!
//! A mode is written in one grammar wherever one is given (`pathprof run --mode`, `pathprof
//! instrument --mode`, `pathprof bench --modes`):
//!
//! ```text
//! none | bl | pep[:S[:T]][:dup] | pep:every:N | kbl[:K] | ppp[:slots] | events[:STRATEGY[:CUT]]
//! ```
//!
//! * `none` — the program as it is, the baseline of overhead measurements;
//! * `bl` — exact Ball–Larus path counts [BL96] ([`bl`]);
//! * `pep` — sampled paths (PEP [PEP05]): S samples after a rotating stride of up to T path ends at
//!   every timer tick (64 and 17 when not given), or every N-th path end ([`pep`]); with `dup`,
//!   whole functions run a copy without probes between samples (Arnold–Ryder duplication [AR01]);
//! * `kbl` — exact counts of every sequence of up to K consecutive paths of an activation
//!   (k-BLPP [KBL13]; K = 4 when not given) ([`kbl`]);
//! * `ppp` — exact counts, the paths that ran in given profiles (the interesting ones) in compact
//!   arrays and every other path (residual: in the field, untested) counted apart (preferential
//!   and residual path profiling [PPP07 §3.3–3.5]) ([`ppp`]). The interesting paths go to slots
//!   where a function's paths are too many for a dense array; `ppp:slots` puts them in slots in
//!   every function that has residual paths too, as the thesis does.
//! * `events` — event counts (loads, calls, bytes stored, …) from path counts [EVT23] ([`events`]):
//!   STRATEGY `pc` (path counting, the default), `pd` (path decoding) or `dec` (direct counting),
//!   CUT `auto` (the default), `merges` or `none`. The events are chosen by flags
//!   (`--events`, `--alloc-fn`, `--event`).
//!
//! A mode is written back in its shortest form: `pep:64:17` is `pep`, `pep:8:17` is `pep:8`,
//! `kbl:4` is `kbl`, `events:pc:auto` is `events`. Settings outside the grammar (the timer's period, a bound on k-SF nodes) are
//! given by flags that apply to their mode only.
//!
//! # The registry
//!
//! [`Mode::sink`] and [`Mode::run`] are where a mode meets the other layers: the instrumenter's sink
//! ([`SinkKind`], one file per sink in `pathprof_wasm::instrument::sink`) and the runtime's
//! collector (`pathprof_runtime::collect`, one file per collector), whose output the mode's module
//! turns into the facts of its profile ([`ModeFacts`], [`ProfileMode`]).

pub mod bl;
pub mod events;
pub mod kbl;
pub mod pep;
pub mod ppp;

use anyhow::{bail, Result};
use events::EventSettings;
use pathprof_core::kpath::Kipf;
use pathprof_core::profile::{FunctionProfile, KblInfo, ProfileMode};
use pathprof_core::PlanOptions;
use pathprof_runtime::{Engine, ForestSettings, NoCollector, Program, RunConfig, RunOutcome, Sampling};
use pathprof_wasm::events::EventSpec;
use pathprof_wasm::map::RawCounts;
use pathprof_wasm::{ProfileMap, SinkKind};
use std::fmt;

/// A profiling mode, with its settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// Uninstrumented.
    None,
    /// Exact Ball–Larus path counts.
    Bl,
    /// Sampled paths, with what runs without probes between samples.
    Pep(Sampling, pep::Copies),
    /// Multi-iteration paths.
    Kbl(ForestSettings),
    /// Preferential and residual paths; with `true`, slots in every function with interesting and
    /// residual paths.
    Ppp { slots_everywhere: bool },
    /// Event counts.
    Events(EventSettings),
}

/// What a mode recorded in one run, besides how the run went.
#[derive(Debug)]
pub struct ModeRun {
    pub outcome: RunOutcome,
    /// Path counts (samples, in mode `pep`) by function.
    pub counts: RawCounts,
    pub facts: ModeFacts,
    /// Bytes the host kept for the profile while the program ran (hash tables, forests).
    pub host_bytes: u64,
}

/// What each mode measures besides its path counts.
#[derive(Debug)]
pub enum ModeFacts {
    None,
    Bl,
    Pep(pathprof_core::profile::SamplingInfo),
    Kbl {
        info: KblInfo,
        kipf: Kipf,
    },
    /// What the profile says of the run is computed from its functions (see [`ppp::info`]).
    Ppp,
    /// The event totals of the functions with event counters, by function (an entry per event of
    /// the map).
    Events {
        settings: EventSettings,
        counters: std::collections::HashMap<u32, Vec<u64>>,
    },
}

/// What the grammar accepts, for error messages.
const GRAMMAR: &str = "valid modes: none, bl, pep, pep:S, pep:S:T, pep:every:N, kbl, kbl:K, ppp, ppp:slots, \
                       events, events:STRATEGY, events:STRATEGY:CUT";

impl Mode {
    /// Reads a mode in the grammar of the module docs.
    pub fn parse(spec: &str) -> Result<Mode> {
        let (name, settings) = match spec.split_once(':') {
            Some((name, settings)) => (name, Some(settings)),
            None => (spec, None),
        };
        Ok(match (name, settings) {
            ("none", None) => Mode::None,
            ("bl", None) => Mode::Bl,
            ("pep", settings) => {
                let (sampling, copies) = pep::parse(spec, settings)?;
                Mode::Pep(sampling, copies)
            }
            ("kbl", settings) => Mode::Kbl(kbl::parse(spec, settings)?),
            ("ppp", None) => Mode::Ppp { slots_everywhere: false },
            ("ppp", Some("slots")) => Mode::Ppp { slots_everywhere: true },
            ("events", settings) => Mode::Events(events::parse(spec, settings)?),
            _ => bail!("unknown mode {spec:?} ({GRAMMAR})"),
        })
    }

    /// The modes of a comma-separated list, each once.
    pub fn parse_list(specs: &[String]) -> Result<Vec<Mode>> {
        let mut out: Vec<Mode> = Vec::new();
        for spec in specs {
            let mode = Mode::parse(spec.trim())?;
            if out.iter().any(|m| m.to_string() == mode.to_string()) {
                bail!("mode {mode} is given twice");
            }
            out.push(mode);
        }
        Ok(out)
    }

    /// The mode's name, without its settings.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Bl => "bl",
            Mode::Pep(..) => "pep",
            Mode::Kbl(_) => "kbl",
            Mode::Ppp { .. } => "ppp",
            Mode::Events(_) => "events",
        }
    }

    /// What the instrumenter makes path ends do; `None` for a run without probes.
    pub fn sink(&self) -> Option<SinkKind> {
        match self {
            Mode::None => None,
            Mode::Bl => Some(SinkKind::Count),
            Mode::Pep(sampling, _) => Some(SinkKind::Sample { buffer: sampling.sample_buffer() }),
            Mode::Kbl(_) => Some(SinkKind::Stream),
            Mode::Ppp { slots_everywhere } => Some(SinkKind::Preferential { slots_everywhere: *slots_everywhere }),
            Mode::Events(settings) => Some(events::sink(settings)),
        }
    }

    /// How the mode plans paths, from the default plan.
    pub fn plan(&self, plan: &mut PlanOptions) {
        if let Mode::Events(settings) = self {
            events::plan(settings, plan);
        }
    }

    /// Runs a module compiled from this mode's instrumentation (described by `map`) with the mode's
    /// collector.
    pub fn run(
        &self,
        engine: &Engine,
        module: &Program,
        map: Option<&ProfileMap>,
        config: &RunConfig,
    ) -> Result<ModeRun> {
        let map = match (self, map) {
            (Mode::None, _) => {
                let (outcome, ()) = pathprof_runtime::run_module(engine, module, None, NoCollector, config)?;
                return Ok(ModeRun { outcome, counts: RawCounts::new(), facts: ModeFacts::None, host_bytes: 0 });
            }
            (_, Some(map)) => map,
            (_, None) => bail!("mode {self} runs an instrumented module, and needs its map"),
        };
        match self {
            Mode::None => unreachable!("run above"),
            Mode::Bl => bl::run(engine, module, map, config),
            Mode::Pep(sampling, copies) => pep::run(engine, module, map, config, *sampling, *copies),
            Mode::Kbl(settings) => kbl::run(engine, module, map, config, *settings),
            Mode::Ppp { .. } => ppp::run(engine, module, map, config),
            Mode::Events(settings) => events::run(engine, module, map, config, *settings),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::None | Mode::Bl | Mode::Ppp { slots_everywhere: false } => f.write_str(self.name()),
            Mode::Ppp { slots_everywhere: true } => f.write_str("ppp:slots"),
            Mode::Pep(sampling, copies) => pep::fmt(f, sampling, *copies),
            Mode::Kbl(settings) => kbl::fmt(f, settings),
            Mode::Events(settings) => events::fmt(f, settings),
        }
    }
}

impl ModeRun {
    /// The function profiles of the run: its counts decoded with `map`, and what the mode adds to
    /// them.
    pub fn functions(&self, map: Option<&ProfileMap>) -> Result<Vec<FunctionProfile>> {
        let Some(map) = map else { return Ok(Vec::new()) };
        let mut functions = map.function_profiles(&self.counts).map_err(|e| anyhow::anyhow!("{e}"))?;
        match &self.facts {
            ModeFacts::Kbl { info, kipf } => kbl::attach_kipf(&mut functions, kipf, info.k),
            ModeFacts::Events { counters, .. } => events::attach(&mut functions, map, counters),
            _ => {}
        }
        Ok(functions)
    }

    /// How the profile describes the mode, given the run's function profiles, its map, and what was
    /// given besides the mode (see [`Given`]).
    pub fn profile_mode(&self, functions: &[FunctionProfile], map: Option<&ProfileMap>, given: &Given) -> ProfileMode {
        let interesting_from = &given.interesting_from;
        match &self.facts {
            ModeFacts::None => ProfileMode::None,
            ModeFacts::Bl => ProfileMode::Bl,
            ModeFacts::Pep(info) => ProfileMode::Pep(info.clone()),
            ModeFacts::Kbl { info, .. } => ProfileMode::Kbl(info.clone()),
            ModeFacts::Ppp => ProfileMode::Ppp(ppp::info(interesting_from, functions)),
            ModeFacts::Events { settings, .. } => match map {
                Some(map) => {
                    ProfileMode::Events(events::info(*settings, given.events.as_ref(), functions, map, &self.outcome))
                }
                None => unreachable!("an events run has its map"),
            },
        }
    }
}

/// What some modes are given besides their settings, as the profile records it.
#[derive(Clone, Debug, Default)]
pub struct Given {
    /// Mode `ppp`: the names of the profiles whose paths are interesting.
    pub interesting_from: Vec<String>,
    /// Mode `events`: the events asked for (all built-in classes when `None`).
    pub events: Option<EventSpec>,
}

/// Settings that `pathprof run` takes as flags, each for one mode only.
#[derive(Clone, Debug, Default)]
pub struct ModeFlags {
    pub samples: Option<u32>,
    pub stride: Option<u32>,
    pub every: Option<u64>,
    pub tick_ms: Option<f64>,
    pub k: Option<u16>,
    pub max_nodes: Option<usize>,
    pub strategy: Option<String>,
    pub cut: Option<String>,
}

impl Mode {
    /// The mode `spec` with the settings of `flags`, each refused unless it applies to the mode and
    /// the mode's spec does not already give it.
    pub fn with_flags(spec: &str, flags: &ModeFlags) -> Result<Mode> {
        let mode = Mode::parse(spec)?;
        let given = |flag: &str, is: bool| -> Result<()> {
            match is {
                false => Ok(()),
                true => bail!("{flag} does not apply to --mode {mode}"),
            }
        };
        let pep_flags = flags.samples.is_some() || flags.stride.is_some() || flags.every.is_some();
        let kbl_flags = flags.k.is_some();
        if !matches!(mode, Mode::Pep(..)) {
            given("--samples", flags.samples.is_some())?;
            given("--stride", flags.stride.is_some())?;
            given("--every", flags.every.is_some())?;
            given("--tick-ms", flags.tick_ms.is_some())?;
        }
        if !matches!(mode, Mode::Kbl(_)) {
            given("-k", flags.k.is_some())?;
            given("--max-nodes", flags.max_nodes.is_some())?;
        }
        let events_flags = flags.strategy.is_some() || flags.cut.is_some();
        if !matches!(mode, Mode::Events(_)) {
            given("--strategy", flags.strategy.is_some())?;
            given("--cut", flags.cut.is_some())?;
        }
        if spec.contains(':') && (pep_flags || kbl_flags || events_flags) {
            bail!("--mode {spec} gives its settings already: give them either in the mode or as flags, not both");
        }
        Ok(match mode {
            Mode::Pep(sampling, copies) => Mode::Pep(pep::with_flags(sampling, flags, copies)?, copies),
            Mode::Kbl(settings) => Mode::Kbl(kbl::with_flags(settings, flags)),
            Mode::Events(settings) => Mode::Events(events::with_flags(settings, flags)?),
            other => other,
        })
    }
}
