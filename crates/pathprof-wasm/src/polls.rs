//! Stop polls: a load at every function entry and loop header from a memory of its own, which the
//! host makes unreadable to stop the program there.
//!
//! Wasmtime's epoch interruption, which `pathprof run` otherwise uses to stop a program on a
//! signal or a time limit, puts a load, a compare and a branch at the same places, and holds the
//! epoch's address and deadline in registers across loops; the poll is one load of a constant
//! address whose result is dropped. Once the host has taken the poll page's permissions away, the
//! program traps at its next function entry or loop header, where an epoch check would have
//! stopped it, and the host reads that trap as the stop (`pathprof_runtime::stop`). The load is
//! atomic (`i32.atomic.load`: a plain `mov` on x86-64, a load-acquire on AArch64), because
//! Cranelift would replace a plain load in a loop without stores by the same load at the
//! function's entry.
//!
//! Where the polls load from: an instrumented module already holds a memory that never grows, the
//! profiler's (exported as [`MEMORY_EXPORT`]); it gets one more page, its last, and the polls load
//! from there, so that a loop keeps one base register for the probes and the poll instead of two.
//! A module without one gets a memory of one page that never grows, its last (no other memory's
//! index changes). Either way the memory is exported as [`POLL_EXPORT`], and the poll page is its
//! last [`POLL_BYTES`].
//!
//! A poll page cannot pause a program and let it go on, as a snapshot needs; runs that take
//! snapshots, and components, keep epoch interruption.

use crate::abi::MEMORY_EXPORT;
use crate::hints::BRANCH_HINT_SECTION;
use crate::module::ModuleError;
use crate::sections::section_rank;
use std::convert::Infallible;
use wasm_encoder::reencode::{utils, Error as ReencodeError, Reencode};
use wasm_encoder::{
    CodeSection, Encode, ExportKind, ExportSection, Instruction, MemArg, MemorySection, MemoryType, Module, SectionId,
};
use wasmparser::{Parser, Payload, TypeRef};

/// The export name of the poll memory.
pub const POLL_EXPORT: &str = "pathprof:poll";

/// Bytes of the poll memory: one WebAssembly page, a multiple of every host's page size.
pub const POLL_BYTES: usize = 1 << 16;

/// `bytes` (a core module) with a poll at every function entry and loop header, and the poll page.
/// The module's `metadata.code.branch_hint` section is left out: its offsets would point at the
/// wrong operators of the new bodies.
pub fn add_polls(bytes: &[u8]) -> Result<Vec<u8>, ModuleError> {
    let malformed = |e: wasmparser::BinaryReaderError| ModuleError::Malformed(e.to_string());
    let (mut memories, mut defined, mut profiler) = (0u32, Vec::new(), None);
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(malformed)? {
            Payload::Version { encoding: wasmparser::Encoding::Component, .. } => return Err(ModuleError::Component),
            Payload::ImportSection(s) => {
                for import in s.into_imports() {
                    memories += u32::from(matches!(import.map_err(malformed)?.ty, TypeRef::Memory(_)));
                }
            }
            Payload::MemorySection(s) => {
                for ty in s {
                    defined.push(ty.map_err(malformed)?);
                }
            }
            Payload::ExportSection(s) => {
                for export in s {
                    let export = export.map_err(malformed)?;
                    if export.kind == wasmparser::ExternalKind::Memory && export.name.starts_with(MEMORY_EXPORT) {
                        profiler = Some(export.index);
                    }
                }
            }
            _ => {}
        }
    }
    // The profiler's memory, if the module has one that can take the page: defined here, of
    // WebAssembly pages, unshared, and never growing.
    let grown = profiler.and_then(|index| {
        let ty = defined.get(index.checked_sub(memories)? as usize)?;
        let fixed = ty.maximum == Some(ty.initial) && !ty.shared && !ty.memory64 && ty.page_size_log2.is_none();
        (fixed && ty.initial < (1 << 16) - 1).then_some((index, ty.initial))
    });
    let place = match grown {
        Some((index, pages)) => Place { memory: index, offset: pages << 16, grow: true },
        None => Place { memory: memories + defined.len() as u32, offset: 0, grow: false },
    };
    let poll = poll_bytes(place);
    let mut polls = Polls { place, poll, imported: memories, memory_added: place.grow, export_added: false };
    let mut module = Module::new();
    polls
        .parse_core_module(&mut module, Parser::new(0), bytes)
        .map_err(|e: ReencodeError<Infallible>| ModuleError::Invalid(e.to_string()))?;
    Ok(module.finish())
}

/// Where the polls load from: `offset` in memory `memory`, which is either the profiler's memory
/// given one more page (`grow`) or a memory added for the polls.
#[derive(Clone, Copy)]
struct Place {
    memory: u32,
    offset: u64,
    grow: bool,
}

/// The poll's bytes, the same for every function: `i32.const 0; i32.atomic.load; drop`.
fn poll_bytes(Place { memory, offset, .. }: Place) -> Vec<u8> {
    let mut bytes = Vec::new();
    Instruction::I32Const(0).encode(&mut bytes);
    Instruction::I32AtomicLoad(MemArg { offset, align: 2, memory_index: memory }).encode(&mut bytes);
    Instruction::Drop.encode(&mut bytes);
    bytes
}

/// The part of a poll memory's bytes that the polls load from and the stopper closes: its last
/// [`POLL_BYTES`] (all of a memory of its own, the page added to the profiler's).
pub fn poll_page(memory: &mut [u8]) -> &mut [u8] {
    let start = memory.len().saturating_sub(POLL_BYTES);
    &mut memory[start..]
}

/// The reencoder that adds the polls.
struct Polls {
    place: Place,
    /// [`poll_bytes`] of `place`.
    poll: Vec<u8>,
    /// The module's imported memories.
    imported: u32,
    /// Whether the poll memory is in the memory section already (or needs no adding).
    memory_added: bool,
    export_added: bool,
}

type Res = Result<(), ReencodeError<Infallible>>;

impl Polls {
    fn memory(&mut self, memories: &mut MemorySection) {
        let pages = (POLL_BYTES >> 16) as u64;
        let ty =
            MemoryType { minimum: pages, maximum: Some(pages), memory64: false, shared: false, page_size_log2: None };
        memories.memory(ty);
        self.memory_added = true;
    }

    fn export(&mut self, exports: &mut ExportSection) {
        exports.export(POLL_EXPORT, ExportKind::Memory, self.place.memory);
        self.export_added = true;
    }
}

impl Reencode for Polls {
    type Error = Infallible;

    /// The body's bytes with a poll after its locals and after each `loop` (and its block type),
    /// copied in runs between them: no operator changes, so none is encoded again.
    fn parse_function_body(&mut self, code: &mut CodeSection, func: wasmparser::FunctionBody<'_>) -> Res {
        let (body, base) = (func.as_bytes(), func.range().start);
        let poll = &self.poll;
        let mut reader = func.get_operators_reader()?;
        let mut copied = reader.original_position() - base;
        let mut out = Vec::with_capacity(body.len() + 8 * poll.len());
        out.extend_from_slice(&body[..copied]);
        out.extend_from_slice(poll);
        while !reader.eof() {
            if let wasmparser::Operator::Loop { .. } = reader.read()? {
                let at = reader.original_position() - base;
                out.extend_from_slice(&body[copied..at]);
                out.extend_from_slice(poll);
                copied = at;
            }
        }
        out.extend_from_slice(&body[copied..]);
        code.raw(&out);
        Ok(())
    }

    fn parse_memory_section(
        &mut self,
        memories: &mut MemorySection,
        section: wasmparser::MemorySectionReader<'_>,
    ) -> Res {
        for (i, ty) in section.into_iter().enumerate() {
            let mut ty = self.memory_type(ty?)?;
            if self.place.grow && self.imported + i as u32 == self.place.memory {
                ty.minimum += 1;
                ty.maximum = Some(ty.minimum);
            }
            memories.memory(ty);
        }
        if !self.memory_added {
            self.memory(memories);
        }
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        exports: &mut ExportSection,
        section: wasmparser::ExportSectionReader<'_>,
    ) -> Res {
        utils::parse_export_section(self, exports, section)?;
        self.export(exports);
        Ok(())
    }

    fn parse_custom_section(&mut self, module: &mut Module, section: wasmparser::CustomSectionReader<'_>) -> Res {
        if section.name() == BRANCH_HINT_SECTION {
            return Ok(());
        }
        utils::parse_custom_section(self, module, section)
    }

    /// Adds the memory and export sections where the module has none.
    fn intersperse_section_hook(
        &mut self,
        module: &mut Module,
        after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> Res {
        let (lo, hi) = (after.map_or(0, section_rank), before.map_or(u32::MAX, section_rank));
        let fits = |id| lo < section_rank(id) && section_rank(id) < hi;
        if !self.memory_added && fits(SectionId::Memory) {
            let mut s = MemorySection::new();
            self.memory(&mut s);
            module.section(&s);
        }
        if !self.export_added && fits(SectionId::Export) {
            let mut s = ExportSection::new();
            self.export(&mut s);
            module.section(&s);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a module's polls load from: their number, the poll memory's index, the offsets they
    /// load from, and the poll memory's limits in pages (`None` if imported).
    #[derive(Debug, PartialEq)]
    struct Found {
        polls: usize,
        memory: Option<u32>,
        offsets: Vec<u64>,
        limits: Option<(u64, Option<u64>)>,
    }

    fn polls_in(bytes: &[u8]) -> Found {
        let (mut loads, mut export, mut types) = (Vec::new(), None, Vec::new());
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.unwrap() {
                Payload::ImportSection(s) => {
                    for import in s.into_imports() {
                        if let TypeRef::Memory(_) = import.unwrap().ty {
                            types.push(None);
                        }
                    }
                }
                Payload::MemorySection(s) => types.extend(s.into_iter().map(|t| Some(t.unwrap()))),
                Payload::CodeSectionEntry(body) => {
                    let mut ops = body.get_operators_reader().unwrap();
                    while !ops.eof() {
                        if let wasmparser::Operator::I32AtomicLoad { memarg } = ops.read().unwrap() {
                            loads.push(memarg);
                        }
                    }
                }
                Payload::ExportSection(s) => {
                    for e in s {
                        let e = e.unwrap();
                        if e.name == POLL_EXPORT {
                            export = Some(e.index);
                        }
                    }
                }
                _ => {}
            }
        }
        let loads: Vec<_> = loads.into_iter().filter(|m| Some(m.memory) == export).collect();
        let mut offsets: Vec<u64> = loads.iter().map(|m| m.offset).collect();
        offsets.dedup();
        let limits = export.and_then(|m| types[m as usize]).map(|t| (t.initial, t.maximum));
        Found { polls: loads.len(), memory: export, offsets, limits }
    }

    fn check(wat: &str, memory: u32, polls: usize) {
        check_place(wat, memory, polls, 0, 1);
    }

    /// `wat` with polls: valid, `polls` polls from `offset` in memory `memory` of `pages` pages
    /// (never growing).
    fn check_place(wat: &str, memory: u32, polls: usize, offset: u64, pages: u64) {
        let bytes = wat::parse_str(wat).unwrap();
        let out = add_polls(&bytes).unwrap();
        wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all()).validate_all(&out).unwrap();
        let found = Found { polls, memory: Some(memory), offsets: vec![offset], limits: Some((pages, Some(pages))) };
        assert_eq!(polls_in(&out), found, "{wat}");
    }

    /// One poll per function and per loop, in the poll memory, after the module's other memories
    /// (imported and defined), with or without memory and export sections in the input.
    #[test]
    fn polls_every_entry_and_loop_header() {
        check("(module (func))", 0, 1);
        check("(module (func (loop (loop (br 0))) (block (loop))) (func))", 0, 5);
        check(r#"(module (memory 1) (export "m" (memory 0)) (func (loop)))"#, 1, 2);
        check(r#"(module (import "a" "m" (memory 1)) (memory 1) (func (export "f") (loop)) (start 0))"#, 2, 2);
    }

    /// The profiler's memory (exported under its name, defined, never growing) takes the poll page
    /// as one more page at its end; a profiler memory that can grow, or is imported, does not.
    #[test]
    fn polls_from_the_profilers_memory() {
        let counters = MEMORY_EXPORT;
        check_place(
            &format!(r#"(module (memory 2 2) (export "{counters}" (memory 0)) (func (loop)))"#),
            0,
            2,
            2 << 16,
            3,
        );
        check_place(
            &format!(
                r#"(module (import "a" "m" (memory 1)) (memory 1) (memory 1 1) (export "{counters}_" (memory 2))
                   (func) (func (loop (loop))))"#
            ),
            2,
            4,
            1 << 16,
            2,
        );
        check(&format!(r#"(module (memory 2) (export "{counters}" (memory 0)) (func))"#), 1, 1);
        check(&format!(r#"(module (import "a" "m" (memory 1 1)) (export "{counters}" (memory 0)) (func))"#), 1, 1);
        check(&format!(r#"(module (memory 1 1 shared) (export "{counters}" (memory 0)) (func))"#), 1, 1);
    }

    #[test]
    fn drops_branch_hints_and_refuses_components() {
        let hinted =
            wat::parse_str(r#"(module (func (param i32) local.get 0 (@metadata.code.branch_hint "\00") if nop end))"#)
                .unwrap();
        let out = add_polls(&hinted).unwrap();
        let custom = Parser::new(0)
            .parse_all(&out)
            .any(|p| matches!(p, Ok(Payload::CustomSection(c)) if c.name() == BRANCH_HINT_SECTION));
        assert!(!custom);
        let component = wat::parse_str("(component)").unwrap();
        assert!(matches!(add_polls(&component), Err(ModuleError::Component)));
    }

    /// Each function's operators (printed), leaving out the polls from memory `polls`.
    fn operators(bytes: &[u8], polls: Option<u32>) -> Vec<Vec<String>> {
        let mut functions = Vec::new();
        for payload in Parser::new(0).parse_all(bytes) {
            if let Payload::CodeSectionEntry(body) = payload.unwrap() {
                let mut ops = Vec::new();
                let mut reader = body.get_operators_reader().unwrap();
                while !reader.eof() {
                    ops.push(reader.read().unwrap());
                }
                let mut kept = Vec::new();
                let mut i = 0;
                while i < ops.len() {
                    let poll = matches!(
                        ops[i..],
                        [wasmparser::Operator::I32Const { value: 0 }, wasmparser::Operator::I32AtomicLoad { memarg }, wasmparser::Operator::Drop, ..]
                            if Some(memarg.memory) == polls
                    );
                    if poll {
                        i += 3;
                    } else {
                        kept.push(format!("{:?}", ops[i]));
                        i += 1;
                    }
                }
                functions.push(kept);
            }
        }
        functions
    }

    fn loops_and_functions(bytes: &[u8]) -> usize {
        let mut n = 0;
        for payload in Parser::new(0).parse_all(bytes) {
            if let Payload::CodeSectionEntry(body) = payload.unwrap() {
                n += 1;
                let mut ops = body.get_operators_reader().unwrap();
                while !ops.eof() {
                    n += usize::from(matches!(ops.read().unwrap(), wasmparser::Operator::Loop { .. }));
                }
            }
        }
        n
    }

    /// Generated modules (wasm-smith: imported and defined memories or none, exports or none, a
    /// start function or none) stay valid, get one poll per function and loop, and compile.
    #[test]
    fn generated_modules_stay_valid() {
        let mut config = wasmtime::Config::new();
        config.wasm_multi_memory(true).wasm_threads(true).shared_memory(true).epoch_interruption(false);
        let engine = wasmtime::Engine::new(&config).unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let (mut checked, mut compiled) = (0, 0);
        for _ in 0..300 {
            let data: Vec<u8> = (0..2048)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let smith = wasm_smith::Config { max_memories: 2, ..wasm_smith::Config::default() };
            let Ok(module) = wasm_smith::Module::new(smith, &mut arbitrary::Unstructured::new(&data)) else { continue };
            let bytes = module.to_bytes();
            let out = add_polls(&bytes).unwrap();
            wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all()).validate_all(&out).unwrap();
            let found = polls_in(&out);
            assert!(found.memory.is_some());
            assert_eq!(found.polls, loops_and_functions(&bytes));
            assert_eq!(operators(&out, found.memory), operators(&bytes, None), "operators other than the polls");
            checked += 1;
            if wasmtime::Module::new(&engine, &bytes).is_ok() {
                wasmtime::Module::new(&engine, &out).unwrap();
                compiled += 1;
            }
        }
        assert!(checked >= 200 && compiled >= 100, "{checked} modules checked, {compiled} compiled");
    }
}
