//! The k-iteration path forest (k-IPF) [KBL13 §2.2]: the prefix forest of every sequence of up to
//! `k` consecutive path IDs of one activation, with its counts, as [`super::KSlabForest::to_kipf`]
//! makes it from a k-SF.

use std::collections::HashMap;

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

pub(super) fn sort(nodes: &mut [KipfNode]) {
    nodes.sort_by_key(|n| n.path);
    for n in nodes {
        sort(&mut n.children);
    }
}

impl Kipf {
    /// Adds `other`, a forest of the same `k`: nodes of the same sequence add their counts.
    pub fn add(&mut self, other: Kipf) {
        fn merge(a: &mut Vec<KipfNode>, b: Vec<KipfNode>) {
            if b.is_empty() {
                return;
            }
            let mut out = Vec::with_capacity(a.len() + b.len());
            let mut b = b.into_iter().peekable();
            for mut x in std::mem::take(a) {
                while let Some(y) = b.next_if(|y| y.path < x.path) {
                    out.push(y);
                }
                if let Some(y) = b.next_if(|y| y.path == x.path) {
                    x.count += y.count;
                    merge(&mut x.children, y.children);
                }
                out.push(x);
            }
            out.extend(b);
            *a = out;
        }
        merge(&mut self.roots, other.roots);
    }

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
