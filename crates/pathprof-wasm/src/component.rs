//! Components: the core module of a component that pathprof profiles, and the component rewritten
//! around its instrumented version.
//!
//! A WASI preview 2 command is a component holding core modules: the program's, and the small ones
//! that adapt it (the preview-1 adapter and its shims). [`ComponentInfo::read`] lists the core
//! modules the component defines at its top level and the core instances that instantiate them;
//! the program's module is the one with the most code among those wit-component did not add
//! ([`ComponentInfo::program`]).
//!
//! The instrumented module is made with [`HostCalls::Table`]: its instantiation in the component
//! passes it the same imports as before, since nothing can be added to it without renumbering the
//! whole component. [`rewrite`] puts it in the original module's place, copies every other section
//! as it is, and appends what joins it to the host — all of it after the original items, so no
//! index changes:
//!
//! * the component imports [`HostImport::component_name`] (`func(function: u32, path: u64)` or
//!   `func()`) and [`ATTACH_IMPORT`] (`func(memory: list<u8>)`);
//! * aliases of the instrumented instance's profiler memory and hooks table;
//! * the imports lowered into core functions, [`ATTACH_IMPORT`] with the profiler's memory as its
//!   canonical-ABI memory;
//! * a glue module, instantiated last, whose element segment puts the host function into the hooks
//!   table and whose start function hands the whole profiler memory to the host.

use crate::abi::{HostCalls, HostImport, ATTACH_IMPORT};
use crate::instrument::Instrumented;
use crate::module::ModuleError;
use crate::sections::{sections, TopSection};
use std::ops::Range;
use wasm_encoder::{
    Alias, CanonicalFunctionSection, CanonicalOption, CodeSection, Component, ComponentAliasSection,
    ComponentImportSection, ComponentTypeRef, ComponentTypeSection, ComponentValType, ConstExpr, ElementSection,
    Elements, EntityType, ExportKind, Function, ImportSection, InstanceSection, Instruction, ModuleArg, ModuleSection,
    PrimitiveValType, RawSection, StartSection, TableType, TypeSection, ValType,
};
use wasmparser::{Instance, Parser, Payload, Validator, WasmFeatures};

/// Module name of the glue module's imports.
const GLUE_IMPORTS: &str = "pathprof";

/// Whether `bytes` are a component (rather than a core module).
pub fn is_component(bytes: &[u8]) -> bool {
    Parser::is_component(bytes)
}

/// A core module defined at the top level of a component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreModule {
    /// Its index in the component's core module index space.
    pub index: u32,
    /// Its bytes within the component's.
    pub range: Range<usize>,
    /// Size of its code section.
    pub code_size: usize,
    /// Its name in the component's name section.
    pub name: Option<String>,
    /// It has a start function.
    pub start: bool,
    /// The core instances that instantiate it.
    pub instances: Vec<u32>,
}

/// What pathprof needs to know about a component.
#[derive(Clone, Debug)]
pub struct ComponentInfo {
    /// The core modules defined at its top level, in order.
    pub modules: Vec<CoreModule>,
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

impl ComponentInfo {
    /// Validates the component's structure (the core modules' function bodies are validated when
    /// they are instrumented or compiled) and lists its top-level core modules.
    pub fn read(bytes: &[u8]) -> Result<ComponentInfo, ModuleError> {
        if !Parser::is_component(bytes) {
            return Err(ModuleError::Malformed("not a WebAssembly component".into()));
        }
        let invalid = |e: wasmparser::BinaryReaderError| ModuleError::Invalid(e.to_string());
        let mut validator = Validator::new_with_features(WasmFeatures::all());
        let mut modules = Vec::new();
        let mut depth = 0usize;
        let mut counts = Counts::default();
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(|e| ModuleError::Malformed(e.to_string()))?;
            if let (0, Some(types)) = (depth, validator.types(0)) {
                match &payload {
                    Payload::ModuleSection { unchecked_range, .. } => modules.push(CoreModule {
                        index: types.module_count(),
                        range: unchecked_range.clone(),
                        code_size: 0,
                        name: None,
                        start: false,
                        instances: Vec::new(),
                    }),
                    Payload::CustomSection(c) => {
                        if let wasmparser::KnownCustom::ComponentName(reader) = c.as_known() {
                            // A malformed name section only loses names.
                            for names in reader.flatten() {
                                if let wasmparser::ComponentName::CoreModules(map) = names {
                                    for naming in map.into_iter().flatten() {
                                        if let Some(m) = modules.iter_mut().find(|m| m.index == naming.index) {
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
                                if let Some(m) = modules.iter_mut().find(|m| m.index == module_index) {
                                    m.instances.push(first + k as u32);
                                }
                            }
                        }
                    }
                    Payload::End(_) => {
                        counts = Counts {
                            types: types.component_type_count(),
                            funcs: types.component_function_count(),
                            modules: types.module_count(),
                            core_instances: types.core_instance_count(),
                            core_funcs: types.function_count(),
                            core_memories: types.memory_count(),
                            core_tables: types.table_count(),
                        };
                    }
                    _ => {}
                }
            }
            if let (1, Some(m)) = (depth, modules.last_mut()) {
                match &payload {
                    Payload::CodeSectionStart { range, .. } if m.range.contains(&range.start) => {
                        m.code_size = range.len();
                    }
                    Payload::StartSection { range, .. } if m.range.contains(&range.start) => m.start = true,
                    _ => {}
                }
            }
            match payload {
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
                Payload::End(_) => depth = depth.saturating_sub(1),
                _ => {}
            }
            validator.payload(&payload).map_err(invalid)?;
        }
        Ok(ComponentInfo { modules, counts })
    }

    /// The program's module: the top-level core module with the most code that is not one of the
    /// modules wit-component adds (adapters, shims, fixups: named `wit-component:adapter:...`,
    /// `wit-component-shim-module`, `wit-component-fixup`), or the one with the most code when
    /// they are all such modules.
    pub fn program(&self) -> Result<&CoreModule, ModuleError> {
        let added = |m: &CoreModule| m.name.as_deref().is_some_and(|n| n.starts_with("wit-component"));
        let largest = |own: bool| {
            self.modules
                .iter()
                .filter(|m| m.code_size > 0 && (!own || !added(m)))
                .max_by_key(|m| (m.code_size, std::cmp::Reverse(m.index)))
        };
        largest(true)
            .or_else(|| largest(false))
            .ok_or_else(|| ModuleError::Invalid("the component defines no core module with code".into()))
    }
}

/// The component `bytes` with `module` replaced by `instrumented` (made with [`HostCalls::Table`]),
/// joined to the host as the [module docs](self) describe.
pub fn rewrite(
    bytes: &[u8],
    info: &ComponentInfo,
    module: &CoreModule,
    instrumented: &Instrumented,
) -> Result<Vec<u8>, ModuleError> {
    let instance = match module.instances[..] {
        [instance] => instance,
        ref all => {
            return Err(ModuleError::Invalid(format!(
                "core module {} is instantiated {} times; pathprof profiles a module instantiated once",
                module.index,
                all.len()
            )))
        }
    };
    if module.start && instrumented.map.sink.import().is_some() {
        return Err(ModuleError::Invalid(format!(
            "core module {} has a start function, which would run before the component joins its probes \
             to the host",
            module.index
        )));
    }
    let mut out = Component::new();
    for TopSection { id, contents, .. } in sections(bytes)? {
        // A core module section's contents are the module.
        let data = if id == CORE_MODULE_SECTION && contents == module.range {
            &instrumented.bytes[..]
        } else {
            &bytes[contents]
        };
        out.section(&RawSection { id, data });
    }
    Glue::new(info.counts, instance, instrumented)?.append(&mut out);
    Ok(out.finish())
}

/// Id of the component section that holds a core module.
const CORE_MODULE_SECTION: u8 = 1;

/// `component` with its core module at `range` (the contents of one of its top-level sections)
/// replaced by `module`: the section's size is written anew, every other byte is as it was.
pub fn replace_core_module(component: &[u8], range: Range<usize>, module: &[u8]) -> Result<Vec<u8>, ModuleError> {
    let found = sections(component)?.into_iter().find(|s| s.contents == range);
    let Some(section) = found else {
        return Err(ModuleError::Invalid("the core module is not a section of the component's top level".into()));
    };
    let mut out = Vec::with_capacity(component.len() + module.len() - range.len() + 4);
    out.extend_from_slice(&component[..section.range.start]);
    out.push(section.id);
    wasm_encoder::Encode::encode(
        &u32::try_from(module.len()).map_err(|_| ModuleError::Invalid("module too large".into()))?,
        &mut out,
    );
    out.extend_from_slice(module);
    out.extend_from_slice(&component[section.range.end..]);
    Ok(out)
}

/// What joins an instrumented module inside a component to the host.
struct Glue<'a> {
    counts: Counts,
    /// The core instance of the instrumented module.
    instance: u32,
    /// The host function, its table's export name.
    hook: Option<(HostImport, &'a str)>,
    /// The profiler memory's export name and size.
    memory: Option<(&'a str, i32)>,
}

impl<'a> Glue<'a> {
    fn new(counts: Counts, instance: u32, inst: &'a Instrumented) -> Result<Glue<'a>, ModuleError> {
        let hook = match (inst.map.sink.import(), inst.hooks_export.as_deref()) {
            (None, _) => None,
            (Some(import), Some(table)) => Some((import, table)),
            (Some(_), None) => {
                return Err(ModuleError::Invalid(format!(
                    "the module was not instrumented with {:?}",
                    HostCalls::Table
                )))
            }
        };
        let memory = match inst.map.memory_export.as_deref() {
            None => None,
            Some(name) => {
                let size = i32::try_from(inst.memory_bytes)
                    .map_err(|_| ModuleError::Invalid("the profiler's memory is too large for a component".into()))?;
                Some((name, size))
            }
        };
        Ok(Glue { counts, instance, hook, memory })
    }

    /// Appends the glue to `out`, which holds the component's original sections.
    fn append(&self, out: &mut Component) {
        let c = self.counts;
        let mut types = ComponentTypeSection::new();
        let mut imports = ComponentImportSection::new();
        let mut aliases = ComponentAliasSection::new();
        let mut canon = CanonicalFunctionSection::new();
        // Core items the glue module's instantiation takes: (name, kind, index).
        let mut args: Vec<(&str, ExportKind, u32)> = Vec::new();
        let (mut next_type, mut next_func, mut next_core_func) = (c.types, c.funcs, c.core_funcs);
        if let Some((import, table)) = self.hook {
            let mut f = types.function();
            if import.takes_path() {
                f.params([
                    ("function", ComponentValType::Primitive(PrimitiveValType::U32)),
                    ("path", ComponentValType::Primitive(PrimitiveValType::U64)),
                ]);
            } else {
                f.params(std::iter::empty::<(&str, ComponentValType)>());
            }
            f.result(None);
            imports.import(import.component_name(), ComponentTypeRef::Func(next_type));
            next_type += 1;
            aliases.alias(Alias::CoreInstanceExport { instance: self.instance, kind: ExportKind::Table, name: table });
            canon.lower(next_func, []);
            next_func += 1;
            args.push(("hooks", ExportKind::Table, c.core_tables));
            args.push(("hook", ExportKind::Func, next_core_func));
            next_core_func += 1;
        }
        if let Some((memory, _)) = self.memory {
            types.defined_type().list(PrimitiveValType::U8);
            types.function().params([("memory", ComponentValType::Type(next_type))]).result(None);
            imports.import(ATTACH_IMPORT, ComponentTypeRef::Func(next_type + 1));
            aliases.alias(Alias::CoreInstanceExport {
                instance: self.instance,
                kind: ExportKind::Memory,
                name: memory,
            });
            canon.lower(next_func, [CanonicalOption::Memory(c.core_memories)]);
            args.push(("attach", ExportKind::Func, next_core_func));
        }
        if args.is_empty() {
            return;
        }
        out.section(&types);
        out.section(&imports);
        out.section(&aliases);
        out.section(&canon);
        out.section(&ModuleSection(&self.module()));
        let mut instances = InstanceSection::new();
        instances.export_items(args);
        instances.instantiate(c.modules, [(GLUE_IMPORTS, ModuleArg::Instance(c.core_instances))]);
        out.section(&instances);
    }

    /// The glue module: it imports what [`append`](Self::append) passes it, fills the hooks table
    /// and hands over the profiler's memory from its start function.
    fn module(&self) -> wasm_encoder::Module {
        let mut types = TypeSection::new();
        let mut imports = ImportSection::new();
        let mut funcs = 0u32;
        let mut hook_func = None;
        if let Some((import, _)) = self.hook {
            let params: &[ValType] = if import.takes_path() { &[ValType::I32, ValType::I64] } else { &[] };
            types.ty().function(params.iter().copied(), []);
            imports.import(
                GLUE_IMPORTS,
                "hooks",
                EntityType::Table(TableType {
                    element_type: wasm_encoder::RefType::FUNCREF,
                    minimum: 1,
                    maximum: Some(1),
                    table64: false,
                    shared: false,
                }),
            );
            imports.import(GLUE_IMPORTS, "hook", EntityType::Function(types.len() - 1));
            hook_func = Some(funcs);
            funcs += 1;
        }
        let mut module = wasm_encoder::Module::new();
        let Some((_, size)) = self.memory else {
            module.section(&types).section(&imports);
            Self::fill(&mut module, hook_func);
            return module;
        };
        types.ty().function([ValType::I32, ValType::I32], []);
        imports.import(GLUE_IMPORTS, "attach", EntityType::Function(types.len() - 1));
        let attach = funcs;
        types.ty().function([], []);
        let start_type = types.len() - 1;
        let mut functions = wasm_encoder::FunctionSection::new();
        functions.function(start_type);
        let start = attach + 1;
        module.section(&types).section(&imports).section(&functions);
        module.section(&StartSection { function_index: start });
        Self::fill(&mut module, hook_func);
        let mut body = Function::new([]);
        body.instruction(&Instruction::I32Const(0))
            .instruction(&Instruction::I32Const(size))
            .instruction(&Instruction::Call(attach))
            .instruction(&Instruction::End);
        let mut code = CodeSection::new();
        code.function(&body);
        module.section(&code);
        module
    }

    /// The element segment that puts the host function in slot 0 of the hooks table.
    fn fill(module: &mut wasm_encoder::Module, hook_func: Option<u32>) {
        if let Some(f) = hook_func {
            let mut elements = ElementSection::new();
            elements.active(Some(0), &ConstExpr::i32_const(0), Elements::Functions([f][..].into()));
            module.section(&elements);
        }
    }
}
