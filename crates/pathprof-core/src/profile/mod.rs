//! The profile data model, versioned and documented in docs/profile-format.md.
//!
//! A [`Profile`] is what one run of a program gives: the module, how it was profiled
//! ([`ProfileMode`], with what the mode measured besides paths), the run's ending, and one
//! [`FunctionProfile`] per defined function, either with its path profile
//! ([`FunctionState::Instrumented`]) or with the reason it was left as it was
//! ([`FunctionState::Skipped`]). The types admit only consistent profiles; their JSON form
//! ([`json`](self::json)) is read back into them or refused.

mod json;
mod kipf;

pub use json::{ReadError, FORMAT, VERSION};
pub use kipf::{KipfNodeProfile, KipfProfile, KipfStats};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// An unsigned 64-bit integer written as a JSON number up to 2^53 and as a decimal string beyond, so
/// that readers in any language stay exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct U64(pub u64);

const MAX_SAFE: u64 = (1 << 53) - 1;

impl Serialize for U64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0 <= MAX_SAFE {
            s.serialize_u64(self.0)
        } else {
            s.serialize_str(&self.0.to_string())
        }
    }
}

impl<'de> Deserialize<'de> for U64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = U64;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an unsigned integer or a decimal string")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<U64, E> {
                Ok(U64(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<U64, E> {
                u64::try_from(v).map(U64).map_err(|_| E::custom("negative value"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<U64, E> {
                v.parse().map(U64).map_err(|_| E::custom(format!("not a decimal u64: {v:?}")))
            }
        }
        d.deserialize_any(V)
    }
}

impl fmt::Display for U64 {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Where a path starts (`"entry"` or a block id) or ends (`"exit"`, a block id, or `"throw"`: by
/// an exception raised in its last block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    Entry,
    Exit,
    Block(u32),
    Throw,
}

impl Endpoint {
    /// The start of a regenerated path.
    pub fn start(p: crate::regen::PathPoint) -> Endpoint {
        match p {
            crate::regen::PathPoint::Block(b) => Endpoint::Block(b),
            _ => Endpoint::Entry,
        }
    }

    /// The end of a regenerated path.
    pub fn end(p: crate::regen::PathPoint) -> Endpoint {
        match p {
            crate::regen::PathPoint::Boundary => Endpoint::Exit,
            crate::regen::PathPoint::Block(b) => Endpoint::Block(b),
            crate::regen::PathPoint::Throw => Endpoint::Throw,
        }
    }

    /// The point of the DAG this endpoint stands for.
    pub fn point(self) -> crate::regen::PathPoint {
        match self {
            Endpoint::Entry | Endpoint::Exit => crate::regen::PathPoint::Boundary,
            Endpoint::Block(b) => crate::regen::PathPoint::Block(b),
            Endpoint::Throw => crate::regen::PathPoint::Throw,
        }
    }
}

impl Serialize for Endpoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Endpoint::Entry => s.serialize_str("entry"),
            Endpoint::Exit => s.serialize_str("exit"),
            Endpoint::Throw => s.serialize_str("throw"),
            Endpoint::Block(b) => s.serialize_u32(*b),
        }
    }
}

impl<'de> Deserialize<'de> for Endpoint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(u32),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(b) => Ok(Endpoint::Block(b)),
            Raw::Str(s) if s == "entry" => Ok(Endpoint::Entry),
            Raw::Str(s) if s == "exit" => Ok(Endpoint::Exit),
            Raw::Str(s) if s == "throw" => Ok(Endpoint::Throw),
            Raw::Str(s) => Err(serde::de::Error::custom(format!("bad path endpoint {s:?}"))),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Endpoint::Entry => f.write_str("entry"),
            Endpoint::Exit => f.write_str("exit"),
            Endpoint::Throw => f.write_str("throw"),
            Endpoint::Block(b) => write!(f, "B{b}"),
        }
    }
}

/// The profiled module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModuleInfo {
    pub path: String,
    pub sha256: String,
    pub size: u64,
    /// Of the profiled core module.
    pub code_section_size: u64,
    /// When the program is a component: the index of the core module profiled in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_module: Option<u32>,
}

/// A whole profile: one run of one module.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub module: ModuleInfo,
    /// How the run was profiled, with what the mode measured besides the paths.
    pub mode: ProfileMode,
    pub args: Vec<String>,
    pub wall_seconds: f64,
    pub bench_region_seconds: Option<f64>,
    pub instrumentation_seconds: Option<f64>,
    pub exit_code: i32,
    /// The trap message when the program trapped.
    pub trap: Option<String>,
    pub open_activations_at_exit: u64,
    /// How many runs the profile adds up: 1, or more for profiles merged by `pathprof merge` (whose
    /// `args`, `exit_code` and `trap` are those of the first run, and whose times are sums).
    pub runs: u64,
    /// Sum of all path counts.
    pub path_executions: U64,
    pub functions: Vec<FunctionProfile>,
}

/// How a run was profiled: one variant per profiling mode, each with the facts of its own.
#[derive(Clone, Debug, PartialEq)]
pub enum ProfileMode {
    /// Uninstrumented: no paths.
    None,
    /// Exact Ball–Larus path counts [BL96].
    Bl,
    /// Sampled paths (PEP [PEP05]): counts are numbers of samples.
    Pep(SamplingInfo),
    /// Exact Ball–Larus counts and k-iteration path forests (k-BLPP [KBL13]).
    Kbl(KblInfo),
    /// Exact counts, the interesting paths counted in compact arrays and every other (residual)
    /// path counted apart: preferential and residual path profiling [PPP07 §3.3–3.5].
    Ppp(PppInfo),
    /// Event counts, from path counts or counted directly [EVT23].
    Events(EventsInfo),
}

impl ProfileMode {
    /// The mode's name in the profile's `mode` field.
    pub fn name(&self) -> &'static str {
        match self {
            ProfileMode::None => "none",
            ProfileMode::Bl => "bl",
            ProfileMode::Pep(_) => "pep",
            ProfileMode::Kbl(_) => "kbl",
            ProfileMode::Ppp(_) => "ppp",
            ProfileMode::Events(_) => "events",
        }
    }

    pub fn sampling(&self) -> Option<&SamplingInfo> {
        match self {
            ProfileMode::Pep(s) => Some(s),
            _ => None,
        }
    }

    pub fn kbl(&self) -> Option<&KblInfo> {
        match self {
            ProfileMode::Kbl(k) => Some(k),
            _ => None,
        }
    }

    pub fn ppp(&self) -> Option<&PppInfo> {
        match self {
            ProfileMode::Ppp(p) => Some(p),
            _ => None,
        }
    }

    pub fn events(&self) -> Option<&EventsInfo> {
        match self {
            ProfileMode::Events(e) => Some(e),
            _ => None,
        }
    }
}

/// How the events of an `events` profile were counted [EVT23 §4.2]: `pc` counts paths and computes
/// the events after the run, `pd` adds each path's event vector at its end, `dec` counts the events
/// where they occur (the baseline).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventStrategy {
    Pc,
    Pd,
    Dec,
}

impl EventStrategy {
    pub const ALL: [EventStrategy; 3] = [EventStrategy::Pc, EventStrategy::Pd, EventStrategy::Dec];

    pub fn name(self) -> &'static str {
        match self {
            EventStrategy::Pc => "pc",
            EventStrategy::Pd => "pd",
            EventStrategy::Dec => "dec",
        }
    }
}

/// Where paths were cut besides loop headers [EVT23 §4.3]: nowhere but where path IDs would
/// overflow 64 bits (`none`), at every merge (`merges`), or only in functions whose paths exceed a
/// budget (`auto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathCut {
    None,
    Merges,
    Auto,
}

impl PathCut {
    pub const ALL: [PathCut; 3] = [PathCut::None, PathCut::Merges, PathCut::Auto];

    pub fn name(self) -> &'static str {
        match self {
            PathCut::None => "none",
            PathCut::Merges => "merges",
            PathCut::Auto => "auto",
        }
    }
}

/// Event counts by event name, in the order of the profile's events; a JSON object in that order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventCounts(pub Vec<(String, U64)>);

impl EventCounts {
    /// The counts `values` of the events `names`.
    pub fn new(names: &[String], values: &[u64]) -> EventCounts {
        EventCounts(names.iter().cloned().zip(values.iter().map(|&v| U64(v))).collect())
    }

    /// The count of event `name`.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.0)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }

    pub fn values(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().map(|(_, v)| v.0)
    }
}

impl Serialize for EventCounts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for EventCounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = EventCounts;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of event counts")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<EventCounts, A::Error> {
                let mut out = Vec::new();
                while let Some((name, value)) = map.next_entry::<String, U64>()? {
                    if out.iter().any(|(n, _)| *n == name) {
                        return Err(serde::de::Error::custom(format!("event {name:?} is given twice")));
                    }
                    out.push((name, value));
                }
                Ok(EventCounts(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// How an `events` profile was taken, and its totals.
#[derive(Clone, Debug, PartialEq)]
pub struct EventsInfo {
    pub strategy: EventStrategy,
    pub cut: PathCut,
    /// The events, in order: the order of every event vector of the profile.
    pub names: Vec<String>,
    /// The functions whose calls event `alloc` counts.
    pub alloc_functions: Vec<String>,
    /// Events of the user's, with the operators each counts.
    pub user_events: Vec<(String, Vec<String>)>,
    /// Totals over all functions.
    pub totals: EventCounts,
    /// When the run stopped with activations open (a trap, `proc_exit`): the most events the
    /// totals can miss — the paths cut short in those activations (`pc`, `pd`). The true totals lie
    /// between `totals` and `totals + undercount_bound`.
    pub undercount_bound: Option<EventCounts>,
    /// After a trap under `dec`: the most events counted that did not occur (the rest of the
    /// stretch that trapped). The true totals lie between `totals - overcount_bound` and `totals`.
    pub overcount_bound: Option<EventCounts>,
}

/// How a `ppp` profile was taken: which paths were interesting, and how many others ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PppInfo {
    /// The profiles whose executed paths are the interesting ones, as given.
    pub interesting_from: Vec<String>,
    /// Interesting paths, over all functions.
    pub interesting: U64,
    /// Paths that ran and were not interesting — in the field, untested paths — and how often they
    /// ran, over all functions.
    pub residual_paths: U64,
    pub residual_executions: U64,
}

impl fmt::Display for ProfileMode {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the k-iteration path forests of a `kbl` profile were built [KBL13 §2.2, §4].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KblInfo {
    pub k: usize,
    /// Items of the path stream: path IDs, activation entries and activation exits.
    pub stream_items: U64,
    /// Nodes of the k-slab forest the k-IPFs were made from, and the bytes each takes.
    pub ksf_nodes: U64,
    pub ksf_node_bytes: u32,
    /// Nodes visited looking up children in the k-SF (sibling scans), over all path IDs.
    pub sibling_scans: U64,
    /// The bound on k-SF nodes (`--max-nodes`), when one was set.
    pub max_nodes: Option<U64>,
    /// Path IDs the bound kept out of the forest. Zero means every count is exact; otherwise the
    /// roots (the Ball–Larus counts) stay exact and every other count is a lower bound, below the
    /// true count by at most `dropped`.
    pub dropped: U64,
    /// Buffers of stream items handed to the consumer thread, and the seconds the program waited,
    /// all told, for the consumer to give one back: the part of the run the consumer's speed bounds
    /// (0 in profiles written before the fields).
    #[serde(default)]
    pub stream_handovers: U64,
    #[serde(default)]
    pub stream_wait_seconds: f64,
}

/// How a sampled profile was taken [PEP05 §3.3].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingInfo {
    /// Consecutive samples per timer tick.
    pub samples: u32,
    /// Path ends skipped after a tick rotate through `1..=stride`.
    pub stride: u32,
    /// Deterministic sampling of every `every`-th path end (no timer), when set.
    pub every: Option<u64>,
    pub tick_ms: f64,
    pub ticks: u64,
    /// Samples taken: the sum of all path counts.
    pub samples_taken: u64,
    /// Every function ran as whole-function copies without probes between samples (`pep:dup`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub function_copies: bool,
}

/// One defined function of the module (imports are not listed).
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionProfile {
    /// Index in the module's function index space (imports included).
    pub index: u32,
    pub name: Option<String>,
    /// The basic blocks, when the function's body could be read into a CFG.
    pub blocks: Vec<BlockInfo>,
    pub state: FunctionState,
}

/// Whether a function was profiled.
#[derive(Clone, Debug, PartialEq)]
pub enum FunctionState {
    /// Instrumented: its paths and what they tell.
    Instrumented(PathProfile),
    /// Left as it was, for this reason (e.g. `"uses exception handling"`).
    Skipped { reason: String },
}

/// Where the paths of an instrumented function were recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterKind {
    /// A dense array of `u64` counters in the profiler's memory, indexed by path ID.
    Array,
    /// An exact hash table on the host, for functions with too many paths for an array.
    Hash,
    /// Sampled path ends (mode `pep`).
    Sampled,
    /// The k-BLPP stream of path IDs (mode `kbl`).
    Stream,
    /// Slots of the interesting paths, indexed by their preferential ID and checked against their
    /// Ball–Larus ID, and the host's hash table for the others (mode `ppp`).
    Ppp,
    /// Event counters in the profiler's memory, a `u64` per event that occurs in the function (modes
    /// `events:pd`, where path ends add their paths' event vectors, and `events:dec`): no paths.
    Events,
}

impl CounterKind {
    /// Every kind, as docs/profile-format.md lists them.
    pub const ALL: [CounterKind; 6] = [
        CounterKind::Array,
        CounterKind::Hash,
        CounterKind::Sampled,
        CounterKind::Stream,
        CounterKind::Ppp,
        CounterKind::Events,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CounterKind::Array => "array",
            CounterKind::Hash => "hash",
            CounterKind::Sampled => "sampled",
            CounterKind::Stream => "stream",
            CounterKind::Ppp => "ppp",
            CounterKind::Events => "events",
        }
    }
}

/// The path profile of one instrumented function.
#[derive(Clone, Debug, PartialEq)]
pub struct PathProfile {
    /// Number of Ball–Larus paths (IDs are `0 .. num_paths`).
    pub num_paths: U64,
    pub counters: CounterKind,
    /// Blocks cut to keep path IDs within 64 bits (paths start and end there as at loop headers).
    pub cut_blocks: Vec<u32>,
    /// Executed paths, by decreasing count.
    pub paths: Vec<PathCount>,
    /// Edge counts derived from the paths: for every edge some path took, the sum of their counts.
    pub edges: Vec<EdgeCount>,
    /// Edges that carry a path-register increment (chords with a non-zero increment).
    pub increments: u32,
    /// Increments executed by the counted paths: for every path, its count times the increments on it.
    pub increments_executed: U64,
    /// Mode `kbl`: the k-iteration path forest of the function [KBL13].
    pub kipf: Option<KipfProfile>,
    /// Mode `ppp`: the function's interesting paths and the others that ran.
    pub ppp: Option<Box<PppFunction>>,
    /// Mode `events`: the function's event totals.
    pub events: Option<EventCounts>,
}

/// A function's preferential numbering, and the paths that ran besides the interesting ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PppFunction {
    /// Interesting paths.
    pub interesting: u64,
    /// Slots of the array that counts them: one past the largest preferential ID (0 when the
    /// function counts every path as in `bl`, or none in an array).
    pub range: u64,
    /// `range / interesting`: 1 for a numbering without holes [PPP07 Fig. 3.17]; null without
    /// interesting paths or slots.
    pub delta: Option<f64>,
    /// Paths that ran and are not interesting, and their executions.
    pub residual_paths: u64,
    pub residual_executions: U64,
    /// Edges that residual paths took and no interesting path takes: their number, and the edges.
    pub untested_edges: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untested: Vec<EdgeKey>,
}

/// Mode `ppp`: how many of `paths` are residual (not interesting), and how often they ran; `None`
/// when their counts add up past 2^64 − 1.
pub fn residual(paths: &[PathCount]) -> Option<(u64, U64)> {
    let mut residual = paths.iter().filter(|p| p.interesting == Some(false));
    let (n, executions) =
        residual.try_fold((0u64, 0u64), |(n, executions), p| Some((n + 1, executions.checked_add(p.count.0)?)))?;
    Some((n, U64(executions)))
}

/// An edge as profiles key it: its source block and its target (a block, or `"exit"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EdgeKey {
    pub from: u32,
    pub to: Endpoint,
}

impl FunctionProfile {
    /// The function's path profile, when it was instrumented.
    pub fn profiled(&self) -> Option<&PathProfile> {
        match &self.state {
            FunctionState::Instrumented(p) => Some(p),
            FunctionState::Skipped { .. } => None,
        }
    }

    pub fn profiled_mut(&mut self) -> Option<&mut PathProfile> {
        match &mut self.state {
            FunctionState::Instrumented(p) => Some(p),
            FunctionState::Skipped { .. } => None,
        }
    }

    pub fn is_instrumented(&self) -> bool {
        self.profiled().is_some()
    }

    /// Why the function was not instrumented, when it was not.
    pub fn skip_reason(&self) -> Option<&str> {
        match &self.state {
            FunctionState::Skipped { reason } => Some(reason),
            FunctionState::Instrumented(_) => None,
        }
    }

    /// The executed paths, by decreasing count (none for a skipped function).
    pub fn paths(&self) -> &[PathCount] {
        self.profiled().map_or(&[], |p| &p.paths)
    }

    /// The derived edge counts (none for a skipped function).
    pub fn edges(&self) -> &[EdgeCount] {
        self.profiled().map_or(&[], |p| &p.edges)
    }

    /// The blocks cut to keep path IDs within 64 bits.
    pub fn cut_blocks(&self) -> &[u32] {
        self.profiled().map_or(&[], |p| &p.cut_blocks)
    }

    /// The number of Ball–Larus paths (0 for a skipped function).
    pub fn num_paths(&self) -> u64 {
        self.profiled().map_or(0, |p| p.num_paths.0)
    }

    /// Mode `kbl`: the function's k-iteration path forest.
    pub fn kipf(&self) -> Option<&KipfProfile> {
        self.profiled()?.kipf.as_ref()
    }

    /// Mode `ppp`: the function's interesting and residual paths.
    pub fn ppp(&self) -> Option<&PppFunction> {
        self.profiled()?.ppp.as_deref()
    }

    /// Mode `events`: the function's event totals.
    pub fn events(&self) -> Option<&EventCounts> {
        self.profiled()?.events.as_ref()
    }
}

/// How often an edge was taken, as derived from path counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeCount {
    pub from: u32,
    /// A block id, or `"exit"`.
    pub to: Endpoint,
    pub count: U64,
}

/// A basic block of the original module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockInfo {
    pub id: u32,
    /// Byte range `[offset, end)` of the block's instructions in the original module file.
    pub offset: u64,
    pub end: u64,
    /// `file:line` from DWARF, when present (left out of the JSON when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    /// Left out of the JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub loop_header: bool,
    /// Whether a handler resumes here after catching an exception: paths start here (left out of
    /// the JSON when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub landing: bool,
    /// How many operators the block has: a path's static cost is the sum over its blocks (0 in
    /// profiles written before the field).
    #[serde(default)]
    pub ops: u32,
    /// Mode `events`: the block's event vector, an entry per event of the profile's `event_names`
    /// (occurrences, or bytes for `bytes_loaded` and `bytes_stored`) [EVT23 §4.2].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<u64>,
}

/// An executed path and its count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathCount {
    pub id: U64,
    pub count: U64,
    pub start: Endpoint,
    pub end: Endpoint,
    pub blocks: Vec<u32>,
    /// Number of branches (blocks with several successors) the path goes through: its branch flow
    /// is `count × branches`.
    #[serde(default)]
    pub branches: u32,
    /// Mode `ppp`: whether the path is one of the interesting paths; a path that is not is residual
    /// (in the field, untested).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interesting: Option<bool>,
}
