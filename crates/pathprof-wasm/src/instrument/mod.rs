//! The Ball–Larus instrumenter: rewrites a module with path probes [BL96, PEP05 §3.2].
//!
//! Every function with a supported body gets a path register `r` (a new local: `i32` when its paths
//! fit in 32 bits, `i64` otherwise) and code in four kinds of places, all taken from the
//! [`FunctionPlan`] (only chords of the spanning tree carry increments):
//!
//! * an edge taken by `br`, `return` or a fall-through gets `r += Inc(e)` just before the operator;
//! * `br_if` and `if` stay branch-free: `r += Inc(a)` before the operator, where `a` is the edge that
//!   does not lead into the next operator (`br_if`'s taken edge, `if`'s else edge), and
//!   `r += Inc(b) - Inc(a)` right after it, on the other edge `b`;
//! * `br_table` adds `Inc` from a table of increments in the profiler's memory, indexed by the
//!   clamped table index;
//! * at the start of a loop header or cut block, the path ends and a new one starts
//!   (`r = Inc(s→h)`), whichever edge led there.
//!
//! The body is wrapped in one `block` whose label replaces the function's: every exit (`return`,
//! branch to the function label, fall-through) becomes a branch to its end, where the path ends
//! once. Tail calls end the path before they leave.
//!
//! What a path end does is the [sink](sink)'s: the instrumenter is given a [`SinkKind`] (exact
//! counts, samples or a stream), which gives every function a [`Sink`] of its own; nothing else here
//! depends on it. The sinks' memory and imports are the [ABI](crate::abi)'s.
//!
//! The modules, in the order the work is done:
//!
//! * this one — the options, the per-function analyses (CFG, plan, loop counters; on all cores),
//!   the layout of the profiler's memory, and the whole rewrite;
//! * [`loops`] — loop and run counters: paths counted in locals while their loop runs;
//! * [`copies`] — loops that also run as a copy without probes, for sinks that want them;
//! * [`switch`] — whole functions that also run as a copy without probes, and where the two
//!   copies switch;
//! * [`walk`] — the walk over a body's operators that puts the code in its places;
//! * [`emit`] — the code of the path register and of counter words;
//! * [`sink`] — what a path end does, one file per sink;
//! * [`sections`] — the other sections, re-encoded with the profiler's import, memory, export, data
//!   and function added.
//!
//! The original operators are copied byte for byte between the places that get code: only `return`
//! (a branch to the wrapper's end) and, when the profiler adds an import, the operators that name a
//! function (`call`, `return_call`, `ref.func`, whose indices shift) are written anew. The input's
//! function bodies are validated while their CFGs are built. The result is not validated here: Wasmtime
//! validates it when it compiles it, and `pathprof instrument` with [`validate`](crate::module::validate)
//! before writing it. Custom sections pass through, except those that locate code by its offsets in
//! the original bodies: DWARF (`.debug_*`) and branch hints (`metadata.code.branch_hint`).

mod copies;
mod emit;
mod loops;
mod sections;
pub mod sink;
mod switch;
mod walk;

pub use sink::SinkKind;

use crate::abi::HostCalls;
use crate::branches::{function_branches, FuncBranches};
use crate::cfg::{self, FuncCfg, SiteKind};
use crate::events::{BodyEvents, EventSet};
use crate::map::{FunctionMap, LoopBursts, ProbeState, Probes, ProfileMap, MAP_FORMAT, MAP_VERSION};
use crate::module::{validator, ModuleError, ModuleInfo};
use crate::parallel::{parallel_map, parallel_map_owned};
use crate::throws::Throws;
use copies::LoopCopy;
use emit::{Inc, TableOffsets};
use loops::LoopPlan;
use pathprof_core::dag::{DagEdgeKind, LoopCut};
use pathprof_core::estimate;
use pathprof_core::ppp::PppPlan;
use pathprof_core::profile::{BlockInfo, Endpoint, PathCount};
use pathprof_core::regen;
use pathprof_core::{FunctionPlan, PlanOptions, Succ};
use sections::{FunctionShift, Rewriter};
use sink::Sink;
use std::collections::HashMap;
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, Module, ValType};
use wasmparser::{BinaryReaderError, FuncToValidate, FunctionBody, Parser, ValidatorResources};

/// Instrumentation choices.
#[derive(Clone, Debug)]
pub struct InstrumentOptions {
    /// What path ends do: the only choice that differs between profiling modes.
    pub sink: SinkKind,
    /// Path planning. `loop_cut` is always [`LoopCut::Headers`]: a path ends wherever a loop header
    /// or cut block is entered, which is where the probes count it ([`LoopCut::BackEdges`] would need
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
    /// Count a loop's only path around in a local (see [`loops`]).
    pub loop_counters: bool,
    /// [`SinkKind::Preferential`]: the interesting paths of every function (by index), as a profile
    /// describes them; their Ball–Larus IDs are found from their endpoints and blocks.
    pub interesting: HashMap<u32, Vec<PathCount>>,
    /// The events to count [EVT23]: every block of the map gets its event vector, and
    /// [`SinkKind::Decode`] and [`SinkKind::Direct`] count them. Required by those sinks.
    pub events: Option<EventSet>,
    /// How the module calls its host function: an import (the default), or a table of its own,
    /// for a module inside a component.
    pub host_calls: HostCalls,
    /// [`SinkKind::Sample`] with a buffer: every function also runs as a copy without probes
    /// while the host's flag is clear ([`switch`], [AR01]); without (the default), only simple
    /// loops do.
    pub function_copies: bool,
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
            events: None,
            function_copies: false,
            host_calls: HostCalls::Import,
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
    /// With [`SinkKind::Trace`], how every edge of each defined function is taken, by defined index
    /// (`None` for a function left alone, and for every function with the other sinks).
    pub branches: Vec<Option<FuncBranches>>,
}

/// The probes of one function, ready to emit.
struct FuncProbe {
    fcfg: FuncCfg,
    bits: u32,
    sink: Sink,
    /// Loop and run counters, and how the headers count.
    counting: LoopPlan,
    /// Increment of every CFG edge (0 for tree edges and edges out of unreachable blocks).
    edge_inc: Vec<Inc>,
    /// The registers at the start of a path from a cut block or header.
    start_inc: Vec<Inc>,
    cut: Vec<bool>,
    entry_inc: Inc,
    /// Byte offsets of the increment tables of each `br_table` site, by operator index.
    tables: HashMap<usize, TableOffsets>,
    wrapper: BlockType,
    /// The loops that also run as a copy without probes (in the plain copy, with `switches`).
    copies: Vec<LoopCopy>,
    /// With whole-function copies: where the plain and the instrumented copy switch.
    switches: Option<switch::Switches>,
    /// With whole-function copies, when the function's locals can be passed: the function that it
    /// switches to, which takes its locals and the switch point as parameters (see [`switch`]).
    resumed: Option<switch::Resumed>,
    /// With [`Sink::Direct`]: the events of the stretches of straight-line code, added where they
    /// start (at the entry, and after operator `i`).
    entry_events: Vec<u64>,
    stretch_events: Vec<(usize, Vec<u64>)>,
}

/// A function's plan, its loop and run counters should it count in an array, its preferential
/// plan with [`SinkKind::Preferential`], its events when some are counted, and its branches with
/// [`SinkKind::Trace`].
pub(crate) struct Planned {
    plan: FunctionPlan,
    loops: Option<LoopPlan>,
    ppp: Option<PppPlan>,
    events: Option<PlannedEvents>,
    branches: Option<FuncBranches>,
}

/// A function's events: where they occur, which occur at all, and with [`SinkKind::Decode`], every
/// path's vector (a row per path ID, a column per event of `mask`) when its paths are few enough
/// for a table.
pub(crate) struct PlannedEvents {
    body: BodyEvents,
    mask: u64,
    rows: Option<Vec<u64>>,
}

/// A function's CFG and plan; the reason it is not instrumented, when it is not.
type Analysis = Result<(FuncCfg, Result<Planned, String>), String>;

/// Validates a function body while it builds its CFG (`Err` when the body is invalid), then plans its
/// probes.
fn analyse(
    (func, body): &(FuncToValidate<ValidatorResources>, FunctionBody<'_>),
    index: u32,
    options: &InstrumentOptions,
    throws: &Throws,
) -> Result<Analysis, BinaryReaderError> {
    let fcfg = match cfg::build(body, &mut validator(func), throws)? {
        Ok(fcfg) => fcfg,
        Err(unsupported) => return Ok(Err(unsupported.0)),
    };
    // An exception caught where it was raised would be a branch within the frame, which the
    // simulated path stack does not model; one that leaves a function is a return to it.
    if options.sink == SinkKind::Trace && !fcfg.cfg.landings().is_empty() {
        return Ok(Ok((fcfg, Err("catches exceptions, which the hardware path profiler does not simulate".into()))));
    }
    let mut opts = options.plan.clone();
    // The probes end a path at the start of every header and cut block, whatever edge led there: only
    // right when every edge into a header ends a path.
    opts.loop_cut = LoopCut::Headers;
    // A streamed path ID has 32 bits (`function << 32 | path ID`): more paths are cut, as `bl` cuts
    // beyond 64 bits.
    if matches!(options.sink, SinkKind::Stream | SinkKind::Trace) {
        opts.max_paths = opts.max_paths.min(STREAM_MAX_PATHS);
    }
    if let Some(paths) = options.edge_profile.get(&index) {
        let paths = paths.iter().map(|p| {
            let end = match p.end {
                Endpoint::Block(b) => Succ::Block(b),
                Endpoint::Throw => Succ::Throw,
                Endpoint::Entry | Endpoint::Exit => Succ::Exit,
            };
            (p.blocks.as_slice(), end, p.count.0)
        });
        opts.cfg_edge_frequencies = Some(estimate::cfg_edge_frequencies_from_paths(&fcfg.cfg, paths));
    }
    // A limit below 2^64 is a budget: a function that no cut brings within it (its start points
    // alone exceed it) is planned without it.
    let built = FunctionPlan::build(&fcfg.cfg, &opts).or_else(|e| {
        if opts.max_paths < u64::MAX {
            FunctionPlan::build(&fcfg.cfg, &PlanOptions { max_paths: u64::MAX, ..opts.clone() })
        } else {
            Err(e)
        }
    });
    let planned = built.map_err(|e| e.to_string()).and_then(|plan| {
        let ppp = match options.sink {
            SinkKind::Preferential { .. } => {
                let paths = options.interesting.get(&index).map_or(&[][..], Vec::as_slice);
                let ids = sink::interesting_ids(&plan, paths);
                Some(PppPlan::build(&plan, ids, options.array_max_paths).map_err(|e| e.to_string())?)
            }
            _ => None,
        };
        let events = match &options.events {
            Some(set) => Some(plan_events(set, body, &fcfg, &plan, options).map_err(|e| e.to_string())?),
            None => None,
        };
        // Loop and run counters take slots next to the function's counter array, if it gets one: in
        // exact counts (and the path counts of decoding's fallback), and in preferential counts when
        // every path is interesting.
        let arrays = match (&ppp, options.sink) {
            (_, SinkKind::Count | SinkKind::Decode) => true,
            (Some(ppp), SinkKind::Preferential { slots_everywhere }) => ppp.covers(&plan) || !slots_everywhere,
            _ => false,
        };
        let array = arrays && plan.num_paths() <= options.array_max_paths;
        // A handler's landing counts the path that threw at its start, which an edge-counted header
        // does not do: functions that catch count without loop and run counters.
        let loops =
            (options.loop_counters && array && fcfg.cfg.landings().is_empty()).then(|| loops::plan_loops(&fcfg, &plan));
        let branches = match options.sink {
            SinkKind::Trace => Some(function_branches(body, &fcfg).map_err(|e| e.to_string())?),
            _ => None,
        };
        Ok(Planned { plan, loops, ppp, events, branches })
    });
    Ok(Ok((fcfg, planned)))
}

/// The events of a function body under `set`, and its table of path vectors for
/// [`SinkKind::Decode`].
fn plan_events(
    set: &EventSet,
    body: &FunctionBody,
    fcfg: &FuncCfg,
    plan: &FunctionPlan,
    options: &InstrumentOptions,
) -> Result<PlannedEvents, BinaryReaderError> {
    let body = set.body_events(body, fcfg)?;
    let mask = body.mask();
    let n = plan.num_paths();
    let rows = (options.sink == SinkKind::Decode && n <= options.array_max_paths).then(|| {
        let width = set.len();
        let mut rows = Vec::with_capacity(n as usize * mask.count_ones() as usize);
        for id in 0..n {
            let path = regen::regenerate(&plan.dag, &plan.numbering, id).expect("every ID below the count is a path");
            let v = pathprof_core::events::path_vector(&path.blocks, &body.blocks, width);
            rows.extend(crate::events::columns(&v, mask));
        }
        rows
    });
    Ok(PlannedEvents { body, mask, rows })
}

/// The layout of the profiler's memory: the sink's words, then counter arrays and slots, then
/// `br_table` increment tables.
#[derive(Default)]
pub(crate) struct Layout {
    /// Bytes taken by the sink's words and the counters so far.
    counters: u64,
    tables: Vec<u8>,
    /// The preferential slots, with their Ball–Larus IDs: after the arrays and loop slots, so that
    /// these lie where they lie in exact counting (the same code at the same addresses).
    slots: Vec<u8>,
}

impl Layout {
    /// Takes `bytes` bytes after the counters so far; their offset.
    fn take(&mut self, bytes: u64) -> u32 {
        let offset = self.counters as u32;
        self.counters += bytes;
        offset
    }
}

/// Most paths of a function whose path ends stream their IDs: 32 bits of ID.
const STREAM_MAX_PATHS: u64 = 1 << 32;

/// Rewrites `bytes` with path probes.
///
/// The blocks of the map carry no source lines: [`LineTable::attach`](crate::debuginfo::LineTable::attach)
/// reads them from the module's DWARF, when and for the blocks they are wanted.
pub fn instrument(bytes: &[u8], options: &InstrumentOptions) -> Result<Instrumented, ModuleError> {
    // The bodies are validated by the analyses, on all cores.
    let (info, bodies) = ModuleInfo::read_sections(bytes)?;
    let mut functions = Vec::new();
    let mut probes: Vec<Option<FuncProbe>> = Vec::new();
    let mut branches: Vec<Option<FuncBranches>> = Vec::new();
    let mut layout = Layout { counters: options.sink.header_bytes(), ..Layout::default() };
    let mut new_types: Vec<Vec<ValType>> = Vec::new();

    let throws = Throws::of_module(&info, &bodies).map_err(ModuleError::from_validation)?;
    let analyses = parallel_map(&bodies, |k, body| analyse(body, info.num_imported_funcs + k as u32, options, &throws));
    // The first invalid body in module order, as a sequential validation reports it.
    let analyses = analyses.into_iter().collect::<Result<Vec<_>, _>>().map_err(ModuleError::from_validation)?;
    for (k, analysis) in analyses.into_iter().enumerate() {
        let index = info.num_imported_funcs + k as u32;
        let name = info.names.get(&index).cloned();
        let (blocks, planned) = match analysis {
            Err(reason) => (Vec::new(), Err(reason)),
            Ok((fcfg, planned)) => (block_infos(&fcfg), planned.map(|planned| (fcfg, planned))),
        };
        let assigned = planned.and_then(|(fcfg, planned)| {
            let sink = options.sink.assign(&planned, options, &mut layout)?;
            Ok((fcfg, planned, sink))
        });
        let (fcfg, Planned { plan, loops, ppp, events, branches: func_branches }, sink) = match assigned {
            Ok(assigned) => assigned,
            Err(reason) => {
                functions.push(FunctionMap { index, name, blocks, state: ProbeState::Skipped { reason } });
                probes.push(None);
                branches.push(None);
                continue;
            }
        };
        let mut blocks = blocks;
        if let Some(events) = &events {
            for (b, v) in blocks.iter_mut().zip(&events.body.blocks) {
                b.events = v.clone();
            }
        }
        let ty = info.func_type(index).expect("validated: every function has a function type");
        let wrapper = match ty.results() {
            [] => BlockType::Empty,
            [t] => BlockType::Result(RoundtripReencoder.val_type(*t).expect("core value types re-encode")),
            many => {
                let results: Vec<ValType> =
                    many.iter().map(|t| RoundtripReencoder.val_type(*t).expect("core value types re-encode")).collect();
                let pos = new_types.iter().position(|r| *r == results).unwrap_or_else(|| {
                    new_types.push(results);
                    new_types.len() - 1
                });
                BlockType::FunctionType(pos as u32) // fixed up below to the real type index
            }
        };
        let mut probe = FuncProbe::new(fcfg, &plan, ppp.as_ref(), sink, wrapper, loops, &mut layout);
        if let (Sink::Direct(_), Some(events)) = (sink, events) {
            probe.direct(events.body);
        }
        if sink.wants_loop_copies() {
            probe.copies = copies::loop_copies(&probe, bodies[k].1.as_bytes(), &mut layout);
        }
        if options.function_copies && sink.wants_function_copies() {
            let body = &bodies[k].1;
            probe.switches = Some(switch::plan(&probe, body).map_err(ModuleError::from_validation)?);
            probe.resumed = switch::Resumed::of(&info, index, body).map_err(ModuleError::from_validation)?;
        }
        let (loop_counters, run_counters) = (probe.counting.loops.clone(), probe.counting.runs.clone());
        let loop_bursts = probe.copies.iter().map(|c| LoopBursts { path: c.path, slot: c.slot }).collect();
        let probes_of = Probes {
            plan,
            counters: sink.counters(),
            register_bits: probe.bits,
            loop_counters,
            run_counters,
            loop_bursts,
            ppp,
        };
        functions.push(FunctionMap { index, name, blocks, state: ProbeState::Instrumented(Box::new(probes_of)) });
        probes.push(Some(probe));
        branches.push(func_branches);
    }

    // The preferential slots, after every array.
    let mut profiler_data = options.sink.initial_data();
    if !layout.slots.is_empty() {
        let base = layout.take(layout.slots.len() as u64);
        for (p, f) in probes.iter_mut().zip(&mut functions) {
            if let (Some(p), ProbeState::Instrumented(map)) = (p, &mut f.state) {
                if let Sink::Ppp(s) = &mut p.sink {
                    s.offset += base;
                    map.counters = p.sink.counters();
                }
            }
        }
        profiler_data.push((base, std::mem::take(&mut layout.slots)));
    }
    let sink_layout = options.sink.layout(probes.iter().flatten().any(|p| p.sink.calls_import()));
    let import = sink_layout.import();
    // Type indices of the added types: the import's, then the wrappers'.
    let base_type = info.types.len() as u32;
    let import_type = import.map(|_| base_type);
    let first_wrapper_type = base_type + u32::from(import.is_some());
    for p in probes.iter_mut().flatten() {
        if let BlockType::FunctionType(i) = p.wrapper {
            p.wrapper = BlockType::FunctionType(first_wrapper_type + i);
        }
    }
    // A function without any path (every run of it traps) still has array counters, of no slots,
    // and count probes that never run but must validate: any array-counted function needs the memory.
    let any_array = probes.iter().flatten().any(|p| p.sink.counters().array().is_some());
    let memory_size = layout.counters.next_multiple_of(8) + layout.tables.len() as u64;
    let memory_export = (any_array || memory_size > 0).then(|| fresh_export(&info, crate::abi::MEMORY_EXPORT));
    let hooks_export = import
        .filter(|_| options.host_calls == HostCalls::Table)
        .map(|_| fresh_export(&info, crate::abi::HOOKS_EXPORT));
    let memory_pages = memory_size.div_ceil(65536).max(1);
    let shift = FunctionShift { first_shifted: import.map(|_| info.num_imported_funcs) };
    // Functions of the profiler's own (the sink's), appended after the program's, of types appended
    // after the wrappers'.
    let appended = options.sink.appended_functions(
        probes.iter().flatten().any(|p| !p.copies.is_empty()),
        info.num_memories,
        first_wrapper_type + new_types.len() as u32,
        info.num_imported_funcs + u32::from(import.is_some()) + bodies.len() as u32,
    );
    // The resumed functions, after the profiler's, a pair of one type each, after theirs.
    let first_index = info.num_imported_funcs + u32::from(import.is_some()) + (bodies.len() + appended.len()) as u32;
    let mut resumed_types = Vec::new();
    for (index, r) in (first_index..).step_by(2).zip(probes.iter_mut().flatten().filter_map(|p| p.resumed.as_mut())) {
        (r.plain, r.instrumented) = (index, index + 1);
        resumed_types.push(sections::Signature { params: r.params.clone(), results: r.results.clone() });
    }
    let context = walk::BodyContext {
        info: &info,
        shift,
        tables_base: layout.counters.next_multiple_of(8),
        loop_copy_exit: appended.first().map(|f| f.index),
    };
    // Each function's probes are dropped on the thread that emitted them: its body, and the body of
    // its resumed function when it has one.
    let emitted = parallel_map_owned(probes, |k, p| {
        p.map(|p| {
            let func = &bodies[k].1;
            match &p.resumed {
                Some(r) => (
                    context.emit_entry(k, &p, func, r, false),
                    Some([context.emit_entry(k, &p, func, r, true), context.emit(k, &p, func, Some(r))]),
                ),
                None => (context.emit(k, &p, func, None), None),
            }
        })
    });
    let mut resumed_bodies = Vec::new();
    let bodies: Vec<_> = emitted
        .into_iter()
        .map(|e| {
            e.map(|(body, resumed)| {
                resumed_bodies.extend(resumed);
                body
            })
        })
        .collect();
    if !layout.tables.is_empty() {
        profiler_data.push((layout.counters.next_multiple_of(8) as u32, std::mem::take(&mut layout.tables)));
    }
    let mut rewriter = Rewriter {
        info: &info,
        shift,
        bodies,
        appended,
        resumed: resumed_types.into_iter().zip(resumed_bodies).collect(),
        next_body: 0,
        import: import.zip(import_type),
        host_calls: options.host_calls,
        hooks_export: hooks_export.clone(),
        new_types,
        memory_pages,
        memory_export: memory_export.clone(),
        profiler_data,
        emitted: Vec::new(),
    };
    let mut module = Module::new();
    rewriter
        .parse_core_module(&mut module, Parser::new(0), bytes)
        .map_err(|e| ModuleError::Invalid(format!("cannot re-encode: {e}")))?;
    let map = ProfileMap {
        format: MAP_FORMAT.to_string(),
        version: MAP_VERSION,
        memory_export,
        sink: sink_layout,
        events: options.events.as_ref().map_or_else(Vec::new, |e| e.names().to_vec()),
        functions,
    };
    let memory_bytes = if map.memory_export.is_some() { memory_pages * 65536 } else { 0 };
    Ok(Instrumented { bytes: module.finish(), map, memory_bytes, hooks_export, branches })
}

/// The blocks of a function, their source lines still unknown.
fn block_infos(fcfg: &FuncCfg) -> Vec<BlockInfo> {
    fcfg.blocks
        .iter()
        .enumerate()
        .map(|(id, b)| BlockInfo {
            id: id as u32,
            offset: b.offset,
            end: b.end,
            line: None,
            loop_header: b.loop_header,
            landing: fcfg.cfg.landings().binary_search(&(id as u32)).is_ok(),
            ops: b.ops,
            events: Vec::new(),
        })
        .collect()
}

impl FuncProbe {
    fn new(
        fcfg: FuncCfg,
        plan: &FunctionPlan,
        ppp: Option<&PppPlan>,
        sink: Sink,
        wrapper: BlockType,
        loops: Option<LoopPlan>,
        layout: &mut Layout,
    ) -> Self {
        let nb = fcfg.blocks.len();
        let bits = sink::register_bits(plan);
        // The preferential register's increments, for a function whose sink reads that register.
        let ppp_inc = ppp.filter(|_| matches!(sink, Sink::Ppp(_))).map(|p| p.inc.as_slice());
        let mut edge_inc = vec![Inc::default(); fcfg.cfg.edges().len()];
        let mut start_inc = vec![Inc::default(); nb];
        let mut entry_inc = Inc::default();
        // Direct event counting has no path register.
        let direct = matches!(sink, Sink::Direct(_));
        for (e, edge) in plan.dag.edges.iter().enumerate().filter(|_| !direct) {
            let inc = Inc { bl: plan.placement.inc[e], ppp: ppp_inc.map_or(0, |p| p[e]) };
            match edge.kind {
                DagEdgeKind::Real(u32::MAX) => entry_inc = inc,
                DagEdgeKind::Real(c) | DagEdgeKind::End(c, _) | DagEdgeKind::Throw(c) => edge_inc[c as usize] = inc,
                DagEdgeKind::Start(b) => start_inc[b as usize] = inc,
            }
        }
        let mut tables = HashMap::new();
        for site in &fcfg.sites {
            if let SiteKind::Table(entries) = &site.kind {
                if entries.iter().all(|&e| edge_inc[e as usize] == Inc::default()) {
                    continue;
                }
                // Tables are placed after all counters; offsets are relative until `finish`.
                let bl = layout.table(bits, entries.iter().map(|&e| edge_inc[e as usize].bl));
                let ppp = ppp_inc.map(|_| layout.table(32, entries.iter().map(|&e| edge_inc[e as usize].ppp)));
                tables.insert(site.op, TableOffsets { bl, ppp });
            }
        }
        let counting = match (sink, loops) {
            (Sink::Array(_), Some(loops)) => loops.place(layout),
            _ => LoopPlan::none(nb, fcfg.cfg.edges().len()),
        };
        FuncProbe {
            fcfg,
            bits,
            sink,
            counting,
            edge_inc,
            start_inc,
            cut: if direct { vec![false; nb] } else { plan.dag.cut.clone() },
            entry_inc,
            tables,
            wrapper,
            copies: Vec::new(),
            switches: None,
            resumed: None,
            entry_events: Vec::new(),
            stretch_events: Vec::new(),
        }
    }

    /// Direct event counting: every stretch of `events` counted where it starts.
    fn direct(&mut self, events: BodyEvents) {
        self.entry_events = events.entry;
        self.stretch_events = events.stretches;
    }
}

impl Layout {
    /// Appends a table of increments of `bits` each (aligned to their width); its offset from the
    /// tables' base.
    fn table(&mut self, bits: u32, values: impl Iterator<Item = u64>) -> u32 {
        let width = (bits / 8) as usize;
        while !self.tables.len().is_multiple_of(width) {
            self.tables.push(0);
        }
        let offset = self.tables.len() as u32;
        for v in values {
            if bits == 32 {
                self.tables.extend_from_slice(&(v as u32).to_le_bytes());
            } else {
                self.tables.extend_from_slice(&v.to_le_bytes());
            }
        }
        offset
    }
}

/// An export name for the profiler's `base`, with `_` appended while the program exports the name.
fn fresh_export(info: &ModuleInfo, base: &str) -> String {
    let mut name = base.to_string();
    while info.export_names.contains(&name) {
        name.push('_');
    }
    name
}
