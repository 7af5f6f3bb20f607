//! The core module that pathprof profiles in a program: the program itself when it is a module, or
//! one module of a component (`pathprof_wasm::component`), instrumented in its place.

use crate::files::sha256_hex;
use anyhow::{bail, Result};
use pathprof_core::profile::ModuleInfo as ProfileModule;
use pathprof_wasm::abi::HostCalls;
use pathprof_wasm::component::{ComponentInfo, CoreModule, CoreModulePath};
use pathprof_wasm::InstrumentOptions;

/// The core module that pathprof profiles in a program.
pub struct ProfiledModule<'a> {
    pub bytes: &'a [u8],
    /// For a component: what it holds, and which of its modules this is.
    pub component: Option<(ComponentInfo, CoreModule)>,
}

impl<'a> ProfiledModule<'a> {
    /// The profiled module of `program`, a module or a component: for a component, core module
    /// `choice` when given, else the program's module.
    pub fn of(program: &'a [u8], choice: Option<&CoreModulePath>) -> Result<ProfiledModule<'a>> {
        if !pathprof_wasm::component::is_component(program) {
            if choice.is_some() {
                bail!("a core module is chosen in a component; this is a module");
            }
            return Ok(ProfiledModule { bytes: program, component: None });
        }
        let info = ComponentInfo::read(program)?;
        let module = match choice {
            None => info.program()?.clone(),
            Some(path) => info.module(path)?.clone(),
        };
        Ok(ProfiledModule { bytes: &program[module.range.clone()], component: Some((info, module)) })
    }

    /// Instruments the module with `options` and gives the program to run (the instrumented module,
    /// or the component around it) with its map.
    pub fn instrument(&self, program: &[u8], options: &InstrumentOptions) -> Result<pathprof_wasm::Instrumented> {
        let Some((info, module)) = &self.component else { return Ok(pathprof_wasm::instrument(program, options)?) };
        let options = InstrumentOptions { host_calls: HostCalls::Table, ..options.clone() };
        let mut inst = pathprof_wasm::instrument(self.bytes, &options)?;
        inst.bytes = pathprof_wasm::component::rewrite(program, info, module, &inst)?;
        Ok(inst)
    }

    /// How profiles describe the program `program` given as `path`, of which this module, whose code
    /// section has `code_section_size` bytes, is profiled.
    pub fn describe(&self, program: &[u8], path: &str, code_section_size: usize) -> ProfileModule {
        ProfileModule {
            path: path.to_string(),
            sha256: sha256_hex(program),
            size: program.len() as u64,
            code_section_size: code_section_size as u64,
            core_module: self.component.as_ref().map(|(_, m)| m.index),
            core_module_within: self.component.as_ref().map_or_else(Vec::new, |(_, m)| m.within.clone()),
        }
    }

    /// Where the module lies in its component.
    pub fn core_module(&self) -> Option<CoreModulePath> {
        self.component.as_ref().map(|(_, m)| m.path())
    }

    /// Fails when a profile given for this module, `what`, profiled another core module (`theirs`)
    /// of the component.
    pub fn check_same_core_module(&self, what: &str, theirs: Option<&CoreModulePath>) -> Result<()> {
        match (theirs, self.core_module()) {
            (Some(t), Some(o)) if *t != o => bail!("{what} profiles core module {t} of the component, not {o}"),
            _ => Ok(()),
        }
    }
}

/// The core module that a profile's `module` profiled in its component, if the program is one.
pub fn core_module_of(module: &ProfileModule) -> Option<CoreModulePath> {
    module.core_module.map(|index| CoreModulePath { within: module.core_module_within.clone(), index })
}
