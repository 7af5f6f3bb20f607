//! The profile map: everything needed to turn the counters of an instrumented module into a profile.
//!
//! `pathprof instrument` writes it beside the instrumented module (as JSON); `pathprof run` keeps it
//! in memory. Counters of a function with few paths are a dense array of little-endian `u64` in the
//! profiler's memory (exported as [`ProfileMap::memory_export`]), indexed by path ID; the others are
//! counted by the host through the import [`ProfileMap::count_import`], called with the function
//! index and the path ID.

use pathprof_core::dag::DagEdgeKind;
use pathprof_core::profile::{BlockInfo, EdgeCount, Endpoint, FunctionProfile, PathCount, U64};
use pathprof_core::regen::{self, PathPoint};
use pathprof_core::FunctionPlan;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Value of the map's `format` field.
pub const MAP_FORMAT: &str = "pathprof-map";
/// Version of the map format.
pub const MAP_VERSION: u32 = 1;

/// Where a function's path counters live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Counters {
    /// `num_paths` `u64` counters at byte `offset` of the profiler's memory.
    Array { offset: u32 },
    /// Counted by the host through the count import.
    Hash,
    /// Sampled (PEP): while the sampling flag is set, path ends call the sample import.
    Sampled,
    /// Streamed (k-BLPP): path ends append `function << 32 | path ID` to the stream buffer. With
    /// `singles`, an activation that ends only one path counts it in `num_paths` `u64` counters at that
    /// byte offset instead, and its entry marker is written only before its first streamed path.
    Stream { singles: Option<u32> },
}

/// Where a sampled module keeps its samples in the profiler's memory, when path ends do not call the
/// host. While the flag (an `i32`, the number of samples still to take) is non-zero, a path end
/// decrements `skip` if it is non-zero, and otherwise appends `function << 32 | path ID` at slot
/// `index` of `buffer`, increments `index` and decrements the flag, in that order. The host reads
/// and empties the buffer only while the flag is zero, and sets the flag last.
///
/// The module's stores must become visible to the host in that order. On x86-64, whose stores are
/// seen in program order, plain loads and stores do it; elsewhere the module orders them with an
/// atomic fence and an atomic store of the flag (`atomic`), which Cranelift compiles to code that
/// is slower even where it does not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleBufferLayout {
    /// Byte offset of the `i32` number of path ends to let go by before the next sample.
    pub skip: u32,
    /// Byte offset of the `i32` number of samples in the buffer.
    pub index: u32,
    /// Byte offset of the buffer of little-endian `u64` samples.
    pub buffer: u32,
    /// Size of the buffer, in samples: the host never asks for more at a time.
    pub slots: u32,
    /// The path ends order their stores with atomics (see above).
    pub atomic: bool,
    /// Byte offset of an `i32` that the host sets to a fresh random value before it sets the flag:
    /// loops that run a copy without probes while the flag is 0 use it to decide how many of their
    /// iterations came after the flag was set (see `instrument`, "Sampling in loops"). Absent from
    /// older maps, whose modules have no such loops.
    #[serde(default)]
    pub random: Option<u32>,
    /// Byte offset of an `i32` that the host sets to 0 before it sets the flag and increments at every
    /// tick that finds the flag still set (its samples not all taken), which those loops read when
    /// their copy ends.
    #[serde(default)]
    pub missed: Option<u32>,
}

/// Where the stream buffer of k-BLPP lives in the profiler's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamLayout {
    /// Byte offset of the `i32` number of items in the buffer.
    pub index: u32,
    /// Byte offset of the last item appended (`i64`).
    pub last: u32,
    /// Byte offset of the number of repetitions of the last item not yet appended (`i64`).
    pub run: u32,
    /// Byte offset of the buffer of little-endian `u64` items: `1 << 62 | function` enters an
    /// activation, `function << 32 | path ID` ends a path, `2 << 62 | function << 32 | path ID`
    /// ends a path at the function's exit, and with it the activation, and `3 << 62 | n` repeats the
    /// path item before it `n` more times (a path item equal to the last one is only counted in
    /// `run`, which is appended before the next different item). Functions whose activations end one
    /// path each (no loops, no cuts) count in arrays instead, without markers.
    pub buffer: u32,
    pub capacity: u32,
}

/// The probes of one function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probes {
    pub plan: FunctionPlan,
    pub counters: Counters,
    /// Width of the path register (32 or 64).
    pub register_bits: u32,
    /// Loop counters: paths counted in a local while their loop runs, mirrored in a slot of the
    /// profiler's memory and added to the array at exit and before every call reachable from their loop.
    pub loop_counters: Vec<LoopCounter>,
    /// Run counters: loop headers that count a run of equal paths in a local, mirrored in the
    /// profiler's memory and added to the array when another path ends there, at exit and before
    /// every call reachable from their loop.
    #[serde(default)]
    pub run_counters: Vec<RunCounter>,
    /// Sampled mode: loops that also run as a copy without probes (see `instrument`, "Sampling in
    /// loops").
    #[serde(default)]
    pub loop_bursts: Vec<LoopBursts>,
}

/// A loop's only path around, counted in a local; `slot` holds the count not yet in the array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopCounter {
    pub path: u64,
    /// Byte offset of a little-endian `u64` in the profiler's memory.
    pub slot: u32,
}

/// Sampled mode: a loop that also runs as a copy without probes. `slot` counts the ticks that came
/// while a copy ran, after the one that set the flag: each stands for a burst of samples of the
/// loop's `path` that the copy did not take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopBursts {
    pub path: u64,
    /// Byte offset of a little-endian `u64` in the profiler's memory.
    pub slot: u32,
}

/// A loop header's current run of one path: `slot` holds the length of the run not yet in the
/// array, `slot + 8` the path's ID (both little-endian `u64`s in the profiler's memory); a length of 0
/// means no run is pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCounter {
    /// Byte offset of the run's length; its path's ID follows.
    pub slot: u32,
}

/// One defined function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionMap {
    /// Index in the original module's function index space.
    pub index: u32,
    pub name: Option<String>,
    pub blocks: Vec<BlockInfo>,
    /// `None` when the function was left uninstrumented.
    pub probes: Option<Probes>,
    pub skip_reason: Option<String>,
}

/// The map of one instrumented module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileMap {
    pub format: String,
    pub version: u32,
    /// Export name of the profiler's memory (absent when no function uses array counters).
    pub memory_export: Option<String>,
    /// `(module, name)` of the count import (absent when no function uses hash counters), or of the
    /// sample import in sampled mode.
    pub count_import: Option<(String, String)>,
    /// Sampled mode: byte offset of the `i32` sampling flag in the profiler's memory (path ends call
    /// the sample import while the flag is non-zero). The memory never grows, so the flag's address
    /// is fixed for the life of the instance.
    #[serde(default)]
    pub sample_flag: Option<u32>,
    /// Sampled mode: where path ends write their samples instead of calling the sample import.
    #[serde(default)]
    pub sample_buffer: Option<SampleBufferLayout>,
    /// Stream mode: the stream buffer; the count import then drains it.
    #[serde(default)]
    pub stream: Option<StreamLayout>,
    pub functions: Vec<FunctionMap>,
}

/// Whether DAG edge `e` carries an increment of the path register: a non-zero increment on an edge
/// of the CFG (a path start sets the register at its header instead).
fn is_increment(plan: &FunctionPlan, e: u32) -> bool {
    !matches!(plan.dag.edges[e as usize].kind, DagEdgeKind::Start(_) | DagEdgeKind::Real(u32::MAX))
        && plan.placement.inc[e as usize] != 0
}

/// Path counts of one run, by original function index: `(path ID, count)` with `count > 0`.
pub type RawCounts = HashMap<u32, Vec<(u64, u64)>>;

impl ProfileMap {
    /// Reads the counters of every array-counted function from the profiler's memory.
    pub fn read_array_counters(&self, memory: &[u8], counts: &mut RawCounts) {
        for f in &self.functions {
            let Some(Probes { plan, counters, loop_counters, run_counters, .. }) = &f.probes else { continue };
            let (Counters::Array { offset } | Counters::Stream { singles: Some(offset) }) = counters else {
                continue;
            };
            let n = plan.num_paths() as usize;
            let base = *offset as usize;
            let mut values: Vec<u64> = memory[base..base + 8 * n]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
                .collect();
            // Iterations not yet added to the array when the program stopped (a trap): a loop
            // counter's slot holds its path's, a run counter's the run's length and then its path.
            let word = |at: u32| u64::from_le_bytes(memory[at as usize..at as usize + 8].try_into().expect("8 bytes"));
            let pending = loop_counters
                .iter()
                .map(|l| (l.path, word(l.slot)))
                .chain(run_counters.iter().map(|r| (word(r.slot + 8), word(r.slot))));
            for (path, n) in pending {
                if let Some(v) = usize::try_from(path).ok().and_then(|p| values.get_mut(p)) {
                    *v += n;
                }
            }
            let entry = counts.entry(f.index).or_default();
            entry.extend(values.into_iter().enumerate().filter(|&(_, c)| c > 0).map(|(id, c)| (id as u64, c)));
        }
    }

    /// Sampled mode: the bursts of samples that loop copies did not take (see
    /// [`Probes::loop_bursts`]), as `(function index, path ID, bursts)`.
    pub fn read_loop_bursts(&self, memory: &[u8]) -> Vec<(u32, u64, u64)> {
        let word = |at: u32| {
            memory.get(at as usize..at as usize + 8).map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        };
        self.functions
            .iter()
            .filter_map(|f| Some((f.index, f.probes.as_ref()?)))
            .flat_map(|(index, p)| p.loop_bursts.iter().map(move |l| (index, l.path, word(l.slot))))
            .filter(|&(_, _, bursts)| bursts > 0)
            .collect()
    }

    /// Builds the per-function profiles from raw counts.
    pub fn function_profiles(&self, counts: &RawCounts) -> Result<Vec<FunctionProfile>, regen::BadPathId> {
        let mut out = Vec::with_capacity(self.functions.len());
        for f in &self.functions {
            let mut paths = Vec::new();
            let mut edges: std::collections::BTreeMap<(u32, Endpoint), u64> = Default::default();
            let mut increments_executed = 0u64;
            if let (Some(p), Some(list)) = (&f.probes, counts.get(&f.index)) {
                let out = p.plan.dag.out_edges();
                // A path may be counted in several places (a streamed function's singles and stream).
                let mut merged: std::collections::BTreeMap<u64, u64> = Default::default();
                for &(id, count) in list {
                    let c = merged.entry(id).or_insert(0);
                    *c = c.saturating_add(count);
                }
                for (id, count) in merged {
                    if count == 0 {
                        continue;
                    }
                    let path = regen::regenerate(&p.plan.dag, &p.plan.numbering, id)?;
                    let point = |pp: PathPoint, boundary: Endpoint| match pp {
                        PathPoint::Boundary => boundary,
                        PathPoint::Block(b) => Endpoint::Block(b),
                    };
                    let end = point(path.end, Endpoint::Exit);
                    let on_path = path.edges.iter().filter(|&&e| is_increment(&p.plan, e)).count() as u64;
                    increments_executed = increments_executed.saturating_add(on_path.saturating_mul(count));
                    let branches = path.edges[1..]
                        .iter()
                        .filter(|&&e| out[p.plan.dag.edges[e as usize].from as usize].len() > 1)
                        .count() as u32;
                    let steps = path.blocks.windows(2).map(|w| (w[0], Endpoint::Block(w[1])));
                    for key in steps.chain(path.blocks.last().map(|&b| (b, end))) {
                        *edges.entry(key).or_insert(0) += count;
                    }
                    paths.push(PathCount {
                        id: U64(id),
                        count: U64(count),
                        start: point(path.start, Endpoint::Entry),
                        end,
                        blocks: path.blocks,
                        branches,
                    });
                }
            }
            paths.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
            out.push(FunctionProfile {
                index: f.index,
                name: f.name.clone(),
                instrumented: f.probes.is_some(),
                skip_reason: f.skip_reason.clone(),
                num_paths: U64(f.probes.as_ref().map_or(0, |p| p.plan.num_paths())),
                counters: f.probes.as_ref().map(|p| match p.counters {
                    Counters::Array { .. } => "array".to_string(),
                    Counters::Hash => "hash".to_string(),
                    Counters::Sampled => "sampled".to_string(),
                    Counters::Stream { .. } => "stream".to_string(),
                }),
                cut_blocks: f.probes.as_ref().map_or_else(Vec::new, |p| p.plan.overflow_cuts.clone()),
                blocks: f.blocks.clone(),
                paths,
                edges: edges.into_iter().map(|((from, to), c)| EdgeCount { from, to, count: U64(c) }).collect(),
                increments: f.probes.as_ref().map_or(0, |p| {
                    (0..p.plan.dag.edges.len() as u32).filter(|&e| is_increment(&p.plan, e)).count() as u32
                }),
                increments_executed: U64(increments_executed),
                kipf: None,
            });
        }
        Ok(out)
    }

    /// Parses a map written by [`ProfileMap::to_json`].
    pub fn from_json(text: &str) -> Result<ProfileMap, String> {
        let map: ProfileMap = serde_json::from_str(text).map_err(|e| format!("not a pathprof map: {e}"))?;
        if map.format != MAP_FORMAT || map.version != MAP_VERSION {
            return Err(format!("not a pathprof map of version {MAP_VERSION}"));
        }
        Ok(map)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("maps always serialize")
    }
}
