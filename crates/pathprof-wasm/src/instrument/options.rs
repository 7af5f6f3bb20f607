//! What the instrumenter is asked to do ([`InstrumentOptions`]), and what it gives back
//! ([`Instrumented`]).

use super::sink::SinkKind;
use crate::abi::HostCalls;
use crate::branches::FuncBranches;
use crate::events::EventSet;
use crate::map::ProfileMap;
use pathprof_core::profile::PathCount;
use pathprof_core::supergraph::InterestingPath;
use pathprof_core::PlanOptions;
use std::collections::{HashMap, HashSet};

/// Instrumentation choices.
#[derive(Clone, Debug)]
pub struct InstrumentOptions {
    /// What path ends do: the only choice that differs between profiling modes.
    pub sink: SinkKind,
    /// Path planning. `loop_cut` is always [`LoopCut::Headers`](pathprof_core::LoopCut::Headers): a path ends wherever a loop header
    /// or cut block is entered, which is where the probes count it ([`LoopCut::BackEdges`](pathprof_core::LoopCut::BackEdges) would need
    /// the count on the back edges themselves, and is replaced). A `max_paths` below `u64::MAX` is a
    /// budget: a function that no cut brings within it is planned without it.
    pub plan: PlanOptions,
    /// Functions with at most this many paths get a dense counter array.
    pub array_max_paths: u64,
    /// Total size of all counter arrays; functions beyond it are hash-counted.
    pub array_max_bytes: u64,
    /// Executed paths of a previous profile of the same module, by function index: their edge
    /// frequencies replace the static estimate for the spanning tree and smart numbering.
    pub edge_profile: HashMap<u32, Vec<PathCount>>,
    /// Count a loop's only path around in a local (see [`loops`](super::loops)).
    pub loop_counters: bool,
    /// For the sink that counts interesting paths apart (preferential counting): the interesting
    /// paths of every function (by index), as a profile describes them; their Ball–Larus IDs are
    /// found from their endpoints and blocks.
    pub interesting: HashMap<u32, Vec<PathCount>>,
    /// For the supergraph sink (mode `ippp`): the paths of every function (by index) that the
    /// interesting segments take, with the heads of their calls in those segments; their
    /// supergraph paths count in compact slots.
    pub interesting_segments: HashMap<u32, Vec<InterestingPath>>,
    /// The events to count [EVT23]: every block of the map gets its event vector, and the event
    /// sinks (path decoding, direct counting) count them. Required by those sinks.
    pub events: Option<EventSet>,
    /// How the module calls its host function: an import (the default), or a table of its own,
    /// for a module inside a component.
    pub host_calls: HostCalls,
    /// With a sampling sink that has a buffer: every function also runs as a copy without probes
    /// while the host's flag is clear ([`switch`](super::switch), [AR01]); without (the default),
    /// only simple loops do.
    pub function_copies: bool,
    /// Instrument these functions only; the others are left as they were, for the reason given
    /// (as an adaptive VM instruments only the methods it optimizes [PEP05 §3.4]).
    pub only: Option<OnlyFunctions>,
}

/// The functions to instrument, by index, and why the others are left alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnlyFunctions {
    pub functions: HashSet<u32>,
    pub reason: String,
}

impl Default for InstrumentOptions {
    fn default() -> Self {
        InstrumentOptions {
            sink: SinkKind::Count,
            plan: PlanOptions::default(),
            array_max_paths: 1 << 14,
            array_max_bytes: 256 << 20,
            edge_profile: HashMap::new(),
            loop_counters: true,
            interesting: HashMap::new(),
            interesting_segments: HashMap::new(),
            events: None,
            function_copies: false,
            host_calls: HostCalls::Import,
            only: None,
        }
    }
}

impl InstrumentOptions {
    /// The default options with path ends recorded by `sink`.
    pub fn with_sink(sink: SinkKind) -> InstrumentOptions {
        InstrumentOptions { sink, ..InstrumentOptions::default() }
    }
}

/// An instrumented module and its map.
pub struct Instrumented {
    pub bytes: Vec<u8>,
    pub map: ProfileMap,
    /// Size in bytes of the profiler's memory (when the map names its export).
    pub memory_bytes: u64,
    /// With [`HostCalls::Table`], the export name of the table of the host function (when the
    /// module calls one).
    pub hooks_export: Option<String>,
    /// With a sink that traces branches (for the hardware path profiler), how every edge of each
    /// defined function is taken, by defined index (`None` for a function left alone, and for
    /// every function with the other sinks).
    pub branches: Vec<Option<FuncBranches>>,
    /// What was wrong with the module but did not keep it from being instrumented (a malformed name
    /// section), for the user to hear of.
    pub warnings: Vec<String>,
}
