//! The Ball–Larus DAG of a function [PEP05 §3.1–3.2, KBL13 §2.1].
//!
//! Nodes are the CFG's blocks plus a virtual entry `s` and a virtual exit `t`. Loops are broken in one
//! of two ways ([`LoopCut`]):
//!
//! * [`LoopCut::BackEdges`] — classic Ball–Larus: each back edge `u→h` is replaced by the dummy edges
//!   `u→t` and `s→h`;
//! * [`LoopCut::Headers`] — as PEP and k-BLPP do: *every* edge into a loop header ends a path there, so
//!   each edge `u→h` becomes `u→t` and one dummy edge `s→h` starts the paths at `h`.
//!
//! Any other block may be *cut* the same way as a header ([EVT23 §4.3]: its inbound edges `p→m`
//! become `p→T`, and `S→m` is added once); [`crate::plan`] cuts merge blocks when a function has more
//! paths than a 64-bit register can number. The landings of exception handlers ([`Cfg::landings`])
//! are cut too: their paths start with `s→m`, and an edge that throws becomes `u→t`
//! ([`DagEdgeKind::Throw`]). Blocks unreachable from the entry and the landings are left out.

use crate::cfg::{BlockId, Cfg, CfgEdgeId, Succ};
use crate::graph::{Adjacency, Derived};
use serde::{Deserialize, Serialize};

/// Index of a DAG node: blocks keep their ids, `s` and `t` follow them.
pub type NodeId = u32;
/// Index of an edge in [`Dag::edges`].
pub type DagEdgeId = u32;

/// How loops are broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LoopCut {
    /// Paths end at back edges (Ball & Larus 1996).
    BackEdges,
    /// Paths end at loop headers (PEP, k-BLPP).
    Headers,
}

/// What a DAG edge stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DagEdgeKind {
    /// The CFG edge itself (to a block, or to `t` for an exit edge).
    Real(CfgEdgeId),
    /// Dummy `s→b`: paths that start at the cut block or loop header `b`.
    Start(BlockId),
    /// Dummy `u→t` standing for the CFG edge `u→b` into the cut block or header `b`: the path ends at
    /// `b`.
    End(CfgEdgeId, BlockId),
    /// `u→t` for the CFG edge by which an exception leaves `u`: the path ends where it is raised.
    Throw(CfgEdgeId),
}

/// One DAG edge. Written compact, as `[from, to, 0, cfg_edge]` (real), `[from, to, 1, block]`
/// (start), `[from, to, 2, cfg_edge, block]` (end) or `[from, to, 3, cfg_edge]` (throw): a large
/// function's map holds millions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DagEdge {
    pub from: NodeId,
    pub to: NodeId,
    pub kind: DagEdgeKind,
}

impl Serialize for DagEdge {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (from, to) = (self.from, self.to);
        match self.kind {
            DagEdgeKind::Real(e) => (from, to, 0u8, e).serialize(s),
            DagEdgeKind::Start(b) => (from, to, 1u8, b).serialize(s),
            DagEdgeKind::End(e, b) => (from, to, 2u8, e, b).serialize(s),
            DagEdgeKind::Throw(e) => (from, to, 3u8, e).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for DagEdge {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v: Vec<u32> = Vec::deserialize(d)?;
        let kind = match v.as_slice() {
            [_, _, 0, e] => DagEdgeKind::Real(*e),
            [_, _, 1, b] => DagEdgeKind::Start(*b),
            [_, _, 2, e, b] => DagEdgeKind::End(*e, *b),
            [_, _, 3, e] => DagEdgeKind::Throw(*e),
            _ => return Err(D::Error::custom(format!("not a DAG edge: {v:?}"))),
        };
        Ok(DagEdge { from: v[0], to: v[1], kind })
    }
}

/// The DAG of one function. Its edges do not change once built.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dag {
    /// Number of CFG blocks; node `num_blocks` is `s`, `num_blocks + 1` is `t`.
    pub num_blocks: u32,
    pub edges: Vec<DagEdge>,
    /// Blocks where paths start and end besides the entry and exits (headers and cut blocks).
    /// Written as a string of bits.
    #[serde(with = "crate::graph::bits")]
    pub cut: Vec<bool>,
    /// Out-edges of every node, grouped on first use (numbering, placement and the instrumenter all
    /// walk them).
    #[serde(skip)]
    out: Derived<Adjacency>,
}

impl Dag {
    /// Builds the DAG of `cfg`, breaking loops by `mode` and cutting the blocks in `extra_cuts` too.
    pub fn build(cfg: &Cfg, mode: LoopCut, extra_cuts: &[bool]) -> Dag {
        let n = cfg.num_blocks();
        let reachable = cfg.reachable();
        let is_back = cfg.back_edge_mask();
        let headers = cfg.targets(cfg.back_edges());
        let mut cut = vec![false; n as usize];
        for b in 0..n as usize {
            let extra = extra_cuts.get(b).copied().unwrap_or(false);
            cut[b] = reachable[b] && (extra || (mode == LoopCut::Headers && headers[b]));
        }
        for &b in cfg.landings() {
            cut[b as usize] = true;
        }
        // Every edge into the entry block is a back edge; those are truncated the classic way, so that a
        // path from the function entry stays distinct from one that starts after such an edge.
        cut[cfg.entry() as usize] = false;
        let s = n;
        let t = n + 1;
        let mut edges = Vec::with_capacity(cfg.edges().len() + 8);
        edges.push(DagEdge { from: s, to: cfg.entry(), kind: DagEdgeKind::Real(u32::MAX) });
        let mut started = vec![false; n as usize];
        // With back-edge truncation, s→h is added once per header, in the order of the back edges.
        for (i, e) in cfg.edges().iter().enumerate() {
            if !reachable[e.from as usize] {
                continue;
            }
            let id = i as CfgEdgeId;
            match e.to {
                Succ::Exit => edges.push(DagEdge { from: e.from, to: t, kind: DagEdgeKind::Real(id) }),
                Succ::Throw => edges.push(DagEdge { from: e.from, to: t, kind: DagEdgeKind::Throw(id) }),
                Succ::Block(w) => {
                    let classic = mode == LoopCut::BackEdges || w == cfg.entry();
                    let ends = cut[w as usize] || (classic && is_back[i]);
                    if ends {
                        edges.push(DagEdge { from: e.from, to: t, kind: DagEdgeKind::End(id, w) });
                        started[w as usize] = true;
                    } else {
                        edges.push(DagEdge { from: e.from, to: w, kind: DagEdgeKind::Real(id) });
                    }
                }
            }
        }
        for b in 0..n {
            if started[b as usize] || cut[b as usize] {
                edges.push(DagEdge { from: s, to: b, kind: DagEdgeKind::Start(b) });
                cut[b as usize] = true;
            }
        }
        Dag { num_blocks: n, edges, cut, out: Derived::default() }
    }

    pub fn entry(&self) -> NodeId {
        self.num_blocks
    }

    pub fn exit(&self) -> NodeId {
        self.num_blocks + 1
    }

    pub fn num_nodes(&self) -> u32 {
        self.num_blocks + 2
    }

    /// The CFG entry block (target of the first edge, `s→entry`).
    pub fn entry_block(&self) -> BlockId {
        self.edges[0].to
    }

    /// Out-edges of every node, in edge order.
    pub fn out_edges(&self) -> &Adjacency {
        self.out.get_or_init(|| {
            Adjacency::group(
                self.num_nodes() as usize,
                self.edges.iter().enumerate().map(|(i, e)| (e.from, i as DagEdgeId)),
            )
        })
    }

    /// Nodes in topological order (`s` first, `t` last); only nodes reachable from `s` and `t`.
    pub fn topological_order(&self) -> Vec<NodeId> {
        let nn = self.num_nodes() as usize;
        let out = self.out_edges();
        let mut indeg = vec![0u32; nn];
        let mut reach = vec![false; nn];
        let mut stack = vec![self.entry()];
        reach[self.entry() as usize] = true;
        while let Some(v) = stack.pop() {
            for &e in &out[v as usize] {
                let w = self.edges[e as usize].to;
                if !reach[w as usize] {
                    reach[w as usize] = true;
                    stack.push(w);
                }
            }
        }
        for e in &self.edges {
            if reach[e.from as usize] {
                indeg[e.to as usize] += 1;
            }
        }
        let mut order = Vec::with_capacity(nn);
        let mut ready = vec![self.entry()];
        while let Some(v) = ready.pop() {
            order.push(v);
            for &e in out[v as usize].iter().rev() {
                let w = self.edges[e as usize].to;
                indeg[w as usize] -= 1;
                if indeg[w as usize] == 0 {
                    ready.push(w);
                }
            }
        }
        // t is reachable from s in every DAG with at least one exit or cut; keep it last regardless.
        order.retain(|&v| v != self.exit());
        order.push(self.exit());
        debug_assert!(
            order.iter().filter(|&&v| reach[v as usize]).count() + usize::from(!reach[self.exit() as usize])
                == order.len()
        );
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_are_written_compact_and_read_back() {
        let edges = [
            DagEdge { from: 4, to: 0, kind: DagEdgeKind::Real(7) },
            DagEdge { from: 4, to: 2, kind: DagEdgeKind::Start(2) },
            DagEdge { from: 1, to: 5, kind: DagEdgeKind::End(3, 2) },
            DagEdge { from: 3, to: 5, kind: DagEdgeKind::Throw(9) },
        ];
        let text = serde_json::to_string(&edges).unwrap();
        assert_eq!(text, "[[4,0,0,7],[4,2,1,2],[1,5,2,3,2],[3,5,3,9]]");
        assert_eq!(serde_json::from_str::<Vec<DagEdge>>(&text).unwrap(), edges);
        assert!(serde_json::from_str::<DagEdge>("[1,2,4,4]").is_err());
        assert!(serde_json::from_str::<DagEdge>("[1,2,0]").is_err());
    }
}
