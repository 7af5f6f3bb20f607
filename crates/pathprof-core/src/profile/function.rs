//! One function of a profile: its blocks, and either its path profile or why it was left as it
//! was.

use super::{CounterKind, Endpoint, EventCounts, KipfProfile, U64};
use serde::{Deserialize, Serialize};

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
    /// How many calls (`call`, `call_indirect`, `call_ref`) the block makes: a path's subpaths
    /// end at them (mode `ips`) (left out of the JSON when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub calls: u32,
    /// Mode `events`: the block's event vector, an entry per event of the profile's `event_names`
    /// (occurrences, or bytes for `bytes_loaded` and `bytes_stored`) [EVT23 §4.2].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<u64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
