//! How a call of a function instrumented for `ippp` reads its callee's heads into digits
//! [PPP07 §3.4.3–3.4.5]: the word each key reads, what is taken off the head, and the weights of
//! the digit's preferential ID ([`super::SupergraphSink`]).

use pathprof_core::ips::MAX_DEPTH;

/// The digit a call adds: `head − minus` (modulo 2^64), less `rebase` when the head is published
/// (above 0), below `radix` — `minus` is the callee's head offset + 1 for a direct call of an
/// instrumented function (the digit is its path), and −1 for a call read in the head space (0: no
/// instrumented function took it, 1: one did and has not published), whose part of the space starts
/// after `rebase`. With `restore`, the call puts back what the head word held before it armed it (a
/// head published for a caller of a function without probes that is still running). With
/// `weights`, the offset from the increment tables' base of the `n` + 1 weights (32 bits each, the
/// last 0, which every digit from `n` on reads) that the digit adds to the preferential register. For segments of `k > 1` calls,
/// `radix`, `minus` and `rebase` read head word `word` (`k − 1`, or a shallower one where the
/// deepest head would not fit) into the counted key, and `heads[d − 1]` reads its word into the
/// key of depth `d`. With `high` above 0, the counted digit goes to that high key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Digit {
    pub radix: u64,
    pub minus: u64,
    pub rebase: u64,
    pub word: u8,
    pub high: u8,
    pub restore: bool,
    pub weights: Option<(u32, u32)>,
    pub heads: [Read; MAX_DEPTH - 1],
}

/// How a head word is read into a digit: word `word` (the head of that depth), `head − minus`,
/// less `rebase` when the head is published, below `radix` (1: no digit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Read {
    pub radix: u64,
    pub minus: u64,
    pub rebase: u64,
    pub word: u8,
}

impl Read {
    /// No digit.
    pub const NONE: Read = Read { radix: 1, minus: 0, rebase: 0, word: 0 };
}

impl Digit {
    /// The read into the key of depth `d` (1 to `words`, `words` being the counted key).
    pub(super) fn read(&self, d: usize, words: usize) -> Read {
        if d == words {
            Read { radix: self.radix, minus: self.minus, rebase: self.rebase, word: self.word }
        } else {
            self.heads[d - 1]
        }
    }

    /// Whether the call adds a digit to any key.
    pub(super) fn adds_any(&self) -> bool {
        self.radix > 1 || self.heads.iter().any(|h| h.radix > 1)
    }
}
