//! The path-profiling plan of one function: DAG, numbering and increments, with selective path
//! cutting at merges so that every path ID fits in 64 bits (seed 003 §path cutting,
//! event-profiling-notes §2: "a natural extension is cutting selectively, only where NumPaths exceeds
//! a budget").
//!
//! While some node has more paths than the limit, the successor with the most paths of the first such
//! node (in reverse topological order) is cut: its in-edges end paths there and a dummy `s→m` starts
//! new ones. A cut successor contributes one path instead of all of its own, so the count falls; the
//! loop ends because a node whose successors are all cut has at most its out-degree in paths.

use crate::cfg::Cfg;
use crate::dag::{Dag, LoopCut};
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
    /// Smart numbering (seed 004 Fig. 4): the hottest out-edge of each node gets `Val = 0`.
    pub smart: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions { loop_cut: LoopCut::Headers, max_paths: u64::MAX, cfg_edge_frequencies: None, smart: true }
    }
}

/// A block has more out-edges to the exit than the path limit allows, so no cutting can help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("node {0} has more paths than the limit even with all its successors cut")]
pub struct TooManyPaths(pub u32);

/// Everything needed to instrument one function and decode its counters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionPlan {
    pub dag: Dag,
    pub numbering: Numbering,
    pub placement: Placement,
    /// Blocks cut only to keep path IDs within the limit (not loop headers).
    pub overflow_cuts: Vec<u32>,
}

impl FunctionPlan {
    pub fn build(cfg: &Cfg, options: &PlanOptions) -> Result<FunctionPlan, TooManyPaths> {
        let cfg_freq = options.cfg_edge_frequencies.clone().unwrap_or_else(|| estimate::cfg_edge_frequencies(cfg));
        let mut extra = vec![false; cfg.num_blocks as usize];
        let mut overflow_cuts = Vec::new();
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

    /// The successor with the most paths of the first node, in reverse topological order, whose path
    /// count exceeds `limit`.
    fn cut_candidate(dag: &Dag, limit: u64) -> Option<u32> {
        let counts = saturating_path_counts(dag);
        let out = dag.out_edges();
        let v = dag.topological_order().into_iter().rev().find(|&v| counts[v as usize] > limit as u128)?;
        out[v as usize]
            .iter()
            .map(|&e| dag.edges[e as usize].to)
            .filter(|&w| w < dag.num_blocks && !dag.cut[w as usize] && w != dag.entry_block())
            .max_by_key(|&w| (counts[w as usize], std::cmp::Reverse(w)))
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
