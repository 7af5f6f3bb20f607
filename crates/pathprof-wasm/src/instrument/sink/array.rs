//! The array sink: `count[r]++` in a dense array of little-endian `u64` counters in the profiler's
//! memory, one per path ID [BL96]. Loop and run counters add to the same array.

use super::{PathEnd, PathSink};
use crate::instrument::emit::Emitter;
use wasm_encoder::{Instruction, MemArg};

/// A function's array of counters, at byte `offset` of the profiler's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ArraySink {
    pub offset: u32,
}

impl PathSink for ArraySink {
    fn record(&self, e: &mut Emitter, _: PathEnd) {
        e.r_as_i32();
        e.add_in_array(self.offset, &[Instruction::I64Const(1)]);
    }
}

impl Emitter<'_> {
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

    /// `counter[path] += value on the stack`, at a constant address, in the function's array.
    pub fn add_to_counter(&mut self, path: u64, value: &[Instruction]) {
        let offset = u64::from(self.array_offset()) + 8 * path;
        self.add_to_word64(offset, value);
    }

    /// The byte offset of the function's array; only functions with an array sink count in one.
    pub fn array_offset(&self) -> u32 {
        match self.sink {
            super::Sink::Array(a) => a.offset,
            _ => unreachable!("only functions counted in an array have loop and run counters"),
        }
    }
}
