//! The sections of the instrumented module: the program's, re-encoded (wasm-encoder's `reencode`),
//! with the profiler's additions — its host import (which shifts the defined functions' indices;
//! inside a component, a function that calls the host through a table of its own takes its place),
//! the types of its import, wrapper blocks and functions, its memory and that memory's export, the
//! data of its memory, its own functions after the program's, and the instrumented bodies.

use super::sink::AppendedFunction;
use crate::abi::{HostCalls, HostImport, IMPORT_MODULE};
use crate::module::ModuleInfo;
use crate::sections::section_rank;
use std::convert::Infallible;
use wasm_encoder::reencode::{Error as ReencodeError, Reencode};
use wasm_encoder::{
    CodeSection, ConstExpr, DataSection, EntityType, ExportKind, ExportSection, Function, ImportSection, Instruction,
    MemorySection, MemoryType, Module, RefType, SectionId, TableSection, TableType, TypeSection, ValType,
};
use wasmparser::FunctionBody;

pub(crate) struct Rewriter<'a> {
    pub info: &'a ModuleInfo,
    pub shift: FunctionShift,
    /// The instrumented body of every defined function that has probes.
    pub bodies: Vec<Option<EmittedBody>>,
    /// The profiler's functions, appended after the program's.
    pub appended: Vec<AppendedFunction>,
    /// The resumed functions of whole-function copies, after the profiler's: the type of each pair
    /// (after the appended functions' types), and the plain and the instrumented function's bodies.
    pub resumed: Vec<(Signature, [EmittedBody; 2])>,
    pub next_body: usize,
    /// The profiler's host function and the index of its type.
    pub import: Option<(HostImport, u32)>,
    /// How the module calls it; with [`HostCalls::Table`], the export name of the table.
    pub host_calls: HostCalls,
    pub hooks_export: Option<String>,
    /// Result types of the bodies' wrapper blocks, each a new type after the import's.
    pub new_types: Vec<Vec<ValType>>,
    pub memory_pages: u64,
    pub memory_export: Option<String>,
    /// Data segments of the profiler's memory: `(offset, bytes)`.
    pub profiler_data: Vec<(u32, Vec<u8>)>,
    pub emitted: Vec<SectionId>,
    /// What was wrong with the module but did not keep it from being instrumented.
    pub warnings: Vec<String>,
}

type Res = Result<(), ReencodeError<Infallible>>;

/// A body emitted anew, or the error of re-encoding it.
pub(crate) type EmittedBody = Result<Vec<u8>, ReencodeError<Infallible>>;

/// A function type the profiler adds.
pub(crate) struct Signature {
    pub params: Vec<ValType>,
    pub results: Vec<ValType>,
}

impl Rewriter<'_> {
    fn needs_memory(&self) -> bool {
        self.memory_export.is_some()
    }

    fn profiler_memory(&self) -> u32 {
        self.info.num_memories
    }

    fn import_section(&self, imports: &mut ImportSection) {
        if let (Some((import, ty)), HostCalls::Import) = (self.import, self.host_calls) {
            imports.import(IMPORT_MODULE, import.name(), EntityType::Function(ty));
        }
    }

    /// With [`HostCalls::Table`], the type of the function that calls the host through the table,
    /// which takes the import's place as the first defined function.
    fn hook_function(&self) -> Option<(HostImport, u32)> {
        self.import.filter(|_| self.host_calls == HostCalls::Table)
    }

    /// The hook function's body: its parameters passed on to slot 0 of the hooks table.
    fn hook_body(&self, (import, ty): (HostImport, u32)) -> Function {
        let mut f = Function::new([]);
        if import.takes_path() {
            f.instruction(&Instruction::LocalGet(0)).instruction(&Instruction::LocalGet(1));
        }
        f.instruction(&Instruction::I32Const(0))
            .instruction(&Instruction::CallIndirect { type_index: ty, table_index: self.info.num_tables })
            .instruction(&Instruction::End);
        f
    }

    fn table_section(&self, tables: &mut TableSection) {
        if self.hook_function().is_some() {
            tables.table(TableType {
                element_type: RefType::FUNCREF,
                minimum: 1,
                maximum: Some(1),
                table64: false,
                shared: false,
            });
        }
    }

    fn memory_section(&self, memories: &mut MemorySection) {
        if self.needs_memory() {
            memories.memory(MemoryType {
                minimum: self.memory_pages,
                // The memory never grows, so its base never moves: code may keep it in a register,
                // and the host's timer thread may write the sampling flag through a fixed address.
                maximum: Some(self.memory_pages),
                memory64: false,
                shared: false,
                page_size_log2: None,
            });
        }
    }

    fn export_section(&self, exports: &mut ExportSection) {
        if let Some(name) = &self.memory_export {
            exports.export(name, ExportKind::Memory, self.profiler_memory());
        }
        if let Some(name) = &self.hooks_export {
            exports.export(name, ExportKind::Table, self.info.num_tables);
        }
    }

    fn data_section(&self, data: &mut DataSection) {
        for (offset, bytes) in &self.profiler_data {
            data.active(self.profiler_memory(), &ConstExpr::i32_const(*offset as i32), bytes.iter().copied());
        }
    }

    /// The profiler's types, after the program's: its import's, the wrappers', its own functions'
    /// and the resumed functions'.
    fn type_section(&self, types: &mut TypeSection) {
        if let Some((import, _)) = self.import {
            if import.takes_path() {
                types.ty().function([ValType::I32, ValType::I64], []);
            } else {
                types.ty().function([], []);
            }
        }
        for results in &self.new_types {
            types.ty().function([], results.iter().copied());
        }
        for f in &self.appended {
            types.ty().function(f.params.iter().copied(), []);
        }
        for (sig, _) in &self.resumed {
            types.ty().function(sig.params.iter().copied(), sig.results.iter().copied());
        }
    }

    fn wants(&self, id: SectionId) -> bool {
        match id {
            SectionId::Type => {
                self.import.is_some()
                    || !self.new_types.is_empty()
                    || !self.appended.is_empty()
                    || !self.resumed.is_empty()
            }
            SectionId::Import => self.import.is_some() && self.host_calls == HostCalls::Import,
            SectionId::Table => self.hook_function().is_some(),
            SectionId::Memory => self.needs_memory(),
            SectionId::Export => self.needs_memory() || self.hooks_export.is_some(),
            SectionId::Data => !self.profiler_data.is_empty(),
            _ => false,
        }
    }
}

/// Re-encodes instructions of the original module for the instrumented one, where the profiler's
/// import (when there is one) comes after the program's imports and shifts the defined functions.
#[derive(Clone, Copy)]
pub(crate) struct FunctionShift {
    /// Index of the first defined function, when the profiler adds an import.
    pub first_shifted: Option<u32>,
}

impl FunctionShift {
    /// The index of function `func` in the instrumented module, when the profiler adds an import
    /// (`None` when it does not: no index changes).
    pub fn moved(&self, func: u32) -> Option<u32> {
        let first = self.first_shifted?;
        Some(if func >= first { func + 1 } else { func })
    }
}

impl Reencode for FunctionShift {
    type Error = Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, ReencodeError<Infallible>> {
        Ok(self.moved(func).unwrap_or(func))
    }
}

impl Reencode for Rewriter<'_> {
    type Error = Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, ReencodeError<Infallible>> {
        self.shift.function_index(func)
    }

    fn parse_type_section(&mut self, types: &mut TypeSection, section: wasmparser::TypeSectionReader<'_>) -> Res {
        wasm_encoder::reencode::utils::parse_type_section(self, types, section)?;
        self.type_section(types);
        self.emitted.push(SectionId::Type);
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        functions: &mut wasm_encoder::FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> Res {
        if let Some((_, ty)) = self.hook_function() {
            functions.function(ty);
        }
        wasm_encoder::reencode::utils::parse_function_section(self, functions, section)?;
        for f in &self.appended {
            functions.function(f.ty);
        }
        let first = self.info.types.len() as u32
            + u32::from(self.import.is_some())
            + (self.new_types.len() + self.appended.len()) as u32;
        for k in 0..self.resumed.len() as u32 {
            functions.function(first + k);
            functions.function(first + k);
        }
        Ok(())
    }

    fn parse_code_section(&mut self, code: &mut CodeSection, section: wasmparser::CodeSectionReader<'_>) -> Res {
        if let Some(hook) = self.hook_function() {
            code.function(&self.hook_body(hook));
        }
        wasm_encoder::reencode::utils::parse_code_section(self, code, section)?;
        for f in &self.appended {
            code.function(&f.body);
        }
        for body in self.resumed.iter_mut().flat_map(|(_, pair)| pair) {
            code.raw(&std::mem::replace(body, Ok(Vec::new()))?);
        }
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut ImportSection,
        section: wasmparser::ImportSectionReader<'_>,
    ) -> Res {
        wasm_encoder::reencode::utils::parse_import_section(self, imports, section)?;
        self.import_section(imports);
        self.emitted.push(SectionId::Import);
        Ok(())
    }

    fn parse_table_section(&mut self, tables: &mut TableSection, section: wasmparser::TableSectionReader<'_>) -> Res {
        wasm_encoder::reencode::utils::parse_table_section(self, tables, section)?;
        self.table_section(tables);
        self.emitted.push(SectionId::Table);
        Ok(())
    }

    fn parse_memory_section(
        &mut self,
        memories: &mut MemorySection,
        section: wasmparser::MemorySectionReader<'_>,
    ) -> Res {
        wasm_encoder::reencode::utils::parse_memory_section(self, memories, section)?;
        self.memory_section(memories);
        self.emitted.push(SectionId::Memory);
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        exports: &mut ExportSection,
        section: wasmparser::ExportSectionReader<'_>,
    ) -> Res {
        wasm_encoder::reencode::utils::parse_export_section(self, exports, section)?;
        self.export_section(exports);
        self.emitted.push(SectionId::Export);
        Ok(())
    }

    fn data_count(&mut self, count: u32) -> Result<u32, ReencodeError<Infallible>> {
        Ok(count + self.profiler_data.len() as u32)
    }

    fn parse_data_section(&mut self, data: &mut DataSection, section: wasmparser::DataSectionReader<'_>) -> Res {
        wasm_encoder::reencode::utils::parse_data_section(self, data, section)?;
        self.data_section(data);
        self.emitted.push(SectionId::Data);
        Ok(())
    }

    fn parse_function_body(&mut self, code: &mut CodeSection, func: FunctionBody<'_>) -> Res {
        let k = self.next_body;
        self.next_body += 1;
        match self.bodies[k].take() {
            Some(body) => {
                code.raw(&body?);
                Ok(())
            }
            None => wasm_encoder::reencode::utils::parse_function_body(self, code, func),
        }
    }

    fn parse_custom_section(&mut self, module: &mut Module, section: wasmparser::CustomSectionReader<'_>) -> Res {
        // Debug info describes the original code offsets; the profile maps offsets itself. Branch
        // hints name operators by their offsets in the original bodies, which the probes move.
        if section.name().starts_with(".debug_") || section.name() == crate::hints::BRANCH_HINT_SECTION {
            return Ok(());
        }
        // A malformed name section only loses names, as engines have it: its function indices cannot
        // be moved, so it is left out.
        if section.name() == "name" {
            let mut names = Module::new();
            if wasm_encoder::reencode::utils::parse_custom_section(self, &mut names, section.clone()).is_err() {
                self.warnings.push("the module's name section is malformed: it is left out".to_string());
                return Ok(());
            }
        }
        wasm_encoder::reencode::utils::parse_custom_section(self, module, section)
    }

    fn intersperse_section_hook(
        &mut self,
        module: &mut Module,
        after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> Res {
        let lo = after.map_or(0, section_rank);
        let hi = before.map_or(u32::MAX, section_rank);
        let added = [
            SectionId::Type,
            SectionId::Import,
            SectionId::Table,
            SectionId::Memory,
            SectionId::Export,
            SectionId::Data,
        ];
        for id in added {
            if self.wants(id) && !self.emitted.contains(&id) && lo < section_rank(id) && section_rank(id) < hi {
                match id {
                    SectionId::Type => {
                        let mut s = TypeSection::new();
                        self.type_section(&mut s);
                        module.section(&s);
                    }
                    SectionId::Import => {
                        let mut s = ImportSection::new();
                        self.import_section(&mut s);
                        module.section(&s);
                    }
                    SectionId::Table => {
                        let mut s = TableSection::new();
                        self.table_section(&mut s);
                        module.section(&s);
                    }
                    SectionId::Memory => {
                        let mut s = MemorySection::new();
                        self.memory_section(&mut s);
                        module.section(&s);
                    }
                    SectionId::Export => {
                        let mut s = ExportSection::new();
                        self.export_section(&mut s);
                        module.section(&s);
                    }
                    _ => {
                        let mut s = DataSection::new();
                        self.data_section(&mut s);
                        module.section(&s);
                    }
                }
                self.emitted.push(id);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::hints::BRANCH_HINT_SECTION;
    use wasmparser::{Parser, Payload};

    fn has_section(bytes: &[u8], name: &str) -> bool {
        Parser::new(0).parse_all(bytes).any(|p| matches!(p, Ok(Payload::CustomSection(c)) if c.name() == name))
    }

    /// The input's branch hints would point into the instrumented bodies at the wrong operators;
    /// other custom sections pass through.
    #[test]
    fn drops_the_input_branch_hints() {
        let wasm = wat::parse_str(
            r#"(module (@custom "kept" "")
                 (func (param i32)
                   local.get 0
                   (@metadata.code.branch_hint "\00") if nop end))"#,
        )
        .unwrap();
        assert!(has_section(&wasm, BRANCH_HINT_SECTION) && has_section(&wasm, "kept"));
        let out = crate::instrument::instrument(&wasm, &crate::instrument::InstrumentOptions::default()).unwrap();
        assert!(!has_section(&out.bytes, BRANCH_HINT_SECTION));
        assert!(has_section(&out.bytes, "kept"));
    }
}
