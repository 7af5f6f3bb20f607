//! Path regeneration: from a path ID back to the DAG edges of the path (Ball & Larus 1996; used by PEP
//! §3.3 to rebuild edge profiles from sampled paths).
//!
//! From `s`, repeatedly take the out-edge `e` with `Val(e) ≤ rest < Val(e) + NumPaths(dest(e))`,
//! subtract `Val(e)` and move on, until `t`.

use crate::dag::{Dag, DagEdgeId, DagEdgeKind, NodeId};
use crate::numbering::Numbering;
use crate::BlockId;

/// Where a path starts or ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathPoint {
    /// The function entry (for a start) or a function exit (for an end).
    Boundary,
    /// A loop header or cut block.
    Block(BlockId),
    /// (An end only.) The exception raised in the path's last block.
    Throw,
}

/// A regenerated path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Path {
    pub edges: Vec<DagEdgeId>,
    /// Blocks whose instructions run on the path, in order.
    pub blocks: Vec<BlockId>,
    pub start: PathPoint,
    pub end: PathPoint,
}

/// The ID is not below the number of paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("path ID {0} is out of range")]
pub struct BadPathId(pub u64);

/// Regenerates the path with ID `id`.
pub fn regenerate(dag: &Dag, numbering: &Numbering, id: u64) -> Result<Path, BadPathId> {
    if id >= numbering.total(dag) {
        return Err(BadPathId(id));
    }
    let mut rest = id;
    let mut v: NodeId = dag.entry();
    let mut edges = Vec::new();
    while v != dag.exit() {
        let list = &numbering.order[v as usize];
        // `val` ascends along `list`; the last edge whose value is ≤ rest and whose range holds rest.
        let pos = list.partition_point(|&e| numbering.val[e as usize] <= rest);
        let e = *list[..pos]
            .iter()
            .rev()
            .find(|&&e| rest - numbering.val[e as usize] < numbering.num_paths[dag.edges[e as usize].to as usize])
            .ok_or(BadPathId(id))?;
        rest -= numbering.val[e as usize];
        edges.push(e);
        v = dag.edges[e as usize].to;
    }
    let first = dag.edges[edges[0] as usize];
    let last = dag.edges[*edges.last().unwrap() as usize];
    let start = match first.kind {
        DagEdgeKind::Start(b) => PathPoint::Block(b),
        _ => PathPoint::Boundary,
    };
    let end = match last.kind {
        DagEdgeKind::End(_, b) => PathPoint::Block(b),
        DagEdgeKind::Throw(_) => PathPoint::Throw,
        _ => PathPoint::Boundary,
    };
    let blocks = edges[1..].iter().map(|&e| dag.edges[e as usize].from).collect();
    Ok(Path { edges, blocks, start, end })
}

/// The IDs of the paths that start at `start`, run through `blocks` and end at `end` — the inverse of
/// [`regenerate`], for paths described as a profile describes them. Parallel edges (two branches of
/// one operator to the same block) make several paths with the same blocks: all of them are given,
/// up to `limit`. No ID when no path of the DAG has that description.
pub fn ids_of(
    dag: &Dag,
    numbering: &Numbering,
    start: PathPoint,
    end: PathPoint,
    blocks: &[BlockId],
    limit: usize,
) -> Vec<u64> {
    let Some(&first) = blocks.first() else { return Vec::new() };
    let out = dag.out_edges();
    let edges_from = |v: NodeId, pick: &dyn Fn(&crate::dag::DagEdge) -> bool| -> Vec<DagEdgeId> {
        out[v as usize].iter().copied().filter(|&e| pick(&dag.edges[e as usize])).collect()
    };
    // The choices of edge at every step: into the first block, between blocks, out of the last.
    let mut steps: Vec<Vec<DagEdgeId>> = Vec::with_capacity(blocks.len() + 1);
    steps.push(edges_from(dag.entry(), &|e| {
        e.to == first
            && match (start, e.kind) {
                (PathPoint::Boundary, DagEdgeKind::Real(_)) => true,
                (PathPoint::Block(h), DagEdgeKind::Start(b)) => h == b,
                _ => false,
            }
    }));
    for w in blocks.windows(2) {
        steps.push(edges_from(w[0], &|e| e.to == w[1] && matches!(e.kind, DagEdgeKind::Real(_))));
    }
    let last = *blocks.last().expect("blocks is not empty");
    steps.push(edges_from(last, &|e| {
        e.to == dag.exit()
            && match (end, e.kind) {
                (PathPoint::Boundary, DagEdgeKind::Real(_)) | (PathPoint::Throw, DagEdgeKind::Throw(_)) => true,
                (PathPoint::Block(h), DagEdgeKind::End(_, b)) => h == b,
                _ => false,
            }
    }));
    // Every combination of the choices, each an ID.
    let mut ids = vec![0u64];
    for choices in &steps {
        let mut next = Vec::with_capacity(ids.len() * choices.len());
        for &id in &ids {
            for &e in choices {
                if next.len() < limit {
                    next.push(id.wrapping_add(numbering.val[e as usize]));
                }
            }
        }
        ids = next;
    }
    ids
}
