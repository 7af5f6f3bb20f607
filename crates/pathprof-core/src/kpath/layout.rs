//! A cache-friendly k-SF [KBL13 §6 leaves the fold's memory behaviour open]: [`KSlabForest::relayout`]
//! renumbers the nodes so that every node's children lie side by side, hottest first, and the
//! families along hot chains follow one another.
//!
//! Folding a stream walks from a node to one of its children at every path ID, and on forests of a
//! million nodes and more each such step is a cache miss when nodes lie in the order they were made:
//! siblings made at different times are far apart, and the hot nodes are spread over the whole
//! vector. After a relayout the roots come first, hottest first; then, depth first from the hottest
//! root, each node's children as one block sorted by count — the hottest child first, so a sibling
//! scan reads consecutive nodes and usually stops at the first — followed by the family of that
//! child. The hot part of the forest thus packs into the front of the vector, and a hot chain's
//! families into neighbouring cache lines. Nodes made afterwards are appended as before; the forest
//! lays itself out again each time it has grown by half (from [`FIRST_LAYOUT`] nodes by default), so the work is
//! linear in the nodes made, and after each pruning (which is linear in them too). A child still
//! follows its parent, which pruning relies on.

use super::{Cursor, KSlabForest, Node, NONE};
use std::cmp::Reverse;

/// Nodes a forest holds before it is first laid out, by default: a smaller one stays in the caches.
pub const FIRST_LAYOUT: usize = 1 << 16;

impl KSlabForest {
    /// Times the forest was laid out anew.
    pub fn relayouts(&self) -> u64 {
        self.relayouts
    }

    /// Prunes the forest if an item that adds up to `adds` nodes could find it full, and lays it out
    /// anew when it has grown by half since the last time or was just pruned; `cursors` are the
    /// activations' (the forest's own is moved too).
    #[inline]
    pub(super) fn tend(&mut self, cursors: &mut [Cursor], adds: usize) {
        let pruned = self.crowded(adds);
        if pruned {
            self.prune(cursors);
        }
        if self.nodes.len() >= self.next_layout || (pruned && self.options.relayout_from.is_some()) {
            self.relayout(cursors);
        }
    }

    /// Renumbers the nodes as the module's note says. Counts, labels and the forest's shape are
    /// unchanged; `cursors` (and the forest's own cursor) are moved to the new indices.
    pub fn relayout(&mut self, cursors: &mut [Cursor]) {
        let n = self.nodes.len();
        let mut roots: Vec<u32> = self.roots.iter().copied().filter(|&r| (r as usize) < n).collect();
        roots.sort_by_key(|&r| Reverse(self.count(r)));
        let mut nodes = Vec::with_capacity(n);
        let mut index = vec![NONE; n];
        let emit = |nodes: &mut Vec<Node>, index: &mut [u32], old: u32| {
            index[old as usize] = nodes.len() as u32;
            nodes.push(Node { first_child: NONE, next_sibling: NONE, ..self.nodes[old as usize] });
        };
        for &r in &roots {
            emit(&mut nodes, &mut index, r);
        }
        // Depth first over families: a node popped has its children emitted as one block, and the
        // hottest of them is popped next.
        let mut stack: Vec<u32> = roots.iter().rev().copied().collect();
        let mut family = Vec::new();
        while let Some(parent) = stack.pop() {
            family.clear();
            let mut c = self.nodes[parent as usize].first_child;
            while c != NONE {
                family.push(c);
                c = self.nodes[c as usize].next_sibling;
            }
            if family.is_empty() {
                continue;
            }
            family.sort_by_key(|&c| Reverse(self.count(c)));
            let first = nodes.len() as u32;
            for &c in &family {
                emit(&mut nodes, &mut index, c);
            }
            let last = nodes.len() as u32 - 1;
            for i in first..last {
                nodes[i as usize].next_sibling = i + 1;
            }
            let p = index[parent as usize] as usize;
            nodes[p].first_child = first;
            stack.extend(family.iter().rev());
        }
        debug_assert_eq!(nodes.len(), n, "every node is under a root");
        self.renumber(nodes, &index, cursors);
        self.relayouts += 1;
        self.next_layout = self.options.relayout_from.map_or(usize::MAX, |from| (n + n / 2).max(from));
    }

    /// Puts `nodes` in place of the forest's nodes, where old node `i` is now `index[i]` (or gone,
    /// [`NONE`]): the high counts, the roots and the cursors follow, and the child cache is emptied.
    pub(super) fn renumber(&mut self, nodes: Vec<Node>, index: &[u32], cursors: &mut [Cursor]) {
        let n = index.len();
        let moved = |node: u32| if (node as usize) < n { index[node as usize] } else { node };
        self.nodes = nodes;
        self.high = self
            .high
            .drain()
            .filter(|&(i, _)| index[i as usize] != NONE)
            .map(|(i, h)| (index[i as usize], h))
            .collect();
        for root in &mut self.roots {
            *root = moved(*root);
        }
        self.children.fill((NONE, NONE, NONE));
        for c in cursors.iter_mut().chain(std::iter::once(&mut self.cursor)) {
            c.top = moved(c.top);
            c.bottom = moved(c.bottom);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Item, Options};
    use super::*;

    /// A stream of `n` path IDs from a small generator, with a marker now and then: labels `0..labels`.
    fn stream(n: usize, labels: u64, seed: u64) -> Vec<Item> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if (x >> 33).is_multiple_of(97) {
                    Item::Enter
                } else {
                    Item::Path((x >> 40) % labels)
                }
            })
            .collect()
    }

    fn fold(k: usize, options: Options, items: &[Item]) -> KSlabForest {
        let mut f = KSlabForest::with_options(k, options);
        for &item in items {
            f.push(item);
        }
        f
    }

    #[test]
    fn relayout_keeps_the_forest_and_groups_families_hottest_first() {
        for k in [2, 3, 5] {
            let items = stream(300_000, 40, k as u64);
            let plain = fold(k, Options { relayout_from: None, ..Options::default() }, &items);
            let mut laid = plain.clone();
            laid.relayout(&mut []);
            assert_eq!(laid.node_sequences(), plain.node_sequences());
            for (p, node) in laid.nodes.iter().enumerate() {
                let mut c = node.first_child;
                let mut last = None;
                while c != NONE {
                    assert!(c as usize > p, "a child follows its parent");
                    if let Some((prev, count)) = last {
                        assert_eq!(c, prev + 1, "siblings are adjacent");
                        assert!(laid.count(c) <= count, "hottest first");
                    }
                    last = Some((c, laid.count(c)));
                    c = laid.nodes[c as usize].next_sibling;
                }
            }
            // Relaid out during the fold (from a low threshold), and folding on afterwards, gives
            // the same forest as the fold without.
            let during = fold(k, Options { relayout_from: Some(64), ..Options::default() }, &items);
            assert!(during.relayouts() >= 4, "k = {k}: {} relayouts", during.relayouts());
            assert_eq!(during.node_sequences(), plain.node_sequences());
            assert_eq!(during.to_kipf(), plain.to_kipf());
        }
    }
}
