//! Accuracy of an estimated profile against an exact one [PEP05 §6.3–6.4].
//!
//! * [`wall_weight_matching`] — Wall's weight matching [Wall91] over *branch flow*: a path's flow is its
//!   frequency times its number of branches; the actual hot paths are those above a fraction
//!   (0.125 %) of the total flow; the estimated hot set is the same number of paths, hottest by
//!   estimated flow; accuracy is the actual flow of the paths in both sets over the actual flow of
//!   the actual hot paths.
//! * [`relative_overlap`] — per branch, 1 minus the distance between the actual and estimated
//!   distributions over its out-edges (for two-way branches `1 − |taken_actual − taken_estimated|`),
//!   weighted by the branch's actual frequency.
//! * [`absolute_overlap`] — `Σ_e min(f_actual(e)/F_actual, f_estimated(e)/F_estimated)` over all edges.
//!
//! Each returns a fraction in `[0, 1]`; an empty actual profile gives 1.
//!
//! For k-iteration path forests ([`compare_sequences`]), the same threshold over *k-paths*: each
//! path end starts a sequence of up to `k` paths of its activation (its k-slab), so a sequence of 2
//! to `k` paths was a k-path as many times as its node's count exceeds its children's. Hot k-path
//! coverage is the share of the exact forest's hot k-paths that the sampled forest ranks hot too;
//! weight matching is [`wall_weight_matching`] over k-paths weighted by frequency.

use crate::profile::{Endpoint, FunctionProfile};
use std::collections::HashMap;
use std::hash::Hash;

/// Hot-path threshold of [PEP05 §6.3]: 0.125 % of the total flow.
pub const HOT_THRESHOLD: f64 = 0.00125;

/// A path's frequency and its length in branches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathWeight {
    pub freq: f64,
    pub branches: u32,
}

impl PathWeight {
    /// Branch flow: frequency times branches.
    pub fn flow(&self) -> f64 {
        self.freq * self.branches as f64
    }
}

/// Wall weight matching of `estimated` against `actual`, with hot threshold `threshold` (a fraction
/// of the total actual flow).
pub fn wall_weight_matching<K: Eq + Hash + Clone + Ord>(
    actual: &HashMap<K, PathWeight>,
    estimated: &HashMap<K, PathWeight>,
    threshold: f64,
) -> f64 {
    let total: f64 = actual.values().map(PathWeight::flow).sum();
    let mut hot: Vec<(&K, f64)> =
        actual.iter().map(|(k, w)| (k, w.flow())).filter(|&(_, f)| f > threshold * total).collect();
    let hot_flow: f64 = hot.iter().map(|&(_, f)| f).sum();
    if hot.is_empty() || hot_flow == 0.0 {
        return 1.0;
    }
    hot.sort_by(|a, b| a.0.cmp(b.0));
    let mut est: Vec<(&K, f64)> = estimated.iter().map(|(k, w)| (k, w.flow())).filter(|&(_, f)| f > 0.0).collect();
    est.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    est.truncate(hot.len());
    // A fold from +0: an empty `sum` of floats is -0.
    let matched: f64 =
        est.iter().filter_map(|(k, _)| hot.binary_search_by(|h| h.0.cmp(k)).ok()).fold(0.0, |sum, i| sum + hot[i].1);
    matched / hot_flow
}

/// An edge profile: for every branch point, the frequency of each of its out-edges.
pub type EdgeProfile<B, E> = HashMap<B, HashMap<E, f64>>;

/// Relative overlap of `estimated` against `actual`. Branch points with one out-edge are not branches
/// and do not count.
pub fn relative_overlap<B: Eq + Hash, E: Eq + Hash>(actual: &EdgeProfile<B, E>, estimated: &EdgeProfile<B, E>) -> f64 {
    let mut weighted = 0.0;
    let mut total = 0.0;
    for (b, edges) in actual {
        let freq: f64 = edges.values().sum();
        if edges.len() < 2 && estimated.get(b).is_none_or(|e| e.len() < 2) || freq == 0.0 {
            continue;
        }
        let est = estimated.get(b);
        let est_freq: f64 = est.map_or(0.0, |e| e.values().sum());
        // Total variation distance between the two distributions over b's out-edges.
        let mut distance = 0.0;
        for (e, &f) in edges {
            let p = f / freq;
            let q = if est_freq > 0.0 { est.and_then(|m| m.get(e)).copied().unwrap_or(0.0) / est_freq } else { 0.0 };
            distance += (p - q).abs();
        }
        if let Some(m) = est {
            if est_freq > 0.0 {
                distance += m.iter().filter(|(e, _)| !edges.contains_key(e)).map(|(_, &f)| f / est_freq).sum::<f64>();
            } else {
                // Nothing estimated for a branch that ran: as far from the truth as can be.
                distance = 2.0;
            }
        } else {
            distance = 2.0;
        }
        weighted += freq * (1.0 - distance / 2.0);
        total += freq;
    }
    if total == 0.0 {
        1.0
    } else {
        weighted / total
    }
}

/// Absolute overlap of `estimated` against `actual`, over every edge.
pub fn absolute_overlap<B: Eq + Hash, E: Eq + Hash>(actual: &EdgeProfile<B, E>, estimated: &EdgeProfile<B, E>) -> f64 {
    let fa: f64 = actual.values().flat_map(|m| m.values()).sum();
    let fe: f64 = estimated.values().flat_map(|m| m.values()).sum();
    if fa == 0.0 {
        return 1.0;
    }
    if fe == 0.0 {
        return 0.0;
    }
    actual
        .iter()
        .flat_map(|(b, m)| m.iter().map(move |(e, &f)| (b, e, f)))
        .map(|(b, e, f)| {
            let g = estimated.get(b).and_then(|m| m.get(e)).copied().unwrap_or(0.0);
            (f / fa).min(g / fe)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[(&'static str, f64, u32)]) -> HashMap<&'static str, PathWeight> {
        list.iter().map(|&(k, freq, branches)| (k, PathWeight { freq, branches })).collect()
    }

    #[test]
    fn weight_matching_by_hand() {
        // Flows: a 1000×3 = 3000, b 500×2 = 1000, c 1×1 = 1 (below 0.125 % of 4001), d 0.
        let actual = paths(&[("a", 1000.0, 3), ("b", 500.0, 2), ("c", 1.0, 1), ("d", 0.0, 4)]);
        // Perfect estimate (scaled): both hot paths found.
        let scaled = paths(&[("a", 10.0, 3), ("b", 5.0, 2), ("c", 1.0, 1)]);
        assert_eq!(wall_weight_matching(&actual, &scaled, HOT_THRESHOLD), 1.0);
        // The estimate ranks c above b: the top two are a and c, so only a's 3000 of 4000 match.
        let wrong = paths(&[("a", 10.0, 3), ("b", 1.0, 2), ("c", 5.0, 1)]);
        assert_eq!(wall_weight_matching(&actual, &wrong, HOT_THRESHOLD), 0.75);
        // Nothing sampled: 0, printed as such (not -0).
        let none = wall_weight_matching(&actual, &paths(&[]), HOT_THRESHOLD);
        assert!(none == 0.0 && none.is_sign_positive(), "{none}");
        // A higher threshold (30 %) leaves only a hot.
        assert_eq!(wall_weight_matching(&actual, &wrong, 0.3), 1.0);
    }

    fn edges(list: &[(u32, u32, f64)]) -> EdgeProfile<u32, u32> {
        let mut m: EdgeProfile<u32, u32> = HashMap::new();
        for &(b, e, f) in list {
            *m.entry(b).or_default().entry(e).or_default() += f;
        }
        m
    }

    #[test]
    fn relative_overlap_by_hand() {
        // Branch 1: taken 75 %, estimated 50 % → 0.75, weight 100. Branch 2: 10/90, estimated 10/90 →
        // 1.0, weight 300. Block 3 has one out-edge: not a branch.
        let actual = edges(&[(1, 10, 75.0), (1, 11, 25.0), (2, 20, 30.0), (2, 21, 270.0), (3, 30, 1000.0)]);
        let est = edges(&[(1, 10, 2.0), (1, 11, 2.0), (2, 20, 1.0), (2, 21, 9.0), (3, 30, 7.0)]);
        let want = (100.0 * 0.75 + 300.0 * 1.0) / 400.0;
        assert!((relative_overlap(&actual, &est) - want).abs() < 1e-12);
        assert_eq!(relative_overlap(&actual, &actual), 1.0);
        // A branch that ran but was never sampled counts as fully wrong.
        let missing = edges(&[(2, 20, 1.0), (2, 21, 9.0)]);
        assert!((relative_overlap(&actual, &missing) - 300.0 / 400.0).abs() < 1e-12);
    }

    #[test]
    fn absolute_overlap_by_hand() {
        // Actual shares: a 0.5, b 0.3, c 0.2; estimated: a 0.25, b 0.25, c 0.5 → 0.25 + 0.25 + 0.2.
        let actual = edges(&[(1, 1, 50.0), (1, 2, 30.0), (2, 3, 20.0)]);
        let est = edges(&[(1, 1, 1.0), (1, 2, 1.0), (2, 3, 2.0)]);
        assert!((absolute_overlap(&actual, &est) - 0.7).abs() < 1e-12);
        assert!((absolute_overlap(&actual, &actual) - 1.0).abs() < 1e-12);
        assert_eq!(absolute_overlap(&actual, &edges(&[])), 0.0);
    }
}

/// A path of a profile, keyed independently of its numbering: function, endpoints and blocks.
pub type PathKey = (u32, Endpoint, Endpoint, Vec<u32>);

/// The paths of `f` with their frequencies and branch counts.
pub fn path_weights(f: &FunctionProfile) -> HashMap<PathKey, PathWeight> {
    f.paths()
        .iter()
        .map(|p| {
            ((f.index, p.start, p.end, p.blocks.clone()), PathWeight { freq: p.count.0 as f64, branches: p.branches })
        })
        .collect()
}

/// The edge profile of `f`, branch points keyed by `(function, block)`.
pub fn edge_profile(f: &FunctionProfile) -> EdgeProfile<(u32, u32), Endpoint> {
    let mut m: EdgeProfile<(u32, u32), Endpoint> = HashMap::new();
    for e in f.edges() {
        *m.entry((f.index, e.from)).or_default().entry(e.to).or_default() += e.count.0 as f64;
    }
    m
}

/// The three accuracy figures of an estimated profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Accuracy {
    /// Wall weight matching of hot paths by branch flow.
    pub paths: f64,
    pub relative_overlap: f64,
    pub absolute_overlap: f64,
    /// Branch flow of the exact profile (to rank functions).
    pub flow: f64,
}

/// Accuracy of the functions `estimated` against `exact` (matched by function index; a function the
/// estimate lacks counts as never sampled).
pub fn compare_functions<'a>(
    exact: impl IntoIterator<Item = &'a FunctionProfile>,
    estimated: &[FunctionProfile],
    threshold: f64,
) -> Accuracy {
    let by_index: HashMap<u32, &FunctionProfile> = estimated.iter().map(|f| (f.index, f)).collect();
    let (mut pa, mut pe, mut ea, mut ee) = (HashMap::new(), HashMap::new(), HashMap::new(), HashMap::new());
    for f in exact {
        pa.extend(path_weights(f));
        ea.extend(edge_profile(f));
        if let Some(g) = by_index.get(&f.index) {
            pe.extend(path_weights(g));
            ee.extend(edge_profile(g));
        }
    }
    Accuracy {
        paths: wall_weight_matching(&pa, &pe, threshold),
        relative_overlap: relative_overlap(&ea, &ee),
        absolute_overlap: absolute_overlap(&ea, &ee),
        flow: pa.values().map(PathWeight::flow).sum(),
    }
}

/// A k-path of a profile: its function and its paths, by their IDs in the exact profile.
pub type SequenceKey = (u32, Vec<u64>);

/// How well a sampled profile's k-iteration path forests match the exact ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SequenceAccuracy {
    /// k-path executions of each profile.
    pub exact_executions: u64,
    pub sampled_executions: u64,
    /// Hot k-paths of the exact forests, and how many of them the sampled forests rank hot.
    pub hot: usize,
    pub covered: usize,
    /// `covered / hot` (1 without hot k-paths).
    pub coverage: f64,
    /// Wall weight matching over k-paths by frequency.
    pub weight_matching: f64,
}

/// The k-paths of `functions`' forests with how often each ran: every sequence of two paths or
/// more whose node's count exceeds its children's, by that much. `ids` renames a function's path
/// IDs (to another profile's numbering; `None` leaves the function out); a sequence with a path it
/// lacks is left out.
pub fn k_paths(
    functions: &[FunctionProfile],
    ids: impl Fn(&FunctionProfile) -> Option<HashMap<u64, u64>>,
) -> HashMap<SequenceKey, u64> {
    let mut out = HashMap::new();
    for f in functions {
        let (Some(kipf), Some(ids)) = (f.kipf(), ids(f)) else { continue };
        kipf.for_each_node(|sequence, node| {
            let below: u64 = node.children.iter().map(|c| c.count.0).sum();
            let slabs = node.count.0.saturating_sub(below);
            if sequence.len() < 2 || slabs == 0 {
                return;
            }
            if let Some(seq) = sequence.iter().map(|p| ids.get(&p.0).copied()).collect::<Option<Vec<u64>>>() {
                *out.entry((f.index, seq)).or_insert(0) += slabs;
            }
        });
    }
    out
}

/// The path IDs of `f` by their IDs in `to` (the same function of another profile), matched by
/// endpoints and blocks.
fn path_ids(f: &FunctionProfile, to: &FunctionProfile) -> HashMap<u64, u64> {
    let theirs: HashMap<(Endpoint, Endpoint, &[u32]), u64> =
        to.paths().iter().map(|p| ((p.start, p.end, p.blocks.as_slice()), p.id.0)).collect();
    f.paths()
        .iter()
        .filter_map(|p| theirs.get(&(p.start, p.end, p.blocks.as_slice())).map(|&id| (p.id.0, id)))
        .collect()
}

/// The accuracy of `sampled`'s k-iteration path forests against `exact`'s, hot k-paths being those
/// above `threshold` of their profile's k-path executions.
pub fn compare_sequences(exact: &[FunctionProfile], sampled: &[FunctionProfile], threshold: f64) -> SequenceAccuracy {
    let exact_by_index: HashMap<u32, &FunctionProfile> = exact.iter().map(|f| (f.index, f)).collect();
    let actual = k_paths(exact, |f| Some(f.paths().iter().map(|p| (p.id.0, p.id.0)).collect()));
    let estimated = k_paths(sampled, |f| exact_by_index.get(&f.index).map(|to| path_ids(f, to)));
    let total = |m: &HashMap<SequenceKey, u64>| m.values().sum::<u64>();
    let (exact_executions, sampled_executions) = (total(&actual), total(&estimated));
    let hot = |m: &HashMap<SequenceKey, u64>, total: u64| -> Vec<SequenceKey> {
        m.iter().filter(|&(_, &c)| c as f64 > threshold * total as f64).map(|(k, _)| k.clone()).collect()
    };
    let hot_exact = hot(&actual, exact_executions);
    let hot_sampled: std::collections::HashSet<SequenceKey> = hot(&estimated, sampled_executions).into_iter().collect();
    let covered = hot_exact.iter().filter(|k| hot_sampled.contains(*k)).count();
    let weights = |m: &HashMap<SequenceKey, u64>| -> HashMap<SequenceKey, PathWeight> {
        m.iter().map(|(k, &c)| (k.clone(), PathWeight { freq: c as f64, branches: 1 })).collect()
    };
    SequenceAccuracy {
        exact_executions,
        sampled_executions,
        hot: hot_exact.len(),
        covered,
        coverage: if hot_exact.is_empty() { 1.0 } else { covered as f64 / hot_exact.len() as f64 },
        weight_matching: wall_weight_matching(&weights(&actual), &weights(&estimated), threshold),
    }
}

#[cfg(test)]
mod sequence_tests {
    use super::*;
    use crate::profile::{CounterKind, FunctionState, KipfNodeProfile, KipfProfile, PathCount, PathProfile, U64};

    fn node(path: u64, count: u64, children: Vec<KipfNodeProfile>) -> KipfNodeProfile {
        KipfNodeProfile { path: U64(path), count: U64(count), max: None, children }
    }

    /// A function with paths `a`, `b` and `c` (told apart by their blocks 1, 2 and 3) numbered
    /// `ids`, and the forest `roots`.
    fn function(ids: [u64; 3], roots: Vec<KipfNodeProfile>) -> FunctionProfile {
        let paths = ids
            .iter()
            .zip(1u32..)
            .map(|(&id, block)| PathCount {
                id: U64(id),
                count: U64(10),
                start: Endpoint::Entry,
                end: Endpoint::Exit,
                blocks: vec![0, block],
                branches: 1,
                interesting: None,
            })
            .collect();
        FunctionProfile {
            index: 7,
            name: None,
            blocks: Vec::new(),
            state: FunctionState::Instrumented(PathProfile {
                num_paths: U64(3),
                counters: CounterKind::Stream,
                cut_blocks: Vec::new(),
                paths,
                edges: Vec::new(),
                increments: 0,
                increments_executed: U64(0),
                kipf: Some(KipfProfile { k: 3, short: None, roots }),
                ppp: None,
                events: None,
            }),
        }
    }

    #[test]
    fn sequence_accuracy_by_hand() {
        let (a, b, c) = (0, 1, 2);
        // Exact: a·b 6 times (a·b·c 4 of them), a·a 2, b·c 5. As k-paths (slabs): a·b 2, a·b·c 4,
        // a·a 2, b·c 5: 13 in all.
        let exact = function(
            [a, b, c],
            vec![
                node(a, 10, vec![node(a, 2, vec![]), node(b, 6, vec![node(c, 4, vec![])])]),
                node(b, 6, vec![node(c, 5, vec![])]),
                node(c, 5, vec![]),
            ],
        );
        // Sampled, numbered otherwise (a = 2, b = 0, c = 1): a·b 3 (a·b·c 1), b·c 1: k-paths a·b 2,
        // a·b·c 1, b·c 1. A sequence through a path the exact profile lacks (ID 9) is left out.
        let (sa, sb, sc) = (2, 0, 1);
        let sampled = function(
            [sa, sb, sc],
            vec![
                node(sa, 10, vec![node(sb, 3, vec![node(sc, 1, vec![])]), node(9, 1, vec![])]),
                node(sb, 6, vec![node(sc, 1, vec![])]),
                node(sc, 5, vec![]),
            ],
        );
        let got = compare_sequences(&[exact], &[sampled], 0.2);
        assert_eq!((got.exact_executions, got.sampled_executions), (13, 4));
        // Hot above 20 %: a·b·c (4) and b·c (5) of the exact ones; all three sampled ones (> 0.8).
        assert_eq!((got.hot, got.covered), (2, 2));
        assert_eq!(got.coverage, 1.0);
        // The two hottest sampled: a·b (2), then a·b·c before b·c (a tie, in key order); of them only
        // a·b·c is hot: 4 of the hot 9.
        assert!((got.weight_matching - 4.0 / 9.0).abs() < 1e-12, "{}", got.weight_matching);
    }
}
