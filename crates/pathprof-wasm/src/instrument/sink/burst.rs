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
//!
//! Loop and run counters count in the array as `bl`'s do ([`loops`](crate::instrument::loops)), so
//! that outside a window a counted loop costs what it costs `bl`. The paths that a header counts on
//! its in-edges, or in a run, are streamed where they are counted ([`BurstSink::stream`]). A loop
//! counter's paths are not streamed as they end, which would cost every iteration what the counter
//! saves: each loop counter has a *mark*, a local holding the counter's value when its paths were
//! last streamed. A streaming activation streams the difference — the counter's path, then a
//! repeat — before each path it streams and before the counter is flushed at a call or an exit,
//! and a window that opens sets every mark to its counter. Between two iterations of different
//! counted loops a path ends that no loop counter counts, so at most one counter has paths pending
//! when they are streamed, and the stream holds the activation's paths in the order they ended,
//! item for item as `kbl`'s stream holds them.

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
        self.stream(e, end);
    }
}

impl BurstSink {
    /// What a path end does besides counting its path (in `r`) in the array: streams it while the
    /// activation's window is open, and opens or closes the window at a loop header.
    pub(crate) fn stream(&self, e: &mut Emitter, end: PathEnd) {
        let streaming = e.sink_local(STREAMING);
        e.f.instruction(&Instruction::LocalGet(streaming));
        e.f.instruction(&Instruction::If(BlockType::Empty));
        for i in 0..e.loops.len() {
            e.stream_loop_counter(self.layout, i);
        }
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
            for i in 0..e.loops.len() {
                e.f.instruction(&Instruction::LocalGet(e.first_loop_local + i as u32));
                e.f.instruction(&Instruction::LocalSet(e.first_mark_local + i as u32));
            }
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

    /// In a streaming activation: streams the paths that loop counter `i` counted since its mark
    /// (its path, and the rest as repetitions), and moves the mark to the counter.
    fn stream_loop_counter(&mut self, layout: StreamLayout, i: usize) {
        let (n, mark) = (self.first_loop_local + i as u32, self.first_mark_local + i as u32);
        let label = StreamItem::label(self.func_index, self.loops[i].path);
        self.f.instruction(&Instruction::LocalGet(n));
        self.f.instruction(&Instruction::LocalGet(mark));
        self.f.instruction(&Instruction::I64Ne);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.f.instruction(&Instruction::I64Const(label as i64));
        self.f.instruction(&Instruction::LocalTee(self.sink_local(ITEM)));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Load(self.slot(layout.last)));
        self.f.instruction(&Instruction::I64Eq);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.add_to_word64(u64::from(layout.run), &[Instruction::I64Const(1)]);
        self.f.instruction(&Instruction::Else);
        self.append_last(layout);
        self.f.instruction(&Instruction::End);
        let rest = [
            Instruction::LocalGet(n),
            Instruction::LocalGet(mark),
            Instruction::I64Sub,
            Instruction::I64Const(1),
            Instruction::I64Sub,
        ];
        self.add_to_word64(u64::from(layout.run), &rest);
        self.f.instruction(&Instruction::LocalGet(n));
        self.f.instruction(&Instruction::LocalSet(mark));
        self.f.instruction(&Instruction::End);
    }

    /// In a function streamed in bursts: the path in `r`, which an edge into an edge-counted header
    /// or a run counter has counted, streamed as the sink streams the paths it counts itself.
    pub fn stream_counted_path(&mut self) {
        if let Some(sink) = self.burst {
            sink.stream(self, PathEnd::Header);
        }
    }

    /// In a function streamed in bursts, before loop counter `i` is flushed (its paths added to
    /// the array and the counter emptied): a streaming activation streams its pending paths.
    pub fn stream_before_flush(&mut self, i: usize) {
        let Some(sink) = self.burst else { return };
        self.f.instruction(&Instruction::LocalGet(self.sink_local(STREAMING)));
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.stream_loop_counter(sink.layout, i);
        self.f.instruction(&Instruction::End);
    }

    /// In a function streamed in bursts, after loop counter `i` is flushed: its mark goes to 0
    /// with it.
    pub fn unmark_after_flush(&mut self, i: usize) {
        if self.burst.is_some() {
            self.f.instruction(&Instruction::I64Const(0));
            self.f.instruction(&Instruction::LocalSet(self.first_mark_local + i as u32));
        }
    }
}
