//! Preferential numbering of a function's supergraph paths [PPP07 §3.4.5 with §3.3]: the
//! supergraph paths whose segments are all interesting get compact IDs, so that slots indexed by
//! them count those paths, and every other supergraph path is residual.
//!
//! The supergraph of [`super`] is the function's DAG with each call that adds a digit made a node
//! of its own, joined to the call before it (or to its block's start) by `radix` parallel edges,
//! one per digit, in digit order; a block's out-edges leave from its last call. [`weights`] numbers
//! the interesting paths of that DAG as [PPP07 Fig. 3.10] numbers any DAG's. The weights of the
//! function's own edges go on the chords of its Ball–Larus spanning tree, as `ppp`'s do; the weight
//! of a call's digit `d` is read from a table of the call's ([`DigitWeights`]), added to the
//! preferential register when the call returns. A supergraph path's preferential ID is the sum of
//! its edges' weights and its digits' weights.
//!
//! A Ball–Larus path is interesting when the test runs took it and, at each of its calls, at least
//! one interesting segment rooted there: its interesting supergraph paths are those whose every
//! digit names a head of an interesting segment ([`SupergraphPpp::interesting_ids`]; for segments
//! of more than one call, the heads of deeper depths of [`super::taken`]).
//!
//! In a function some of whose calls add their digits to high keys, only the supergraph paths
//! whose high keys are all 0 — digit 0 at every such call — can be interesting: a slot holds a
//! one-word ID, and a path end with a high key that is not 0 is residual whatever its register.

use super::digit_table::DigitWeights;
use super::taken::{HeadNames, Taken};
use super::{digits, HeadLevel, HeadSpace, Supergraph};
use crate::dag::DagEdgeId;
use crate::placement::Placement;
use crate::plan::FunctionPlan;
use crate::ppp::{slots, weights, PppError, PppNumbering, PppPlan};
use crate::regen::{self, BadPathId};
use std::collections::BTreeSet;

/// A Ball–Larus path of a function with what its calls took in interesting segments rooted there:
/// a set per call on the path, in order (a call past the last set, or with an empty set, took
/// none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterestingPath {
    pub path: u64,
    pub heads: Vec<BTreeSet<Taken>>,
}

/// The heads of depth 0, which are first paths: a space alone names them.
impl HeadNames for HeadSpace {
    fn space(&self, depth: usize) -> Option<&HeadSpace> {
        (depth == 0).then_some(self)
    }

    fn level(&self, _: u32, _: usize) -> Option<&HeadLevel> {
        None
    }

    fn calls_on(&self, _: u32, _: u64) -> Option<Vec<usize>> {
        None
    }
}

/// The preferential numbering of a function's supergraph paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupergraphPpp {
    /// The interesting supergraph IDs, the numbering of the function's own edges (its slots hold
    /// supergraph IDs) and its increments on the chords of the Ball–Larus spanning tree.
    pub plan: PppPlan,
    /// For every call of the supergraph, in operator order, the weights of the digits interesting
    /// paths take there (none for a call that adds no digit, or that no interesting path takes).
    pub digits: Vec<DigitWeights>,
}

/// A supergraph path as the function's edges it takes and its calls with their digits, in order.
type SpelledPath = (Vec<DagEdgeId>, Vec<(usize, u64)>);

/// Most weights of digits that a function's tables may hold, all its calls' together.
pub const MAX_DIGIT_WEIGHTS: u64 = 1 << 18;

/// Whether call `c` of `sg` adds a digit to the key. A call that adds its digit to a high key has
/// no parallel edges: an interesting supergraph ID has every high key 0, so its digit is 0.
fn adds_digit(sg: &Supergraph, c: usize) -> bool {
    sg.calls[c].adds_digit() && sg.calls[c].word == 0
}

/// A function's calls (their indices in operator order) by block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallsByBlock(Vec<Vec<usize>>);

impl CallsByBlock {
    /// The index of calls whose blocks are `call_blocks`, in operator order.
    pub fn new(call_blocks: &[u32]) -> CallsByBlock {
        let mut by_block = vec![Vec::new(); call_blocks.iter().map(|&b| b as usize + 1).max().unwrap_or(0)];
        for (c, &b) in call_blocks.iter().enumerate() {
            by_block[b as usize].push(c);
        }
        CallsByBlock(by_block)
    }

    /// The calls of block `b`, in order.
    pub fn of(&self, b: u32) -> &[usize] {
        self.0.get(b as usize).map_or(&[], Vec::as_slice)
    }

    /// The calls on the blocks `blocks` (a path's), in order.
    pub fn on(&self, blocks: &[u32]) -> Vec<usize> {
        blocks.iter().flat_map(|&b| self.of(b).iter().copied()).collect()
    }
}

impl SupergraphPpp {
    /// The supergraph IDs of the interesting paths `paths` of a function planned as `plan` with
    /// supergraph `sg` (its calls by block `calls`), its heads named by `names` (each call's of
    /// the depth `sg.depths` gives, or of depth 0): each path with every combination of the digits
    /// its calls' interesting heads give, paths whose combinations would pass `max` IDs in all
    /// left out, in order.
    pub fn interesting_ids(
        sg: &Supergraph,
        plan: &FunctionPlan,
        by_block: &CallsByBlock,
        names: &impl HeadNames,
        paths: &[InterestingPath],
        max: usize,
    ) -> Vec<u64> {
        let mut ids = Vec::new();
        for p in paths {
            let Ok(path) = regen::regenerate(&plan.dag, &plan.numbering, p.path) else { continue };
            let calls = by_block.on(&path.blocks);
            if p.heads.len() > calls.len() {
                continue;
            }
            // Each call's digits: 0 for a call that adds none.
            let none = BTreeSet::new();
            let choices: Vec<Vec<u64>> = (calls.iter().enumerate())
                .map(|(j, &c)| {
                    if !sg.calls[c].adds_digit() {
                        return vec![0];
                    }
                    let depth = if sg.depths.is_empty() { Some(0) } else { sg.depths[c] };
                    let Some(depth) = depth.map(usize::from) else { return Vec::new() };
                    let taken = p.heads.get(j).unwrap_or(&none);
                    let named = taken.iter().filter_map(|t| names.digits(sg.calls[c], depth, Some(t), max));
                    let mut ds: Vec<u64> = named.flatten().collect();
                    if !adds_digit(sg, c) {
                        // In a high key: only digit 0 leaves the ID in one word.
                        ds.retain(|&d| d == 0);
                    }
                    ds.sort_unstable();
                    ds.dedup();
                    ds
                })
                .collect();
            let combinations = choices.iter().try_fold(1usize, |n, c| n.checked_mul(c.len()));
            let Some(n) = combinations.filter(|&n| n > 0 && ids.len() + n <= max) else { continue };
            let radices: Vec<_> = calls.iter().map(|&c| sg.calls[c]).collect();
            for mut i in 0..n {
                let mut ds = Vec::with_capacity(choices.len());
                for c in choices.iter().rev() {
                    ds.push(c[i % c.len()]);
                    i /= c.len();
                }
                ds.reverse();
                let digits: Vec<_> = ds.into_iter().zip(radices.iter().copied()).collect();
                ids.extend(sg.id(p.path, &digits));
            }
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The preferential numbering of supergraph IDs `ids` of a function planned as `plan` with
    /// supergraph `sg` (its calls by block `by_block`), within `max_slots` slots; `None` when they
    /// would span more. The IDs through the calls whose tables of weights would pass
    /// [`MAX_DIGIT_WEIGHTS`] in all, those of the largest tables first, are left out.
    pub fn build(
        plan: &FunctionPlan,
        sg: &Supergraph,
        by_block: &CallsByBlock,
        mut ids: Vec<u64>,
        max_slots: u64,
    ) -> Result<Option<SupergraphPpp>, BadPathId> {
        ids.sort_unstable();
        ids.dedup();
        let dag = &plan.dag;
        let num_edges = dag.edges.len();
        // The paths as their edges and their calls' digits.
        let mut spelled: Vec<SpelledPath> = Vec::with_capacity(ids.len());
        for &id in &ids {
            let (p, key) = sg.split(id);
            let path = regen::regenerate(dag, &plan.numbering, p)?;
            let calls = by_block.on(&path.blocks);
            let radices: Vec<u64> = calls.iter().map(|&c| sg.calls[c].radix_in(0)).collect();
            let ds = digits(key, &radices).ok_or(BadPathId(id))?;
            spelled.push((path.edges, calls.into_iter().zip(ds).collect()));
        }
        // Each call's table of weights reaches its largest digit taken, or hashes the digits taken
        // where they are sparse; all of them together hold at most MAX_DIGIT_WEIGHTS: while they
        // would hold more, the paths through the call of the largest table are left out (they miss
        // their slots, as residual paths do).
        let given = !ids.is_empty();
        let taken = loop {
            let mut taken: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); sg.calls.len()];
            for (_, calls) in &spelled {
                for &(c, d) in calls.iter().filter(|&&(c, _)| adds_digit(sg, c)) {
                    taken[c].insert(d);
                }
            }
            let table = |c: usize| taken[c].last().map_or(0, |&d| DigitWeights::expected_len(taken[c].len(), d));
            let tables = (0..taken.len()).map(table).fold(0u64, u64::saturating_add);
            if tables <= MAX_DIGIT_WEIGHTS {
                break taken;
            }
            let largest = (0..taken.len()).max_by_key(|&c| table(c)).expect("a table holds the weights");
            let keep: Vec<bool> = spelled.iter().map(|(_, calls)| calls.iter().all(|&(c, _)| c != largest)).collect();
            let mut kept = keep.iter();
            ids.retain(|_| *kept.next().expect("one per ID"));
            let mut kept = keep.iter();
            spelled.retain(|_| *kept.next().expect("one per path"));
        };
        if given && ids.is_empty() {
            return Ok(None);
        }
        // Each digit call's parallel edges, one per digit taken, after the function's own edges.
        let taken: Vec<Vec<u64>> = taken.into_iter().map(|t| t.into_iter().collect()).collect();
        let mut first_edge = vec![usize::MAX; sg.calls.len()];
        let mut next = num_edges;
        for c in (0..sg.calls.len()).filter(|&c| adds_digit(sg, c)) {
            first_edge[c] = next;
            next += taken[c].len();
        }
        let chain_edges = |c: usize| (first_edge[c]..first_edge[c] + taken[c].len()).map(|e| e as u32);
        let edge_of = |c: usize, d: u64| taken[c].binary_search(&d).map(|r| (first_edge[c] + r) as u32);
        // The paths as edge lists of the supergraph.
        let mut paths: Vec<Vec<DagEdgeId>> = Vec::with_capacity(ids.len());
        for ((path_edges, ds), &id) in spelled.iter().zip(&ids) {
            let mut ds = ds.iter();
            let mut edges = Vec::with_capacity(path_edges.len() + ds.len());
            for &e in path_edges {
                edges.push(e);
                // The calls of the block the edge enters, in order.
                for &c in by_block.of(dag.edges[e as usize].to) {
                    let &(_, d) = ds.next().ok_or(BadPathId(id))?;
                    if adds_digit(sg, c) {
                        edges.push(edge_of(c, d).map_err(|_| BadPathId(id))?);
                    }
                }
            }
            paths.push(edges);
        }
        // Nodes in reverse topological order, each with its out-edges: a block's calls after it,
        // the last of them with the block's own out-edges.
        let order = dag.topological_order();
        let mut nodes: Vec<Vec<DagEdgeId>> = Vec::new();
        for &v in order.iter().rev() {
            let calls: Vec<usize> = by_block.of(v).iter().copied().filter(|&c| adds_digit(sg, c)).collect();
            nodes.push(plan.numbering.order[v as usize].to_vec());
            for w in calls.windows(2).rev() {
                nodes.push(chain_edges(w[1]).collect());
            }
            if let Some(&c) = calls.first() {
                nodes.push(chain_edges(c).collect());
            }
        }
        let (val, pid) = match weights(next, nodes.iter().map(Vec::as_slice), &paths, max_slots) {
            Ok(w) => w,
            Err(PppError::TooWide(_)) => return Ok(None),
            Err(PppError::BadPathId(e)) => return Err(e),
        };
        let own = val[..num_edges].to_vec();
        let inc = Placement::with_tree(dag, &plan.placement.in_tree, &own).inc;
        // A digit no interesting path takes reads 0 or another digit's weight: its paths miss their
        // slots.
        let digits = (0..sg.calls.len())
            .map(|c| {
                let of: Vec<(u64, u64)> =
                    taken[c].iter().zip(chain_edges(c)).map(|(&d, e)| (d, val[e as usize])).collect();
                DigitWeights::new(&of)
            })
            .collect();
        let numbering = PppNumbering { val: own, slots: slots(&pid, &ids) };
        Ok(Some(SupergraphPpp { plan: PppPlan { interesting: ids, numbering: Some(numbering), inc }, digits }))
    }

    /// The preferential ID of the supergraph path made of the function's edges `edges` and the
    /// calls `calls` (indices in operator order) with digits `ds`, modulo 2^64.
    pub fn id_of(&self, edges: &[DagEdgeId], calls: &[usize], ds: &[u64]) -> u64 {
        let numbering = self.plan.numbering.as_ref().expect("built with a numbering");
        let own = numbering.id_of(edges);
        let digits = calls.iter().zip(ds).map(|(&c, &d)| self.digits[c].weight(d));
        digits.fold(own, u64::wrapping_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfg::{Cfg, CfgEdge, Succ};
    use crate::plan::PlanOptions;
    use crate::supergraph::{CallDigit, Heads};

    /// A function of a loop: 0 → 1 (header) → {2, 3} → 4 → {1, exit}; calls: two in block 2 (of
    /// radices 3 and 2), one in 3 (radix 4), one in 4 (radix 1, adds none), one in 0 (radix 2).
    fn function() -> (FunctionPlan, Supergraph, CallsByBlock) {
        let edges = [
            (0, Succ::Block(1)),
            (1, Succ::Block(2)),
            (1, Succ::Block(3)),
            (2, Succ::Block(4)),
            (3, Succ::Block(4)),
            (4, Succ::Block(1)),
            (4, Succ::Exit),
        ];
        let cfg = Cfg::from_edges(5, 0, edges.iter().map(|&(from, to)| CfgEdge { from, to }).collect());
        let plan = FunctionPlan::build(&cfg, &PlanOptions::default()).expect("few paths");
        let call = |radix| CallDigit { radix, callee: None, base: 0, dropped: false, word: 0 };
        let calls = vec![call(2), call(3), call(2), call(4), call(1)];
        let call_blocks = CallsByBlock::new(&[0, 2, 2, 3, 4]);
        let paths = plan.num_paths();
        let product: u64 = 2 * 3 * 2 * 4;
        let sg = Supergraph {
            paths,
            entry_base: 0,
            entry_paths: 1,
            ids: paths * product,
            head_offset: 0,
            calls,
            unwound: None,
            levels: Vec::new(),
            depths: Vec::new(),
        };
        (plan, sg, call_blocks)
    }

    /// A supergraph ID with its path's edges, calls and digits.
    type Spelled = (u64, Vec<u32>, Vec<usize>, Vec<u64>);

    /// Every supergraph ID of the function, spelled out.
    fn every_id(plan: &FunctionPlan, sg: &Supergraph, by_block: &CallsByBlock) -> Vec<Spelled> {
        let mut out = Vec::new();
        for p in 0..plan.num_paths() {
            let path = regen::regenerate(&plan.dag, &plan.numbering, p).expect("a path");
            let calls = by_block.on(&path.blocks);
            let radices: Vec<u64> = calls.iter().map(|&c| sg.calls[c].radix).collect();
            for key in 0..radices.iter().product::<u64>() {
                let ds = digits(key, &radices).expect("below the product");
                let with: Vec<_> = ds.iter().copied().zip(calls.iter().map(|&c| sg.calls[c])).collect();
                let id = sg.id(p, &with).expect("in range");
                out.push((id, path.edges.clone(), calls.clone(), ds));
            }
        }
        out
    }

    #[test]
    fn interesting_supergraph_paths_get_compact_ids_and_the_others_miss_their_slots() {
        let (plan, sg, call_blocks) = function();
        let all = every_id(&plan, &sg, &call_blocks);
        // Paths (loops cut at header 1): 0 (2 digits), 1 → 2 → 4 to the header or the exit (6 each),
        // 1 → 3 → 4 likewise (4 each).
        assert_eq!(all.len(), 2 + 2 * 6 + 2 * 4);
        // Every subset of a sample of sizes, by a fixed pseudo-random choice.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..200 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let keep = 1 + (state >> 33) % all.len() as u64;
            let chosen: Vec<u64> = (all.iter())
                .enumerate()
                .filter(|&(i, _)| (state.rotate_left(i as u32) ^ (i as u64 * 0x2545_f491)) % all.len() as u64 <= keep)
                .map(|(_, a)| a.0)
                .collect();
            let sp = SupergraphPpp::build(&plan, &sg, &call_blocks, chosen.clone(), 1 << 20)
                .expect("valid IDs")
                .expect("fits");
            let numbering = sp.plan.numbering.as_ref().expect("numbered");
            assert_eq!(numbering.interesting(), chosen.len(), "round {round}");
            for (id, edges, calls, ds) in &all {
                let q = sp.id_of(edges, calls, ds);
                let hit = usize::try_from(q).ok().and_then(|i| numbering.slots.get(i)).is_some_and(|s| *s == Some(*id));
                assert_eq!(hit, chosen.contains(id), "round {round}: ID {id} has preferential ID {q}");
                // The increments on chords add up to the weights along every path.
                let by_inc = edges.iter().fold(0u64, |s, &e| s.wrapping_add(sp.plan.inc[e as usize]));
                assert_eq!(by_inc, numbering.id_of(edges));
            }
        }
        // With every supergraph path interesting, no slot is a hole.
        let ids: Vec<u64> = all.iter().map(|a| a.0).collect();
        let sp = SupergraphPpp::build(&plan, &sg, &call_blocks, ids, 1 << 20).unwrap().unwrap();
        assert_eq!(sp.plan.numbering.as_ref().unwrap().delta(), Some(1.0));
        assert_eq!(sp.digits.iter().map(DigitWeights::len).collect::<Vec<_>>(), vec![3, 4, 3, 5, 0]);
        // Too few slots.
        let ids: Vec<u64> = all.iter().map(|a| a.0).collect();
        assert_eq!(SupergraphPpp::build(&plan, &sg, &call_blocks, ids, 10), Ok(None));
    }

    /// A call whose interesting digits would need tables of weights past [`MAX_DIGIT_WEIGHTS`]:
    /// the paths through it are left out, the others numbered; a call whose few interesting digits
    /// are sparse hashes them, one whose digits are dense reaches its largest.
    #[test]
    fn paths_through_a_call_of_too_large_a_table_are_left_out() {
        let (plan, mut sg, call_blocks) = function();
        sg.calls[0].radix = 1 << 20;
        sg.ids = sg.paths * (1 << 20) * 3 * 2 * 4;
        let path = |blocks: &[u32]| {
            (0..sg.paths).find(|&p| regen::regenerate(&plan.dag, &plan.numbering, p).unwrap().blocks == blocks).unwrap()
        };
        let entry = |d: u64| sg.id(path(&[0]), &[(d, sg.calls[0])]).unwrap();
        let (c3, c4) = (sg.calls[3], sg.calls[4]);
        let around = sg.id(path(&[1, 3, 4]), &[(2, c3), (0, c4)]).unwrap();
        // 2^17 digits at call 0 hash into 2^19 weights.
        let many: Vec<u64> = (0..1 << 17).map(|d| entry(d * 7)).chain([around]).collect();
        let sp = SupergraphPpp::build(&plan, &sg, &call_blocks, many, 1 << 20).unwrap().unwrap();
        assert_eq!(sp.plan.interesting, vec![around]);
        assert_eq!(sp.digits.iter().map(DigitWeights::len).collect::<Vec<_>>(), vec![0, 0, 0, 4, 0]);
        // One digit far out: hashed, and numbered.
        let sp =
            SupergraphPpp::build(&plan, &sg, &call_blocks, vec![entry(300_000), around], 1 << 20).unwrap().unwrap();
        assert_eq!(sp.plan.interesting.len(), 2);
        assert!(matches!(sp.digits[0], DigitWeights::Hashed(_)), "{:?}", sp.digits[0]);
        assert_eq!(sp.digits.iter().map(DigitWeights::len).collect::<Vec<_>>(), vec![4, 0, 0, 4, 0]);
        // Dense digits: direct.
        let dense: Vec<u64> = (0..40).map(entry).chain([around]).collect();
        let sp = SupergraphPpp::build(&plan, &sg, &call_blocks, dense, 1 << 20).unwrap().unwrap();
        assert_eq!(sp.plan.interesting.len(), 41);
        assert!(matches!(sp.digits[0], DigitWeights::Direct(_)));
        assert_eq!(sp.digits.iter().map(DigitWeights::len).collect::<Vec<_>>(), vec![41, 0, 0, 4, 0]);
    }

    #[test]
    fn interesting_ids_combine_the_heads_of_every_call() {
        let (plan, mut sg, call_blocks) = function();
        let space = HeadSpace::new([Heads { function: 7, offset: 0, entry_base: 0, entry_paths: 2, keys: 1 }]);
        // Calls read in the whole space: digit 0 or 1 for no head, 2 and 3 for function 7's paths.
        for c in &mut sg.calls {
            if c.radix > 1 {
                c.radix = 4;
            }
        }
        sg.ids = sg.paths * 4 * 4 * 4 * 4;
        let all = every_id(&plan, &sg, &call_blocks);
        let path = |blocks: &[u32]| {
            (all.iter())
                .map(|a| a.0 % sg.paths)
                .find(|&p| regen::regenerate(&plan.dag, &plan.numbering, p).unwrap().blocks == blocks)
                .unwrap()
        };
        let other = |blocks: &[u32]| {
            (0..sg.paths)
                .filter(|&p| regen::regenerate(&plan.dag, &plan.numbering, p).unwrap().blocks == blocks)
                .nth(1)
                .unwrap()
        };
        let h = |p| Taken::Entered { function: 7, path: p, calls: Vec::new() };
        let set = |heads: &[Taken]| heads.iter().cloned().collect::<BTreeSet<_>>();
        let paths = [
            // 1 → 2 → 4: three calls (the last adds no digit).
            InterestingPath { path: path(&[1, 2, 4]), heads: vec![set(&[h(1), Taken::None]), set(&[h(0)]), set(&[])] },
            // 1 → 3 → 4: a call of no interesting head.
            InterestingPath { path: path(&[1, 3, 4]), heads: vec![set(&[]), set(&[Taken::None])] },
            // A path given with more calls than it has.
            InterestingPath { path: path(&[0]), heads: vec![set(&[h(0)]), set(&[h(0)])] },
            // The other path to 1 → 2 → 4 with its last calls not given: they took no head.
            InterestingPath { path: other(&[1, 2, 4]), heads: vec![set(&[h(0)])] },
        ];
        let ids = SupergraphPpp::interesting_ids(&sg, &plan, &call_blocks, &space, &paths, 100);
        let digits_of = |id: u64| all.iter().find(|a| a.0 == id).map(|a| a.3.clone()).unwrap();
        let mut found: Vec<Vec<u64>> = ids.iter().map(|&id| digits_of(id)).collect();
        found.sort();
        assert_eq!(found, vec![vec![0, 2, 0], vec![1, 2, 0], vec![3, 2, 0]]);
        assert!(SupergraphPpp::interesting_ids(&sg, &plan, &call_blocks, &space, &paths, 2).is_empty());
    }
}
