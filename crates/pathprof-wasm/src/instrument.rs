//! The Ball–Larus instrumenter: rewrites a module with path probes.
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
//! * at the start of a loop header or cut block, the path ends (`count[r]++`) and a new one starts
//!   (`r = Inc(s→h)`), whichever edge led there.
//!
//! The body is wrapped in one `block` whose label replaces the function's: every exit (`return`,
//! branch to the function label, fall-through) becomes a branch to its end, where the path is counted
//! once. Tail calls count the path before they leave.
//!
//! Counters live in a memory of the profiler's own (multi-memory), appended after the program's, so
//! the program's memory is untouched: a dense `u64` array per function with few paths, a host call
//! (an exact hash table on the host) for the others.
//!
//! The original operators are copied byte for byte between the places that get code: only `return`
//! (a branch to the wrapper's end) and, when the profiler adds an import, the operators that name a
//! function (`call`, `return_call`, `ref.func`, whose indices shift) are written anew. The input's
//! function bodies are validated while their CFGs are built. The result is not validated here: Wasmtime
//! validates it when it compiles it, and `pathprof instrument` with [`validate`](crate::module::validate)
//! before writing it. Custom sections pass through, except those that locate code by its offsets in
//! the original bodies: DWARF (`.debug_*`) and branch hints (`metadata.code.branch_hint`).
//!
//! # Loops
//!
//! A back edge reached by exactly one DAG path that starts at its header and calls nothing carries a
//! constant path ID `K`: each time it is taken, one more `K` ran. Such an edge bumps a loop counter (an
//! `i64` local) instead of touching the path register or the counter array, and mirrors it with a plain
//! store into a slot of the profiler's memory, so a trap loses nothing (the host adds the slot). The
//! counter is added to `count[K]` before every call reachable from its header (a callee may
//! re-enter the function, whose activations share the slot; calls that run before the loop find the
//! counter empty) and at every exit. Its header then counts the paths ending there on
//! its in-edges rather than at its start — `count[K]++` at a constant address when the edge's path is
//! known statically, `count[r + Inc]++` otherwise — which needs every in-edge to be a `br`, `br_if`
//! or fall-through (not a `br_table` entry). When all the header's other in-edges are `br`s or the
//! fall-through at `loop`, the counter is bumped (and mirrored) at the header's start instead, and each
//! other in-edge takes one off: the back edge, taken on every iteration, then carries no code.
//!
//! A loop that calls nothing, holds an inner loop and has a way around that skips it (crossing no
//! other header) counts the paths ending at its header in runs (a run counter): an `i64` local
//! holds how many times in a row the same path ended there, and the path's ID sits in a slot of the
//! profiler's memory. A path whose ID equals the slot's only bumps the local (mirrored, as above,
//! with a plain store); another one adds the run to its counter and stores its own ID. Such a loop
//! often goes round the short way many times in a row (sieve's loop over the numbers skips the
//! composites), and `count[r]++` made each of those iterations wait for the previous one's store to
//! the same counter; the run keeps the count in a register and only reads the slot's ID while it
//! lasts. Runs are flushed like loop counters, and the host adds a pending run after a trap. Loops
//! without an inner loop are left alone: where their ways around alternate (heapsort's sift-down),
//! runs cost more than they save.
//!
//! Loop and run counters share a budget per function: at most 4 counters and 24 flushes at call
//! sites, spent on loop counters first, then on the deepest loops.
//!
//! # Sampling in loops
//!
//! In sampled mode with a sample buffer (PEP), a path end only matters while the host's flag is
//! set. A loop of one block — its header's only branch is the `br_if` back to it, right before the
//! loop's `end` — that calls nothing and nests nothing runs in one of two copies, chosen where it
//! is entered: the instrumented loop while the flag is set, and otherwise its original bytes, which
//! only count their iterations in a local (the path register is set once the copy is left). Such
//! loops are the hottest code of many programs (sieve's inner loop, matrix's dot product), and the
//! copy spares each iteration the flag's load and test.
//!
//! The flag may be set while the copy runs. Each iteration but the last ended the loop's path (a
//! constant ID), and each iteration is as likely as the next to be the one during which the flag
//! was set, so the copy's exit, finding the flag set, calls a function that the instrumenter appends
//! to the module ([`loop_copy_exit`]), which gives the sampler `random * n >> 32` of those path ends
//! (`n` iterations, `random` a word that the host sets afresh with the flag): it lets go by as many
//! as it still has to skip, then takes its samples from the rest, as the instrumented loop would
//! have.
//! The samples of a tick thus start at the same point of the loop's run as they would have, in
//! distribution (iterations of one loop run take about the same time), and no path end is sampled
//! that did not happen. A copy may also run for many ticks (random's loop is the whole program):
//! the host cannot arm the flag again while it is set, and counts each such tick as missed (from 0
//! each time it sets the flag, which was clear when the copy began); the copy's exit adds the ticks
//! missed while it ran to a slot of its own, and the host adds a burst of
//! samples of the loop's path for each ([`Probes::loop_bursts`](crate::map::Probes::loop_bursts)).

use crate::cfg::{self, FuncCfg, SiteKind, Special};
use crate::map::{
    Counters, FunctionMap, LoopBursts, LoopCounter, Probes, ProfileMap, RunCounter, SampleBufferLayout, MAP_FORMAT,
    MAP_VERSION,
};
use crate::module::{validator, ModuleError, ModuleInfo};
use crate::parallel::{parallel_map, parallel_map_owned};
use pathprof_core::dag::{Dag, DagEdgeKind, LoopCut};
use pathprof_core::estimate;
use pathprof_core::graph::Adjacency;
use pathprof_core::profile::{BlockInfo, Endpoint, PathCount};
use pathprof_core::{FunctionPlan, PlanOptions, Succ};
use std::collections::HashMap;
use std::convert::Infallible;
use wasm_encoder::reencode::{Error as ReencodeError, Reencode, RoundtripReencoder};
use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, DataSection, EntityType, ExportKind, ExportSection, Function, ImportSection,
    Instruction, MemArg, MemorySection, MemoryType, Module, SectionId, TypeSection, ValType,
};
use wasmparser::{BinaryReaderError, FuncToValidate, FunctionBody, Parser, ValidatorResources};

/// Module name of the host import that counts paths of hash-counted functions.
pub const IMPORT_MODULE: &str = "pathprof";
/// Field name of that import: `(func (param i32 i64))`, called with function index and path ID.
pub const IMPORT_NAME: &str = "count_path";
/// Field name of the profiler's import in each mode: it drains the stream (k-BLPP), receives samples
/// (PEP), or counts the paths of hash-counted functions.
fn import_name(sampled: bool, stream: bool) -> &'static str {
    if stream {
        FLUSH_IMPORT_NAME
    } else if sampled {
        SAMPLE_IMPORT_NAME
    } else {
        IMPORT_NAME
    }
}

/// Field name of the import that drains the stream buffer (k-BLPP): `(func)`.
pub const FLUSH_IMPORT_NAME: &str = "flush_stream";
/// Items the stream buffer holds before the host drains it.
pub const STREAM_CAPACITY: u32 = 4096;
/// Byte offset of the stream's write index (an `i32` count of items) in the profiler's memory.
pub const STREAM_INDEX: u32 = 8;
/// Byte offset of the last item appended to the stream (an `i64`).
pub const STREAM_LAST: u32 = 16;
/// Byte offset of the repetitions of the last item not yet appended (an `i64`).
pub const STREAM_RUN: u32 = 24;
/// Byte offset of the stream buffer (`u64` items) in the profiler's memory.
pub const STREAM_BUFFER: u32 = 32;
/// Field name of the import that receives sampled paths (PEP), same signature.
pub const SAMPLE_IMPORT_NAME: &str = "sample_path";
/// Preferred export name of the profiler's memory.
pub const MEMORY_EXPORT: &str = "pathprof:counters";

/// Instrumentation choices.
#[derive(Clone, Debug)]
pub struct InstrumentOptions {
    /// Path planning. `loop_cut` is always [`LoopCut::Headers`]: a path ends wherever a loop header
    /// or cut block is entered, which is where the probes count it ([`LoopCut::BackEdges`] would need
    /// the count on the back edges themselves, and is replaced).
    pub plan: PlanOptions,
    /// Functions with at most this many paths get a dense counter array.
    pub array_max_paths: u64,
    /// Total size of all counter arrays; functions beyond it are hash-counted.
    pub array_max_bytes: u64,
    /// Executed paths of a previous profile of the same module, by function index: their edge
    /// frequencies replace the static estimate for the spanning tree and smart numbering.
    pub edge_profile: HashMap<u32, Vec<PathCount>>,
    /// Sample the paths instead of counting them (PEP, seed 004 §3.2–3.3): the path register is
    /// computed as for counting, but a path end only tests a flag in the profiler's memory (which the
    /// host's timer thread sets), and while it is set calls the sample import or, with
    /// `sample_buffer`, writes the sample to a buffer.
    pub sampled: bool,
    /// Sampled mode: with `Some(slots)`, samples are written to a buffer of that many `u64` slots in
    /// the profiler's memory instead of calling the host, so that no instrumented function calls
    /// out (see `map::SampleBufferLayout`); the host's timer thread drains it.
    pub sample_buffer: Option<u32>,
    /// Stream the path IDs instead of counting them (k-BLPP, seed 000 §3): path ends append their IDs
    /// to a buffer in the profiler's memory, with activation-entry markers and exit paths tagged as
    /// such (see `map::StreamLayout`), and a full buffer is handed to the host.
    pub stream: bool,
    /// Count a loop's only path around in a local (see [loops](mod@crate::instrument#loops)).
    pub loop_counters: bool,
}

impl Default for InstrumentOptions {
    fn default() -> Self {
        InstrumentOptions {
            plan: PlanOptions::default(),
            array_max_paths: 1 << 14,
            array_max_bytes: 256 << 20,
            edge_profile: HashMap::new(),
            loop_counters: true,
            sampled: false,
            sample_buffer: None,
            stream: false,
        }
    }
}

/// An instrumented module and its map.
pub struct Instrumented {
    pub bytes: Vec<u8>,
    pub map: ProfileMap,
}

/// The probes of one function, ready to emit.
struct FuncProbe {
    fcfg: FuncCfg,
    bits: u32,
    counters: Counters,
    /// Loop and run counters, and how the headers count.
    counting: LoopPlan,
    /// Increment of every CFG edge (0 for tree edges and edges out of unreachable blocks).
    edge_inc: Vec<u64>,
    /// `r` at the start of a path from a cut block or header.
    start_inc: Vec<u64>,
    cut: Vec<bool>,
    entry_inc: u64,
    /// Byte offset of the increment table of each `br_table` site, by operator index.
    tables: HashMap<usize, u32>,
    wrapper: BlockType,
    /// Sampled mode: the loops that also run as a copy without probes.
    copies: Vec<LoopCopy>,
}

/// A function's CFG and plan, and its loop and run counters should it count in an array; the reason
/// it is not instrumented, when it is not.
type Analysis = Result<(FuncCfg, Result<(FunctionPlan, Option<LoopPlan>), String>), String>;

/// Validates a function body while it builds its CFG (`Err` when the body is invalid), then plans its
/// probes.
fn analyse(
    (func, body): &(FuncToValidate<ValidatorResources>, FunctionBody<'_>),
    index: u32,
    options: &InstrumentOptions,
) -> Result<Analysis, BinaryReaderError> {
    let fcfg = match cfg::build(body, &mut validator(func))? {
        Ok(fcfg) => fcfg,
        Err(unsupported) => return Ok(Err(unsupported.0)),
    };
    let mut opts = options.plan.clone();
    // The probes end a path at the start of every header and cut block, whatever edge led there: only
    // right when every edge into a header ends a path.
    opts.loop_cut = LoopCut::Headers;
    if let Some(paths) = options.edge_profile.get(&index) {
        let paths = paths.iter().map(|p| {
            let end = match p.end {
                Endpoint::Block(b) => Some(b),
                _ => None,
            };
            (p.blocks.as_slice(), end, p.count.0)
        });
        opts.cfg_edge_frequencies = Some(estimate::cfg_edge_frequencies_from_paths(&fcfg.cfg, paths));
    }
    let plan = FunctionPlan::build(&fcfg.cfg, &opts).map(|plan| {
        // Loop and run counters take slots next to the function's counter array, if it gets one.
        let array = !options.sampled && !options.stream && plan.num_paths() <= options.array_max_paths;
        let loops = (options.loop_counters && array).then(|| plan_loops(&fcfg, &plan));
        (plan, loops)
    });
    Ok(Ok((fcfg, plan.map_err(|e| e.to_string()))))
}

/// Rewrites `bytes` with path probes.
///
/// The blocks of the map carry no source lines: [`LineTable::attach`](crate::debuginfo::LineTable::attach)
/// reads them from the module's DWARF, when and for the blocks they are wanted.
pub fn instrument(bytes: &[u8], options: &InstrumentOptions) -> Result<Instrumented, ModuleError> {
    // The bodies are validated by the analyses, on all cores.
    let (info, bodies) = ModuleInfo::read_sections(bytes)?;
    let mut functions = Vec::new();
    let mut probes: Vec<Option<FuncProbe>> = Vec::new();
    let mut layout = Layout::default();
    let mut new_types: Vec<Vec<ValType>> = Vec::new();
    let mut needs_import = false;
    // Sampled mode: the flag is the first word of the profiler's memory; stream mode: the index and
    // the buffer come first.
    let sample_buffer = options.sample_buffer.filter(|_| options.sampled).map(|slots| SampleBufferLayout {
        skip: SAMPLE_SKIP,
        index: SAMPLE_INDEX,
        buffer: SAMPLE_BUFFER,
        slots: slots.max(1),
        atomic: !cfg!(target_arch = "x86_64"),
        random: Some(SAMPLE_RANDOM),
        missed: Some(SAMPLE_MISSED),
    });
    if options.sampled {
        layout.counters = match sample_buffer {
            Some(b) => u64::from(b.buffer) + 8 * u64::from(b.slots),
            None => 8,
        };
    }
    if options.stream {
        layout.counters = u64::from(STREAM_BUFFER + 8 * STREAM_CAPACITY);
    }

    let analyses = parallel_map(&bodies, |k, body| analyse(body, info.num_imported_funcs + k as u32, options));
    // The first invalid body in module order, as a sequential validation reports it.
    let analyses = analyses.into_iter().collect::<Result<Vec<_>, _>>().map_err(ModuleError::from_validation)?;
    for (k, analysis) in analyses.into_iter().enumerate() {
        let index = info.num_imported_funcs + k as u32;
        let name = info.names.get(&index).cloned();
        let (blocks, plan, skip) = match analysis {
            Err(reason) => (Vec::new(), None, Some(reason)),
            Ok((fcfg, plan)) => {
                let blocks = block_infos(&fcfg);
                match plan {
                    Ok((plan, loops)) => (blocks, Some((fcfg, plan, loops)), None),
                    Err(reason) => (blocks, None, Some(reason)),
                }
            }
        };
        let Some((fcfg, plan, loops)) = plan else {
            functions.push(FunctionMap { index, name, blocks, probes: None, skip_reason: skip });
            probes.push(None);
            continue;
        };
        let n = plan.num_paths();
        let bits = if n <= 1 << 32 { 32 } else { 64 };
        if options.stream && bits == 64 {
            let reason = "more than 2^32 paths (streamed path IDs have 32 bits)".to_string();
            functions.push(FunctionMap { index, name, blocks, probes: None, skip_reason: Some(reason) });
            probes.push(None);
            continue;
        }
        // An activation of a function without loops or cuts ends one path: its k-IPF has only roots,
        // its BL counts, which an array counts without the stream or activation markers.
        let one_path_per_activation = plan.dag.edges.iter().all(|e| matches!(e.kind, DagEdgeKind::Real(_)));
        let fits_array = n <= options.array_max_paths && layout.counters + 8 * n <= options.array_max_bytes;
        let counters = if options.stream && !(one_path_per_activation && fits_array) {
            needs_import = true;
            // Activations that end one path (entry to exit) are counted in an array, when it fits.
            let singles = fits_array.then(|| {
                let offset = layout.counters as u32;
                layout.counters += 8 * n;
                offset
            });
            Counters::Stream { singles }
        } else if options.sampled {
            needs_import |= sample_buffer.is_none();
            Counters::Sampled
        } else if fits_array {
            let offset = layout.counters as u32;
            layout.counters += 8 * n;
            Counters::Array { offset }
        } else {
            needs_import = true;
            Counters::Hash
        };
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
        let mut probe = FuncProbe::new(fcfg, &plan, bits, counters, wrapper, loops, &mut layout);
        if sample_buffer.is_some() {
            probe.copies = loop_copies(&probe, bodies[k].1.as_bytes(), &mut layout);
        }
        let (loop_counters, run_counters) = (probe.counting.loops.clone(), probe.counting.runs.clone());
        let loop_bursts = probe.copies.iter().map(|c| LoopBursts { path: c.path, slot: c.slot }).collect();
        functions.push(FunctionMap {
            index,
            name,
            blocks,
            probes: Some(Probes { plan, counters, register_bits: bits, loop_counters, run_counters, loop_bursts }),
            skip_reason: None,
        });
        probes.push(Some(probe));
    }

    // Type indices of the added types: the import's, then the wrappers'.
    let base_type = info.types.len() as u32;
    let import_type = if needs_import { Some(base_type) } else { None };
    let first_wrapper_type = base_type + u32::from(needs_import);
    for p in probes.iter_mut().flatten() {
        if let BlockType::FunctionType(i) = p.wrapper {
            p.wrapper = BlockType::FunctionType(first_wrapper_type + i);
        }
    }
    // A function without any path (every run of it traps) still has array counters, of no slots,
    // and count probes that never run but must validate: any array-counted function needs the memory.
    let any_array = functions.iter().any(|f| matches!(f.probes, Some(Probes { counters: Counters::Array { .. }, .. })));
    let memory_size = layout.counters.next_multiple_of(8) + layout.tables.len() as u64;
    let memory_export = if any_array || memory_size > 0 {
        let mut name = MEMORY_EXPORT.to_string();
        while info.export_names.contains(&name) {
            name.push('_');
        }
        Some(name)
    } else {
        None
    };
    let shift = FunctionShift { first_shifted: import_type.map(|_| info.num_imported_funcs) };
    // Loop copies call one function of the profiler's, appended after the program's, of a type
    // appended after the wrappers'.
    let copy_exit = sample_buffer.filter(|_| probes.iter().flatten().any(|p| !p.copies.is_empty())).map(|layout| {
        let ty = first_wrapper_type + new_types.len() as u32;
        let index = info.num_imported_funcs + u32::from(import_type.is_some()) + bodies.len() as u32;
        (ty, index, loop_copy_exit(layout, info.num_memories))
    });
    let context = BodyContext {
        info: &info,
        shift,
        tables_base: layout.counters.next_multiple_of(8),
        sample_buffer,
        loop_copy_exit: copy_exit.as_ref().map(|&(_, index, _)| index),
    };
    // Each function's probes are dropped on the thread that emitted them.
    let bodies = parallel_map_owned(probes, |k, p| p.map(|p| context.emit(k, &p, &bodies[k].1)));
    let mut rewriter = Rewriter {
        sampled: options.sampled,
        stream: options.stream,
        info: &info,
        shift,
        bodies,
        loop_copy_exit: copy_exit.map(|(ty, _, body)| (ty, body)),
        next_body: 0,
        import_type,
        new_types,
        memory_pages: memory_size.div_ceil(65536).max(1),
        memory_export: memory_export.clone(),
        profiler_data: {
            let mut segments = Vec::new();
            // The stream's last item starts as one no item equals.
            if options.stream {
                segments.push((STREAM_LAST, u64::MAX.to_le_bytes().to_vec()));
            }
            if !layout.tables.is_empty() {
                segments.push((layout.counters.next_multiple_of(8) as u32, std::mem::take(&mut layout.tables)));
            }
            segments
        },
        emitted: Vec::new(),
    };
    let mut module = Module::new();
    rewriter
        .parse_core_module(&mut module, Parser::new(0), bytes)
        .map_err(|e| ModuleError::Invalid(format!("cannot re-encode: {e}")))?;
    let out = module.finish();
    let map = ProfileMap {
        format: MAP_FORMAT.to_string(),
        version: MAP_VERSION,
        memory_export,
        count_import: needs_import
            .then(|| (IMPORT_MODULE.to_string(), import_name(options.sampled, options.stream).to_string())),
        sample_flag: options.sampled.then_some(0),
        sample_buffer,
        stream: options.stream.then_some(crate::map::StreamLayout {
            index: STREAM_INDEX,
            last: STREAM_LAST,
            run: STREAM_RUN,
            buffer: STREAM_BUFFER,
            capacity: STREAM_CAPACITY,
        }),
        functions,
    };
    Ok(Instrumented { bytes: out, map })
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
        })
        .collect()
}

/// The layout of the profiler's memory: counter arrays first, then `br_table` increment tables.
#[derive(Default)]
struct Layout {
    counters: u64,
    tables: Vec<u8>,
}

impl FuncProbe {
    /// The loop counter that `edge`, counted as `how`, takes one off: its header bumps that counter at
    /// its start, and the edge is not the way around.
    fn unbumped_by(&self, edge: u32, how: HeaderEdge) -> Option<usize> {
        match (how, self.fcfg.cfg.edges()[edge as usize].to) {
            (HeaderEdge::Around(_), _) | (_, Succ::Exit) => None,
            (_, Succ::Block(h)) => self.counting.header_loop[h as usize],
        }
    }

    fn new(
        fcfg: FuncCfg,
        plan: &FunctionPlan,
        bits: u32,
        counters: Counters,
        wrapper: BlockType,
        loops: Option<LoopPlan>,
        layout: &mut Layout,
    ) -> Self {
        let nb = fcfg.blocks.len();
        let mut edge_inc = vec![0u64; fcfg.cfg.edges().len()];
        let mut start_inc = vec![0u64; nb];
        let mut entry_inc = 0;
        for (e, edge) in plan.dag.edges.iter().enumerate() {
            let inc = plan.placement.inc[e];
            match edge.kind {
                DagEdgeKind::Real(u32::MAX) => entry_inc = inc,
                DagEdgeKind::Real(c) | DagEdgeKind::End(c, _) => edge_inc[c as usize] = inc,
                DagEdgeKind::Start(b) => start_inc[b as usize] = inc,
            }
        }
        let mut tables = HashMap::new();
        for site in &fcfg.sites {
            if let SiteKind::Table(entries) = &site.kind {
                if entries.iter().all(|&e| edge_inc[e as usize] == 0) {
                    continue;
                }
                // Tables are placed after all counters; offsets are relative until `finish`.
                let width = (bits / 8) as usize;
                while !layout.tables.len().is_multiple_of(width) {
                    layout.tables.push(0);
                }
                tables.insert(site.op, layout.tables.len() as u32);
                for &e in entries {
                    let v = edge_inc[e as usize];
                    if bits == 32 {
                        layout.tables.extend_from_slice(&(v as u32).to_le_bytes());
                    } else {
                        layout.tables.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
        }
        let counting = match (counters, loops) {
            (Counters::Array { .. }, Some(loops)) => loops.place(layout),
            _ => LoopPlan::none(nb, fcfg.cfg.edges().len()),
        };
        FuncProbe {
            fcfg,
            bits,
            counters,
            counting,
            edge_inc,
            start_inc,
            cut: plan.dag.cut.clone(),
            entry_inc,
            tables,
            wrapper,
            copies: Vec::new(),
        }
    }
}

struct Rewriter<'a> {
    info: &'a ModuleInfo,
    shift: FunctionShift,
    /// The instrumented body of every defined function that has probes.
    bodies: Vec<Option<Result<Vec<u8>, ReencodeError<Infallible>>>>,
    /// The type index and body of [`loop_copy_exit`], when loop copies call it.
    loop_copy_exit: Option<(u32, Function)>,
    next_body: usize,
    import_type: Option<u32>,
    new_types: Vec<Vec<ValType>>,
    memory_pages: u64,
    memory_export: Option<String>,
    /// Data segments of the profiler's memory: `(offset, bytes)`.
    profiler_data: Vec<(u32, Vec<u8>)>,
    emitted: Vec<SectionId>,
    /// Sampled mode: the profiler's memory holds the sampling flag at offset 0.
    sampled: bool,
    stream: bool,
}

type Res = Result<(), ReencodeError<Infallible>>;

impl Rewriter<'_> {
    fn needs_memory(&self) -> bool {
        self.memory_export.is_some()
    }

    fn profiler_memory(&self) -> u32 {
        self.info.num_memories
    }

    fn import_section(&self, imports: &mut ImportSection) {
        if let Some(ty) = self.import_type {
            imports.import(IMPORT_MODULE, import_name(self.sampled, self.stream), EntityType::Function(ty));
        }
    }

    fn memory_section(&self, memories: &mut MemorySection) {
        if self.needs_memory() {
            memories.memory(MemoryType {
                minimum: self.memory_pages,
                // The memory never grows, so its base never moves: code may keep it in a register,
                // and the host's timer thread may write the sampling flag through a fixed address.
                maximum: Some(self.memory_pages),
                memory64: false,
                shared: false,
                page_size_log2: None,
            });
        }
    }

    fn export_section(&self, exports: &mut ExportSection) {
        if let Some(name) = &self.memory_export {
            exports.export(name, ExportKind::Memory, self.profiler_memory());
        }
    }

    fn data_section(&self, data: &mut DataSection) {
        for (offset, bytes) in &self.profiler_data {
            data.active(self.profiler_memory(), &ConstExpr::i32_const(*offset as i32), bytes.iter().copied());
        }
    }

    fn wants(&self, id: SectionId) -> bool {
        match id {
            SectionId::Import => self.import_type.is_some(),
            SectionId::Memory => self.needs_memory(),
            SectionId::Export => self.needs_memory(),
            SectionId::Data => !self.profiler_data.is_empty(),
            _ => false,
        }
    }
}

/// How an edge into an edge-counted loop header counts the path it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HeaderEdge {
    /// The ID is only known at run time: `count[r + Inc]++` on the edge.
    Dynamic,
    /// Only one path reaches the edge: `count[K]++` at a constant address, no register.
    Constant(u64),
    /// The loop's only way around, free of calls: loop counter `i` (a local) counts it.
    Loop(usize),
    /// The same, counted at the header's start instead: the edge itself carries no code.
    Around(usize),
}

/// Which loops count in locals, and where (see the module docs, "Loops").
struct LoopPlan {
    /// How each CFG edge into a header that counts on its in-edges is counted.
    header_edge: Vec<Option<HeaderEdge>>,
    /// Headers whose in-edges count the paths ending there (the header itself only starts a path).
    edge_counted: Vec<bool>,
    /// The loop counter that a header's start bumps, when its loop is counted there.
    header_loop: Vec<Option<usize>>,
    loops: Vec<LoopCounter>,
    /// The run counter of a header that counts its paths in runs.
    header_run: Vec<Option<usize>>,
    runs: Vec<RunCounter>,
    /// The counters that the calls of each block flush (see `RUN_BIT`).
    flush_at: Vec<u8>,
}

impl LoopPlan {
    /// No loop or run counter: every header counts at its start.
    fn none(blocks: usize, edges: usize) -> LoopPlan {
        LoopPlan {
            header_edge: vec![None; edges],
            edge_counted: vec![false; blocks],
            header_loop: vec![None; blocks],
            loops: Vec::new(),
            header_run: vec![None; blocks],
            runs: Vec::new(),
            flush_at: vec![0; blocks],
        }
    }

    /// The plan with its counters' slots moved from 0 to the layout's next free bytes.
    fn place(mut self, layout: &mut Layout) -> LoopPlan {
        let base = layout.counters as u32;
        let slots =
            self.runs.iter_mut().map(|r| (&mut r.slot, 16)).chain(self.loops.iter_mut().map(|l| (&mut l.slot, 8)));
        for (slot, bytes) in slots {
            *slot += base;
            layout.counters += bytes;
        }
        self
    }
}

/// Sampled mode with a sample buffer: byte offsets of the `i32` path ends still to let go by, the
/// `i32` number of samples in the buffer, and the buffer (the flag, at 0, counts the samples still
/// to take).
pub const SAMPLE_SKIP: u32 = 4;
pub const SAMPLE_INDEX: u32 = 8;
/// Sampled mode with a sample buffer: byte offset of the `i32` random value of the host (see
/// "Sampling in loops" in the module docs).
pub const SAMPLE_RANDOM: u32 = 12;
/// Sampled mode with a sample buffer: byte offset of the `i32` count of ticks that found the flag
/// still set.
pub const SAMPLE_MISSED: u32 = 16;
pub const SAMPLE_BUFFER: u32 = 24;

/// Tag of a stream item that marks an activation's entry; the low bits carry the function index.
pub const STREAM_ENTER: u64 = 1 << 62;
/// Tag of a stream item that ends a path at the function's exit, and so also the activation.
pub const STREAM_PATH_EXIT: u64 = 2 << 62;
/// Tag of a stream item that repeats the item before it as many more times as its low 62 bits say.
pub const STREAM_RUN_TAG: u64 = 3 << 62;

/// Most loop counters in one function.
const MAX_LOOP_COUNTERS: usize = 4;
/// Most flushes of loop and run counters at call sites in one function.
const MAX_FLUSH_BLOCKS: usize = 24;
/// The bit of the first run counter in a block's flush mask (loop counters take the bits below).
const RUN_BIT: usize = 4;

/// Decides which back edges count in a local, and which headers count in runs (see the module docs,
/// "Loops").
///
/// A back edge `u→h` qualifies when exactly one DAG path reaches it, that path starts at `h` and runs
/// no call: its ID `K` is a constant and a run of the loop is a run of `K`s. Its header then counts
/// the paths ending there on its in-edges instead of at its start (only possible when no `br_table`
/// enters it), so that the loop counter's paths are not counted twice.
///
/// When every other in-edge of the header is a `br` or the fall-through at `loop` (no `br_if`), the
/// counter is bumped at the header's start and decremented on those other edges, so that the way
/// around, usually the hottest edge of the loop, carries no code at all.
///
/// The counters' slots are numbered from 0 until [`LoopPlan::place`] puts them in the layout.
fn plan_loops(fcfg: &FuncCfg, plan: &FunctionPlan) -> LoopPlan {
    let dag = &plan.dag;
    let nb = fcfg.blocks.len();
    let prefixes = plan.numbering.unique_prefixes(dag);
    let mut via_table = vec![false; nb];
    let mut plain = vec![false; fcfg.cfg.edges().len()];
    for site in &fcfg.sites {
        match &site.kind {
            SiteKind::Table(entries) => {
                for &e in entries {
                    if let Succ::Block(b) = fcfg.cfg.edges()[e as usize].to {
                        via_table[b as usize] = true;
                    }
                }
            }
            SiteKind::Edge(e) => plain[*e as usize] = true,
            _ => {}
        }
    }
    // The constant ID of every path end into a header, and whether it is a call-free way around.
    let mut constant: Vec<Option<(u64, bool)>> = vec![None; fcfg.cfg.edges().len()];
    for (e, edge) in dag.edges.iter().enumerate() {
        let DagEdgeKind::End(c, h) = edge.kind else { continue };
        let Some((sum, mut last)) = prefixes[edge.from as usize] else { continue };
        let id = sum.wrapping_add(plan.numbering.val[e]);
        // Walk the unique path back to its start.
        let mut around = true;
        loop {
            let d = dag.edges[last as usize];
            if d.from == dag.entry() {
                around &= d.kind == DagEdgeKind::Start(h);
                break;
            }
            around &= fcfg.blocks[d.from as usize].calls == 0;
            last = prefixes[d.from as usize].expect("a node reached by one path has a unique predecessor").1;
        }
        around &= fcfg.blocks[edge.from as usize].calls == 0;
        constant[c as usize] = Some((id, around));
    }
    // Loop depths, and the loops that call nothing.
    let mut depth = vec![0u32; nb];
    let mut call_free = vec![false; nb];
    let mut nests = vec![false; nb];
    fcfg.cfg.natural_loops(|h, body| {
        call_free[h as usize] = body.iter().all(|&b| fcfg.blocks[b as usize].calls == 0);
        nests[h as usize] = body.iter().any(|&b| b != h && fcfg.blocks[b as usize].loop_header);
        for &b in body {
            depth[b as usize] += 1;
        }
    });
    // The deepest loops first, at most MAX_LOOP_COUNTERS of them: each adds flushes before calls.
    let mut chosen: Vec<(u32, u64, u32)> = Vec::new();
    for (c, k) in constant.iter().enumerate() {
        if let (Some((path, true)), Succ::Block(h)) = (k, fcfg.cfg.edges()[c].to) {
            if !via_table[h as usize] && !chosen.iter().any(|&(_, p, _)| p == *path) {
                chosen.push((depth[h as usize], *path, h));
            }
        }
    }
    chosen.sort_by_key(|&(d, p, _)| (std::cmp::Reverse(d), p));
    // A counter is flushed before every call reachable from its header: keep the code that adds
    // bounded, taking the deepest loops first.
    let out = fcfg.cfg.out_edges();
    let mut spent = 0;
    let mut reaches: Vec<(u32, Vec<bool>)> = Vec::new();
    let mut afford = |h: u32, reaches: &mut Vec<(u32, Vec<bool>)>| {
        if reaches.len() == MAX_LOOP_COUNTERS {
            return false;
        }
        let (reach, calls) = reachable_calls(fcfg, out, h);
        if spent + calls > MAX_FLUSH_BLOCKS {
            return false;
        }
        spent += calls;
        reaches.push((h, reach));
        true
    };
    chosen.retain(|&(_, _, h)| afford(h, &mut reaches));
    let mut edge_counted = vec![false; nb];
    for &(_, _, h) in &chosen {
        edge_counted[h as usize] = true;
    }
    // Run counters for the other headers of call-free loops that hold an inner loop and have a way
    // around that skips it (without one, every iteration ends paths elsewhere too, and the counter's
    // store has time to complete), deepest first, with what is left.
    let dag_out = dag.out_edges();
    let mut seen = vec![false; dag.num_nodes() as usize];
    let mut run_headers: Vec<(u32, usize)> = (0..nb)
        .filter(|&h| {
            call_free[h]
                && nests[h]
                && !edge_counted[h]
                && dag.cut.get(h).copied().unwrap_or(false)
                && short_way_around(dag, dag_out, h as u32, &mut seen)
        })
        .map(|h| (depth[h], h))
        .collect();
    run_headers.sort_by_key(|&(d, h)| (std::cmp::Reverse(d), h));
    run_headers.retain(|&(_, h)| afford(h as u32, &mut reaches));
    let mut slots = 0;
    let mut header_run = vec![None; nb];
    let mut runs = Vec::new();
    for &(_, h) in &run_headers {
        header_run[h] = Some(runs.len());
        runs.push(RunCounter { slot: slots });
        slots += 16;
    }
    let mut header_edge = vec![None; fcfg.cfg.edges().len()];
    let mut loops: Vec<LoopCounter> = Vec::new();
    for (c, edge) in fcfg.cfg.edges().iter().enumerate() {
        let Succ::Block(h) = edge.to else { continue };
        if !edge_counted[h as usize] {
            continue;
        }
        header_edge[c] = Some(match constant[c] {
            Some((path, true)) if chosen.iter().any(|&(_, p, _)| p == path) => {
                let i = loops.iter().position(|l| l.path == path).unwrap_or_else(|| {
                    loops.push(LoopCounter { path, slot: slots });
                    slots += 8;
                    loops.len() - 1
                });
                HeaderEdge::Loop(i)
            }
            Some((path, _)) => HeaderEdge::Constant(path),
            None => HeaderEdge::Dynamic,
        });
    }
    // Count at the header where its other in-edges can take the decrement without a condition.
    let mut header_loop = vec![None; nb];
    for (c, edge) in fcfg.cfg.edges().iter().enumerate() {
        let (Some(HeaderEdge::Loop(i)), Succ::Block(h)) = (header_edge[c], edge.to) else { continue };
        let others_plain = fcfg.cfg.edges().iter().enumerate().all(|(o, other)| {
            o == c || other.to != Succ::Block(h) || (plain[o] && !matches!(header_edge[o], Some(HeaderEdge::Loop(_))))
        });
        if others_plain {
            header_edge[c] = Some(HeaderEdge::Around(i));
            header_loop[h as usize] = Some(i);
        }
    }
    // Which counters each block's calls flush: loop counter `i` is bit `i`, run counter `j` bit
    // `RUN_BIT + j`; `reaches` lists the loop counters first, in `chosen`'s order.
    let mut flush_at = vec![0u8; nb];
    for (k, (h, reach)) in reaches.iter().enumerate() {
        let bit = match chosen.get(k) {
            Some(&(_, path, _)) => loops.iter().position(|l| l.path == path).expect("every chosen loop is counted"),
            None => RUN_BIT + header_run[*h as usize].expect("every afforded header is counted"),
        };
        for (b, _) in reach.iter().enumerate().filter(|&(_, &r)| r) {
            flush_at[b] |= 1 << bit;
        }
    }
    LoopPlan { header_edge, edge_counted, header_loop, loops, header_run, runs, flush_at }
}

/// The blocks reachable from `h` (itself included), and how many calls they make.
fn reachable_calls(fcfg: &FuncCfg, out: &Adjacency, h: u32) -> (Vec<bool>, usize) {
    let mut reach = vec![false; fcfg.blocks.len()];
    let mut stack = vec![h];
    reach[h as usize] = true;
    let mut calls = 0;
    while let Some(b) = stack.pop() {
        calls += fcfg.blocks[b as usize].calls as usize;
        for &e in &out[b as usize] {
            if let Succ::Block(w) = fcfg.cfg.edges()[e as usize].to {
                if !reach[w as usize] {
                    reach[w as usize] = true;
                    stack.push(w);
                }
            }
        }
    }
    (reach, calls)
}

/// Whether a DAG path from header `h` ends at `h` itself, crossing no other header or cut block.
/// `seen` is all false on entry and on return.
fn short_way_around(dag: &Dag, out: &Adjacency, h: u32, seen: &mut [bool]) -> bool {
    let mut stack = vec![h];
    let mut visited = vec![h];
    seen[h as usize] = true;
    let mut found = false;
    while let Some(u) = stack.pop() {
        for &e in &out[u as usize] {
            let edge = dag.edges[e as usize];
            match edge.kind {
                DagEdgeKind::End(_, to) if to == h => found = true,
                DagEdgeKind::Real(_) if !seen[edge.to as usize] => {
                    seen[edge.to as usize] = true;
                    visited.push(edge.to);
                    stack.push(edge.to);
                }
                _ => {}
            }
        }
        if found {
            break;
        }
    }
    for v in visited {
        seen[v as usize] = false;
    }
    found
}

/// `word += delta` for an `i32` word of memory at a constant address; with `atomic`, the store is an
/// atomic one.
fn add_to_word(f: &mut Function, word: MemArg, delta: i32, atomic: bool) {
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(word));
    f.instruction(&Instruction::I32Const(delta));
    f.instruction(&Instruction::I32Add);
    f.instruction(&if atomic { Instruction::I32AtomicStore(word) } else { Instruction::I32Store(word) });
}

/// The `i32` word at byte `offset` of memory `memory` (the sampling flag and the sample buffer's
/// words).
fn word(memory: u32, offset: u32) -> MemArg {
    MemArg { offset: u64::from(offset), align: 2, memory_index: memory }
}

/// Sampled mode with a sample buffer: `buffer[index] = item` (an `i64` the instructions push), then
/// `index += 1` and, last, `flag -= 1`, the order the host relies on (see `SampleBufferLayout`).
fn append_sample(f: &mut Function, layout: SampleBufferLayout, memory: u32, item: &[Instruction]) {
    let word = |offset| word(memory, offset);
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(word(layout.index)));
    f.instruction(&Instruction::I32Const(3));
    f.instruction(&Instruction::I32Shl);
    for i in item {
        f.instruction(i);
    }
    f.instruction(&Instruction::I64Store(MemArg { offset: u64::from(layout.buffer), align: 3, memory_index: memory }));
    add_to_word(f, word(layout.index), 1, false);
    add_to_word(f, word(0), -1, layout.atomic);
}

/// The parameters of [`loop_copy_exit`]: the copy's iterations, its path's sample (`function << 32 |
/// path ID`) and the byte offset of its slot of bursts.
const LOOP_COPY_EXIT_PARAMS: [ValType; 3] = [ValType::I32, ValType::I64, ValType::I32];

/// The function that a loop's copy without probes calls at its exit when the flag was set while it
/// ran (see "Sampling in loops" in the module docs), appended to the module, in memory `memory`.
///
/// The copy ran `n` iterations, all but the last of which ended the loop's path. The flag was set
/// during one of them, each as likely as the next, which leaves `random * n >> 32` (`0` to `n - 1`)
/// of those path ends to the sampler: first those it lets go by, then its samples, stored as
/// `sample_to_buffer` stores them. The ticks that the host missed since it set the flag, all while the
/// copy ran (the flag was clear when the copy began), are added to the loop's slot of bursts.
fn loop_copy_exit(layout: SampleBufferLayout, memory: u32) -> Function {
    let word = |offset| word(memory, offset);
    let (flag, skip) = (word(0), word(layout.skip));
    let random = word(layout.random.expect("modules with loop copies have a random word"));
    let missed = word(layout.missed.expect("modules with loop copies count missed ticks"));
    let (n, item, slot, left, cut) = (0, 1, 2, 3, 4);
    let mut f = Function::new([(2, ValType::I32)]);
    if layout.atomic {
        f.instruction(&Instruction::AtomicFence);
    }
    // left = random * n >> 32
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(random));
    f.instruction(&Instruction::I64ExtendI32U);
    f.instruction(&Instruction::LocalGet(n));
    f.instruction(&Instruction::I64ExtendI32U);
    f.instruction(&Instruction::I64Mul);
    f.instruction(&Instruction::I64Const(32));
    f.instruction(&Instruction::I64ShrU);
    f.instruction(&Instruction::I32WrapI64);
    f.instruction(&Instruction::LocalSet(left));
    // cut = min(skip, left); skip -= cut; left -= cut
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(skip));
    f.instruction(&Instruction::LocalTee(cut));
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::LocalGet(cut));
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::I32LtU);
    f.instruction(&Instruction::Select);
    f.instruction(&Instruction::LocalSet(cut));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(skip));
    f.instruction(&Instruction::LocalGet(cut));
    f.instruction(&Instruction::I32Sub);
    f.instruction(&Instruction::I32Store(skip));
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::LocalGet(cut));
    f.instruction(&Instruction::I32Sub);
    f.instruction(&Instruction::LocalSet(left));
    // While left and the flag are not 0: a sample.
    f.instruction(&Instruction::Block(BlockType::Empty));
    f.instruction(&Instruction::Loop(BlockType::Empty));
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::I32Eqz);
    f.instruction(&Instruction::BrIf(1));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(flag));
    f.instruction(&Instruction::I32Eqz);
    f.instruction(&Instruction::BrIf(1));
    append_sample(&mut f, layout, memory, &[Instruction::LocalGet(item)]);
    f.instruction(&Instruction::LocalGet(left));
    f.instruction(&Instruction::I32Const(-1));
    f.instruction(&Instruction::I32Add);
    f.instruction(&Instruction::LocalSet(left));
    f.instruction(&Instruction::Br(0));
    f.instruction(&Instruction::End);
    f.instruction(&Instruction::End);
    // Every later tick while the copy ran found the flag set: a burst of samples of the loop's path
    // that the host adds.
    let bursts = MemArg { offset: 0, align: 3, memory_index: memory };
    f.instruction(&Instruction::LocalGet(slot));
    f.instruction(&Instruction::LocalGet(slot));
    f.instruction(&Instruction::I64Load(bursts));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32AtomicLoad(missed));
    f.instruction(&Instruction::I64ExtendI32U);
    f.instruction(&Instruction::I64Add);
    f.instruction(&Instruction::I64Store(bursts));
    f.instruction(&Instruction::End);
    f
}

/// The opcode of `if`.
const OPCODE_IF: u8 = 0x04;
const OPCODE_LOOP: u8 = 0x03;
const OPCODE_BR_IF: u8 = 0x0d;
const OPCODE_END: u8 = 0x0b;

/// Sampled mode: a loop whose iterations can also run in a copy without probes (see "Sampling in
/// loops" in the module docs).
struct LoopCopy {
    /// The `loop` operator and its `end`.
    start: usize,
    end: usize,
    /// `r` when the loop's back edge ends its path, and when the loop is left.
    path: u64,
    exit: u64,
    /// Byte offset of the `u64` count of the ticks missed while the copy ran.
    slot: u32,
}

/// Sampled mode: the loops that get a copy without probes, each with a slot of bursts taken from
/// `layout`: the loops of one block (a header whose only branch is the `br_if` back to it right
/// before the loop's `end`) that call nothing and nest nothing; their copies are their bytes.
fn loop_copies(p: &FuncProbe, bytes: &[u8], layout: &mut Layout) -> Vec<LoopCopy> {
    let fcfg = &p.fcfg;
    let opcode = |i: usize| bytes[fcfg.op_offsets[i] as usize];
    // Operators that branch, call, nest, trap for good or throw (and the prefix of the GC operators,
    // whose `br_on_cast` branches): none may sit inside such a loop.
    let control = |op: u8| matches!(op, 0x00 | 0x02..=0x15 | 0x18 | 0x19 | 0x1f | 0xd5 | 0xd6 | 0xfb);
    let mut loops = Vec::new();
    for (k, &(start, h)) in fcfg.block_starts.iter().enumerate() {
        if opcode(start) != OPCODE_LOOP || !p.cut.get(h as usize).copied().unwrap_or(false) {
            continue;
        }
        // The next block starts after the back edge.
        let Some(&(back, _)) = fcfg.block_starts.get(k + 1) else { continue };
        let end = back + 1;
        if end >= fcfg.num_ops || opcode(back) != OPCODE_BR_IF || opcode(end) != OPCODE_END {
            continue;
        }
        if (start + 1..back).any(|i| control(opcode(i))) {
            continue;
        }
        let first_special = fcfg.specials.partition_point(|&(op, _)| op <= start);
        if fcfg.specials.get(first_special).is_some_and(|&(op, _)| op < end) {
            continue;
        }
        let Ok(site) = fcfg.sites.binary_search_by_key(&back, |s| s.op) else { continue };
        let SiteKind::Cond(taken, not_taken) = fcfg.sites[site].kind else { continue };
        if fcfg.cfg.edges()[taken as usize].to != Succ::Block(h) {
            continue;
        }
        let r = p.start_inc[h as usize];
        let path = r.wrapping_add(p.edge_inc[taken as usize]);
        let exit = r.wrapping_add(p.edge_inc[not_taken as usize]);
        let width = |v: u64| if p.bits == 32 { v as u32 as u64 } else { v };
        let slot = layout.counters as u32;
        layout.counters += 8;
        loops.push(LoopCopy { start, end, path: width(path), exit: width(exit), slot });
    }
    loops
}

/// Emits probe code into one function.
struct Emitter<'f> {
    f: &'f mut Function,
    r: u32,
    s: u32,
    a: u32,
    bits: u32,
    memory: u32,
    counters: Counters,
    func_index: u32,
    count_import: u32,
    tables_base: u64,
    /// Local of the first loop counter; the others follow.
    first_loop_local: u32,
    /// Stream mode: an `i64` scratch local for the item.
    t: u32,
    /// Stream mode with singles: an `i32` local, non-zero once the entry marker is written.
    entered: u32,
    loops: &'f [LoopCounter],
    /// Local of the first run counter's length (`i64`); the others follow.
    first_run_local: u32,
    runs: &'f [RunCounter],
    /// Sampled mode: the buffer samples go to, instead of the sample import.
    sample_buffer: Option<SampleBufferLayout>,
    /// Sampled mode with loop copies: an `i32` local counting the iterations of a copy.
    n: u32,
}

impl Emitter<'_> {
    fn konst(&mut self, v: u64) {
        if self.bits == 32 {
            self.f.instruction(&Instruction::I32Const(v as u32 as i32));
        } else {
            self.f.instruction(&Instruction::I64Const(v as i64));
        }
    }

    fn add_op(&mut self) {
        self.f.instruction(if self.bits == 32 { &Instruction::I32Add } else { &Instruction::I64Add });
    }

    /// `r = v`.
    fn set(&mut self, v: u64) {
        self.konst(v);
        self.f.instruction(&Instruction::LocalSet(self.r));
    }

    /// `r += v` (nothing for 0).
    fn add(&mut self, v: u64) {
        if v == 0 {
            return;
        }
        self.f.instruction(&Instruction::LocalGet(self.r));
        self.konst(v);
        self.add_op();
        self.f.instruction(&Instruction::LocalSet(self.r));
    }

    /// `r += table[min(index, n)]`, leaving the index on the stack.
    fn add_from_table(&mut self, offset: u32, n: u32) {
        let width = if self.bits == 32 { 2 } else { 3 };
        self.f.instruction(&Instruction::LocalTee(self.s));
        self.f.instruction(&Instruction::LocalGet(self.s));
        self.f.instruction(&Instruction::I32Const(n as i32));
        self.f.instruction(&Instruction::LocalGet(self.s));
        self.f.instruction(&Instruction::I32Const(n as i32));
        self.f.instruction(&Instruction::I32LtU);
        self.f.instruction(&Instruction::Select);
        self.f.instruction(&Instruction::I32Const(width));
        self.f.instruction(&Instruction::I32Shl);
        let arg = MemArg { offset: self.tables_base + offset as u64, align: width as u32, memory_index: self.memory };
        let load = if self.bits == 32 { Instruction::I32Load(arg) } else { Instruction::I64Load(arg) };
        self.f.instruction(&load);
        self.f.instruction(&Instruction::LocalGet(self.r));
        self.add_op();
        self.f.instruction(&Instruction::LocalSet(self.r));
    }

    /// `counter[path] += value on the stack`, at a constant address.
    fn add_to_counter(&mut self, path: u64, value: &[Instruction]) {
        let Counters::Array { offset } = self.counters else { unreachable!("constant counts use arrays") };
        let arg = MemArg { offset: offset as u64 + 8 * path, align: 3, memory_index: self.memory };
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Load(arg));
        for i in value {
            self.f.instruction(i);
        }
        self.f.instruction(&Instruction::I64Add);
        self.f.instruction(&Instruction::I64Store(arg));
    }

    /// The `i64` word at byte `slot` of the profiler's memory.
    fn slot(&self, slot: u32) -> MemArg {
        MemArg { offset: slot as u64, align: 3, memory_index: self.memory }
    }

    /// `n += delta` for loop counter `i`, and its slot updated with a plain store.
    fn bump_loop(&mut self, i: usize, delta: &[Instruction]) {
        self.bump_mirrored(self.first_loop_local + i as u32, self.loops[i].slot, delta);
    }

    /// `n += delta` for the `i64` local `n`, mirrored in the word at byte `slot` with a plain store.
    fn bump_mirrored(&mut self, n: u32, slot: u32, delta: &[Instruction]) {
        self.f.instruction(&Instruction::LocalGet(n));
        for d in delta {
            self.f.instruction(d);
        }
        self.f.instruction(&Instruction::I64Add);
        self.f.instruction(&Instruction::LocalSet(n));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::LocalGet(n));
        self.f.instruction(&Instruction::I64Store(self.slot(slot)));
    }

    /// `n -= 1` for loop counter `i`, on an edge into the header that bumps it; the slot keeps its
    /// value, which the header's store restores before anything can trap.
    fn unbump_loop(&mut self, i: usize) {
        let n = self.first_loop_local + i as u32;
        self.f.instruction(&Instruction::LocalGet(n));
        self.f.instruction(&Instruction::I64Const(-1));
        self.f.instruction(&Instruction::I64Add);
        self.f.instruction(&Instruction::LocalSet(n));
    }

    /// Counts the path taken by an edge into an edge-counted header.
    fn count_edge(&mut self, how: HeaderEdge, inc: u64) {
        match how {
            HeaderEdge::Loop(i) => self.bump_loop(i, &[Instruction::I64Const(1)]),
            HeaderEdge::Around(_) => {}
            HeaderEdge::Constant(k) => self.add_to_counter(k, &[Instruction::I64Const(1)]),
            HeaderEdge::Dynamic => {
                self.add(inc);
                self.count();
            }
        }
    }

    /// Counts the path of a `br_if` whose taken edge enters an edge-counted header, leaving the
    /// condition on the stack. The not-taken increment is added either way: when the branch is taken
    /// the header sets `r` afresh.
    fn count_cond(&mut self, how: HeaderEdge, taken: u64, not_taken: u64) {
        match how {
            // The header counts the way around; the condition stays where it is.
            HeaderEdge::Around(_) => {}
            HeaderEdge::Loop(i) => {
                self.f.instruction(&Instruction::LocalTee(self.s));
                let one_if_taken = [
                    Instruction::LocalGet(self.s),
                    Instruction::I32Eqz,
                    Instruction::I32Eqz,
                    Instruction::I64ExtendI32U,
                ];
                self.bump_loop(i, &one_if_taken);
            }
            HeaderEdge::Constant(_) | HeaderEdge::Dynamic => {
                self.f.instruction(&Instruction::LocalTee(self.s));
                self.f.instruction(&Instruction::If(BlockType::Empty));
                if let HeaderEdge::Constant(k) = how {
                    self.add_to_counter(k, &[Instruction::I64Const(1)]);
                } else {
                    self.add(taken);
                    self.count();
                }
                self.f.instruction(&Instruction::End);
                self.f.instruction(&Instruction::LocalGet(self.s));
            }
        }
        self.add(not_taken);
    }

    /// Counts the path ending at a header with run counter `j`: the run grows when the path is the
    /// one whose ID its slot holds; otherwise the run goes to the array and a run of this path starts.
    /// The ID is compared in memory, where only a change of path stores it, so that the header keeps
    /// one local (the run's length) and no dependence through memory from one iteration to the next.
    fn count_run(&mut self, j: usize) {
        let id = self.run_path(j);
        self.r_as_i32();
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Load(id));
        self.f.instruction(&Instruction::I32Ne);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.flush_run_counter(j);
        // The ID's high word stays 0: counted paths have 32-bit IDs.
        self.f.instruction(&Instruction::I32Const(0));
        self.r_as_i32();
        self.f.instruction(&Instruction::I32Store(id));
        self.f.instruction(&Instruction::End);
        self.bump_mirrored(self.first_run_local + j as u32, self.runs[j].slot, &[Instruction::I64Const(1)]);
    }

    /// The low word of run counter `j`'s path ID.
    fn run_path(&self, j: usize) -> MemArg {
        MemArg { offset: u64::from(self.runs[j].slot) + 8, align: 2, memory_index: self.memory }
    }

    /// Pushes `r` as an `i32` (array-counted paths have 32-bit IDs).
    fn r_as_i32(&mut self) {
        self.f.instruction(&Instruction::LocalGet(self.r));
        if self.bits == 64 {
            self.f.instruction(&Instruction::I32WrapI64);
        }
    }

    /// Adds run counter `j`'s pending run to its path's counter and empties its slot.
    fn flush_run_counter(&mut self, j: usize) {
        let Counters::Array { offset } = self.counters else { unreachable!("run counters count in arrays") };
        let id = self.run_path(j);
        self.flush_mirrored(self.first_run_local + j as u32, self.runs[j].slot, |e, n| {
            e.f.instruction(&Instruction::I32Const(0));
            e.f.instruction(&Instruction::I32Load(id));
            e.add_in_array(offset, &[Instruction::LocalGet(n)]);
        });
    }

    /// When the `i64` local `n` is not 0: `add` adds it to its path's counter, then `n` and its
    /// mirror at byte `slot` are emptied.
    fn flush_mirrored(&mut self, n: u32, slot: u32, add: impl FnOnce(&mut Self, u32)) {
        self.f.instruction(&Instruction::LocalGet(n));
        self.f.instruction(&Instruction::I64Eqz);
        self.f.instruction(&Instruction::I32Eqz);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        add(self, n);
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Const(0));
        self.f.instruction(&Instruction::I64Store(self.slot(slot)));
        self.f.instruction(&Instruction::End);
        // Zero either way: a constant after the flush, which the compiler need not keep in a
        // register across the call that follows.
        self.f.instruction(&Instruction::I64Const(0));
        self.f.instruction(&Instruction::LocalSet(n));
    }

    /// Adds every loop and run counter to its path's counter and empties its slot.
    fn flush_loops(&mut self) {
        self.flush_some(u8::MAX);
    }

    /// Adds the loop and run counters of `mask` (see `RUN_BIT`) to their paths' counters and empties
    /// their slots.
    fn flush_some(&mut self, mask: u8) {
        for j in (0..self.runs.len()).filter(|j| mask & (1 << (RUN_BIT + j)) != 0) {
            self.flush_run_counter(j);
        }
        for i in (0..self.loops.len()).filter(|i| mask & (1 << i) != 0) {
            let LoopCounter { path, slot } = self.loops[i];
            self.flush_mirrored(self.first_loop_local + i as u32, slot, |e, n| {
                e.add_to_counter(path, &[Instruction::LocalGet(n)]);
            });
        }
    }

    /// Appends an item to the stream buffer; a full buffer is handed to the host.
    fn append(&mut self, item: &[Instruction]) {
        let mem = |offset: u32, align: u32| MemArg { offset: u64::from(offset), align, memory_index: self.memory };
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Load(mem(STREAM_INDEX, 2)));
        self.f.instruction(&Instruction::LocalTee(self.a));
        self.f.instruction(&Instruction::I32Const(3));
        self.f.instruction(&Instruction::I32Shl);
        for i in item {
            self.f.instruction(i);
        }
        self.f.instruction(&Instruction::I64Store(mem(STREAM_BUFFER, 3)));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::LocalGet(self.a));
        self.f.instruction(&Instruction::I32Const(1));
        self.f.instruction(&Instruction::I32Add);
        self.f.instruction(&Instruction::LocalTee(self.a));
        self.f.instruction(&Instruction::I32Store(mem(STREAM_INDEX, 2)));
        self.f.instruction(&Instruction::LocalGet(self.a));
        self.f.instruction(&Instruction::I32Const(STREAM_CAPACITY as i32));
        self.f.instruction(&Instruction::I32Eq);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.f.instruction(&Instruction::Call(self.count_import));
        self.f.instruction(&Instruction::End);
    }

    /// Appends the repetitions of the last item still pending, if any, as a [`STREAM_RUN_TAG`] item.
    fn flush_run(&mut self) {
        let run = self.slot(STREAM_RUN);
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Load(run));
        self.f.instruction(&Instruction::I64Eqz);
        self.f.instruction(&Instruction::I32Eqz);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.append(&[
            Instruction::I32Const(0),
            Instruction::I64Load(run),
            Instruction::I64Const(STREAM_RUN_TAG as i64),
            Instruction::I64Or,
        ]);
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Const(0));
        self.f.instruction(&Instruction::I64Store(run));
        self.f.instruction(&Instruction::End);
    }

    /// Appends the item in local `t` and makes it the last one.
    fn append_last(&mut self) {
        self.flush_run();
        self.append(&[Instruction::LocalGet(self.t)]);
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::LocalGet(self.t));
        self.f.instruction(&Instruction::I64Store(self.slot(STREAM_LAST)));
    }

    /// In stream mode without singles, the activation-entry marker, at the function's entry.
    fn enter(&mut self) {
        if let Counters::Stream { singles: None } = self.counters {
            self.enter_marker();
        }
    }

    fn enter_marker(&mut self) {
        self.f.instruction(&Instruction::I64Const((STREAM_ENTER | u64::from(self.func_index)) as i64));
        self.f.instruction(&Instruction::LocalSet(self.t));
        self.append_last();
    }

    /// Stream mode: appends the path whose ID is in `r`, tagged with `tag`, or counts a repetition of
    /// the last item.
    fn stream_path(&mut self, tag: u64) {
        let run = self.slot(STREAM_RUN);
        self.f.instruction(&Instruction::LocalGet(self.r));
        self.f.instruction(&Instruction::I64ExtendI32U);
        self.f.instruction(&Instruction::I64Const((tag | u64::from(self.func_index) << 32) as i64));
        self.f.instruction(&Instruction::I64Or);
        self.f.instruction(&Instruction::LocalTee(self.t));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Load(self.slot(STREAM_LAST)));
        self.f.instruction(&Instruction::I64Eq);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Load(run));
        self.f.instruction(&Instruction::I64Const(1));
        self.f.instruction(&Instruction::I64Add);
        self.f.instruction(&Instruction::I64Store(run));
        self.f.instruction(&Instruction::Else);
        self.append_last();
        self.f.instruction(&Instruction::End);
    }

    /// Sampled mode with a buffer (see `map::SampleBufferLayout`): while the flag is set, lets
    /// `skip` path ends go by, then appends `function << 32 | r` to the buffer and decrements the
    /// flag, last, so that the host sees the sample once it sees the flag change.
    fn sample_to_buffer(&mut self) {
        let layout = self.sample_buffer.expect("called in sampled mode with a buffer");
        let word = |offset| word(self.memory, offset);
        let (flag, skip) = (word(0), word(layout.skip));
        let f = &mut *self.f;
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::I32Load(flag));
        f.instruction(&Instruction::If(BlockType::Empty));
        if layout.atomic {
            // Orders the flag's load before those of the words the host wrote before setting it.
            f.instruction(&Instruction::AtomicFence);
        }
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::I32Load(skip));
        f.instruction(&Instruction::If(BlockType::Empty));
        add_to_word(f, skip, -1, false);
        f.instruction(&Instruction::Else);
        // function << 32 | r
        let mut item =
            vec![Instruction::I64Const((u64::from(self.func_index) << 32) as i64), Instruction::LocalGet(self.r)];
        if self.bits == 32 {
            item.push(Instruction::I64ExtendI32U);
        }
        item.push(Instruction::I64Or);
        append_sample(f, layout, self.memory, &item);
        f.instruction(&Instruction::End);
        f.instruction(&Instruction::End);
    }

    /// Before a loop with a copy without probes: while the flag is 0, the copy runs instead (see
    /// "Sampling in loops" in the module docs). `block_type` is the loop's, as encoded.
    fn choose_loop_copy(&mut self, block_type: &[u8]) {
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Load(self.flag_word()));
        self.f.raw(std::iter::once(OPCODE_IF).chain(block_type.iter().copied()));
    }

    fn flag_word(&self) -> MemArg {
        word(self.memory, 0)
    }

    /// The copy without probes of a loop (`loop_op`, then `body` up to its `end`), counting its
    /// iterations in `n`; then `r` as the instrumented loop leaves it and, when the flag was set
    /// while the copy ran, a call of the module's [`loop_copy_exit`] function.
    fn loop_copy(&mut self, loop_op: &[u8], body: &[u8], l: &LoopCopy, exit_func: u32) {
        let (n, flag) = (self.n, self.flag_word());
        let f = &mut *self.f;
        f.instruction(&Instruction::Else);
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::LocalSet(n));
        f.raw(loop_op.iter().copied());
        f.instruction(&Instruction::LocalGet(n));
        f.instruction(&Instruction::I32Const(1));
        f.instruction(&Instruction::I32Add);
        f.instruction(&Instruction::LocalSet(n));
        f.raw(body.iter().copied());
        self.set(l.exit);
        let f = &mut *self.f;
        // An atomic load: the compiler would otherwise reuse the value of the load before the loop,
        // as no store of the module's comes between them, and miss the host's.
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::I32AtomicLoad(flag));
        f.instruction(&Instruction::If(BlockType::Empty));
        f.instruction(&Instruction::LocalGet(n));
        f.instruction(&Instruction::I64Const((u64::from(self.func_index) << 32 | l.path) as i64));
        f.instruction(&Instruction::I32Const(l.slot as i32));
        f.instruction(&Instruction::Call(exit_func));
        f.instruction(&Instruction::End);
        // The end of the choice between the loop and its copy.
        f.instruction(&Instruction::End);
    }

    /// `counter[r]++` in the array at `offset`.
    fn count_in_array(&mut self, offset: u32) {
        self.r_as_i32();
        self.add_in_array(offset, &[Instruction::I64Const(1)]);
    }

    /// `counter[id] += value` in the array at `offset`, for the path ID (`i32`) on the stack.
    fn add_in_array(&mut self, offset: u32, value: &[Instruction]) {
        let arg = MemArg { offset: offset as u64, align: 3, memory_index: self.memory };
        self.f.instruction(&Instruction::I32Const(3));
        self.f.instruction(&Instruction::I32Shl);
        self.f.instruction(&Instruction::LocalTee(self.a));
        self.f.instruction(&Instruction::LocalGet(self.a));
        self.f.instruction(&Instruction::I64Load(arg));
        for v in value {
            self.f.instruction(v);
        }
        self.f.instruction(&Instruction::I64Add);
        self.f.instruction(&Instruction::I64Store(arg));
    }

    /// Counts the path whose ID is in `r`, which ends at the function's exit.
    fn count_exit(&mut self) {
        self.count_tagged(STREAM_PATH_EXIT);
    }

    /// Counts the path whose ID is in `r`.
    fn count(&mut self) {
        self.count_tagged(0);
    }

    /// Counts the path whose ID is in `r`; in stream mode, the item carries `tag`.
    fn count_tagged(&mut self, tag: u64) {
        match self.counters {
            Counters::Array { offset } => self.count_in_array(offset),
            Counters::Stream { singles: None } => self.stream_path(tag),
            Counters::Stream { singles: Some(offset) } => {
                // The entry marker goes before the activation's first streamed path; an activation
                // that reaches its exit without one ended a single path, counted in the array.
                self.f.instruction(&Instruction::LocalGet(self.entered));
                if tag == STREAM_PATH_EXIT {
                    self.f.instruction(&Instruction::If(BlockType::Empty));
                    self.stream_path(tag);
                    self.f.instruction(&Instruction::Else);
                    self.count_in_array(offset);
                    self.f.instruction(&Instruction::End);
                } else {
                    self.f.instruction(&Instruction::I32Eqz);
                    self.f.instruction(&Instruction::If(BlockType::Empty));
                    self.enter_marker();
                    self.f.instruction(&Instruction::I32Const(1));
                    self.f.instruction(&Instruction::LocalSet(self.entered));
                    self.f.instruction(&Instruction::End);
                    self.stream_path(tag);
                }
            }
            Counters::Sampled if self.sample_buffer.is_some() => self.sample_to_buffer(),
            Counters::Sampled => {
                self.f.instruction(&Instruction::I32Const(0));
                self.f.instruction(&Instruction::I32Load(self.flag_word()));
                self.f.instruction(&Instruction::If(BlockType::Empty));
                self.f.instruction(&Instruction::I32Const(self.func_index as i32));
                self.f.instruction(&Instruction::LocalGet(self.r));
                if self.bits == 32 {
                    self.f.instruction(&Instruction::I64ExtendI32U);
                }
                self.f.instruction(&Instruction::Call(self.count_import));
                self.f.instruction(&Instruction::End);
            }
            Counters::Hash => {
                self.f.instruction(&Instruction::I32Const(self.func_index as i32));
                self.f.instruction(&Instruction::LocalGet(self.r));
                if self.bits == 32 {
                    self.f.instruction(&Instruction::I64ExtendI32U);
                }
                self.f.instruction(&Instruction::Call(self.count_import));
            }
        }
    }
}

/// What every instrumented body is emitted from: the module's facts and the profiler's additions
/// that bodies refer to. Bodies are independent of one another and are emitted on all cores.
struct BodyContext<'a> {
    info: &'a ModuleInfo,
    shift: FunctionShift,
    tables_base: u64,
    sample_buffer: Option<SampleBufferLayout>,
    /// Sampled mode with loop copies: the index of [`loop_copy_exit`] in the instrumented module.
    loop_copy_exit: Option<u32>,
}

impl BodyContext<'_> {
    /// The instrumented body (locals and instructions) of defined function `k`.
    fn emit(&self, k: usize, p: &FuncProbe, func: &FunctionBody) -> Result<Vec<u8>, ReencodeError<Infallible>> {
        let mut shift = self.shift;
        let index = self.info.num_imported_funcs + k as u32;
        let ty = self.info.func_type(index).expect("validated");
        let mut locals = Vec::new();
        let mut num_locals = ty.params().len() as u32;
        for pair in func.get_locals_reader()? {
            let (count, t) = pair?;
            num_locals += count;
            locals.push((count, shift.val_type(t)?));
        }
        let reg_ty = if p.bits == 32 { ValType::I32 } else { ValType::I64 };
        let r = num_locals;
        let s = num_locals + 1;
        let a = num_locals + 2;
        locals.push((1, reg_ty));
        locals.push((2, ValType::I32));
        if !p.counting.loops.is_empty() {
            locals.push((p.counting.loops.len() as u32, ValType::I64));
        }
        let first_run_local = num_locals + 3 + p.counting.loops.len() as u32;
        if !p.counting.runs.is_empty() {
            locals.push((p.counting.runs.len() as u32, ValType::I64));
        }
        let t = first_run_local + p.counting.runs.len() as u32;
        let mut n = t;
        if let Counters::Stream { .. } = p.counters {
            locals.push((1, ValType::I64));
            // Whether the activation's entry marker was written.
            locals.push((1, ValType::I32));
            n += 2;
        }
        let bytes = func.as_bytes();
        if !p.copies.is_empty() {
            // The copy's iterations.
            locals.push((1, ValType::I32));
        }
        let mut f = Function::new(locals);
        let mut e = Emitter {
            f: &mut f,
            r,
            s,
            a,
            bits: p.bits,
            memory: self.info.num_memories,
            counters: p.counters,
            func_index: index,
            count_import: self.info.num_imported_funcs,
            tables_base: self.tables_base,
            first_loop_local: num_locals + 3,
            t,
            entered: t + 1,
            loops: &p.counting.loops,
            first_run_local,
            runs: &p.counting.runs,
            sample_buffer: self.sample_buffer,
            n,
        };
        e.f.instruction(&Instruction::Block(p.wrapper));
        e.enter();
        e.set(p.entry_inc);

        // Operators are copied from the original body in runs, up to the next one that needs code
        // before or after it or is rewritten; they are not decoded again.
        let offsets = &p.fcfg.op_offsets;
        let mut copied = 0usize;
        let copy_to = |f: &mut Function, i: usize, copied: &mut usize| {
            if *copied < i {
                f.raw(bytes[offsets[*copied] as usize..offsets[i] as usize].iter().copied());
            }
            *copied = i;
        };
        let mut sites = p.fcfg.sites.iter().peekable();
        let mut specials = p.fcfg.specials.iter().peekable();
        let mut starts = p.fcfg.block_starts.iter().peekable();
        let mut copies = p.copies.iter().peekable();
        // The block of the current operator: blocks start in operator order.
        let mut block = p.fcfg.cfg.entry() as usize;
        let last_op = p.fcfg.num_ops - 1;
        let mut i = 0;
        while i <= last_op {
            // Straight to the next operator that a site, a special operator or a block start names:
            // the ones before it are copied with it.
            i = [
                sites.peek().map(|s| s.op),
                specials.peek().map(|&&(op, _)| op),
                starts.peek().map(|&&(op, _)| op),
                copies.peek().map(|c| c.end),
            ]
            .into_iter()
            .flatten()
            .fold(last_op, usize::min);
            let site = sites.next_if(|s| s.op == i).map(|s| &s.kind);
            let special = specials.next_if(|&&(op, _)| op == i).map(|&(_, s)| s);
            // The block that starts after this operator, and whether its start ends a path.
            let mut next = None;
            let mut after = None;
            while let Some(&(_, b)) = starts.next_if(|&&(op, _)| op == i) {
                next = Some(b as usize);
                if p.cut.get(b as usize).copied().unwrap_or(false) {
                    after = Some(b);
                }
            }
            let last = i == last_op;
            let copy_end = copies.peek().is_some_and(|c| c.end == i);
            if site.is_none() && special.is_none() && after.is_none() && !last && !copy_end {
                block = next.unwrap_or(block);
                i += 1;
                continue;
            }
            copy_to(e.f, i, &mut copied);
            // Single-byte opcodes of the operators that sites distinguish.
            let opcode = bytes[offsets[i] as usize];
            let mut correction = 0;
            match site {
                Some(SiteKind::Edge(edge)) => match p.counting.header_edge[*edge as usize] {
                    Some(how) => {
                        e.count_edge(how, p.edge_inc[*edge as usize]);
                        if let Some(l) = p.unbumped_by(*edge, how) {
                            e.unbump_loop(l);
                        }
                    }
                    None => e.add(p.edge_inc[*edge as usize]),
                },
                Some(SiteKind::Cond(t, nt)) => match p.counting.header_edge[*t as usize] {
                    Some(how) => e.count_cond(how, p.edge_inc[*t as usize], p.edge_inc[*nt as usize]),
                    None => {
                        // The edge into the code right after the operator (`if`'s then-arm, `br_if`'s
                        // fall-through) corrects an increment added before it for the other edge.
                        let (before, after) = if opcode == OPCODE_IF { (*nt, *t) } else { (*t, *nt) };
                        let before = p.edge_inc[before as usize];
                        e.add(before);
                        correction = p.edge_inc[after as usize].wrapping_sub(before);
                    }
                },
                Some(SiteKind::Table(entries)) => {
                    if let Some(&off) = p.tables.get(&i) {
                        // The entries are the table's targets, then its default.
                        e.add_from_table(off, entries.len() as u32 - 1);
                    }
                }
                Some(SiteKind::TailCall(edge)) => {
                    e.add(p.edge_inc[*edge as usize]);
                    e.count_exit();
                    e.flush_loops();
                }
                None => {}
            }
            // The operator anew, when it changes.
            let rewritten = match special {
                Some(Special::Return { depth }) => Some(Instruction::Br(depth)),
                Some(Special::Call { callee }) => {
                    // A callee may re-enter this function, whose activations share the slots; the
                    // host functions of an import cannot, and a trap or exit there leaves the slots
                    // as they are.
                    if callee.is_none_or(|c| c >= self.info.num_imported_funcs) {
                        e.flush_some(p.counting.flush_at[block]);
                    }
                    callee.and_then(|c| shift.moved(c)).map(Instruction::Call)
                }
                Some(Special::ReturnCall { func }) => shift.moved(func).map(Instruction::ReturnCall),
                Some(Special::RefFunc { func }) => shift.moved(func).map(Instruction::RefFunc),
                None => None,
            };
            if let Some(ins) = rewritten {
                e.f.instruction(&ins);
                copied = i + 1;
            } else if last {
                e.f.instruction(&Instruction::End);
                e.flush_loops();
                e.count_exit();
                e.f.instruction(&Instruction::End);
                copied = i + 1;
            }
            if copies.peek().is_some_and(|c| c.start == i) {
                e.choose_loop_copy(&bytes[offsets[i] as usize + 1..offsets[i + 1] as usize]);
            }
            // The operator itself, unless rewritten above.
            copy_to(e.f, i + 1, &mut copied);
            if let Some(c) = copies.next_if(|c| c.end == i) {
                let (start, body, end) =
                    (offsets[c.start] as usize, offsets[c.start + 1] as usize, offsets[i + 1] as usize);
                let exit = self.loop_copy_exit.expect("a module with loop copies has their exit function");
                e.loop_copy(&bytes[start..body], &bytes[body..end], c, exit);
            }
            e.add(correction);
            if let Some(b) = after {
                if let Some(j) = p.counting.header_run[b as usize] {
                    e.count_run(j);
                } else if !p.counting.edge_counted[b as usize] {
                    e.count();
                }
                e.set(p.start_inc[b as usize]);
                if let Some(l) = p.counting.header_loop[b as usize] {
                    e.bump_loop(l, &[Instruction::I64Const(1)]);
                }
            }
            block = next.unwrap_or(block);
            i += 1;
        }
        Ok(f.into_raw_body())
    }
}

/// Re-encodes instructions of the original module for the instrumented one, where the profiler's
/// import (when there is one) comes after the program's imports and shifts the defined functions.
#[derive(Clone, Copy)]
struct FunctionShift {
    /// Index of the first defined function, when the profiler adds an import.
    first_shifted: Option<u32>,
}

impl FunctionShift {
    /// The index of function `func` in the instrumented module, when the profiler adds an import
    /// (`None` when it does not: no index changes).
    fn moved(&self, func: u32) -> Option<u32> {
        let first = self.first_shifted?;
        Some(if func >= first { func + 1 } else { func })
    }
}

impl Reencode for FunctionShift {
    type Error = Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, ReencodeError<Infallible>> {
        Ok(self.moved(func).unwrap_or(func))
    }
}

impl Reencode for Rewriter<'_> {
    type Error = Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, ReencodeError<Infallible>> {
        self.shift.function_index(func)
    }

    fn parse_type_section(&mut self, types: &mut TypeSection, section: wasmparser::TypeSectionReader<'_>) -> Res {
        wasm_encoder::reencode::utils::parse_type_section(self, types, section)?;
        if self.import_type.is_some() {
            if self.stream {
                types.ty().function([], []);
            } else {
                types.ty().function([ValType::I32, ValType::I64], []);
            }
        }
        for results in &self.new_types {
            types.ty().function([], results.iter().copied());
        }
        if self.loop_copy_exit.is_some() {
            types.ty().function(LOOP_COPY_EXIT_PARAMS, []);
        }
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        functions: &mut wasm_encoder::FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> Res {
        wasm_encoder::reencode::utils::parse_function_section(self, functions, section)?;
        if let Some((ty, _)) = &self.loop_copy_exit {
            functions.function(*ty);
        }
        Ok(())
    }

    fn parse_code_section(&mut self, code: &mut CodeSection, section: wasmparser::CodeSectionReader<'_>) -> Res {
        wasm_encoder::reencode::utils::parse_code_section(self, code, section)?;
        if let Some((_, body)) = &self.loop_copy_exit {
            code.function(body);
        }
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut ImportSection,
        section: wasmparser::ImportSectionReader<'_>,
    ) -> Res {
        wasm_encoder::reencode::utils::parse_import_section(self, imports, section)?;
        self.import_section(imports);
        self.emitted.push(SectionId::Import);
        Ok(())
    }

    fn parse_memory_section(
        &mut self,
        memories: &mut MemorySection,
        section: wasmparser::MemorySectionReader<'_>,
    ) -> Res {
        wasm_encoder::reencode::utils::parse_memory_section(self, memories, section)?;
        self.memory_section(memories);
        self.emitted.push(SectionId::Memory);
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        exports: &mut ExportSection,
        section: wasmparser::ExportSectionReader<'_>,
    ) -> Res {
        wasm_encoder::reencode::utils::parse_export_section(self, exports, section)?;
        self.export_section(exports);
        self.emitted.push(SectionId::Export);
        Ok(())
    }

    fn data_count(&mut self, count: u32) -> Result<u32, ReencodeError<Infallible>> {
        Ok(count + self.profiler_data.len() as u32)
    }

    fn parse_data_section(&mut self, data: &mut DataSection, section: wasmparser::DataSectionReader<'_>) -> Res {
        wasm_encoder::reencode::utils::parse_data_section(self, data, section)?;
        self.data_section(data);
        self.emitted.push(SectionId::Data);
        Ok(())
    }

    fn parse_function_body(&mut self, code: &mut CodeSection, func: FunctionBody<'_>) -> Res {
        let k = self.next_body;
        self.next_body += 1;
        match self.bodies[k].take() {
            Some(body) => {
                code.raw(&body?);
                Ok(())
            }
            None => wasm_encoder::reencode::utils::parse_function_body(self, code, func),
        }
    }

    fn parse_custom_section(&mut self, module: &mut Module, section: wasmparser::CustomSectionReader<'_>) -> Res {
        // Debug info describes the original code offsets; the profile maps offsets itself. Branch
        // hints name operators by their offsets in the original bodies, which the probes move.
        if section.name().starts_with(".debug_") || section.name() == BRANCH_HINT_SECTION {
            return Ok(());
        }
        wasm_encoder::reencode::utils::parse_custom_section(self, module, section)
    }

    fn intersperse_section_hook(
        &mut self,
        module: &mut Module,
        after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> Res {
        let lo = after.map_or(0, rank);
        let hi = before.map_or(u32::MAX, rank);
        for id in [SectionId::Import, SectionId::Memory, SectionId::Export, SectionId::Data] {
            if self.wants(id) && !self.emitted.contains(&id) && lo < rank(id) && rank(id) < hi {
                match id {
                    SectionId::Import => {
                        let mut s = ImportSection::new();
                        self.import_section(&mut s);
                        module.section(&s);
                    }
                    SectionId::Memory => {
                        let mut s = MemorySection::new();
                        self.memory_section(&mut s);
                        module.section(&s);
                    }
                    SectionId::Export => {
                        let mut s = ExportSection::new();
                        self.export_section(&mut s);
                        module.section(&s);
                    }
                    _ => {
                        let mut s = DataSection::new();
                        self.data_section(&mut s);
                        module.section(&s);
                    }
                }
                self.emitted.push(id);
            }
        }
        Ok(())
    }
}

/// Name of the custom section of the branch-hinting proposal.
const BRANCH_HINT_SECTION: &str = "metadata.code.branch_hint";

/// Position of a section in the binary format's order.
fn rank(id: SectionId) -> u32 {
    match id {
        SectionId::Custom => 0,
        SectionId::Type => 1,
        SectionId::Import => 2,
        SectionId::Function => 3,
        SectionId::Table => 4,
        SectionId::Memory => 5,
        SectionId::Tag => 6,
        SectionId::Global => 7,
        SectionId::Export => 8,
        SectionId::Start => 9,
        SectionId::Element => 10,
        SectionId::DataCount => 11,
        SectionId::Code => 12,
        SectionId::Data => 13,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmparser::Payload;

    fn has_section(bytes: &[u8], name: &str) -> bool {
        Parser::new(0).parse_all(bytes).any(|p| matches!(p, Ok(Payload::CustomSection(c)) if c.name() == name))
    }

    /// The input's branch hints would point into the instrumented bodies at the wrong operators;
    /// other custom sections pass through.
    #[test]
    fn drops_the_input_branch_hints() {
        let wasm = wat::parse_str(
            r#"(module (@custom "kept" "")
                 (func (param i32)
                   local.get 0
                   (@metadata.code.branch_hint "\00") if nop end))"#,
        )
        .unwrap();
        assert!(has_section(&wasm, BRANCH_HINT_SECTION) && has_section(&wasm, "kept"));
        let out = instrument(&wasm, &InstrumentOptions::default()).unwrap();
        assert!(!has_section(&out.bytes, BRANCH_HINT_SECTION));
        assert!(has_section(&out.bytes, "kept"));
    }
}
