//! Mode `none`: the program as it is, without probes — the baseline of overhead measurements.

use super::mode::{Given, Mode, ModeKind, ModeRun, ProfilingMode, SnapshotSink};
use crate::mode_identity;
use anyhow::Result;
use pathprof_core::profile::{FunctionProfile, ProfileMode};
use pathprof_runtime::{Engine, NoCollector, Program, RunConfig};
use pathprof_wasm::{ProfileMap, SinkKind};
use std::fmt;

/// Mode `none`, kind and mode at once: it has no settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uninstrumented;

impl ModeKind for Uninstrumented {
    fn name(&self) -> &'static str {
        "none"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["none"]
    }

    fn parse(&self, _: &str, settings: Option<&str>) -> Option<Result<Mode>> {
        settings.is_none().then(|| Ok(Mode::new(Uninstrumented)))
    }

    fn merge(&self, a: &ProfileMode, _: &ProfileMode) -> Result<ProfileMode> {
        Ok(a.clone())
    }
}

impl ProfilingMode for Uninstrumented {
    fn kind(&self) -> &'static dyn ModeKind {
        &Uninstrumented
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("none")
    }

    fn sink(&self) -> Option<SinkKind> {
        None
    }

    fn run(
        &self,
        engine: &Engine,
        program: &Program,
        _: Option<&ProfileMap>,
        config: &RunConfig,
        _: Option<&SnapshotSink>,
    ) -> Result<ModeRun> {
        let (outcome, ()) = pathprof_runtime::run_module(engine, program, None, NoCollector, config)?;
        Ok(ModeRun { outcome, counts: Default::default(), facts: Box::new(()), host_bytes: 0, figures: Vec::new() })
    }

    fn profile_mode(
        &self,
        _: &ModeRun,
        _: &[FunctionProfile],
        _: Option<&ProfileMap>,
        _: &Given,
    ) -> Result<ProfileMode> {
        Ok(ProfileMode::None)
    }

    mode_identity!();
}
