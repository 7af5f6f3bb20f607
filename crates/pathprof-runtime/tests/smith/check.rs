//! One case: the module instrumented in every mode, the maps checked against one another, and the
//! calls planned that the sessions make.

use crate::bursts::check_burst_map;
use crate::gen::{body_facts, generate, instrument_options, Rng};
use crate::host::Host;
use crate::segments::{depth, IpsSetup};
use crate::session::compare_runs;
use crate::session::PathKey;
use crate::stats::Stats;
use crate::SAMPLE_SLOTS;
use pathprof_core::dag::DagEdgeKind;
use pathprof_core::profile::{Endpoint, PathCount, U64};
use pathprof_core::regen;
use pathprof_wasm::abi::HostImport;
use pathprof_wasm::events::{EventSet, EventSpec};
use pathprof_wasm::map::{Counters, ProbeState, SinkLayout};
use pathprof_wasm::{instrument, InstrumentOptions, ProfileMap, SinkKind};
use std::collections::{BTreeSet, HashMap};
use wasmparser::Payload;
use wasmtime::{Engine, ExternType, Linker, Module, Val};

/// Why a module failed the test, with the instrumented modules made so far.
pub struct Failure {
    pub message: String,
    pub instrumented: Vec<(Mode, Vec<u8>)>,
}

/// A way of instrumenting a module; every case is instrumented in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Exact Ball–Larus counters (arrays and the count import): the oracle of the other modes.
    Counts,
    /// PEP, with the sampling flag set for good after instantiation: every later path end calls the
    /// sample import.
    Sampled,
    /// PEP with a sample buffer, asked after instantiation for `SAMPLE_SLOTS` samples after
    /// `SAMPLE_SKIP` path ends: the buffer must hold that part of `pep`'s samples.
    SampleBuffer,
    /// k-BLPP: path ends and activation markers appended to the stream buffer.
    Stream,
    /// Bursty k-BLPP: every path of a function instrumented for bursts counted in its array, and
    /// streamed as `kbl` streams it while the burst flag is set, which the test sets (or leaves
    /// clear) for a whole case after instantiation (see [`crate::bursts`]).
    Bursts,
    /// Interprocedural path segments: `kbl`'s stream from every function, with a call marker before
    /// every call, folded into IPSs of a depth that the module chooses ([`crate::segments::depth`]).
    Segments,
    /// Preferential counts, with random interesting paths (some functions all of theirs, some none):
    /// every path counted exactly, in slots or by the host, and marked interesting or not.
    Ppp,
    /// Event counting from exact path counts with paths cut at every merge (`events:pc:merges`):
    /// the events of `bl`'s paths, and the block frequencies of `bl`'s paths.
    EventPaths,
    /// Event counting by path decoding (`events:pd`): the events of `bl`'s paths.
    Decode,
    /// Direct event counting (`events:dec`): the events of `bl`'s paths when every call returned.
    Direct,
}

/// The events the event modes count: every event class the instrumentation treats apart (block
/// stretches, calls, weights) without making the probes costlier than `INSTRUMENTED_FUEL` allows.
pub fn event_set() -> EventSet {
    let spec = EventSpec {
        list: Some(["instr", "load", "call", "br_table", "bytes_stored"].map(String::from).to_vec()),
        alloc_fns: Vec::new(),
        user: vec![("adds".into(), vec!["i32.add".into(), "i64.add".into()])],
    };
    EventSet::new(&spec, &HashMap::new()).expect("the test's events")
}

impl Mode {
    pub const ALL: [Mode; 10] = [
        Mode::Counts,
        Mode::Sampled,
        Mode::SampleBuffer,
        Mode::Stream,
        Mode::Bursts,
        Mode::Segments,
        Mode::Ppp,
        Mode::EventPaths,
        Mode::Decode,
        Mode::Direct,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Counts => "bl",
            Mode::Sampled => "pep",
            Mode::SampleBuffer => "pep-buffer",
            Mode::Stream => "kbl",
            Mode::Bursts => "kbl-burst",
            Mode::Segments => "ips",
            Mode::Ppp => "ppp",
            Mode::EventPaths => "events-pc-merges",
            Mode::Decode => "events-pd",
            Mode::Direct => "events-dec",
        }
    }

    /// `base` with this mode's sink (and `interesting` paths, for `ppp`).
    pub fn options(self, base: &InstrumentOptions, interesting: &HashMap<u32, Vec<PathCount>>) -> InstrumentOptions {
        let sink = match self {
            Mode::Counts => SinkKind::Count,
            Mode::Sampled => SinkKind::Sample { buffer: None },
            Mode::SampleBuffer => SinkKind::Sample { buffer: Some(SAMPLE_SLOTS) },
            Mode::Stream => SinkKind::Stream,
            Mode::Bursts => SinkKind::Bursts,
            Mode::Segments => SinkKind::Segments,
            Mode::Ppp => {
                // Slots wherever a function has interesting and residual paths: the case to test.
                let sink = SinkKind::Preferential { slots_everywhere: true };
                return InstrumentOptions { sink, interesting: interesting.clone(), ..base.clone() };
            }
            Mode::EventPaths => {
                let mut plan = base.plan.clone();
                plan.cuts = pathprof_core::plan::ExtraCuts::Merges;
                return InstrumentOptions { sink: SinkKind::Count, plan, events: Some(event_set()), ..base.clone() };
            }
            Mode::Decode => {
                return InstrumentOptions { sink: SinkKind::Decode, events: Some(event_set()), ..base.clone() }
            }
            Mode::Direct => {
                return InstrumentOptions { sink: SinkKind::Direct, events: Some(event_set()), ..base.clone() }
            }
        };
        InstrumentOptions { sink, ..base.clone() }
    }

    /// Whether the mode streams its path ends (`kbl`, `kbl-burst`, `ips`): when the original runs
    /// out of fuel, its call still gets `INSTRUMENTED_FUEL`.
    pub fn streams(self) -> bool {
        matches!(self, Mode::Stream | Mode::Bursts | Mode::Segments)
    }
}

/// The module instrumented in one mode.
pub struct Variant {
    pub mode: Mode,
    pub module: Module,
    pub map: ProfileMap,
    /// `ppp`: the interesting paths it was given.
    pub chosen: BTreeSet<PathKey>,
    /// `ips`: the depth of its IPSs, and the original module's calls.
    pub ips: Option<IpsSetup>,
}

/// Random interesting paths for `ppp`, from the plans of `bl`'s map: in each function, all its
/// paths, none, or each of (at most 64 of) them with even odds.
pub fn choose_interesting(map: &ProfileMap, rng: &mut Rng) -> (HashMap<u32, Vec<PathCount>>, BTreeSet<PathKey>) {
    let mut paths = HashMap::new();
    let mut chosen = BTreeSet::new();
    for (f, p) in map.probed() {
        let n = p.plan.num_paths();
        let ids: Vec<u64> = match rng.below(4) {
            0 if n <= 256 => (0..n).collect(),
            1 => Vec::new(),
            _ => {
                let draws: Vec<(u64, bool)> = (0..64).map(|_| (rng.below(n.max(1)), rng.below(2) == 0)).collect();
                draws.into_iter().filter(|&(id, keep)| id < n && keep).map(|(id, _)| id).collect()
            }
        };
        let mut list = Vec::new();
        for id in ids {
            let path = regen::regenerate(&p.plan.dag, &p.plan.numbering, id).expect("an ID below the count");
            let (start, end) = (Endpoint::start(path.start), Endpoint::end(path.end));
            chosen.insert((f.index, start, end, path.blocks.clone()));
            list.push(PathCount {
                id: U64(id),
                count: U64(1),
                start,
                end,
                blocks: path.blocks,
                branches: 0,
                interesting: None,
            });
        }
        paths.insert(f.index, list);
    }
    (paths, chosen)
}

pub fn run_case(
    engine: &Engine,
    linker: &Linker<Host>,
    case: u64,
    base_seed: u64,
    stats: &mut Stats,
    dump: &std::path::Path,
) -> Result<(), String> {
    let (bytes, mut rng, exceptions) = generate(case, base_seed)?;
    stats.import_cases += u64::from(
        wasmparser::Parser::new(0)
            .parse_all(&bytes)
            .any(|p| matches!(p, Ok(Payload::ImportSection(r)) if r.count() > 0)),
    );
    stats.cases += 1;
    stats.exception_cases += u64::from(exceptions);
    let (options, variant) = instrument_options(&mut rng);
    *stats.variants.entry(variant).or_default() += 1;
    check_module(engine, linker, &bytes, &options, variant, &mut rng, stats).map_err(|f| {
        let _ = std::fs::create_dir_all(dump);
        let _ = std::fs::write(dump.join(format!("case-{case}.wasm")), &bytes);
        for (mode, out) in &f.instrumented {
            let _ = std::fs::write(dump.join(format!("case-{case}.{}.wasm", mode.name())), out);
        }
        format!("[options {variant}] {}", f.message)
    })
}

/// Instruments `bytes` in every mode, checks the maps and the outputs, and compares runs of the
/// original and the instrumented modules.
pub fn check_module(
    engine: &Engine,
    linker: &Linker<Host>,
    bytes: &[u8],
    options: &InstrumentOptions,
    variant: &str,
    rng: &mut Rng,
    stats: &mut Stats,
) -> Result<(), Failure> {
    let mut produced: Vec<(Mode, Vec<u8>)> = Vec::new();
    let fail =
        |message: String, produced: &[(Mode, Vec<u8>)]| Err(Failure { message, instrumented: produced.to_vec() });
    if let Err(e) = wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all()).validate_all(bytes) {
        // Not the instrumenter's fault; wasm-smith should not produce these.
        return fail(format!("wasm-smith produced an invalid module: {e}"), &produced);
    }
    let mut maps: Vec<ProfileMap> = Vec::new();
    let (mut interesting, mut chosen) = (HashMap::new(), BTreeSet::new());
    for mode in Mode::ALL {
        if mode == Mode::Ppp {
            (interesting, chosen) = choose_interesting(&maps[0], rng);
        }
        let out = match instrument(bytes, &mode.options(options, &interesting)) {
            Ok(out) => out,
            Err(e) => return fail(format!("[{}] instrument failed: {e}", mode.name()), &produced),
        };
        produced.push((mode, out.bytes));
        let validated = wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
            .validate_all(&produced.last().unwrap().1);
        if let Err(e) = validated {
            return fail(format!("[{}] the instrumented module does not validate: {e}", mode.name()), &produced);
        }
        maps.push(out.map);
    }
    let map = &maps[0];

    // Every function is instrumented unless it uses what the instrumenter does not support.
    let facts = body_facts(bytes);
    if facts.len() != map.functions.len() {
        return fail(format!("map has {} functions, module {}", map.functions.len(), facts.len()), &produced);
    }
    for (f, fact) in map.functions.iter().zip(&facts) {
        let skip_reason = match &f.state {
            ProbeState::Skipped { reason } => Some(reason.as_str()),
            ProbeState::Instrumented(_) => None,
        };
        match (f.probes(), fact.unsupported) {
            (Some(p), false) => {
                stats.instrumented_functions += 1;
                stats.loops += fact.loops as u64;
                stats.br_tables += fact.br_tables as u64;
                stats.ref_branches += fact.ref_branches as u64;
                if matches!(p.counters, Counters::Table { .. } | Counters::Hash) {
                    stats.hash_functions += 1;
                }
                if p.register_bits == 64 {
                    stats.wide_registers += 1;
                }
                if p.plan.dag.cut.iter().any(|&c| c) && !p.plan.overflow_cuts.is_empty() {
                    stats.overflow_cut_functions += 1;
                }
                stats.loop_counters += p.loop_counters.len() as u64;
                stats.run_counters += p.run_counters.len() as u64;
            }
            (None, true) => {
                stats.skipped_functions += 1;
                let Some(reason) = skip_reason.filter(|r| !r.is_empty()) else {
                    return fail(format!("function {} skipped without a reason", f.index), &produced);
                };
                *stats.skip_reasons.entry(reason.to_string()).or_default() += 1;
            }
            (Some(_), true) => {
                return fail(format!("function {} uses unsupported operators but was instrumented", f.index), &produced)
            }
            (None, false)
                if variant == "cuts" && skip_reason.is_some_and(|r| r.contains("more paths than the limit")) =>
            {
                // A path limit below a node's out-degree or the number of start points.
                stats.skipped_functions += 1;
                *stats.skip_reasons.entry("too many paths for the small limit".into()).or_default() += 1;
            }
            (None, false) => return fail(format!("function {} was skipped: {skip_reason:?}", f.index), &produced),
        }
    }
    for (mode, other) in Mode::ALL.iter().zip(&maps).skip(1) {
        check_mode_map(*mode, other, map, stats)
            .map_err(|e| Failure { message: format!("[{}] {e}", mode.name()), instrumented: produced.clone() })?;
    }
    let position = |m: Mode| Mode::ALL.iter().position(|&n| n == m).expect("every mode is instrumented");
    if let Err(e) = check_burst_map(&maps[position(Mode::Bursts)], &maps[position(Mode::Stream)]) {
        return fail(format!("[kbl-burst] {e}"), &produced);
    }
    let segments = Mode::ALL.iter().position(|&m| m == Mode::Segments).expect("an ips mode");
    let mut ips = match IpsSetup::new(bytes, &maps[segments], depth(bytes)) {
        Ok(setup) => {
            *stats.segment_depths.entry(setup.k).or_default() += 1;
            Some(setup)
        }
        Err(e) => return fail(format!("[ips] {e}"), &produced),
    };

    let original = match Module::new(engine, bytes) {
        Ok(m) => m,
        Err(e) => return fail(format!("wasmtime rejects the original: {e:#}"), &produced),
    };
    let mut variants = Vec::new();
    for ((mode, out), map) in produced.iter().zip(maps) {
        match Module::new(engine, out) {
            Ok(module) => {
                let chosen = if *mode == Mode::Ppp { std::mem::take(&mut chosen) } else { BTreeSet::new() };
                let ips = if *mode == Mode::Segments { ips.take() } else { None };
                variants.push(Variant { mode: *mode, module, map, chosen, ips })
            }
            Err(e) => {
                return fail(format!("[{}] wasmtime rejects the instrumented module: {e:#}", mode.name()), &produced)
            }
        }
    }
    // An exception caught in a skipped function may unwind instrumented frames: balance is exact
    // only when every function is instrumented.
    let exact = !facts.iter().any(|f| f.unsupported);
    compare_runs(linker, engine, &original, &variants, exact, rng, stats)
        .map_err(|message| Failure { message, instrumented: produced.clone() })
}

/// Checks the map of `mode` against `bl`'s: the same functions are instrumented, with the counters
/// of the mode (`ips` streams from every one, without singles; `kbl-burst` counts those of `kbl`'s
/// with singles in an array; `kbl`, `kbl-burst` and `ips` cut functions whose path IDs need 64 bits
/// further); counts plans that differ from `bl`'s.
pub fn check_mode_map(mode: Mode, map: &ProfileMap, bl: &ProfileMap, stats: &mut Stats) -> Result<(), String> {
    // The sink's layout, and the import it implies: the sample import without a buffer, none with
    // one, the flush import for the stream.
    let import = match (mode, map.sink) {
        (Mode::Sampled, SinkLayout::Sample { buffer: None, .. }) => Some(HostImport::SamplePath),
        (Mode::SampleBuffer, SinkLayout::Sample { buffer: Some(b), wide }) if b.slots == SAMPLE_SLOTS => {
            wide.then_some(HostImport::SamplePath)
        }
        (Mode::Stream | Mode::Bursts | Mode::Segments, SinkLayout::Stream(_)) => Some(HostImport::FlushStream),
        (Mode::Ppp, SinkLayout::Ppp { hash }) => hash.then_some(HostImport::CountPath),
        (Mode::EventPaths | Mode::Decode | Mode::Direct, SinkLayout::Count { hash }) => {
            hash.then_some(HostImport::CountPath)
        }
        (_, sink) => return Err(format!("sink {sink:?}")),
    };
    if map.sink.import() != import {
        return Err(format!("import {:?} for sink {:?}", map.sink.import(), map.sink));
    }
    if map.functions.len() != bl.functions.len() {
        return Err(format!("map has {} functions, bl's {}", map.functions.len(), bl.functions.len()));
    }
    for (f, g) in map.functions.iter().zip(&bl.functions) {
        let i = f.index;
        if i != g.index {
            return Err(format!("function {i} in place of bl's {}", g.index));
        }
        let (p, q) = match (&f.state, &g.state) {
            (ProbeState::Instrumented(p), ProbeState::Instrumented(q)) => (p, q),
            (ProbeState::Skipped { .. }, ProbeState::Skipped { .. }) => continue,
            (x, y) => return Err(format!("function {i}: {x:?} but in bl {y:?}")),
        };
        let arrays = matches!(mode, Mode::Ppp | Mode::EventPaths | Mode::Decode | Mode::Bursts);
        if !arrays && (!p.loop_counters.is_empty() || !p.run_counters.is_empty()) {
            return Err(format!("function {i} has loop or run counters"));
        }
        // An activation of a function without loops, cuts or landings ends one path.
        let one_path = p.plan.dag.edges.iter().all(|e| matches!(e.kind, DagEdgeKind::Real(_) | DagEdgeKind::Throw(_)));
        match (mode, p.counters) {
            (Mode::Sampled | Mode::SampleBuffer, Counters::Sampled) => {}
            (Mode::Stream, Counters::Stream { singles }) => {
                stats.stream_functions += 1;
                stats.stream_singles += u64::from(singles.is_some());
            }
            (Mode::Stream, Counters::Array { .. }) if one_path => stats.stream_array_functions += 1,
            (Mode::Bursts, Counters::Burst { .. }) if !one_path => {
                stats.burst_functions += 1;
                stats.burst_counted += u64::from(!p.loop_counters.is_empty() || !p.run_counters.is_empty());
            }
            (Mode::Bursts, Counters::Array { .. }) if one_path => stats.burst_array_functions += 1,
            (Mode::Bursts, Counters::Stream { singles: None }) => stats.burst_streamed += 1,
            (Mode::Bursts, Counters::BurstTable { .. }) => stats.burst_table_functions += 1,
            (Mode::Segments, Counters::Stream { singles: None }) => stats.segment_functions += 1,
            (Mode::Ppp, Counters::Ppp { .. }) => stats.ppp_slot_functions += 1,
            (Mode::Ppp, Counters::Array { .. } | Counters::Hash) => {}
            (Mode::EventPaths, Counters::Array { .. } | Counters::Table { .. } | Counters::Hash) => {}
            (Mode::Decode, Counters::Events { decoded: true, .. }) => stats.decoded_functions += 1,
            (Mode::Decode, Counters::Array { .. } | Counters::Table { .. } | Counters::Hash) => {}
            (Mode::Direct, Counters::Events { decoded: false, .. }) => {}
            (_, c) => return Err(format!("function {i} has counters {c:?}")),
        }
        // A streamed function's IDs have 32 bits: one whose `bl` IDs do not is cut further.
        if mode.streams() && q.register_bits == 64 {
            if p.register_bits != 32 || p.plan.overflow_cuts.len() <= q.plan.overflow_cuts.len() {
                return Err(format!("function {i}: streamed with {} bits and no more cuts than bl's", p.register_bits));
            }
            match mode {
                Mode::Stream => stats.stream_cut += 1,
                Mode::Bursts => stats.burst_cut += 1,
                _ => stats.segment_cut += 1,
            }
        }
        if p.plan == q.plan {
            stats.plans_identical += 1;
        } else {
            stats.plans_differ += 1;
        }
    }
    Ok(())
}

/// One planned call of an export.
pub struct Call {
    pub name: String,
    pub params: Vec<Val>,
    pub results: usize,
}

/// A value of type `ty` for the second round of calls: mostly small numbers, so that loops bounded
/// by a parameter run a few times; sometimes arbitrary bits. References are null.
pub fn arbitrary_val(ty: &wasmtime::ValType, rng: &mut Rng) -> Option<Val> {
    let small = rng.below(4) != 0;
    let bits = if small { rng.below(8) } else { rng.next() };
    Some(match ty {
        wasmtime::ValType::I32 => Val::I32(bits as i32),
        wasmtime::ValType::I64 => Val::I64(bits as i64),
        wasmtime::ValType::F32 if small => Val::F32((bits as f32).to_bits()),
        wasmtime::ValType::F32 => Val::F32(bits as u32),
        wasmtime::ValType::F64 if small => Val::F64((bits as f64).to_bits()),
        wasmtime::ValType::F64 => Val::F64(bits),
        wasmtime::ValType::V128 => Val::V128((u128::from(bits) | (u128::from(rng.next()) << 64)).into()),
        wasmtime::ValType::Ref(_) => return Val::default_for_ty(ty),
    })
}

/// Two rounds over the exported functions, in export order: default arguments, then arbitrary ones.
pub fn plan_calls(module: &Module, rng: &mut Rng, stats: &mut Stats) -> Vec<Call> {
    let funcs: Vec<(String, wasmtime::FuncType)> = module
        .exports()
        .filter_map(|e| match e.ty() {
            ExternType::Func(ty) => Some((e.name().to_string(), ty)),
            _ => None,
        })
        .collect();
    let mut calls = Vec::new();
    for round in 0..2 {
        for (name, ty) in &funcs {
            let params: Option<Vec<Val>> = ty
                .params()
                .map(|t| if round == 0 { Val::default_for_ty(&t) } else { arbitrary_val(&t, rng) })
                .collect();
            let Some(params) = params else {
                stats.uncallable += 1;
                continue;
            };
            calls.push(Call { name: name.clone(), params, results: ty.results().len() });
        }
    }
    calls
}
