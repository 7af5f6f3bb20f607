//! Supergraph numbering of interprocedural path segments [PPP07 §3.4.3–3.4.5]: of one call below,
//! and of up to `k` calls with the heads of deeper depths of [`HeadLevel`].
//!
//! [PPP07 §3.4.4] turns an IPS into an intraprocedural path by inlining the callee at the call it
//! takes: the caller's *supergraph* has the callee's paths in it, and its Ball–Larus numbering
//! numbers the IPSs. §3.4.5 avoids the inlining with a duplicate of the callee that hands its path
//! register back to the caller. Here no callee is duplicated: every instrumented function
//! *publishes* the Ball–Larus ID of its first path (its *head*) when it returns, and the caller
//! adds it to its own ID as one more choice on the path — at each call `c` the supergraph has
//! `radix(c)` parallel edges, one per head the callee can publish, plus one for a callee that
//! publishes none (a host function, a function without probes). A supergraph path's ID is
//!
//! ```text
//! S = P + paths · key,   key = (…((d₁ · R₂ + d₂) · R₃ + d₃)…) · Rₙ + dₙ
//! ```
//!
//! where `P` is the Ball–Larus ID of the caller's path, `paths` the number of its paths, and
//! `d₁ … dₙ` the digits of the calls on the path in order, `Rᵢ` their radices (a mixed-radix
//! number). `S` determines the path and every call's head, hence every depth-1 IPS the path roots
//! ([`crate::ips::depth_one`]); a function's IDs are fewer than `paths` times the largest product of
//! radices along one path ([`max_radix_product`]), which must fit in 64 bits.
//!
//! A head is always a path that starts at the function's entry; those are the IDs `base` to
//! `base + n − 1` of the Ball–Larus numbering ([`entry_paths`]), and only they take room. Heads are
//! published in one *head space* for the module: function `g`'s entry path `Q` is
//! `offset(g) + (Q − base(g)) + 1`. A direct call of an instrumented function, which always takes the call and
//! publishes, reads its digit as `head − offset(g) − 1`, the path less `base(g)` (radix: `g`'s
//! entry paths; none for a function of one); any other call (indirect, or of a function that may call back)
//! reads `head + 1` (radix: the size of the space it may reach + 2), where 0 means that no
//! instrumented function took the call and 1 that one did without publishing. The space an indirect
//! call may reach can be the part of the whole that starts after some `base` (the functions of the
//! call's type, which alone it can call): a head published there is then read as `head − base + 1`.
//! A call of a host function that never calls back adds no digit: its head is none.
//!
//! Where `paths` times the products of radices would pass 2^64, some calls put their digits in
//! further words, the *high keys* (at most [`max_high_words`]), each a mixed-radix number of its
//! own calls' digits in call order as the key is of the others': the counted ID is then `S` with
//! the high keys, which the path (named by `S`) and the keys determine, each within 64 bits
//! ([`CallDigit::word`], [`call_digits`]). A call that fits in no word is *dropped*: it adds no
//! digit.

mod digit_table;
mod preferential;
mod taken;

pub use digit_table::{DigitWeights, HashedWeights};
pub use preferential::{CallsByBlock, InterestingPath, SupergraphPpp, MAX_DIGIT_WEIGHTS};
pub use taken::{HeadNames, Taken};

use crate::dag::Dag;
use crate::numbering::Numbering;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How one call's digit is read: `callee` for a direct call of an instrumented function (the digit
/// is the path its head is); otherwise `radix` 1 for a call that adds none (a host function that
/// never calls back: no head) and more for a call whose head is read in the part of the module's
/// head space that starts after `base` (the digit of a head `v` published there is `v − base + 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallDigit {
    pub radix: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callee: Option<u32>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub base: u64,
    /// The call adds no digit, though its callee may publish a head: the function's IDs would not
    /// fit in the words it may have ([`max_high_words`] + 1) with it. The segment each of its runs roots is not
    /// counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dropped: bool,
    /// The word the call adds its digit to: 0 for the key, `w` for high key `w` (always 0 with
    /// `dropped`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub word: u8,
}

/// The most high keys a function's counted IDs may have besides the key.
pub const MAX_HIGH_WORDS: u8 = 255;

/// The words of high keys times the calls of a function that [`max_high_words`] allows: each high
/// key is a local live across every call, which the compiler spills and reloads around each, and
/// whose live ranges it holds in memory while it compiles the function (Wasmtime compiling Yosys
/// ran out of 24 GiB when its functions of thousands of calls could have up to 254 high keys).
pub const MAX_WORD_CALLS: usize = 1 << 16;

/// The most high keys a function of `calls` calls may have: [`MAX_WORD_CALLS`] over its calls,
/// at least 15 and at most [`MAX_HIGH_WORDS`].
pub fn max_high_words(calls: usize) -> u8 {
    (MAX_WORD_CALLS / calls.max(1)).clamp(15, usize::from(MAX_HIGH_WORDS)) as u8
}

impl CallDigit {
    /// Whether the call adds a digit to its caller's supergraph path (a dropped call's radix is 1).
    pub fn adds_digit(&self) -> bool {
        self.radix > 1
    }

    /// The call's radix in word `word` (0: the key; 1 where the call adds its digit to another).
    pub fn radix_in(&self, word: u8) -> u64 {
        if self.word == word {
            self.radix
        } else {
            1
        }
    }
}

fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// The supergraph numbering of one function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Supergraph {
    /// The function's Ball–Larus paths.
    pub paths: u64,
    /// Its paths from the entry, the only ones a head can be: `entry_paths` IDs from `entry_base`.
    pub entry_base: u64,
    pub entry_paths: u64,
    /// Its supergraph IDs: `paths` times the largest product of radices along a path.
    pub ids: u64,
    /// Where its heads start in the module's head space.
    pub head_offset: u64,
    /// The digit of every call, in operator order.
    pub calls: Vec<CallDigit>,
    /// For a function that may throw and makes calls: the key of a path that ended while one of
    /// its calls was unwinding, which never returned — the largest product of radices along a path,
    /// which no path's digits reach, so that its IDs (`paths` times this key + 1) name the path but
    /// no segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwound: Option<u64>,
    /// For segments of `k > 1` calls: the heads the function publishes at depths 1 to `k − 1`
    /// (see [`HeadLevel`]); its counted IDs then read the calls' heads of depth `k − 1`, or, where
    /// those would not fit in the words, shallower ones (`depths`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<HeadLevel>,
    /// For segments of `k > 1` calls: for every call, the depth of the head its digit in the
    /// counted IDs reads (`None`: none, the call is dropped); empty for `k = 1`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depths: Vec<Option<u8>>,
}

/// The heads of depth `d ≥ 1` of a function, for segments of more than one call: its first path
/// `Q` with the digits of what its calls entered, published as `(Q − entry_base) + entry_paths ·
/// key` in the module's space of depth `d` — which names every walk of at most `d` calls from the
/// activation's start ([`crate::ips::walk_tree`]). A walk of `d` calls reaches the `i`-th call of
/// the first path (from 0) with at most `d − i` calls left, so it needs that call's head of depth
/// `d − 1 − i` at most, and none from the `d`-th call on: a call at least `p` calls from the entry
/// on every path ([`first_positions`]) reads its callee's head of depth `d − 1 − p`, and none when
/// `p ≥ d`. A head of depth 0 is the first path alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadLevel {
    /// Where the function's heads of this depth start in the space of the depth.
    pub offset: u64,
    /// Keys per path from the entry: the largest product of this depth's radices along a path, and
    /// one more for a function that may throw (the key of a first path that ended while a call
    /// unwound, which names no walk).
    pub keys: u64,
    /// The digit of every call at this depth, in operator order, read in the space of the depth
    /// in `depths` (radix 1 for a call that reads none).
    pub calls: Vec<CallDigit>,
    /// For every call, the depth of the head it reads: `d − 1 − p` at most, shallower where the
    /// function's heads would not fit in their share of the space (`None`: none, a walk of this
    /// depth never reaches it, or the call is dropped).
    pub depths: Vec<Option<u8>>,
}

/// For every block of `dag` (by its ID), the fewest calls (`calls` by block) before it on a path
/// that starts at the function's entry; `None` for a block no such path reaches.
pub fn first_positions(dag: &Dag, calls: &[u32]) -> Vec<Option<u32>> {
    let mut best: Vec<Option<u32>> = vec![None; dag.num_nodes() as usize];
    let entry = dag.entry_block() as usize;
    if entry < best.len() {
        best[entry] = Some(0);
    }
    let out = dag.out_edges();
    for v in dag.topological_order() {
        let (Some(here), Some(&n)) = (best[v as usize], calls.get(v as usize)) else { continue };
        for &e in &out[v as usize] {
            let w = dag.edges[e as usize].to as usize;
            if w < calls.len() {
                let through = here.saturating_add(n);
                best[w] = Some(best[w].map_or(through, |b| b.min(through)));
            }
        }
    }
    best.truncate(calls.len());
    best
}

/// What a call's digit says of the callee's first path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Head {
    /// No instrumented function published a path for the call.
    None,
    /// The first path of the activation the call entered.
    Path { function: u32, path: u64 },
}

impl Supergraph {
    /// The Ball–Larus path and the key of supergraph ID `id`.
    pub fn split(&self, id: u64) -> (u64, u64) {
        (id % self.paths, id / self.paths)
    }

    /// How many high keys its counted IDs have (0: one word).
    pub fn high_words(&self) -> u8 {
        self.calls.iter().map(|c| c.word).max().unwrap_or(0)
    }

    /// Whether some call adds its digit to a high key.
    pub fn wide(&self) -> bool {
        self.high_words() > 0
    }

    /// The supergraph ID of path `path` with the calls' `digits` (each below its call's radix), or
    /// `None` when it is not below [`Supergraph::ids`] or a high key is not 0.
    pub fn id(&self, path: u64, digits: &[(u64, CallDigit)]) -> Option<u64> {
        let mut key = 0u128;
        for &(d, c) in digits {
            if d >= c.radix || (c.word > 0 && d != 0) {
                return None;
            }
            if c.word > 0 {
                continue;
            }
            key = key.checked_mul(u128::from(c.radix))?.checked_add(u128::from(d))?;
        }
        let id = key.checked_mul(u128::from(self.paths))?.checked_add(u128::from(path))?;
        u64::try_from(id).ok().filter(|&id| id < self.ids)
    }
}

/// The digits of `key` for calls of radices `radices` (in call order), or `None` when `key` is not
/// below their product.
pub fn digits(mut key: u64, radices: &[u64]) -> Option<Vec<u64>> {
    let mut out = vec![0; radices.len()];
    for (d, &r) in out.iter_mut().zip(radices).rev() {
        if r == 0 {
            return None;
        }
        *d = key % r;
        key /= r;
    }
    (key == 0).then_some(out)
}

/// The digits of calls `on` (read as `calls` says, in call order) in key `key` and high keys `high`
/// (those past the last given are 0), or `None` when a key is not below its calls' product of
/// radices.
pub fn call_digits(key: u64, high: &[u64], on: &[usize], calls: &[CallDigit]) -> Option<Vec<u64>> {
    let words = on.iter().map(|&c| usize::from(calls[c].word)).max().unwrap_or(0).max(high.len());
    let mut out = vec![0; on.len()];
    for w in 0..=words {
        let value = if w == 0 { key } else { high.get(w - 1).copied().unwrap_or(0) };
        let radices: Vec<u64> = on.iter().map(|&c| calls[c].radix_in(w as u8)).collect();
        for ((o, d), &c) in out.iter_mut().zip(digits(value, &radices)?).zip(on) {
            if usize::from(calls[c].word) == w {
                *o = d;
            }
        }
    }
    Some(out)
}

/// The largest product of `weight` (by block) over the blocks of one path of `dag`, saturating at
/// `u128::MAX`.
pub fn max_radix_product(dag: &Dag, weight: &[u128]) -> u128 {
    heaviest_path(dag, weight).0
}

/// A path of `dag` with the largest product of `weight` (by block) over its blocks: the product,
/// saturating at `u128::MAX`, and the blocks, in order.
pub fn heaviest_path(dag: &Dag, weight: &[u128]) -> (u128, Vec<u32>) {
    let order = dag.topological_order();
    let out = dag.out_edges();
    let mut best = vec![0u128; dag.num_nodes() as usize];
    let mut from = vec![u32::MAX; dag.num_nodes() as usize];
    best[dag.entry() as usize] = 1;
    for &v in &order {
        let here = best[v as usize];
        if here == 0 {
            continue;
        }
        for &e in &out[v as usize] {
            let w = dag.edges[e as usize].to;
            let times = weight.get(w as usize).copied().unwrap_or(1);
            let through = here.saturating_mul(times);
            if through > best[w as usize] {
                best[w as usize] = through;
                from[w as usize] = v;
            }
        }
    }
    let mut blocks = Vec::new();
    let mut v = from[dag.exit() as usize];
    while v != u32::MAX && v != dag.entry() {
        blocks.push(v);
        v = from[v as usize];
    }
    blocks.reverse();
    (best[dag.exit() as usize].max(1), blocks)
}

/// The paths of a function that start at its entry: the first ID and how many (the IDs of the
/// paths through the entry edge, `s → entry`, which is the DAG's first).
pub fn entry_paths(dag: &Dag, numbering: &Numbering) -> (u64, u64) {
    (numbering.val[0], numbering.num_paths[dag.entry_block() as usize])
}

/// Where a function's heads lie in the head space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heads {
    pub function: u32,
    pub offset: u64,
    pub entry_base: u64,
    pub entry_paths: u64,
    /// Heads per path from the entry: 1 at depth 0, a [`HeadLevel`]'s `keys` deeper. The head
    /// `(Q − entry_base) + entry_paths · key` is read as the path `entry_base +` that.
    pub keys: u64,
}

impl Heads {
    /// The heads the function may publish.
    pub fn size(&self) -> u64 {
        self.entry_paths.saturating_mul(self.keys)
    }

    /// The first path and the key of head `path` (as [`HeadSpace::read`] gives it).
    pub fn split(&self, path: u64) -> Option<(u64, u64)> {
        let u = path.checked_sub(self.entry_base)?;
        (u < self.size() && self.entry_paths > 0)
            .then(|| (self.entry_base + u % self.entry_paths, u / self.entry_paths))
    }
}

/// The module's head space: where each instrumented function's heads start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeadSpace {
    /// By offset.
    starts: Vec<Heads>,
    /// By function.
    functions: HashMap<u32, Heads>,
}

impl HeadSpace {
    /// The space of `functions`.
    pub fn new(functions: impl IntoIterator<Item = Heads>) -> HeadSpace {
        let mut starts: Vec<Heads> = functions.into_iter().collect();
        starts.sort_unstable_by_key(|h| (h.offset, h.function));
        let functions = starts.iter().map(|h| (h.function, *h)).collect();
        HeadSpace { starts, functions }
    }

    /// The head published as `v` (`offset + (path − base) + 1`).
    pub fn head(&self, v: u64) -> Option<Head> {
        let i = self.starts.partition_point(|h| h.offset < v);
        let h = self.starts.get(i.checked_sub(1)?)?;
        let d = v - h.offset - 1;
        (d < h.size()).then(|| Head::Path { function: h.function, path: h.entry_base + d })
    }

    /// Where `function`'s heads lie.
    pub fn of(&self, function: u32) -> Option<&Heads> {
        self.functions.get(&function)
    }

    /// What digit `d` of a call read as `call` says.
    pub fn read(&self, call: CallDigit, d: u64) -> Option<Head> {
        match (call.callee, d) {
            (_, _) if d >= call.radix => None,
            (Some(function), d) => {
                let base = self.functions.get(&function).map_or(0, |h| h.entry_base);
                Some(Head::Path { function, path: base.checked_add(d)? })
            }
            (None, 0 | 1) => Some(Head::None),
            (None, d) => self.head((d - 1).checked_add(call.base)?),
        }
    }

    /// The digits of a call read as `call` that say `head` ([`HeadSpace::read`] backwards): none,
    /// one, or for a call read in the space and no head, both 0 and 1.
    pub fn digits_of(&self, call: CallDigit, head: Head) -> Vec<u64> {
        let found: Vec<u64> = match (call.callee, head) {
            (Some(f), Head::Path { function, path }) if f == function => {
                let base = self.functions.get(&function).map_or(0, |h| h.entry_base);
                path.checked_sub(base).into_iter().collect()
            }
            (Some(_), _) => Vec::new(),
            (None, Head::None) => vec![0, 1],
            (None, Head::Path { function, path }) => (self.functions.get(&function))
                .and_then(|h| {
                    let d = path.checked_sub(h.entry_base).filter(|&d| d < h.size())?;
                    // Published as `offset + d + 1`, read as that − base + 1.
                    (h.offset + d + 1).checked_sub(call.base)?.checked_add(1)
                })
                .into_iter()
                .collect(),
        };
        found.into_iter().filter(|&d| d < call.radix && self.read(call, d) == Some(head)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfg::{Cfg, CfgEdge, Succ};
    use crate::dag::LoopCut;

    #[test]
    fn ids_split_into_the_path_and_the_digits() {
        let calls = vec![
            CallDigit { radix: 3, callee: Some(7), base: 0, dropped: false, word: 0 },
            CallDigit { radix: 5, callee: None, base: 0, dropped: false, word: 0 },
        ];
        let sg = Supergraph {
            paths: 4,
            entry_base: 0,
            entry_paths: 4,
            ids: 4 * 15,
            head_offset: 0,
            calls: calls.clone(),
            unwound: None,
            levels: Vec::new(),
            depths: Vec::new(),
        };
        let mut seen = std::collections::HashSet::new();
        for p in 0..4 {
            for a in 0..3 {
                for b in 0..5 {
                    let id = sg.id(p, &[(a, calls[0]), (b, calls[1])]).expect("in range");
                    assert!(seen.insert(id), "IDs are unique");
                    let (path, key) = sg.split(id);
                    assert_eq!((path, digits(key, &[3, 5])), (p, Some(vec![a, b])));
                }
            }
        }
        assert_eq!(seen.len(), 60);
        assert_eq!(sg.id(0, &[(3, calls[0])]), None, "a digit past its radix");
        assert_eq!(digits(15, &[3, 5]), None, "a key past the product");
    }

    /// Calls of the key and of two high keys interleaved: every combination of digits gives keys
    /// of their own, which read back into the same digits; one word's key past its calls' product
    /// is refused.
    #[test]
    fn digits_of_several_words_read_back() {
        let call = |radix, word| CallDigit { radix, callee: None, base: 0, dropped: false, word };
        let calls = [call(3, 0), call(4, 1), call(5, 0), call(2, 1), call(1, 0), call(3, 2)];
        let on = [0, 1, 2, 3, 4, 5];
        let mut seen = std::collections::HashSet::new();
        for a in 0..3 {
            for b in 0..4 {
                for c in 0..5 {
                    for d in 0..2 {
                        for f in 0..3 {
                            let keys = (a * 5 + c, [b * 2 + d, f]);
                            assert!(seen.insert(keys));
                            assert_eq!(call_digits(keys.0, &keys.1, &on, &calls), Some(vec![a, b, c, d, 0, f]));
                        }
                    }
                }
            }
        }
        assert_eq!(seen.len(), 3 * 4 * 5 * 2 * 3);
        assert_eq!(call_digits(15, &[0, 0], &on, &calls), None, "the key past 3 · 5");
        assert_eq!(call_digits(0, &[8, 0], &on, &calls), None, "the first high key past 4 · 2");
        assert_eq!(call_digits(0, &[0, 3], &on, &calls), None, "the second high key past 3");
        // High keys not passed are 0.
        assert_eq!(call_digits(7, &[5], &on, &calls), Some(vec![1, 2, 2, 1, 0, 0]));
        // A path that takes the calls of the key only reads high keys of 0.
        assert_eq!(call_digits(7, &[], &[0, 2], &calls), Some(vec![1, 2]));
        assert_eq!(call_digits(7, &[0, 0], &[0, 2], &calls), Some(vec![1, 2]));
        assert_eq!(call_digits(7, &[1], &[0, 2], &calls), None);
        assert_eq!(call_digits(7, &[0, 1], &[0, 2], &calls), None);
        assert_eq!(call_digits(7, &[0, 0, 1], &on, &calls), None, "a high key no call adds to");
        // The ID names no digit of the high key but 0.
        let sg = Supergraph {
            paths: 2,
            entry_base: 0,
            entry_paths: 2,
            ids: 2 * 15,
            head_offset: 0,
            calls: calls.to_vec(),
            unwound: None,
            levels: Vec::new(),
            depths: Vec::new(),
        };
        assert_eq!(sg.id(1, &[(2, calls[0]), (0, calls[1]), (4, calls[2])]), Some((2 * 5 + 4) * 2 + 1));
        assert_eq!(sg.id(1, &[(2, calls[0]), (1, calls[1]), (4, calls[2])]), None);
        assert_eq!(sg.id(1, &[(2, calls[0]), (4, calls[2]), (1, calls[5])]), None);
        assert_eq!((sg.high_words(), sg.wide()), (2, true));
    }

    #[test]
    fn the_largest_product_is_that_of_the_heaviest_path() {
        // 0 → {1, 2} → 3; block weights 1: 4, 2: 7, 3: 2.
        let edges =
            [(0, Succ::Block(1)), (0, Succ::Block(2)), (1, Succ::Block(3)), (2, Succ::Block(3)), (3, Succ::Exit)];
        let cfg = Cfg::from_edges(4, 0, edges.iter().map(|&(from, to)| CfgEdge { from, to }).collect());
        let dag = Dag::build(&cfg, LoopCut::Headers, &[]);
        assert_eq!(max_radix_product(&dag, &[1, 4, 7, 2]), 14);
        assert_eq!(max_radix_product(&dag, &[1, 1, 1, 1]), 1);
        assert_eq!(max_radix_product(&dag, &[1, u128::MAX, 2, 2]), u128::MAX);
        assert_eq!(heaviest_path(&dag, &[1, 4, 7, 2]), (14, vec![0, 2, 3]));
        assert_eq!(heaviest_path(&dag, &[1, 9, 7, 2]), (18, vec![0, 1, 3]));
        // Calls by block 1, 0, 2, 0: block 3 is one call from the entry through block 1.
        assert_eq!(first_positions(&dag, &[1, 0, 2, 0]), vec![Some(0), Some(1), Some(1), Some(1)]);
        assert_eq!(first_positions(&dag, &[0, 3, 2, 0]), vec![Some(0), Some(0), Some(0), Some(2)]);
    }

    #[test]
    fn heads_are_read_from_their_space() {
        let heads =
            |function, offset, entry_base, entry_paths| Heads { function, offset, entry_base, entry_paths, keys: 1 };
        // Function 5's paths from its entry are 4 to 13.
        let space = HeadSpace::new([heads(3, 0, 0, 2), heads(5, 2, 4, 10), heads(9, 12, 0, 1)]);
        assert_eq!(space.head(1), Some(Head::Path { function: 3, path: 0 }));
        assert_eq!(space.head(2), Some(Head::Path { function: 3, path: 1 }));
        assert_eq!(space.head(3), Some(Head::Path { function: 5, path: 4 }));
        assert_eq!(space.head(12), Some(Head::Path { function: 5, path: 13 }));
        assert_eq!(space.head(13), Some(Head::Path { function: 9, path: 0 }));
        assert_eq!(space.head(14), None);
        assert_eq!(space.head(0), None);
        let direct = CallDigit { radix: 3, callee: Some(5), base: 0, dropped: false, word: 0 };
        let anywhere = CallDigit { radix: 15, callee: None, base: 0, dropped: false, word: 0 };
        let host = CallDigit { radix: 1, callee: None, base: 0, dropped: false, word: 0 };
        // Function 5's part of the space: heads 3 to 12.
        let typed = CallDigit { radix: 12, callee: None, base: 2, dropped: false, word: 0 };
        assert_eq!(space.read(direct, 2), Some(Head::Path { function: 5, path: 6 }));
        assert_eq!(space.read(direct, 3), None);
        assert_eq!(
            space.read(CallDigit { radix: 1, callee: Some(9), base: 0, dropped: false, word: 0 }, 0),
            Some(Head::Path { function: 9, path: 0 })
        );
        assert_eq!(space.read(host, 0), Some(Head::None));
        assert_eq!(space.read(anywhere, 0), Some(Head::None));
        assert_eq!(space.read(anywhere, 1), Some(Head::None));
        assert_eq!(space.read(anywhere, 14), Some(Head::Path { function: 9, path: 0 }));
        assert_eq!(space.read(typed, 0), Some(Head::None));
        assert_eq!(space.read(typed, 1), Some(Head::None));
        assert_eq!(space.read(typed, 2), Some(Head::Path { function: 5, path: 4 }));
        assert_eq!(space.read(typed, 11), Some(Head::Path { function: 5, path: 13 }));
        assert_eq!(space.read(typed, 12), None);
        // Every digit of every call is found again from the head it says, and only it.
        for call in [direct, anywhere, host, typed] {
            for d in 0..call.radix {
                let head = space.read(call, d).expect("a digit below the radix says something");
                let found = space.digits_of(call, head);
                assert!(found.contains(&d), "{call:?} {d} {head:?} {found:?}");
                assert!(found.iter().all(|&e| space.read(call, e) == Some(head)));
            }
        }
        assert_eq!(space.digits_of(anywhere, Head::None), vec![0, 1]);
        assert_eq!(space.digits_of(direct, Head::Path { function: 3, path: 0 }), Vec::<u64>::new());
        assert_eq!(space.digits_of(typed, Head::Path { function: 3, path: 0 }), Vec::<u64>::new());
    }
}
