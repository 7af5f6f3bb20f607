//! Hot paths (and, for a `kbl` profile, the forests' shape and hottest sequences) as JSON, with every
//! block's byte range and source line (docs/profile-format.md).

use crate::view::{
    fraction, hottest, hottest_sequences, kipf_k, path_cost, path_ops, program_stats, shown_functions, total_cost, Rank,
};
use anyhow::Result;
use pathprof_core::profile::{Endpoint, FunctionProfile, KipfStats, Profile, U64};
use serde::Serialize;
use std::io::Write;

#[derive(Serialize)]
struct JsonBlock<'a> {
    id: u32,
    offset: u64,
    end: u64,
    line: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonPath<'a> {
    function: u32,
    name: Option<&'a str>,
    id: U64,
    count: U64,
    share: f64,
    /// Operators on one run of the path, and executed by all its runs, with their share of all
    /// operators executed.
    ops: u64,
    operators: Wide,
    operators_share: f64,
    start: Endpoint,
    end: Endpoint,
    blocks: Vec<JsonBlock<'a>>,
}

/// A sum that may exceed 64 bits: a JSON number up to 2^53, a decimal string beyond (as [`U64`]).
struct Wide(u128);

impl Serialize for Wide {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match u64::try_from(self.0) {
            Ok(v) => U64(v).serialize(s),
            Err(_) => s.serialize_str(&self.0.to_string()),
        }
    }
}

/// Prints the hot paths by `rank` as JSON, with every block's byte range and source line.
pub fn write(out: &mut impl Write, p: &Profile, top: usize, function: Option<&str>, rank: Rank) -> Result<()> {
    let total = p.path_executions.0.max(1) as f64;
    let operators = total_cost(p);
    let paths: Vec<JsonPath> = hottest(p, top, function, rank)
        .into_iter()
        .map(|(f, path)| JsonPath {
            function: f.index,
            name: f.name.as_deref(),
            id: path.id,
            count: path.count,
            share: path.count.0 as f64 / total,
            ops: path_ops(f, path),
            operators: Wide(path_cost(f, path)),
            operators_share: fraction(path_cost(f, path), operators),
            start: path.start,
            end: path.end,
            blocks: json_blocks(f, &path.blocks),
        })
        .collect();
    let mut doc = serde_json::json!({
        "module": p.module.path,
        "mode": p.mode.name(),
        "path_executions": p.path_executions,
        "operators_executed": Wide(operators),
        "ranked_by": match rank { Rank::Cost => "cost", Rank::Count => "count" },
        "paths": paths,
    });
    if let (Some(k), Some(fields)) = (kipf_k(p), doc.as_object_mut()) {
        let hot = hottest_sequences(p, top, function);
        let functions: Vec<serde_json::Value> = shown_functions(p, function, &hot)
            .into_iter()
            .filter_map(|f| {
                let stats = JsonStats::from(f.kipf()?.stats());
                Some(serde_json::json!({"function": f.index, "name": f.name, "stats": stats}))
            })
            .collect();
        let sequences: Vec<JsonSequence> = hot
            .iter()
            .map(|s| JsonSequence {
                function: s.function.index,
                name: s.function.name.as_deref(),
                count: U64(s.count),
                paths: s.paths.iter().map(|&id| json_sequence_path(s.function, id)).collect(),
            })
            .collect();
        fields.insert("k".into(), serde_json::json!(k));
        fields.insert("kbl".into(), serde_json::json!(p.mode.kbl()));
        fields.insert(
            "kipf_stats".into(),
            serde_json::json!({"program": JsonStats::from(program_stats(p)), "functions": functions}),
        );
        fields.insert("sequences".into(), serde_json::json!(sequences));
    }
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)?;
    Ok(())
}

/// The shape of a k-IPF in the JSON report.
#[derive(Serialize)]
struct JsonStats {
    roots: u64,
    nodes: u64,
    internal_nodes: u64,
    child_edges: u64,
    leaves: u64,
    leaf_depth_sum: u64,
    avg_degree: Option<f64>,
    avg_leaf_depth: Option<f64>,
}

impl From<KipfStats> for JsonStats {
    fn from(s: KipfStats) -> JsonStats {
        JsonStats {
            roots: s.roots(),
            nodes: s.nodes,
            internal_nodes: s.internal_nodes,
            child_edges: s.child_edges,
            leaves: s.leaves,
            leaf_depth_sum: s.leaf_depth_sum,
            avg_degree: s.avg_degree(),
            avg_leaf_depth: s.avg_leaf_depth(),
        }
    }
}

/// A hot sequence of paths in the JSON report.
#[derive(Serialize)]
struct JsonSequence<'a> {
    function: u32,
    name: Option<&'a str>,
    count: U64,
    paths: Vec<JsonSequencePath<'a>>,
}

/// One path of a hot sequence: its endpoints and blocks (null and empty for an ID the function's
/// path list lacks).
#[derive(Serialize)]
struct JsonSequencePath<'a> {
    id: U64,
    start: Option<Endpoint>,
    end: Option<Endpoint>,
    blocks: Vec<JsonBlock<'a>>,
}

fn json_sequence_path(f: &FunctionProfile, id: U64) -> JsonSequencePath<'_> {
    let path = f.paths().iter().find(|p| p.id == id);
    JsonSequencePath {
        id,
        start: path.map(|p| p.start),
        end: path.map(|p| p.end),
        blocks: path.map_or_else(Vec::new, |p| json_blocks(f, &p.blocks)),
    }
}

fn json_blocks<'a>(f: &'a FunctionProfile, blocks: &[u32]) -> Vec<JsonBlock<'a>> {
    blocks
        .iter()
        .filter_map(|&b| f.blocks.get(b as usize))
        .map(|b| JsonBlock { id: b.id, offset: b.offset, end: b.end, line: b.line.as_deref() })
        .collect()
}
