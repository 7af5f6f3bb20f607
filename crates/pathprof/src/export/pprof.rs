//! A profile as pprof's `profile.proto`, gzipped, as `go tool pprof` and other pprof readers take it.
//!
//! Every path that ran is one sample. Its locations are its blocks, the last block first (pprof's
//! leaf), each at the block's byte offset in the module and with the block's function and source
//! line; its values are its executions and the operators they executed (count × operators on the
//! path); its labels are the path ID (`path`, numeric) and its endpoints (`path_start`, `path_end`).
//! A function of the module appears once per source file its blocks' lines are in: pprof keys a
//! function by its name and file. The message types are those of
//! `github.com/google/pprof/proto/profile.proto`, with the fields pathprof writes.

use crate::view::{demangle, function_name, path_cost};
use anyhow::{bail, Result};
use flate2::write::GzEncoder;
use pathprof_core::profile::{FunctionProfile, PathCount, Profile};
use prost::Message;
use std::collections::HashMap;
use std::io::Write;

#[derive(Clone, PartialEq, Message)]
pub struct PprofProfile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

/// The string table: index 0 is the empty string, as pprof requires.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        Strings { table: vec![String::new()], index: HashMap::from([(String::new(), 0)]) }
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), self.table.len() as i64 - 1);
        self.table.len() as i64 - 1
    }
}

/// `v` as pprof's signed 64-bit value, or an error.
fn value(v: u128, what: &str) -> Result<i64> {
    i64::try_from(v).or_else(|_| bail!("{what} ({v}) exceed pprof's signed 64-bit values"))
}

/// The profile `p` (only `function`'s paths when given) as a `profile.proto` message.
pub fn message(p: &Profile, function: Option<&str>) -> Result<PprofProfile> {
    let mut strings = Strings::new();
    let mut out = PprofProfile {
        sample_type: vec![
            ValueType { r#type: strings.id("executions"), unit: strings.id("count") },
            ValueType { r#type: strings.id("operators"), unit: strings.id("count") },
        ],
        duration_nanos: (p.wall_seconds * 1e9) as i64,
        ..PprofProfile::default()
    };
    out.default_sample_type = out.sample_type[1].r#type;
    out.comment.push(strings.id(&format!("pathprof {} profile of {}", p.mode, p.module.path)));
    let has_lines = p.functions.iter().any(|f| f.blocks.iter().any(|b| b.line.is_some()));
    out.mapping.push(Mapping {
        id: 1,
        memory_start: 0,
        memory_limit: p.module.size,
        filename: strings.id(&p.module.path),
        build_id: strings.id(&p.module.sha256),
        has_functions: true,
        has_filenames: has_lines,
        has_line_numbers: has_lines,
    });
    let (path_key, start_key, end_key) = (strings.id("path"), strings.id("path_start"), strings.id("path_end"));
    let mut functions: HashMap<(u32, String), u64> = HashMap::new();
    let mut locations: HashMap<(u32, u32), u64> = HashMap::new();
    for f in p.functions.iter().filter(|f| function.is_none_or(|sel| crate::view::matches(f, sel))) {
        for path in f.paths().iter().filter(|path| path.count.0 > 0) {
            let ids = path
                .blocks
                .iter()
                .rev()
                .map(|&b| {
                    *locations
                        .entry((f.index, b))
                        .or_insert_with(|| location(&mut out, &mut strings, &mut functions, f, b))
                })
                .collect();
            let label = vec![
                Label { key: start_key, str: strings.id(&path.start.to_string()), num: 0 },
                Label { key: end_key, str: strings.id(&path.end.to_string()), num: 0 },
                path_label(&mut strings, path_key, path),
            ];
            out.sample.push(Sample {
                location_id: ids,
                value: vec![
                    value(u128::from(path.count.0), "path counts")?,
                    value(path_cost(f, path), "operators executed")?,
                ],
                label,
            });
        }
    }
    out.string_table = strings.table;
    Ok(out)
}

/// The label with the ID of `path`: a number, or a decimal string past pprof's signed numbers.
fn path_label(strings: &mut Strings, key: i64, path: &PathCount) -> Label {
    match i64::try_from(path.id.0) {
        Ok(num) => Label { key, str: 0, num },
        Err(_) => Label { key, str: strings.id(&path.id.to_string()), num: 0 },
    }
}

/// Adds the location of block `b` of `f` (and its function, when new); returns the location's ID.
fn location(
    out: &mut PprofProfile,
    strings: &mut Strings,
    functions: &mut HashMap<(u32, String), u64>,
    f: &FunctionProfile,
    b: u32,
) -> u64 {
    let info = f.blocks.get(b as usize);
    let (file, line) = match info.and_then(|i| i.line.as_deref()) {
        Some(l) => {
            let (file, n) = crate::source::split_line(l);
            (file.to_string(), n.and_then(|n| i64::try_from(n).ok()).unwrap_or(0))
        }
        None => (String::new(), 0),
    };
    let function_id = match functions.get(&(f.index, file.clone())) {
        Some(&id) => id,
        None => {
            let id = out.function.len() as u64 + 1;
            let system = f.name.clone().unwrap_or_else(|| function_name(f));
            out.function.push(Function {
                id,
                name: strings.id(&demangle(&system)),
                system_name: strings.id(&system),
                filename: strings.id(&file),
            });
            functions.insert((f.index, file), id);
            id
        }
    };
    let id = out.location.len() as u64 + 1;
    out.location.push(Location {
        id,
        mapping_id: 1,
        address: info.map_or(0, |i| i.offset),
        line: vec![Line { function_id, line }],
    });
    id
}

/// The profile `p` (only `function`'s paths when given) as a gzipped `profile.proto`.
pub fn write(p: &Profile, function: Option<&str>) -> Result<Vec<u8>> {
    let message = message(p, function)?;
    if message.sample.is_empty() {
        bail!("nothing to export: no path ran");
    }
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&message.encode_to_vec())?;
    Ok(gz.finish()?)
}
