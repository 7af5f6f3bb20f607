//! Multi-iteration path profiling (k-BLPP [KBL13 §2.2]): from a stream of Ball–Larus path IDs and
//! activation-entry markers to the k-iteration path forest (k-IPF), the prefix forest of every
//! sequence of up to `k` consecutive path IDs that contains no marker.
//!
//! [`KSlabForest`] is the streaming construction of [KBL13 Fig. 6]: the stream is cut after each
//! marker and then every `k − 1` items into slabs; each item goes at most into two places, under the
//! current node of the upper part of the forest (`τ`) and under that of the lower part (`β`), and
//! increments one counter. [`KSlabForest::to_kipf`] is Fig. 7: the subtrees of depth up to `k − 1`
//! rooted at every node of a label are joined under a root of that label.
//!
//! Labels are `u64`s; a caller profiling several functions makes them distinct per function ([KBLT]
//! keys roots by path ID and routine). Nodes use the first-child, next-sibling layout of [KBLT]
//! in 16 bytes: labels are interned to 32-bit indices, counts beyond 32 bits spill into a side table,
//! and a child found after two siblings or more moves to the front [KBL13 §4 suggests it against
//! the long sibling scans of its outliers]. Before its sibling list, a child is looked up in a
//! direct-mapped cache of `(parent, label) → child` beside the forest, which spares most look-ups
//! the walk down the list.
//!
//! The forest is built here; the k-IPF it turns into is in `kipf.rs`, the per-activation cursors
//! of a program's stream in `activations.rs`, the shards of parallel folding in `shard.rs`, and
//! the pruning under a node bound in `prune.rs`.
//!
//! **Shards.** One stream can be folded by several forests at once, each holding the trees of its
//! [`Shard`] of the root labels (the label that starts a slab); their k-IPFs add up ([`Kipf::add`]) to
//! the k-IPF of one forest holding them all [KBL13 §6 leaves parallel folding open].
//!
//! **Bounded memory: the hottest nodes kept.** [`Options::max_nodes`] caps the forest. When it is
//! nearly full, [`KSlabForest::prune`] removes its coldest subtrees, lossy-counting style: each
//! node's *mass* is the sum of the counts in its subtree (a child's mass never exceeds its parent's),
//! the nodes an activation's cursor stands on and their ancestors are kept, and every other node
//! whose mass is at most a threshold goes — the threshold chosen so that half the bound is left. A
//! removed node that occurs again is made anew and counts from zero. The counts the removed nodes
//! held are added to [`KSlabForest::dropped`] (with, if even pruning leaves no room, the path IDs
//! kept out). The roots of the k-IPF stay exact (they come from a per-label total kept beside the
//! forest, and equal the Ball–Larus counts); every deeper count is a lower bound, at most `dropped`
//! below the true count: the occurrences of a sequence the forest lost were counted in the node its
//! chain ended at, when that node was removed, and each such unit belongs to one chain of the
//! sequence. So every sequence that occurred more than `dropped` times is in the k-IPF. Without a
//! bound the k-IPF is exact.

mod activations;
mod kipf;
mod layout;
mod prune;
mod shard;

pub use activations::Activations;
use kipf::sort;
pub use kipf::{Kipf, KipfNode};
pub use shard::Shard;

use std::collections::HashMap;

/// One item of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// The `*` marker: a new activation starts.
    Enter,
    /// A Ball–Larus path ID (label).
    Path(u64),
}

/// No node (an empty child list, or no lower part yet).
const NONE: u32 = u32::MAX;
/// A node the bound kept out of the forest: everything under it is dropped too.
const LOST: u32 = u32::MAX - 1;
/// A node under a root of another shard's forest ([`Shard`]): counted there, not here.
const FOREIGN: u32 = u32::MAX - 2;
/// Nodes and labels are indexed by `u32`s below the three sentinels.
const MAX_INDEX: usize = (u32::MAX - 3) as usize;

/// A child found after this many siblings moves to the front of the list. Moving the second child too
/// makes two alternating children trade places at every step, which measured slower.
const MOVE_AFTER: u32 = 2;

/// Entries of the label cache (a power of two).
const CACHE_SLOTS: usize = 4096;

/// Entries of the child cache (a power of two).
const CHILD_SLOTS: usize = 1 << 15;

/// A k-SF node: 16 bytes.
#[derive(Clone, Copy, Debug)]
struct Node {
    /// Interned label.
    label: u32,
    /// The low 32 bits of the count; the rest is in [`KSlabForest::high`].
    count: u32,
    first_child: u32,
    next_sibling: u32,
}

/// Bytes of one k-SF node.
pub const NODE_BYTES: usize = std::mem::size_of::<Node>();

/// How a forest is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Most nodes the forest may hold (see the module's note on bounded memory).
    pub max_nodes: Option<usize>,
    /// Move a child found after two siblings or more to the front of the list.
    pub move_to_front: bool,
    /// Look children up in a direct-mapped cache of `(parent, label)` before their sibling list.
    pub child_cache: bool,
    /// The roots whose trees this forest holds.
    pub shard: Shard,
    /// Lay the nodes out anew, families side by side and hottest first (`layout.rs`), once the forest
    /// holds this many nodes and each time it has grown by half since; `None`: never.
    pub relayout_from: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_nodes: None,
            move_to_front: true,
            child_cache: true,
            shard: Shard::ALL,
            relayout_from: Some(layout::FIRST_LAYOUT),
        }
    }
}

/// Where one activation is in the forest: its position in the current slab, and the current nodes of
/// the upper (`τ`) and lower (`β`) parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pos: u32,
    top: u32,
    bottom: u32,
}

impl Default for Cursor {
    fn default() -> Self {
        Cursor { pos: 0, top: NONE, bottom: NONE }
    }
}

type LabelMap = HashMap<u64, u32, crate::hash::FxBuildHasher>;

/// The k-slab forest, built one item at a time.
#[derive(Clone, Debug)]
pub struct KSlabForest {
    k: usize,
    options: Options,
    nodes: Vec<Node>,
    /// By interned label: the label, its root node (or [`NONE`]), and how many times it occurred.
    labels: Vec<u64>,
    roots: Vec<u32>,
    totals: Vec<u64>,
    index: LabelMap,
    /// A direct-mapped cache of `index`: `(label, interned)` by the label's low bits.
    cache: Box<[(u64, u32)]>,
    /// A direct-mapped cache of children found: `(parent, label, child)` by a hash of the first two.
    /// A node keeps its index for good, so an entry stays true.
    children: Box<[(u32, u32, u32)]>,
    /// Counts of 2^32 and more: the high part, by node.
    high: HashMap<u32, u64>,
    dropped: u64,
    scans: u64,
    /// The cursor of [`KSlabForest::push`].
    cursor: Cursor,
    /// Times the forest was pruned.
    prunes: u64,
    /// The nodes one slab of a run bumps ([`KSlabForest::push_run`]), kept between runs.
    run_nodes: Vec<u32>,
    /// Nodes at which the forest is next laid out, and the times it was.
    next_layout: usize,
    relayouts: u64,
}

impl KSlabForest {
    /// An empty forest for paths of up to `k ≥ 2` BL paths.
    pub fn new(k: usize) -> Self {
        Self::with_options(k, Options::default())
    }

    pub fn with_options(k: usize, options: Options) -> Self {
        assert!(k >= 2, "k-slab forests need k ≥ 2");
        KSlabForest {
            k,
            options,
            nodes: Vec::new(),
            labels: Vec::new(),
            roots: Vec::new(),
            totals: Vec::new(),
            index: LabelMap::default(),
            cache: vec![(u64::MAX, NONE); CACHE_SLOTS].into_boxed_slice(),
            children: vec![(NONE, NONE, NONE); CHILD_SLOTS].into_boxed_slice(),
            high: HashMap::new(),
            dropped: 0,
            scans: 0,
            cursor: Cursor::default(),
            prunes: 0,
            run_nodes: Vec::new(),
            next_layout: options.relayout_from.unwrap_or(usize::MAX),
            relayouts: 0,
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Counts the node bound took out of the forest: those of the pruned nodes, and the path IDs kept
    /// out when pruning left no room. No count of the k-IPF is short by more.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Nodes visited looking up children.
    pub fn sibling_scans(&self) -> u64 {
        self.scans
    }

    fn limit(&self) -> usize {
        self.options.max_nodes.unwrap_or(MAX_INDEX).min(MAX_INDEX)
    }

    #[inline]
    fn add(&mut self, label: u32) -> u32 {
        if self.nodes.len() >= self.limit() {
            return LOST;
        }
        self.nodes.push(Node { label, count: 0, first_child: NONE, next_sibling: NONE });
        (self.nodes.len() - 1) as u32
    }

    fn count(&self, node: u32) -> u64 {
        self.high.get(&node).copied().unwrap_or(0) + u64::from(self.nodes[node as usize].count)
    }

    /// Adds `n` to the count of `node` (to the dropped IDs for a node the bound kept out; nothing
    /// for another shard's).
    #[inline]
    fn bump_by(&mut self, node: u32, n: u64) {
        match node {
            LOST => return self.dropped += n,
            FOREIGN => return,
            _ => {}
        }
        let c = &mut self.nodes[node as usize].count;
        let sum = u64::from(*c) + n;
        *c = sum as u32;
        if sum >> 32 != 0 {
            *self.high.entry(node).or_insert(0) += sum & !0xffff_ffff;
        }
    }

    /// The interned index of `label`, or `None` when 2^32 − 2 labels are already interned.
    #[inline]
    fn intern(&mut self, label: u64) -> Option<u32> {
        let slot = (label ^ (label >> 29)) as usize & (CACHE_SLOTS - 1);
        let (cached, l) = self.cache[slot];
        if cached == label && l != NONE {
            return Some(l);
        }
        if let Some(&l) = self.index.get(&label) {
            self.cache[slot] = (label, l);
            return Some(l);
        }
        if self.labels.len() >= MAX_INDEX {
            return None;
        }
        let l = self.labels.len() as u32;
        self.labels.push(label);
        self.roots.push(NONE);
        self.totals.push(0);
        self.index.insert(label, l);
        self.cache[slot] = (label, l);
        Some(l)
    }

    #[inline]
    fn root(&mut self, l: u32) -> u32 {
        match self.roots[l as usize] {
            NONE => {
                let root = self.add(l);
                if root != LOST {
                    self.roots[l as usize] = root;
                }
                root
            }
            root => root,
        }
    }

    /// The child of `parent` labelled `l`, added if missing.
    #[inline(always)]
    fn child(&mut self, parent: u32, l: u32) -> u32 {
        if parent == LOST || parent == FOREIGN {
            return parent;
        }
        if !self.options.child_cache {
            return self.find_child(parent, l);
        }
        // The label's hash, not the parent's: the parent is the end of the chain of look-ups one path
        // ID after another, the label is known early.
        let slot = (parent ^ l.wrapping_mul(0x9e37_79b9) >> 15) as usize & (CHILD_SLOTS - 1);
        let (p, label, child) = self.children[slot];
        if p == parent && label == l {
            return child;
        }
        let child = self.find_child(parent, l);
        if child != LOST {
            self.children[slot] = (parent, l, child);
        }
        child
    }

    /// [`child`](Self::child) without the cache.
    #[inline]
    fn find_child(&mut self, parent: u32, l: u32) -> u32 {
        let first = self.nodes[parent as usize].first_child;
        let (mut prev, mut c, mut passed) = (NONE, first, 0);
        while c != NONE {
            self.scans += 1;
            let node = self.nodes[c as usize];
            if node.label == l {
                if passed >= MOVE_AFTER && self.options.move_to_front {
                    self.nodes[prev as usize].next_sibling = node.next_sibling;
                    self.nodes[c as usize].next_sibling = first;
                    self.nodes[parent as usize].first_child = c;
                }
                return c;
            }
            prev = c;
            c = node.next_sibling;
            passed += 1;
        }
        let new = self.add(l);
        if new != LOST {
            self.nodes[new as usize].next_sibling = first;
            self.nodes[parent as usize].first_child = new;
        }
        new
    }

    /// Processes one stream item (`process_bl_path_id` of [KBL13 Fig. 6]).
    pub fn push(&mut self, item: Item) {
        self.tend(&mut [], 2);
        let mut cursor = self.cursor;
        match item {
            Item::Enter => cursor = Cursor::default(),
            Item::Path(r) => {
                self.push_at(&mut cursor, r);
            }
        }
        self.cursor = cursor;
    }

    /// Adds path `r` after the items of the activation at `cursor` (a fresh [`Cursor`] is the `*`
    /// marker).
    #[inline]
    pub fn push_at(&mut self, cursor: &mut Cursor, r: u64) -> u32 {
        let Some(l) = self.intern(r) else {
            self.dropped += 1;
            *cursor = Cursor { pos: cursor.pos, top: LOST, bottom: LOST };
            return LOST;
        };
        let mine = self.options.shard.owns(r);
        self.totals[l as usize] += u64::from(mine);
        self.step(cursor, l, mine)
    }

    /// Moves the activation at `cursor` on by the interned label `l` (of this shard's trees if
    /// `mine`), and returns the node it counted in; the label's total is the caller's to add.
    #[inline(always)]
    fn step(&mut self, cursor: &mut Cursor, l: u32, mine: bool) -> u32 {
        if cursor.pos == 0 {
            cursor.bottom = cursor.top;
            cursor.top = if mine { self.root(l) } else { FOREIGN };
        } else {
            cursor.top = self.child(cursor.top, l);
        }
        let counted = if cursor.bottom != NONE {
            cursor.bottom = self.child(cursor.bottom, l);
            cursor.bottom
        } else {
            cursor.top
        };
        self.bump_by(counted, 1);
        cursor.pos += 1;
        if cursor.pos as usize == self.k - 1 {
            cursor.pos = 0;
        }
        counted
    }

    /// Adds `n` paths `r` in a row after the items of the activation at `cursor`, in time independent
    /// of `n`: once a whole slab of `r`s has gone by, every further slab of `r`s bumps the same `k − 1`
    /// nodes, so all the whole slabs left are counted at once. The label is looked up and its total
    /// added once for the whole run.
    pub fn push_run(&mut self, cursor: &mut Cursor, r: u64, n: u64) {
        let Some(l) = self.intern(r) else {
            // As `n` calls of `push_at` would: every one of them lost.
            self.dropped += n;
            *cursor = Cursor { pos: cursor.pos, top: LOST, bottom: LOST };
            return;
        };
        let mine = self.options.shard.owns(r);
        if mine {
            self.totals[l as usize] += n;
        }
        let per = (self.k - 1) as u64;
        let mut left = n;
        let mut seen = 0;
        while left > 0 && !(seen >= per && cursor.pos == 0) {
            self.step(cursor, l, mine);
            seen += 1;
            left -= 1;
        }
        let slabs = left / per;
        if slabs > 1 {
            // The nodes one slab bumps, found by stepping through it; the other slabs are added to
            // them.
            let mut bumped = std::mem::take(&mut self.run_nodes);
            bumped.clear();
            for _ in 0..per {
                bumped.push(self.step(cursor, l, mine));
            }
            for &node in &bumped {
                self.bump_by(node, slabs - 1);
            }
            self.run_nodes = bumped;
            left -= slabs * per;
        }
        for _ in 0..left {
            self.step(cursor, l, mine);
        }
    }

    /// Every node as the sequence of labels from its root down to it, with its count: the forest
    /// itself [KBL13 Fig. 5], for inspection.
    pub fn node_sequences(&self) -> Vec<(Vec<u64>, u64)> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack: Vec<(u32, Vec<u64>)> =
            self.roots.iter().filter(|&&r| r != NONE).map(|&r| (r, Vec::new())).collect();
        while let Some((node, mut prefix)) = stack.pop() {
            prefix.push(self.labels[self.nodes[node as usize].label as usize]);
            let mut c = self.nodes[node as usize].first_child;
            while c != NONE {
                stack.push((c, prefix.clone()));
                c = self.nodes[c as usize].next_sibling;
            }
            out.push((prefix, self.count(node)));
        }
        out.sort();
        out
    }

    /// Converts the forest into the k-IPF (`make_k_ipf` of [KBL13 Fig. 7]). The roots' counts are the
    /// exact totals of their labels, also when the bound dropped path IDs (for a [`Shard`], of its own
    /// labels; the others' roots count 0 here).
    pub fn to_kipf(&self) -> Kipf {
        let mut by_label: Vec<Vec<u32>> = vec![Vec::new(); self.labels.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            by_label[node.label as usize].push(i as u32);
        }
        let mut root = KipfNode { path: 0, count: 0, children: Vec::new() };
        for nodes in &by_label {
            for &rho in nodes {
                self.join(rho, &mut root, self.k - 1);
            }
        }
        let mut roots = root.children;
        for r in &mut roots {
            let l = self.index[&r.path];
            r.count = self.totals[l as usize];
        }
        // Labels whose every node the bound dropped still have their exact count.
        for (l, &total) in self.totals.iter().enumerate() {
            if total > 0 && by_label[l].is_empty() {
                roots.push(KipfNode { path: self.labels[l], count: total, children: Vec::new() });
            }
        }
        sort(&mut roots);
        Kipf { k: self.k, roots }
    }

    fn join(&self, rho: u32, gamma: &mut KipfNode, depth: usize) {
        let node = self.nodes[rho as usize];
        let (label, count) = (self.labels[node.label as usize], self.count(rho));
        let pos = match gamma.children.iter().position(|c| c.path == label) {
            Some(p) => {
                gamma.children[p].count += count;
                p
            }
            None => {
                gamma.children.push(KipfNode { path: label, count, children: Vec::new() });
                gamma.children.len() - 1
            }
        };
        if depth > 0 {
            let mut c = node.first_child;
            while c != NONE {
                self.join(c, &mut gamma.children[pos], depth - 1);
                c = self.nodes[c as usize].next_sibling;
            }
        }
    }
}

/// The k-IPF of a whole stream.
pub fn kipf(k: usize, stream: impl IntoIterator<Item = Item>) -> Kipf {
    let mut f = KSlabForest::new(k);
    for item in stream {
        f.push(item);
    }
    f.to_kipf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_carry_past_32_bits() {
        let mut f = KSlabForest::new(3);
        f.push(Item::Path(7));
        f.nodes[0].count = u32::MAX - 1;
        for _ in 0..3 {
            f.push(Item::Enter);
            f.push(Item::Path(7));
        }
        assert_eq!(f.count(0), u64::from(u32::MAX) + 2);
        assert_eq!(f.to_kipf().roots[0].count, 4);
        let mut root = KipfNode { path: 0, count: 0, children: Vec::new() };
        f.join(0, &mut root, 0);
        assert_eq!(root.children[0].count, u64::from(u32::MAX) + 2);
    }
}
