//! The profile map: everything needed to turn what an instrumented module recorded into a profile.
//!
//! `pathprof instrument` writes it beside the instrumented module (as JSON); `pathprof run` keeps it
//! in memory. For every function it holds the plan (DAG, numbering, increments) that decodes path
//! IDs, and where the function's paths are recorded ([`Counters`]); for the module, how path ends
//! are recorded ([`SinkLayout`]) and the export name of the profiler's memory. The words themselves
//! are defined in [`abi`].

use crate::abi::{HostImport, SampleBufferLayout, StreamLayout};
use pathprof_core::dag::DagEdgeKind;
use pathprof_core::ppp::PppPlan;
use pathprof_core::profile::{
    BlockInfo, CounterKind, EdgeCount, EdgeKey, Endpoint, FunctionProfile, FunctionState, PathCount, PathProfile,
    PppFunction, U64,
};
use pathprof_core::regen;
use pathprof_core::FunctionPlan;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Value of the map's `format` field.
pub const MAP_FORMAT: &str = "pathprof-map";
/// Version of the map format.
pub const MAP_VERSION: u32 = 6;

/// Where a function's path counters live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Counters {
    /// `num_paths` `u64` counters at byte `offset` of the profiler's memory.
    Array { offset: u32 },
    /// An open-addressing hash table of `slots` slots at byte `offset` of the profiler's memory
    /// ([`TABLE_SLOT_BYTES`](crate::abi::TABLE_SLOT_BYTES) each: the path ID plus one, 0 when
    /// empty, and its count), the paths it could not hold counted by the host through the count
    /// import.
    Table { offset: u32, slots: u32 },
    /// Counted by the host through the count import.
    Hash,
    /// Sampled (PEP): while the sampling flag is set, path ends are sampled (see [`SinkLayout::Sample`]).
    Sampled,
    /// Streamed (k-BLPP): path ends append `function << 32 | path ID` to the stream buffer. With
    /// `singles`, an activation that ends only one path counts it in `num_paths` `u64` counters at that
    /// byte offset instead, and its entry marker is written only before its first streamed path.
    Stream { singles: Option<u32> },
    /// Preferential (PPP): `slots` slots of [`abi::PPP_SLOT_BYTES`](crate::abi::PPP_SLOT_BYTES) at
    /// byte `offset`, indexed by the path's preferential ID, each with the Ball–Larus ID of its
    /// interesting path and its count; the other paths are counted by the host.
    Ppp { offset: u32, slots: u32 },
    /// Event counters (modes `events:pd` and `events:dec`): a little-endian `u64` per event of
    /// `mask` (bit `j` for the map's event `j`), in the order of the events, at byte `offset`. With
    /// `decoded`, path ends add their paths' event vectors to them (`pd`); without, the function
    /// counts no paths at all (`dec`).
    Events { offset: u32, mask: u64, decoded: bool },
}

impl Counters {
    /// The kind of counters, as profiles name them.
    pub fn kind(self) -> CounterKind {
        match self {
            Counters::Array { .. } => CounterKind::Array,
            Counters::Table { .. } | Counters::Hash => CounterKind::Hash,
            Counters::Sampled => CounterKind::Sampled,
            Counters::Stream { .. } => CounterKind::Stream,
            Counters::Ppp { .. } => CounterKind::Ppp,
            Counters::Events { .. } => CounterKind::Events,
        }
    }

    /// Byte offset of the function's array of counters, when it has one (a streamed function's
    /// singles too).
    pub fn array(self) -> Option<u32> {
        match self {
            Counters::Array { offset } | Counters::Stream { singles: Some(offset) } => Some(offset),
            _ => None,
        }
    }
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
    /// Sampled mode: loops that also run as a copy without probes (see the instrumenter's sampling
    /// sink).
    #[serde(default)]
    pub loop_bursts: Vec<LoopBursts>,
    /// Preferential mode: the function's interesting paths and their numbering.
    #[serde(default)]
    pub ppp: Option<PppPlan>,
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
    #[serde(with = "compact_blocks")]
    pub blocks: Vec<BlockInfo>,
    pub state: ProbeState,
}

/// A function's blocks, each written `[offset, end, ops, flags]` (flags: 1 for a loop header, 2 for
/// a landing), its id its position — or whole when it has a line or events.
mod compact_blocks {
    use pathprof_core::profile::BlockInfo;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize)]
    #[serde(untagged)]
    enum Out<'a> {
        Short(u64, u64, u32, u8),
        Whole(&'a BlockInfo),
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum In {
        Short(u64, u64, u32, u8),
        Whole(BlockInfo),
    }

    pub fn serialize<S: Serializer>(blocks: &[BlockInfo], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(blocks.iter().enumerate().map(|(i, b)| {
            if b.line.is_none() && b.events.is_empty() && b.id as usize == i {
                Out::Short(b.offset, b.end, b.ops, u8::from(b.loop_header) | u8::from(b.landing) << 1)
            } else {
                Out::Whole(b)
            }
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<BlockInfo>, D::Error> {
        let raw = Vec::<In>::deserialize(d)?;
        Ok(raw
            .into_iter()
            .enumerate()
            .map(|(i, b)| match b {
                In::Short(offset, end, ops, flags) => BlockInfo {
                    id: i as u32,
                    offset,
                    end,
                    line: None,
                    loop_header: flags & 1 != 0,
                    landing: flags & 2 != 0,
                    ops,
                    events: Vec::new(),
                },
                In::Whole(b) => b,
            })
            .collect())
    }
}

/// Whether a function carries probes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "state")]
pub enum ProbeState {
    Instrumented(Box<Probes>),
    /// Left as it was, for this reason.
    Skipped {
        reason: String,
    },
}

impl FunctionMap {
    /// The function's probes, when it has some.
    pub fn probes(&self) -> Option<&Probes> {
        match &self.state {
            ProbeState::Instrumented(p) => Some(p),
            ProbeState::Skipped { .. } => None,
        }
    }
}

/// How the module records its path ends, and where the sink's words lie in the profiler's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum SinkLayout {
    /// Exact counts: arrays in the profiler's memory, and the host's hash table through
    /// [`HostImport::CountPath`] for the functions that do not fit (`hash`).
    Count { hash: bool },
    /// Sampled (PEP): path ends test the flag at [`SAMPLE_FLAG`](crate::abi::SAMPLE_FLAG); while it is set they write
    /// their samples to `buffer`, or call [`HostImport::SamplePath`] without one. With `wide`, the
    /// functions whose path IDs exceed 32 bits hand their samples to [`HostImport::SamplePath`]
    /// with a buffer too, after its skips and before decrementing the flag as a buffered sample does.
    Sample {
        buffer: Option<SampleBufferLayout>,
        #[serde(default)]
        wide: bool,
    },
    /// Streamed (k-BLPP): path ends append to the stream buffer, which [`HostImport::FlushStream`]
    /// drains.
    Stream(StreamLayout),
    /// Preferential (PPP): interesting paths in slots, the others (and the functions without slots)
    /// counted by the host through [`HostImport::CountPath`] (`hash`).
    Ppp { hash: bool },
}

impl SinkLayout {
    /// The host import that the module's path ends call, if any.
    pub fn import(&self) -> Option<HostImport> {
        match self {
            SinkLayout::Count { hash: true } | SinkLayout::Ppp { hash: true } => Some(HostImport::CountPath),
            SinkLayout::Count { hash: false }
            | SinkLayout::Ppp { hash: false }
            | SinkLayout::Sample { buffer: Some(_), wide: false } => None,
            SinkLayout::Sample { .. } => Some(HostImport::SamplePath),
            SinkLayout::Stream(_) => Some(HostImport::FlushStream),
        }
    }
}

/// The map of one instrumented module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileMap {
    pub format: String,
    pub version: u32,
    /// Export name of the profiler's memory (absent when the module needs none).
    pub memory_export: Option<String>,
    /// How path ends are recorded.
    pub sink: SinkLayout,
    /// Mode `events`: the events counted, in order; every block of the map has a vector of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
    pub functions: Vec<FunctionMap>,
}

/// Where one function's event counters lie in the profiler's memory ([`Counters::Events`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventCounters {
    pub function: u32,
    pub offset: u32,
    pub mask: u64,
}

impl EventCounters {
    /// The function's event totals in `memory`: an entry per event of the map (`width`).
    pub fn read(&self, memory: &[u8], width: usize) -> Vec<u64> {
        let mut out = vec![0u64; width];
        let mut at = self.offset as usize;
        for (j, v) in out.iter_mut().enumerate() {
            if self.mask >> j & 1 == 1 {
                *v = le_u64(memory, at);
                at += 8;
            }
        }
        out
    }
}

/// Where one function's array of counters lies in the profiler's memory: `len` little-endian `u64`
/// counters at byte `offset`, indexed by path ID, and the slots of its loop and run counters, which
/// hold the iterations not yet added to the array when the program stopped in the loop (a trap); or
/// `len` preferential slots ([`Counters::Ppp`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayCounters {
    pub function: u32,
    pub offset: u32,
    pub len: u64,
    pub loop_counters: Vec<LoopCounter>,
    pub run_counters: Vec<RunCounter>,
    /// The array holds preferential slots.
    pub slots: bool,
}

/// A function's hash table of paths in the profiler's memory ([`Counters::Table`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableCounters {
    pub function: u32,
    pub offset: u32,
    pub slots: u32,
}

impl TableCounters {
    /// Adds the paths the table holds in `memory` to `counts`.
    pub fn read(&self, memory: &[u8], counts: &mut RawCounts) {
        let bytes = crate::abi::TABLE_SLOT_BYTES as usize;
        let entry = counts.entry(self.function).or_default();
        for i in 0..self.slots as usize {
            let at = self.offset as usize + i * bytes;
            let key = le_u64(memory, at);
            if key != 0 {
                entry.push((key - 1, le_u64(memory, at + 8)));
            }
        }
    }
}

impl ArrayCounters {
    /// Bytes of the array.
    pub fn bytes(&self) -> u64 {
        self.len * if self.slots { u64::from(crate::abi::PPP_SLOT_BYTES) } else { 8 }
    }

    /// Adds the function's counts in `memory` to `counts`, pending loop and run counts included.
    pub fn read(&self, memory: &[u8], counts: &mut RawCounts) {
        let word = |at: usize| le_u64(memory, at);
        if self.slots {
            let entry = counts.entry(self.function).or_default();
            for i in 0..self.len as usize {
                let at = self.offset as usize + i * crate::abi::PPP_SLOT_BYTES as usize;
                let (id, count) = (word(at), word(at + crate::abi::PPP_SLOT_COUNT as usize));
                if count > 0 {
                    entry.push((id, count));
                }
            }
            return;
        }
        let base = self.offset as usize;
        let mut values: Vec<u64> = memory[base..base + 8 * self.len as usize]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
            .collect();
        // A loop counter's slot holds its path's pending count, a run counter's the run's length and
        // then its path.
        let word = |at: u32| le_u64(memory, at as usize);
        let pending = self
            .loop_counters
            .iter()
            .map(|l| (l.path, word(l.slot)))
            .chain(self.run_counters.iter().map(|r| (word(r.slot + 8), word(r.slot))));
        for (path, n) in pending {
            if let Some(v) = usize::try_from(path).ok().and_then(|p| values.get_mut(p)) {
                *v += n;
            }
        }
        let entry = counts.entry(self.function).or_default();
        entry.extend(values.into_iter().enumerate().filter(|&(_, c)| c > 0).map(|(id, c)| (id as u64, c)));
    }
}

/// A sampled loop's count of the bursts its copy did not take, in `memory` (0 when the memory
/// does not reach the slot).
pub fn read_bursts(memory: &[u8], bursts: &LoopBursts) -> u64 {
    let at = bursts.slot as usize;
    if memory.len() < at + 8 {
        return 0;
    }
    le_u64(memory, at)
}

/// The little-endian `u64` at byte `at` of `memory`.
fn le_u64(memory: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(memory[at..at + 8].try_into().expect("8 bytes"))
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
    /// The functions that carry probes, with their probes.
    pub fn probed(&self) -> impl Iterator<Item = (&FunctionMap, &Probes)> {
        self.functions.iter().filter_map(|f| Some((f, f.probes()?)))
    }

    /// Where the counter arrays lie: one per function counted in an array (a streamed function's
    /// singles too).
    pub fn arrays(&self) -> Vec<ArrayCounters> {
        self.probed()
            .filter_map(|(f, p)| {
                let (offset, len, slots) = match p.counters {
                    Counters::Ppp { offset, slots } => (offset, u64::from(slots), true),
                    counters => (counters.array()?, p.plan.num_paths(), false),
                };
                Some(ArrayCounters {
                    function: f.index,
                    offset,
                    len,
                    loop_counters: p.loop_counters.clone(),
                    run_counters: p.run_counters.clone(),
                    slots,
                })
            })
            .collect()
    }

    /// The hash tables of the functions that count in one ([`Counters::Table`]).
    pub fn tables(&self) -> Vec<TableCounters> {
        self.probed()
            .filter_map(|(f, p)| match p.counters {
                Counters::Table { offset, slots } => Some(TableCounters { function: f.index, offset, slots }),
                _ => None,
            })
            .collect()
    }

    /// Mode `events`: where the event counters lie, one set per function that has them.
    pub fn event_counters(&self) -> Vec<EventCounters> {
        self.probed()
            .filter_map(|(f, p)| match p.counters {
                Counters::Events { offset, mask, .. } => Some(EventCounters { function: f.index, offset, mask }),
                _ => None,
            })
            .collect()
    }

    /// Sampled mode: the loops that run a copy without probes, with their functions.
    pub fn loop_bursts(&self) -> Vec<(u32, LoopBursts)> {
        self.probed().flat_map(|(f, p)| p.loop_bursts.iter().map(move |&l| (f.index, l))).collect()
    }

    /// The per-function profiles of what the module recorded.
    pub fn function_profiles(&self, counts: &RawCounts) -> Result<Vec<FunctionProfile>, CountsError> {
        self.functions
            .iter()
            .map(|f| {
                let state = match &f.state {
                    ProbeState::Instrumented(p) => FunctionState::Instrumented(
                        path_profile(p, counts.get(&f.index).map_or(&[], Vec::as_slice)).map_err(|e| match e {
                            CountsError::Overflow { what, .. } => CountsError::Overflow { function: f.index, what },
                            e => e,
                        })?,
                    ),
                    ProbeState::Skipped { reason } => FunctionState::Skipped { reason: reason.clone() },
                };
                Ok(FunctionProfile { index: f.index, name: f.name.clone(), blocks: f.blocks.clone(), state })
            })
            .collect()
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

/// Why counts do not make a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CountsError {
    /// A recorded path ID that the function's numbering does not have.
    #[error("corrupt counters: {0}")]
    BadPathId(#[from] regen::BadPathId),
    /// A count that the counts of several places, or of several paths, add up to exceeds 2^64 - 1.
    #[error("{what} of function {function} exceeds 2^64 - 1")]
    Overflow { function: u32, what: &'static str },
}

/// The edges of a path through `blocks` that ends at `end`, as profiles key them: `(from, to)`.
fn edge_keys(blocks: &[u32], end: Endpoint) -> impl Iterator<Item = (u32, Endpoint)> + '_ {
    let steps = blocks.windows(2).map(|w| (w[0], Endpoint::Block(w[1])));
    steps.chain(blocks.last().map(move |&b| (b, end)))
}

/// The path profile of one function from its `(path ID, count)` pairs (a path may be counted in
/// several places, as a streamed function's singles and its stream: the counts add up): every path
/// regenerated to its blocks, and the edge counts they add up to.
fn path_profile(p: &Probes, list: &[(u64, u64)]) -> Result<PathProfile, CountsError> {
    let overflow = |what| CountsError::Overflow { function: 0, what };
    let mut paths = Vec::new();
    let mut edges: BTreeMap<(u32, Endpoint), u64> = BTreeMap::new();
    let mut increments_executed = 0u64;
    let out = p.plan.dag.out_edges();
    let mut merged: BTreeMap<u64, u64> = BTreeMap::new();
    for &(id, count) in list {
        let c = merged.entry(id).or_insert(0);
        *c = c.checked_add(count).ok_or(overflow("a path count"))?;
    }
    for (id, count) in merged.into_iter().filter(|&(_, c)| c > 0) {
        let path = regen::regenerate(&p.plan.dag, &p.plan.numbering, id)?;
        let end = Endpoint::end(path.end);
        let on_path = path.edges.iter().filter(|&&e| is_increment(&p.plan, e)).count() as u64;
        increments_executed = on_path
            .checked_mul(count)
            .and_then(|n| increments_executed.checked_add(n))
            .ok_or(overflow("the increments executed"))?;
        let branches =
            path.edges[1..].iter().filter(|&&e| out[p.plan.dag.edges[e as usize].from as usize].len() > 1).count()
                as u32;
        for key in edge_keys(&path.blocks, end) {
            let c = edges.entry(key).or_insert(0);
            *c = c.checked_add(count).ok_or(overflow("an edge count"))?;
        }
        paths.push(PathCount {
            id: U64(id),
            count: U64(count),
            start: Endpoint::start(path.start),
            end,
            blocks: path.blocks,
            branches,
            interesting: p.ppp.as_ref().map(|ppp| ppp.interesting.binary_search(&id).is_ok()),
        });
    }
    paths.sort_by(|a, b| b.count.cmp(&a.count).then(a.id.cmp(&b.id)));
    let ppp = p.ppp.as_ref().map(|ppp| ppp_function(p, ppp, &paths).map(Box::new)).transpose()?;
    Ok(PathProfile {
        num_paths: U64(p.plan.num_paths()),
        counters: p.counters.kind(),
        cut_blocks: p.plan.overflow_cuts.clone(),
        paths,
        edges: edges.into_iter().map(|((from, to), c)| EdgeCount { from, to, count: U64(c) }).collect(),
        // Direct event counting has no path register.
        increments: match p.counters {
            Counters::Events { decoded: false, .. } => 0,
            _ => (0..p.plan.dag.edges.len() as u32).filter(|&e| is_increment(&p.plan, e)).count() as u32,
        },
        increments_executed: U64(increments_executed),
        kipf: None,
        ppp,
        events: None,
    })
}

/// Mode `ppp`: a function's interesting paths, and the residual ones among `paths` (those marked
/// not interesting) with the edges they took that no interesting path takes.
fn ppp_function(p: &Probes, ppp: &PppPlan, paths: &[PathCount]) -> Result<PppFunction, CountsError> {
    let (residual_paths, residual_executions) = pathprof_core::profile::residual(paths)
        .ok_or(CountsError::Overflow { function: 0, what: "the residual executions" })?;
    let residual: Vec<&PathCount> = paths.iter().filter(|x| x.interesting == Some(false)).collect();
    let mut untested_edges = 0;
    let mut untested_list = Vec::new();
    if !residual.is_empty() {
        // The interesting paths need not have run: regenerated from their IDs.
        let mut tested = std::collections::HashSet::new();
        for &id in &ppp.interesting {
            let path = regen::regenerate(&p.plan.dag, &p.plan.numbering, id)?;
            tested.extend(edge_keys(&path.blocks, Endpoint::end(path.end)));
        }
        let mut untested = std::collections::HashSet::new();
        for r in &residual {
            untested.extend(edge_keys(&r.blocks, r.end).filter(|k| !tested.contains(k)));
        }
        untested_edges = untested.len() as u64;
        untested_list = untested.into_iter().map(|(from, to)| EdgeKey { from, to }).collect();
        untested_list.sort_unstable();
    }
    let numbering = ppp.numbering.as_ref();
    Ok(PppFunction {
        interesting: ppp.interesting.len() as u64,
        range: numbering.map_or(0, |n| n.slots.len() as u64),
        delta: numbering.and_then(|n| n.delta()),
        residual_paths,
        residual_executions,
        untested_edges,
        untested: untested_list,
    })
}

#[cfg(test)]
mod tests {

    /// A map with a loop header, a landing, a throw edge and events reads back as written, blocks
    /// written short but for those with events.
    #[test]
    fn maps_read_back_as_written() {
        let wat = r#"(module
          (tag $e)
          (func $f (param $n i32)
            block $h
              try_table (catch $e $h)
                loop $l
                  local.get $n
                  i32.const 1
                  i32.sub
                  local.tee $n
                  br_if $l
                end
                throw $e
              end
            end))"#;
        let bytes = wat::parse_str(wat).unwrap();
        let events = crate::events::EventSet::new(&crate::events::EventSpec::default(), &Default::default()).unwrap();
        for options in [
            crate::InstrumentOptions::default(),
            crate::InstrumentOptions {
                events: Some(events),
                ..crate::InstrumentOptions::with_sink(crate::SinkKind::Decode)
            },
        ] {
            let map = crate::instrument(&bytes, &options).unwrap().map;
            let f = &map.functions[0];
            assert!(f.blocks.iter().any(|b| b.loop_header) && f.blocks.iter().any(|b| b.landing));
            let plan = &f.probes().unwrap().plan;
            assert!(plan.dag.edges.iter().any(|e| matches!(e.kind, pathprof_core::dag::DagEdgeKind::Throw(_))));
            let text = map.to_json();
            assert_eq!(ProfileMap::from_json(&text).unwrap(), map);
            let short = f.blocks.iter().all(|b| b.events.is_empty());
            assert_eq!(text.contains(r#""blocks":[["#), short, "{text}");
        }
    }

    use super::*;
    use crate::{instrument, InstrumentOptions};

    /// Counts of one path from two places that add up past 2^64 - 1 are refused, not saturated.
    #[test]
    fn counts_past_64_bits_are_an_error() {
        let wasm = wat::parse_str(r#"(module (func (export "f") (param i32) (if (local.get 0) (then nop))))"#).unwrap();
        let map = instrument(&wasm, &InstrumentOptions::default()).unwrap().map;
        let counts = |list: Vec<(u64, u64)>| -> RawCounts { [(0, list)].into_iter().collect() };
        let profiles = map.function_profiles(&counts(vec![(0, u64::MAX - 1), (0, 1)])).unwrap();
        assert_eq!(profiles[0].paths().iter().map(|p| p.count.0).max(), Some(u64::MAX));
        let err = map.function_profiles(&counts(vec![(0, u64::MAX), (0, 1)])).unwrap_err();
        assert_eq!(err, CountsError::Overflow { function: 0, what: "a path count" });
        assert_eq!(err.to_string(), "a path count of function 0 exceeds 2^64 - 1");
        // Two paths through the same edges whose counts add up past 2^64 - 1.
        let err = map.function_profiles(&counts(vec![(0, u64::MAX), (1, 1)])).unwrap_err();
        assert_eq!(err, CountsError::Overflow { function: 0, what: "an edge count" });
        assert!(matches!(map.function_profiles(&counts(vec![(9, 1)])), Err(CountsError::BadPathId(_))));
    }

    /// A path that runs two increments u64::MAX times executed more increments than 64 bits count.
    #[test]
    fn increments_executed_past_64_bits_are_an_error() {
        let wasm = wat::parse_str(
            r#"(module (func (export "f") (param i32)
                 (if (local.get 0) (then nop))
                 (if (i32.eqz (local.get 0)) (then nop))))"#,
        )
        .unwrap();
        let map = instrument(&wasm, &InstrumentOptions::default()).unwrap().map;
        let p = map.functions[0].probes().unwrap();
        let on_path = |id: u64| {
            let path = regen::regenerate(&p.plan.dag, &p.plan.numbering, id).unwrap();
            path.edges.iter().filter(|&&e| is_increment(&p.plan, e)).count()
        };
        let ids: Vec<u64> = (0..p.plan.num_paths()).collect();
        assert!(ids.iter().any(|&id| on_path(id) >= 2), "no path with two increments");
        for id in ids {
            let counts: RawCounts = [(0, vec![(id, u64::MAX)])].into_iter().collect();
            match map.function_profiles(&counts) {
                Ok(profiles) => {
                    assert!(on_path(id) <= 1);
                    assert_eq!(profiles[0].profiled().unwrap().increments_executed.0, u64::MAX * on_path(id) as u64);
                }
                Err(e) => {
                    assert!(on_path(id) >= 2);
                    assert_eq!(e, CountsError::Overflow { function: 0, what: "the increments executed" });
                }
            }
        }
    }
}
