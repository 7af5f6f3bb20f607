//! How a run was profiled: [`ProfileMode`], one variant per profiling mode, each with the facts
//! that mode adds to the profile, and [`CounterKind`], where a function's paths were recorded (which
//! the mode decides).

use super::U64;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

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
    /// A mode defined outside pathprof, registered by a program that uses it as a library, with
    /// what it measured as JSON.
    Extension(Extension),
}

/// The profile of a mode defined outside pathprof: its name (none of [`ProfileMode::BUILT_IN`]) and
/// what it measured, as the mode writes it (the profile's `mode_facts`).
#[derive(Clone, Debug, PartialEq)]
pub struct Extension {
    pub name: String,
    pub facts: serde_json::Value,
}

impl ProfileMode {
    /// The names of the modes defined here, which no extension takes.
    pub const BUILT_IN: [&str; 6] = ["none", "bl", "pep", "kbl", "ppp", "events"];

    /// The mode's name in the profile's `mode` field.
    pub fn name(&self) -> &str {
        match self {
            ProfileMode::None => "none",
            ProfileMode::Bl => "bl",
            ProfileMode::Pep(_) => "pep",
            ProfileMode::Kbl(_) => "kbl",
            ProfileMode::Ppp(_) => "ppp",
            ProfileMode::Events(_) => "events",
            ProfileMode::Extension(x) => &x.name,
        }
    }

    /// Whether the run had probes: every mode but `none`.
    pub fn has_probes(&self) -> bool {
        match self {
            ProfileMode::None => false,
            ProfileMode::Bl
            | ProfileMode::Pep(_)
            | ProfileMode::Kbl(_)
            | ProfileMode::Ppp(_)
            | ProfileMode::Events(_)
            | ProfileMode::Extension(_) => true,
        }
    }

    /// Whether the profile lists the paths that ran: not without probes, nor for events counted
    /// without paths (`pd` adds each path's events at its end, `dec` counts none).
    pub fn lists_paths(&self) -> bool {
        match self {
            ProfileMode::None => false,
            ProfileMode::Events(e) => e.strategy == EventStrategy::Pc,
            ProfileMode::Bl
            | ProfileMode::Pep(_)
            | ProfileMode::Kbl(_)
            | ProfileMode::Ppp(_)
            | ProfileMode::Extension(_) => true,
        }
    }

    pub fn sampling(&self) -> Option<&SamplingInfo> {
        match self {
            ProfileMode::Pep(s) => Some(s),
            ProfileMode::None
            | ProfileMode::Bl
            | ProfileMode::Kbl(_)
            | ProfileMode::Ppp(_)
            | ProfileMode::Events(_)
            | ProfileMode::Extension(_) => None,
        }
    }

    pub fn kbl(&self) -> Option<&KblInfo> {
        match self {
            ProfileMode::Kbl(k) => Some(k),
            ProfileMode::None
            | ProfileMode::Bl
            | ProfileMode::Pep(_)
            | ProfileMode::Ppp(_)
            | ProfileMode::Events(_)
            | ProfileMode::Extension(_) => None,
        }
    }

    pub fn ppp(&self) -> Option<&PppInfo> {
        match self {
            ProfileMode::Ppp(p) => Some(p),
            ProfileMode::None
            | ProfileMode::Bl
            | ProfileMode::Pep(_)
            | ProfileMode::Kbl(_)
            | ProfileMode::Events(_)
            | ProfileMode::Extension(_) => None,
        }
    }

    pub fn events(&self) -> Option<&EventsInfo> {
        match self {
            ProfileMode::Events(e) => Some(e),
            ProfileMode::None
            | ProfileMode::Bl
            | ProfileMode::Pep(_)
            | ProfileMode::Kbl(_)
            | ProfileMode::Ppp(_)
            | ProfileMode::Extension(_) => None,
        }
    }
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
    /// Threads that folded the stream, each the trees of its share of the root paths (1 in profiles
    /// written before the field). The forest does not depend on it.
    #[serde(default = "one_thread")]
    pub fold_threads: usize,
    /// Bursty k-BLPP (`kbl:K:burst`) [KBL13 §6]: paths streamed only during bursts, so that the
    /// roots (the Ball–Larus counts) are exact and every deeper count is that of the sequences that
    /// ran during bursts, at most the exact count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bursts: Option<BurstInfo>,
}

fn one_thread() -> usize {
    1
}

/// How a bursty k-BLPP profile was taken: a burst of `ms` milliseconds opened every `every_ms`
/// (one burst for the whole run when `ms` is at least `every_ms`), `opened` of them during the
/// run, in which `streamed_path_ends` of the run's `path_ends` were streamed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BurstInfo {
    pub ms: f64,
    pub every_ms: f64,
    pub opened: U64,
    pub streamed_path_ends: U64,
    pub path_ends: U64,
}

impl BurstInfo {
    /// The share of path ends streamed.
    pub fn streamed_share(&self) -> f64 {
        self.streamed_path_ends.0 as f64 / self.path_ends.0.max(1) as f64
    }
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
    /// How the interesting paths were chosen from those profiles' executed paths (every one of
    /// them in profiles written before the field).
    #[serde(default)]
    pub chosen_by: InterestingRule,
    /// The share of those profiles' path executions that the interesting paths carried (absent in
    /// profiles written before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_share: Option<f64>,
}

/// How the interesting paths of preferential profiling are chosen from the paths that ran in the
/// profiles given (a test suite's runs, whose union they take) [PPP07 §3.1, §3.5].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "rule")]
pub enum InterestingRule {
    /// Every path that ran in any of them.
    #[default]
    Executed,
    /// The hottest paths, their counts summed over the profiles, as few as carry `share` of all
    /// their executions.
    Coverage { share: f64 },
    /// The `per_function` hottest paths of each function.
    Top { per_function: u32 },
}

impl std::fmt::Display for InterestingRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InterestingRule::Executed => f.write_str("all that ran"),
            InterestingRule::Coverage { share } => {
                write!(f, "the hottest covering {}% of the executions", 100.0 * share)
            }
            InterestingRule::Top { per_function } => write!(f, "the {per_function} hottest of each function"),
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
