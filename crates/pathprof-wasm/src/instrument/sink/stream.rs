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
//! exit) counts it there, and writes its entry marker only before its first streamed path: on the
//! way into a loop, or at a cut block that is no loop header.

use super::array::ArraySink;
use super::path_sink::{PathEnd, PathSink};
use crate::abi::{StreamItem, StreamLayout, STREAM_PATH_EXIT, STREAM_REPEAT};
use crate::instrument::emit::{word, Emitter};
use wasm_encoder::{BlockType, Function, Instruction, MemArg, ValType};

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

    fn call(&self, e: &mut Emitter, _: Option<super::supergraph::Digit>) {
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
        match end {
            PathEnd::Exit => {
                e.f.instruction(&Instruction::LocalGet(e.sink_local(ENTERED)));
                e.f.instruction(&Instruction::If(BlockType::Empty));
                e.stream_path(self.layout, tag);
                e.f.instruction(&Instruction::Else);
                singles.record(e, end);
                e.f.instruction(&Instruction::End);
            }
            PathEnd::Header => {
                self.enter_once(e);
                e.stream_path(self.layout, tag);
            }
        }
    }

    /// With singles, the entry marker goes before the loop: a path ending at its header, on the way
    /// in or round a back edge, then streams without testing for it.
    fn enter_loop(&self, e: &mut Emitter) {
        if self.singles.is_some() {
            self.enter_once(e);
        }
    }

    fn record_loop_header(&self, e: &mut Emitter) {
        e.stream_path(self.layout, 0);
    }
}

impl StreamSink {
    /// Writes the entry marker unless the activation has written it, and marks it written.
    fn enter_once(&self, e: &mut Emitter) {
        let entered = e.sink_local(ENTERED);
        e.f.instruction(&Instruction::LocalGet(entered));
        e.f.instruction(&Instruction::I32Eqz);
        e.f.instruction(&Instruction::If(BlockType::Empty));
        e.enter_marker(self.layout);
        e.f.instruction(&Instruction::I32Const(1));
        e.f.instruction(&Instruction::LocalSet(entered));
        e.f.instruction(&Instruction::End);
    }
}

/// The stream's last item starts as one that no item equals.
pub(crate) fn initial_data() -> Vec<(u32, Vec<u8>)> {
    vec![(StreamLayout::standard().last, u64::MAX.to_le_bytes().to_vec())]
}

/// The code that writes the stream: where its words lie, the `i32` local it keeps the write index
/// in, and the host function that takes a full buffer. Probes write through it inline, and bursts
/// through one function of the module's that it writes too ([`append_function`](super::burst::append_function)).
#[derive(Clone, Copy, Debug)]
pub(super) struct StreamWriter {
    pub layout: StreamLayout,
    pub memory: u32,
    pub index: u32,
    pub import: u32,
}

impl StreamWriter {
    /// The `u64` word at byte `offset` of the profiler's memory.
    pub fn wide(&self, offset: u32) -> MemArg {
        MemArg { offset: u64::from(offset), align: 3, memory_index: self.memory }
    }

    /// Appends an item to the stream buffer; a full buffer is handed to the host.
    fn append(&self, f: &mut Function, item: &[Instruction]) {
        let index = word(self.memory, self.layout.index);
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::I32Load(index));
        f.instruction(&Instruction::LocalTee(self.index));
        f.instruction(&Instruction::I32Const(3));
        f.instruction(&Instruction::I32Shl);
        for i in item {
            f.instruction(i);
        }
        f.instruction(&Instruction::I64Store(self.wide(self.layout.buffer)));
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::LocalGet(self.index));
        f.instruction(&Instruction::I32Const(1));
        f.instruction(&Instruction::I32Add);
        f.instruction(&Instruction::LocalTee(self.index));
        f.instruction(&Instruction::I32Store(index));
        f.instruction(&Instruction::LocalGet(self.index));
        f.instruction(&Instruction::I32Const(self.layout.capacity as i32));
        f.instruction(&Instruction::I32Eq);
        f.instruction(&Instruction::If(BlockType::Empty));
        f.instruction(&Instruction::Call(self.import));
        f.instruction(&Instruction::End);
    }

    /// Appends the repetitions of the last item still pending, if any, as a [`StreamItem::Repeat`].
    fn flush_run(&self, f: &mut Function) {
        let run = self.wide(self.layout.run);
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::I64Load(run));
        f.instruction(&Instruction::I64Eqz);
        f.instruction(&Instruction::I32Eqz);
        f.instruction(&Instruction::If(BlockType::Empty));
        self.append(
            f,
            &[
                Instruction::I32Const(0),
                Instruction::I64Load(run),
                Instruction::I64Const(STREAM_REPEAT as i64),
                Instruction::I64Or,
            ],
        );
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::I64Const(0));
        f.instruction(&Instruction::I64Store(run));
        f.instruction(&Instruction::End);
    }

    /// Appends the item in local `t`, after the last item's pending repetitions, and makes it the
    /// last one.
    pub fn append_last(&self, f: &mut Function, t: u32) {
        self.flush_run(f);
        self.append(f, &[Instruction::LocalGet(t)]);
        f.instruction(&Instruction::I32Const(0));
        f.instruction(&Instruction::LocalGet(t));
        f.instruction(&Instruction::I64Store(self.wide(self.layout.last)));
    }
}

impl Emitter<'_> {
    /// Appends the item in the sink's local `t` and makes it the last one.
    pub(super) fn append_last(&mut self, layout: StreamLayout) {
        let writer = StreamWriter { layout, memory: self.memory, index: self.a, import: self.import };
        writer.append_last(self.f, self.sink_local(ITEM));
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
