//! The array sink: `count[r]++` in a dense array of little-endian `u64` counters in the profiler's
//! memory, one per path ID [BL96]. Loop and run counters add to the same array.

use super::path_sink::{PathEnd, PathSink};
use crate::instrument::emit::Emitter;
use wasm_encoder::{Instruction, MemArg};

/// A function's array of counters, at byte `offset` of the profiler's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ArraySink {
    pub offset: u32,
}

impl PathSink for ArraySink {
    fn record(&self, e: &mut Emitter, _: PathEnd) {
        e.count_in_array(self.offset);
    }
}

impl Emitter<'_> {
    /// `counter[r] += 1` in the array at `offset`.
    pub fn count_in_array(&mut self, offset: u32) {
        self.r_as_i32();
        self.add_in_array(offset, &[Instruction::I64Const(1)]);
    }

    /// `counter[id] += value` in the array at `offset`, for the path ID (`i32`) on the stack.
    pub fn add_in_array(&mut self, offset: u32, value: &[Instruction]) {
        let arg = MemArg { offset: offset as u64, align: 3, memory_index: self.memory };
        self.f.instruction(&Instruction::I32Const(3));
        self.f.instruction(&Instruction::I32Shl);
        self.f.instruction(&Instruction::LocalTee(self.a));
        self.f.instruction(&Instruction::LocalGet(self.a));
        self.f.instruction(&Instruction::I64Load(arg));
        for v in value {
            self.f.instruction(v);
        }
        self.f.instruction(&Instruction::I64Add);
        self.f.instruction(&Instruction::I64Store(arg));
    }

    /// `counter[path] += value on the stack`, at a constant address, in the array that loop and run
    /// counters add to.
    pub fn add_to_counter(&mut self, path: u64, value: &[Instruction]) {
        let offset = u64::from(self.array) + 8 * path;
        self.add_to_word64(offset, value);
    }
}
