//! Static edge-frequency estimates, used for the spanning tree and for smart numbering until a measured
//! profile is available.
//!
//! A block at loop depth `d` is assumed to run `8^d` times per function entry (depth capped at 10);
//! a block's frequency is split evenly among its out-edges, but for its throw edge, which gets a
//! thousandth of a share (exceptions are rare). The dummy edge `s→h` gets the frequency of
//! all edges into `h`, and `s→entry` gets 1.

use crate::cfg::{Cfg, Succ};
use crate::dag::{Dag, DagEdgeKind};

/// Expected frequency of every CFG edge.
pub fn cfg_edge_frequencies(cfg: &Cfg) -> Vec<f64> {
    let depth = cfg.loop_depths();
    let out = cfg.out_edges();
    cfg.edges()
        .iter()
        .map(|e| {
            let f = 8f64.powi(depth[e.from as usize].min(10) as i32);
            let share = f / out[e.from as usize].len() as f64;
            if e.to == Succ::Throw {
                share * 1e-3
            } else {
                share
            }
        })
        .collect()
}

/// Frequencies of the DAG edges from frequencies of the CFG edges.
pub fn dag_edge_frequencies(cfg: &Cfg, dag: &Dag, cfg_freq: &[f64]) -> Vec<f64> {
    let mut into = vec![0.0f64; cfg.num_blocks() as usize];
    for (e, f) in cfg.edges().iter().zip(cfg_freq) {
        if let Succ::Block(w) = e.to {
            into[w as usize] += f;
        }
    }
    dag.edges
        .iter()
        .map(|e| match e.kind {
            DagEdgeKind::Real(u32::MAX) => 1.0,
            DagEdgeKind::Real(c) | DagEdgeKind::End(c, _) | DagEdgeKind::Throw(c) => cfg_freq[c as usize],
            DagEdgeKind::Start(b) => into[b as usize].max(1.0),
        })
        .collect()
}

/// CFG edge frequencies measured by a path profile: every path contributes its count to the edges
/// between its consecutive blocks and to its last edge (to the exit, or into the block where it
/// ends, or away by an exception). Edges no path took keep a small multiple of the static estimate,
/// so that ties among cold edges still follow loop depth. `paths` are `(blocks, end, count)`, with
/// `end` the path's last edge's target.
pub fn cfg_edge_frequencies_from_paths<'a>(
    cfg: &Cfg,
    paths: impl IntoIterator<Item = (&'a [u32], Succ, u64)>,
) -> Vec<f64> {
    let out = cfg.out_edges();
    let mut freq: Vec<f64> = cfg_edge_frequencies(cfg).into_iter().map(|f| f * 1e-9).collect();
    let find = |from: u32, to: Succ| -> Option<usize> {
        out.get(from as usize)?.iter().map(|&e| e as usize).find(|&e| cfg.edges()[e].to == to)
    };
    for (blocks, end, count) in paths {
        let steps = blocks.windows(2).map(|w| (w[0], Succ::Block(w[1])));
        let last = blocks.last().map(|&b| (b, end));
        for (from, to) in steps.chain(last) {
            if let Some(e) = find(from, to) {
                freq[e] += count as f64;
            }
        }
    }
    freq
}
