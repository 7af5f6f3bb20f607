//! The path-profiling plan of one function: DAG, numbering and increments, with selective path
//! cutting at merges so that every path ID fits in 64 bits [EVT23 §4.3],
//! applied selectively: only where a function's paths exceed the budget.
//!
//! While some node has more paths than the limit, a block below the first such node (in reverse
//! topological order) is cut: its in-edges end paths there and a dummy `s→m` starts new ones. The block
//! chosen is the one whose cut lowers the function's total the most — a merge reached by many paths,
//! not a branch arm, whose cut would only move its paths from the node to `s`. Every cut lowers the
//! node's count; the loop ends because a node whose successors are all cut has at most its out-degree
//! in paths, or, at `s`, when no cut lowers the total any more.

use crate::cfg::Cfg;
use crate::dag::{Dag, DagEdgeKind, LoopCut};
use crate::estimate;
use crate::numbering::Numbering;
use crate::placement::Placement;
use serde::{Deserialize, Serialize};

/// How to plan a function.
#[derive(Clone, Debug)]
pub struct PlanOptions {
    pub loop_cut: LoopCut,
    /// Largest number of paths a function may have (the count of IDs, so IDs are below it).
    pub max_paths: u64,
    /// Expected frequency of every CFG edge (a measured edge profile, or [`estimate`]'s guess).
    /// `None` uses the static estimate.
    pub cfg_edge_frequencies: Option<Vec<f64>>,
    /// Smart numbering [PEP05 Fig. 4]: the hottest out-edge of each node gets `Val = 0`.
    pub smart: bool,
    /// Blocks to cut besides loop headers, whatever the path count.
    pub cuts: ExtraCuts,
}

/// Blocks cut besides loop headers, whatever the path count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExtraCuts {
    /// None: only those that keep the path count within the limit.
    #[default]
    None,
    /// Every merge (a block with two forward in-edges or more) [EVT23 §4.3]: a path is then fixed
    /// by its last edge, and the paths are as many as the edges, not exponentially many.
    Merges,
    /// Every block but the entry: a path is one block and the edge it leaves by, and the stream of
    /// paths is the stream of branches (the trace of `hpp`).
    Blocks,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            loop_cut: LoopCut::Headers,
            max_paths: u64::MAX,
            cfg_edge_frequencies: None,
            smart: true,
            cuts: ExtraCuts::None,
        }
    }
}

/// No cut brings the path count within the limit: either a block has more out-edges than the limit
/// allows (the node is that block), or the paths from all start points add up to more than the limit
/// and no further cut lowers their total (the node is the virtual entry `s`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("node {0} has more paths than the limit even with all its successors cut")]
pub struct TooManyPaths(pub u32);

/// Everything needed to instrument one function and decode its counters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionPlan {
    pub dag: Dag,
    pub numbering: Numbering,
    pub placement: Placement,
    /// Blocks cut besides the loop headers — those asked for ([`PlanOptions::cuts`]), and
    /// to keep path IDs within the limit: every edge into them ends a path. (With
    /// [`LoopCut::BackEdges`] this may be a loop header, whose forward in-edges did not end paths.)
    pub overflow_cuts: Vec<u32>,
}

impl FunctionPlan {
    pub fn build(cfg: &Cfg, options: &PlanOptions) -> Result<FunctionPlan, TooManyPaths> {
        let cfg_freq = options.cfg_edge_frequencies.clone().unwrap_or_else(|| estimate::cfg_edge_frequencies(cfg));
        let mut extra = vec![false; cfg.num_blocks() as usize];
        let mut overflow_cuts = Vec::new();
        if options.cuts != ExtraCuts::None {
            let reachable = cfg.reachable();
            let back = cfg.back_edge_mask();
            let mut forward_in = vec![0u32; cfg.num_blocks() as usize];
            for (i, e) in cfg.edges().iter().enumerate() {
                if let (true, false, crate::Succ::Block(w)) = (reachable[e.from as usize], back[i], e.to) {
                    forward_in[w as usize] += 1;
                }
            }
            let least = if options.cuts == ExtraCuts::Merges { 2 } else { 1 };
            for (b, &n) in forward_in.iter().enumerate() {
                if n >= least && b as u32 != cfg.entry() {
                    extra[b] = true;
                    overflow_cuts.push(b as u32);
                }
            }
        }
        loop {
            let dag = Dag::build(cfg, options.loop_cut, &extra);
            let freq = estimate::dag_edge_frequencies(cfg, &dag, &cfg_freq);
            let priority = if options.smart { freq.clone() } else { vec![0.0; freq.len()] };
            match Numbering::with_priority(&dag, &priority, options.max_paths) {
                Ok(numbering) => {
                    let placement = Placement::compute(&dag, &numbering, &freq);
                    overflow_cuts.sort_unstable();
                    return Ok(FunctionPlan { dag, numbering, placement, overflow_cuts });
                }
                Err(overflow) => {
                    let victim = Self::cut_candidate(&dag, options.max_paths).ok_or(TooManyPaths(overflow.node))?;
                    extra[victim as usize] = true;
                    overflow_cuts.push(victim);
                }
            }
        }
    }

    /// The block to cut next, or `None` when no cut helps.
    ///
    /// Let `v` be the first node, in reverse topological order, whose path count exceeds `limit`.
    /// Cutting a block `w` below `v` that still has a real in-edge and `N(w) ≥ 2` lowers `N(v)`, since
    /// paths from `v` now stop at `w`, and raises no block's count. The function's total changes too:
    /// the `k(w) · N(w)` paths through `w` (`k(w)` paths from `s` to `w`) become `k'(w) + N(w)`, where
    /// `k'(w)` counts those that reach `w` by a real edge (a loop header under back-edge truncation
    /// already has its `s→w`). The block below `v` that lowers the total the most is cut (ties: more
    /// paths, then the lower id). When `v` is `s` itself, every block is within the limit but the start
    /// points add up to more, and only a cut that lowers the total helps.
    fn cut_candidate(dag: &Dag, limit: u64) -> Option<u32> {
        let counts = saturating_path_counts(dag);
        let order = dag.topological_order();
        let out = dag.out_edges();
        let v = order.iter().rev().copied().find(|&v| counts[v as usize] > limit as u128)?;
        // k(w): the number of paths from s to w.
        let mut prefix = vec![0u128; dag.num_nodes() as usize];
        prefix[dag.entry() as usize] = 1;
        for &u in &order {
            for &e in &out[u as usize] {
                let w = dag.edges[e as usize].to as usize;
                prefix[w] = prefix[w].saturating_add(prefix[u as usize]);
            }
        }
        // Nodes strictly below v.
        let mut below = vec![false; dag.num_nodes() as usize];
        let mut stack = vec![v];
        while let Some(u) = stack.pop() {
            for &e in &out[u as usize] {
                let w = dag.edges[e as usize].to;
                if !below[w as usize] {
                    below[w as usize] = true;
                    stack.push(w);
                }
            }
        }
        let mut real_in = vec![false; dag.num_nodes() as usize];
        for e in &dag.edges {
            if matches!(e.kind, DagEdgeKind::Real(_)) {
                real_in[e.to as usize] = true;
            }
        }
        // The change of the total as a signed number, saturating: (lowers it?, by how much or how little).
        let gain = |w: u32| {
            let (k, n) = (prefix[w as usize], counts[w as usize]);
            let before = k.saturating_mul(n);
            let after = (k - u128::from(dag.cut[w as usize])).saturating_add(n);
            if before > after {
                (true, before - after)
            } else {
                (false, u128::MAX - (after - before))
            }
        };
        (0..dag.num_blocks)
            .filter(|&w| below[w as usize] && real_in[w as usize] && w != dag.entry_block() && counts[w as usize] >= 2)
            .filter(|&w| v != dag.entry() || gain(w).0)
            .max_by_key(|&w| (gain(w), counts[w as usize], std::cmp::Reverse(w)))
    }

    /// Number of paths.
    pub fn num_paths(&self) -> u64 {
        self.numbering.total(&self.dag)
    }
}

/// Path counts of every node, saturating at `u128::MAX`.
pub fn saturating_path_counts(dag: &Dag) -> Vec<u128> {
    let out = dag.out_edges();
    let mut counts = vec![0u128; dag.num_nodes() as usize];
    for &v in dag.topological_order().iter().rev() {
        if v == dag.exit() {
            counts[v as usize] = 1;
            continue;
        }
        counts[v as usize] =
            out[v as usize].iter().fold(0u128, |acc, &e| acc.saturating_add(counts[dag.edges[e as usize].to as usize]));
    }
    counts
}
