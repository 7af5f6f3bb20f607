//! Bounded memory: [`KSlabForest::prune`] keeps the hottest nodes of a forest that reaches its node
//! bound (see the note on bounded memory in [`super`]).

use super::Cursor;
use super::{KSlabForest, Node, NONE};

impl KSlabForest {
    /// Times the node bound made the forest remove its coldest subtrees.
    pub fn prunes(&self) -> u64 {
        self.prunes
    }

    /// Whether an item that adds up to `adds` nodes could find the forest full.
    pub(super) fn crowded(&self, adds: usize) -> bool {
        self.options.max_nodes.is_some_and(|max| self.nodes.len() + adds > max)
    }

    /// Most nodes a run of `n` paths adds: [`KSlabForest::push_run`] pushes fewer than `4 (k − 1)`
    /// paths one by one, each adding two nodes at most.
    pub(super) fn run_adds(&self, n: u64) -> usize {
        2 * (n.min(4 * self.k as u64) as usize)
    }

    /// Removes the coldest subtrees (see the module's note on bounded memory) but those under which
    /// one of `cursors`, or the forest's own cursor, stands, until half the node bound is left; their
    /// counts go to [`KSlabForest::dropped`]. Node indices change: the cursors are moved to the new
    /// ones.
    pub fn prune(&mut self, cursors: &mut [Cursor]) {
        let Some(max) = self.options.max_nodes else { return };
        let n = self.nodes.len();
        let keep = max / 2;
        if n <= keep {
            return;
        }
        // A child is always made after its parent, so parents have the smaller indices.
        let mut parent = vec![NONE; n];
        for (p, node) in self.nodes.iter().enumerate() {
            let mut c = node.first_child;
            while c != NONE {
                parent[c as usize] = p as u32;
                c = self.nodes[c as usize].next_sibling;
            }
        }
        let mut mass: Vec<u64> = (0..n as u32).map(|i| self.count(i)).collect();
        let mut kept = vec![false; n];
        let own = self.cursor;
        for c in cursors.iter().chain(std::iter::once(&own)) {
            for node in [c.top, c.bottom] {
                if (node as usize) < n {
                    kept[node as usize] = true;
                }
            }
        }
        for i in (1..n).rev() {
            let p = parent[i];
            if p != NONE {
                mass[p as usize] += mass[i];
                kept[p as usize] |= kept[i];
            }
        }
        let mut candidates: Vec<u64> = (0..n).filter(|&i| !kept[i]).map(|i| mass[i]).collect();
        if candidates.is_empty() {
            return;
        }
        let rank = (n - keep).min(candidates.len()) - 1;
        let threshold = *candidates.select_nth_unstable(rank).1;
        // Removed: every node not kept whose mass is at most the threshold, with its subtree (whose
        // masses are no larger, and none kept, or the node would be).
        let mut index = vec![NONE; n];
        let mut next = 0u32;
        for i in 0..n {
            if kept[i] || mass[i] > threshold {
                index[i] = next;
                next += 1;
            } else {
                self.dropped += self.count(i as u32);
            }
        }
        let moved = |node: u32| if (node as usize) < n { index[node as usize] } else { node };
        let mut nodes = Vec::with_capacity(next as usize);
        for (i, node) in self.nodes.iter().enumerate() {
            if index[i] == NONE {
                continue;
            }
            let mut c = node.first_child;
            while c != NONE && index[c as usize] == NONE {
                c = self.nodes[c as usize].next_sibling;
            }
            let mut s = node.next_sibling;
            while s != NONE && index[s as usize] == NONE {
                s = self.nodes[s as usize].next_sibling;
            }
            nodes.push(Node { label: node.label, count: node.count, first_child: moved(c), next_sibling: moved(s) });
        }
        self.renumber(nodes, &index, cursors);
        self.prunes += 1;
    }
}
