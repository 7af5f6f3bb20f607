//! The top-level sections of a module or a component, as bytes: where each lies, for the rewrites
//! that keep every other byte as it was (branch hints, a component's core module replaced).

use crate::module::ModuleError;
use std::ops::Range;
use wasmparser::BinaryReader;

/// Id of a custom section.
pub(crate) const CUSTOM_SECTION: u8 = 0;

/// A section of a module or component: its id, its whole bytes (id and size too), and the name
/// of a custom section.
pub(crate) struct TopSection {
    pub id: u8,
    pub range: Range<usize>,
    pub contents: Range<usize>,
    pub name: Option<String>,
}

/// The top-level sections of a module or component, after its 8-byte header.
pub(crate) fn sections(bytes: &[u8]) -> Result<Vec<TopSection>, ModuleError> {
    let err = |e: wasmparser::BinaryReaderError| ModuleError::Malformed(e.to_string());
    if bytes.len() < 8 {
        return Err(ModuleError::Malformed("missing the \\0asm header".into()));
    }
    let mut reader = BinaryReader::new(&bytes[8..], 8);
    let mut out = Vec::new();
    while !reader.eof() {
        let start = reader.original_position();
        let id = reader.read_u8().map_err(err)?;
        let size = reader.read_var_u32().map_err(err)? as usize;
        let contents_start = reader.original_position();
        let end = contents_start.checked_add(size).filter(|&e| e <= bytes.len());
        let end = end.ok_or_else(|| ModuleError::Malformed("a section runs past the end".into()))?;
        let name = (id == CUSTOM_SECTION)
            .then(|| {
                BinaryReader::new(&bytes[contents_start..end], contents_start).read_string().ok().map(str::to_string)
            })
            .flatten();
        reader.read_bytes(size).map_err(err)?;
        out.push(TopSection { id, range: start..end, contents: contents_start..end, name });
    }
    Ok(out)
}

/// Position of a section in the binary format's order.
pub(crate) fn section_rank(id: wasm_encoder::SectionId) -> u32 {
    use wasm_encoder::SectionId::*;
    match id {
        Custom => 0,
        Type => 1,
        Import => 2,
        Function => 3,
        Table => 4,
        Memory => 5,
        Tag => 6,
        Global => 7,
        Export => 8,
        Start => 9,
        Element => 10,
        DataCount => 11,
        Code => 12,
        Data => 13,
    }
}
