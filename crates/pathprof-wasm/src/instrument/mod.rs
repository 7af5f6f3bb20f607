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
//! counts, samples or a stream), which gives every function a [`Sink`](sink::Sink) of its own; the
//! rest of the instrumenter asks the kind and the sink what they need and passes the sink to the
//! code it emits. The sinks' memory and imports are the [ABI](crate::abi)'s.
//!
//! The modules, in the order the work is done:
//!
//! * this one — [`instrument`], the rewrite as named steps;
//! * [`options`] — what the instrumenter is asked to do, and what it gives back;
//! * [`analysis`] — the per-function analyses (CFG, plan, loop counters; on all cores);
//! * [`layout`] — the layout of the profiler's memory;
//! * [`registers`] — the path registers of one body: their increments and tables;
//! * [`probes`] — one function's probes, ready to emit;
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

mod analysis;
mod copies;
mod emit;
mod heads;
mod layout;
mod loops;
mod options;
mod probes;
mod registers;
mod sections;
pub mod sink;
mod switch;
mod walk;

pub use options::{InstrumentOptions, Instrumented, OnlyFunctions};
pub use sink::SinkKind;

use crate::abi::HostCalls;
use crate::branches::FuncBranches;
use crate::cfg::FuncCfg;
use crate::map::{FunctionMap, LoopBursts, ProbeState, Probes, ProfileMap, SupergraphSlots, MAP_FORMAT, MAP_VERSION};
use crate::module::{Bodies, ModuleError, ModuleInfo};
use crate::parallel::{parallel_map, parallel_map_owned};
use crate::throws::Throws;
use analysis::{analyse, Analysis, Planned};
use layout::Layout;
use pathprof_core::profile::BlockInfo;
use probes::FuncProbe;
use sections::{FunctionShift, Rewriter, Signature};
use sink::AppendedFunction;
use sink::Weights;
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, Module, ValType};
use wasmparser::{FunctionBody, Parser};

/// Rewrites `bytes` with path probes.
///
/// The blocks of the map carry no source lines: [`LineTable::attach`](crate::debuginfo::LineTable::attach)
/// reads them from the module's DWARF, when and for the blocks they are wanted.
pub fn instrument(bytes: &[u8], options: &InstrumentOptions) -> Result<Instrumented, ModuleError> {
    let (info, bodies) = ModuleInfo::read_sections(bytes)?;
    let analyses = analyse_all(&info, &bodies, options)?;
    let mut layout = Layout::new(options.sink.header_bytes(), options.array_max_paths, options.array_max_bytes);
    let heads = match options.sink {
        SinkKind::Supergraph { depth, .. } => {
            let starts: Vec<u64> = bodies.iter().map(|b| b.1.range().start as u64).collect();
            Some(heads::Heads::new(&info, &analyses, &starts, usize::from(depth.max(1)), &options.interesting_segments))
        }
        _ => None,
    };
    let mut functions = Functions::default();
    for (k, analysis) in analyses.into_iter().enumerate() {
        let heads = heads.as_ref().map(|h| (h, k));
        functions.add(
            &info,
            &bodies[k].1,
            info.num_imported_funcs + k as u32,
            analysis,
            options,
            &mut layout,
            heads,
        )?;
    }
    let Functions { mut maps, mut probes, branches, new_types } = functions;
    let mut profiler_data = options.sink.initial_data();
    profiler_data.extend(place_slots(&mut probes, &mut maps, &mut layout));
    let sink_layout = options.sink.layout(probes.iter().flatten().any(|p| p.sink.calls_import()));
    let import = sink_layout.import();
    let added = AddedIndices::new(&info, &mut probes, options, &new_types, import.is_some(), bodies.len());
    // A function without any path (every run of it traps) still has array counters, of no slots,
    // and count probes that never run but must validate: any array-counted function needs the memory.
    let any_array = probes.iter().flatten().any(|p| p.sink.counters().array().is_some());
    let tables_base = layout.counters.next_multiple_of(8);
    let memory_size = tables_base + layout.tables.len() as u64;
    let memory_export = (any_array || memory_size > 0).then(|| fresh_export(&info, crate::abi::MEMORY_EXPORT));
    let hooks_export = import
        .filter(|_| options.host_calls == HostCalls::Table)
        .map(|_| fresh_export(&info, crate::abi::HOOKS_EXPORT));
    let memory_pages = memory_size.div_ceil(65536).max(1);
    let shift = added.shift;
    let appended = added.appended.first().map(|f| f.index);
    let context = walk::BodyContext {
        info: &info,
        shift,
        tables_base,
        loop_copy_exit: appended.filter(|_| options.sink != SinkKind::Bursts),
        burst_append: appended.filter(|_| options.sink == SinkKind::Bursts),
    };
    let (emitted, resumed_bodies) = emit_all(&context, probes, &bodies);
    if !layout.tables.is_empty() {
        profiler_data.push((tables_base as u32, std::mem::take(&mut layout.tables)));
    }
    let mut rewriter = Rewriter {
        info: &info,
        shift,
        bodies: emitted,
        appended: added.appended,
        resumed: added.resumed_types.into_iter().zip(resumed_bodies).collect(),
        next_body: 0,
        import: import.zip(added.import_type),
        host_calls: options.host_calls,
        hooks_export: hooks_export.clone(),
        new_types,
        memory_pages,
        memory_export: memory_export.clone(),
        profiler_data,
        emitted: Vec::new(),
        warnings: Vec::new(),
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
        functions: maps,
        origin: None,
    };
    let memory_bytes = if map.memory_export.is_some() { memory_pages * 65536 } else { 0 };
    let warnings = rewriter.warnings;
    Ok(Instrumented { bytes: module.finish(), map, memory_bytes, hooks_export, branches, warnings })
}

/// Every body validated and analysed, on all cores; the first invalid body in module order is the
/// error, as a sequential validation reports it.
fn analyse_all(info: &ModuleInfo, bodies: &Bodies, options: &InstrumentOptions) -> Result<Vec<Analysis>, ModuleError> {
    let throws = Throws::of_module(info, bodies).map_err(ModuleError::from_validation)?;
    let analyses = parallel_map(bodies, |k, body| analyse(body, info.num_imported_funcs + k as u32, options, &throws));
    analyses.into_iter().collect::<Result<Vec<_>, _>>().map_err(ModuleError::from_validation)
}

/// The functions so far: their maps, their probes (none for a function left alone), their
/// branches (when the sink traces them), and the result types of wrapper blocks that need a type
/// of their own.
#[derive(Default)]
struct Functions {
    maps: Vec<FunctionMap>,
    probes: Vec<Option<FuncProbe>>,
    branches: Vec<Option<FuncBranches>>,
    new_types: Vec<Vec<ValType>>,
}

impl Functions {
    /// Adds defined function `index` (`body`), analysed as `analysis`: its sink assigned and its
    /// counters taken from `layout`, or the reason it is left as it was. With `heads` (mode `ippp`:
    /// the module's head space and the function's place among the defined ones), its supergraph.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        info: &ModuleInfo,
        body: &FunctionBody,
        index: u32,
        analysis: Analysis,
        options: &InstrumentOptions,
        layout: &mut Layout,
        heads: Option<(&heads::Heads, usize)>,
    ) -> Result<(), ModuleError> {
        let name = info.names.get(&index).cloned();
        let (mut blocks, planned) = match analysis {
            Err(reason) => (Vec::new(), Err(reason)),
            Ok((fcfg, planned)) => (block_infos(&fcfg), planned.map(|planned| (fcfg, planned))),
        };
        let assigned = planned.and_then(|(fcfg, planned)| {
            let interesting = options.interesting_segments.get(&index);
            let supergraph = heads.map(|(h, k)| h.supergraph(info, k, &fcfg, &planned.plan, interesting));
            // The preferential numbering of its interesting supergraph paths.
            let preferential = heads
                .zip(supergraph.as_ref())
                .and_then(|((h, _), s)| h.preferential(s, &planned.plan, interesting, options.array_max_paths));
            let sink = options.sink.assign(
                &planned.plan,
                preferential.as_ref().map(|p| &p.plan).or(planned.ppp.as_ref()),
                planned.events.as_ref(),
                supergraph.as_ref().map(|s| &s.supergraph),
                layout,
            )?;
            Ok((fcfg, planned, sink, supergraph, preferential))
        });
        let (fcfg, Planned { plan, loops, ppp, events, branches }, sink, supergraph, preferential) = match assigned {
            Ok(assigned) => assigned,
            Err(reason) => {
                self.maps.push(FunctionMap { index, name, blocks, state: ProbeState::Skipped { reason } });
                self.probes.push(None);
                self.branches.push(None);
                return Ok(());
            }
        };
        if let Some(events) = &events {
            for (b, v) in blocks.iter_mut().zip(&events.body.blocks) {
                b.events = v.clone();
            }
        }
        let wrapper = self.wrapper(info, index);
        // A function whose supergraph paths count in slots reads its preferential register.
        let register = preferential.as_ref().map(|p| &p.plan).or(ppp.as_ref());
        let mut probe = FuncProbe::new(fcfg, &plan, register, sink, wrapper, loops, layout);
        let supergraph = supergraph.map(|s| {
            probe.digits = s.digits;
            if let Some(p) = preferential.as_ref().filter(|_| probe.sink.reads_preferential_register()) {
                // Each call's weights, in a table of its own.
                for (&i, weights) in s.sites.iter().zip(&p.digits) {
                    if let Some(d) = probe.digits[i].as_mut().filter(|_| !weights.is_empty()) {
                        d.weights = Some(Weights::place(weights, layout));
                    }
                }
            }
            s.supergraph
        });
        if let Some(events) = events {
            probe.count_stretches(events.body);
        }
        if sink.wants_loop_copies() {
            probe.copies = copies::loop_copies(&probe.fcfg, &probe.registers, body.as_bytes(), layout);
        }
        if options.function_copies && sink.wants_function_copies() {
            probe.switches =
                Some(switch::plan(&probe.fcfg, &probe.registers.cut, body).map_err(ModuleError::from_validation)?);
            probe.resumed = switch::Resumed::of(info, index, body).map_err(ModuleError::from_validation)?;
        }
        let loop_bursts = probe.copies.iter().map(|c| LoopBursts { path: c.path, slot: c.slot }).collect();
        let supergraph_slots = sink.supergraph_slots().zip(preferential).map(|(s, p)| SupergraphSlots {
            offset: s.offset,
            slots: s.slots,
            ids: p.plan.interesting,
        });
        let probes = Probes {
            plan,
            counters: sink.counters(),
            register_bits: probe.registers.bits,
            loop_counters: probe.counting.loops.clone(),
            run_counters: probe.counting.runs.clone(),
            loop_bursts,
            ppp,
            supergraph,
            supergraph_slots,
        };
        self.maps.push(FunctionMap { index, name, blocks, state: ProbeState::Instrumented(Box::new(probes)) });
        self.probes.push(Some(probe));
        self.branches.push(branches);
        Ok(())
    }

    /// The type of the block that wraps the body of function `index`: its results, through a type
    /// of their own when they are several (numbered among the new types, fixed up to the real type
    /// index by [`AddedIndices::new`]).
    fn wrapper(&mut self, info: &ModuleInfo, index: u32) -> BlockType {
        let ty = info.func_type(index).expect("validated: every function has a function type");
        let val = |t: &wasmparser::ValType| RoundtripReencoder.val_type(*t).expect("core value types re-encode");
        match ty.results() {
            [] => BlockType::Empty,
            [t] => BlockType::Result(val(t)),
            many => {
                let results: Vec<ValType> = many.iter().map(val).collect();
                let pos = self.new_types.iter().position(|r| *r == results).unwrap_or_else(|| {
                    self.new_types.push(results);
                    self.new_types.len() - 1
                });
                BlockType::FunctionType(pos as u32)
            }
        }
    }
}

/// The preferential slots, placed after every array: each sink's slots moved from their offset
/// among the slots to their place in the memory, and the data segment that holds their Ball–Larus
/// IDs.
fn place_slots(
    probes: &mut [Option<FuncProbe>],
    maps: &mut [FunctionMap],
    layout: &mut Layout,
) -> Option<(u32, Vec<u8>)> {
    if layout.slots.is_empty() {
        return None;
    }
    let base = layout.take(layout.slots.len() as u64);
    for (p, f) in probes.iter_mut().zip(maps) {
        if let (Some(p), ProbeState::Instrumented(map)) = (p, &mut f.state) {
            if p.sink.place_slots(base) {
                map.counters = p.sink.counters();
                if let (Some(m), Some(s)) = (&mut map.supergraph_slots, p.sink.supergraph_slots()) {
                    m.offset = s.offset;
                }
            }
        }
    }
    Some((base, std::mem::take(&mut layout.slots)))
}

/// The indices of what the profiler adds to the module: its import's type, the wrappers' types,
/// its own functions (after the program's) and the resumed functions of whole-function copies
/// (after those).
struct AddedIndices {
    shift: FunctionShift,
    import_type: Option<u32>,
    appended: Vec<AppendedFunction>,
    resumed_types: Vec<Signature>,
}

impl AddedIndices {
    /// The indices, with the probes' wrapper types and resumed functions fixed up to them.
    fn new(
        info: &ModuleInfo,
        probes: &mut [Option<FuncProbe>],
        options: &InstrumentOptions,
        new_types: &[Vec<ValType>],
        import: bool,
        defined: usize,
    ) -> AddedIndices {
        // Type indices of the added types: the import's, then the wrappers'.
        let base_type = info.types.len() as u32;
        let import_type = import.then_some(base_type);
        let first_wrapper_type = base_type + u32::from(import);
        for p in probes.iter_mut().flatten() {
            if let BlockType::FunctionType(i) = p.wrapper {
                p.wrapper = BlockType::FunctionType(first_wrapper_type + i);
            }
        }
        let shift = FunctionShift { first_shifted: import.then_some(info.num_imported_funcs) };
        // Functions of the profiler's own (the sink's), appended after the program's, of types
        // appended after the wrappers'.
        let appended = options.sink.appended_functions(
            probes.iter().flatten().any(|p| !p.copies.is_empty()),
            info.num_memories,
            import.then_some(info.num_imported_funcs),
            first_wrapper_type + new_types.len() as u32,
            info.num_imported_funcs + u32::from(import) + defined as u32,
        );
        // The resumed functions, after the profiler's, a pair of one type each, after theirs.
        let first_index = info.num_imported_funcs + u32::from(import) + (defined + appended.len()) as u32;
        let mut resumed_types = Vec::new();
        for (index, r) in (first_index..).step_by(2).zip(probes.iter_mut().flatten().filter_map(|p| p.resumed.as_mut()))
        {
            (r.plain, r.instrumented) = (index, index + 1);
            resumed_types.push(Signature { params: r.params.clone(), results: r.results.clone() });
        }
        AddedIndices { shift, import_type, appended, resumed_types }
    }
}

/// Every instrumented body, emitted on all cores (each function's probes dropped on the thread that
/// emitted them), and the bodies of the resumed functions, in order.
fn emit_all(
    context: &walk::BodyContext,
    probes: Vec<Option<FuncProbe>>,
    bodies: &Bodies,
) -> (Vec<Option<sections::EmittedBody>>, Vec<[sections::EmittedBody; 2]>) {
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
    let bodies = emitted
        .into_iter()
        .map(|e| {
            e.map(|(body, resumed)| {
                resumed_bodies.extend(resumed);
                body
            })
        })
        .collect();
    (bodies, resumed_bodies)
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
            calls: b.calls,
            events: Vec::new(),
        })
        .collect()
}

/// An export name for the profiler's `base`, with `_` appended while the program exports the name.
fn fresh_export(info: &ModuleInfo, base: &str) -> String {
    let mut name = base.to_string();
    while info.export_names.contains(&name) {
        name.push('_');
    }
    name
}
