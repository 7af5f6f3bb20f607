//! What a mode may be given besides its settings: a profile whose edge frequencies guide the
//! numbering, the interesting paths of preferential profiling, the events to count, and the core
//! module of a component to profile.

use crate::files::sha256_hex;
use crate::modes::Setting;
use anyhow::{bail, Result};
use pathprof_core::profile::{FunctionProfile, PathCount, Profile};
use pathprof_wasm::events::EventSpec;
use std::collections::HashMap;

/// What instrumenting may take besides the module and the mode.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inputs<'a> {
    /// A profile of the same module: its edge frequencies place the increments on cold edges.
    pub edge_profile: Option<&'a Profile>,
    /// The paths that are interesting (mode `ppp`).
    pub interesting: Option<&'a Interesting>,
    /// The events to count (mode `events`; every built-in class when `None`).
    pub events: Option<&'a EventSpec>,
    /// For a component: the index of the core module to profile, instead of the program's module
    /// found as `ComponentInfo::program` finds it.
    pub core_module: Option<u32>,
}

impl Inputs<'_> {
    /// The settings these inputs give, which the mode must take.
    pub fn given(&self) -> Vec<Setting> {
        Setting::given([
            (self.edge_profile.is_some(), Setting::EdgeProfile),
            (self.interesting.is_some(), Setting::Interesting),
            (self.events.is_some(), Setting::Events),
        ])
    }
}

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
