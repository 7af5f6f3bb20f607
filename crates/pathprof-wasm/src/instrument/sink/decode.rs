//! The path-decoding sink of event counting (`pd`) [EVT23 §4.2]: a table in the profiler's memory
//! holds every path's event vector (row `r`, one little-endian `u64` per event that occurs in the
//! function), and a path end adds the row of the path in the register to the function's event
//! counters. Path counts themselves are not kept: the events are.

use super::path_sink::{PathEnd, PathSink};
use crate::instrument::emit::Emitter;
use wasm_encoder::{Instruction, MemArg};

/// A function whose path ends add their event vectors: a counter per event that occurs in it (the
/// events of `mask`) at byte `counters` of the profiler's memory, and the table of rows as wide at
/// `table` from the tables' base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DecodeSink {
    pub counters: u32,
    pub mask: u64,
    pub table: u32,
}

impl PathSink for DecodeSink {
    fn record(&self, e: &mut Emitter, _: PathEnd) {
        let width = self.mask.count_ones();
        if width == 0 {
            return;
        }
        e.r_as_i32();
        let f = &mut *e.f;
        f.instruction(&Instruction::I32Const((width * 8) as i32));
        f.instruction(&Instruction::I32Mul);
        f.instruction(&Instruction::LocalSet(e.a));
        for j in 0..width {
            let row =
                MemArg { offset: e.tables_base + u64::from(self.table + 8 * j), align: 3, memory_index: e.memory };
            e.add_to_word64(u64::from(self.counters + 8 * j), &[Instruction::LocalGet(e.a), Instruction::I64Load(row)]);
        }
    }
}
