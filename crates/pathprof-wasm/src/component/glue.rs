//! What joins an instrumented module inside a component to the host: the component's imports of
//! the host's functions, and the core items appended after the component's own that hand them to
//! the module (see the [parent module](super)).

use super::{Counts, GLUE_IMPORTS};
use crate::abi::{HostCalls, HostImport, ATTACH_IMPORT};
use crate::instrument::Instrumented;
use crate::module::ModuleError;
use wasm_encoder::{
    Alias, CanonicalFunctionSection, CanonicalOption, CodeSection, Component, ComponentAliasSection,
    ComponentImportSection, ComponentTypeRef, ComponentTypeSection, ComponentValType, ConstExpr, ElementSection,
    Elements, EntityType, ExportKind, Function, ImportSection, InstanceSection, Instruction, ModuleArg, ModuleSection,
    PrimitiveValType, StartSection, TableType, TypeSection, ValType,
};

/// What joins an instrumented module inside a component to the host.
pub(super) struct Glue<'a> {
    /// The core instance of the instrumented module.
    instance: u32,
    /// The host function, its table's export name.
    hook: Option<(HostImport, &'a str)>,
    /// The profiler memory's export name and size.
    memory: Option<(&'a str, i32)>,
}

impl<'a> Glue<'a> {
    pub(super) fn new(instance: u32, inst: &'a Instrumented) -> Result<Glue<'a>, ModuleError> {
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
        Ok(Glue { instance, hook, memory })
    }

    /// Appends to `out` the component's imports of the host's functions, their types numbered
    /// from `first_type` and the functions from `first_func`.
    pub(super) fn imports(&self, out: &mut Component, first_type: u32, first_func: u32) -> HostFuncs {
        let mut types = ComponentTypeSection::new();
        let mut imports = ComponentImportSection::new();
        let mut funcs = HostFuncs { types: 0, hook: None, attach: None };
        let mut next_func = first_func;
        if let Some((import, _)) = self.hook {
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
            imports.import(import.component_name(), ComponentTypeRef::Func(first_type + types.len() - 1));
            funcs.hook = Some((import.component_name(), next_func));
            next_func += 1;
        }
        if self.memory.is_some() {
            types.defined_type().list(PrimitiveValType::U8);
            let list = first_type + types.len() - 1;
            types.function().params([("memory", ComponentValType::Type(list))]).result(None);
            imports.import(ATTACH_IMPORT, ComponentTypeRef::Func(list + 1));
            funcs.attach = Some((ATTACH_IMPORT, next_func));
        }
        funcs.types = types.len();
        if funcs.types > 0 {
            out.section(&types);
            out.section(&imports);
        }
        funcs
    }

    /// Appends the glue's core items to `out`, which holds the component's original sections
    /// (sized by `counts`) and its imports of the host's functions `funcs`.
    pub(super) fn append(&self, out: &mut Component, counts: Counts, funcs: &HostFuncs) {
        let c = counts;
        let mut aliases = ComponentAliasSection::new();
        let mut canon = CanonicalFunctionSection::new();
        // Core items the glue module's instantiation takes: (name, kind, index).
        let mut args: Vec<(&str, ExportKind, u32)> = Vec::new();
        let mut next_core_func = c.core_funcs;
        if let (Some((_, table)), Some((_, hook))) = (self.hook, funcs.hook) {
            aliases.alias(Alias::CoreInstanceExport { instance: self.instance, kind: ExportKind::Table, name: table });
            canon.lower(hook, []);
            args.push(("hooks", ExportKind::Table, c.core_tables));
            args.push(("hook", ExportKind::Func, next_core_func));
            next_core_func += 1;
        }
        if let (Some((memory, _)), Some((_, attach))) = (self.memory, funcs.attach) {
            aliases.alias(Alias::CoreInstanceExport {
                instance: self.instance,
                kind: ExportKind::Memory,
                name: memory,
            });
            canon.lower(attach, [CanonicalOption::Memory(c.core_memories)]);
            args.push(("attach", ExportKind::Func, next_core_func));
        }
        if args.is_empty() {
            return;
        }
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

/// A component's imports of the host's functions: how many types they added, and each one's name
/// and component function index.
pub(super) struct HostFuncs {
    pub types: u32,
    pub hook: Option<(&'static str, u32)>,
    pub attach: Option<(&'static str, u32)>,
}

impl HostFuncs {
    /// How many functions the component imports.
    pub fn count(&self) -> u32 {
        self.hook.iter().chain(&self.attach).count() as u32
    }

    /// The imports, as a nested component's instantiation passes them on: (name, function).
    pub fn args(&self) -> impl Iterator<Item = (&'static str, u32)> + '_ {
        self.hook.iter().chain(&self.attach).copied()
    }
}
