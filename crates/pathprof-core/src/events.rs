//! Event counts from path counts [EVT23 §4.2].
//!
//! Every block has an event vector (how many times each event occurs in it, or a weight such as
//! the bytes it loads); a path's vector is the sum of its blocks'; and an event's total is the sum,
//! over the paths, of their counts times their vectors' entries — path counting (`pc`), computed
//! after the run. Path decoding (`pd`) adds a path's vector into counters at its end instead; both
//! give the totals of direct counting (`dec`), which adds a block's vector at every execution of the
//! block. With paths cut at every merge [EVT23 §4.3] a path is fixed by its last edge, and a block's
//! executions are the sum of the counts of the paths through it.

use crate::dag::{Dag, DagEdgeKind};

/// The event vector of a path through `blocks`: the sum of their vectors (`width` events each).
pub fn path_vector(blocks: &[u32], block_vectors: &[Vec<u64>], width: usize) -> Vec<u64> {
    let mut v = vec![0u64; width];
    for &b in blocks {
        for (x, y) in v.iter_mut().zip(&block_vectors[b as usize]) {
            *x = x.saturating_add(*y);
        }
    }
    v
}

/// Event totals of paths that ran: `(blocks, count)` for every path; saturating at `u64::MAX`.
pub fn totals<'a>(
    paths: impl IntoIterator<Item = (&'a [u32], u64)>,
    block_vectors: &[Vec<u64>],
    width: usize,
) -> Vec<u64> {
    let mut out = vec![0u64; width];
    for (blocks, count) in paths {
        for (x, y) in out.iter_mut().zip(path_vector(blocks, block_vectors, width)) {
            *x = x.saturating_add(y.saturating_mul(count));
        }
    }
    out
}

/// Event by event, the largest entry of any path's vector: the most events that a path which did not
/// reach its end (its activation stopped by a trap or an exit) can leave uncounted under `pc`/`pd`.
pub fn max_path_vector(dag: &Dag, block_vectors: &[Vec<u64>], width: usize) -> Vec<u64> {
    let out = dag.out_edges();
    // best[v]: per event, the largest sum over the blocks from v (included) to the path's end.
    let mut best = vec![vec![0u64; width]; dag.num_nodes() as usize];
    for &v in dag.topological_order().iter().rev() {
        let mut b = vec![0u64; width];
        for &e in &out[v as usize] {
            let edge = dag.edges[e as usize];
            // A path ends before the block an `End` edge enters.
            if matches!(edge.kind, DagEdgeKind::End(..)) || edge.to == dag.exit() {
                continue;
            }
            for (x, y) in b.iter_mut().zip(&best[edge.to as usize]) {
                *x = (*x).max(*y);
            }
        }
        if let Some(own) = block_vectors.get(v as usize).filter(|_| v < dag.num_blocks) {
            for (x, y) in b.iter_mut().zip(own) {
                *x = x.saturating_add(*y);
            }
        }
        best[v as usize] = b;
    }
    best[dag.entry() as usize].clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running example of [EVT23 §4.2]: events {if, allocation}; P0 = (1, 1), P1 = (1, 2);
    /// counts [1, 2] give if = 3 and allocation = 5.
    #[test]
    fn running_example() {
        // Blocks: 0 = the `if`, 1 = one allocation, 2 = a second allocation.
        let blocks = vec![vec![1, 0], vec![0, 1], vec![0, 1]];
        let p0: &[u32] = &[0, 1];
        let p1: &[u32] = &[0, 1, 2];
        assert_eq!(path_vector(p0, &blocks, 2), [1, 1]);
        assert_eq!(path_vector(p1, &blocks, 2), [1, 2]);
        assert_eq!(totals([(p0, 1), (p1, 2)], &blocks, 2), [3, 5]);
        // Cut at the merge before block 1: paths (if), (alloc) and (alloc), counts 1 + 2, 3 and 2.
        let cut: [(&[u32], u64); 3] = [(&[0], 3), (&[1], 3), (&[2], 2)];
        assert_eq!(totals(cut, &blocks, 2), [3, 5]);
    }
}
