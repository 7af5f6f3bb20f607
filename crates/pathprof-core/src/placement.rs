//! Increments on chords only [BL96; PPP07 §3.2].
//!
//! Add the edge `t→s` to the DAG, take a maximum spanning tree of the undirected graph weighted by
//! expected edge frequency with `t→s` forced into it, and give every node a potential `φ` such that
//! `φ(v) = φ(u) + Val(u→v)` along tree edges (`φ(s) = φ(t) = 0`). Each edge then gets
//! `Inc(e) = Val(e) + φ(from) − φ(to)`: zero on tree edges, so only chords carry code, and the sum of
//! `Inc` along any `s→t` path telescopes to the path's ID. Arithmetic is modulo 2^64; a frontend that
//! keeps the register in 32 bits truncates the increments, which is exact because every ID it sees is
//! below 2^32.
//!
//! An edge by which an exception leaves a block ([`DagEdgeKind::Throw`]) goes into the tree before
//! any other: nothing runs between the throw and the handler that could add its increment, so it
//! must be zero. These edges all end at `t` and leave distinct blocks, so they never close a cycle.
//!
//! Path start and end are folded into the neighbouring increments: a path starts with `r = Inc(s→x)`
//! (not `r = 0; r += …`), and the increment of the last edge is added just before the count.

use crate::dag::{Dag, DagEdgeId, DagEdgeKind};
use crate::graph::Adjacency;
use crate::numbering::Numbering;
use serde::{Deserialize, Serialize};

/// Increments of one function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// `Inc(e)` for every DAG edge, modulo 2^64.
    pub inc: Vec<u64>,
    /// Whether the edge is in the spanning tree (and so has `Inc = 0`). Written as a string of
    /// bits.
    #[serde(with = "crate::graph::bits")]
    pub in_tree: Vec<bool>,
}

struct UnionFind(Vec<u32>);

impl UnionFind {
    fn find(&mut self, mut x: u32) -> u32 {
        while self.0[x as usize] != x {
            let p = self.0[x as usize];
            self.0[x as usize] = self.0[p as usize];
            x = p;
        }
        x
    }

    fn union(&mut self, a: u32, b: u32) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        self.0[ra as usize] = rb;
        true
    }
}

impl Placement {
    /// Places increments using `weight[e]` (expected frequency) for the spanning tree.
    pub fn compute(dag: &Dag, numbering: &Numbering, weight: &[f64]) -> Placement {
        assert_eq!(weight.len(), dag.edges.len());
        let nn = dag.num_nodes();
        let mut uf = UnionFind((0..nn).collect());
        uf.union(dag.exit(), dag.entry());
        let mut by_weight: Vec<DagEdgeId> = (0..dag.edges.len() as u32).collect();
        let throws = |e: DagEdgeId| matches!(dag.edges[e as usize].kind, DagEdgeKind::Throw(_));
        by_weight.sort_unstable_by(|&a, &b| {
            throws(b).cmp(&throws(a)).then(weight[b as usize].total_cmp(&weight[a as usize])).then(a.cmp(&b))
        });
        let mut in_tree = vec![false; dag.edges.len()];
        for e in by_weight {
            let edge = dag.edges[e as usize];
            in_tree[e as usize] = uf.union(edge.from, edge.to);
            debug_assert!(in_tree[e as usize] || !throws(e), "a throw edge closes no cycle");
        }
        Placement::with_tree(dag, &in_tree, &numbering.val)
    }

    /// The increments of the weights `val` (modulo 2^64) on the chords of the spanning tree `in_tree`
    /// (closed by `t→s`): a second numbering of the same DAG, such as the preferential one
    /// ([`crate::ppp`]), gets its increments on the same edges as the first.
    pub fn with_tree(dag: &Dag, in_tree: &[bool], val: &[u64]) -> Placement {
        let nn = dag.num_nodes();
        // Tree adjacency: (neighbour, edge, forward?) per node; the edge `t→s` closes the tree.
        let tree = in_tree.iter().enumerate().filter(|&(_, &t)| t).map(|(e, _)| (e as DagEdgeId, dag.edges[e]));
        let adj = Adjacency::group(
            nn as usize,
            [(dag.exit(), (dag.entry(), u32::MAX, true)), (dag.entry(), (dag.exit(), u32::MAX, false))]
                .into_iter()
                .chain(tree.flat_map(|(e, edge)| [(edge.from, (edge.to, e, true)), (edge.to, (edge.from, e, false))])),
        );
        // Potentials by walking the tree from s.
        let mut phi = vec![0u64; nn as usize];
        let mut seen = vec![false; nn as usize];
        let mut stack = vec![dag.entry()];
        seen[dag.entry() as usize] = true;
        while let Some(u) = stack.pop() {
            for &(w, e, forward) in &adj[u as usize] {
                if seen[w as usize] {
                    continue;
                }
                seen[w as usize] = true;
                let v = if e == u32::MAX { 0 } else { val[e as usize] };
                phi[w as usize] =
                    if forward { phi[u as usize].wrapping_add(v) } else { phi[u as usize].wrapping_sub(v) };
                stack.push(w);
            }
        }
        let inc = dag
            .edges
            .iter()
            .enumerate()
            .map(|(i, e)| {
                if in_tree[i] {
                    0
                } else {
                    val[i].wrapping_add(phi[e.from as usize]).wrapping_sub(phi[e.to as usize])
                }
            })
            .collect();
        Placement { inc, in_tree: in_tree.to_vec() }
    }

    /// Number of edges that carry a non-zero increment.
    pub fn num_increments(&self) -> usize {
        self.inc.iter().filter(|&&i| i != 0).count()
    }
}
