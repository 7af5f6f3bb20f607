//! Loop and run counters: paths counted in locals while their loop runs, for functions counted in
//! an array.
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
//! A function streamed in bursts (`kbl:K:burst`) counts with the same counters: the paths counted
//! on a header's in-edges or in a run are streamed where they are counted, and a loop counter's
//! paths later, from its mark (see [`BurstSink`](super::sink::BurstSink)).

use super::emit::{Emitter, Inc};
use super::layout::Layout;
use crate::cfg::{FuncCfg, SiteKind};
use crate::map::{LoopCounter, RunCounter};
use pathprof_core::dag::{Dag, DagEdgeKind};
use pathprof_core::graph::Adjacency;
use pathprof_core::{FunctionPlan, Succ};
use wasm_encoder::{BlockType, Instruction, MemArg};

/// How an edge into an edge-counted loop header counts the path it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderEdge {
    /// The ID is only known at run time: `count[r + Inc]++` on the edge.
    Dynamic,
    /// Only one path reaches the edge: `count[K]++` at a constant address, no register.
    Constant(u64),
    /// The loop's only way around, free of calls: loop counter `i` (a local) counts it.
    Loop(usize),
    /// The same, counted at the header's start instead: the edge itself carries no code.
    Around(usize),
}

/// Which loops count in locals, and where (see the module docs).
pub(crate) struct LoopPlan {
    /// How each CFG edge into a header that counts on its in-edges is counted.
    pub header_edge: Vec<Option<HeaderEdge>>,
    /// Headers whose in-edges count the paths ending there (the header itself only starts a path).
    pub edge_counted: Vec<bool>,
    /// The loop counter that a header's start bumps, when its loop is counted there.
    pub header_loop: Vec<Option<usize>>,
    pub loops: Vec<LoopCounter>,
    /// The run counter of a header that counts its paths in runs.
    pub header_run: Vec<Option<usize>>,
    pub runs: Vec<RunCounter>,
    /// The counters that the calls of each block flush (see `RUN_BIT`).
    pub flush_at: Vec<u8>,
    /// Byte offset of the function's array of counters, which the counters add to.
    pub array: u32,
}

impl LoopPlan {
    /// No loop or run counter: every header counts at its start.
    pub fn none(blocks: usize, edges: usize) -> LoopPlan {
        LoopPlan {
            header_edge: vec![None; edges],
            edge_counted: vec![false; blocks],
            header_loop: vec![None; blocks],
            loops: Vec::new(),
            header_run: vec![None; blocks],
            runs: Vec::new(),
            flush_at: vec![0; blocks],
            array: 0,
        }
    }

    /// The plan with its counters' slots moved from 0 to the layout's next free bytes, adding to the
    /// array at byte `array`.
    pub fn place(mut self, layout: &mut Layout, array: u32) -> LoopPlan {
        self.array = array;
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

/// Most loop counters in one function.
const MAX_LOOP_COUNTERS: usize = 4;
/// Most flushes of loop and run counters at call sites in one function.
const MAX_FLUSH_BLOCKS: usize = 24;
/// The bit of the first run counter in a block's flush mask (loop counters take the bits below).
const RUN_BIT: usize = 4;

/// Decides which back edges count in a local, and which headers count in runs (see the module docs).
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
pub(crate) fn plan_loops(fcfg: &FuncCfg, plan: &FunctionPlan) -> LoopPlan {
    let dag = &plan.dag;
    let nb = fcfg.blocks.len();
    let prefixes = plan.numbering.unique_prefixes(dag);
    // Headers entered by an edge that cannot carry code of its own: a `br_table` entry, or a
    // typed-reference branch's, which leaves no condition to test.
    let mut no_edge_code = vec![false; nb];
    let mut plain = vec![false; fcfg.cfg.edges().len()];
    for site in &fcfg.sites {
        let entries = match &site.kind {
            SiteKind::Table(entries) => &entries[..],
            SiteKind::RefCond(taken, _) => std::slice::from_ref(taken),
            SiteKind::Edge(e) => {
                plain[*e as usize] = true;
                continue;
            }
            _ => continue,
        };
        for &e in entries {
            if let Succ::Block(b) = fcfg.cfg.edges()[e as usize].to {
                no_edge_code[b as usize] = true;
            }
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
            if !no_edge_code[h as usize] && !chosen.iter().any(|&(_, p, _)| p == *path) {
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
    LoopPlan { header_edge, edge_counted, header_loop, loops, header_run, runs, flush_at, array: 0 }
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

impl LoopPlan {
    /// The loop counter that CFG edge `edge` (of `fcfg`), counted as `how`, takes one off: its
    /// header bumps that counter at its start, and the edge is not the way around.
    pub fn unbumped_by(&self, fcfg: &FuncCfg, edge: u32, how: HeaderEdge) -> Option<usize> {
        match (how, fcfg.cfg.edges()[edge as usize].to) {
            (HeaderEdge::Around(_), _) | (_, Succ::Exit | Succ::Throw) => None,
            (_, Succ::Block(h)) => self.header_loop[h as usize],
        }
    }
}

impl Emitter<'_> {
    /// `n += delta` for loop counter `i`, and its slot updated with a plain store.
    pub fn bump_loop(&mut self, i: usize, delta: &[Instruction]) {
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
    pub fn unbump_loop(&mut self, i: usize) {
        let n = self.first_loop_local + i as u32;
        self.f.instruction(&Instruction::LocalGet(n));
        self.f.instruction(&Instruction::I64Const(-1));
        self.f.instruction(&Instruction::I64Add);
        self.f.instruction(&Instruction::LocalSet(n));
    }

    /// Counts the path taken by an edge into an edge-counted header.
    pub fn count_edge(&mut self, how: HeaderEdge, inc: Inc) {
        match how {
            HeaderEdge::Loop(i) => {
                self.bump_loop(i, &[Instruction::I64Const(1)]);
                self.check_counted_loop(i);
            }
            HeaderEdge::Around(_) => {}
            HeaderEdge::Constant(k) => {
                self.add_to_counter(k, &[Instruction::I64Const(1)]);
                self.stream_constant(k);
            }
            HeaderEdge::Dynamic => {
                self.add(inc);
                self.count_in_array(self.array);
                self.stream_counted_path();
            }
        }
    }

    /// Streams path `k`, counted at a constant address, in a function streamed in bursts. The
    /// register is free: the edge enters a header, which sets it afresh.
    fn stream_constant(&mut self, k: u64) {
        if self.burst.is_some() {
            self.set(Inc { bl: k, ppp: 0 });
            self.stream_counted_path();
        }
    }

    /// Counts the path of a `br_if` whose taken edge enters an edge-counted header, leaving the
    /// condition on the stack. The not-taken increment is added either way: when the branch is taken
    /// the header sets `r` afresh.
    pub fn count_cond(&mut self, how: HeaderEdge, taken: Inc, not_taken: Inc) {
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
                self.check_counted_loop(i);
            }
            HeaderEdge::Constant(_) | HeaderEdge::Dynamic => {
                self.f.instruction(&Instruction::LocalTee(self.s));
                self.f.instruction(&Instruction::If(BlockType::Empty));
                if let HeaderEdge::Constant(k) = how {
                    self.add_to_counter(k, &[Instruction::I64Const(1)]);
                    self.stream_constant(k);
                } else {
                    self.add(taken);
                    self.count_in_array(self.array);
                    self.stream_counted_path();
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
    pub fn count_run(&mut self, j: usize) {
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
        self.stream_counted_path();
    }

    /// The low word of run counter `j`'s path ID.
    fn run_path(&self, j: usize) -> MemArg {
        MemArg { offset: u64::from(self.runs[j].slot) + 8, align: 2, memory_index: self.memory }
    }

    /// Adds run counter `j`'s pending run to its path's counter and empties its slot.
    fn flush_run_counter(&mut self, j: usize) {
        let offset = self.array;
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
    pub fn flush_loops(&mut self) {
        self.flush_some(u8::MAX);
    }

    /// Adds the loop and run counters of `mask` (see `RUN_BIT`) to their paths' counters and empties
    /// their slots.
    pub fn flush_some(&mut self, mask: u8) {
        for j in (0..self.runs.len()).filter(|j| mask & (1 << (RUN_BIT + j)) != 0) {
            self.flush_run_counter(j);
        }
        for i in (0..self.loops.len()).filter(|i| mask & (1 << i) != 0) {
            let LoopCounter { path, slot } = self.loops[i];
            self.stream_before_flush(i);
            self.flush_mirrored(self.first_loop_local + i as u32, slot, |e, n| {
                e.add_to_counter(path, &[Instruction::LocalGet(n)]);
            });
            self.unmark_after_flush(i);
        }
    }
}
