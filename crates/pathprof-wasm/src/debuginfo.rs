//! Source lines from DWARF.
//!
//! Compilers that target wasm (clang, rustc) emit DWARF in custom sections named `.debug_*`, with
//! addresses counted from the start of the code section's contents. [`LineTable`] answers
//! `file:line` for a byte offset of the module file. The instrumenter does not read it: a profile's
//! blocks get their lines when the profile is written, off the instrumentation's path.

use addr2line::Context;
use gimli::{EndianSlice, LittleEndian, SectionId};
use pathprof_core::profile::BlockInfo;
use std::collections::HashMap;
use wasmparser::{Parser, Payload};

/// Line information of a module, if it has any: the rows of its line programs that carry a line,
/// sorted by address.
pub struct LineTable {
    /// `(start, end, file, line)`, addresses relative to the code section's contents.
    rows: Vec<(u64, u64, u32, u32)>,
    /// The furthest end of the rows up to each one (rows of different sequences may overlap).
    reach: Vec<u64>,
    files: Vec<String>,
    code_start: u64,
}

impl LineTable {
    /// Reads the DWARF sections of `bytes`; `None` when there are none or they cannot be read.
    pub fn read(bytes: &[u8]) -> Option<LineTable> {
        // The sections are read where they lie in `bytes`.
        let mut sections: HashMap<&str, &[u8]> = HashMap::new();
        let mut code_start = None;
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.ok()? {
                Payload::CustomSection(c) if c.name().starts_with(".debug_") => {
                    sections.insert(c.name(), c.data());
                }
                Payload::CodeSectionStart { range, .. } => code_start = Some(range.start as u64),
                _ => {}
            }
        }
        if !sections.contains_key(".debug_info") {
            return None;
        }
        let load = |id: SectionId| -> Result<EndianSlice<'_, LittleEndian>, gimli::Error> {
            Ok(EndianSlice::new(sections.get(id.name()).copied().unwrap_or_default(), LittleEndian))
        };
        let dwarf = gimli::Dwarf::load(load).ok()?;
        let ctx = Context::from_dwarf(dwarf).ok()?;
        let mut files: Vec<String> = Vec::new();
        let mut file_ids: HashMap<String, u32> = HashMap::new();
        // Consecutive rows mostly share their file: the last one is looked up without hashing.
        let mut last: Option<(&str, u32)> = None;
        let mut rows = Vec::new();
        // Rows with line 0 (compiler-generated code) carry no source position; they are left out.
        for (addr, len, loc) in ctx.find_location_range(0, u64::MAX).ok()? {
            let (Some(file), Some(line)) = (loc.file, loc.line) else { continue };
            if line == 0 {
                continue;
            }
            let file = short_name(file);
            let id = match last {
                Some((name, id)) if name == file => id,
                _ => match file_ids.get(file) {
                    Some(&id) => id,
                    None => {
                        files.push(file.to_string());
                        file_ids.insert(file.to_string(), files.len() as u32 - 1);
                        files.len() as u32 - 1
                    }
                },
            };
            last = Some((file, id));
            rows.push((addr, addr.saturating_add(len.max(1)), id, line));
        }
        rows.sort_unstable_by_key(|r| (r.0, r.1));
        let reach = rows
            .iter()
            .scan(0, |furthest, r| {
                *furthest = r.1.max(*furthest);
                Some(*furthest)
            })
            .collect();
        Some(LineTable { rows, reach, files, code_start: code_start? })
    }

    /// Sets the line of every block of `blocks` (the line of its first instruction that has one).
    pub fn attach<'a>(&self, blocks: impl IntoIterator<Item = &'a mut BlockInfo>) {
        for block in blocks {
            block.line = self.first_line(block.offset, block.end);
        }
    }

    /// `file:line` of the instruction at file offset `offset`.
    pub fn line(&self, offset: u64) -> Option<String> {
        self.first_line(offset, offset + 1)
    }

    /// The line of the first instruction in `[start, end)` that has one.
    pub fn first_line(&self, start: u64, end: u64) -> Option<String> {
        let a = start.checked_sub(self.code_start)?;
        let b = end.checked_sub(self.code_start)?.max(a + 1);
        // The first row that ends after `a`, if it starts before `b`.
        let from = self.reach.partition_point(|&end| end <= a);
        let &(_, _, file, line) = self.rows[from..].iter().take_while(|r| r.0 < b).find(|r| r.1 > a)?;
        Some(format!("{}:{line}", self.files[file as usize]))
    }
}

/// A source path as DWARF names it, without what joining it to the compilation directory added.
///
/// A name that is a URL (`wasisdk://v25/src/memcmp.c`, as `-fdebug-prefix-map` writes them) is not
/// absolute to a path joiner, which puts the directory in front of it
/// (`wasisdk://v25/build/wasisdk://v25/src/memcmp.c`): the last URL in the name is the name. A
/// leading `./` goes too (`./x.c` → `x.c`).
fn short_name(file: &str) -> &str {
    let url = file
        .match_indices("://")
        .filter_map(|(at, _)| {
            let scheme =
                file[..at].rfind(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c))).map_or(0, |i| i + 1);
            let starts_letter = file[scheme..].starts_with(|c: char| c.is_ascii_alphabetic());
            (scheme < at && starts_letter && (scheme == 0 || file[..scheme].ends_with('/'))).then_some(scheme)
        })
        .last();
    let file = url.map_or(file, |at| &file[at..]);
    file.strip_prefix("./").unwrap_or(file)
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn names_joined_to_their_directory_are_taken_apart() {
        let cases = [
            ("./x.c", "x.c"),
            ("/home/u/x.c", "/home/u/x.c"),
            ("wasisdk://v25.0/build/wasisdk://v25.0/src/memcmp.c", "wasisdk://v25.0/src/memcmp.c"),
            ("wasisdk://v25.0/src/memcmp.c", "wasisdk://v25.0/src/memcmp.c"),
            ("/build/dir/rust-src://lib/core/src/x.rs", "rust-src://lib/core/src/x.rs"),
            ("/build/a://b.c", "a://b.c"),
            ("/build/x-1.2/y.c", "/build/x-1.2/y.c"),
            ("/weird/9p://x.c", "/weird/9p://x.c"),
        ];
        for (name, short) in cases {
            assert_eq!(short_name(name), short, "{name}");
        }
    }
}
