//! How a call of a function instrumented for `ippp` reads its callee's heads into digits
//! [PPP07 §3.4.3–3.4.5]: the word each key reads, what is taken off the head, and the weights of
//! the digit's preferential ID ([`super::SupergraphSink`]).

use crate::instrument::emit::Emitter;
use crate::instrument::layout::Layout;
use pathprof_core::ips::MAX_DEPTH;
use pathprof_core::supergraph::DigitWeights;
use wasm_encoder::{Instruction, MemArg};

/// The digit a call adds: `head − minus` (modulo 2^64), less `rebase` when the head is published
/// (above 0), below `radix` — `minus` is the callee's head offset + 1 for a direct call of an
/// instrumented function (the digit is its path), and −1 for a call read in the head space (0: no
/// instrumented function took it, 1: one did and has not published), whose part of the space starts
/// after `rebase`. With `restore`, the call puts back what the head word held before it armed it (a
/// head published for a caller of a function without probes that is still running). With
/// `weights`, where the weights that the digit adds to the preferential register lie among the
/// increment tables ([`Weights`]). For segments of `k > 1` calls,
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
    pub weights: Option<Weights>,
    pub heads: [Read; MAX_DEPTH - 1],
}

/// The weights of a call's digits among the increment tables (32 bits each; offsets from their
/// base), as [`DigitWeights`] has them: `n` + 1 by digit, the last 0, which every digit from `n` on
/// reads; or a cuckoo hash table, its first half's keys (64 bits each) at `keys`, its halves'
/// weights at `weights`, each of `2^bits` entries, a digit's entries found by `multipliers`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Weights {
    Direct { offset: u32, n: u32 },
    Hashed { bits: u32, multipliers: [u64; 2], keys: u32, weights: [u32; 2] },
}

impl Weights {
    /// Lays `table` out among the increment tables.
    pub(crate) fn place(table: &DigitWeights, layout: &mut Layout) -> Weights {
        match table {
            DigitWeights::Direct(t) => {
                Weights::Direct { offset: layout.table(32, t.iter().copied().chain([0])), n: t.len() as u32 }
            }
            DigitWeights::Hashed(t) => Weights::Hashed {
                bits: t.bits,
                multipliers: t.multipliers,
                keys: layout.table(64, t.keys.iter().copied()),
                weights: t.weights.each_ref().map(|w| layout.table(32, w.iter().copied())),
            },
        }
    }

    /// `q +=` the weight of the digit in local `value`: `weights[min(digit, n)]` from a direct
    /// table, the digit clamped first in 64 bits; from a hashed one, the first half's weight at the
    /// digit's first hash when the key there is the digit, else the second half's at its second.
    pub(super) fn add(self, e: &mut Emitter, value: u32) {
        let q = e.q.expect("a function with slots has a preferential register");
        let (offset, n) = match self {
            Weights::Direct { offset, n } => (offset, n),
            Weights::Hashed { bits, multipliers, keys, weights } => {
                // The entry of the digit in half h, scaled to `width` bytes.
                let entry = |e: &mut Emitter, h: usize, width: i32| {
                    e.f.instruction(&Instruction::LocalGet(value));
                    e.f.instruction(&Instruction::I64Const(multipliers[h] as i64));
                    e.f.instruction(&Instruction::I64Mul);
                    e.f.instruction(&Instruction::I64Const(i64::from(64 - bits)));
                    e.f.instruction(&Instruction::I64ShrU);
                    e.f.instruction(&Instruction::I32WrapI64);
                    e.f.instruction(&Instruction::I32Const(width.trailing_zeros() as i32));
                    e.f.instruction(&Instruction::I32Shl);
                };
                let at = |e: &Emitter, offset: u32, align: u32| MemArg {
                    offset: e.tables_base + u64::from(offset),
                    align,
                    memory_index: e.memory,
                };
                for (h, &half) in weights.iter().enumerate() {
                    entry(e, h, 4);
                    e.f.instruction(&Instruction::I32Load(at(e, half, 2)));
                }
                entry(e, 0, 8);
                e.f.instruction(&Instruction::I64Load(at(e, keys, 3)));
                e.f.instruction(&Instruction::LocalGet(value));
                e.f.instruction(&Instruction::I64Eq);
                e.f.instruction(&Instruction::Select);
                e.f.instruction(&Instruction::LocalGet(q));
                e.f.instruction(&Instruction::I32Add);
                e.f.instruction(&Instruction::LocalSet(q));
                return;
            }
        };
        e.f.instruction(&Instruction::LocalGet(value));
        e.f.instruction(&Instruction::I64Const(i64::from(n)));
        e.f.instruction(&Instruction::LocalGet(value));
        e.f.instruction(&Instruction::I64Const(i64::from(n)));
        e.f.instruction(&Instruction::I64LtU);
        e.f.instruction(&Instruction::Select);
        e.f.instruction(&Instruction::I32WrapI64);
        e.f.instruction(&Instruction::LocalSet(e.s));
        e.add_table_entry(offset, n, q, 32);
    }
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
