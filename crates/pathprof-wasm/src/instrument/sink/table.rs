//! The table sink: an open-addressing hash table of the function's own in the profiler's memory,
//! for functions whose paths are too many for a dense array [BL96 §3.3's hashed counters]. A slot
//! holds the path ID plus one (0: empty) and its count, both little-endian `u64`
//! ([`TABLE_SLOT_BYTES`]). A path end hashes its ID (Fibonacci hashing), probes at most
//! [`TABLE_PROBES`] consecutive slots, adds one where the ID is or claims the first empty slot, and
//! when all of them hold other paths passes the path to the host
//! ([`HostImport::CountPath`](crate::abi::HostImport)), which counts it exactly: counts are exact
//! whatever the table holds, and the host is called only for paths that do not fit. Bursty k-BLPP
//! counts in the same table ([`TableSink::count`]) and writes those paths to its stream instead
//! (see [`burst`](super::burst)).

use super::path_sink::{PathEnd, PathSink};
use crate::abi::{TABLE_PROBES, TABLE_SLOT_BYTES};
use crate::instrument::emit::{increment_word64_at, Emitter};
use wasm_encoder::{BlockType, Instruction, MemArg, ValType};

/// A function's table of `slots` slots (a power of two) at byte `offset` of the profiler's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TableSink {
    pub offset: u32,
    pub slots: u32,
}

/// The multiplier of Fibonacci hashing: 2^64 divided by the golden ratio.
const FIBONACCI: i64 = 0x9e37_79b9_7f4a_7c15_u64 as i64;

impl PathSink for TableSink {
    fn locals(&self) -> &'static [ValType] {
        // The key (path ID + 1) and the probes left.
        &[ValType::I64, ValType::I32]
    }

    fn record(&self, e: &mut Emitter, _: PathEnd) {
        let (key, left) = (e.sink_local(0), e.sink_local(1));
        self.count(e, key, left, |e| e.call_with_path());
    }
}

impl TableSink {
    /// Counts the path in `r` in the table, with `key` (`i64`) and `left` (`i32`) as its locals;
    /// `overflow` records a path that finds every probed slot taken.
    pub(crate) fn count(&self, e: &mut Emitter, key: u32, left: u32, overflow: impl FnOnce(&mut Emitter)) {
        let at = e.a;
        let slot = |offset: u32| MemArg { offset: u64::from(offset), align: 3, memory_index: e.memory };
        let (key_word, count_word) = (slot(self.offset), slot(self.offset + 8));
        let bits = self.slots.trailing_zeros();
        let mask = (self.slots * TABLE_SLOT_BYTES - 1) as i32;
        // key = r + 1; at = (key * FIBONACCI) >> (64 - bits) scaled to bytes.
        e.r_as_i64();
        let f = &mut *e.f;
        // `if (slot at holds key) { its count += 1 }`, leaving the `if` open.
        let if_found_add_one = |f: &mut wasm_encoder::Function| {
            f.instruction(&Instruction::LocalGet(at));
            f.instruction(&Instruction::I64Load(key_word));
            f.instruction(&Instruction::LocalGet(key));
            f.instruction(&Instruction::I64Eq);
            f.instruction(&Instruction::If(BlockType::Empty));
            increment_word64_at(f, at, count_word);
        };
        f.instruction(&Instruction::I64Const(1));
        f.instruction(&Instruction::I64Add);
        f.instruction(&Instruction::LocalTee(key));
        f.instruction(&Instruction::I64Const(FIBONACCI));
        f.instruction(&Instruction::I64Mul);
        f.instruction(&Instruction::I64Const(i64::from(64 - bits)));
        f.instruction(&Instruction::I64ShrU);
        f.instruction(&Instruction::I32WrapI64);
        f.instruction(&Instruction::I32Const(TABLE_SLOT_BYTES.trailing_zeros() as i32));
        f.instruction(&Instruction::I32Shl);
        f.instruction(&Instruction::LocalSet(at));
        // The common case, without a loop: the path is in the slot its ID hashes to.
        if_found_add_one(f);
        f.instruction(&Instruction::Else);
        f.instruction(&Instruction::I32Const(TABLE_PROBES as i32));
        f.instruction(&Instruction::LocalSet(left));
        f.instruction(&Instruction::Block(BlockType::Empty));
        f.instruction(&Instruction::Loop(BlockType::Empty));
        // The path's slot: one more.
        if_found_add_one(f);
        f.instruction(&Instruction::Br(2));
        f.instruction(&Instruction::End);
        // An empty slot: the path's from now on.
        f.instruction(&Instruction::LocalGet(at));
        f.instruction(&Instruction::I64Load(key_word));
        f.instruction(&Instruction::I64Eqz);
        f.instruction(&Instruction::If(BlockType::Empty));
        f.instruction(&Instruction::LocalGet(at));
        f.instruction(&Instruction::LocalGet(key));
        f.instruction(&Instruction::I64Store(key_word));
        f.instruction(&Instruction::LocalGet(at));
        f.instruction(&Instruction::I64Const(1));
        f.instruction(&Instruction::I64Store(count_word));
        f.instruction(&Instruction::Br(2));
        f.instruction(&Instruction::End);
        // The next slot, if probes are left.
        f.instruction(&Instruction::LocalGet(at));
        f.instruction(&Instruction::I32Const(TABLE_SLOT_BYTES as i32));
        f.instruction(&Instruction::I32Add);
        f.instruction(&Instruction::I32Const(mask));
        f.instruction(&Instruction::I32And);
        f.instruction(&Instruction::LocalSet(at));
        f.instruction(&Instruction::LocalGet(left));
        f.instruction(&Instruction::I32Const(1));
        f.instruction(&Instruction::I32Sub);
        f.instruction(&Instruction::LocalTee(left));
        f.instruction(&Instruction::BrIf(0));
        f.instruction(&Instruction::End);
        // Every probed slot holds another path.
        overflow(e);
        e.f.instruction(&Instruction::End);
        e.f.instruction(&Instruction::End);
    }
}
