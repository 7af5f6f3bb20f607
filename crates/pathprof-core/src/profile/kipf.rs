//! k-iteration path forests in a profile [KBL13 §2.2]: every sequence of up to `k` consecutive
//! paths of one activation that ran, as a prefix forest, and its shape [KBL13 Figs. 12–14].

use super::U64;
use serde::{Deserialize, Serialize};

/// A k-iteration path forest: every sequence of up to `k` consecutive paths of one activation that
/// ran, as a prefix forest of path IDs with the number of times each sequence ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KipfProfile {
    pub k: usize,
    /// How far below the truth the counts below the roots may be, when a node bound made them
    /// inexact (the profile's `kbl.dropped`); [`KipfProfile::bound`] gives each node its `max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short: Option<U64>,
    pub roots: Vec<KipfNodeProfile>,
}

/// A node of a k-IPF: the sequence of path IDs from its root down to it ran `count` times — or,
/// when a node bound made the count inexact, between `count` and `max` times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KipfNodeProfile {
    pub path: U64,
    pub count: U64,
    /// The most times the sequence can have run, when that is more than `count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<U64>,
    pub children: Vec<KipfNodeProfile>,
}

impl KipfNodeProfile {
    /// The most times the sequence can have run.
    pub fn upper(&self) -> u64 {
        self.max.map_or(self.count.0, |m| m.0)
    }
}

impl KipfProfile {
    /// The node of the sequence of path IDs `seq`, when it ran.
    pub fn node(&self, seq: &[U64]) -> Option<&KipfNodeProfile> {
        let (mut level, mut node) = (&self.roots, None);
        for p in seq {
            let n = level.iter().find(|n| n.path == *p)?;
            (node, level) = (Some(n), &n.children);
        }
        node
    }

    /// Gives every node below the roots its bound, when the forest's counts are short of the truth by
    /// at most `short` (the profile's `kbl.dropped`; the roots are exact): at most `short` more, and
    /// no more than its parent's bound leaves once its siblings' counts are taken [KBL13 §2.2's
    /// Property 1: a sequence runs at least as often as all its extensions together].
    pub fn bound(&mut self, short: u64) {
        self.short = (short > 0).then_some(U64(short));
        fn below(nodes: &mut [KipfNodeProfile], parent_upper: u64, short: u64) {
            let siblings: u64 = nodes.iter().map(|n| n.count.0).sum();
            for n in nodes.iter_mut() {
                let room = parent_upper.saturating_sub(siblings - n.count.0);
                let upper = n.count.0.saturating_add(short).min(room).max(n.count.0);
                n.max = (upper > n.count.0).then_some(U64(upper));
                below(&mut n.children, upper, short);
            }
        }
        if short == 0 {
            return;
        }
        for r in &mut self.roots {
            let upper = r.upper();
            below(&mut r.children, upper, short);
        }
    }
}

impl KipfProfile {
    /// Calls `visit` on every node, parents before children and siblings in order, with the sequence
    /// of path IDs from the node's root down to the node (the node's own path last).
    pub fn for_each_node(&self, mut visit: impl FnMut(&[U64], &KipfNodeProfile)) {
        let mut sequence: Vec<U64> = Vec::new();
        let mut levels: Vec<std::slice::Iter<'_, KipfNodeProfile>> = vec![self.roots.iter()];
        while let Some(level) = levels.last_mut() {
            match level.next() {
                Some(node) => {
                    sequence.push(node.path);
                    visit(&sequence, node);
                    levels.push(node.children.iter());
                }
                None => {
                    levels.pop();
                    sequence.pop();
                }
            }
        }
    }

    /// The forest's shape: node, edge and leaf counts and leaf depths.
    pub fn stats(&self) -> KipfStats {
        let mut s = KipfStats::default();
        self.for_each_node(|sequence, node| {
            s.nodes += 1;
            if node.children.is_empty() {
                s.leaves += 1;
                s.leaf_depth_sum += sequence.len() as u64;
            } else {
                s.internal_nodes += 1;
                s.child_edges += node.children.len() as u64;
            }
        });
        s
    }
}

/// The shape of one or more k-IPFs [KBL13 Figs. 12–14], as sums so that the figures of several
/// forests add up to those of the whole program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KipfStats {
    /// Nodes: the distinct sequences of 1 to k paths that ran.
    pub nodes: u64,
    /// Nodes with at least one child.
    pub internal_nodes: u64,
    /// Parent–child edges: the nodes that are not roots.
    pub child_edges: u64,
    /// Nodes without children.
    pub leaves: u64,
    /// Sum of the depths of the leaves, a root being at depth 1.
    pub leaf_depth_sum: u64,
}

impl KipfStats {
    /// Roots: the distinct Ball–Larus paths that ran.
    pub fn roots(&self) -> u64 {
        self.nodes.saturating_sub(self.child_edges)
    }

    /// Mean number of children of the internal nodes (Fig. 13); `None` without internal nodes.
    pub fn avg_degree(&self) -> Option<f64> {
        (self.internal_nodes > 0).then(|| self.child_edges as f64 / self.internal_nodes as f64)
    }

    /// Mean depth of the leaves, roots at depth 1 (Fig. 14); `None` for an empty forest.
    pub fn avg_leaf_depth(&self) -> Option<f64> {
        (self.leaves > 0).then(|| self.leaf_depth_sum as f64 / self.leaves as f64)
    }
}

impl std::ops::AddAssign for KipfStats {
    fn add_assign(&mut self, o: KipfStats) {
        self.nodes += o.nodes;
        self.internal_nodes += o.internal_nodes;
        self.child_edges += o.child_edges;
        self.leaves += o.leaves;
        self.leaf_depth_sum += o.leaf_depth_sum;
    }
}

impl std::ops::Add for KipfStats {
    type Output = KipfStats;
    fn add(mut self, o: KipfStats) -> KipfStats {
        self += o;
        self
    }
}

impl std::iter::Sum for KipfStats {
    fn sum<I: Iterator<Item = KipfStats>>(iter: I) -> KipfStats {
        iter.fold(KipfStats::default(), |a, b| a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: u64, count: u64, children: Vec<KipfNodeProfile>) -> KipfNodeProfile {
        KipfNodeProfile { path: U64(path), count: U64(count), max: None, children }
    }

    /// The 3-IPF of one activation running paths E V O V O V O V O V O X (E = 0, V = 1, O = 2, X = 3).
    fn loop_forest() -> KipfProfile {
        KipfProfile {
            k: 3,
            short: None,
            roots: vec![
                node(0, 1, vec![node(1, 1, vec![node(2, 1, vec![])])]),
                node(1, 5, vec![node(2, 5, vec![node(1, 4, vec![]), node(3, 1, vec![])])]),
                node(2, 5, vec![node(1, 4, vec![node(2, 4, vec![])]), node(3, 1, vec![])]),
                node(3, 1, vec![]),
            ],
        }
    }

    #[test]
    fn nodes_are_visited_parents_first_with_their_sequences() {
        let mut seen = Vec::new();
        loop_forest().for_each_node(|seq, n| seen.push((seq.iter().map(|p| p.0).collect::<Vec<_>>(), n.count.0)));
        let expected: Vec<(Vec<u64>, u64)> = vec![
            (vec![0], 1),
            (vec![0, 1], 1),
            (vec![0, 1, 2], 1),
            (vec![1], 5),
            (vec![1, 2], 5),
            (vec![1, 2, 1], 4),
            (vec![1, 2, 3], 1),
            (vec![2], 5),
            (vec![2, 1], 4),
            (vec![2, 1, 2], 4),
            (vec![2, 3], 1),
            (vec![3], 1),
        ];
        assert_eq!(seen, expected);
    }

    #[test]
    fn stats_of_a_hand_built_forest() {
        let s = loop_forest().stats();
        // Internal: E, EV, V, VO, O, OV; leaves: EVO, VOV, VOX, OVO (depth 3), OX (2), X (1).
        assert_eq!(s, KipfStats { nodes: 12, internal_nodes: 6, child_edges: 8, leaves: 6, leaf_depth_sum: 15 });
        assert_eq!(s.roots(), 4);
        assert!((s.avg_degree().unwrap() - 8.0 / 6.0).abs() < 1e-12);
        assert!((s.avg_leaf_depth().unwrap() - 2.5).abs() < 1e-12);

        let single = KipfProfile { k: 1, short: None, roots: vec![node(7, 3, vec![]), node(8, 1, vec![])] }.stats();
        assert_eq!(single, KipfStats { nodes: 2, internal_nodes: 0, child_edges: 0, leaves: 2, leaf_depth_sum: 2 });
        assert_eq!(single.avg_degree(), None);
        assert_eq!(single.avg_leaf_depth(), Some(1.0));

        let empty = KipfProfile { k: 2, short: None, roots: vec![] }.stats();
        assert_eq!(empty, KipfStats::default());
        assert_eq!((empty.avg_degree(), empty.avg_leaf_depth()), (None, None));

        let total: KipfStats = [s, single, empty].into_iter().sum();
        assert_eq!(total, s + single);
        assert_eq!(total, KipfStats { nodes: 14, internal_nodes: 6, child_edges: 8, leaves: 8, leaf_depth_sum: 17 });
        assert_eq!(total.roots(), 6);
        assert!((total.avg_leaf_depth().unwrap() - 17.0 / 8.0).abs() < 1e-12);
    }

    /// Bounds of a forest whose counts are short by at most 2: a node's bound is its count plus 2, or
    /// less where its parent's bound, less its siblings' counts, leaves less room; a complete
    /// forest's nodes stay exact where Property 1 pins them down.
    #[test]
    fn bounds_hold_the_truth_and_use_property_1() {
        let mut f = loop_forest();
        // As a bounded forest may report it: [1, 2, 1] short by one, [1, 2, 3] lost.
        f.roots[1].children[0].children = vec![node(1, 3, vec![])];
        f.bound(2);
        assert_eq!(f.short, Some(U64(2)));
        let upper = |seq: &[u64]| {
            let seq: Vec<U64> = seq.iter().map(|&p| U64(p)).collect();
            let node = f.node(&seq).unwrap();
            (node.count.0, node.max.map(|m| m.0))
        };
        // Under root 1 (5, exact), [1, 2] is the only child: at most 5, its count.
        assert_eq!(upper(&[1, 2]), (5, None));
        // [1, 2, 1]: 3 + 2 = 5, and [1, 2] leaves room for 5; the truth is 4.
        assert_eq!(upper(&[1, 2, 1]), (3, Some(5)));
        // [2, 1] (4) beside [2, 3] (1) under root 2 (5): room for 4 only, so exact.
        assert_eq!(upper(&[2, 1]), (4, None));
        assert_eq!(upper(&[2, 3]), (1, None));
        let mut exact = loop_forest();
        exact.bound(0);
        assert_eq!(exact, loop_forest());
    }
}
