//! k-iteration path forests in a profile [KBL13 §2.2]: every sequence of up to `k` consecutive
//! paths of one activation that ran, as a prefix forest, and its shape [KBL13 Figs. 12–14].

use super::U64;
use serde::{Deserialize, Serialize};

/// A k-iteration path forest: every sequence of up to `k` consecutive paths of one activation that
/// ran, as a prefix forest of path IDs with the number of times each sequence ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KipfProfile {
    pub k: usize,
    pub roots: Vec<KipfNodeProfile>,
}

/// A node of a k-IPF: the sequence of path IDs from its root down to it ran `count` times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KipfNodeProfile {
    pub path: U64,
    pub count: U64,
    pub children: Vec<KipfNodeProfile>,
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
        KipfNodeProfile { path: U64(path), count: U64(count), children }
    }

    /// The 3-IPF of one activation running paths E V O V O V O V O V O X (E = 0, V = 1, O = 2, X = 3).
    fn loop_forest() -> KipfProfile {
        KipfProfile {
            k: 3,
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

        let single = KipfProfile { k: 1, roots: vec![node(7, 3, vec![]), node(8, 1, vec![])] }.stats();
        assert_eq!(single, KipfStats { nodes: 2, internal_nodes: 0, child_edges: 0, leaves: 2, leaf_depth_sum: 2 });
        assert_eq!(single.avg_degree(), None);
        assert_eq!(single.avg_leaf_depth(), Some(1.0));

        let empty = KipfProfile { k: 2, roots: vec![] }.stats();
        assert_eq!(empty, KipfStats::default());
        assert_eq!((empty.avg_degree(), empty.avg_leaf_depth()), (None, None));

        let total: KipfStats = [s, single, empty].into_iter().sum();
        assert_eq!(total, s + single);
        assert_eq!(total, KipfStats { nodes: 14, internal_nodes: 6, child_edges: 8, leaves: 8, leaf_depth_sum: 17 });
        assert_eq!(total.roots(), 6);
        assert!((total.avg_leaf_depth().unwrap() - 17.0 / 8.0).abs() < 1e-12);
    }
}
