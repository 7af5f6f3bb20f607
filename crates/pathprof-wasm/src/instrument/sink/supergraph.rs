//! The supergraph sink of mode `ippp` [PPP07 §3.4.3–3.4.5]: a path end counts the function's
//! *supergraph* path — its Ball–Larus path combined with the first path of every call's callee
//! (see [`pathprof_core::supergraph`]) — in an array, a table or the host's table, as `bl` counts
//! its paths; and every function hands its own first path to the call that entered it.
//!
//! * At the entry, an activation takes its caller's call if the head word is armed
//!   ([`HEAD_ARMED`]), clearing it, so that its own callees do not take it.
//! * Before a call that adds a digit, the head word is armed; after it, the caller reads the head
//!   the callee published and adds it as one more digit to its key (`key = key · radix + digit`).
//!   In a module where a function without probes may stand between a call and its taker, the call
//!   then puts back what the word held before it was armed.
//! * At a path end, the activation's first path is kept; the supergraph ID `key · paths + r`
//!   replaces the register, which the inner sink counts, and the key starts again. A function whose
//!   supergraph IDs are too many for an array but its paths are not counts the IDs below its paths
//!   (its paths whose calls added no digit, or zeros) in an array and the others in a table.
//! * At the exit, an activation that took its call publishes its first path (`offset + path −
//!   entry_base + 1`).
//!
//! * With interesting segments, a function whose interesting supergraph paths have slots keeps a
//!   preferential register too [PPP07 §3.4.5 with §3.3]: its own edges add their weights on the
//!   chords, as in `ppp`, and a call adds its digit's weight from a table of the call's; a path end
//!   whose preferential ID indexes the slot of its supergraph ID counts there, any other as
//!   before.
//!
//! * For segments of `k > 1` calls, there are `k` head words, one per depth: the activation keeps
//!   a key per depth besides the counted one, reads into its key of depth `d` the head of the depth
//!   a walk of `d` calls needs of the callee (`HeadLevel`), and its counted key from word `k − 1`
//!   (or, for a call whose deepest head would not fit, a shallower one: `Supergraph::depths`); at
//!   the first path's end it keeps its head of every depth (`(path − entry_base) + entry_paths · key`), and at the exit it
//!   publishes each in its word. A call arms, clears and puts back all the words.
//!
//! * A function some of whose calls add their digits to high keys (those that do not fit in 64
//!   bits beside the others) keeps them in more locals, last: a call of high key `w` adds its digit
//!   there instead, and a path end some of whose high keys are not 0 writes them all, in order, to
//!   the profiler's memory ([`HIGH_KEYS`](crate::abi::HIGH_KEYS)), passes the ID to the host in one
//!   call ([`HIGH_KEY`](crate::abi::HIGH_KEY)), and sets them to 0. With slots, only a path end
//!   whose high keys are all 0 looks at them: the interesting supergraph IDs are of one word.
//!
//! Calls that add no digit (a callee of one path from its entry, a host function that never calls
//! back, a call dropped so that the IDs fit in their words) neither arm nor read the word; a function
//! none of whose calls adds one still takes its call and publishes its first path.

use super::array::ArraySink;
use super::path_sink::{PathEnd, PathSink};
use super::ppp::PppSink;
use super::table::TableSink;
use crate::abi::{HEAD_ARMED, HEAD_EMPTY, HEAD_WORD};
use crate::instrument::emit::Emitter;
use pathprof_core::ips::MAX_DEPTH;
use pathprof_core::supergraph::{Supergraph, MAX_HIGH_WORDS};
use wasm_encoder::{BlockType, Instruction, MemArg, ValType};

mod digit;

pub(crate) use digit::{Digit, Read, Weights};

/// The heads of depth `d ≥ 1` a function publishes: `first − entry_base + entry_paths · key`,
/// plus `publish` (its offset in the space + 1); `unwound` (read in a function that may throw) is
/// the key of a first path that ended while a call unwound, the depth's last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LevelSink {
    pub publish: u64,
    pub unwound: u64,
}

/// Where a function's supergraph paths are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SupergraphCounts {
    Array(ArraySink),
    Table(TableSink),
    Hash,
    /// The IDs below the function's paths in an array, the others in a table (or the host's).
    Split {
        array: ArraySink,
        table: Option<TableSink>,
    },
}

/// A function of a module instrumented for `ippp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SupergraphSink {
    pub counts: SupergraphCounts,
    /// The function's Ball–Larus paths.
    pub paths: u64,
    /// What its first path's ID becomes in the module's head space: `offset − entry_base + 1`
    /// (modulo 2^64) is added to it.
    pub publish: u64,
    /// Whether its path ends combine a key with the path: some call adds a digit, or it may throw
    /// (see `unwound`).
    pub digits: bool,
    /// Where its interesting supergraph paths count, when they count apart.
    pub slots: Option<PppSink>,
    /// How many high keys its calls add digits to.
    pub high: u8,
    /// For a function that may throw: the key of a path that ends while a call unwinds.
    pub unwound: Option<u64>,
    /// The head words (the depth of the segments counted), and the heads of depth 1 to
    /// `words − 1`, with the first path's place among those from the entry.
    pub words: usize,
    pub levels: [LevelSink; MAX_DEPTH - 1],
    pub entry_base: u64,
    pub entry_paths: u64,
}

/// The sink's locals: the inner sink's (a table's: `i64`, `i32`), then its own — the key of the
/// digits so far (`i64`), the first path (`i64`), whether it has ended (`i32`), whether the
/// activation took its caller's call (`i32`), what the head word held before the current call
/// armed it (`i64`; then the digit the call added) —, whether a call is under way (`i32`; 2 when
/// it saved the word) in a function that may throw, and the preferential register (`i32`) last in
/// a function with slots.
const LOCALS: [ValType; 9] = [
    ValType::I64,
    ValType::I32,
    ValType::I64,
    ValType::I64,
    ValType::I32,
    ValType::I32,
    ValType::I64,
    ValType::I32,
    ValType::I32,
];
/// The preferential register alone after the sink's own locals, without the call's flag.
const LOCALS_WITH_REGISTER: [ValType; 8] =
    [ValType::I64, ValType::I32, ValType::I64, ValType::I64, ValType::I32, ValType::I32, ValType::I64, ValType::I32];
/// With high keys (last), without slots: [`LOCALS`] to the call's flag, then the high keys; with
/// slots, all of [`LOCALS`] (the preferential register is its last), then the high keys
/// ([`LOCALS_DEEP`]'s first).
const LOCALS_WITH_HIGH: [ValType; 8 + MAX_HIGH_WORDS as usize] = locals_then_i64(8);
/// With more than one head word: all of [`LOCALS`], then for each depth `d` from 1 its key, then
/// for each its first head, then for each word past the first what it held before a call, then,
/// in a function with slots, the digit a call counted ([`SupergraphSink::digit_local`]), then the
/// high keys; the preferential register is [`LOCALS`]'s.
const LOCALS_DEEP: [ValType; 9 + 3 * (MAX_DEPTH - 1) + MAX_HIGH_WORDS as usize] = locals_then_i64(9);

/// The first `n` of [`LOCALS`], then `i64`s.
const fn locals_then_i64<const N: usize>(n: usize) -> [ValType; N] {
    let mut all = [ValType::I64; N];
    let mut i = 0;
    while i < n {
        all[i] = LOCALS[i];
        i += 1;
    }
    all
}
const KEY: u32 = 0;
const FIRST: u32 = 1;
const STARTED: u32 = 2;
const TOOK: u32 = 3;
const SAVED: u32 = 4;
const PENDING: u32 = 5;
/// The preferential register with more than one head word or with high keys.
const REGISTER_DEEP: u32 = 6;
/// The first of the locals past those of one head word.
const DEEP: u32 = 7;

impl SupergraphSink {
    /// The sink of a function with supergraph `s`, counting in `counts` and, when given, its
    /// interesting supergraph paths in `slots`.
    pub(crate) fn new(s: &Supergraph, counts: SupergraphCounts, slots: Option<PppSink>) -> SupergraphSink {
        // A function that may throw combines a key with its paths, if only to mark those that
        // ended unwound.
        let digits = s.calls.iter().any(|c| c.adds_digit()) || s.unwound.is_some();
        let publish = s.head_offset.wrapping_sub(s.entry_base).wrapping_add(1);
        let mut levels = [LevelSink { publish: 0, unwound: 0 }; MAX_DEPTH - 1];
        for (l, level) in levels.iter_mut().zip(&s.levels) {
            *l = LevelSink { publish: level.offset.wrapping_add(1), unwound: level.keys.saturating_sub(1) };
        }
        SupergraphSink {
            counts,
            paths: s.paths,
            publish,
            digits,
            high: s.high_words(),
            slots,
            unwound: s.unwound,
            words: s.levels.len() + 1,
            levels,
            entry_base: s.entry_base,
            entry_paths: s.entry_paths,
        }
    }

    /// The key of depth `d` (1 to `words − 1`), the first head of that depth, and what head word
    /// `d` held before a call.
    fn key_of(&self, e: &Emitter, d: usize) -> u32 {
        self.local(e, DEEP + d as u32 - 1)
    }

    fn first_of(&self, e: &Emitter, d: usize) -> u32 {
        if d == 0 {
            self.local(e, FIRST)
        } else {
            self.local(e, DEEP + (self.words + d) as u32 - 2)
        }
    }

    /// What is added to the first head of depth `d` to publish it.
    fn publish_of(&self, d: usize) -> u64 {
        if d == 0 {
            self.publish
        } else {
            self.levels[d - 1].publish
        }
    }

    fn saved_of(&self, e: &Emitter, w: usize) -> u32 {
        if w == 0 {
            self.local(e, SAVED)
        } else {
            self.local(e, DEEP + (2 * self.words + w) as u32 - 3)
        }
    }

    /// Head word `w`.
    fn word(e: &Emitter, w: usize) -> MemArg {
        MemArg { offset: u64::from(HEAD_WORD) + 8 * w as u64, align: 3, memory_index: e.memory }
    }

    /// Stores `value` in every head word.
    fn store_words(&self, e: &mut Emitter, value: i64) {
        for w in 0..self.words {
            let word = Self::word(e, w);
            e.f.instruction(&Instruction::I32Const(0));
            e.f.instruction(&Instruction::I64Const(value));
            e.f.instruction(&Instruction::I64Store(word));
        }
    }

    /// Puts back every head word from where a call saved it.
    fn restore_words(&self, e: &mut Emitter) {
        for w in 0..self.words {
            let (word, saved) = (Self::word(e, w), self.saved_of(e, w));
            e.f.instruction(&Instruction::I32Const(0));
            e.f.instruction(&Instruction::LocalGet(saved));
            e.f.instruction(&Instruction::I64Store(word));
        }
    }

    /// Pushes the digit that `read` makes of its head word: `head − minus`, less `rebase` when the
    /// head is published (above 0).
    fn push_digit(e: &mut Emitter, read: Read) {
        let word = Self::word(e, usize::from(read.word));
        e.f.instruction(&Instruction::I32Const(0));
        e.f.instruction(&Instruction::I64Load(word));
        e.f.instruction(&Instruction::I64Const(read.minus as i64));
        e.f.instruction(&Instruction::I64Sub);
        if read.rebase != 0 {
            // − (head > 0 ? rebase : 0)
            e.f.instruction(&Instruction::I64Const(read.rebase as i64));
            e.f.instruction(&Instruction::I64Const(0));
            e.f.instruction(&Instruction::I32Const(0));
            e.f.instruction(&Instruction::I64Load(word));
            e.f.instruction(&Instruction::I64Const(0));
            e.f.instruction(&Instruction::I64GtS);
            e.f.instruction(&Instruction::Select);
            e.f.instruction(&Instruction::I64Sub);
        }
    }

    fn inner(&self) -> &dyn PathSink {
        match &self.counts {
            SupergraphCounts::Array(a) => a,
            SupergraphCounts::Table(t) | SupergraphCounts::Split { table: Some(t), .. } => t,
            SupergraphCounts::Hash | SupergraphCounts::Split { table: None, .. } => &super::hash::HashSink,
        }
    }

    /// Local `i` of the sink's own, after the inner sink's.
    fn local(&self, e: &Emitter, i: u32) -> u32 {
        e.sink_local(self.inner().locals().len() as u32 + i)
    }

    fn head(e: &Emitter) -> MemArg {
        Self::word(e, 0)
    }

    /// Counts the supergraph path in the register where the function counts its paths.
    fn count(&self, e: &mut Emitter, end: PathEnd) {
        match self.counts {
            SupergraphCounts::Split { array, .. } => {
                // if r < paths { array } else { table }
                e.r_as_i64();
                e.f.instruction(&Instruction::I64Const(self.paths as i64));
                e.f.instruction(&Instruction::I64LtU);
                e.f.instruction(&Instruction::If(BlockType::Empty));
                array.record(e, end);
                e.f.instruction(&Instruction::Else);
                self.inner().record(e, end);
                e.f.instruction(&Instruction::End);
            }
            _ => self.inner().record(e, end),
        }
    }

    /// High key `w` (1 to `high`) among the sink's locals (the last `high`).
    fn high_local(&self, e: &Emitter, w: u8) -> u32 {
        e.sink_local(self.locals().len() as u32 - u32::from(self.high) + u32::from(w) - 1)
    }

    /// The key a call's counted digit goes to.
    fn counted_key(&self, e: &Emitter, d: &Digit) -> u32 {
        if d.high > 0 {
            self.high_local(e, d.high)
        } else {
            self.local(e, KEY)
        }
    }

    /// Sets every high key to 0.
    fn clear_high(&self, e: &mut Emitter) {
        for w in 1..=self.high {
            e.f.instruction(&Instruction::I64Const(0));
            e.f.instruction(&Instruction::LocalSet(self.high_local(e, w)));
        }
    }

    /// The preferential register among the sink's locals (the last, or [`REGISTER_DEEP`] with more
    /// than one head word or with high keys), for a function with slots.
    pub(crate) fn preferential_local(&self) -> Option<u32> {
        self.slots.map(|_| match (self.words, self.high) {
            (1, 0) => self.locals().len() as u32 - 1,
            _ => self.inner().locals().len() as u32 + REGISTER_DEEP,
        })
    }

    /// With more than one head word and slots, the digit a call counted, whose weight it adds.
    fn digit_local(&self, e: &Emitter) -> u32 {
        self.local(e, DEEP + 3 * (self.words as u32 - 1))
    }

    /// Keeps what the head words hold in the locals that save them.
    fn save_words(&self, e: &mut Emitter) {
        for w in 0..self.words {
            let (word, saved) = (Self::word(e, w), self.saved_of(e, w));
            e.f.instruction(&Instruction::I32Const(0));
            e.f.instruction(&Instruction::I64Load(word));
            e.f.instruction(&Instruction::LocalSet(saved));
        }
    }

    /// Whether the call adds a digit.
    fn adds(&self, digit: Option<Digit>) -> Option<Digit> {
        digit.filter(|d| if self.words > 1 { d.adds_any() } else { self.digits && d.radix > 1 })
    }

    /// The digits of a call with more than one head word: each key's digit read from its word,
    /// then the words put back when the call restores them.
    fn returned_deep(&self, e: &mut Emitter, d: Digit) {
        for depth in 1..=self.words {
            let read = d.read(depth, self.words);
            if read.radix <= 1 {
                continue;
            }
            let key = if depth == self.words { self.counted_key(e, &d) } else { self.key_of(e, depth) };
            e.f.instruction(&Instruction::LocalGet(key));
            e.f.instruction(&Instruction::I64Const(read.radix as i64));
            e.f.instruction(&Instruction::I64Mul);
            Self::push_digit(e, read);
            let weights = d.weights.filter(|_| depth == self.words);
            if weights.is_some() {
                e.f.instruction(&Instruction::LocalTee(self.digit_local(e)));
            }
            e.f.instruction(&Instruction::I64Add);
            e.f.instruction(&Instruction::LocalSet(key));
            if let Some(weights) = weights {
                weights.add(e, self.digit_local(e));
            }
        }
        if d.restore {
            self.restore_words(e);
        }
    }
}

impl PathSink for SupergraphSink {
    fn locals(&self) -> &'static [ValType] {
        let table = matches!(self.counts, SupergraphCounts::Table(_) | SupergraphCounts::Split { table: Some(_), .. });
        let all: &'static [ValType] = match (self.unwound.is_some(), self.slots.is_some()) {
            _ if self.words > 1 => {
                let own = 3 * (self.words - 1) + usize::from(self.high) + usize::from(self.slots.is_some());
                &LOCALS_DEEP[..DEEP as usize + 2 + own]
            }
            (_, true) if self.high > 0 => &LOCALS_DEEP[..LOCALS.len() + usize::from(self.high)],
            _ if self.high > 0 => &LOCALS_WITH_HIGH[..8 + usize::from(self.high)],
            (false, true) => &LOCALS_WITH_REGISTER,
            (true, true) => &LOCALS,
            (true, false) => &LOCALS[..8],
            (false, false) => &LOCALS[..7],
        };
        if table {
            all
        } else {
            &all[2..]
        }
    }

    /// Takes the caller's call when the head word is armed.
    fn enter(&self, e: &mut Emitter) {
        let (head, took) = (Self::head(e), self.local(e, TOOK));
        e.f.instruction(&Instruction::I32Const(0));
        e.f.instruction(&Instruction::I64Load(head));
        e.f.instruction(&Instruction::I64Const(HEAD_ARMED));
        e.f.instruction(&Instruction::I64Eq);
        e.f.instruction(&Instruction::LocalTee(took));
        e.f.instruction(&Instruction::If(BlockType::Empty));
        self.store_words(e, HEAD_EMPTY);
        e.f.instruction(&Instruction::End);
    }

    fn call(&self, e: &mut Emitter, digit: Option<Digit>) {
        let (restore, adds) = (digit.is_some_and(|d| d.restore), self.adds(digit).is_some());
        // The word is saved before a call that arms it, to be put back when the call returns, and
        // in a function that may throw before every call, to be put back at a landing the call
        // unwinds to (callees that unwound with it may have armed it or taken it).
        if restore && (adds || self.unwound.is_some()) {
            self.save_words(e);
        }
        if self.unwound.is_some() {
            // 2: under way, with the word saved.
            e.f.instruction(&Instruction::I32Const(1 + i32::from(restore)));
            e.f.instruction(&Instruction::LocalSet(self.local(e, PENDING)));
        }
        if adds {
            self.store_words(e, HEAD_ARMED);
        }
    }

    /// `key = key · radix + digit`, the digit read from the head word; with weights, the digit's
    /// weight added to the preferential register. The word is put back first when the call
    /// restores it, and the digit kept in the local that held it meanwhile.
    fn returned(&self, e: &mut Emitter, digit: Option<Digit>) {
        if self.unwound.is_some() {
            e.f.instruction(&Instruction::I32Const(0));
            e.f.instruction(&Instruction::LocalSet(self.local(e, PENDING)));
        }
        let Some(d) = self.adds(digit) else { return };
        if self.words > 1 {
            return self.returned_deep(e, d);
        }
        let (head, key, value) = (Self::head(e), self.counted_key(e, &d), self.local(e, SAVED));
        Self::push_digit(e, d.read(1, 1));
        if d.restore {
            e.f.instruction(&Instruction::I32Const(0));
            e.f.instruction(&Instruction::LocalGet(value));
            e.f.instruction(&Instruction::I64Store(head));
        }
        e.f.instruction(&Instruction::LocalSet(value));
        e.f.instruction(&Instruction::LocalGet(key));
        e.f.instruction(&Instruction::I64Const(d.radix as i64));
        e.f.instruction(&Instruction::I64Mul);
        e.f.instruction(&Instruction::LocalGet(value));
        e.f.instruction(&Instruction::I64Add);
        e.f.instruction(&Instruction::LocalSet(key));
        if let Some(weights) = d.weights {
            weights.add(e, value);
        }
    }

    fn record(&self, e: &mut Emitter, end: PathEnd) {
        let (key, first, started, took) =
            (self.local(e, KEY), self.local(e, FIRST), self.local(e, STARTED), self.local(e, TOOK));
        if let Some(unwound) = self.unwound {
            // A call under way at a path end unwound: the path never read its digits, and the
            // words are put back where the call saved them.
            let pending = self.local(e, PENDING);
            e.f.instruction(&Instruction::LocalGet(pending));
            e.f.instruction(&Instruction::If(BlockType::Empty));
            e.f.instruction(&Instruction::LocalGet(pending));
            e.f.instruction(&Instruction::I32Const(2));
            e.f.instruction(&Instruction::I32Eq);
            e.f.instruction(&Instruction::If(BlockType::Empty));
            self.restore_words(e);
            e.f.instruction(&Instruction::End);
            e.f.instruction(&Instruction::I64Const(unwound as i64));
            e.f.instruction(&Instruction::LocalSet(key));
            for d in 1..self.words {
                e.f.instruction(&Instruction::I64Const(self.levels[d - 1].unwound as i64));
                e.f.instruction(&Instruction::LocalSet(self.key_of(e, d)));
            }
            self.clear_high(e);
            e.f.instruction(&Instruction::I32Const(0));
            e.f.instruction(&Instruction::LocalSet(pending));
            e.f.instruction(&Instruction::End);
        }
        // The activation's first path, and its heads of every depth past 0.
        e.f.instruction(&Instruction::LocalGet(started));
        e.f.instruction(&Instruction::I32Eqz);
        e.f.instruction(&Instruction::If(BlockType::Empty));
        e.r_as_i64();
        e.f.instruction(&Instruction::LocalSet(first));
        for d in 1..self.words {
            // (r − entry_base) + entry_paths · key
            e.r_as_i64();
            e.f.instruction(&Instruction::I64Const(self.entry_base as i64));
            e.f.instruction(&Instruction::I64Sub);
            e.f.instruction(&Instruction::I64Const(self.entry_paths as i64));
            e.f.instruction(&Instruction::LocalGet(self.key_of(e, d)));
            e.f.instruction(&Instruction::I64Mul);
            e.f.instruction(&Instruction::I64Add);
            e.f.instruction(&Instruction::LocalSet(self.first_of(e, d)));
        }
        e.f.instruction(&Instruction::I32Const(1));
        e.f.instruction(&Instruction::LocalSet(started));
        e.f.instruction(&Instruction::End);
        for d in 1..self.words {
            e.f.instruction(&Instruction::I64Const(0));
            e.f.instruction(&Instruction::LocalSet(self.key_of(e, d)));
        }
        if self.digits {
            // r = key · paths + r; the next path's key starts at 0.
            e.f.instruction(&Instruction::LocalGet(key));
            e.f.instruction(&Instruction::I64Const(self.paths as i64));
            e.f.instruction(&Instruction::I64Mul);
            e.r_as_i64();
            e.f.instruction(&Instruction::I64Add);
            e.f.instruction(&Instruction::LocalSet(e.r));
            e.f.instruction(&Instruction::I64Const(0));
            e.f.instruction(&Instruction::LocalSet(key));
        }
        match self.slots {
            _ if self.high > 0 => {
                // if high_1 | … | high_n == 0 { count, in a slot if it has one } else { the host
                // counts (high_1, …, high_n, r); every high key = 0 }
                for w in 1..=self.high {
                    e.f.instruction(&Instruction::LocalGet(self.high_local(e, w)));
                    if w > 1 {
                        e.f.instruction(&Instruction::I64Or);
                    }
                }
                e.f.instruction(&Instruction::I64Eqz);
                e.f.instruction(&Instruction::If(BlockType::Empty));
                match self.slots {
                    Some(slots) => slots.record_or(e, |e| self.count(e, end)),
                    None => self.count(e, end),
                }
                e.f.instruction(&Instruction::Else);
                let locals: Vec<u32> = (1..=self.high).map(|w| self.high_local(e, w)).collect();
                e.call_with_high_keys(&locals);
                self.clear_high(e);
                e.f.instruction(&Instruction::End);
            }
            Some(slots) => slots.record_or(e, |e| self.count(e, end)),
            None => self.count(e, end),
        }
        if end == PathEnd::Exit {
            e.f.instruction(&Instruction::LocalGet(took));
            e.f.instruction(&Instruction::If(BlockType::Empty));
            for d in 0..self.words {
                let word = Self::word(e, d);
                e.f.instruction(&Instruction::I32Const(0));
                e.f.instruction(&Instruction::LocalGet(self.first_of(e, d)));
                e.f.instruction(&Instruction::I64Const(self.publish_of(d) as i64));
                e.f.instruction(&Instruction::I64Add);
                e.f.instruction(&Instruction::I64Store(word));
            }
            e.f.instruction(&Instruction::End);
        }
    }
}
