//! The sink of bursty k-BLPP (`kbl:K:burst`): k-BLPP's stream [KBL13 §3] written only during
//! *bursts*, the windows a host timer opens and closes by setting and clearing the first word of the
//! profiler's memory ([`SAMPLE_FLAG`](crate::abi::SAMPLE_FLAG), the word PEP's timer sets [PEP05 §3.3]), as [KBL13 §6]
//! suggests after the bursting of calling-context profilers.
//!
//! Every path end counts its path in the function's array (or table), as `bl` does: the Ball–Larus
//! counts, the k-IPF's roots, stay exact. An activation that is not streaming tests the flag at each path end
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
//! item for item as `kbl`'s stream holds them. No path end inside a counted loop tests the flag, so
//! the counter tests it every [`COUNTED_CHECK`]-th path instead: a loop that runs long in a local
//! is sampled too ([`Emitter::check_counted_loop`]).
//!
//! A function with too many paths for an array counts them in a table instead, as `bl` does
//! ([`BurstCounts::Table`]), without loop or run counters; the module's one host import is the
//! stream's flush, so a path the table cannot hold goes into the stream as a
//! [`StreamItem::Count`], which the host adds to the Ball–Larus counts and to no sequence.
//!
//! Everything a window writes goes through one function appended to the module
//! ([`append_function`]), so that the code at a path end outside a window is a test of a local, and
//! at a loop header a load of the flag and a branch, with no stream code around the loop's own.

use super::array::ArraySink;
use super::path_sink::{PathEnd, PathSink};
use super::stream::StreamWriter;
use super::table::TableSink;
use crate::abi::{StreamItem, StreamLayout, STREAM_COUNT, STREAM_ENTER, STREAM_PATH_EXIT};
use crate::instrument::emit::{add_to_word64, Emitter};
use wasm_encoder::{BlockType, Function, Instruction, ValType};

/// A function whose paths are counted exactly and streamed during bursts (through the module's
/// [`append_function`], into the standard [`StreamLayout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BurstSink {
    /// Where every path is counted.
    pub counts: BurstCounts,
}

/// Where a function streamed in bursts counts its paths, as `bl` would count them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BurstCounts {
    /// An array of every path's count, which its loop and run counters add to.
    Array(ArraySink),
    /// A hash table, for a function with too many paths for an array; a path it cannot hold goes
    /// into the stream as a [`StreamItem::Count`], whether or not a window is open.
    Table(TableSink),
}

/// What the code of a function streamed in bursts needs besides its sink: the function that
/// appends to the stream, and the first of its loop counters' marks (`i64` locals, one per loop
/// counter, each the counter's value when its paths were last streamed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BurstProbes {
    pub sink: BurstSink,
    pub append: u32,
    pub first_mark_local: u32,
}

/// How many paths a loop counter counts between two tests of the flag inside its loop (a power of
/// two): where a path end tests it, a tight loop would pay a load and a branch per iteration.
const COUNTED_CHECK: i64 = 1 << 12;

/// The sink's local: an `i32` that is non-zero while the activation's window is open —
/// [`STREAMS`], or [`OPENED`] before the window's entry marker is written.
const STREAMING: u32 = 0;
const STREAMS: i32 = 1;
const OPENED: i32 = 2;

impl PathSink for BurstSink {
    fn locals(&self) -> &'static [ValType] {
        match self.counts {
            BurstCounts::Array(_) => &[ValType::I32],
            // The table's key and probes left follow the window's state.
            BurstCounts::Table(_) => &[ValType::I32, ValType::I64, ValType::I32],
        }
    }

    fn record(&self, e: &mut Emitter, end: PathEnd) {
        match self.counts {
            BurstCounts::Array(array) => array.record(e, end),
            BurstCounts::Table(table) => {
                let (key, left) = (e.sink_local(STREAMING + 1), e.sink_local(STREAMING + 2));
                table.count(e, key, left, |e| e.append_path(STREAM_COUNT));
            }
        }
        self.stream(e, end);
    }
}

impl BurstSink {
    /// What a path end does besides counting its path (in `r`): streams it while the
    /// activation's window is open, and opens or closes the window at a loop header.
    pub(crate) fn stream(&self, e: &mut Emitter, end: PathEnd) {
        let streaming = e.sink_local(STREAMING);
        e.f.instruction(&Instruction::LocalGet(streaming));
        if end == PathEnd::Header {
            // One branch while neither a window nor a burst is open.
            e.burst_flag();
            e.f.instruction(&Instruction::I32Or);
        }
        e.f.instruction(&Instruction::If(BlockType::Empty));
        if end == PathEnd::Header {
            // A window opens here: its marks, then its entry marker as for one opened in a loop.
            e.f.instruction(&Instruction::LocalGet(streaming));
            e.f.instruction(&Instruction::I32Eqz);
            e.f.instruction(&Instruction::If(BlockType::Empty));
            e.mark_all();
            e.f.instruction(&Instruction::I32Const(OPENED));
            e.f.instruction(&Instruction::LocalSet(streaming));
            e.f.instruction(&Instruction::End);
        }
        e.enter_if_opened();
        for i in 0..e.loops.len() {
            e.stream_loop_counter(i);
        }
        match end {
            PathEnd::Exit => e.append_path(STREAM_PATH_EXIT),
            PathEnd::Header => {
                e.append_path(0);
                e.burst_flag();
                e.f.instruction(&Instruction::I32Eqz);
                e.f.instruction(&Instruction::If(BlockType::Empty));
                e.append_item(StreamItem::Leave);
                e.f.instruction(&Instruction::I32Const(0));
                e.f.instruction(&Instruction::LocalSet(streaming));
                e.f.instruction(&Instruction::End);
            }
        }
        e.f.instruction(&Instruction::End);
    }
}

/// The parameters of [`append_function`]: the item, and how many more times it repeats.
pub(crate) const APPEND_PARAMS: [ValType; 2] = [ValType::I64, ValType::I64];

/// The function that appends an item to the stream, then as many repetitions of it as its second
/// parameter says, appended to the module (memory `memory`, the host's flush `import`). A path
/// (or exit path) equal to the last item, and the repetitions, are only counted in the stream's
/// word of pending repetitions, which goes in as one repeat item before the next different item;
/// markers always go in. A full buffer is handed to the host.
pub(crate) fn append_function(layout: StreamLayout, memory: u32, import: u32) -> Function {
    let (item, more, index) = (0, 1, 2);
    let writer = StreamWriter { layout, memory, index, import };
    let (last, run) = (writer.wide(layout.last), writer.wide(layout.run));
    let mut f = Function::new([(1, ValType::I32)]);
    // A path equal to the last item repeats it.
    f.instruction(&Instruction::LocalGet(item));
    f.instruction(&Instruction::I64Const(STREAM_ENTER as i64));
    f.instruction(&Instruction::I64And);
    f.instruction(&Instruction::I64Eqz);
    f.instruction(&Instruction::LocalGet(item));
    f.instruction(&Instruction::I32Const(0));
    f.instruction(&Instruction::I64Load(last));
    f.instruction(&Instruction::I64Eq);
    f.instruction(&Instruction::I32And);
    f.instruction(&Instruction::If(BlockType::Empty));
    add_to_word64(&mut f, run, &[Instruction::I64Const(1)]);
    f.instruction(&Instruction::Else);
    writer.append_last(&mut f, item);
    f.instruction(&Instruction::End);
    add_to_word64(&mut f, run, &[Instruction::LocalGet(more)]);
    f.instruction(&Instruction::End);
    f
}

impl Emitter<'_> {
    /// What the function streamed in bursts whose code this is streams with.
    fn probes(&self) -> BurstProbes {
        self.burst.expect("only a function streamed in bursts streams in bursts")
    }

    /// The local of loop counter `i`'s mark.
    fn mark(&self, i: usize) -> u32 {
        self.probes().first_mark_local + i as u32
    }

    /// The burst flag, an `i32` on the stack: non-zero while a burst is open.
    fn burst_flag(&mut self) {
        self.f.instruction(&Instruction::I32Const(0));
        self.f.instruction(&Instruction::I32Load(self.flag_word()));
    }

    /// Appends the marker `item` to the stream.
    fn append_item(&mut self, item: StreamItem) {
        self.f.instruction(&Instruction::I64Const(item.encode() as i64));
        self.f.instruction(&Instruction::I64Const(0));
        self.f.instruction(&Instruction::Call(self.probes().append));
    }

    /// Appends the path in `r`, tagged with `tag`, to the stream.
    fn append_path(&mut self, tag: u64) {
        self.f.instruction(&Instruction::LocalGet(self.r));
        self.f.instruction(&Instruction::I64ExtendI32U);
        self.f.instruction(&Instruction::I64Const((tag | u64::from(self.func_index) << 32) as i64));
        self.f.instruction(&Instruction::I64Or);
        self.f.instruction(&Instruction::I64Const(0));
        self.f.instruction(&Instruction::Call(self.probes().append));
    }

    /// In a streaming activation: streams the paths that loop counter `i` counted since its mark
    /// (its path, and the rest as repetitions), and moves the mark to the counter.
    fn stream_loop_counter(&mut self, i: usize) {
        let (n, mark) = (self.first_loop_local + i as u32, self.mark(i));
        let label = StreamItem::label(self.func_index, self.loops[i].path);
        self.f.instruction(&Instruction::LocalGet(n));
        self.f.instruction(&Instruction::LocalGet(mark));
        self.f.instruction(&Instruction::I64Ne);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.f.instruction(&Instruction::I64Const(label as i64));
        self.f.instruction(&Instruction::LocalGet(n));
        self.f.instruction(&Instruction::LocalGet(mark));
        self.f.instruction(&Instruction::I64Sub);
        self.f.instruction(&Instruction::I64Const(1));
        self.f.instruction(&Instruction::I64Sub);
        self.f.instruction(&Instruction::Call(self.probes().append));
        self.f.instruction(&Instruction::LocalGet(n));
        self.f.instruction(&Instruction::LocalSet(mark));
        self.f.instruction(&Instruction::End);
    }

    /// In a function streamed in bursts: the path in `r`, which an edge into an edge-counted header
    /// or a run counter has counted, streamed as the sink streams the paths it counts itself.
    pub fn stream_counted_path(&mut self) {
        if let Some(b) = self.burst {
            b.sink.stream(self, PathEnd::Header);
        }
    }

    /// In a function streamed in bursts, right after loop counter `i` counted a path: at every
    /// [`COUNTED_CHECK`]-th, an activation that is not streaming tests the flag and, finding a
    /// burst open, opens its window ([`OPENED`]: its entry marker is written when it next streams),
    /// so that a loop that runs long in a local is sampled too. The window begins with the
    /// counter's next path, and lasts at least until the loop ends: its paths cost nothing while
    /// they are counted.
    pub fn check_counted_loop(&mut self, i: usize) {
        if self.burst.is_none() {
            return;
        }
        // The iteration's one test: a mask of the counter, which a compiler turns into a test and a
        // branch; whether the activation streams already is asked only then.
        let streaming = self.sink_local(STREAMING);
        self.f.instruction(&Instruction::LocalGet(self.first_loop_local + i as u32));
        self.f.instruction(&Instruction::I64Const(COUNTED_CHECK - 1));
        self.f.instruction(&Instruction::I64And);
        self.f.instruction(&Instruction::I64Eqz);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.f.instruction(&Instruction::LocalGet(streaming));
        self.f.instruction(&Instruction::I32Eqz);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.burst_flag();
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.mark_all();
        self.f.instruction(&Instruction::I32Const(OPENED));
        self.f.instruction(&Instruction::LocalSet(streaming));
        self.f.instruction(&Instruction::End);
        self.f.instruction(&Instruction::End);
        self.f.instruction(&Instruction::End);
    }

    /// Every loop counter's mark set to the counter.
    fn mark_all(&mut self) {
        for j in 0..self.loops.len() {
            self.f.instruction(&Instruction::LocalGet(self.first_loop_local + j as u32));
            self.f.instruction(&Instruction::LocalSet(self.mark(j)));
        }
    }

    /// In a streaming activation: its entry marker, when its window was opened inside a counted
    /// loop and has not streamed yet.
    fn enter_if_opened(&mut self) {
        let streaming = self.sink_local(STREAMING);
        self.f.instruction(&Instruction::LocalGet(streaming));
        self.f.instruction(&Instruction::I32Const(OPENED));
        self.f.instruction(&Instruction::I32Eq);
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.append_item(StreamItem::Enter { function: self.func_index });
        self.f.instruction(&Instruction::I32Const(STREAMS));
        self.f.instruction(&Instruction::LocalSet(streaming));
        self.f.instruction(&Instruction::End);
    }

    /// In a function streamed in bursts, before loop counter `i` is flushed (its paths added to
    /// the array and the counter emptied): a streaming activation streams its pending paths.
    pub fn stream_before_flush(&mut self, i: usize) {
        if self.burst.is_none() {
            return;
        }
        self.f.instruction(&Instruction::LocalGet(self.sink_local(STREAMING)));
        self.f.instruction(&Instruction::If(BlockType::Empty));
        self.enter_if_opened();
        self.stream_loop_counter(i);
        self.f.instruction(&Instruction::End);
    }

    /// In a function streamed in bursts, after loop counter `i` is flushed: its mark goes to 0
    /// with it.
    pub fn unmark_after_flush(&mut self, i: usize) {
        if self.burst.is_some() {
            self.f.instruction(&Instruction::I64Const(0));
            self.f.instruction(&Instruction::LocalSet(self.mark(i)));
        }
    }
}
