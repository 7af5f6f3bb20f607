//! Ball–Larus path numbering [BL96; PEP05 Fig. 2; KBL13 Fig. 2] and smart path numbering
//! [PEP05 Fig. 4].
//!
//! In reverse topological order, `NumPaths(t) = 1` and for every other node the out-edges are visited
//! in a fixed order, each getting `Val(e) = NumPaths(v)` before `NumPaths(v) += NumPaths(dest(e))`.
//! The sum of `Val` along any `s→t` path is then a unique ID in `[0, N)`.
//!
//! The order of the out-edges is given by a priority per edge: higher priority first, ties in edge
//! order. Equal priorities give the plain Ball–Larus order; edge frequencies give smart numbering,
//! where the hottest out-edge of every node gets `Val = 0`.
//!
//! Counts are computed in `u128` and checked: a DAG whose path count exceeds the caller's limit is
//! reported as [`Overflow`] together with the node where it happened, never wrapped.

use crate::dag::{Dag, DagEdgeId, NodeId};
use crate::graph::Adjacency;
use serde::{Deserialize, Serialize};

/// The numbering of one DAG.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Numbering {
    /// `NumPaths(v)` for every node (0 for nodes that cannot reach `t` or are not reachable).
    pub num_paths: Vec<u64>,
    /// `Val(e)` for every edge.
    pub val: Vec<u64>,
    /// Out-edges of every node in numbering order (so `val` ascends along each list).
    pub order: Adjacency,
}

/// The path count of some node exceeded the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("node {node} has more than {limit} paths to the exit")]
pub struct Overflow {
    pub node: NodeId,
    pub limit: u64,
}

impl Numbering {
    /// Plain Ball–Larus numbering: out-edges in edge order.
    pub fn ball_larus(dag: &Dag, limit: u64) -> Result<Numbering, Overflow> {
        Self::with_priority(dag, &vec![0.0; dag.edges.len()], limit)
    }

    /// Numbering with out-edges visited by decreasing `priority` (ties in edge order). With edge
    /// frequencies as priorities this is smart path numbering.
    pub fn with_priority(dag: &Dag, priority: &[f64], limit: u64) -> Result<Numbering, Overflow> {
        assert_eq!(priority.len(), dag.edges.len());
        let nn = dag.num_nodes() as usize;
        let out = dag.out_edges();
        let mut order = out.clone();
        for v in 0..nn {
            order[v].sort_unstable_by(|&a, &b| priority[b as usize].total_cmp(&priority[a as usize]).then(a.cmp(&b)));
        }
        let mut num_paths = vec![0u64; nn];
        let mut val = vec![0u64; dag.edges.len()];
        for &v in dag.topological_order().iter().rev() {
            if v == dag.exit() {
                num_paths[v as usize] = 1;
                continue;
            }
            let mut n: u128 = 0;
            for &e in &order[v as usize] {
                val[e as usize] = n as u64;
                n += num_paths[dag.edges[e as usize].to as usize] as u128;
                if n > limit as u128 {
                    return Err(Overflow { node: v, limit });
                }
            }
            num_paths[v as usize] = n as u64;
        }
        Ok(Numbering { num_paths, val, order })
    }

    /// For every node reached by exactly one path from `s`: the sum of `Val` along that path and the
    /// path's last edge. A path end reached only through such a node has an ID known statically, so
    /// its count needs no path register.
    pub fn unique_prefixes(&self, dag: &Dag) -> Vec<Option<(u64, DagEdgeId)>> {
        let nn = dag.num_nodes() as usize;
        // Number of paths from s, saturating at 2 (only "one" matters).
        let mut reach = vec![0u8; nn];
        let mut prefix: Vec<Option<(u64, DagEdgeId)>> = vec![None; nn];
        reach[dag.entry() as usize] = 1;
        let out = dag.out_edges();
        let mut entry_prefix = Some((0u64, u32::MAX));
        for &v in &dag.topological_order() {
            let here = if v == dag.entry() { entry_prefix.take() } else { prefix[v as usize] };
            for &e in &out[v as usize] {
                let w = dag.edges[e as usize].to as usize;
                reach[w] = (reach[w] + reach[v as usize]).min(2);
                prefix[w] = match (reach[w], here) {
                    (1, Some((sum, _))) => Some((sum.wrapping_add(self.val[e as usize]), e)),
                    _ => None,
                };
            }
        }
        prefix
    }

    /// The number of paths, `NumPaths(s)`.
    pub fn total(&self, dag: &Dag) -> u64 {
        self.num_paths[dag.entry() as usize]
    }
}
