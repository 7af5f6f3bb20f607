//! What a profiling mode is to the rest of pathprof: a [`ModeKind`] (its name, its grammar, how
//! two of its profiles add up and what its report adds), and a [`Mode`] — one of its settings —
//! that answers for itself what it asks of every layer: the flags it takes, the instrumenter's sink
//! and options, the runtime's collector, and the facts it adds to the profile.

use super::setting::{ModeFlags, Setting};
use crate::inputs::Inputs;
use crate::profiled::ProfiledModule;
use anyhow::{Context, Result};
use pathprof_core::profile::{FunctionProfile, InterestingRule, PathProfile, Profile, ProfileMode};
use pathprof_runtime::{Engine, Program, Recorded, RunConfig, RunOutcome, SnapshotTaken, Snapshots};
use pathprof_wasm::events::EventSpec;
use pathprof_wasm::map::RawCounts;
use pathprof_wasm::{InstrumentOptions, ProfileMap, SinkKind};
use std::any::Any;
use std::fmt;
use std::io::Write;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

/// A kind of profiling mode: what all its settings share. One value per kind, listed once in the
/// [registry](super::Registry).
pub trait ModeKind: Any + Sync {
    /// The mode's name: the first word of its grammar and the profile's `mode` field.
    fn name(&self) -> &'static str;

    /// The forms its grammar takes (`kbl`, `kbl:K`), for messages and help.
    fn forms(&self) -> &'static [&'static str];

    /// The mode of `spec`, whose settings are what follows `name:` (`None` for the name alone), or
    /// why its settings are wrong; `None` when `spec` is no form of the kind's grammar at all.
    fn parse(&self, spec: &str, settings: Option<&str>) -> Option<Result<Mode>>;

    /// Whether `settings`, what follows `name:` in a spec, give a setting that a flag could give
    /// too ([`Setting::in_grammar`](super::Setting::in_grammar)), so that the two exclude each other.
    fn gives_grammar_settings(&self, _settings: &str) -> bool {
        true
    }

    /// The mode of the sum of two of its profiles, `a` and `b`, or why they do not add up. Its
    /// functions are added up afterwards, and [`ModeKind::after_merge`] sees them.
    fn merge(&self, a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode>;

    /// The mode of a sum, once its functions are added up.
    fn after_merge(&self, mode: ProfileMode, _functions: &[FunctionProfile]) -> ProfileMode {
        mode
    }

    /// Adds what the mode records of a function besides its paths and edges (forests, events,
    /// interesting paths) from `b` to `a`.
    fn merge_function(&self, _a: &mut PathProfile, _b: &PathProfile) -> Result<()> {
        Ok(())
    }

    /// What the text report of one of its profiles adds after the summary (`top` items of
    /// `function`'s, or of all functions); [`Report::Done`] when no paths are to follow.
    fn report(&self, _out: &mut dyn Write, _p: &Profile, _top: usize, _function: Option<&str>) -> Result<Report> {
        Ok(Report::Paths)
    }
}

/// Whether a text report goes on to the hot paths after what a mode added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    Paths,
    Done,
}

/// A profiling mode with its settings: what it asks of every layer. Implemented once per kind, in
/// its own file; the rest of pathprof holds it as a [`Mode`].
pub trait ProfilingMode: fmt::Debug + Send + Sync + 'static {
    /// Its kind.
    fn kind(&self) -> &'static dyn ModeKind;

    /// Writes the mode in its shortest form, which reads back as the same mode.
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;

    /// Whether the mode takes `setting` besides its grammar.
    fn accepts(&self, _setting: Setting) -> bool {
        false
    }

    /// Whether the mode cannot run without `setting` (which it accepts): `ppp` without interesting
    /// paths.
    fn requires(&self, _setting: Setting) -> bool {
        false
    }

    /// The mode with the settings of `flags`, which gives only settings the mode accepts.
    fn with_flags(&self, _flags: &ModeFlags) -> Result<Mode> {
        unreachable!("a mode that accepts flags reads them")
    }

    /// The flags given to it that change how it runs but not its profile (`kbl`'s fold threads),
    /// as `bench` tells apart columns of one mode.
    fn run_flags(&self) -> Option<String> {
        None
    }

    /// What the instrumenter makes path ends do; `None` for a run without probes.
    fn sink(&self) -> Option<SinkKind>;

    /// The instrumentation options of the mode, from those of its sink (`options`), the module
    /// profiled and what it was given besides its settings (which [`Mode::check`] has checked it
    /// takes).
    fn instrument(&self, _options: &mut InstrumentOptions, _profiled: &ProfiledModule, _inputs: &Inputs) -> Result<()> {
        Ok(())
    }

    /// Runs a program compiled from the mode's instrumentation (described by `map`; none without
    /// probes) with the mode's collector, which hands `snapshots` what it read so far while the
    /// program runs, when they are asked for and it can.
    fn run(
        &self,
        engine: &Engine,
        program: &Program,
        map: Option<&ProfileMap>,
        config: &RunConfig,
        snapshots: Option<&SnapshotSink>,
    ) -> Result<ModeRun>;

    /// The run that a host outside pathprof recorded of a program instrumented for the mode as
    /// `map` says (`pathprof decode`), read by the mode's collector as it reads a run of its own;
    /// an error for a mode whose collector needs pathprof's own host.
    fn replay(&self, _map: &ProfileMap, _recorded: Recorded) -> Result<ModeRun> {
        anyhow::bail!("it records its paths through pathprof's own host only")
    }

    /// Adds what the run recorded besides path counts (forests, events) to the functions decoded
    /// from its counts.
    fn attach(&self, _run: &ModeRun, _map: &ProfileMap, _functions: &mut [FunctionProfile]) -> Result<()> {
        Ok(())
    }

    /// How the profile describes the mode, given the run's functions, its map and what the mode was
    /// given.
    fn profile_mode(
        &self,
        run: &ModeRun,
        functions: &[FunctionProfile],
        map: Option<&ProfileMap>,
        given: &Given,
    ) -> Result<ProfileMode>;

    /// Whether its counts are samples, which `bench` compares with an exact profile [PEP05 §6.3].
    fn sampled(&self) -> bool {
        false
    }

    /// `self` as [`Any`], to compare modes of one kind.
    fn as_any(&self) -> &dyn Any;

    /// Whether `other` is the same mode with the same settings.
    fn same(&self, other: &dyn ProfilingMode) -> bool;
}

/// Implements [`ProfilingMode::as_any`] and [`ProfilingMode::same`] for a mode type that is
/// `PartialEq`.
#[macro_export]
macro_rules! mode_identity {
    () => {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }

        fn same(&self, other: &dyn $crate::modes::ProfilingMode) -> bool {
            other.as_any().downcast_ref::<Self>() == Some(self)
        }
    };
}

/// A mode with its settings, as every subcommand and the library hold it.
#[derive(Clone)]
pub struct Mode(Arc<dyn ProfilingMode>);

impl Mode {
    pub fn new(mode: impl ProfilingMode) -> Mode {
        Mode(Arc::new(mode))
    }

    /// The mode's name, without its settings.
    pub fn name(&self) -> &'static str {
        self.0.kind().name()
    }

    /// Whether the mode is of kind `K` (a unit type of a [`ModeKind`]).
    pub fn is<K: ModeKind>(&self) -> bool {
        let kind: &dyn Any = self.0.kind();
        kind.is::<K>()
    }

    /// The mode's settings, when it is a `T`.
    pub fn settings<T: ProfilingMode>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref::<T>()
    }

    /// Whether the mode runs the program without probes.
    pub fn is_baseline(&self) -> bool {
        self.sink().is_none()
    }

    /// Refuses every setting of `given` that the mode does not take.
    pub fn check(&self, given: &[Setting]) -> Result<()> {
        match given.iter().find(|s| !self.accepts(**s)) {
            Some(Setting::Events) => anyhow::bail!("{} do not apply to --mode {self}", Setting::Events.flag()),
            Some(s) => anyhow::bail!("{} does not apply to --mode {self}", s.flag()),
            None => Ok(()),
        }
    }
}

impl std::ops::Deref for Mode {
    type Target = dyn ProfilingMode;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write(f)
    }
}

impl fmt::Debug for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for Mode {
    fn eq(&self, other: &Mode) -> bool {
        self.0.same(&*other.0)
    }
}

/// What a mode recorded in one run, besides how the run went.
pub struct ModeRun {
    pub outcome: RunOutcome,
    /// Path counts (samples, in a sampled mode) by function.
    pub counts: RawCounts,
    /// What the mode measured besides (its own type, which only the mode reads).
    pub facts: Box<dyn Any + Send>,
    /// Bytes the host kept for the profile while the program ran (hash tables, forests).
    pub host_bytes: u64,
    /// Figures of the run that `bench` reports beside the times.
    pub figures: Vec<RunFigure>,
}

impl ModeRun {
    /// The facts of a run of the mode whose facts are a `T`.
    pub fn facts<T: 'static>(&self) -> Result<&T> {
        self.facts.downcast_ref::<T>().context("the run is one of another mode")
    }
}

impl fmt::Debug for ModeRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModeRun")
            .field("outcome", &self.outcome)
            .field("counts", &self.counts.len())
            .field("host_bytes", &self.host_bytes)
            .field("figures", &self.figures)
            .finish()
    }
}

/// Where a run's snapshots go, as the mode's runs so far: every `every`, with when each was taken.
#[derive(Clone)]
pub struct SnapshotSink {
    pub every: Duration,
    pub sender: Sender<(ModeRun, SnapshotTaken)>,
}

impl SnapshotSink {
    /// The runtime's snapshots of a collector whose output `to_run` turns into a run of the mode
    /// (its outcome that of a program still running).
    pub fn snapshots<O: 'static>(
        &self,
        to_run: impl Fn(RunOutcome, O) -> ModeRun + Send + Sync + 'static,
    ) -> Snapshots<O> {
        let sender = self.sender.clone();
        Snapshots {
            every: self.every,
            sink: Box::new(move |output, taken| {
                // The receiver is gone only once the run has ended.
                let _ = sender.send((to_run(RunOutcome::running(taken.seconds), output), taken));
            }),
        }
    }
}

/// A figure of one run: `bench` keeps the largest over the runs, under `key` in its JSON and as
/// `label` in its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunFigure {
    pub key: &'static str,
    pub label: &'static str,
    pub value: u64,
}

/// What some modes are given besides their settings, as the profile records it.
#[derive(Clone, Debug, Default)]
pub struct Given {
    /// The names of the profiles whose paths are interesting.
    pub interesting_from: Vec<String>,
    /// How the interesting paths were chosen, and the share of those profiles' executions they
    /// carried.
    pub interesting_chosen: Option<(InterestingRule, f64)>,
    /// Mode `ips`: the interesting segments.
    pub tested_segments: Option<Arc<super::ips::TestedSegments>>,
    /// The events asked for (all built-in classes when `None`).
    pub events: Option<EventSpec>,
}

/// The map of an instrumented run's module, which every mode with probes needs.
pub(crate) fn instrumented(map: Option<&ProfileMap>) -> Result<&ProfileMap> {
    map.context("an instrumented run needs the map of its module")
}

/// `a + b`, or an error naming what overflowed: counts are added exactly, never wrapped or
/// saturated.
pub fn sum(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_add(b).with_context(|| format!("{what} add up past 2^64 - 1"))
}
