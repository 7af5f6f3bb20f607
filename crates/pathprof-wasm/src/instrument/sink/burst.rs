//! The sink of bursty k-BLPP (`kbl:K:burst`): k-BLPP's stream [KBL13 §3] written only during
//! *bursts*, the windows a host timer opens and closes by setting and clearing the first word of the
//! profiler's memory ([`SAMPLE_FLAG`], the word PEP's timer sets [PEP05 §3.3]), as [KBL13 §6]
//! suggests after the bursting of calling-context profilers.
//!
//! Every path end counts its path in the function's array, as `bl` does: the Ball–Larus counts, the
//! k-IPF's roots, stay exact. An activation that is not streaming tests the flag at each path end
//! at a loop header (where PEP tests its own); when it finds a burst open, it starts a window of its
//! own: its entry marker, then the path that just ended. While its window is open every path end
//! is streamed as [`StreamSink`](super::StreamSink) streams it, and a path end at a loop header that
//! finds the burst over closes the window with [`StreamItem::Leave`]; the exit path closes it too.
//! The host folds a window as an activation of its own, so every sequence the stream holds is a
//! sequence of consecutive paths of one activation, and its count is at most the exact count.

use super::array::ArraySink;
use super::path_sink::{PathEnd, PathSink};
use super::stream::ITEM;
use crate::abi::{StreamItem, StreamLayout, SAMPLE_FLAG, STREAM_PATH_EXIT};
use crate::instrument::emit::Emitter;
use wasm_encoder::{BlockType, Instruction, MemArg, ValType};

/// A function whose paths are counted in an array and streamed during bursts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BurstSink {
    pub layout: StreamLayout,
    /// The array of every path's count.
    pub array: ArraySink,
}

/// The sink's locals: the stream's `i64` item, and an `i32` that is non-zero while the activation's
/// window is open.
const STREAMING: u32 = 1;

impl PathSink for BurstSink {
    fn locals(&self) -> &'static [ValType] {
        &[ValType::I64, ValType::I32]
    }

    fn record(&self, e: &mut Emitter, end: PathEnd) {
        self.array.record(e, end);
        let streaming = e.sink_local(STREAMING);
        e.f.instruction(&Instruction::LocalGet(streaming));
        e.f.instruction(&Instruction::If(BlockType::Empty));
        match end {
            PathEnd::Exit => e.stream_path(self.layout, STREAM_PATH_EXIT),
            PathEnd::Header => {
                e.stream_path(self.layout, 0);
                e.burst_flag();
                e.f.instruction(&Instruction::I32Eqz);
                e.f.instruction(&Instruction::If(BlockType::Empty));
                e.f.instruction(&Instruction::I64Const(StreamItem::Leave.encode() as i64));
                e.f.instruction(&Instruction::LocalSet(e.sink_local(ITEM)));
                e.append_last(self.layout);
                e.f.instruction(&Instruction::I32Const(0));
                e.f.instruction(&Instruction::LocalSet(streaming));
                e.f.instruction(&Instruction::End);
            }
        }
        if end == PathEnd::Header {
            e.f.instruction(&Instruction::Else);
            e.burst_flag();
            e.f.instruction(&Instruction::If(BlockType::Empty));
            e.enter_marker(self.layout);
            e.stream_path(self.layout, 0);
            e.f.instruction(&Instruction::I32Const(1));
            e.f.instruction(&Instruction::LocalSet(streaming));
            e.f.instruction(&Instruction::End);
        }
        e.f.instruction(&Instruction::End);
    }
}

impl Emitter<'_> {
    /// The burst flag, an `i32` on the stack: non-zero while a burst is open.
    fn burst_flag(&mut self) {
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Load(MemArg {
            offset: u64::from(SAMPLE_FLAG),
            align: 2,
            memory_index: self.memory,
        }));
    }
}
