//! Mode `bl`: exact Ball–Larus path counts [BL96], with the increments on chords of a spanning
//! tree and smart numbering [PEP05 Figs. 2, 4]. The instrumenter's sinks are `array`, `table` and
//! `hash`; the runtime's collector is `count`.

use super::mode::{instrumented, Given, Mode, ModeKind, ModeRun, ProfilingMode, SnapshotSink};
use super::setting::Setting;
use crate::mode_identity;
use anyhow::Result;
use pathprof_core::profile::{FunctionProfile, ProfileMode};
use pathprof_runtime::{CountCollector, Counted, Engine, Program, Recorded, RunConfig, RunOutcome};
use pathprof_wasm::{ProfileMap, SinkKind};
use std::fmt;

/// Bytes the host keeps per entry of its hash table of path counts.
pub(crate) const HASH_ENTRY_BYTES: u64 = 16;

/// Mode `bl`, kind and mode at once: it has no settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bl;

impl ModeKind for Bl {
    fn name(&self) -> &'static str {
        "bl"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["bl"]
    }

    fn parse(&self, _: &str, settings: Option<&str>) -> Option<Result<Mode>> {
        settings.is_none().then(|| Ok(Mode::new(Bl)))
    }

    fn merge(&self, a: &ProfileMode, _: &ProfileMode) -> Result<ProfileMode> {
        Ok(a.clone())
    }
}

impl ProfilingMode for Bl {
    fn kind(&self) -> &'static dyn ModeKind {
        &Bl
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("bl")
    }

    fn accepts(&self, setting: Setting) -> bool {
        matches!(setting, Setting::EdgeProfile | Setting::HotFrom | Setting::Snapshots)
    }

    fn sink(&self) -> Option<SinkKind> {
        Some(SinkKind::Count)
    }

    fn run(
        &self,
        engine: &Engine,
        program: &Program,
        map: Option<&ProfileMap>,
        config: &RunConfig,
        snapshots: Option<&SnapshotSink>,
    ) -> Result<ModeRun> {
        run_counted(engine, program, map, config, snapshots, |_| Box::new(()))
    }

    fn replay(&self, map: &ProfileMap, recorded: Recorded) -> Result<ModeRun> {
        replay_counted(map, recorded, |_| Box::new(()))
    }

    fn profile_mode(
        &self,
        _: &ModeRun,
        _: &[FunctionProfile],
        _: Option<&ProfileMap>,
        _: &Given,
    ) -> Result<ProfileMode> {
        Ok(ProfileMode::Bl)
    }

    mode_identity!();
}

/// What makes a mode's facts of what the count collector counted: the event counters by function,
/// and, for mode `ippp`, the supergraph IDs of several words and the path ends counted in slots.
pub(crate) trait CountFacts:
    Fn(Counted) -> Box<dyn std::any::Any + Send> + Copy + Send + Sync + 'static
{
}

impl<F> CountFacts for F where F: Fn(Counted) -> Box<dyn std::any::Any + Send> + Copy + Send + Sync + 'static {}

/// Runs a module whose paths (and events) the count collector counts (modes `bl`, `ppp` and
/// `events`); `facts` makes the mode's facts of the event counters by function.
pub(crate) fn run_counted(
    engine: &Engine,
    program: &Program,
    map: Option<&ProfileMap>,
    config: &RunConfig,
    snapshots: Option<&SnapshotSink>,
    facts: impl CountFacts,
) -> Result<ModeRun> {
    let map = instrumented(map)?;
    let to_run = counted_run(facts);
    let collector = CountCollector::new(map)?;
    let snapshots = snapshots.map(|s| s.snapshots(to_run));
    let (outcome, counted) =
        pathprof_runtime::run_module_with_snapshots(engine, program, Some(map), collector, config, snapshots)?;
    Ok(to_run(outcome, counted))
}

/// A run recorded elsewhere of a module whose paths (and events) the count collector counts;
/// `facts` as for [`run_counted`].
pub(crate) fn replay_counted(map: &ProfileMap, recorded: Recorded, facts: impl CountFacts) -> Result<ModeRun> {
    let (outcome, counted) = pathprof_runtime::replay(CountCollector::new(map)?, map, recorded)?;
    Ok(counted_run(facts)(outcome, counted))
}

/// What a run of the count collector recorded, with the mode's `facts` of its event counters.
fn counted_run(facts: impl CountFacts) -> impl Fn(RunOutcome, Counted) -> ModeRun + Copy + Send + Sync + 'static {
    move |outcome, mut counted| {
        let counts = std::mem::take(&mut counted.counts);
        let host_bytes = HASH_ENTRY_BYTES * counted.hash_entries as u64;
        ModeRun { outcome, counts, facts: facts(counted), host_bytes, figures: Vec::new() }
    }
}
