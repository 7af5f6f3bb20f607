//! Mode `bl`: exact Ball–Larus path counts [BL96], with the increments on chords of a spanning
//! tree and smart numbering [PEP05 Figs. 2, 4]. The instrumenter's sinks are `array`, `table` and
//! `hash`; the runtime's collector is `count`.

use super::mode::{instrumented, Given, Mode, ModeKind, ModeRun, ProfilingMode};
use super::setting::Setting;
use crate::mode_identity;
use anyhow::Result;
use pathprof_core::profile::{FunctionProfile, ProfileMode};
use pathprof_runtime::{CountCollector, Engine, Program, RunConfig};
use pathprof_wasm::{ProfileMap, SinkKind};
use std::collections::HashMap;
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
        setting == Setting::EdgeProfile
    }

    fn sink(&self) -> Option<SinkKind> {
        Some(SinkKind::Count)
    }

    fn run(&self, engine: &Engine, program: &Program, map: Option<&ProfileMap>, config: &RunConfig) -> Result<ModeRun> {
        run_counted(engine, program, map, config, |_| Box::new(()))
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

/// Runs a module whose paths (and events) the count collector counts (modes `bl`, `ppp` and
/// `events`); `facts` makes the mode's facts of the event counters by function.
pub(crate) fn run_counted(
    engine: &Engine,
    program: &Program,
    map: Option<&ProfileMap>,
    config: &RunConfig,
    facts: impl FnOnce(HashMap<u32, Vec<u64>>) -> Box<dyn std::any::Any + Send>,
) -> Result<ModeRun> {
    let map = instrumented(map)?;
    let (outcome, counted) =
        pathprof_runtime::run_module(engine, program, Some(map), CountCollector::new(map)?, config)?;
    Ok(ModeRun {
        outcome,
        counts: counted.counts,
        facts: facts(counted.events),
        host_bytes: HASH_ENTRY_BYTES * counted.hash_entries as u64,
        figures: Vec::new(),
    })
}
