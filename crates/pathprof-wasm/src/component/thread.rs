//! A core module in a nested component joined to the host: the host's functions are threaded down
//! to it through every component that holds it.
//!
//! A composed component (wasm-compose, wac) defines no core module of its own at its top level:
//! the program's module lies in a nested component, which the host cannot reach. So every
//! component from the top level down to the module's imports the host's functions
//! ([`Glue::imports`]), in front of its own items, and passes them on to the next one's
//! instantiation as arguments; the module's own component then appends the glue after its items
//! as a top-level module's does ([`Glue::append`]). Putting imports in front renumbers the
//! component types and functions of each component on the way, and of every reference to them,
//! outer aliases from deeper components and name sections included: the component is re-encoded
//! with wasm-encoder's `reencode`, each depth with its own shift. Core modules are copied as they
//! are, the profiled one replaced by its instrumented version; core indices do not change.

use super::glue::{Glue, HostFuncs};
use super::{instantiated_once, ComponentInfo, CoreModule, Counts, CORE_MODULE_SECTION};
use crate::instrument::Instrumented;
use crate::module::ModuleError;
use std::convert::Infallible;
use wasm_encoder::reencode::component_utils;
use wasm_encoder::reencode::{Reencode, ReencodeComponent};
use wasm_encoder::{Component, ComponentExportKind, ComponentInstanceSection, NestedComponentSection, RawSection};
use wasmparser::Parser;

/// `bytes` with `module`, which lies in a nested component, replaced by `instrumented`, joined
/// to the host as the [module docs](self) describe; `instance` is the module's one core instance.
pub(super) fn rewrite(
    bytes: &[u8],
    info: &ComponentInfo,
    module: &CoreModule,
    instance: u32,
    instrumented: &Instrumented,
) -> Result<Vec<u8>, ModuleError> {
    let glue = Glue::new(instance, instrumented)?;
    let mut levels = Vec::new();
    for depth in 1..=module.within.len() {
        let path = &module.within[..depth];
        let nested = info.component(path);
        let nested = nested.ok_or_else(|| ModuleError::Invalid("the core module's component is not defined".into()))?;
        let name = path.iter().map(u32::to_string).collect::<Vec<_>>().join("/");
        instantiated_once(&format!("component {name}"), &nested.instances)?;
        levels.push(Level { start: nested.range.start, index: path[depth - 1], counts: nested.counts });
    }
    let mut out = Component::new();
    let funcs = glue.imports(&mut out, 0, 0);
    let mut threader = Threader {
        whole: bytes,
        glue: &glue,
        funcs,
        levels,
        module_start: module.range.start,
        module: &instrumented.bytes,
        replaced: false,
        shifts: Vec::new(),
    };
    threader.push_depth();
    threader.enter_path(0);
    let reencoded = component_utils::parse_component(&mut threader, &mut out, Parser::new(0), bytes, bytes);
    reencoded.map_err(|e| ModuleError::Invalid(format!("cannot re-encode the component: {e}")))?;
    if !threader.replaced {
        return Err(ModuleError::Invalid(format!("core module {} was not found in its component", module.path())));
    }
    Ok(out.finish())
}

/// A nested component on the way to the module: where its bytes start in the top-level
/// component's, its index in its parent's component index space, and its index spaces' sizes.
struct Level {
    start: usize,
    index: u32,
    counts: Counts,
}

/// What one depth of the re-encoding adds to the indices of its component types and functions,
/// and which component on the way to the module it is (0 for the top level).
#[derive(Clone, Copy, Default)]
struct Shift {
    types: u32,
    funcs: u32,
    level: Option<usize>,
}

/// The re-encoder that threads the host's functions down to the module.
struct Threader<'a> {
    /// The top-level component's bytes, which every section read is a slice of.
    whole: &'a [u8],
    glue: &'a Glue<'a>,
    /// The host's functions, as each component on the way imports them.
    funcs: HostFuncs,
    /// The nested components on the way, from the top level's child down to the module's.
    levels: Vec<Level>,
    /// Where the module's bytes start in the top-level component's.
    module_start: usize,
    /// The instrumented module.
    module: &'a [u8],
    replaced: bool,
    /// One per depth of the re-encoding (components, and the type declarations within them).
    shifts: Vec<Shift>,
}

impl Threader<'_> {
    /// Where `part`, a slice of the top-level component, starts in it.
    fn offset(&self, part: &[u8]) -> usize {
        part.as_ptr() as usize - self.whole.as_ptr() as usize
    }

    /// The innermost depth becomes component `level` of the way, whose imports come first.
    fn enter_path(&mut self, level: usize) {
        let shift = Shift { types: self.funcs.types, funcs: self.funcs.count(), level: Some(level) };
        if let Some(last) = self.shifts.last_mut() {
            *last = shift;
        }
    }

    fn shift(&self) -> Shift {
        self.shifts.last().copied().unwrap_or_default()
    }
}

impl Reencode for Threader<'_> {
    type Error = Infallible;
}

impl ReencodeComponent for Threader<'_> {
    fn component_type_index(&mut self, ty: u32) -> u32 {
        ty + self.shift().types
    }

    fn component_func_index(&mut self, func: u32) -> u32 {
        func + self.shift().funcs
    }

    fn outer_component_type_index(&mut self, count: u32, ty: u32) -> u32 {
        let target = self.shifts.len().checked_sub(1 + count as usize);
        ty + target.map_or(0, |d| self.shifts[d].types)
    }

    fn push_depth(&mut self) {
        self.shifts.push(Shift::default());
    }

    fn pop_depth(&mut self) {
        self.shifts.pop();
    }

    fn parse_component_submodule(
        &mut self,
        component: &mut Component,
        _parser: Parser,
        module: &[u8],
    ) -> Result<(), wasm_encoder::reencode::Error<Infallible>> {
        let data = if self.offset(module) == self.module_start {
            self.replaced = true;
            self.module
        } else {
            module
        };
        component.section(&RawSection { id: CORE_MODULE_SECTION, data });
        Ok(())
    }

    fn parse_component_subcomponent(
        &mut self,
        component: &mut Component,
        parser: Parser,
        subcomponent: &[u8],
        whole_component: &[u8],
    ) -> Result<(), wasm_encoder::reencode::Error<Infallible>> {
        let next =
            self.shift().level.filter(|&k| self.levels.get(k).is_some_and(|l| l.start == self.offset(subcomponent)));
        self.push_depth();
        let mut nested = Component::new();
        if let Some(k) = next {
            self.glue.imports(&mut nested, 0, 0);
            self.enter_path(k + 1);
        }
        component_utils::parse_component(self, &mut nested, parser, subcomponent, whole_component)?;
        if let Some(k) = next.filter(|&k| k + 1 == self.levels.len()) {
            self.glue.append(&mut nested, self.levels[k].counts, &self.funcs);
        }
        component.section(&NestedComponentSection(&nested));
        self.pop_depth();
        Ok(())
    }

    fn parse_component_instance(
        &mut self,
        instances: &mut ComponentInstanceSection,
        instance: wasmparser::ComponentInstance<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Infallible>> {
        let next = self.shift().level.and_then(|k| self.levels.get(k)).map(|l| l.index);
        match instance {
            wasmparser::ComponentInstance::Instantiate { component_index, args } if Some(component_index) == next => {
                let mut all = Vec::new();
                for arg in args.iter() {
                    all.push((arg.name, arg.kind.into(), self.component_external_index(arg.kind, arg.index)));
                }
                all.extend(self.funcs.args().map(|(name, func)| (name, ComponentExportKind::Func, func)));
                instances.instantiate(self.component_index(component_index), all);
                Ok(())
            }
            other => component_utils::parse_component_instance(self, instances, other),
        }
    }
}
