//! A function's record: its fields as written and as read.

use crate::profile::{
    BlockInfo, CounterKind, EdgeCount, Endpoint, EventCounts, FunctionProfile, FunctionState, KipfProfile, PathCount,
    PathProfile, PppFunction, U64,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashSet;

/// The fields of a function, as written: a skipped function has no paths, no counters and a
/// reason. Fields without a value (no name, no reason, empty lists, nothing executed) are left out,
/// so that a function that did not run takes a short line.
#[derive(Serialize)]
struct FunctionOut<'a> {
    index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    instrumented: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    skip_reason: Option<&'a str>,
    num_paths: U64,
    #[serde(skip_serializing_if = "Option::is_none")]
    counters: Option<CounterKind>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    cut_blocks: &'a [u32],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    blocks: &'a [BlockInfo],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    paths: &'a [PathCount],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    edges: &'a [EdgeCount],
    increments: u32,
    #[serde(skip_serializing_if = "is_zero")]
    increments_executed: U64,
    #[serde(skip_serializing_if = "Option::is_none")]
    kipf: Option<&'a KipfProfile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ppp: Option<&'a PppFunction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<&'a EventCounts>,
}

fn is_zero(n: &U64) -> bool {
    n.0 == 0
}

impl Serialize for FunctionProfile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.profiled();
        FunctionOut {
            index: self.index,
            name: self.name.as_deref(),
            instrumented: p.is_some(),
            skip_reason: self.skip_reason(),
            num_paths: U64(self.num_paths()),
            counters: p.map(|p| p.counters),
            cut_blocks: self.cut_blocks(),
            blocks: &self.blocks,
            paths: self.paths(),
            edges: self.edges(),
            increments: p.map_or(0, |p| p.increments),
            increments_executed: p.map_or(U64(0), |p| p.increments_executed),
            kipf: self.kipf(),
            ppp: self.ppp(),
            events: self.events(),
        }
        .serialize(s)
    }
}

/// The fields of a function, as read.
#[derive(Deserialize)]
struct FunctionIn {
    index: u32,
    name: Option<String>,
    instrumented: bool,
    skip_reason: Option<String>,
    #[serde(default)]
    num_paths: U64,
    counters: Option<CounterKind>,
    #[serde(default)]
    cut_blocks: Vec<u32>,
    #[serde(default)]
    blocks: Vec<BlockInfo>,
    #[serde(default)]
    paths: Vec<PathCount>,
    #[serde(default)]
    edges: Vec<EdgeCount>,
    #[serde(default)]
    increments: u32,
    #[serde(default)]
    increments_executed: U64,
    #[serde(default)]
    kipf: Option<KipfProfile>,
    #[serde(default)]
    ppp: Option<Box<PppFunction>>,
    #[serde(default)]
    events: Option<EventCounts>,
}

/// Whether what an instrumented function's record claims holds together: every path an ID below
/// `num_paths` given once, through blocks the function lists, every edge between them, and a forest
/// no deeper than its `k`.
fn check_paths(f: &FunctionIn) -> Result<(), String> {
    let blocks = f.blocks.len();
    let block = |e: Endpoint| match e {
        Endpoint::Block(b) => (b as usize) < blocks,
        Endpoint::Entry | Endpoint::Exit | Endpoint::Throw => true,
    };
    let mut ids = HashSet::new();
    for p in &f.paths {
        if p.id.0 >= f.num_paths.0 {
            return Err(format!("path {} is beyond its {} paths", p.id.0, f.num_paths.0));
        }
        if !ids.insert(p.id.0) {
            return Err(format!("path {} is given twice", p.id.0));
        }
        if p.blocks.iter().any(|&b| b as usize >= blocks) || !block(p.start) || !block(p.end) {
            return Err(format!("path {} goes through a block the function does not list", p.id.0));
        }
    }
    if let Some(e) = f.edges.iter().find(|e| e.from as usize >= blocks || !block(e.to)) {
        return Err(format!("edge {} → {} joins a block the function does not list", e.from, e.to));
    }
    if let Some(kipf) = &f.kipf {
        if kipf.k == 0 {
            return Err("its k-iteration path forest has k = 0".into());
        }
        let mut deepest = 0;
        let mut below_count = None;
        kipf.for_each_node(|sequence, n| {
            deepest = deepest.max(sequence.len());
            if n.max.is_some_and(|m| m.0 < n.count.0) {
                below_count = Some(sequence.iter().map(|s| s.0).collect::<Vec<_>>());
            }
        });
        if let Some(sequence) = below_count {
            return Err(format!("its k-iteration path forest bounds sequence {sequence:?} below its count"));
        }
        if deepest > kipf.k {
            return Err(format!("its k-iteration path forest is {deepest} paths deep, deeper than k = {}", kipf.k));
        }
    }
    Ok(())
}

impl<'de> Deserialize<'de> for FunctionProfile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let f = FunctionIn::deserialize(d)?;
        let state = if f.instrumented {
            let counters = f
                .counters
                .ok_or_else(|| D::Error::custom(format!("instrumented function {} has no `counters`", f.index)))?;
            check_paths(&f).map_err(|e| D::Error::custom(format!("function {}: {e}", f.index)))?;
            FunctionState::Instrumented(PathProfile {
                num_paths: f.num_paths,
                counters,
                cut_blocks: f.cut_blocks,
                paths: f.paths,
                edges: f.edges,
                increments: f.increments,
                increments_executed: f.increments_executed,
                kipf: f.kipf,
                ppp: f.ppp,
                events: f.events,
            })
        } else {
            if !f.paths.is_empty() || f.kipf.is_some() || f.ppp.is_some() || f.events.is_some() {
                return Err(D::Error::custom(format!("function {} is not instrumented but has paths", f.index)));
            }
            FunctionState::Skipped { reason: f.skip_reason.unwrap_or_else(|| "no reason given".to_string()) }
        };
        Ok(FunctionProfile { index: f.index, name: f.name, blocks: f.blocks, state })
    }
}
