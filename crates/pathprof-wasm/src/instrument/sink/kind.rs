//! The kind of sink a profiling mode asks for ([`SinkKind`]): what it needs of the instrumenter
//! (the profiler's words, imports, appended functions, a bound on paths, loop counters) and the
//! [`Sink`] it gives each function, with its counters taken from the layout.

use super::{
    burst, sample, stream, AppendedFunction, ArraySink, BurstCounts, BurstSink, DecodeSink, DirectSink, PppSink,
    SampleSink, Sink, StreamSink, SupergraphCounts, SupergraphSink, TableSink,
};
use crate::abi::{SampleBufferLayout, StreamLayout, TABLE_SLOTS, TABLE_SLOT_BYTES};
use crate::cfg::FuncCfg;
use crate::events::FunctionEvents;
use crate::instrument::layout::Layout;
use crate::instrument::registers::register_bits;
use crate::map::SinkLayout;
use pathprof_core::dag::DagEdgeKind;
use pathprof_core::ppp::PppPlan;
use pathprof_core::profile::{Endpoint, PathCount};
use pathprof_core::regen;
use pathprof_core::supergraph::Supergraph;
use pathprof_core::FunctionPlan;

/// How a module's path ends are recorded: what a profiling mode asks of the instrumenter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SinkKind {
    /// Exact counts: an array per function when it fits in the profiler's memory, the host's hash
    /// table otherwise.
    Count,
    /// Sampled path ends (PEP): with `buffer: Some(slots)`, samples go to a buffer of that many
    /// slots, which the host's timer thread drains, and no path end calls the host; without one,
    /// every path end calls the host while the flag is set (sampling every N-th path end).
    Sample { buffer: Option<u32> },
    /// The stream of path IDs of k-BLPP, drained by the host when full.
    Stream,
    /// Bursty k-BLPP: every path counted in an array, as [`SinkKind::Count`] counts it, and the
    /// stream of [`SinkKind::Stream`] written only while the host holds a burst open (the flag at
    /// [`SAMPLE_FLAG`](crate::abi::SAMPLE_FLAG)), each activation's window opened and closed at its
    /// path ends. A function whose paths do not fit an array counts them in a table, as `bl` does,
    /// the paths the table cannot hold written to the stream as counts; one whose table does not
    /// fit either streams every path, as with [`SinkKind::Stream`].
    Bursts,
    /// Exact counts with the interesting paths of [`InstrumentOptions::interesting`](crate::InstrumentOptions::interesting) in compact
    /// slots, checked against their Ball–Larus IDs, and the residual paths in the host's table. With
    /// `slots_everywhere`, every function with interesting and residual paths counts in slots, as in
    /// [PPP07 §3.3]; without, only those whose paths are too many for a dense array (that Ball–Larus
    /// counting would hash), the others counting every path densely as in `bl`, which costs less at a
    /// path end and tells interesting from residual paths as exactly, by their Ball–Larus IDs. A
    /// function whose paths are all interesting counts in an array either way, one with none in the
    /// host's table.
    Preferential { slots_everywhere: bool },
    /// Event counting by path decoding (`pd`) [EVT23 §4.2], for the events of
    /// [`InstrumentOptions::events`](crate::InstrumentOptions::events): a path end adds its path's event vector to the function's event
    /// counters. A function whose table of vectors does not fit in the profiler's memory counts its
    /// paths as [`SinkKind::Count`] does, its events computed from them after the run.
    Decode,
    /// Direct event counting (`dec`), the baseline [EVT23 §3.2]: no paths, and every stretch of
    /// straight-line code adds its events to the function's event counters.
    Direct,
    /// The stream of [`SinkKind::Stream`] from every function, each activation with its entry
    /// marker, none counted in an array. Planned with every block cut
    /// ([`ExtraCuts::Blocks`](pathprof_core::ExtraCuts)), each path is one block and the edge it
    /// leaves by: the stream is the program's branches in order, for the hardware path profiler's
    /// simulator (`hpp`).
    Trace,
    /// The stream of [`SinkKind::Stream`] from every function, none counted in an array, each
    /// activation with its entry marker, and a call marker ([`StreamItem::Call`](crate::abi::StreamItem))
    /// before every call: the host cuts each path into the subpaths between its calls and follows
    /// the calls into interprocedural path segments (`ips`) [PPP07 §3.4.1].
    Segments,
    /// Mode `ippp` (interprocedural path segments of `depth` calls, 1 to
    /// [`MAX_DEPTH`](pathprof_core::ips::MAX_DEPTH)) [PPP07 §3.4.3–3.4.5]: every function
    /// counts its *supergraph* paths — its Ball–Larus path and, for each call on it, the head of
    /// depth `depth − 1` of the activation the call entered (its first path, with its own calls'
    /// heads one depth less), which the callee hands back through words of the profiler's memory —
    /// exactly, in an array, a table or the host's table (see
    /// [`pathprof_core::supergraph`]). With interesting segments
    /// ([`InstrumentOptions::interesting_segments`](crate::InstrumentOptions::interesting_segments)),
    /// a function's interesting supergraph paths count in compact slots, checked against their
    /// supergraph IDs [PPP07 §3.4.5 with §3.3], and the others as before: in the functions whose
    /// supergraph paths the host would count (too many for an array, and their table too large
    /// for the profiler's memory), or, with `slots_everywhere`, in every function, its other paths
    /// then counted in a table (at depth 1 only).
    Supergraph { slots_everywhere: bool, depth: u8 },
}

impl SinkKind {
    /// The buffer layout of a sampling sink with a buffer.
    fn sample_buffer(self) -> Option<SampleBufferLayout> {
        match self {
            SinkKind::Sample { buffer } => buffer.map(SampleBufferLayout::new),
            SinkKind::Count
            | SinkKind::Stream
            | SinkKind::Bursts
            | SinkKind::Preferential { .. }
            | SinkKind::Decode
            | SinkKind::Direct
            | SinkKind::Trace
            | SinkKind::Segments
            | SinkKind::Supergraph { .. } => None,
        }
    }

    /// Why a function cannot have this sink before it is planned: the trace's simulator does not
    /// model exceptions caught within a frame (a branch within it; one that leaves a function is a
    /// return to it).
    pub(crate) fn refuses(self, fcfg: &FuncCfg) -> Option<String> {
        match self {
            SinkKind::Trace if !fcfg.cfg.landings().is_empty() => {
                Some("catches exceptions, which the hardware path profiler does not simulate".into())
            }
            SinkKind::Trace
            | SinkKind::Count
            | SinkKind::Sample { .. }
            | SinkKind::Stream
            | SinkKind::Bursts
            | SinkKind::Preferential { .. }
            | SinkKind::Decode
            | SinkKind::Direct
            | SinkKind::Segments
            | SinkKind::Supergraph { .. } => None,
        }
    }

    /// Most paths of a function with this sink: a streamed path ID has 32 bits (`function << 32 |
    /// path ID`), and more paths are cut, as `bl` cuts beyond 64 bits.
    pub(crate) fn max_paths(self) -> Option<u64> {
        match self {
            // A segment's steps name paths as streamed labels do (`ippp` counts `ips:1`'s segments).
            SinkKind::Stream
            | SinkKind::Bursts
            | SinkKind::Trace
            | SinkKind::Segments
            | SinkKind::Supergraph { .. } => Some(STREAM_MAX_PATHS),
            SinkKind::Count
            | SinkKind::Sample { .. }
            | SinkKind::Preferential { .. }
            | SinkKind::Decode
            | SinkKind::Direct => None,
        }
    }

    /// The preferential numbering of a function planned as `plan` whose interesting paths are
    /// `interesting`, for the sink that counts them apart; `array_max_paths` bounds its slots.
    pub(crate) fn preferential_plan(
        self,
        plan: &FunctionPlan,
        interesting: &[PathCount],
        array_max_paths: u64,
    ) -> Result<Option<PppPlan>, String> {
        match self {
            SinkKind::Preferential { .. } => {
                let ids = interesting_ids(plan, interesting);
                Ok(Some(PppPlan::build(plan, ids, array_max_paths).map_err(|e| e.to_string())?))
            }
            SinkKind::Count
            | SinkKind::Sample { .. }
            | SinkKind::Stream
            | SinkKind::Bursts
            | SinkKind::Decode
            | SinkKind::Direct
            | SinkKind::Trace
            | SinkKind::Segments
            | SinkKind::Supergraph { .. } => Ok(None),
        }
    }

    /// Whether a function planned as `plan` (with its preferential numbering `ppp`) counts in an
    /// array when it fits one, so that loop and run counters may add to it: in exact counts (and the
    /// path counts of decoding's fallback), in the counts of bursty k-BLPP (whose loop counters
    /// stream their paths lazily, see [`BurstSink`]), and in preferential counts when every path is
    /// interesting or slots are only for the functions too large for an array.
    pub(crate) fn counts_in_array(self, plan: &FunctionPlan, ppp: Option<&PppPlan>) -> bool {
        match (self, ppp) {
            (SinkKind::Count | SinkKind::Decode | SinkKind::Bursts, _) => true,
            (SinkKind::Preferential { slots_everywhere }, Some(ppp)) => ppp.covers(plan) || !slots_everywhere,
            (SinkKind::Preferential { .. }, None)
            | (
                SinkKind::Sample { .. }
                | SinkKind::Stream
                | SinkKind::Direct
                | SinkKind::Trace
                | SinkKind::Segments
                | SinkKind::Supergraph { .. },
                _,
            ) => false,
        }
    }

    /// Whether the instrumenter gives the branches of every function with this sink (for the
    /// hardware path profiler's simulator).
    pub(crate) fn traces_branches(self) -> bool {
        match self {
            SinkKind::Trace => true,
            SinkKind::Count
            | SinkKind::Sample { .. }
            | SinkKind::Stream
            | SinkKind::Bursts
            | SinkKind::Preferential { .. }
            | SinkKind::Decode
            | SinkKind::Direct
            | SinkKind::Segments
            | SinkKind::Supergraph { .. } => false,
        }
    }

    /// Whether path ends add their paths' event vectors, from a table of every path's vector.
    pub(crate) fn decodes_paths(self) -> bool {
        match self {
            SinkKind::Decode => true,
            SinkKind::Count
            | SinkKind::Sample { .. }
            | SinkKind::Stream
            | SinkKind::Bursts
            | SinkKind::Preferential { .. }
            | SinkKind::Direct
            | SinkKind::Trace
            | SinkKind::Segments
            | SinkKind::Supergraph { .. } => false,
        }
    }

    /// Bytes of the sink's own words at the start of the profiler's memory.
    pub(crate) fn header_bytes(self) -> u64 {
        match self {
            SinkKind::Count | SinkKind::Preferential { .. } | SinkKind::Decode | SinkKind::Direct => 0,
            // The head words, then the high keys of the ID a path end passes to the host.
            SinkKind::Supergraph { .. } => {
                u64::from(crate::abi::HIGH_KEYS) + 8 * u64::from(pathprof_core::supergraph::MAX_HIGH_WORDS)
            }
            SinkKind::Sample { buffer: None } => u64::from(crate::abi::SAMPLE_WORDS),
            SinkKind::Sample { buffer: Some(slots) } => SampleBufferLayout::new(slots).end(),
            SinkKind::Stream | SinkKind::Bursts | SinkKind::Trace | SinkKind::Segments => {
                StreamLayout::standard().end()
            }
        }
    }

    /// The sink of a function planned as `plan` (with its preferential numbering, events and
    /// supergraph when it has them), with the counters (and tables) it needs taken from `layout`;
    /// the reason the function cannot be instrumented with this kind of sink, when it cannot.
    pub(crate) fn assign(
        self,
        plan: &FunctionPlan,
        ppp: Option<&PppPlan>,
        events: Option<&FunctionEvents>,
        supergraph: Option<&Supergraph>,
        layout: &mut Layout,
    ) -> Result<Sink, String> {
        // A supergraph's paths are counted as a function's paths are.
        let n = supergraph.map_or_else(|| plan.num_paths(), |s| s.ids);
        let fits_array = layout.fits_array(n);
        let array = |layout: &mut Layout| ArraySink { offset: layout.take(8 * n) };
        // A table for the paths of a function too many for an array (at least two slots, so that
        // the hash keeps at least one bit), when it fits.
        let slots = n.checked_next_power_of_two().unwrap_or(u64::MAX).clamp(2, u64::from(TABLE_SLOTS));
        let table_bytes = slots * u64::from(TABLE_SLOT_BYTES);
        let table = |layout: &mut Layout| TableSink { offset: layout.take(table_bytes), slots: slots as u32 };
        // The table, or the host's.
        let hashed = |layout: &mut Layout| {
            if layout.fits(table_bytes) {
                Sink::Table(table(layout))
            } else {
                Sink::Hash
            }
        };
        Ok(match self {
            SinkKind::Preferential { slots_everywhere } => {
                let ppp = ppp.expect("preferential sinks are planned with their interesting paths");
                match &ppp.numbering {
                    _ if (ppp.covers(plan) || !slots_everywhere) && fits_array => Sink::Array(array(layout)),
                    _ if ppp.interesting.is_empty() => Sink::Hash,
                    Some(numbering) => PppSink::place(layout, &numbering.slots).map_or(Sink::Hash, Sink::Ppp),
                    None => Sink::Hash,
                }
            }
            SinkKind::Supergraph { slots_everywhere, .. } => {
                let s = supergraph.expect("supergraph sinks are planned with their supergraph");
                let numbering = (ppp.and_then(|p| p.numbering.as_ref())).filter(|n| n.interesting() > 0);
                // With slots everywhere, the interesting supergraph paths in slots and the others in
                // a table (or the host's).
                let everywhere = numbering.filter(|_| slots_everywhere).and_then(|n| PppSink::place(layout, &n.slots));
                if let Some(slots) = everywhere {
                    let counts = match layout.fits(table_bytes) {
                        true => SupergraphCounts::Table(table(layout)),
                        false => SupergraphCounts::Hash,
                    };
                    return Ok(Sink::Supergraph(SupergraphSink::new(s, counts, Some(slots))));
                }
                // The supergraph IDs in an array; else those below the paths (calls that add no
                // digit, or zeros) in an array and the others in a table; else all in a table; else
                // by the host, the interesting ones then in slots, as `ppp` counts them.
                let counts = if fits_array {
                    SupergraphCounts::Array(array(layout))
                } else if layout.fits_array(s.paths) {
                    let array = ArraySink { offset: layout.take(8 * s.paths) };
                    SupergraphCounts::Split { array, table: layout.fits(table_bytes).then(|| table(layout)) }
                } else if layout.fits(table_bytes) {
                    SupergraphCounts::Table(table(layout))
                } else {
                    SupergraphCounts::Hash
                };
                let hashed = matches!(counts, SupergraphCounts::Hash | SupergraphCounts::Split { table: None, .. });
                let slots = numbering.filter(|_| hashed).and_then(|n| PppSink::place(layout, &n.slots));
                Sink::Supergraph(SupergraphSink::new(s, counts, slots))
            }
            SinkKind::Count if fits_array => Sink::Array(array(layout)),
            SinkKind::Count => hashed(layout),
            SinkKind::Decode => {
                let events = events.expect("event sinks are planned with their events");
                let (mask, width) = (events.mask, u64::from(events.mask.count_ones()));
                match &events.rows {
                    Some(rows) if layout.fits(8 * width + layout.tables.len() as u64 + 8 * rows.len() as u64) => {
                        let table = layout.table(64, rows.iter().copied());
                        Sink::Decode(DecodeSink { counters: layout.take(8 * width), mask, table })
                    }
                    _ if fits_array => Sink::Array(array(layout)),
                    _ => hashed(layout),
                }
            }
            SinkKind::Direct => {
                let events = events.expect("event sinks are planned with their events");
                let mask = events.mask;
                Sink::Direct(DirectSink { counters: layout.take(8 * u64::from(mask.count_ones())), mask })
            }
            SinkKind::Sample { buffer } => Sink::Sample(SampleSink {
                buffer: buffer.map(SampleBufferLayout::new),
                wide: register_bits(plan) == 64,
            }),
            SinkKind::Stream | SinkKind::Bursts | SinkKind::Trace | SinkKind::Segments if register_bits(plan) == 64 => {
                return Err("more than 2^32 paths (streamed path IDs have 32 bits)".to_string())
            }
            SinkKind::Trace => {
                Sink::Stream(StreamSink { layout: StreamLayout::standard(), singles: None, calls: false })
            }
            SinkKind::Segments => {
                Sink::Stream(StreamSink { layout: StreamLayout::standard(), singles: None, calls: true })
            }
            // Activations that end one path have no sequences: an array is all they need.
            SinkKind::Bursts if fits_array && one_path_per_activation(plan) => Sink::Array(array(layout)),
            SinkKind::Bursts if fits_array => Sink::Burst(BurstSink { counts: BurstCounts::Array(array(layout)) }),
            // Too many paths for an array: a table, as `bl` counts them, when one fits.
            SinkKind::Bursts if layout.fits(table_bytes) => {
                Sink::Burst(BurstSink { counts: BurstCounts::Table(table(layout)) })
            }
            SinkKind::Stream | SinkKind::Bursts => {
                // An activation that ends one path has a k-IPF of roots only, its BL counts, which an
                // array counts without the stream or activation markers.
                if one_path_per_activation(plan) && fits_array {
                    Sink::Array(array(layout))
                } else {
                    // Activations that end one path (entry to exit) are counted in an array, when it
                    // fits.
                    Sink::Stream(StreamSink {
                        layout: StreamLayout::standard(),
                        singles: fits_array.then(|| array(layout)),
                        calls: false,
                    })
                }
            }
        })
    }

    /// The layout the map records; `calls_import` says whether some function's path ends call the
    /// host.
    pub(crate) fn layout(self, calls_import: bool) -> SinkLayout {
        match self {
            SinkKind::Count | SinkKind::Decode | SinkKind::Direct | SinkKind::Supergraph { .. } => {
                SinkLayout::Count { hash: calls_import }
            }
            SinkKind::Sample { .. } => {
                let buffer = self.sample_buffer();
                SinkLayout::Sample { buffer, wide: buffer.is_some() && calls_import }
            }
            SinkKind::Stream | SinkKind::Bursts | SinkKind::Trace | SinkKind::Segments => {
                SinkLayout::Stream(StreamLayout::standard())
            }
            SinkKind::Preferential { .. } => SinkLayout::Ppp { hash: calls_import },
        }
    }

    /// Data segments of the profiler's memory: `(offset, bytes)`.
    pub(crate) fn initial_data(self) -> Vec<(u32, Vec<u8>)> {
        match self {
            SinkKind::Stream | SinkKind::Bursts | SinkKind::Trace | SinkKind::Segments => stream::initial_data(),
            SinkKind::Count
            | SinkKind::Sample { .. }
            | SinkKind::Preferential { .. }
            | SinkKind::Decode
            | SinkKind::Direct
            | SinkKind::Supergraph { .. } => Vec::new(),
        }
    }

    /// The functions the sink appends to the module: with `loop_copies` (some function has them),
    /// the sampling sink's exit of loop copies; with bursts, when the module calls the host
    /// (`import`, as some function streams), the function that appends to the stream. `first_type`
    /// and `first_index` are the first type and function indices free for them; `memory` is the
    /// profiler's memory.
    pub(crate) fn appended_functions(
        self,
        loop_copies: bool,
        memory: u32,
        import: Option<u32>,
        first_type: u32,
        first_index: u32,
    ) -> Vec<AppendedFunction> {
        let body = match (self, self.sample_buffer(), import) {
            (_, Some(layout), _) if loop_copies => {
                (&sample::LOOP_COPY_EXIT_PARAMS[..], sample::loop_copy_exit(layout, memory))
            }
            (SinkKind::Bursts, _, Some(import)) => {
                (&burst::APPEND_PARAMS[..], burst::append_function(StreamLayout::standard(), memory, import))
            }
            _ => return Vec::new(),
        };
        vec![AppendedFunction { index: first_index, ty: first_type, params: body.0, body: body.1 }]
    }
}

/// Whether every activation of a function planned as `plan` ends one path (at an exit or by an
/// exception): it has no loops, cuts or landings.
fn one_path_per_activation(plan: &FunctionPlan) -> bool {
    plan.dag.edges.iter().all(|e| matches!(e.kind, DagEdgeKind::Real(_) | DagEdgeKind::Throw(_)))
}

/// Most paths of a function whose path ends stream their IDs: 32 bits of ID.
const STREAM_MAX_PATHS: u64 = 1 << 32;

/// The Ball–Larus IDs (under `plan`) of the paths of a profile: a path's own ID when it still
/// describes the same path (the profile was numbered alike), and otherwise every path with its
/// endpoints and blocks. Paths that ran no time and descriptions that match no path are left out.
fn interesting_ids(plan: &FunctionPlan, paths: &[PathCount]) -> Vec<u64> {
    /// Most paths one description may stand for (parallel edges).
    const MOST_PER_PATH: usize = 64;
    let point = Endpoint::point;
    let mut ids = Vec::new();
    for p in paths.iter().filter(|p| p.count.0 > 0) {
        let (start, end) = (point(p.start), point(p.end));
        let same = regen::regenerate(&plan.dag, &plan.numbering, p.id.0)
            .is_ok_and(|r| r.start == start && r.end == end && r.blocks == p.blocks);
        if same {
            ids.push(p.id.0);
        } else {
            ids.extend(regen::ids_of(&plan.dag, &plan.numbering, start, end, &p.blocks, MOST_PER_PATH));
        }
    }
    ids
}
