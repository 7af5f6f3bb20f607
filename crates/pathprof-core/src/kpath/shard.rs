//! Shards of a k-slab forest, for folding one stream on several threads.

/// A share of a k-SF's trees, for folding one stream on several threads: shard `index` of `of` holds
/// the trees whose root label hashes to `index`, and the per-label totals of those labels.
///
/// Every node of the k-SF lies in the tree of the label that starts its slab, so the shards of one
/// stream are disjoint and together hold the forest of [`Shard::ALL`]; each reads the whole stream
/// (every activation's cursor moves in every shard) and does the work of its own trees only. Their
/// k-IPFs add up ([`Kipf::add`](super::Kipf::add)) to the forest's: a k-IPF root gathers the subtrees under every node
/// of its label, whichever tree the node is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub of: u32,
}

impl Shard {
    /// The whole forest.
    pub const ALL: Shard = Shard { index: 0, of: 1 };

    /// Whether the trees rooted at `label` are this shard's.
    #[inline]
    pub fn owns(self, label: u64) -> bool {
        if self.of == 1 {
            return true;
        }
        // A multiplicative hash mapped onto `0..of` by a multiplication, not a division.
        let hash = (label.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32;
        ((u64::from(hash) * u64::from(self.of)) >> 32) as u32 == self.index
    }
}
