//! Preferential path profiling (PPP) [PPP07 §3.3, Fig. 3.10]: a numbering of a DAG's paths that
//! gives a given set `I` of *interesting* paths unique, compact IDs, so that a plain array indexed by
//! the PPP ID counts them.
//!
//! In reverse topological order, the out-edges `e` of every node `v` get weights `W(e)`: the
//! interesting paths through `e` are grouped by their prefix up to `v` (the edges from `s` to `v`),
//! each path carrying its partial ID `pid(p)`, the sum of the
//! weights of its suffix after `v`; each group `q` asks for the weight that moves its smallest partial
//! ID to its next free ID `cis(q)`, and the edge takes the largest request, leaving holes for the
//! others. Then every path through `e` adds `W(e)` to its partial ID, and each group's next free ID
//! becomes one past its largest. Out-edges of a node are visited in the Ball–Larus numbering's order,
//! so that with every path interesting the weights are the Ball–Larus weights. Edges that no
//! interesting path takes weigh 0.
//!
//! The PPP ID of a path is the sum of its weights: the interesting paths' IDs are unique and start at
//! 0, and `δ = (max + 1) / |I|` says how compact they are (1 without holes). Weights may be negative;
//! they are kept modulo 2^64, as the Ball–Larus weights are. An uninteresting path may get an ID in
//! range, even that of an interesting path (perfect separation is impossible in general [PPP07
//! Lemma 3.3.1]): the runtime compares its Ball–Larus ID with the slot's. Increments on chords are
//! computed from these weights with the spanning tree of the Ball–Larus increments
//! ([`Placement::with_tree`](crate::placement::Placement::with_tree)), so that both registers change on
//! the same edges.

use crate::dag::{Dag, DagEdgeId};
use crate::numbering::Numbering;
use crate::placement::Placement;
use crate::plan::FunctionPlan;
use crate::regen::{self, BadPathId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The preferential numbering of one function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PppNumbering {
    /// `W(e)` for every DAG edge, modulo 2^64.
    pub val: Vec<u64>,
    /// Slot `i` holds the Ball–Larus ID of the interesting path whose PPP ID is `i`; `None` is a hole.
    pub slots: Vec<Option<u64>>,
}

/// Why an interesting set cannot be numbered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PppError {
    #[error(transparent)]
    BadPathId(#[from] BadPathId),
    #[error("the interesting paths' IDs would span more than {0} slots")]
    TooWide(u64),
}

impl PppNumbering {
    /// Numbers the paths of `dag` that have the Ball–Larus IDs `interesting` (under `numbering`;
    /// duplicates are ignored) with at most `max_slots` slots from the smallest ID to the largest.
    pub fn build(
        dag: &Dag,
        numbering: &Numbering,
        interesting: &[u64],
        max_slots: u64,
    ) -> Result<PppNumbering, PppError> {
        let mut ids: Vec<u64> = interesting.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let paths = (ids.iter())
            .map(|&id| Ok(regen::regenerate(dag, numbering, id)?.edges))
            .collect::<Result<Vec<_>, BadPathId>>()?;
        let order = dag.topological_order();
        let nodes = order.iter().rev().map(|&v| &numbering.order[v as usize][..]);
        let (val, pid) = weights(dag.edges.len(), nodes, &paths, max_slots)?;
        Ok(PppNumbering { val, slots: slots(&pid, &ids) })
    }

    /// Number of interesting paths.
    pub fn interesting(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// How compact the numbering is: slots over interesting paths (1 without holes; `None` without
    /// interesting paths).
    pub fn delta(&self) -> Option<f64> {
        let n = self.interesting();
        (n > 0).then(|| self.slots.len() as f64 / n as f64)
    }

    /// The PPP ID of the path made of `edges`, modulo 2^64.
    pub fn id_of(&self, edges: &[DagEdgeId]) -> u64 {
        edges.iter().fold(0u64, |sum, &e| sum.wrapping_add(self.val[e as usize]))
    }

    /// Whether the path with PPP ID `ppp` and Ball–Larus ID `bl` is interesting: its PPP ID is a slot
    /// that holds its Ball–Larus ID (the check of the runtime).
    pub fn is_interesting(&self, ppp: u64, bl: u64) -> bool {
        usize::try_from(ppp).ok().and_then(|i| self.slots.get(i)).is_some_and(|s| *s == Some(bl))
    }
}

/// The weights `W(e)` of [PPP07 Fig. 3.10] for the interesting paths `paths` (each the list of its
/// edges from `s` to `t`, all distinct) of a DAG of `num_edges` edges whose nodes are given in
/// reverse topological order by their out-edges in numbering order (`nodes`), and each path's PPP
/// ID. A path's prefix up to a node is told apart from the others by the edges it took.
pub fn weights<'a>(
    num_edges: usize,
    nodes: impl Iterator<Item = &'a [DagEdgeId]>,
    paths: &[Vec<DagEdgeId>],
    max_slots: u64,
) -> Result<(Vec<u64>, Vec<u64>), PppError> {
    // At every edge, the paths through it with the prefix before it (interned: equal prefixes,
    // equal keys).
    let mut through: Vec<Vec<(u32, u32)>> = vec![Vec::new(); num_edges];
    let mut prefixes: HashMap<(u32, DagEdgeId), u32> = HashMap::new();
    for (p, path) in paths.iter().enumerate() {
        let mut prefix = 0u32;
        for &e in path {
            through[e as usize].push((p as u32, prefix));
            let next = prefixes.len() as u32 + 1;
            prefix = *prefixes.entry((prefix, e)).or_insert(next);
        }
    }
    let mut pid = vec![0i128; paths.len()];
    let mut val = vec![0u64; num_edges];
    // The next free ID of every prefix.
    let mut cis: HashMap<u32, i128> = HashMap::new();
    let mut groups: HashMap<u32, (i128, i128)> = HashMap::new();
    for out in nodes {
        for &e in out {
            let paths = &through[e as usize];
            if paths.is_empty() {
                continue;
            }
            // Per prefix: the smallest and largest partial ID of its paths through `e`.
            groups.clear();
            for &(p, key) in paths {
                let g = groups.entry(key).or_insert((i128::MAX, i128::MIN));
                g.0 = g.0.min(pid[p as usize]);
                g.1 = g.1.max(pid[p as usize]);
            }
            let w = groups
                .iter()
                .map(|(key, &(min, _))| cis.get(key).copied().unwrap_or(0) - min)
                .max()
                .expect("an edge with paths has a group");
            for &(p, _) in paths {
                pid[p as usize] += w;
            }
            for (&key, &(_, max)) in &groups {
                cis.insert(key, max + w + 1);
            }
            if w.unsigned_abs() > u128::from(max_slots) {
                return Err(PppError::TooWide(max_slots));
            }
            val[e as usize] = w as i64 as u64;
        }
    }
    let width = pid.iter().map(|&p| p + 1).max().unwrap_or(0);
    if width > i128::from(max_slots) || pid.iter().any(|&p| p < 0) {
        return Err(PppError::TooWide(max_slots));
    }
    Ok((val, pid.into_iter().map(|p| p as u64).collect()))
}

/// The slots of paths labelled `labels` whose PPP IDs are `pid`: slot `i` holds the label of the
/// path whose ID is `i`, `None` for a hole.
pub fn slots(pid: &[u64], labels: &[u64]) -> Vec<Option<u64>> {
    let width = pid.iter().map(|&p| p + 1).max().unwrap_or(0);
    let mut slots = vec![None; width as usize];
    for (&p, &label) in pid.iter().zip(labels) {
        debug_assert!(slots[p as usize].is_none(), "interesting paths have unique PPP IDs");
        slots[p as usize] = Some(label);
    }
    slots
}

/// A function's interesting paths, their preferential numbering, and its increments on the chords of
/// the function's Ball–Larus spanning tree, so that both registers change on the same edges.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PppPlan {
    /// Ball–Larus IDs of the interesting paths, sorted.
    pub interesting: Vec<u64>,
    /// The numbering, unless the interesting IDs would span more slots than allowed.
    pub numbering: Option<PppNumbering>,
    /// `Inc(e)` of the numbering for every DAG edge, modulo 2^64 (empty without a numbering).
    pub inc: Vec<u64>,
}

impl PppPlan {
    /// The plan of the interesting paths `interesting` (Ball–Larus IDs under `plan`), numbered within
    /// `max_slots` slots.
    pub fn build(plan: &FunctionPlan, mut interesting: Vec<u64>, max_slots: u64) -> Result<PppPlan, BadPathId> {
        interesting.sort_unstable();
        interesting.dedup();
        let numbering = match PppNumbering::build(&plan.dag, &plan.numbering, &interesting, max_slots) {
            Ok(n) => Some(n),
            Err(PppError::TooWide(_)) => None,
            Err(PppError::BadPathId(e)) => return Err(e),
        };
        let inc = numbering
            .as_ref()
            .map_or_else(Vec::new, |n| Placement::with_tree(&plan.dag, &plan.placement.in_tree, &n.val).inc);
        Ok(PppPlan { interesting, numbering, inc })
    }

    /// Whether every path of the function is interesting: the numbering is then the Ball–Larus one.
    pub fn covers(&self, plan: &FunctionPlan) -> bool {
        self.interesting.len() as u64 == plan.num_paths()
    }
}
