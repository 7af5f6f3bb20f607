//! Source lines from DWARF.
//!
//! Compilers that target wasm (clang, rustc) emit DWARF in custom sections named `.debug_*`, with
//! addresses counted from the start of the code section's contents. [`LineTable`] answers
//! `file:line` for a byte offset of the module file.

use addr2line::Context;
use gimli::{EndianRcSlice, LittleEndian, SectionId};
use std::collections::HashMap;
use std::rc::Rc;
use wasmparser::{Parser, Payload};

type Reader = EndianRcSlice<LittleEndian>;

/// Line information of a module, if it has any.
pub struct LineTable {
    ctx: Context<Reader>,
    code_start: u64,
}

impl LineTable {
    /// Reads the DWARF sections of `bytes`; `None` when there are none or they cannot be read.
    pub fn read(bytes: &[u8]) -> Option<LineTable> {
        let mut sections: HashMap<String, Vec<u8>> = HashMap::new();
        let mut code_start = None;
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.ok()? {
                Payload::CustomSection(c) if c.name().starts_with(".debug_") => {
                    sections.insert(c.name().to_string(), c.data().to_vec());
                }
                Payload::CodeSectionStart { range, .. } => code_start = Some(range.start as u64),
                _ => {}
            }
        }
        if !sections.contains_key(".debug_info") {
            return None;
        }
        let load = |id: SectionId| -> Result<Reader, gimli::Error> {
            let data = sections.get(id.name()).cloned().unwrap_or_default();
            Ok(EndianRcSlice::new(Rc::from(data.into_boxed_slice()), LittleEndian))
        };
        let dwarf = gimli::Dwarf::load(load).ok()?;
        let ctx = Context::from_dwarf(dwarf).ok()?;
        Some(LineTable { ctx, code_start: code_start? })
    }

    /// `file:line` of the instruction at file offset `offset`.
    pub fn line(&self, offset: u64) -> Option<String> {
        let addr = offset.checked_sub(self.code_start)?;
        let loc = self.ctx.find_location(addr).ok()??;
        match (loc.file, loc.line) {
            (Some(file), Some(line)) if line > 0 => Some(format!("{}:{line}", short_name(file))),
            _ => None,
        }
    }

    /// The line of the first instruction in `[start, end)` that has one.
    pub fn first_line(&self, start: u64, end: u64) -> Option<String> {
        let addr_start = start.checked_sub(self.code_start)?;
        let addr_end = end.checked_sub(self.code_start)?;
        if addr_end <= addr_start {
            return self.line(start);
        }
        // Rows with line 0 (compiler-generated code) carry no source position; skip them.
        self.ctx.find_location_range(addr_start, addr_end).ok()?.find_map(|(_, _, loc)| match (loc.file, loc.line) {
            (Some(file), Some(line)) if line > 0 => Some(format!("{}:{line}", short_name(file))),
            _ => None,
        })
    }
}

/// A source path without the build directory prefix that DWARF may carry (`./x.c` → `x.c`).
fn short_name(file: &str) -> &str {
    file.strip_prefix("./").unwrap_or(file)
}
