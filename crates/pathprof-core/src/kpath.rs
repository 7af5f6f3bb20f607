//! Multi-iteration path profiling (k-BLPP, seed 000 §2.2): from a stream of Ball–Larus path IDs and
//! activation-entry markers to the k-iteration path forest (k-IPF), the prefix forest of every
//! sequence of up to `k` consecutive path IDs that contains no marker.
//!
//! [`KSlabForest`] is the streaming construction of seed 000 Fig. 6: the stream is cut after each
//! marker and then every `k − 1` items into slabs; each item goes at most into two places, under the
//! current node of the upper part of the forest (`τ`) and under that of the lower part (`β`), and
//! increments one counter. [`KSlabForest::to_kipf`] is Fig. 7: the subtrees of depth up to `k − 1`
//! rooted at every node of a label are joined under a root of that label.
//!
//! Labels are plain `u64`s; a caller profiling several functions makes them distinct per function
//! (seed 002 keys roots by path ID and routine). Nodes use the first-child, next-sibling layout of
//! seed 002.

use std::collections::HashMap;

/// One item of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    /// The `*` marker: a new activation starts.
    Enter,
    /// A Ball–Larus path ID (label).
    Path(u64),
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    label: u64,
    count: u64,
    first_child: u32,
    next_sibling: u32,
}

/// Where one activation is in the forest: items since its start, and the current nodes of the upper
/// (`τ`) and lower (`β`) parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    n: usize,
    top: u32,
    bottom: u32,
}

impl Default for Cursor {
    fn default() -> Self {
        Cursor { n: 0, top: NONE, bottom: NONE }
    }
}

/// The k-slab forest, built one item at a time.
#[derive(Clone, Debug)]
pub struct KSlabForest {
    k: usize,
    nodes: Vec<Node>,
    roots: HashMap<u64, u32>,
    /// The cursor of [`KSlabForest::push`].
    cursor: Cursor,
}

impl KSlabForest {
    /// An empty forest for paths of up to `k ≥ 2` BL paths.
    pub fn new(k: usize) -> Self {
        assert!(k >= 2, "k-slab forests need k ≥ 2");
        KSlabForest { k, nodes: Vec::new(), roots: HashMap::new(), cursor: Cursor::default() }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    fn add(&mut self, label: u64) -> u32 {
        self.nodes.push(Node { label, count: 0, first_child: NONE, next_sibling: NONE });
        (self.nodes.len() - 1) as u32
    }

    /// The child of `parent` labelled `label`, added if missing.
    fn child(&mut self, parent: u32, label: u64) -> u32 {
        let mut c = self.nodes[parent as usize].first_child;
        while c != NONE {
            if self.nodes[c as usize].label == label {
                return c;
            }
            c = self.nodes[c as usize].next_sibling;
        }
        let new = self.add(label);
        self.nodes[new as usize].next_sibling = self.nodes[parent as usize].first_child;
        self.nodes[parent as usize].first_child = new;
        new
    }

    /// Processes one stream item (`process_bl_path_id` of seed 000 Fig. 6).
    pub fn push(&mut self, item: Item) {
        let mut cursor = self.cursor;
        match item {
            Item::Enter => cursor = Cursor::default(),
            Item::Path(r) => self.push_at(&mut cursor, r),
        }
        self.cursor = cursor;
    }

    /// Adds path `r` after the items of the activation at `cursor` (a fresh [`Cursor`] is the `*`
    /// marker).
    pub fn push_at(&mut self, cursor: &mut Cursor, r: u64) {
        if cursor.n.is_multiple_of(self.k - 1) {
            cursor.bottom = cursor.top;
            cursor.top = match self.roots.get(&r) {
                Some(&root) => root,
                None => {
                    let root = self.add(r);
                    self.roots.insert(r, root);
                    root
                }
            };
        } else {
            cursor.top = self.child(cursor.top, r);
        }
        if cursor.bottom != NONE {
            cursor.bottom = self.child(cursor.bottom, r);
            self.nodes[cursor.bottom as usize].count += 1;
        } else {
            self.nodes[cursor.top as usize].count += 1;
        }
        cursor.n += 1;
    }

    /// Converts the forest into the k-IPF (`make_k_ipf` of seed 000 Fig. 7).
    pub fn to_kipf(&self) -> Kipf {
        let mut by_label: Vec<(u64, Vec<u32>)> = Vec::new();
        let mut index: HashMap<u64, usize> = HashMap::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let slot = *index.entry(node.label).or_insert_with(|| {
                by_label.push((node.label, Vec::new()));
                by_label.len() - 1
            });
            by_label[slot].1.push(i as u32);
        }
        let mut root = KipfNode { path: 0, count: 0, children: Vec::new() };
        for (_, nodes) in &by_label {
            for &rho in nodes {
                self.join(rho, &mut root, self.k - 1);
            }
        }
        let mut roots = root.children;
        sort(&mut roots);
        Kipf { k: self.k, roots }
    }

    fn join(&self, rho: u32, gamma: &mut KipfNode, depth: usize) {
        let node = self.nodes[rho as usize];
        let pos = match gamma.children.iter().position(|c| c.path == node.label) {
            Some(p) => {
                gamma.children[p].count += node.count;
                p
            }
            None => {
                gamma.children.push(KipfNode { path: node.label, count: node.count, children: Vec::new() });
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

/// A node of the k-IPF: the sequence of path IDs from its root to it occurred `count` times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KipfNode {
    pub path: u64,
    pub count: u64,
    pub children: Vec<KipfNode>,
}

/// The k-iteration path forest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kipf {
    pub k: usize,
    /// Roots by path ID; children by path ID too.
    pub roots: Vec<KipfNode>,
}

fn sort(nodes: &mut [KipfNode]) {
    nodes.sort_by_key(|n| n.path);
    for n in nodes {
        sort(&mut n.children);
    }
}

impl Kipf {
    /// Every sequence of the forest with its count.
    pub fn sequences(&self) -> HashMap<Vec<u64>, u64> {
        fn walk(n: &KipfNode, prefix: &mut Vec<u64>, out: &mut HashMap<Vec<u64>, u64>) {
            prefix.push(n.path);
            out.insert(prefix.clone(), n.count);
            for c in &n.children {
                walk(c, prefix, out);
            }
            prefix.pop();
        }
        let mut out = HashMap::new();
        for r in &self.roots {
            walk(r, &mut Vec::new(), &mut out);
        }
        out
    }

    /// Count of one sequence of path IDs (0 when it never occurred or is longer than `k`).
    pub fn count(&self, seq: &[u64]) -> u64 {
        let mut level = &self.roots;
        let mut count = 0;
        for p in seq {
            match level.iter().find(|n| n.path == *p) {
                Some(n) => {
                    count = n.count;
                    level = &n.children;
                }
                None => return 0,
            }
        }
        count
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

/// The k-SF of a program's activations, one cursor per activation on a stack: a call suspends the
/// caller's cursor and the return resumes it, so a caller's k-iteration paths never run through its
/// callees' paths (seed 000 §3: per-activation state).
#[derive(Clone, Debug)]
pub struct Activations {
    forest: KSlabForest,
    stack: Vec<Cursor>,
}

impl Activations {
    pub fn new(k: usize) -> Self {
        Activations { forest: KSlabForest::new(k), stack: Vec::new() }
    }

    /// An activation starts (the `*` marker).
    pub fn enter(&mut self) {
        self.stack.push(Cursor::default());
    }

    /// The current activation ended a path. A path outside any activation starts one.
    pub fn path(&mut self, label: u64) {
        if self.stack.is_empty() {
            self.enter();
        }
        let top = self.stack.last_mut().expect("an activation is open");
        self.forest.push_at(top, label);
    }

    /// The current activation returned.
    pub fn exit(&mut self) {
        self.stack.pop();
    }

    /// Activations still open.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    pub fn forest(&self) -> &KSlabForest {
        &self.forest
    }
}
