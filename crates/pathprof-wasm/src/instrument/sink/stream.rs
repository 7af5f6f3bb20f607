//! The stream sink of k-BLPP [KBL13 §3]: path ends append their path's label (`function << 32 |
//! path ID`) to a buffer in the profiler's memory ([`StreamLayout`]), from which the host folds the
//! stream into a k-slab forest. A function's entry appends a marker, and its exit path carries a tag
//! that also closes the activation ([`StreamItem`]). A path equal to the last item is only counted
//! in a word of the memory and appended as one repeat item before the next different item (loops
//! repeat their paths). A full buffer calls the host ([`HostImport::FlushStream`](crate::abi::HostImport)).
//!
//! With `calls`, a call marker goes before every call ([`StreamItem::Call`], mode `ips`).
//!
//! With `singles`, a function also has an array: an activation that ends only one path (entry to
//! exit) counts it there, and writes its entry marker only before its first streamed path.

use super::array::ArraySink;
use super::path_sink::{PathEnd, PathSink};
use crate::abi::{StreamItem, StreamLayout, STREAM_PATH_EXIT, STREAM_REPEAT};
use crate::instrument::emit::Emitter;
use wasm_encoder::{BlockType, Instruction, MemArg, ValType};

/// A streamed function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamSink {
    pub layout: StreamLayout,
    /// The array of the activations that end a single path.
    pub singles: Option<ArraySink>,
    /// A call marker before every call.
    pub calls: bool,
}

/// The sink's locals: an `i64` for the item, and an `i32` that is non-zero once the entry marker
/// is written (with singles).
pub(super) const ITEM: u32 = 0;
const ENTERED: u32 = 1;

impl PathSink for StreamSink {
    fn locals(&self) -> &'static [ValType] {
        &[ValType::I64, ValType::I32]
    }

    /// Without singles, the activation's entry marker.
    fn enter(&self, e: &mut Emitter) {
        if self.singles.is_none() {
            e.enter_marker(self.layout);
        }
    }

    fn call(&self, e: &mut Emitter) {
        if self.calls {
            e.f.instruction(&Instruction::I64Const(StreamItem::Call.encode() as i64));
            e.f.instruction(&Instruction::LocalSet(e.sink_local(ITEM)));
            e.append_last(self.layout);
        }
    }

    fn record(&self, e: &mut Emitter, end: PathEnd) {
        let tag = match end {
            PathEnd::Header => 0,
            PathEnd::Exit => STREAM_PATH_EXIT,
        };
        let Some(singles) = self.singles else {
            return e.stream_path(self.layout, tag);
        };
        // The entry marker goes before the activation's first streamed path; an activation that
        // reaches its exit without one ended a single path, counted in the array.
        let entered = e.sink_local(ENTERED);
        e.f.instruction(&Instruction::LocalGet(entered));
        match end {
            PathEnd::Exit => {
                e.f.instruction(&Instruction::If(BlockType::Empty));
                e.stream_path(self.layout, tag);
                e.f.instruction(&Instruction::Else);
                singles.record(e, end);
                e.f.instruction(&Instruction::End);
            }
            PathEnd::Header => {
                e.f.instruction(&Instruction::I32Eqz);
                e.f.instruction(&Instruction::If(BlockType::Empty));
                e.enter_marker(self.layout);
                e.f.instruction(&Instruction::I32Const(1));
                e.f.instruction(&Instruction::LocalSet(entered));
                e.f.instruction(&Instruction::End);
                e.stream_path(self.layout, tag);
            }
        }
    }
}

/// The stream's last item starts as one that no item equals.
pub(crate) fn initial_data() -> Vec<(u32, Vec<u8>)> {
    vec![(StreamLayout::standard().last, u64::MAX.to_le_bytes().to_vec())]
}

impl Emitter<'_> {
    /// Appends an item to the stream buffer; a full buffer is handed to the host.
    fn append(&mut self, layout: StreamLayout, item: &[Instruction]) {
        let mem = |offset: u32, align: u32| MemArg { offset: u64::from(offset), align, memory_index: self.memory };
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Load(mem(layout.index, 2)));
        self.f.instruction(&Instruction::LocalTee(self.a));
        self.f.instruction(&Instruction::I32Const(3));
        self.f.instruction(&Instruction::I32Shl);
        for i in item {
            self.f.instruction(i);
        }
        self.f.instruction(&Instruction::I64Store(mem(layout.buffer, 3)));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::LocalGet(self.a));
        self.f.instruction(&Instruction::I32Const(1));
        self.f.instruction(&Instruction::I32Add);
        self.f.instruction(&Instruction::LocalTee(self.a));
        self.f.instruction(&Instruction::I32Store(mem(layout.index, 2)));
        self.f.instruction(&Instruction::LocalGet(self.a));
        self.f.instruction(&Instruction::I32Const(layout.capacity as i32));
        self.f.instruction(&Instruction::I32Eq);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.f.instruction(&Instruction::Call(self.import));
        self.f.instruction(&Instruction::End);
    }

    /// Appends the repetitions of the last item still pending, if any, as a [`StreamItem::Repeat`].
    fn flush_run(&mut self, layout: StreamLayout) {
        let run = self.slot(layout.run);
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Load(run));
        self.f.instruction(&Instruction::I64Eqz);
        self.f.instruction(&Instruction::I32Eqz);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.append(
            layout,
            &[
                Instruction::I32Const(0),
                Instruction::I64Load(run),
                Instruction::I64Const(STREAM_REPEAT as i64),
                Instruction::I64Or,
            ],
        );
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Const(0));
        self.f.instruction(&Instruction::I64Store(run));
        self.f.instruction(&Instruction::End);
    }

    /// Appends the item in the sink's local `t` and makes it the last one.
    pub(super) fn append_last(&mut self, layout: StreamLayout) {
        let t = self.sink_local(ITEM);
        self.flush_run(layout);
        self.append(layout, &[Instruction::LocalGet(t)]);
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::LocalGet(t));
        self.f.instruction(&Instruction::I64Store(self.slot(layout.last)));
    }

    /// Appends the activation's entry marker.
    pub(super) fn enter_marker(&mut self, layout: StreamLayout) {
        let marker = StreamItem::Enter { function: self.func_index }.encode();
        self.f.instruction(&Instruction::I64Const(marker as i64));
        self.f.instruction(&Instruction::LocalSet(self.sink_local(ITEM)));
        self.append_last(layout);
    }

    /// Appends the path whose ID is in `r`, tagged with `tag`, or counts a repetition of the last
    /// item.
    pub(super) fn stream_path(&mut self, layout: StreamLayout, tag: u64) {
        self.f.instruction(&Instruction::LocalGet(self.r));
        self.f.instruction(&Instruction::I64ExtendI32U);
        self.f.instruction(&Instruction::I64Const((tag | u64::from(self.func_index) << 32) as i64));
        self.f.instruction(&Instruction::I64Or);
        self.f.instruction(&Instruction::LocalTee(self.sink_local(ITEM)));
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I64Load(self.slot(layout.last)));
        self.f.instruction(&Instruction::I64Eq);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.add_to_word64(u64::from(layout.run), &[Instruction::I64Const(1)]);
        self.f.instruction(&Instruction::Else);
        self.append_last(layout);
        self.f.instruction(&Instruction::End);
    }
}
