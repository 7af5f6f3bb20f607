//! The profile map: everything needed to turn what an instrumented module recorded into a profile.
//!
//! `pathprof instrument` writes it beside the instrumented module (as JSON); `pathprof run` keeps it
//! in memory. For every function it holds the plan (DAG, numbering, increments) that decodes path
//! IDs, and where the function's paths are recorded ([`Counters`]); for the module, how path ends
//! are recorded ([`SinkLayout`]) and the export name of the profiler's memory. The words themselves
//! are defined in [`abi`](crate::abi).
//!
//! * this module — the map's schema and its JSON form;
//! * [`memory`] — what the instrumented code wrote in the profiler's memory, read back;
//! * [`decode`] — the counts of a run decoded into a profile's functions.

mod decode;
mod memory;

pub use decode::CountsError;
pub use memory::{read_bursts, ArrayCounters, EventCounters, RawCounts, StoredCounters, TableCounters};

use crate::abi::{HostImport, SampleBufferLayout, StreamLayout};
use pathprof_core::ppp::PppPlan;
use pathprof_core::profile::{BlockInfo, CounterKind, InterestingRule, ModuleInfo};
use pathprof_core::FunctionPlan;
use serde::{Deserialize, Serialize};

/// Value of the map's `format` field.
pub const MAP_FORMAT: &str = "pathprof-map";
/// Version of the map format.
pub const MAP_VERSION: u32 = 14;

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
    /// Bursty k-BLPP: every path counted in `num_paths` `u64` counters at byte `offset`, and streamed
    /// as [`Counters::Stream`] streams it (without singles) while the activation's burst window is
    /// open: the stream gives its sequences, sampled, and never its counts.
    Burst { offset: u32 },
    /// Bursty k-BLPP, for a function with too many paths for an array: every path counted in a
    /// table as in [`Counters::Table`], the paths it could not hold written to the stream as counts
    /// ([`StreamItem::Count`](crate::abi::StreamItem::Count)), and streamed as [`Counters::Burst`]
    /// streams them.
    #[serde(rename = "burst_table")]
    BurstTable { offset: u32, slots: u32 },
    /// Preferential (PPP): `slots` slots of [`abi::PPP_SLOT_BYTES`](crate::abi::PPP_SLOT_BYTES) at
    /// byte `offset`, indexed by the path's preferential ID, each with the Ball–Larus ID of its
    /// interesting path and its count; the other paths are counted by the host.
    Ppp { offset: u32, slots: u32 },
    /// Mode `ippp`: the supergraph IDs below the function's `num_paths` (those of paths whose calls
    /// add no digit, or only zeros) counted in `num_paths` `u64` counters at byte `offset`; the
    /// others in a table as in [`Counters::Table`] at `table_offset` (`slots` slots), or by the host
    /// through the count import when there is none.
    Split { offset: u32, table_offset: Option<u32>, slots: u32 },
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
            Counters::Table { .. } | Counters::Hash | Counters::BurstTable { .. } | Counters::Split { .. } => {
                CounterKind::Hash
            }
            Counters::Sampled => CounterKind::Sampled,
            Counters::Stream { .. } => CounterKind::Stream,
            Counters::Burst { .. } => CounterKind::Array,
            Counters::Ppp { .. } => CounterKind::Ppp,
            Counters::Events { .. } => CounterKind::Events,
        }
    }

    /// Byte offset of the function's array of counters, when it has one (a streamed function's
    /// singles too).
    pub fn array(self) -> Option<u32> {
        match self {
            Counters::Array { offset }
            | Counters::Stream { singles: Some(offset) }
            | Counters::Burst { offset }
            | Counters::Split { offset, .. } => Some(offset),
            Counters::Stream { singles: None }
            | Counters::Table { .. }
            | Counters::BurstTable { .. }
            | Counters::Hash
            | Counters::Sampled
            | Counters::Ppp { .. }
            | Counters::Events { .. } => None,
        }
    }

    /// Whether the function keeps a path register (all but direct event counting, `events:dec`).
    pub fn has_path_register(self) -> bool {
        match self {
            Counters::Events { decoded, .. } => decoded,
            Counters::Array { .. }
            | Counters::Table { .. }
            | Counters::Hash
            | Counters::Sampled
            | Counters::Stream { .. }
            | Counters::Burst { .. }
            | Counters::BurstTable { .. }
            | Counters::Split { .. }
            | Counters::Ppp { .. } => true,
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
    /// Mode `ippp`: the supergraph numbering whose IDs its counters hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supergraph: Option<pathprof_core::supergraph::Supergraph>,
    /// Mode `ippp` with interesting segments: the slots of the interesting supergraph paths, which
    /// `counters` does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supergraph_slots: Option<SupergraphSlots>,
}

/// The preferential slots of a function's interesting supergraph paths [PPP07 §3.4.5 with §3.3]:
/// `slots` slots as [`Counters::Ppp`] lays them out at byte `offset`, each with the supergraph ID of
/// its path (or a hole) and its count, for the interesting supergraph paths `ids` (sorted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupergraphSlots {
    pub offset: u32,
    pub slots: u32,
    pub ids: Vec<u64>,
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
            if b.line.is_none() && b.events.is_empty() && b.calls == 0 && b.id as usize == i {
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
                    calls: 0,
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
    /// What the module was instrumented from and for, which a host outside pathprof and `pathprof
    /// decode` need (written by `pathprof instrument`; absent from the maps `pathprof run` keeps in
    /// memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<MapOrigin>,
}

/// What a written map's module was instrumented from and for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapOrigin {
    /// The mode, in its shortest form (`kbl:8`, `pep:every:100`).
    pub mode: String,
    /// The program instrumented, as its profiles describe it.
    pub module: ModuleInfo,
    /// SHA-256 of the instrumented program written beside the map, in hex.
    pub instrumented_sha256: String,
    /// Bytes of the profiler's memory (0 when the module has none).
    pub memory_bytes: u64,
    /// Mode `ppp`: the names of the profiles whose paths are interesting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interesting_from: Vec<String>,
    /// Mode `ppp`: how the interesting paths were chosen from those profiles' paths, and the share
    /// of their executions the chosen paths carried (absent: every path that ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interesting_chosen: Option<(InterestingRule, f64)>,
    /// Mode `events`: the functions whose calls count as `alloc` (`--alloc-fn`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alloc_functions: Vec<String>,
    /// Mode `events`: the user's events, each a name and its operators (`--event`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_events: Vec<(String, Vec<String>)>,
}

impl ProfileMap {
    /// The functions that carry probes, with their probes.
    pub fn probed(&self) -> impl Iterator<Item = (&FunctionMap, &Probes)> {
        self.functions.iter().filter_map(|f| Some((f, f.probes()?)))
    }

    /// Parses a map written by [`ProfileMap::to_json`].
    pub fn from_json(text: &str) -> Result<ProfileMap, String> {
        #[derive(Deserialize)]
        struct Version {
            format: String,
            version: u32,
        }
        let Ok(Version { format, version }) = serde_json::from_str::<Version>(text) else {
            return Err("not a pathprof map".to_string());
        };
        if format != MAP_FORMAT {
            return Err("not a pathprof map".to_string());
        }
        if version != MAP_VERSION {
            return Err(format!(
                "a pathprof map of version {version}; this pathprof reads version {MAP_VERSION} (instrument the module again)"
            ));
        }
        serde_json::from_str(text).map_err(|e| format!("not a pathprof map: {e}"))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("maps always serialize")
    }
}
