//! Mode `ppp`: preferential and residual path profiling [PPP07 §3.3–3.5]. The paths that ran in
//! given profiles of the same module are the interesting ones: they get compact preferential IDs
//! that index an array of slots, each checked against the path's Ball–Larus ID; every other path —
//! in the field, an untested one — is residual, and is counted exactly by the host. The core's
//! numbering is `pathprof_core::ppp`; the instrumenter's sink is `ppp` (with `array` for functions
//! whose paths are all interesting and `hash` for those with none); the runtime's collector is
//! `count`.

use super::{ModeFacts, ModeRun};
use crate::files::sha256_hex;
use anyhow::{bail, Result};
use pathprof_core::profile::{FunctionProfile, PathCount, PppInfo, Profile, U64};
use pathprof_runtime::{Engine, Program, RunConfig};
use pathprof_wasm::ProfileMap;
use std::collections::HashMap;

/// Profiles whose executed paths are the interesting ones, each with the name it was given by.
#[derive(Clone, Debug, Default)]
pub struct Interesting {
    pub names: Vec<String>,
    /// The executed paths of every function, by index, from all the profiles.
    pub paths: HashMap<u32, Vec<PathCount>>,
    /// For a component: the core module the profiles profiled.
    pub core_module: Option<u32>,
}

impl Interesting {
    /// The interesting paths of `profiles` (`(name, profile)`), which must be profiles of the module
    /// `module`.
    pub fn of(module: &[u8], profiles: &[(String, Profile)]) -> Result<Interesting> {
        let sha = sha256_hex(module);
        let mut out = Interesting::default();
        for (name, profile) in profiles {
            if profile.module.sha256 != sha {
                bail!("{name} is a profile of another module ({})", profile.module.path);
            }
            if !out.names.is_empty() && profile.module.core_module != out.core_module {
                bail!("{name} profiles another core module of the component than {}", out.names[0]);
            }
            out.core_module = profile.module.core_module;
            out.add(name, &profile.functions);
        }
        Ok(out)
    }

    /// Adds the executed paths of `functions`, from a profile named `name`.
    pub fn add(&mut self, name: &str, functions: &[FunctionProfile]) {
        self.names.push(name.to_string());
        for f in functions {
            let executed = f.paths().iter().filter(|p| p.count.0 > 0).cloned();
            self.paths.entry(f.index).or_default().extend(executed);
        }
    }
}

/// Runs a module instrumented with preferential counts.
pub(crate) fn run(engine: &Engine, module: &Program, map: &ProfileMap, config: &RunConfig) -> Result<ModeRun> {
    super::bl::run_counted(engine, module, map, config, |_| ModeFacts::Ppp)
}

/// What the profile says of a `ppp` run over all its functions: the interesting paths, and the
/// residual ones that ran.
pub(crate) fn info(interesting_from: &[String], functions: &[FunctionProfile]) -> PppInfo {
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
    }
}
