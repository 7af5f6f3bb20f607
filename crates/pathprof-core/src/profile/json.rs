//! The JSON form of a profile (docs/profile-format.md, version 3).
//!
//! The typed model is written through borrowed views that lay out the documented fields, and read
//! through plain records of those fields, which are then checked: a profile whose fields contradict
//! one another (a `pep` profile without its `sampling` object, a skipped function with paths) is
//! refused rather than read into a state the model does not admit.

use super::*;

/// Value of the `format` field.
pub const FORMAT: &str = "pathprof-profile";
/// Value of the `version` field written.
pub const VERSION: u32 = 4;
/// The versions read: version 3 lacks exception ends and landings, version 2 mode `events` and its
/// fields too, version 1 mode `ppp` too, and all read as they are.
const READ_VERSIONS: [u32; 4] = [1, 2, 3, 4];

/// Why a profile file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a pathprof profile")]
    Json(#[from] serde_json::Error),
    #[error("not a pathprof profile (format is {0:?})")]
    Format(String),
    #[error("profile version {0} is not supported (this pathprof reads versions 1 to 3)")]
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
        // The format and version first, the rest skipped without being kept; then the profile
        // itself, straight from the text (a tree of JSON values would take ten times its size).
        let header = Self::parse::<Header>(text).or_else(|e| match e.classify() {
            serde_json::error::Category::Data => Ok(Header::default()),
            _ => Err(e),
        })?;
        match header.format.as_ref().and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            other => return Err(ReadError::Format(other.unwrap_or("missing").to_string())),
        }
        match header.version.as_ref().and_then(|v| v.as_u64()) {
            Some(v) if READ_VERSIONS.iter().any(|&r| u64::from(r) == v) => {}
            other => return Err(ReadError::Version(other.unwrap_or(0) as u32)),
        }
        Ok(Self::parse::<Profile>(text)?)
    }

    /// `text` as a `T`, nested as deep as it is (its depth is checked beforehand).
    fn parse<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        de.disable_recursion_limit();
        let value = T::deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }

    /// The profile as JSON: the top level, every function and every field of a function on lines of
    /// their own, and what a field holds (blocks, paths, edges, forests) on its line, so that the
    /// file reads by function and stays as small as compact JSON.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Layered::new(3));
        self.serialize(&mut ser).expect("profiles always serialize");
        out.push(b'\n');
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }
}

/// The fields of a profile that say what it is; any others are skipped.
#[derive(Default, Deserialize)]
struct Header {
    #[serde(default)]
    format: Option<serde_json::Value>,
    #[serde(default)]
    version: Option<serde_json::Value>,
}

/// A JSON layout indented down to `levels` levels of nesting and compact below.
struct Layered {
    levels: usize,
    depth: usize,
    has_value: bool,
}

impl Layered {
    fn new(levels: usize) -> Layered {
        Layered { levels, depth: 0, has_value: false }
    }

    fn begin<W: ?Sized + std::io::Write>(&mut self, w: &mut W, open: &[u8]) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(open)
    }

    fn end<W: ?Sized + std::io::Write>(&mut self, w: &mut W, close: &[u8]) -> std::io::Result<()> {
        let indented = self.depth <= self.levels;
        self.depth -= 1;
        if indented && self.has_value {
            self.newline(w)?;
        }
        w.write_all(close)
    }

    fn item<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        if self.depth <= self.levels {
            self.newline(w)?;
        }
        Ok(())
    }

    fn newline<W: ?Sized + std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for Layered {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.begin(w, b"[")
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.end(w, b"]")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.begin(w, b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.end(w, b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> std::io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(if self.depth <= self.levels { b": " } else { b":" })
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// The fields of a profile, as written.
#[derive(Serialize)]
struct ProfileOut<'a> {
    format: &'static str,
    version: u32,
    module: &'a ModuleInfo,
    mode: &'static str,
    args: &'a [String],
    wall_seconds: f64,
    bench_region_seconds: Option<f64>,
    instrumentation_seconds: Option<f64>,
    exit_code: i32,
    trap: Option<&'a str>,
    open_activations_at_exit: u64,
    runs: u64,
    path_executions: U64,
    sampling: Option<&'a SamplingInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kbl: Option<&'a KblInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ppp: Option<&'a PppInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_counting: Option<EventCounting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<&'a EventCounts>,
    functions: &'a [FunctionProfile],
}

/// Event counts, which JSON leaves unordered, in the order of the events `names`: each named once.
fn in_order(names: &[String], counts: EventCounts) -> Result<EventCounts, String> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let value = counts.get(name).ok_or_else(|| format!("event counts lack event {name:?}"))?;
        out.push((name.clone(), U64(value)));
    }
    if counts.0.len() != out.len() {
        return Err("event counts name events the profile does not count".to_string());
    }
    Ok(EventCounts(out))
}

/// How the events of an `events` profile were counted: the `event_counting` object.
#[derive(Serialize, Deserialize)]
struct EventCounting {
    strategy: EventStrategy,
    cut: PathCut,
    names: Vec<String>,
    alloc_functions: Vec<String>,
    user_events: Vec<UserEvent>,
    undercount_bound: Option<EventCounts>,
    overcount_bound: Option<EventCounts>,
}

#[derive(Serialize, Deserialize)]
struct UserEvent {
    name: String,
    operators: Vec<String>,
}

impl EventCounting {
    fn of(e: &EventsInfo) -> EventCounting {
        EventCounting {
            strategy: e.strategy,
            cut: e.cut,
            names: e.names.clone(),
            alloc_functions: e.alloc_functions.clone(),
            user_events: e
                .user_events
                .iter()
                .map(|(name, ops)| UserEvent { name: name.clone(), operators: ops.clone() })
                .collect(),
            undercount_bound: e.undercount_bound.clone(),
            overcount_bound: e.overcount_bound.clone(),
        }
    }

    /// The mode's facts, with its totals, every set of counts in the order of the events.
    fn into_info(mut self, totals: EventCounts) -> Result<EventsInfo, String> {
        let totals = in_order(&self.names, totals)?;
        self.undercount_bound = self.undercount_bound.take().map(|c| in_order(&self.names, c)).transpose()?;
        self.overcount_bound = self.overcount_bound.take().map(|c| in_order(&self.names, c)).transpose()?;
        Ok(EventsInfo {
            strategy: self.strategy,
            cut: self.cut,
            names: self.names,
            alloc_functions: self.alloc_functions,
            user_events: self.user_events.into_iter().map(|u| (u.name, u.operators)).collect(),
            totals,
            undercount_bound: self.undercount_bound,
            overcount_bound: self.overcount_bound,
        })
    }
}

impl Serialize for Profile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ProfileOut {
            format: FORMAT,
            version: VERSION,
            module: &self.module,
            mode: self.mode.name(),
            args: &self.args,
            wall_seconds: self.wall_seconds,
            bench_region_seconds: self.bench_region_seconds,
            instrumentation_seconds: self.instrumentation_seconds,
            exit_code: self.exit_code,
            trap: self.trap.as_deref(),
            open_activations_at_exit: self.open_activations_at_exit,
            runs: self.runs,
            path_executions: self.path_executions,
            sampling: self.mode.sampling(),
            kbl: self.mode.kbl(),
            ppp: self.mode.ppp(),
            event_counting: self.mode.events().map(EventCounting::of),
            events: self.mode.events().map(|e| &e.totals),
            functions: &self.functions,
        }
        .serialize(s)
    }
}

/// Profiles written before `runs` are of one run.
fn one_run() -> u64 {
    1
}

/// The fields of a profile, as read (`format` and `version` are checked before).
#[derive(Deserialize)]
struct ProfileIn {
    module: ModuleInfo,
    mode: String,
    args: Vec<String>,
    wall_seconds: f64,
    bench_region_seconds: Option<f64>,
    instrumentation_seconds: Option<f64>,
    exit_code: i32,
    trap: Option<String>,
    open_activations_at_exit: u64,
    #[serde(default = "one_run")]
    runs: u64,
    path_executions: U64,
    #[serde(default)]
    sampling: Option<SamplingInfo>,
    #[serde(default)]
    kbl: Option<KblInfo>,
    #[serde(default)]
    ppp: Option<PppInfo>,
    #[serde(default)]
    event_counting: Option<EventCounting>,
    #[serde(default)]
    events: Option<EventCounts>,
    functions: Vec<FunctionProfile>,
}

impl<'de> Deserialize<'de> for Profile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let p = ProfileIn::deserialize(d)?;
        let events = match (p.event_counting, p.events) {
            (Some(counting), Some(totals)) => Some(counting.into_info(totals).map_err(serde::de::Error::custom)?),
            (None, None) => None,
            _ => return Err(serde::de::Error::custom("an events profile needs both `event_counting` and `events`")),
        };
        let mode = match (p.mode.as_str(), p.sampling, p.kbl, p.ppp, events) {
            ("none", None, None, None, None) => ProfileMode::None,
            ("bl", None, None, None, None) => ProfileMode::Bl,
            ("pep", Some(s), None, None, None) => ProfileMode::Pep(s),
            ("kbl", None, Some(k), None, None) => ProfileMode::Kbl(k),
            ("ppp", None, None, Some(i), None) => ProfileMode::Ppp(i),
            ("events", None, None, None, Some(e)) => ProfileMode::Events(e),
            ("pep", None, ..) => return Err(serde::de::Error::custom("a pep profile needs its `sampling` object")),
            ("kbl", _, None, ..) => return Err(serde::de::Error::custom("a kbl profile needs its `kbl` object")),
            ("ppp", _, _, None, _) => return Err(serde::de::Error::custom("a ppp profile needs its `ppp` object")),
            ("events", _, _, _, None) => {
                return Err(serde::de::Error::custom("an events profile needs its `event_counting` and `events`"))
            }
            (m @ ("none" | "bl" | "pep" | "kbl" | "ppp" | "events"), ..) => {
                return Err(serde::de::Error::custom(format!(
                    "a {m} profile has another mode's `sampling`, `kbl`, `ppp` or `event_counting`"
                )))
            }
            (other, ..) => return Err(serde::de::Error::custom(format!("unknown mode {other:?}"))),
        };
        let mut functions = p.functions;
        for f in &mut functions {
            let Some(profile) = f.profiled_mut() else { continue };
            let Some(counts) = profile.events.take() else { continue };
            let Some(e) = mode.events() else {
                return Err(serde::de::Error::custom(format!("function {} has events in a {mode} profile", f.index)));
            };
            profile.events = Some(in_order(&e.names, counts).map_err(serde::de::Error::custom)?);
        }
        Ok(Profile {
            module: p.module,
            mode,
            args: p.args,
            wall_seconds: p.wall_seconds,
            bench_region_seconds: p.bench_region_seconds,
            instrumentation_seconds: p.instrumentation_seconds,
            exit_code: p.exit_code,
            trap: p.trap,
            open_activations_at_exit: p.open_activations_at_exit,
            runs: p.runs,
            path_executions: p.path_executions,
            functions,
        })
    }
}

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

impl<'de> Deserialize<'de> for FunctionProfile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let f = FunctionIn::deserialize(d)?;
        let state = if f.instrumented {
            let counters = f
                .counters
                .ok_or_else(|| D::Error::custom(format!("instrumented function {} has no `counters`", f.index)))?;
            let blocks = f.blocks.len();
            if let Some(p) = f.paths.iter().find(|p| p.blocks.iter().any(|&b| b as usize >= blocks)) {
                return Err(D::Error::custom(format!(
                    "path {} of function {} goes through a block it does not list",
                    p.id.0, f.index
                )));
            }
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

#[cfg(test)]
mod tests {

    #[test]
    fn profiles_are_written_a_field_per_line_and_compact_below() {
        let p = profile(ProfileMode::Bl, vec![instrumented(2, CounterKind::Array)]);
        let text = p.to_json();
        let compact = serde_json::to_string(&p).unwrap();
        let layered: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(layered, serde_json::from_str::<serde_json::Value>(&compact).unwrap());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "{");
        assert!(lines.contains(&"  \"version\": 4,"), "{text}");
        assert!(lines.contains(&"  \"functions\": ["), "{text}");
        assert!(lines.contains(&"    {"), "{text}");
        // A function's blocks, paths and edges take a line each.
        for field in ["blocks", "paths", "edges"] {
            let line = lines.iter().find(|l| l.starts_with(&format!("      \"{field}\": ["))).unwrap();
            assert!(line.ends_with("],") || line.ends_with(']'), "{line}");
        }
        assert!(text.ends_with("}\n"));
        assert!(text.len() < compact.len() + 40 * lines.len(), "as small as compact JSON but for the indents");
    }

    use super::*;

    #[test]
    fn nesting_depth_skips_strings() {
        assert_eq!(nesting_depth(r#"{"a": [1, {"b": "]]}}[[\"["}]}"#), 3);
        assert_eq!(nesting_depth("[]"), 1);
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(matches!(Profile::from_json(&deep), Err(ReadError::TooDeep)));
    }

    fn profile(mode: ProfileMode, functions: Vec<FunctionProfile>) -> Profile {
        Profile {
            module: ModuleInfo {
                path: "m.wasm".into(),
                sha256: "00".into(),
                size: 8,
                code_section_size: 0,
                core_module: None,
            },
            mode,
            args: vec!["m.wasm".into()],
            wall_seconds: 0.5,
            bench_region_seconds: None,
            instrumentation_seconds: Some(0.1),
            exit_code: 0,
            trap: None,
            open_activations_at_exit: 0,
            runs: 1,
            path_executions: U64(3),
            functions,
        }
    }

    fn instrumented(index: u32, counters: CounterKind) -> FunctionProfile {
        FunctionProfile {
            index,
            name: Some("f".into()),
            blocks: vec![BlockInfo {
                id: 0,
                offset: 10,
                end: 12,
                line: None,
                loop_header: false,
                landing: false,
                ops: 3,
                events: vec![],
            }],
            state: FunctionState::Instrumented(PathProfile {
                num_paths: U64(1),
                counters,
                cut_blocks: vec![],
                paths: vec![PathCount {
                    id: U64(0),
                    count: U64(3),
                    start: Endpoint::Entry,
                    end: Endpoint::Exit,
                    blocks: vec![0],
                    branches: 0,
                    interesting: None,
                }],
                edges: vec![EdgeCount { from: 0, to: Endpoint::Exit, count: U64(3) }],
                increments: 0,
                increments_executed: U64(0),
                kipf: None,
                ppp: None,
                events: None,
            }),
        }
    }

    fn skipped(index: u32) -> FunctionProfile {
        FunctionProfile {
            index,
            name: None,
            blocks: vec![],
            state: FunctionState::Skipped { reason: "uses exception handling".into() },
        }
    }

    #[test]
    fn every_mode_and_function_state_reads_back() {
        let sampling = SamplingInfo {
            samples: 64,
            stride: 17,
            every: None,
            tick_ms: 0.25,
            ticks: 9,
            samples_taken: 3,
            function_copies: true,
        };
        let kbl = KblInfo {
            k: 4,
            stream_items: U64(5),
            ksf_nodes: U64(2),
            ksf_node_bytes: 16,
            sibling_scans: U64(1),
            max_nodes: None,
            dropped: U64(0),
            stream_handovers: U64(3),
            stream_wait_seconds: 0.5,
        };
        for (mode, counters) in [
            (ProfileMode::Bl, CounterKind::Array),
            (ProfileMode::Bl, CounterKind::Hash),
            (ProfileMode::Pep(sampling), CounterKind::Sampled),
            (ProfileMode::Kbl(kbl), CounterKind::Stream),
        ] {
            let p = profile(mode, vec![skipped(1), instrumented(2, counters)]);
            let text = p.to_json();
            assert_eq!(Profile::from_json(&text).unwrap(), p, "{text}");
        }
        let none = profile(ProfileMode::None, vec![]);
        assert_eq!(Profile::from_json(&none.to_json()).unwrap(), none);
        let info = PppInfo {
            interesting_from: vec!["test.json".into()],
            interesting: U64(1),
            residual_paths: U64(1),
            residual_executions: U64(4),
        };
        let mut f = instrumented(2, CounterKind::Ppp);
        if let FunctionState::Instrumented(p) = &mut f.state {
            p.paths[0].interesting = Some(false);
            p.ppp = Some(Box::new(PppFunction {
                interesting: 1,
                range: 1,
                delta: Some(1.0),
                residual_paths: 1,
                residual_executions: U64(3),
                untested_edges: 1,
                untested: vec![EdgeKey { from: 0, to: Endpoint::Exit }],
            }));
        }
        let ppp = profile(ProfileMode::Ppp(info), vec![f]);
        assert_eq!(Profile::from_json(&ppp.to_json()).unwrap(), ppp);
        let events = profile(ProfileMode::Events(events_info()), vec![skipped(1), with_events(2)]);
        let text = events.to_json();
        assert_eq!(Profile::from_json(&text).unwrap(), events, "{text}");
        // Event counts are objects in the order of the events.
        assert!(text.contains("\"events\": {\n    \"load\": 5,\n    \"alloc\": 1\n  }"), "{text}");
    }

    fn events_info() -> EventsInfo {
        let names = vec!["load".to_string(), "alloc".to_string()];
        EventsInfo {
            strategy: EventStrategy::Pd,
            cut: PathCut::Merges,
            totals: EventCounts::new(&names, &[5, 1]),
            undercount_bound: Some(EventCounts::new(&names, &[2, 0])),
            overcount_bound: None,
            names,
            alloc_functions: vec!["malloc".into()],
            user_events: vec![("adds".into(), vec!["i32.add".into()])],
        }
    }

    fn with_events(index: u32) -> FunctionProfile {
        let mut f = instrumented(index, CounterKind::Events);
        f.blocks[0].events = vec![5, 1];
        if let FunctionState::Instrumented(p) = &mut f.state {
            p.paths.clear();
            p.edges.clear();
            p.events = Some(EventCounts::new(&["load".into(), "alloc".into()], &[5, 1]));
        }
        f
    }

    #[test]
    fn events_profiles_name_their_events_in_order() {
        let text = profile(ProfileMode::Events(events_info()), vec![with_events(2)]).to_json();
        let edit = |from: &str, to: &str| {
            assert!(text.contains(from), "{from} in {text}");
            Profile::from_json(&text.replacen(from, to, 1)).unwrap_err().to_string()
        };
        // Totals that lack an event, or name one the profile does not count.
        assert!(edit("\"load\": 5,\n    \"alloc\"", "\"lode\": 5,\n    \"alloc\"").contains("not a pathprof"));
        assert!(edit("\"alloc\": 1\n  }", "\"alloc\": 1, \"x\": 2\n  }").contains("not a pathprof"));
        // Read in any order, they come back in the order of the events.
        let swapped = text.replacen("\"load\": 5,\n    \"alloc\": 1", "\"alloc\": 1,\n    \"load\": 5", 1);
        assert_ne!(swapped, text);
        assert_eq!(Profile::from_json(&swapped).unwrap().to_json(), text);
        // An events profile without its facts, or another mode with them.
        assert!(edit("\"mode\": \"events\"", "\"mode\": \"bl\"").contains("not a pathprof"));
        assert!(edit("\"event_counting\"", "\"event_countin\"").contains("not a pathprof"));
    }

    #[test]
    fn versions_1_to_3_read() {
        let p = profile(ProfileMode::Bl, vec![instrumented(2, CounterKind::Array)]);
        for old in [1, 2, 3] {
            let text = p.to_json().replacen("\"version\": 4", &format!("\"version\": {old}"), 1);
            assert!(text.contains(&format!("\"version\": {old}")));
            assert_eq!(Profile::from_json(&text).unwrap(), p);
        }
        let v5 = p.to_json().replacen("\"version\": 4", "\"version\": 5", 1);
        assert!(matches!(Profile::from_json(&v5), Err(ReadError::Version(5))));
    }

    #[test]
    fn contradictory_profiles_are_refused() {
        let text = profile(ProfileMode::Bl, vec![instrumented(2, CounterKind::Array)]).to_json();
        let edit = |from: &str, to: &str| {
            assert!(text.contains(from), "{from} in {text}");
            Profile::from_json(&text.replacen(from, to, 1)).unwrap_err().to_string()
        };
        assert!(edit("\"mode\": \"bl\"", "\"mode\": \"pep\"").contains("not a pathprof profile"));
        assert!(edit("\"mode\": \"bl\"", "\"mode\": \"fast\"").contains("not a pathprof profile"));
        assert!(edit("\"instrumented\": true", "\"instrumented\": false").contains("not a pathprof profile"));
        assert!(edit("\"counters\": \"array\"", "\"counters\": null").contains("not a pathprof profile"));
        assert!(edit("\"counters\": \"array\"", "\"counters\": \"tally\"").contains("not a pathprof profile"));
        // The counter kinds are spelt as documented.
        for kind in CounterKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.name()));
            assert!(include_str!("../../../../docs/profile-format.md").contains(&format!("`{json}`")), "{json}");
        }
    }
}
