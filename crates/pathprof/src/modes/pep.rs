//! Mode `pep`: continuous sampled path and edge profiling [PEP05]. Paths are numbered as in `bl`; a
//! timer samples path ends (simplified Arnold–Grove sampling, PEP(S, T) [PEP05 §3.3, AG05]), or
//! every N-th path end is taken. The instrumenter's sink is `sample`; the runtime's collector is
//! `sample`; the accuracy metrics of sampled profiles are `pathprof_core::accuracy`.

use super::mode::{instrumented, sum, Given, Mode, ModeKind, ModeRun, ProfilingMode, SnapshotSink};
use super::setting::{milliseconds, whole_number, ModeFlags, Setting};
use crate::inputs::Inputs;
use crate::mode_identity;
use crate::profiled::ProfiledModule;
use anyhow::{bail, Result};
use pathprof_core::profile::{FunctionProfile, ProfileMode, SamplingInfo};
use pathprof_runtime::{Engine, Program, Recorded, RunConfig, RunOutcome, SampleCollector, Sampled, Sampling};
use pathprof_wasm::{InstrumentOptions, ProfileMap, SinkKind};
use std::fmt;
use std::time::Duration;

/// Most samples per timer tick: they are kept in the profiler's memory, 8 bytes each.
pub const MAX_SAMPLES_PER_TICK: u32 = 1 << 20;

/// The shortest and the longest timer period, in milliseconds: the timer thread must not spin, and
/// a period must fit a `Duration`.
pub const TICK_MS: (f64, f64) = (0.01, 3_600_000.0);

/// The defaults: PEP(64, 17) every 0.25 ms.
fn default_timer() -> (u32, u32, Duration) {
    match Sampling::default() {
        Sampling::Timer { samples, stride, tick } => (samples, stride, tick),
        Sampling::Every(_) => unreachable!("the default sampling is the timer's"),
    }
}

/// What runs while no sample is wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Copies {
    /// The instrumented functions, but for loops of one block, which run their original bytes.
    Loops,
    /// A copy of every function without probes (`dup`), which switches to the instrumented one at
    /// its entry and loop headers once a sample is wanted (Arnold–Ryder duplication [AR01]).
    Functions,
}

/// Mode `pep`'s kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pep;

/// A `pep` mode: how it samples, and what runs between samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PepMode {
    pub sampling: Sampling,
    pub copies: Copies,
}

impl ModeKind for Pep {
    fn name(&self) -> &'static str {
        "pep"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["pep[:S[:T]][:dup]", "pep:every:N"]
    }

    fn parse(&self, spec: &str, settings: Option<&str>) -> Option<Result<Mode>> {
        Some(parse(spec, settings).map(|(sampling, copies)| Mode::new(PepMode { sampling, copies })))
    }

    fn merge(&self, a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode> {
        let (ProfileMode::Pep(x), ProfileMode::Pep(y)) = (a, b) else { bail!("it is not a pep profile") };
        let settings = |s: &SamplingInfo| (s.samples, s.stride, s.every, s.tick_ms, s.function_copies);
        if settings(x) != settings(y) {
            bail!("it was sampled with other settings");
        }
        let mut s = x.clone();
        s.ticks = sum(x.ticks, y.ticks, "the timer ticks")?;
        s.samples_taken = sum(x.samples_taken, y.samples_taken, "the samples")?;
        Ok(ProfileMode::Pep(s))
    }
}

impl ProfilingMode for PepMode {
    fn kind(&self) -> &'static dyn ModeKind {
        &Pep
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_mode(f, &self.sampling, self.copies)
    }

    fn accepts(&self, setting: Setting) -> bool {
        matches!(
            setting,
            Setting::Samples
                | Setting::Stride
                | Setting::Every
                | Setting::TickMs
                | Setting::EdgeProfile
                | Setting::HotFrom
                | Setting::Snapshots
        )
    }

    fn with_flags(&self, flags: &ModeFlags) -> Result<Mode> {
        Ok(Mode::new(PepMode { sampling: with_flags(self.sampling, flags, self.copies)?, copies: self.copies }))
    }

    fn sink(&self) -> Option<SinkKind> {
        Some(SinkKind::Sample { buffer: self.sampling.sample_buffer() })
    }

    fn instrument(&self, options: &mut InstrumentOptions, _: &ProfiledModule, _: &Inputs) -> Result<()> {
        options.function_copies = self.copies == Copies::Functions;
        Ok(())
    }

    fn run(
        &self,
        engine: &Engine,
        program: &Program,
        map: Option<&ProfileMap>,
        config: &RunConfig,
        snapshots: Option<&SnapshotSink>,
    ) -> Result<ModeRun> {
        run(engine, program, instrumented(map)?, config, *self, snapshots)
    }

    /// Only sampling every N path ends can be recorded elsewhere: the timer is pathprof's own.
    fn replay(&self, map: &ProfileMap, recorded: Recorded) -> Result<ModeRun> {
        let (outcome, sampled) = pathprof_runtime::replay(SampleCollector::new(map, self.sampling)?, map, recorded)?;
        Ok(mode_run(*self, outcome, sampled))
    }

    fn profile_mode(
        &self,
        run: &ModeRun,
        _: &[FunctionProfile],
        _: Option<&ProfileMap>,
        _: &Given,
    ) -> Result<ProfileMode> {
        Ok(ProfileMode::Pep(run.facts::<SamplingInfo>()?.clone()))
    }

    fn sampled(&self) -> bool {
        true
    }

    mode_identity!();
}

/// Reads what follows `pep:` in `spec` (`S`, `S:T` or `every:N`, then `:dup` or not), or nothing.
fn parse(spec: &str, settings: Option<&str>) -> Result<(Sampling, Copies)> {
    let (settings, copies) = match settings {
        Some("dup") => (None, Copies::Functions),
        Some(s) => match s.strip_suffix(":dup") {
            Some(rest) => (Some(rest), Copies::Functions),
            None => (Some(s), Copies::Loops),
        },
        None => (None, Copies::Loops),
    };
    let sampling = parse_sampling(spec, settings)?;
    if matches!(sampling, Sampling::Every(_)) && copies == Copies::Functions {
        bail!("mode {spec:?}: dup applies to timer sampling only");
    }
    Ok((sampling, copies))
}

fn parse_sampling(spec: &str, settings: Option<&str>) -> Result<Sampling> {
    let whole = |what: &str, v: &str, max: u64| whole_number(spec, what, v, max);
    let (_, default_stride, tick) = default_timer();
    let Some(settings) = settings else { return Ok(Sampling::default()) };
    if let Some(n) = settings.strip_prefix("every:") {
        return Ok(Sampling::Every(whole("N", n, u64::MAX)?));
    }
    let (s, t) = match settings.split_once(':') {
        Some((s, t)) => (s, Some(t)),
        None => (settings, None),
    };
    let samples = whole("S", s, u64::from(MAX_SAMPLES_PER_TICK))? as u32;
    let stride = match t {
        Some(t) => whole("T", t, u64::from(u32::MAX))? as u32,
        None => default_stride,
    };
    Ok(Sampling::Timer { samples, stride, tick })
}

/// Writes the sampling in its shortest form.
fn write_mode(f: &mut fmt::Formatter<'_>, sampling: &Sampling, copies: Copies) -> fmt::Result {
    let (default_samples, default_stride, _) = default_timer();
    match *sampling {
        Sampling::Timer { samples, stride, .. } if (samples, stride) == (default_samples, default_stride) => {
            f.write_str("pep")
        }
        Sampling::Timer { samples, stride, .. } if stride == default_stride => write!(f, "pep:{samples}"),
        Sampling::Timer { samples, stride, .. } => write!(f, "pep:{samples}:{stride}"),
        Sampling::Every(n) => write!(f, "pep:every:{n}"),
    }?;
    match copies {
        Copies::Loops => Ok(()),
        Copies::Functions => f.write_str(":dup"),
    }
}

/// `sampling` with the settings of `pathprof run`'s flags.
fn with_flags(sampling: Sampling, flags: &ModeFlags, copies: Copies) -> Result<Sampling> {
    if flags.samples == Some(0) || flags.stride == Some(0) || flags.every == Some(0) {
        bail!("--samples, --stride and --every must be positive");
    }
    if flags.every.is_some() && copies == Copies::Functions {
        bail!("--every samples without a timer: dup does not apply to it");
    }
    if flags.samples.is_some_and(|s| s > MAX_SAMPLES_PER_TICK) {
        bail!("--samples must be at most {MAX_SAMPLES_PER_TICK}");
    }
    if let Some(n) = flags.every {
        if flags.samples.is_some() || flags.stride.is_some() || flags.tick_ms.is_some() {
            bail!("--every samples without a timer: --samples, --stride and --tick-ms do not apply to it");
        }
        return Ok(Sampling::Every(n));
    }
    let tick = flags.tick_ms.map(|ms| milliseconds("--tick-ms", ms, TICK_MS)).transpose()?;
    Ok(match sampling {
        Sampling::Timer { samples, stride, tick: t } => Sampling::Timer {
            samples: flags.samples.unwrap_or(samples),
            stride: flags.stride.unwrap_or(stride),
            tick: tick.unwrap_or(t),
        },
        every @ Sampling::Every(_) if tick.is_none() => every,
        Sampling::Every(_) => bail!("--tick-ms does not apply to sampling every N path ends"),
    })
}

/// Runs a module instrumented to sample its paths as `mode` says.
fn run(
    engine: &Engine,
    program: &Program,
    map: &ProfileMap,
    config: &RunConfig,
    mode: PepMode,
    snapshots: Option<&SnapshotSink>,
) -> Result<ModeRun> {
    let collector = SampleCollector::new(map, mode.sampling)?;
    let snapshots = snapshots.map(|s| s.snapshots(move |outcome, sampled| mode_run(mode, outcome, sampled)));
    let (outcome, sampled) =
        pathprof_runtime::run_module_with_snapshots(engine, program, Some(map), collector, config, snapshots)?;
    Ok(mode_run(mode, outcome, sampled))
}

/// What a run sampled as `mode` says recorded.
fn mode_run(mode: PepMode, outcome: RunOutcome, sampled: Sampled) -> ModeRun {
    let (default_samples, default_stride, default_tick) = default_timer();
    let (samples, stride, every, tick) = match mode.sampling {
        Sampling::Timer { samples, stride, tick } => (samples, stride, None, tick),
        Sampling::Every(n) => (default_samples, default_stride, Some(n), default_tick),
    };
    let info = SamplingInfo {
        samples,
        stride,
        every,
        tick_ms: tick.as_secs_f64() * 1e3,
        ticks: sampled.ticks,
        samples_taken: sampled.samples,
        function_copies: mode.copies == Copies::Functions,
    };
    // The host keeps the samples in a hash table, as `bl` does its counts.
    let entries: usize = sampled.counts.values().map(Vec::len).sum();
    let host_bytes = super::bl::HASH_ENTRY_BYTES * entries as u64;
    ModeRun { outcome, counts: sampled.counts, facts: Box::new(info), host_bytes, figures: Vec::new() }
}
