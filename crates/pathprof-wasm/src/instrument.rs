//! The Ball–Larus instrumenter: rewrites a module with path probes.
//!
//! Every function with a supported body gets a path register `r` (a new local: `i32` when its paths
//! fit in 32 bits, `i64` otherwise) and code in four kinds of places, all taken from the
//! [`FunctionPlan`] (only chords of the spanning tree carry increments):
//!
//! * an edge taken by `br`, `return` or a fall-through gets `r += Inc(e)` just before the operator;
//! * `br_if` and `if` stay branch-free: `r += select(Inc(taken), Inc(not taken), cond)`;
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
//! (an exact hash table on the host) for the others. The result is validated before it is returned.

use crate::cfg::{self, FuncCfg, SiteKind};
use crate::debuginfo::LineTable;
use crate::map::{Counters, FunctionMap, Probes, ProfileMap, MAP_FORMAT, MAP_VERSION};
use crate::module::{features, ModuleError, ModuleInfo};
use pathprof_core::dag::{DagEdgeKind, LoopCut};
use pathprof_core::estimate;
use pathprof_core::profile::{BlockInfo, Endpoint, PathCount};
use pathprof_core::{FunctionPlan, PlanOptions};
use std::collections::HashMap;
use std::convert::Infallible;
use wasm_encoder::reencode::{Error as ReencodeError, Reencode, RoundtripReencoder};
use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, DataSection, EntityType, ExportKind, ExportSection, Function, ImportSection,
    Instruction, MemArg, MemorySection, MemoryType, Module, SectionId, TypeSection, ValType,
};
use wasmparser::{FunctionBody, Operator, Parser, Payload};

/// Module name of the host import that counts paths of hash-counted functions.
pub const IMPORT_MODULE: &str = "pathprof";
/// Field name of that import: `(func (param i32 i64))`, called with function index and path ID.
pub const IMPORT_NAME: &str = "count_path";
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
    /// Count the paths that end at loop headers by run length (see `Emitter::count_run`).
    pub run_length: bool,
}

impl Default for InstrumentOptions {
    fn default() -> Self {
        InstrumentOptions {
            plan: PlanOptions::default(),
            array_max_paths: 1 << 14,
            array_max_bytes: 256 << 20,
            edge_profile: HashMap::new(),
            run_length: false,
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
    /// Slot of the pending run when loop headers count by run length.
    pending_slot: Option<u32>,
    /// Increment of every CFG edge (0 for tree edges and edges out of unreachable blocks).
    edge_inc: Vec<u64>,
    /// `r` at the start of a path from a cut block or header.
    start_inc: Vec<u64>,
    cut: Vec<bool>,
    entry_inc: u64,
    /// Byte offset of the increment table of each `br_table` site, by operator index.
    tables: HashMap<usize, u32>,
    wrapper: BlockType,
}

/// Rewrites `bytes` with path probes.
pub fn instrument(bytes: &[u8], options: &InstrumentOptions) -> Result<Instrumented, ModuleError> {
    let info = ModuleInfo::read(bytes)?;
    let lines = LineTable::read(bytes);
    let mut functions = Vec::new();
    let mut probes: Vec<Option<FuncProbe>> = Vec::new();
    let mut layout = Layout::default();
    let mut new_types: Vec<Vec<ValType>> = Vec::new();
    let mut needs_import = false;

    let mut k = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let Payload::CodeSectionEntry(body) = payload.map_err(|e| ModuleError::Malformed(e.to_string()))? else {
            continue;
        };
        let index = info.num_imported_funcs + k as u32;
        k += 1;
        let name = info.names.get(&index).cloned();
        let built = cfg::build(&body);
        let (blocks, plan, skip) = match built {
            Err(e) => (Vec::new(), None, Some(e.0)),
            Ok(fcfg) => {
                let mut opts = options.plan.clone();
                // The probes end a path at the start of every header and cut block, whatever edge led
                // there: only right when every edge into a header ends a path.
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
                let blocks = block_infos(&fcfg, lines.as_ref());
                match FunctionPlan::build(&fcfg.cfg, &opts) {
                    Ok(plan) => (blocks, Some((fcfg, plan)), None),
                    Err(e) => (blocks, None, Some(e.to_string())),
                }
            }
        };
        let Some((fcfg, plan)) = plan else {
            functions.push(FunctionMap { index, name, blocks, probes: None, skip_reason: skip });
            probes.push(None);
            continue;
        };
        let n = plan.num_paths();
        let bits = if n <= 1 << 32 { 32 } else { 64 };
        let counters = if n <= options.array_max_paths && layout.counters + 8 * n <= options.array_max_bytes {
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
        // Run-length counting at loop headers: a 16-byte slot holds the pending run.
        let pending_slot = match counters {
            Counters::Array { .. } if options.run_length && plan.dag.cut.iter().any(|&c| c) => {
                let slot = layout.counters as u32;
                layout.counters += 16;
                Some(slot)
            }
            _ => None,
        };
        let probe = FuncProbe::new(fcfg, &plan, bits, counters, pending_slot, wrapper, &mut layout);
        functions.push(FunctionMap {
            index,
            name,
            blocks,
            probes: Some(Probes { plan, counters, register_bits: bits, pending_slot }),
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
    let mut rewriter = Rewriter {
        info: &info,
        probes,
        next_body: 0,
        import_type,
        new_types,
        memory_pages: memory_size.div_ceil(65536).max(1),
        memory_export: memory_export.clone(),
        table_data: std::mem::take(&mut layout.tables),
        tables_base: layout.counters.next_multiple_of(8),
        emitted: Vec::new(),
    };
    let mut module = Module::new();
    rewriter
        .parse_core_module(&mut module, Parser::new(0), bytes)
        .map_err(|e| ModuleError::Invalid(format!("cannot re-encode: {e}")))?;
    let out = module.finish();
    wasmparser::Validator::new_with_features(features())
        .validate_all(&out)
        .map_err(|e| ModuleError::Invalid(format!("the instrumented module does not validate: {e}")))?;
    let map = ProfileMap {
        format: MAP_FORMAT.to_string(),
        version: MAP_VERSION,
        memory_export,
        count_import: needs_import.then(|| (IMPORT_MODULE.to_string(), IMPORT_NAME.to_string())),
        functions,
    };
    Ok(Instrumented { bytes: out, map })
}

fn block_infos(fcfg: &FuncCfg, lines: Option<&LineTable>) -> Vec<BlockInfo> {
    fcfg.blocks
        .iter()
        .enumerate()
        .map(|(id, b)| BlockInfo {
            id: id as u32,
            offset: b.offset,
            end: b.end,
            line: lines.and_then(|l| l.first_line(b.offset, b.end)),
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
    fn new(
        fcfg: FuncCfg,
        plan: &FunctionPlan,
        bits: u32,
        counters: Counters,
        pending_slot: Option<u32>,
        wrapper: BlockType,
        layout: &mut Layout,
    ) -> Self {
        let nb = fcfg.blocks.len();
        let mut edge_inc = vec![0u64; fcfg.cfg.edges.len()];
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
        FuncProbe {
            fcfg,
            bits,
            counters,
            pending_slot,
            edge_inc,
            start_inc,
            cut: plan.dag.cut.clone(),
            entry_inc,
            tables,
            wrapper,
        }
    }
}

struct Rewriter<'a> {
    info: &'a ModuleInfo,
    probes: Vec<Option<FuncProbe>>,
    next_body: usize,
    import_type: Option<u32>,
    new_types: Vec<Vec<ValType>>,
    memory_pages: u64,
    memory_export: Option<String>,
    table_data: Vec<u8>,
    /// Offset of the first increment table: the end of the counter arrays, 8-aligned.
    tables_base: u64,
    emitted: Vec<SectionId>,
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
            imports.import(IMPORT_MODULE, IMPORT_NAME, EntityType::Function(ty));
        }
    }

    fn memory_section(&self, memories: &mut MemorySection) {
        if self.needs_memory() {
            memories.memory(MemoryType {
                minimum: self.memory_pages,
                maximum: None,
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
        if !self.table_data.is_empty() {
            let offset = self.tables_base as i32;
            data.active(self.profiler_memory(), &ConstExpr::i32_const(offset), self.table_data.iter().copied());
        }
    }

    fn wants(&self, id: SectionId) -> bool {
        match id {
            SectionId::Import => self.import_type.is_some(),
            SectionId::Memory | SectionId::Export => self.needs_memory(),
            SectionId::Data => !self.table_data.is_empty(),
            _ => false,
        }
    }

    fn emit_body(&mut self, k: usize, func: &FunctionBody) -> Result<Function, ReencodeError<Infallible>> {
        let p = self.probes[k].take().expect("checked by the caller");
        let index = self.info.num_imported_funcs + k as u32;
        let ty = self.info.func_type(index).expect("validated");
        let mut locals = Vec::new();
        let mut num_locals = ty.params().len() as u32;
        for pair in func.get_locals_reader()? {
            let (count, t) = pair?;
            num_locals += count;
            locals.push((count, self.val_type(t)?));
        }
        let reg_ty = if p.bits == 32 { ValType::I32 } else { ValType::I64 };
        let r = num_locals;
        let s = num_locals + 1;
        let a = num_locals + 2;
        locals.push((1, reg_ty));
        locals.push((3, ValType::I32));
        locals.push((1, ValType::I64));
        let mut f = Function::new(locals);
        let mut e = Emitter {
            f: &mut f,
            r,
            s,
            a,
            bits: p.bits,
            memory: self.profiler_memory(),
            counters: p.counters,
            func_index: index,
            count_import: self.info.num_imported_funcs,
            tables_base: self.tables_base,
            cur: num_locals + 3,
            run: num_locals + 4,
            pending: p.pending_slot,
        };
        e.f.instruction(&Instruction::Block(p.wrapper));
        e.enter();
        e.set(p.entry_inc);

        let mut before: Vec<Option<&SiteKind>> = vec![None; p.fcfg.num_ops];
        for site in &p.fcfg.sites {
            before[site.op] = Some(&site.kind);
        }
        let mut after: Vec<Option<u32>> = vec![None; p.fcfg.num_ops];
        for &(op, b) in &p.fcfg.block_starts {
            if p.cut.get(b as usize).copied().unwrap_or(false) {
                after[op] = Some(b);
            }
        }
        let mut reader = func.get_operators_reader()?;
        let mut depth: u32 = 0;
        let mut i = 0usize;
        while !reader.eof() {
            let op = reader.read()?;
            match before[i] {
                Some(SiteKind::Edge(edge)) => e.add(p.edge_inc[*edge as usize]),
                Some(SiteKind::Cond(t, nt)) => e.add_select(p.edge_inc[*t as usize], p.edge_inc[*nt as usize]),
                Some(SiteKind::Table(_)) => {
                    if let Some(&off) = p.tables.get(&i) {
                        let n = match &op {
                            Operator::BrTable { targets } => targets.len(),
                            _ => unreachable!("table sites are br_table operators"),
                        };
                        e.add_from_table(off, n);
                    }
                }
                Some(SiteKind::TailCall(edge)) => {
                    e.add(p.edge_inc[*edge as usize]);
                    e.count();
                    e.flush_pending();
                }
                None => {}
            }
            let last = i + 1 == p.fcfg.num_ops;
            match op {
                Operator::Return => {
                    e.f.instruction(&Instruction::Br(depth));
                }
                Operator::End if last => {
                    e.f.instruction(&Instruction::End);
                    e.flush_pending();
                    e.count();
                    e.f.instruction(&Instruction::End);
                }
                Operator::Call { .. } | Operator::CallIndirect { .. } | Operator::CallRef { .. } => {
                    // A callee may trap, exit, or re-enter this function: the run is flushed first,
                    // and the slot given back to this activation after.
                    e.flush_pending();
                    let ins = self.instruction(op)?;
                    e.f.instruction(&ins);
                    e.after_call();
                }
                other => {
                    match other {
                        Operator::Block { .. }
                        | Operator::Loop { .. }
                        | Operator::If { .. }
                        | Operator::Try { .. }
                        | Operator::TryTable { .. } => depth += 1,
                        Operator::End => depth -= 1,
                        _ => {}
                    }
                    let ins = self.instruction(other)?;
                    e.f.instruction(&ins);
                }
            }
            if let Some(b) = after[i] {
                e.count_header();
                e.set(p.start_inc[b as usize]);
            }
            i += 1;
        }
        Ok(f)
    }
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
    /// Locals of run-length counting: the path ID of the current run, and its length.
    cur: u32,
    run: u32,
    /// Slot of the pending run in the profiler's memory, when this function counts by run length.
    pending: Option<u32>,
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

    /// `r += cond ? taken : not_taken`, leaving `cond` on the stack.
    fn add_select(&mut self, taken: u64, not_taken: u64) {
        if taken == 0 && not_taken == 0 {
            return;
        }
        self.f.instruction(&Instruction::LocalTee(self.s));
        self.konst(taken);
        self.konst(not_taken);
        self.f.instruction(&Instruction::LocalGet(self.s));
        self.f.instruction(&Instruction::Select);
        self.f.instruction(&Instruction::LocalGet(self.r));
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

    fn slot_arg(&self, slot: u32, at: u64, align: u32) -> MemArg {
        MemArg { offset: slot as u64 + at, align, memory_index: self.memory }
    }

    /// On entry: the slot's path ID is this activation's (`cur` starts at 0, its run empty).
    fn enter(&mut self) {
        if let Some(slot) = self.pending {
            self.f.instruction(&Instruction::I32Const(0));
            self.f.instruction(&Instruction::I32Const(0));
            self.f.instruction(&Instruction::I32Store(self.slot_arg(slot, 0, 2)));
        }
    }

    /// `counter[cur] += run`.
    fn add_run(&mut self) {
        let Counters::Array { offset } = self.counters else { unreachable!("run-length counting uses arrays") };
        let arg = MemArg { offset: offset as u64, align: 3, memory_index: self.memory };
        self.f.instruction(&Instruction::LocalGet(self.cur));
        self.f.instruction(&Instruction::I32Const(3));
        self.f.instruction(&Instruction::I32Shl);
        self.f.instruction(&Instruction::LocalTee(self.a));
        self.f.instruction(&Instruction::LocalGet(self.a));
        self.f.instruction(&Instruction::I64Load(arg));
        self.f.instruction(&Instruction::LocalGet(self.run));
        self.f.instruction(&Instruction::I64Add);
        self.f.instruction(&Instruction::I64Store(arg));
    }

    /// Counts the path in `r` that ends at a loop header. With run-length counting, consecutive ends of
    /// the same path only lengthen the run held in a local, and a plain store (no load, so no chain
    /// through memory from one iteration to the next) keeps the slot exact should the program stop
    /// here; a different path adds the finished run to its counter and starts a new one.
    fn count_header(&mut self) {
        let Some(slot) = self.pending else { return self.count() };
        self.f.instruction(&Instruction::LocalGet(self.r));
        self.f.instruction(&Instruction::LocalGet(self.cur));
        self.f.instruction(&Instruction::I32Eq);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.f.instruction(&Instruction::LocalGet(self.run));
        self.f.instruction(&Instruction::I64Const(1));
        self.f.instruction(&Instruction::I64Add);
        self.f.instruction(&Instruction::LocalSet(self.run));
        self.f.instruction(&Instruction::Else);
        self.add_run();
        self.f.instruction(&Instruction::LocalGet(self.r));
        self.f.instruction(&Instruction::LocalSet(self.cur));
        self.f.instruction(&Instruction::I64Const(1));
        self.f.instruction(&Instruction::LocalSet(self.run));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::LocalGet(self.cur));
        self.f.instruction(&Instruction::I32Store(self.slot_arg(slot, 0, 2)));
        self.f.instruction(&Instruction::End);
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::LocalGet(self.run));
        self.f.instruction(&Instruction::I64Store(self.slot_arg(slot, 8, 3)));
    }

    /// Adds a pending run to its counter and empties the slot.
    fn flush_pending(&mut self) {
        let Some(slot) = self.pending else { return };
        self.f.instruction(&Instruction::LocalGet(self.run));
        self.f.instruction(&Instruction::I64Const(0));
        self.f.instruction(&Instruction::I64Ne);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.add_run();
        self.f.instruction(&Instruction::I64Const(0));
        self.f.instruction(&Instruction::LocalSet(self.run));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Const(0));
        self.f.instruction(&Instruction::I64Store(self.slot_arg(slot, 8, 3)));
        self.f.instruction(&Instruction::End);
    }

    /// After a call, which may have used the slot: the slot's path ID is this activation's again.
    fn after_call(&mut self) {
        if let Some(slot) = self.pending {
            self.f.instruction(&Instruction::I32Const(0));
            self.f.instruction(&Instruction::LocalGet(self.cur));
            self.f.instruction(&Instruction::I32Store(self.slot_arg(slot, 0, 2)));
        }
    }

    /// Counts the path whose ID is in `r`.
    fn count(&mut self) {
        match self.counters {
            Counters::Array { offset } => {
                let arg = MemArg { offset: offset as u64, align: 3, memory_index: self.memory };
                self.f.instruction(&Instruction::LocalGet(self.r));
                self.f.instruction(&Instruction::I32Const(3));
                self.f.instruction(&Instruction::I32Shl);
                self.f.instruction(&Instruction::LocalTee(self.a));
                self.f.instruction(&Instruction::LocalGet(self.a));
                self.f.instruction(&Instruction::I64Load(arg));
                self.f.instruction(&Instruction::I64Const(1));
                self.f.instruction(&Instruction::I64Add);
                self.f.instruction(&Instruction::I64Store(arg));
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

impl Reencode for Rewriter<'_> {
    type Error = Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, ReencodeError<Infallible>> {
        Ok(if self.import_type.is_some() && func >= self.info.num_imported_funcs { func + 1 } else { func })
    }

    fn parse_type_section(&mut self, types: &mut TypeSection, section: wasmparser::TypeSectionReader<'_>) -> Res {
        wasm_encoder::reencode::utils::parse_type_section(self, types, section)?;
        if self.import_type.is_some() {
            types.ty().function([ValType::I32, ValType::I64], []);
        }
        for results in &self.new_types {
            types.ty().function([], results.iter().copied());
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
        Ok(count + u32::from(!self.table_data.is_empty()))
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
        if self.probes[k].is_none() {
            return wasm_encoder::reencode::utils::parse_function_body(self, code, func);
        }
        let f = self.emit_body(k, &func)?;
        code.function(&f);
        Ok(())
    }

    fn parse_custom_section(&mut self, module: &mut Module, section: wasmparser::CustomSectionReader<'_>) -> Res {
        // Debug info describes the original code offsets; the profile maps offsets itself.
        if section.name().starts_with(".debug_") {
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
