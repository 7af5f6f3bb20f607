//! The emitter: the code of one function's path register, and of the words of the profiler's memory
//! that probes read and write.
//!
//! The register `r` holds the ID of the path so far: set at a path's start, incremented on chords
//! [BL96], read where the path ends by the function's [sink](super::sink), whose code the walk
//! emits through the emitter.

use super::sink::BurstProbes;
use crate::abi::{HIGH_KEY, HIGH_KEYS, SAMPLE_FLAG};
use crate::map::{LoopCounter, RunCounter};
use wasm_encoder::{Function, Instruction, MemArg};

/// An increment of the path registers: the Ball–Larus register's, and the preferential register's
/// (the second register of a preferentially counted function; 0 elsewhere).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Inc {
    pub bl: u64,
    pub ppp: u64,
}

impl Inc {
    /// `self - other`, register by register, modulo 2^64.
    pub fn minus(self, other: Inc) -> Inc {
        Inc { bl: self.bl.wrapping_sub(other.bl), ppp: self.ppp.wrapping_sub(other.ppp) }
    }
}

/// Where a `br_table` site's increments lie, relative to the tables' base: the Ball–Larus
/// register's, and the preferential register's (32-bit entries) when the function has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TableOffsets {
    pub bl: u32,
    pub ppp: Option<u32>,
}

/// Emits probe code into one function.
pub(crate) struct Emitter<'f> {
    pub f: &'f mut Function,
    /// The path register (`i32` or `i64`, as `bits` says).
    pub r: u32,
    /// The preferential register (`i32`), when the function has one.
    pub q: Option<u32>,
    /// `i32` scratch locals.
    pub s: u32,
    pub a: u32,
    pub bits: u32,
    /// The profiler's memory.
    pub memory: u32,
    /// The function's index (in the original module).
    pub func_index: u32,
    /// The function index of the profiler's host import, when the module has one.
    pub import: u32,
    /// Byte offset of the `br_table` increment tables.
    pub tables_base: u64,
    /// The first of the sink's own locals ([`PathSink::locals`]).
    pub first_sink_local: u32,
    /// Byte offset of the array that loop and run counters add to (see [`loops`](super::loops)).
    pub array: u32,
    /// Local of the first loop counter; the others follow.
    pub first_loop_local: u32,
    pub loops: &'f [LoopCounter],
    /// Local of the first run counter's length (`i64`); the others follow.
    pub first_run_local: u32,
    pub runs: &'f [RunCounter],
    /// In a function streamed in bursts: what its path ends and loop counters stream with.
    pub burst: Option<BurstProbes>,
    /// An `i32` local counting the iterations of a loop's copy without probes.
    pub copy_iterations: u32,
    /// With whole-function copies ([`switch`](super::switch)): the `i32` locals of the switch
    /// point to resume at, and of an `if`'s condition kept across a wrapper's end.
    pub resume: u32,
    pub kept_cond: u32,
}

/// `word += delta` for an `i32` word of memory at a constant address; with `atomic`, the store is an
/// atomic one.
pub(crate) fn add_to_word(f: &mut Function, word: MemArg, delta: i32, atomic: bool) {
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Load(word));
    f.instruction(&Instruction::I32Const(delta));
    f.instruction(&Instruction::I32Add);
    f.instruction(&if atomic { Instruction::I32AtomicStore(word) } else { Instruction::I32Store(word) });
}

/// `word += value on the stack` for the `u64` word `word` at a constant address.
pub(crate) fn add_to_word64(f: &mut Function, word: MemArg, value: &[Instruction]) {
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I64Load(word));
    for v in value {
        f.instruction(v);
    }
    f.instruction(&Instruction::I64Add);
    f.instruction(&Instruction::I64Store(word));
}

/// `word += 1` for the `u64` word `word` of the slot whose address is in local `address`.
pub(crate) fn increment_word64_at(f: &mut Function, address: u32, word: MemArg) {
    f.instruction(&Instruction::LocalGet(address));
    f.instruction(&Instruction::LocalGet(address));
    f.instruction(&Instruction::I64Load(word));
    f.instruction(&Instruction::I64Const(1));
    f.instruction(&Instruction::I64Add);
    f.instruction(&Instruction::I64Store(word));
}

/// The `i32` word at byte `offset` of memory `memory`.
pub(crate) fn word(memory: u32, offset: u32) -> MemArg {
    MemArg { offset: u64::from(offset), align: 2, memory_index: memory }
}

impl Emitter<'_> {
    /// Pushes the constant `v` of the register's width.
    fn konst(&mut self, v: u64) {
        if self.bits == 32 {
            self.f.instruction(&Instruction::I32Const(v as u32 as i32));
        } else {
            self.f.instruction(&Instruction::I64Const(v as i64));
        }
    }

    fn add_op(&mut self) {
        self.f.instruction(if self.bits == 32 { &Instruction::I32Add } else { &Instruction::I64Add });
    }

    /// `r = v` (and the preferential register's).
    pub fn set(&mut self, v: Inc) {
        self.konst(v.bl);
        self.f.instruction(&Instruction::LocalSet(self.r));
        if let Some(q) = self.q {
            self.f.instruction(&Instruction::I32Const(v.ppp as u32 as i32));
            self.f.instruction(&Instruction::LocalSet(q));
        }
    }

    /// `r += v` (and the preferential register's), nothing for 0.
    pub fn add(&mut self, v: Inc) {
        if v.bl != 0 {
            self.f.instruction(&Instruction::LocalGet(self.r));
            self.konst(v.bl);
            self.add_op();
            self.f.instruction(&Instruction::LocalSet(self.r));
        }
        if let Some(q) = self.q.filter(|_| v.ppp as u32 != 0) {
            self.f.instruction(&Instruction::LocalGet(q));
            self.f.instruction(&Instruction::I32Const(v.ppp as u32 as i32));
            self.f.instruction(&Instruction::I32Add);
            self.f.instruction(&Instruction::LocalSet(q));
        }
    }

    /// `r += table[min(index, n)]` (and the preferential register's from its table), leaving the
    /// index on the stack.
    pub fn add_from_table(&mut self, offsets: TableOffsets, n: u32) {
        self.f.instruction(&Instruction::LocalTee(self.s));
        let (r, bits) = (self.r, self.bits);
        self.add_table_entry(offsets.bl, n, r, bits);
        if let (Some(q), Some(offset)) = (self.q, offsets.ppp) {
            self.add_table_entry(offset, n, q, 32);
        }
    }

    /// `register += table[min(index in s, n)]`, for a register of `bits` and a table of entries of
    /// that width at `offset` from the tables' base.
    pub fn add_table_entry(&mut self, offset: u32, n: u32, register: u32, bits: u32) {
        let width = if bits == 32 { 2 } else { 3 };
        self.f.instruction(&Instruction::LocalGet(self.s));
        self.f.instruction(&Instruction::I32Const(n as i32));
        self.f.instruction(&Instruction::LocalGet(self.s));
        self.f.instruction(&Instruction::I32Const(n as i32));
        self.f.instruction(&Instruction::I32LtU);
        self.f.instruction(&Instruction::Select);
        self.f.instruction(&Instruction::I32Const(width));
        self.f.instruction(&Instruction::I32Shl);
        let arg = MemArg { offset: self.tables_base + offset as u64, align: width as u32, memory_index: self.memory };
        let load = if bits == 32 { Instruction::I32Load(arg) } else { Instruction::I64Load(arg) };
        self.f.instruction(&load);
        self.f.instruction(&Instruction::LocalGet(register));
        self.f.instruction(if bits == 32 { &Instruction::I32Add } else { &Instruction::I64Add });
        self.f.instruction(&Instruction::LocalSet(register));
    }

    /// Pushes `r` as an `i32` (array-counted paths have 32-bit IDs).
    pub fn r_as_i32(&mut self) {
        self.f.instruction(&Instruction::LocalGet(self.r));
        if self.bits == 64 {
            self.f.instruction(&Instruction::I32WrapI64);
        }
    }

    /// Pushes `r` as an `i64`.
    pub fn r_as_i64(&mut self) {
        self.f.instruction(&Instruction::LocalGet(self.r));
        if self.bits == 32 {
            self.f.instruction(&Instruction::I64ExtendI32U);
        }
    }

    /// The `i64` word at byte `slot` of the profiler's memory.
    pub fn slot(&self, slot: u32) -> MemArg {
        MemArg { offset: slot as u64, align: 3, memory_index: self.memory }
    }

    /// `word += value on the stack` for the `u64` word at byte `offset` of the profiler's memory.
    pub fn add_to_word64(&mut self, offset: u64, value: &[Instruction]) {
        add_to_word64(self.f, MemArg { offset, align: 3, memory_index: self.memory }, value);
    }

    /// The `i32` word of the host's flag ([`SAMPLE_FLAG`]), which PEP's timer and bursts' set.
    pub fn flag_word(&self) -> MemArg {
        word(self.memory, SAMPLE_FLAG)
    }

    /// Local `i` of the sink's own.
    pub fn sink_local(&self, i: u32) -> u32 {
        self.first_sink_local + i
    }

    /// Stores the high keys in `locals`, in order, at [`HIGH_KEYS`] of the profiler's memory, and
    /// calls the profiler's host import with the function's index marked [`HIGH_KEY`] and the path
    /// in `r`: one call for an ID of any number of words.
    pub fn call_with_high_keys(&mut self, locals: &[u32]) {
        for (w, &local) in locals.iter().enumerate() {
            self.f.instruction(&Instruction::I32Const(0));
            self.f.instruction(&Instruction::LocalGet(local));
            self.f.instruction(&Instruction::I64Store(self.slot(HIGH_KEYS + 8 * w as u32)));
        }
        self.f.instruction(&Instruction::I32Const((self.func_index | HIGH_KEY) as i32));
        self.r_as_i64();
        self.f.instruction(&Instruction::Call(self.import));
    }

    /// Calls the profiler's host import with the function's index and the path in `r`.
    pub fn call_with_path(&mut self) {
        self.f.instruction(&Instruction::I32Const(self.func_index as i32));
        self.r_as_i64();
        self.f.instruction(&Instruction::Call(self.import));
    }
}
