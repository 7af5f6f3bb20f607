//! Control-flow graphs of basic blocks, independent of any bytecode.
//!
//! A [`Cfg`] has blocks `0..num_blocks`, an entry block, and an ordered list of edges. An edge leads
//! to another block, out of the function ([`Succ::Exit`]), or away by an exception ([`Succ::Throw`]).
//! The order of the edges is the order in which the frontend found them; it fixes the default
//! Ball–Larus numbering, so it must be deterministic. Several edges between the same pair of blocks
//! are allowed (a multigraph).
//!
//! Exceptions: a block that may throw has one [`Succ::Throw`] edge, which ends the path
//! where the exception is raised, and the blocks where a handler of the function resumes are
//! [`Cfg::landings`], where new paths start. Which handler catches an exception is not a property of
//! the path through the function that throws it, so the throwing path and the handler's path are
//! two paths, as a back edge makes two.

use crate::graph::{Adjacency, Derived};
use serde::{Deserialize, Serialize};

/// Index of a basic block in its function.
pub type BlockId = u32;
/// Index of an edge in [`Cfg::edges`].
pub type CfgEdgeId = u32;

/// Where an edge leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Succ {
    /// Another block of the same function.
    Block(BlockId),
    /// Out of the function (return, fall-through of the body's end, tail call).
    Exit,
    /// Away by an exception raised in the block (by a call or a throw): to a landing of the same
    /// function, or out of it.
    Throw,
}

/// One control-flow edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CfgEdge {
    pub from: BlockId,
    pub to: Succ,
}

/// A control-flow graph. Edges are only ever added, so what the analyses derive from them (out-edges,
/// back edges) is computed once, on first use.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cfg {
    num_blocks: u32,
    entry: BlockId,
    edges: Vec<CfgEdge>,
    /// Blocks that a handler of the function resumes at after catching an exception.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    landings: Vec<BlockId>,
    #[serde(skip)]
    out_edges: Derived<Adjacency>,
    #[serde(skip)]
    back_edges: Derived<Vec<CfgEdgeId>>,
}

impl Cfg {
    /// An empty graph of `num_blocks` blocks entered at `entry`.
    pub fn new(num_blocks: u32, entry: BlockId) -> Self {
        Cfg::from_edges(num_blocks, entry, Vec::new())
    }

    /// The graph of `num_blocks` blocks entered at `entry` with `edges`, in order.
    pub fn from_edges(num_blocks: u32, entry: BlockId, edges: Vec<CfgEdge>) -> Self {
        debug_assert!(edges.iter().all(|e| e.from < num_blocks));
        Cfg {
            num_blocks,
            entry,
            edges,
            landings: Vec::new(),
            out_edges: Derived::default(),
            back_edges: Derived::default(),
        }
    }

    /// The same graph with `landings` as the blocks where handlers resume (sorted, without
    /// duplicates).
    pub fn with_landings(mut self, mut landings: Vec<BlockId>) -> Self {
        debug_assert!(landings.iter().all(|&b| b < self.num_blocks && b != self.entry));
        landings.sort_unstable();
        landings.dedup();
        self.landings = landings;
        self.back_edges = Derived::default();
        self
    }

    /// Blocks where a handler of the function resumes after catching an exception, in order.
    pub fn landings(&self) -> &[BlockId] {
        &self.landings
    }

    /// Whether some block may throw.
    pub fn throws(&self) -> bool {
        self.edges.iter().any(|e| e.to == Succ::Throw)
    }

    /// Where execution enters the graph: the entry, then the landings.
    fn roots(&self) -> impl Iterator<Item = BlockId> + '_ {
        std::iter::once(self.entry).chain(self.landings.iter().copied())
    }

    /// Adds an edge and returns its id.
    pub fn add_edge(&mut self, from: BlockId, to: Succ) -> CfgEdgeId {
        debug_assert!(from < self.num_blocks);
        self.edges.push(CfgEdge { from, to });
        (self.out_edges, self.back_edges) = (Derived::default(), Derived::default());
        (self.edges.len() - 1) as CfgEdgeId
    }

    pub fn num_blocks(&self) -> u32 {
        self.num_blocks
    }

    pub fn entry(&self) -> BlockId {
        self.entry
    }

    /// The edges, in the order they were added (an edge's id is its index).
    pub fn edges(&self) -> &[CfgEdge] {
        &self.edges
    }

    /// Out-edges of every block, in edge order.
    pub fn out_edges(&self) -> &Adjacency {
        self.out_edges.get_or_init(|| {
            Adjacency::group(
                self.num_blocks as usize,
                self.edges.iter().enumerate().map(|(i, e)| (e.from, i as CfgEdgeId)),
            )
        })
    }

    /// Blocks reachable from the entry or a landing.
    pub fn reachable(&self) -> Vec<bool> {
        let out = self.out_edges();
        let mut seen = vec![false; self.num_blocks as usize];
        let mut stack: Vec<BlockId> = self.roots().collect();
        for &b in &stack {
            seen[b as usize] = true;
        }
        while let Some(b) = stack.pop() {
            for &e in &out[b as usize] {
                if let Succ::Block(w) = self.edges[e as usize].to {
                    if !seen[w as usize] {
                        seen[w as usize] = true;
                        stack.push(w);
                    }
                }
            }
        }
        seen
    }

    /// The retreating edges of a depth-first search from the entry, then from each landing not yet
    /// seen, in edge order. On a reducible graph (every wasm function is one) these are exactly the
    /// loop back edges of the code reached without an exception.
    pub fn back_edges(&self) -> &[CfgEdgeId] {
        self.back_edges.get_or_init(|| self.find_back_edges())
    }

    /// By edge: whether it is one of [`Cfg::back_edges`].
    pub fn back_edge_mask(&self) -> Vec<bool> {
        let mut mask = vec![false; self.edges.len()];
        for &e in self.back_edges() {
            mask[e as usize] = true;
        }
        mask
    }

    fn find_back_edges(&self) -> Vec<CfgEdgeId> {
        let n = self.num_blocks as usize;
        // 0 = unvisited, 1 = on the stack, 2 = finished.
        let mut state = vec![0u8; n];
        let mut back = Vec::new();
        let mut stack: Vec<(BlockId, usize)> = Vec::new();
        for root in self.roots() {
            if state[root as usize] != 0 {
                continue;
            }
            state[root as usize] = 1;
            stack.push((root, 0));
            self.depth_first(&mut stack, &mut state, &mut back);
        }
        back.sort_unstable();
        back
    }

    /// Runs the depth-first search of [`Cfg::back_edges`] until `stack` is empty.
    fn depth_first(&self, stack: &mut Vec<(BlockId, usize)>, state: &mut [u8], back: &mut Vec<CfgEdgeId>) {
        let out = self.out_edges();
        while let Some(&mut (b, ref mut next)) = stack.last_mut() {
            if let Some(&e) = out[b as usize].get(*next) {
                *next += 1;
                if let Succ::Block(w) = self.edges[e as usize].to {
                    match state[w as usize] {
                        0 => {
                            state[w as usize] = 1;
                            stack.push((w, 0));
                        }
                        1 => back.push(e),
                        _ => {}
                    }
                }
            } else {
                state[b as usize] = 2;
                stack.pop();
            }
        }
    }

    /// Loop headers: targets of back edges.
    pub fn loop_headers(&self) -> Vec<bool> {
        self.targets(self.back_edges())
    }

    /// The blocks that `edges` lead to.
    pub fn targets(&self, edges: &[CfgEdgeId]) -> Vec<bool> {
        let mut h = vec![false; self.num_blocks as usize];
        for &e in edges {
            if let Succ::Block(w) = self.edges[e as usize].to {
                h[w as usize] = true;
            }
        }
        h
    }

    /// Loop nesting depth of every block (0 outside loops), from the natural loops of the back edges.
    pub fn loop_depths(&self) -> Vec<u32> {
        let mut depth = vec![0u32; self.num_blocks as usize];
        self.natural_loops(|_, body| {
            for &b in body {
                depth[b as usize] += 1;
            }
        });
        depth
    }

    /// Calls `visit(h, body)` for every loop header `h`, in block order, with the blocks of its
    /// natural loop (the union over its back edges; `h` first). Each loop costs its own size.
    pub fn natural_loops(&self, mut visit: impl FnMut(BlockId, &[BlockId])) {
        let n = self.num_blocks as usize;
        let back = self.back_edges();
        if back.is_empty() {
            return;
        }
        let preds = Adjacency::group(
            n,
            self.edges.iter().filter_map(|e| match e.to {
                Succ::Block(w) => Some((w, e.from)),
                Succ::Exit | Succ::Throw => None,
            }),
        );
        let by_header = Adjacency::group(
            n,
            back.iter().filter_map(|&e| match self.edges[e as usize] {
                CfgEdge { from, to: Succ::Block(h) } => Some((h, from)),
                _ => None,
            }),
        );
        // Blocks of the current header's natural loop carry its stamp (header + 1): nothing to clear
        // between loops.
        let mut stamp = vec![0u32; n];
        let mut body: Vec<BlockId> = Vec::new();
        let mut stack: Vec<BlockId> = Vec::new();
        for h in 0..n {
            let tails = &by_header[h];
            if tails.is_empty() {
                continue;
            }
            let mark = h as u32 + 1;
            stamp[h] = mark;
            body.clear();
            body.push(h as BlockId);
            for &t in tails {
                if stamp[t as usize] != mark {
                    stamp[t as usize] = mark;
                    body.push(t);
                    stack.push(t);
                }
            }
            while let Some(b) = stack.pop() {
                for &p in &preds[b as usize] {
                    if stamp[p as usize] != mark {
                        stamp[p as usize] = mark;
                        body.push(p);
                        stack.push(p);
                    }
                }
            }
            visit(h as BlockId, &body);
        }
    }
}
