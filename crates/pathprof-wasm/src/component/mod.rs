//! Components: the core module of a component that pathprof profiles, and the component rewritten
//! around its instrumented version.
//!
//! A WASI preview 2 command is a component holding core modules: the program's, and the small ones
//! that adapt it (the preview-1 adapter and its shims). A composed component (wasm-compose, wac)
//! holds components instead, each with modules of its own, which call each other through the
//! composition. [`ComponentInfo::read`] lists the core modules at every depth, where each lies
//! ([`CoreModulePath`]: `2`, or `1/0` in the top level's component 1), and the instances that
//! instantiate them and their components; the program's module is the one with the most code
//! among those wit-component did not add ([`ComponentInfo::program`]).
//!
//! The instrumented module is made with [`HostCalls::Table`](crate::abi::HostCalls::Table): its
//! instantiation in the component passes it the same imports as before. [`rewrite`] puts it in the
//! original module's place and joins it to the host (`glue`):
//!
//! * the component imports the host function
//!   ([`HostImport::component_name`](crate::abi::HostImport::component_name):
//!   `func(function: u32, path: u64)` or `func()`) and
//!   [`ATTACH_IMPORT`](crate::abi::ATTACH_IMPORT) (`func(memory: list<u8>)`);
//! * aliases of the instrumented instance's profiler memory and hooks table;
//! * the imports lowered into core functions, the attach import with the profiler's memory as its
//!   canonical-ABI memory;
//! * a glue module, instantiated last, whose element segment puts the host function into the hooks
//!   table and whose start function hands the whole profiler memory to the host.
//!
//! For a module of the top level all of it comes after the component's own items, so no index
//! changes. For a module in a nested component, every component on the way imports the host's
//! functions in front of its items and passes them on to the next (`thread`).

mod glue;
mod thread;

use crate::instrument::Instrumented;
use crate::module::ModuleError;
use crate::sections::sections;
use glue::Glue;
use std::ops::Range;
use wasm_encoder::Component;
use wasmparser::{ComponentInstance, Instance, Parser, Payload, Validator, WasmFeatures};

/// Module name of the glue module's imports.
const GLUE_IMPORTS: &str = "pathprof";

/// Whether `bytes` are a component (rather than a core module).
pub fn is_component(bytes: &[u8]) -> bool {
    Parser::is_component(bytes)
}

/// A core module defined in a component, at its top level or in a component nested in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreModule {
    /// Its index in the core module index space of the component that defines it.
    pub index: u32,
    /// The nested components that hold it, from the top level down, each by its index in its
    /// parent's component index space: empty for a module of the top level.
    pub within: Vec<u32>,
    /// Its bytes within the (top-level) component's.
    pub range: Range<usize>,
    /// Size of its code section.
    pub code_size: usize,
    /// Its name in its component's name section.
    pub name: Option<String>,
    /// It has a start function.
    pub start: bool,
    /// The core instances of its component that instantiate it.
    pub instances: Vec<u32>,
}

impl CoreModule {
    /// Where it lies in its component.
    pub fn path(&self) -> CoreModulePath {
        CoreModulePath { within: self.within.clone(), index: self.index }
    }
}

/// Where a core module lies in a component: the nested components that hold it, from the top
/// level down, and its index in the innermost one's core module index space. Written `2` for core
/// module 2 of the top level, `1/0` for core module 0 of the top level's component 1.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CoreModulePath {
    pub within: Vec<u32>,
    pub index: u32,
}

impl std::fmt::Display for CoreModulePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in &self.within {
            write!(f, "{c}/")?;
        }
        write!(f, "{}", self.index)
    }
}

impl std::str::FromStr for CoreModulePath {
    type Err = String;

    fn from_str(s: &str) -> Result<CoreModulePath, String> {
        let mut indices = s
            .split('/')
            .map(|part| part.parse::<u32>().map_err(|_| format!("`{s}` is not a core module's index (e.g. 2, or 1/0)")))
            .collect::<Result<Vec<u32>, String>>()?;
        let index = indices.pop().unwrap_or_default();
        Ok(CoreModulePath { within: indices, index })
    }
}

/// A component nested in another.
#[derive(Clone, Debug)]
pub struct NestedComponent {
    /// The nested components that lead to it from the top level, itself last, each by its index
    /// in its parent's component index space.
    pub path: Vec<u32>,
    /// Its bytes within the top-level component's.
    pub range: Range<usize>,
    /// The component instances of its parent that instantiate it.
    pub instances: Vec<u32>,
    /// Sizes of its index spaces, after its last section.
    counts: Counts,
}

/// What pathprof needs to know about a component.
#[derive(Clone, Debug)]
pub struct ComponentInfo {
    /// The core modules it defines, at its top level and in its nested components, in the order
    /// of their bytes.
    pub modules: Vec<CoreModule>,
    /// The components nested in it, at any depth, in the order of their bytes.
    pub components: Vec<NestedComponent>,
    /// Sizes of its index spaces, after its last section.
    counts: Counts,
}

/// Sizes of a component's index spaces.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    types: u32,
    funcs: u32,
    modules: u32,
    core_instances: u32,
    core_funcs: u32,
    core_memories: u32,
    core_tables: u32,
}

/// What the reader of a component is in: a component (by its path), or a core module.
enum Frame {
    Component(Vec<u32>),
    Module,
}

impl ComponentInfo {
    /// Validates the component's structure (the core modules' function bodies are validated when
    /// they are instrumented or compiled) and lists its core modules and nested components.
    pub fn read(bytes: &[u8]) -> Result<ComponentInfo, ModuleError> {
        if !Parser::is_component(bytes) {
            return Err(ModuleError::Malformed("not a WebAssembly component".into()));
        }
        let invalid = |e: wasmparser::BinaryReaderError| ModuleError::Invalid(e.to_string());
        let mut validator = Validator::new_with_features(WasmFeatures::all());
        let mut info = ComponentInfo { modules: Vec::new(), components: Vec::new(), counts: Counts::default() };
        let mut stack = vec![Frame::Component(Vec::new())];
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(|e| ModuleError::Malformed(e.to_string()))?;
            let mut enters = None;
            match (stack.last(), validator.types(0)) {
                (Some(Frame::Component(path)), Some(types)) => {
                    enters = info.component_payload(path, &payload, &types)?;
                }
                (Some(Frame::Module), _) => {
                    if let Some(m) = info.modules.last_mut() {
                        match &payload {
                            Payload::CodeSectionStart { range, .. } => m.code_size = range.len(),
                            Payload::StartSection { .. } => m.start = true,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
            let ends = matches!(payload, Payload::End(_));
            validator.payload(&payload).map_err(invalid)?;
            if ends {
                stack.pop();
            }
            stack.extend(enters);
        }
        Ok(info)
    }

    /// Reads `payload` of the component at `path`: what it enters, if it starts a module or a
    /// component.
    fn component_payload(
        &mut self,
        path: &[u32],
        payload: &Payload<'_>,
        types: &wasmparser::types::TypesRef<'_>,
    ) -> Result<Option<Frame>, ModuleError> {
        let invalid = |e: wasmparser::BinaryReaderError| ModuleError::Invalid(e.to_string());
        let modules_here = |m: &&mut CoreModule| m.within == path;
        match payload {
            Payload::ModuleSection { unchecked_range, .. } => {
                self.modules.push(CoreModule {
                    index: types.module_count(),
                    within: path.to_vec(),
                    range: unchecked_range.clone(),
                    code_size: 0,
                    name: None,
                    start: false,
                    instances: Vec::new(),
                });
                return Ok(Some(Frame::Module));
            }
            Payload::ComponentSection { unchecked_range, .. } => {
                let mut inner = path.to_vec();
                inner.push(types.component_count());
                self.components.push(NestedComponent {
                    path: inner.clone(),
                    range: unchecked_range.clone(),
                    instances: Vec::new(),
                    counts: Counts::default(),
                });
                return Ok(Some(Frame::Component(inner)));
            }
            Payload::CustomSection(c) => {
                if let wasmparser::KnownCustom::ComponentName(reader) = c.as_known() {
                    // A malformed name section only loses names.
                    for names in reader.flatten() {
                        if let wasmparser::ComponentName::CoreModules(map) = names {
                            for naming in map.into_iter().flatten() {
                                let mut here = self.modules.iter_mut().filter(modules_here);
                                if let Some(m) = here.find(|m| m.index == naming.index) {
                                    m.name = Some(naming.name.to_string());
                                }
                            }
                        }
                    }
                }
            }
            Payload::InstanceSection(reader) => {
                let first = types.core_instance_count();
                for (k, instance) in reader.clone().into_iter().enumerate() {
                    if let Instance::Instantiate { module_index, .. } = instance.map_err(invalid)? {
                        let mut here = self.modules.iter_mut().filter(modules_here);
                        if let Some(m) = here.find(|m| m.index == module_index) {
                            m.instances.push(first + k as u32);
                        }
                    }
                }
            }
            Payload::ComponentInstanceSection(reader) => {
                let first = types.component_instance_count();
                for (k, instance) in reader.clone().into_iter().enumerate() {
                    if let ComponentInstance::Instantiate { component_index, .. } = instance.map_err(invalid)? {
                        let child = |c: &&mut NestedComponent| {
                            c.path.len() == path.len() + 1
                                && c.path.starts_with(path)
                                && c.path.last() == Some(&component_index)
                        };
                        if let Some(c) = self.components.iter_mut().find(child) {
                            c.instances.push(first + k as u32);
                        }
                    }
                }
            }
            Payload::End(_) => {
                let counts = Counts {
                    types: types.component_type_count(),
                    funcs: types.component_function_count(),
                    modules: types.module_count(),
                    core_instances: types.core_instance_count(),
                    core_funcs: types.function_count(),
                    core_memories: types.memory_count(),
                    core_tables: types.table_count(),
                };
                match self.components.iter_mut().find(|c| c.path == path) {
                    Some(c) => c.counts = counts,
                    None => self.counts = counts,
                }
            }
            _ => {}
        }
        Ok(None)
    }

    /// The program's module: the core module with the most code, at any depth, that is not one of
    /// the modules wit-component adds (adapters, shims, fixups: named `wit-component:adapter:...`,
    /// `wit-component-shim-module`, `wit-component-fixup`), or the one with the most code when
    /// they are all such modules.
    pub fn program(&self) -> Result<&CoreModule, ModuleError> {
        let added = |m: &CoreModule| m.name.as_deref().is_some_and(|n| n.starts_with("wit-component"));
        let largest = |own: bool| {
            self.modules
                .iter()
                .enumerate()
                .filter(|(_, m)| m.code_size > 0 && (!own || !added(m)))
                .max_by_key(|(k, m)| (m.code_size, std::cmp::Reverse(*k)))
                .map(|(_, m)| m)
        };
        largest(true)
            .or_else(|| largest(false))
            .ok_or_else(|| ModuleError::Invalid("the component defines no core module with code".into()))
    }

    /// The core module at `path`.
    pub fn module(&self, path: &CoreModulePath) -> Result<&CoreModule, ModuleError> {
        self.modules.iter().find(|m| m.within == path.within && m.index == path.index).ok_or_else(|| {
            let all: Vec<String> = self.modules.iter().map(|m| m.path().to_string()).collect();
            ModuleError::Invalid(format!(
                "the component defines no core module {path} (it defines {})",
                if all.is_empty() { "none".to_string() } else { all.join(", ") }
            ))
        })
    }

    /// The nested component at `path`.
    fn component(&self, path: &[u32]) -> Option<&NestedComponent> {
        self.components.iter().find(|c| c.path == path)
    }
}

/// The component `bytes` with `module` replaced by `instrumented` (made with
/// [`HostCalls::Table`](crate::abi::HostCalls::Table)),
/// joined to the host as the [module docs](self) describe.
pub fn rewrite(
    bytes: &[u8],
    info: &ComponentInfo,
    module: &CoreModule,
    instrumented: &Instrumented,
) -> Result<Vec<u8>, ModuleError> {
    let instance = instantiated_once(&format!("core module {}", module.path()), &module.instances)?;
    if module.start && instrumented.map.sink.import().is_some() {
        return Err(ModuleError::Invalid(format!(
            "core module {} has a start function, which would run before the component joins its probes \
             to the host",
            module.path()
        )));
    }
    if !module.within.is_empty() {
        return thread::rewrite(bytes, info, module, instance, instrumented);
    }
    // The component with the module replaced, then the glue's sections (after their header).
    let mut out = replace_core_module(bytes, info, module, &instrumented.bytes)?;
    let glue = Glue::new(instance, instrumented)?;
    let mut appended = Component::new();
    let funcs = glue.imports(&mut appended, info.counts.types, info.counts.funcs);
    glue.append(&mut appended, info.counts, &funcs);
    out.extend_from_slice(&appended.finish()[COMPONENT_HEADER..]);
    Ok(out)
}

/// The one instance in `instances` of `what`.
fn instantiated_once(what: &str, instances: &[u32]) -> Result<u32, ModuleError> {
    match instances {
        [instance] => Ok(*instance),
        all => Err(ModuleError::Invalid(format!(
            "{what} is instantiated {} times; pathprof profiles a module instantiated once",
            all.len()
        ))),
    }
}

/// Id of the component section that holds a core module.
const CORE_MODULE_SECTION: u8 = 1;

/// Bytes of a component's header (magic, version, layer), before its first section.
const COMPONENT_HEADER: usize = 8;

/// `component` with its core `module` (which `info` lists) replaced by `new`: the sizes of the
/// module's section and of the sections of the nested components that hold it are written anew,
/// every other byte is as it was.
pub fn replace_core_module(
    component: &[u8],
    info: &ComponentInfo,
    module: &CoreModule,
    new: &[u8],
) -> Result<Vec<u8>, ModuleError> {
    let mut ranges = Vec::new();
    for depth in 1..=module.within.len() {
        let nested = info.component(&module.within[..depth]);
        let nested = nested.ok_or_else(|| ModuleError::Invalid("the core module's component is not defined".into()))?;
        ranges.push(nested.range.clone());
    }
    ranges.push(module.range.clone());
    replace_section(component, 0, &ranges, new)
}

/// `bytes`, a component at `base` in the top-level one, with the section whose contents are
/// `ranges[0]` replaced: by `new` when it is the last range, else by itself with the next replaced.
fn replace_section(bytes: &[u8], base: usize, ranges: &[Range<usize>], new: &[u8]) -> Result<Vec<u8>, ModuleError> {
    let Some((target, inner)) = ranges.split_first() else { return Ok(new.to_vec()) };
    let found = sections(bytes)?.into_iter().find(|s| s.contents.start + base == target.start);
    let Some(section) = found else {
        return Err(ModuleError::Invalid("the core module is not a section of its component".into()));
    };
    let contents = replace_section(&bytes[section.contents.clone()], base + section.contents.start, inner, new)?;
    let mut out = Vec::with_capacity(bytes.len() + contents.len() + 4 - section.contents.len());
    out.extend_from_slice(&bytes[..section.range.start]);
    out.push(section.id);
    wasm_encoder::Encode::encode(
        &u32::try_from(contents.len()).map_err(|_| ModuleError::Invalid("module too large".into()))?,
        &mut out,
    );
    out.extend_from_slice(&contents);
    out.extend_from_slice(&bytes[section.range.end..]);
    Ok(out)
}
