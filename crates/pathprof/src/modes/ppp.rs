//! Mode `ppp`: preferential and residual path profiling [PPP07 §3.3–3.5]. The paths that ran in
//! given profiles of the same module are the interesting ones: they get compact preferential IDs
//! that index an array of slots, each checked against the path's Ball–Larus ID; every other path —
//! in the field, an untested one — is residual, and is counted exactly by the host. The core's
//! numbering is `pathprof_core::ppp`; the instrumenter's sink is `ppp` (with `array` for functions
//! whose paths are all interesting and `hash` for those with none); the runtime's collector is
//! `count`.

use super::mode::{Given, Mode, ModeKind, ModeRun, ProfilingMode, Report, SnapshotSink};
use super::setting::Setting;
use crate::inputs::Inputs;
use crate::mode_identity;
use crate::profiled::ProfiledModule;
use crate::render::group;
use anyhow::{bail, Context, Result};
use pathprof_core::profile::{
    residual, FunctionProfile, InterestingRule, PathProfile, PppInfo, Profile, ProfileMode, U64,
};
use pathprof_runtime::{Engine, Program, Recorded, RunConfig};
use pathprof_wasm::{InstrumentOptions, ProfileMap, SinkKind};
use std::collections::BTreeSet;
use std::fmt;
use std::io::Write;

/// Mode `ppp`'s kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ppp;

/// A `ppp` mode: with `slots_everywhere`, slots in every function with interesting and residual
/// paths, as the thesis has them; without, only in those whose paths are too many for an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PppMode {
    pub slots_everywhere: bool,
}

impl ModeKind for Ppp {
    fn name(&self) -> &'static str {
        "ppp"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["ppp[:slots]"]
    }

    fn parse(&self, _: &str, settings: Option<&str>) -> Option<Result<Mode>> {
        let slots_everywhere = match settings {
            None => false,
            Some("slots") => true,
            Some(_) => return None,
        };
        Some(Ok(Mode::new(PppMode { slots_everywhere })))
    }

    fn merge(&self, a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode> {
        let (ProfileMode::Ppp(x), ProfileMode::Ppp(y)) = (a, b) else { bail!("it is not a ppp profile") };
        if (&x.interesting_from, x.interesting, x.chosen_by) != (&y.interesting_from, y.interesting, y.chosen_by) {
            bail!("its interesting paths come from other profiles, or were chosen by another rule");
        }
        Ok(a.clone())
    }

    /// The summary of the residual paths, recomputed from the summed functions.
    fn after_merge(&self, mode: ProfileMode, functions: &[FunctionProfile]) -> ProfileMode {
        match mode {
            ProfileMode::Ppp(x) => {
                let chosen = x.chosen_share.map(|share| (x.chosen_by, share));
                ProfileMode::Ppp(info(&x.interesting_from, chosen, functions))
            }
            other => other,
        }
    }

    fn merge_function(&self, a: &mut PathProfile, b: &PathProfile) -> Result<()> {
        let (Some(x), Some(y)) = (&mut a.ppp, &b.ppp) else {
            return match (&a.ppp, &b.ppp) {
                (None, None) => Ok(()),
                _ => bail!("one profile has preferential paths and the other not"),
            };
        };
        if (x.interesting, x.range) != (y.interesting, y.range) {
            bail!("its interesting paths differ");
        }
        if (x.untested.len() as u64, y.untested.len() as u64) != (x.untested_edges, y.untested_edges) {
            bail!("a profile lacks the list of its untested edges (written by an older pathprof)");
        }
        (x.residual_paths, x.residual_executions) =
            residual(&a.paths).context("the residual executions add up past 2^64 - 1")?;
        let untested: BTreeSet<_> = x.untested.iter().chain(&y.untested).copied().collect();
        x.untested = untested.into_iter().collect();
        x.untested_edges = x.untested.len() as u64;
        Ok(())
    }

    /// How many paths were interesting, and how many others ran.
    fn report(&self, out: &mut dyn Write, p: &Profile, _: usize, _: Option<&str>) -> Result<Report> {
        if let Some(ppp) = p.mode.ppp() {
            writeln!(
                out,
                "  {} interesting paths (from {}: {}{}); {} residual paths ran, {} times (`report --untested`)",
                group(ppp.interesting.0),
                ppp.interesting_from.join(", "),
                ppp.chosen_by,
                ppp.chosen_share.map_or_else(String::new, |s| format!(", {:.2}% of their executions", 100.0 * s)),
                group(ppp.residual_paths.0),
                group(ppp.residual_executions.0)
            )?;
        }
        Ok(Report::Paths)
    }
}

impl ProfilingMode for PppMode {
    fn kind(&self) -> &'static dyn ModeKind {
        &Ppp
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.slots_everywhere { "ppp:slots" } else { "ppp" })
    }

    fn accepts(&self, setting: Setting) -> bool {
        matches!(setting, Setting::Interesting | Setting::EdgeProfile | Setting::Snapshots)
    }

    fn requires(&self, setting: Setting) -> bool {
        setting == Setting::Interesting
    }

    fn sink(&self) -> Option<SinkKind> {
        Some(SinkKind::Preferential { slots_everywhere: self.slots_everywhere })
    }

    fn instrument(&self, options: &mut InstrumentOptions, profiled: &ProfiledModule, inputs: &Inputs) -> Result<()> {
        let Some(interesting) = inputs.interesting else {
            bail!("--mode {self} needs --interesting PROFILE (the profiles whose executed paths are interesting)")
        };
        profiled.check_same_core_module("the interesting paths' profile", interesting.core_module.as_ref())?;
        options.interesting = interesting.paths.clone();
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
        super::bl::run_counted(engine, program, map, config, snapshots, |_| Box::new(()))
    }

    fn replay(&self, map: &ProfileMap, recorded: Recorded) -> Result<ModeRun> {
        super::bl::replay_counted(map, recorded, |_| Box::new(()))
    }

    fn profile_mode(
        &self,
        _: &ModeRun,
        functions: &[FunctionProfile],
        _: Option<&ProfileMap>,
        given: &Given,
    ) -> Result<ProfileMode> {
        Ok(ProfileMode::Ppp(info(&given.interesting_from, given.interesting_chosen, functions)))
    }

    mode_identity!();
}

impl fmt::Display for PppMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f)
    }
}

/// What the profile says of a `ppp` run over all its functions: the interesting paths, how they
/// were chosen, and the residual ones that ran.
fn info(interesting_from: &[String], chosen: Option<(InterestingRule, f64)>, functions: &[FunctionProfile]) -> PppInfo {
    let per_function = functions.iter().filter_map(|f| f.ppp());
    let (mut interesting, mut residual_paths, mut residual_executions) = (0u64, 0u64, 0u64);
    for f in per_function {
        interesting += f.interesting;
        residual_paths += f.residual_paths;
        residual_executions = residual_executions.saturating_add(f.residual_executions.0);
    }
    PppInfo {
        interesting_from: interesting_from.to_vec(),
        interesting: U64(interesting),
        residual_paths: U64(residual_paths),
        residual_executions: U64(residual_executions),
        chosen_by: chosen.map_or(InterestingRule::Executed, |c| c.0),
        chosen_share: chosen.map(|c| c.1),
    }
}
