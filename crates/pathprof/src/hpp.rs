//! `pathprof hpp`: the hardware path profiler [PPP07 ch. 5] simulated on the exact branches of a
//! real run (`pathprof_core::hpp`).
//!
//! **The branch stream.** The module is instrumented with the `trace` sink: every block but the
//! entry is cut ([`ExtraCuts::Blocks`]), so that a Ball–Larus path is one block and the edge it
//! leaves by, and every path end goes to the k-BLPP stream with each activation's entry marker —
//! the program's branches in the order they retire, calls included, at the cost of one stream item
//! per block (repeats of one item folded into a count). A dedicated trace needs no decoding of
//! longer paths, and keeps the order that a stream of whole paths loses: a path's item comes at its
//! end, after the calls made along it. On the stream's thread, [`TraceConsumer`] turns each item
//! into the branch it stands for (`pathprof_wasm::branches`: how the edge is taken, where it goes,
//! and the instructions and memory accesses since the branch before) and feeds the simulator while
//! the program runs.
//!
//! **Branch kinds.** A call marker is a call (to the callee's entry); a path that leaves the
//! function is a return (to the instruction after the call); an edge into a loop header is a
//! backward branch — also the fall-through into a `loop`, so that the simulator's paths under the
//! Ball–Larus mapping are exactly those of `bl`, which end at loop headers [PEP05 §3.2]; `br_table`
//! is a forward branch whose outcome is the entry taken, or with [`TableBranches::Indirect`] an
//! indirect branch (as a jump table is on most machines); `br`, `br_if`, `if` and `else` are forward
//! branches; a block that falls through into the next is no branch, and its work goes with the next
//! one. Calls of imported (host) functions are not branches of the program.
//!
//! A call marker is matched with the next call of the caller's current block that can call the
//! callee (a `call` of it, or an indirect call); one that matches none (a callee reached through a
//! function the instrumenter left alone) is counted and returns to no known address.

use crate::profiled::ProfiledModule;
use anyhow::{bail, Context, Result};
use pathprof_core::dag::DagEdgeKind;
use pathprof_core::hpp::stack::StackStats;
use pathprof_core::hpp::{Branch, BranchKind, BranchQueue, Events, Simulator, SimulatorOptions, TableReport};
use pathprof_core::{regen, ExtraCuts, PlanOptions};
use pathprof_runtime::{Engine, RunConfig, RunOutcome, StreamCollector, StreamConsumer, StreamEnd};
use pathprof_wasm::abi::{STREAM_ENTER, STREAM_PATH_EXIT, STREAM_REPEAT};
use pathprof_wasm::branches::{EdgeBranch, FuncBranches, Work};
use pathprof_wasm::{InstrumentOptions, ProfileMap, SinkKind};
use std::time::Instant;

/// What a `br_table` is to the path stack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableBranches {
    /// A forward multi-way branch: the path goes on, its outcome the entry taken.
    #[default]
    Forward,
    /// An indirect branch: the path ends there [PPP07 Table 5.1].
    Indirect,
}

/// How to simulate.
#[derive(Clone, Debug, Default)]
pub struct HppSettings {
    pub simulator: SimulatorOptions,
    pub tables: TableBranches,
}

/// What one trace item does.
#[derive(Clone, Copy, Debug)]
struct Step {
    block: u32,
    /// The branch at the block's end: kind, outcome and width; `None` for a fall-through.
    branch: Option<(BranchKind, u32, u8)>,
    /// The block the edge goes to, and its address; `None` when the edge leaves the function.
    next: Option<(u32, u32)>,
    /// The block's work, all of it: what the branch carries when no call interrupted the block.
    work: Events,
}

/// A traced function: its branches, and the step of every trace path ID.
struct Traced {
    branches: FuncBranches,
    steps: Vec<Step>,
}

/// An activation of a traced function.
#[derive(Clone, Copy, Debug)]
struct Frame {
    function: u32,
    block: u32,
    /// The block's next call site, and its next stretch of work.
    call: usize,
    work: usize,
    /// Work of blocks that fell through, for the next branch.
    carry: Events,
    /// Where the activation returns to.
    return_to: u32,
}

/// What the consumer saw besides the branches.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TraceFacts {
    pub items: u64,
    /// Call markers matched with no call site.
    pub unmatched_calls: u64,
    /// Items of a function other than the innermost activation's, or of an unknown path: ignored.
    pub stray_items: u64,
    /// Activations still open when the run stopped.
    pub open_activations: u64,
    /// Seconds the consumer spent simulating.
    pub simulation_seconds: f64,
}

/// The consumer of the trace: items → branches → the simulator.
pub struct TraceConsumer {
    /// By function index.
    functions: Vec<Option<Traced>>,
    frames: Vec<Frame>,
    last: u64,
    simulator: Simulator,
    facts: TraceFacts,
}

/// What the simulation gave.
#[derive(Debug)]
pub struct HppReport {
    pub instructions: u64,
    pub distinct_paths: usize,
    pub windows: u64,
    pub stack: StackStats,
    pub open_paths: usize,
    pub tables: Vec<TableReport>,
    /// The branch queue at the end: its stall cycles and the program's cycles.
    pub queue: BranchQueue,
    pub trace: TraceFacts,
    /// The first table's entries, and the exact profile, by descriptor (in no order).
    pub table: Vec<(pathprof_core::hpp::Descriptor, u64)>,
    pub exact: Vec<(pathprof_core::hpp::Descriptor, u64)>,
}

impl TraceConsumer {
    /// The consumer of a module instrumented with the trace sink (`map`), whose defined functions'
    /// edges are taken as `branches` says (in the map's order).
    fn new(map: &ProfileMap, branches: Vec<Option<FuncBranches>>, settings: &HppSettings) -> Result<TraceConsumer> {
        let mut functions: Vec<Option<Traced>> = Vec::new();
        for (f, fb) in map.functions.iter().zip(branches) {
            let (Some(probes), Some(fb)) = (f.probes(), fb) else { continue };
            let plan = &probes.plan;
            let mut steps = Vec::with_capacity(plan.num_paths() as usize);
            for id in 0..plan.num_paths() {
                let path = regen::regenerate(&plan.dag, &plan.numbering, id).context("the trace's paths")?;
                let [block] = path.blocks[..] else {
                    bail!("function {} is not traced block by block", f.index);
                };
                let last = plan.dag.edges[*path.edges.last().expect("a path has edges") as usize].kind;
                let e = match last {
                    DagEdgeKind::Real(e) | DagEdgeKind::End(e, _) | DagEdgeKind::Throw(e) => e,
                    DagEdgeKind::Start(_) => bail!("function {}: a path ends at its start", f.index),
                };
                let class = fb.edges[e as usize];
                let next = fb.targets[e as usize].map(|c| (c, fb.blocks[c as usize].offset));
                let (outcome, width) = class.outcome();
                let branch = match (class, next) {
                    (_, None) => Some((BranchKind::Return, 1, 1)),
                    (_, Some((c, _))) if fb.loop_headers[c as usize] => {
                        Some((BranchKind::Backward, if width == 0 { 1 } else { outcome }, width.max(1)))
                    }
                    (EdgeBranch::FallThrough, _) => None,
                    (EdgeBranch::Table { .. }, _) if settings.tables == TableBranches::Indirect => {
                        Some((BranchKind::Indirect, outcome, width))
                    }
                    _ => Some((BranchKind::Forward, outcome, width)),
                };
                let work = Self::work(&fb, block, 0..);
                steps.push(Step { block, branch, next, work });
            }
            let i = f.index as usize;
            if functions.len() <= i {
                functions.resize_with(i + 1, || None);
            }
            functions[i] = Some(Traced { branches: fb, steps });
        }
        Ok(TraceConsumer {
            functions,
            frames: Vec::new(),
            last: STREAM_ENTER,
            simulator: Simulator::new(settings.simulator.clone()),
            facts: TraceFacts::default(),
        })
    }

    /// The work of `block` in the stretches `stretches` (between its calls).
    fn work(fb: &FuncBranches, block: u32, stretches: impl std::slice::SliceIndex<[Work], Output = [Work]>) -> Events {
        let mut e = Events::default();
        for w in fb.blocks.get(block as usize).and_then(|b| b.work.get(stretches)).unwrap_or_default() {
            e.add(Events { instructions: u64::from(w.instructions), memory: u64::from(w.memory) });
        }
        e
    }

    fn enter(&mut self, function: u32) {
        let Some(callee) = self.functions.get(function as usize).and_then(Option::as_ref) else {
            self.facts.stray_items += 1;
            return;
        };
        let entry = callee.branches.entry_block;
        let target = callee.branches.blocks.get(entry as usize).map_or(0, |b| b.offset);
        let mut events = Events::default();
        let mut return_to = 0;
        if let Some(top) = self.frames.last_mut() {
            let caller =
                &self.functions[top.function as usize].as_ref().expect("a frame's function is traced").branches;
            let calls = caller.blocks.get(top.block as usize).map_or(&[][..], |b| &b.calls[..]);
            match calls.iter().skip(top.call).position(|c| c.callee.is_none_or(|g| g == function)) {
                Some(k) => {
                    let k = top.call + k;
                    events = Self::work(caller, top.block, top.work..=k);
                    events.add(top.carry);
                    top.carry = Events::default();
                    top.call = k + 1;
                    top.work = k + 1;
                    return_to = calls[k].return_to;
                }
                None => self.facts.unmatched_calls += 1,
            }
        }
        self.simulator.branch(&Branch { kind: BranchKind::Call, target, outcome: 1, width: 1, events });
        self.frames.push(Frame { function, block: entry, call: 0, work: 0, carry: Events::default(), return_to });
    }

    fn path(&mut self, label: u64, exit: bool) {
        let (function, id) = ((label >> 32) as u32, label & 0xffff_ffff);
        let Some(top) = self.frames.last_mut().filter(|t| t.function == function) else {
            self.facts.stray_items += 1;
            return;
        };
        let traced = self.functions[function as usize].as_ref().expect("a frame's function is traced");
        let Some(&step) = traced.steps.get(id as usize).filter(|s| s.block == top.block) else {
            self.facts.stray_items += 1;
            return;
        };
        let mut events = match top.work {
            0 => step.work,
            from => Self::work(&traced.branches, step.block, from..),
        };
        events.add(top.carry);
        match step.branch {
            Some((kind, outcome, width)) => {
                let target = step.next.map_or(top.return_to, |(_, address)| address);
                top.carry = Events::default();
                self.simulator.branch(&Branch { kind, target, outcome, width, events });
            }
            None => top.carry = events,
        }
        match (exit, step.next) {
            (true, _) | (_, None) => {
                self.frames.pop();
            }
            (false, Some((c, _))) => {
                let top = self.frames.last_mut().expect("checked above");
                (top.block, top.call, top.work) = (c, 0, 0);
            }
        }
    }

    fn item(&mut self, item: u64) {
        self.facts.items += 1;
        match item & STREAM_REPEAT {
            0 => self.path(item, false),
            STREAM_ENTER => self.enter((item & 0xffff_ffff) as u32),
            STREAM_PATH_EXIT => self.path(item & !STREAM_REPEAT, true),
            _ => unreachable!("repeats are expanded by fold"),
        }
    }
}

impl StreamConsumer for TraceConsumer {
    type Output = HppReport;

    fn fold(&mut self, items: &[u64]) {
        let t = Instant::now();
        for &item in items {
            if item & STREAM_REPEAT == STREAM_REPEAT {
                for _ in 0..item & !STREAM_REPEAT {
                    self.item(self.last);
                }
                continue;
            }
            self.item(item);
            self.last = item;
        }
        self.facts.simulation_seconds += t.elapsed().as_secs_f64();
    }

    fn finish(parts: Vec<TraceConsumer>, _: StreamEnd) -> Result<HppReport> {
        let Ok([mut this]) = <[TraceConsumer; 1]>::try_from(parts) else {
            anyhow::bail!("the simulator reads its trace on one thread")
        };
        this.simulator.finish();
        this.facts.open_activations = this.frames.len() as u64;
        let s = &this.simulator;
        let exact: Vec<_> = s.exact().iter().map(|(d, &c)| (*d, c)).collect();
        let table: Vec<_> = s.table(0).entries().map(|(d, c)| (*d, c)).collect();
        Ok(HppReport {
            instructions: s.total_instructions(),
            distinct_paths: exact.len(),
            windows: s.windows(),
            stack: *s.stack(),
            open_paths: s.open_paths(),
            tables: s.reports(),
            queue: s.queue().clone(),
            trace: this.facts,
            table,
            exact,
        })
    }
}

/// A simulated run.
pub struct HppRun {
    pub settings: HppSettings,
    pub outcome: RunOutcome,
    pub report: HppReport,
    pub instrumentation_seconds: f64,
}

/// Instruments `original` (a module, or a component's program module) to trace its branches, runs it
/// with `config`, and simulates the hardware path profiler on the branches as they come.
pub fn simulate(original: &[u8], path: &str, settings: &HppSettings, config: &RunConfig) -> Result<HppRun> {
    simulate_on(&pathprof_runtime::engine()?, original, path, settings, config)
}

/// [`simulate`] on `engine`.
pub fn simulate_on(
    engine: &Engine,
    original: &[u8],
    path: &str,
    settings: &HppSettings,
    config: &RunConfig,
) -> Result<HppRun> {
    let t = Instant::now();
    let options = InstrumentOptions {
        sink: SinkKind::Trace,
        plan: PlanOptions { cuts: ExtraCuts::Blocks, ..PlanOptions::default() },
        ..InstrumentOptions::default()
    };
    let cannot = || format!("cannot instrument {path}");
    let profiled = ProfiledModule::of(original, None).with_context(cannot)?;
    let mut inst = profiled.instrument(original, &options).with_context(cannot)?;
    let instrumentation_seconds = t.elapsed().as_secs_f64();
    let branches = std::mem::take(&mut inst.branches);
    let consumer = TraceConsumer::new(&inst.map, branches, settings)?;
    let (module, _) = pathprof_runtime::compile(engine, &inst.bytes)?;
    let collector = StreamCollector::with_consumer(&inst.map, consumer)?;
    let (outcome, report) = pathprof_runtime::run_module(engine, &module, Some(&inst.map), collector, config)?;
    Ok(HppRun { settings: settings.clone(), outcome, report, instrumentation_seconds })
}
