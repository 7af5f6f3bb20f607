//! The profile data model and its JSON form, versioned and documented in docs/profile-format.md.
//!
//! Numbers that may exceed 2^53 (path counts, path IDs, execution counts) are written as JSON numbers
//! when they fit in 53 bits, as decimal strings otherwise, so readers in any language stay exact.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Value of the `format` field.
pub const FORMAT: &str = "pathprof-profile";
/// Value of the `version` field.
pub const VERSION: u32 = 1;

/// An unsigned 64-bit integer written as a number up to 2^53 and as a decimal string beyond.
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

/// Where a path starts (`"entry"` or a block id) or ends (`"exit"` or a block id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    Entry,
    Exit,
    Block(u32),
}

impl Serialize for Endpoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Endpoint::Entry => s.serialize_str("entry"),
            Endpoint::Exit => s.serialize_str("exit"),
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
            Raw::Str(s) => Err(serde::de::Error::custom(format!("bad path endpoint {s:?}"))),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Endpoint::Entry => f.write_str("entry"),
            Endpoint::Exit => f.write_str("exit"),
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
    pub code_section_size: u64,
}

/// A whole profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub format: String,
    pub version: u32,
    pub module: ModuleInfo,
    /// `"bl"` or `"none"`.
    pub mode: String,
    pub args: Vec<String>,
    pub wall_seconds: f64,
    pub bench_region_seconds: Option<f64>,
    pub instrumentation_seconds: Option<f64>,
    pub exit_code: i32,
    /// The trap message when the program trapped.
    pub trap: Option<String>,
    pub open_activations_at_exit: u64,
    /// Sum of all path counts.
    pub path_executions: U64,
    /// Sampled mode: how paths were sampled (null when every path end was counted).
    #[serde(default)]
    pub sampling: Option<SamplingInfo>,
    /// Mode `kbl`: how the k-iteration path forests were built (null in other modes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kbl: Option<KblInfo>,
    pub functions: Vec<FunctionProfile>,
}

/// How the k-iteration path forests of a `kbl` profile were built (seed 000 §2.2, §4).
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
}

/// How a sampled profile was taken (PEP, seed 004 §3.3).
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
}

/// One function of the module (imports are not listed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionProfile {
    /// Index in the module's function index space (imports included).
    pub index: u32,
    pub name: Option<String>,
    pub instrumented: bool,
    pub skip_reason: Option<String>,
    pub num_paths: U64,
    /// `"array"` or `"hash"` (null when not instrumented).
    pub counters: Option<String>,
    /// Blocks cut to keep path IDs within 64 bits (paths start and end there as at loop headers).
    pub cut_blocks: Vec<u32>,
    pub blocks: Vec<BlockInfo>,
    /// Executed paths, by decreasing count.
    pub paths: Vec<PathCount>,
    /// Edge counts derived from the paths: for every edge some path took, the sum of their counts.
    #[serde(default)]
    pub edges: Vec<EdgeCount>,
    /// Edges that carry a path-register increment (chords with a non-zero increment).
    #[serde(default)]
    pub increments: u32,
    /// Increments executed by the counted paths: for every path, its count times the increments on it.
    #[serde(default)]
    pub increments_executed: U64,
    /// Mode `kbl`: the k-iteration path forest of the function (seed 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kipf: Option<KipfProfile>,
}

/// A k-iteration path forest: every sequence of up to `k` consecutive paths of one activation that
/// ran, as a prefix forest of path IDs with the number of times each sequence ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KipfProfile {
    pub k: usize,
    pub roots: Vec<KipfNodeProfile>,
}

/// A node of a k-IPF: the sequence of path IDs from its root down to it ran `count` times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KipfNodeProfile {
    pub path: U64,
    pub count: U64,
    pub children: Vec<KipfNodeProfile>,
}

impl KipfProfile {
    /// Calls `visit` on every node, parents before children and siblings in order, with the sequence
    /// of path IDs from the node's root down to the node (the node's own path last).
    pub fn for_each_node(&self, mut visit: impl FnMut(&[U64], &KipfNodeProfile)) {
        let mut sequence: Vec<U64> = Vec::new();
        let mut levels: Vec<std::slice::Iter<'_, KipfNodeProfile>> = vec![self.roots.iter()];
        while let Some(level) = levels.last_mut() {
            match level.next() {
                Some(node) => {
                    sequence.push(node.path);
                    visit(&sequence, node);
                    levels.push(node.children.iter());
                }
                None => {
                    levels.pop();
                    sequence.pop();
                }
            }
        }
    }

    /// The forest's shape: node, edge and leaf counts and leaf depths.
    pub fn stats(&self) -> KipfStats {
        let mut s = KipfStats::default();
        self.for_each_node(|sequence, node| {
            s.nodes += 1;
            if node.children.is_empty() {
                s.leaves += 1;
                s.leaf_depth_sum += sequence.len() as u64;
            } else {
                s.internal_nodes += 1;
                s.child_edges += node.children.len() as u64;
            }
        });
        s
    }
}

/// The shape of one or more k-IPFs (seed 000 Figs. 12–14), as sums so that the figures of several
/// forests add up to those of the whole program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KipfStats {
    /// Nodes: the distinct sequences of 1 to k paths that ran.
    pub nodes: u64,
    /// Nodes with at least one child.
    pub internal_nodes: u64,
    /// Parent–child edges: the nodes that are not roots.
    pub child_edges: u64,
    /// Nodes without children.
    pub leaves: u64,
    /// Sum of the depths of the leaves, a root being at depth 1.
    pub leaf_depth_sum: u64,
}

impl KipfStats {
    /// Roots: the distinct Ball–Larus paths that ran.
    pub fn roots(&self) -> u64 {
        self.nodes.saturating_sub(self.child_edges)
    }

    /// Mean number of children of the internal nodes (Fig. 13); `None` without internal nodes.
    pub fn avg_degree(&self) -> Option<f64> {
        (self.internal_nodes > 0).then(|| self.child_edges as f64 / self.internal_nodes as f64)
    }

    /// Mean depth of the leaves, roots at depth 1 (Fig. 14); `None` for an empty forest.
    pub fn avg_leaf_depth(&self) -> Option<f64> {
        (self.leaves > 0).then(|| self.leaf_depth_sum as f64 / self.leaves as f64)
    }
}

impl std::ops::AddAssign for KipfStats {
    fn add_assign(&mut self, o: KipfStats) {
        self.nodes += o.nodes;
        self.internal_nodes += o.internal_nodes;
        self.child_edges += o.child_edges;
        self.leaves += o.leaves;
        self.leaf_depth_sum += o.leaf_depth_sum;
    }
}

impl std::ops::Add for KipfStats {
    type Output = KipfStats;
    fn add(mut self, o: KipfStats) -> KipfStats {
        self += o;
        self
    }
}

impl std::iter::Sum for KipfStats {
    fn sum<I: Iterator<Item = KipfStats>>(iter: I) -> KipfStats {
        iter.fold(KipfStats::default(), |a, b| a + b)
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
    /// `file:line` from DWARF, when present.
    pub line: Option<String>,
    pub loop_header: bool,
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
}

/// Why a profile file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a pathprof profile")]
    Json(#[from] serde_json::Error),
    #[error("not a pathprof profile (format is {0:?})")]
    Format(String),
    #[error("profile version {0} is not supported (this pathprof reads version {VERSION})")]
    Version(u32),
    #[error("not a pathprof profile (nested more than {MAX_DEPTH} levels deep)")]
    TooDeep,
}

/// Deepest nesting of arrays and objects read: a k-IPF of k = 64 nests about 135 levels deep, and
/// JSON's own recursion limit of 128 would refuse it.
const MAX_DEPTH: usize = 256;

/// The deepest nesting of arrays and objects in `text`, strings skipped.
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

impl Profile {
    /// Parses and checks a profile.
    pub fn from_json(text: &str) -> Result<Profile, ReadError> {
        if nesting_depth(text) > MAX_DEPTH {
            return Err(ReadError::TooDeep);
        }
        let mut de = serde_json::Deserializer::from_str(text);
        de.disable_recursion_limit();
        let value = serde_json::Value::deserialize(&mut de)?;
        de.end()?;
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            other => return Err(ReadError::Format(other.unwrap_or("missing").to_string())),
        }
        match value.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v == VERSION as u64 => {}
            other => return Err(ReadError::Version(other.unwrap_or(0) as u32)),
        }
        Ok(serde_json::from_value(value)?)
    }

    pub fn to_json(&self) -> String {
        // k-iteration path forests can have millions of nodes: such profiles are written compact.
        if self.functions.iter().any(|f| f.kipf.is_some()) {
            serde_json::to_string(self).expect("profiles always serialize")
        } else {
            serde_json::to_string_pretty(self).expect("profiles always serialize")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: u64, count: u64, children: Vec<KipfNodeProfile>) -> KipfNodeProfile {
        KipfNodeProfile { path: U64(path), count: U64(count), children }
    }

    /// The 3-IPF of one activation running paths E V O V O V O V O V O X (E = 0, V = 1, O = 2, X = 3).
    fn loop_forest() -> KipfProfile {
        KipfProfile {
            k: 3,
            roots: vec![
                node(0, 1, vec![node(1, 1, vec![node(2, 1, vec![])])]),
                node(1, 5, vec![node(2, 5, vec![node(1, 4, vec![]), node(3, 1, vec![])])]),
                node(2, 5, vec![node(1, 4, vec![node(2, 4, vec![])]), node(3, 1, vec![])]),
                node(3, 1, vec![]),
            ],
        }
    }

    #[test]
    fn nodes_are_visited_parents_first_with_their_sequences() {
        let mut seen = Vec::new();
        loop_forest().for_each_node(|seq, n| seen.push((seq.iter().map(|p| p.0).collect::<Vec<_>>(), n.count.0)));
        let expected: Vec<(Vec<u64>, u64)> = vec![
            (vec![0], 1),
            (vec![0, 1], 1),
            (vec![0, 1, 2], 1),
            (vec![1], 5),
            (vec![1, 2], 5),
            (vec![1, 2, 1], 4),
            (vec![1, 2, 3], 1),
            (vec![2], 5),
            (vec![2, 1], 4),
            (vec![2, 1, 2], 4),
            (vec![2, 3], 1),
            (vec![3], 1),
        ];
        assert_eq!(seen, expected);
    }

    #[test]
    fn stats_of_a_hand_built_forest() {
        let s = loop_forest().stats();
        // Internal: E, EV, V, VO, O, OV; leaves: EVO, VOV, VOX, OVO (depth 3), OX (2), X (1).
        assert_eq!(s, KipfStats { nodes: 12, internal_nodes: 6, child_edges: 8, leaves: 6, leaf_depth_sum: 15 });
        assert_eq!(s.roots(), 4);
        assert!((s.avg_degree().unwrap() - 8.0 / 6.0).abs() < 1e-12);
        assert!((s.avg_leaf_depth().unwrap() - 2.5).abs() < 1e-12);

        let single = KipfProfile { k: 1, roots: vec![node(7, 3, vec![]), node(8, 1, vec![])] }.stats();
        assert_eq!(single, KipfStats { nodes: 2, internal_nodes: 0, child_edges: 0, leaves: 2, leaf_depth_sum: 2 });
        assert_eq!(single.avg_degree(), None);
        assert_eq!(single.avg_leaf_depth(), Some(1.0));

        let empty = KipfProfile { k: 2, roots: vec![] }.stats();
        assert_eq!(empty, KipfStats::default());
        assert_eq!((empty.avg_degree(), empty.avg_leaf_depth()), (None, None));

        let total: KipfStats = [s, single, empty].into_iter().sum();
        assert_eq!(total, s + single);
        assert_eq!(total, KipfStats { nodes: 14, internal_nodes: 6, child_edges: 8, leaves: 8, leaf_depth_sum: 17 });
        assert_eq!(total.roots(), 6);
        assert!((total.avg_leaf_depth().unwrap() - 17.0 / 8.0).abs() < 1e-12);
    }
}

#[cfg(test)]
mod depth_tests {
    use super::*;

    #[test]
    fn nesting_depth_skips_strings() {
        assert_eq!(nesting_depth(r#"{"a": [1, {"b": "]]}}[[\"["}]}"#), 3);
        assert_eq!(nesting_depth("[]"), 1);
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(matches!(Profile::from_json(&deep), Err(ReadError::TooDeep)));
    }
}
