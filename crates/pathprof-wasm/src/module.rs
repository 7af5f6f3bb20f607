//! Reading a module: validation, the function index space, names, and the code section.

use std::collections::HashMap;
use std::ops::Range;
use wasmparser::{
    CompositeInnerType, ElementItems, Encoding, FuncToValidate, FuncType, FuncValidator, FunctionBody, KnownCustom,
    Name, Parser, Payload, TypeRef, ValidPayload, Validator, ValidatorResources, WasmFeatures,
};

/// Why a module cannot be profiled.
#[derive(Debug, thiserror::Error)]
pub enum ModuleError {
    #[error("not a WebAssembly module: {0}")]
    Malformed(String),
    #[error("invalid WebAssembly module: {0}")]
    Invalid(String),
    #[error("this is a WebAssembly component, not a core module")]
    Component,
}

/// What pathprof needs to know about a module.
#[derive(Debug)]
pub struct ModuleInfo {
    /// Function types by type index (`None` for non-function types).
    pub types: Vec<Option<FuncType>>,
    /// Type index of every function, imports first.
    pub func_types: Vec<u32>,
    /// By type index, for a function type that only functions of an equal type match — final,
    /// without a supertype, alone in its recursion group and naming no other type: the least type
    /// index of a type equal to it. A `call_indirect` or `call_ref` of such a type can only call
    /// functions whose type has the same class. `None` for every other type.
    pub type_classes: Vec<Option<u32>>,
    pub num_imported_funcs: u32,
    /// The module name of every imported function, in order.
    pub import_modules: Vec<String>,
    pub num_memories: u32,
    /// Tables, imported and defined.
    pub num_tables: u32,
    /// Exception tags, imported and defined.
    pub num_tags: u32,
    /// Names from the name section, by function index.
    pub names: HashMap<u32, String>,
    /// Byte range of the code section's contents (after its id and size), in the file.
    pub code_section: Option<Range<usize>>,
    /// Byte range of each defined function body, in order.
    pub bodies: Vec<Range<usize>>,
    pub export_names: Vec<String>,
    /// Functions that element segments and global initializers name (`ref.func`): those a table
    /// may hold, and `call_indirect` may call, besides the ones code takes a reference to.
    pub referenced_funcs: Vec<u32>,
}

/// Adds the functions that `ref.func` operators of `expr` name to `out`.
fn referenced_by(expr: &wasmparser::ConstExpr, out: &mut Vec<u32>) -> Result<(), wasmparser::BinaryReaderError> {
    let mut ops = expr.get_operators_reader();
    while !ops.eof() {
        if let wasmparser::Operator::RefFunc { function_index } = ops.read()? {
            out.push(function_index);
        }
    }
    Ok(())
}

/// Whether no parameter or result of `f` is a reference to a type of the module (two such types
/// may be equal without being written alike).
fn names_no_type(f: &FuncType) -> bool {
    f.params().iter().chain(f.results()).all(|t| match t {
        wasmparser::ValType::Ref(r) => !r.is_concrete_type_ref(),
        _ => true,
    })
}

/// Features accepted in input modules and required of instrumented ones.
pub fn features() -> WasmFeatures {
    WasmFeatures::all()
}

/// The function bodies of a module, each with what validating it takes.
pub type Bodies<'a> = Vec<(FuncToValidate<ValidatorResources>, FunctionBody<'a>)>;

/// Validates a module (or a component, with its modules) as `Validator::validate_all` does, with the function bodies validated on all
/// cores.
pub fn validate(bytes: &[u8]) -> Result<(), wasmparser::BinaryReaderError> {
    validate_bodies(&validate_sections(bytes)?)
}

/// Validates function bodies on all cores; the error is the first invalid body's in module order, as
/// a sequential validation reports it.
fn validate_bodies(bodies: &Bodies<'_>) -> Result<(), wasmparser::BinaryReaderError> {
    crate::parallel::parallel_map(bodies, |_, (func, body)| validator(func).validate(body)).into_iter().collect()
}

/// Validates everything in a module but its function bodies, which it returns.
pub fn validate_sections(bytes: &[u8]) -> Result<Bodies<'_>, wasmparser::BinaryReaderError> {
    let mut validator = Validator::new_with_features(features());
    let mut bodies = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        if let ValidPayload::Func(func, body) = validator.payload(&payload?)? {
            bodies.push((func, body));
        }
    }
    Ok(bodies)
}

/// A validator of the body that `func` describes.
pub fn validator(func: &FuncToValidate<ValidatorResources>) -> FuncValidator<ValidatorResources> {
    let func =
        FuncToValidate { resources: func.resources.clone(), index: func.index, ty: func.ty, features: func.features };
    func.into_validator(Default::default())
}

impl ModuleError {
    /// The error of a module that does not validate.
    pub fn from_validation(e: wasmparser::BinaryReaderError) -> ModuleError {
        let msg = e.to_string();
        if msg.contains("unexpected end") || msg.contains("malformed") || msg.contains("magic") {
            ModuleError::Malformed(msg)
        } else {
            ModuleError::Invalid(msg)
        }
    }
}

impl ModuleInfo {
    /// Validates `bytes` and reads the facts pathprof needs.
    pub fn read(bytes: &[u8]) -> Result<ModuleInfo, ModuleError> {
        let (info, bodies) = Self::read_sections(bytes)?;
        validate_bodies(&bodies).map_err(ModuleError::from_validation)?;
        Ok(info)
    }

    /// Validates `bytes` but the function bodies, which it returns to be validated, and reads the
    /// facts pathprof needs.
    pub fn read_sections(bytes: &[u8]) -> Result<(ModuleInfo, Bodies<'_>), ModuleError> {
        if bytes.len() < 8 || &bytes[0..4] != b"\0asm" {
            return Err(ModuleError::Malformed("missing the \\0asm magic number".into()));
        }
        // A component has a different layer number in its header.
        if bytes[6..8] != [0, 0] {
            return Err(ModuleError::Component);
        }
        let bodies = validate_sections(bytes).map_err(ModuleError::from_validation)?;
        let mut info = ModuleInfo {
            types: Vec::new(),
            func_types: Vec::new(),
            type_classes: Vec::new(),
            num_imported_funcs: 0,
            import_modules: Vec::new(),
            num_memories: 0,
            num_tables: 0,
            num_tags: 0,
            names: HashMap::new(),
            code_section: None,
            bodies: Vec::new(),
            export_names: Vec::new(),
            referenced_funcs: Vec::new(),
        };
        let err = |e: wasmparser::BinaryReaderError| ModuleError::Malformed(e.to_string());
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.map_err(err)? {
                Payload::Version { encoding: Encoding::Component, .. } => return Err(ModuleError::Component),
                Payload::TypeSection(r) => {
                    let mut classes: HashMap<FuncType, u32> = HashMap::new();
                    for group in r {
                        let group = group.map_err(err)?;
                        let alone = group.types().len() == 1;
                        for sub in group.into_types() {
                            let func = match sub.composite_type.inner {
                                CompositeInnerType::Func(f) => Some(f),
                                _ => None,
                            };
                            let exact = alone
                                && sub.is_final
                                && sub.supertype_idx.is_none()
                                && !sub.composite_type.shared
                                && sub.composite_type.descriptor_idx.is_none()
                                && sub.composite_type.describes_idx.is_none();
                            let index = info.types.len() as u32;
                            let class = func
                                .as_ref()
                                .filter(|f| exact && names_no_type(f))
                                .map(|f| *classes.entry(f.clone()).or_insert(index));
                            info.types.push(func);
                            info.type_classes.push(class);
                        }
                    }
                }
                Payload::ImportSection(r) => {
                    for imp in r.into_imports() {
                        let imp = imp.map_err(err)?;
                        match imp.ty {
                            TypeRef::Func(t) | TypeRef::FuncExact(t) => {
                                info.func_types.push(t);
                                info.num_imported_funcs += 1;
                                info.import_modules.push(imp.module.to_string());
                            }
                            TypeRef::Memory(_) => info.num_memories += 1,
                            TypeRef::Table(_) => info.num_tables += 1,
                            TypeRef::Tag(_) => info.num_tags += 1,
                            _ => {}
                        }
                    }
                }
                Payload::FunctionSection(r) => {
                    for t in r {
                        info.func_types.push(t.map_err(err)?);
                    }
                }
                Payload::MemorySection(r) => info.num_memories += r.count(),
                Payload::TableSection(r) => info.num_tables += r.count(),
                Payload::TagSection(r) => info.num_tags += r.count(),
                Payload::ExportSection(r) => {
                    for e in r {
                        info.export_names.push(e.map_err(err)?.name.to_string());
                    }
                }
                Payload::ElementSection(r) => {
                    for element in r {
                        match element.map_err(err)?.items {
                            ElementItems::Functions(f) => {
                                for i in f {
                                    info.referenced_funcs.push(i.map_err(err)?);
                                }
                            }
                            ElementItems::Expressions(_, exprs) => {
                                for expr in exprs {
                                    referenced_by(&expr.map_err(err)?, &mut info.referenced_funcs).map_err(err)?;
                                }
                            }
                        }
                    }
                }
                Payload::GlobalSection(r) => {
                    for g in r {
                        referenced_by(&g.map_err(err)?.init_expr, &mut info.referenced_funcs).map_err(err)?;
                    }
                }
                Payload::CodeSectionStart { range, .. } => info.code_section = Some(range),
                Payload::CodeSectionEntry(body) => info.bodies.push(body.range()),
                Payload::CustomSection(c) => {
                    if let KnownCustom::Name(reader) = c.as_known() {
                        // A malformed name section only loses names.
                        for sub in reader.flatten() {
                            if let Name::Function(map) = sub {
                                for naming in map.into_iter().flatten() {
                                    info.names.insert(naming.index, naming.name.to_string());
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        Ok((info, bodies))
    }

    /// The function type of function `index`.
    pub fn func_type(&self, index: u32) -> Option<&FuncType> {
        self.types.get(*self.func_types.get(index as usize)? as usize)?.as_ref()
    }

    /// Size in bytes of the code section's contents.
    pub fn code_size(&self) -> usize {
        self.code_section.as_ref().map_or(0, |r| r.len())
    }
}
