//! The profiler's ABI: what an instrumented module and the host agree on.
//!
//! The instrumenter writes code against these definitions and the runtime's collectors read and
//! write against them; nothing else spells them out.
//!
//! * **The profiler's memory.** A memory of the profiler's own (multi-memory), appended after the
//!   program's and exported as [`MEMORY_EXPORT`] (with `_` appended while the name is taken). It
//!   never grows — its minimum is its maximum — so its words keep their addresses for the life of the
//!   instance, and a host thread may use them while the program runs. It starts with the words of
//!   the sink (below), then the counters and slots of the functions, then the `br_table` increment
//!   tables; where each function's counters lie is in the [map](crate::map).
//! * **The host imports**, all in module [`IMPORT_MODULE`]: [`HostImport`]. A module imports at most
//!   one of them, after the program's own imports.
//! * **The sinks' words.** Exact counting needs none. Sampling (PEP [PEP05 §3.3]) keeps its flag
//!   and sample buffer at [`SAMPLE_FLAG`] and after ([`SampleBufferLayout`]); the k-BLPP stream
//!   [KBL13 §3] keeps its buffer at [`STREAM_INDEX`] and after ([`StreamLayout`], items encoded as
//!   [`StreamItem`]). Preferential counting [PPP07 §3.3] keeps an array of slots per function
//!   ([`PPP_SLOT_BYTES`] each) and counts the other paths through [`HostImport::CountPath`].

use serde::{Deserialize, Serialize};

/// Module name of the profiler's host imports.
pub const IMPORT_MODULE: &str = "pathprof";

/// Preferred export name of the profiler's memory.
pub const MEMORY_EXPORT: &str = "pathprof:counters";

/// Preferred export name of the table through which a module inside a component calls its host
/// function ([`HostCalls::Table`]).
pub const HOOKS_EXPORT: &str = "pathprof:hooks";

/// Name of the component import through which a component hands the host its profiler's memory,
/// as a `list<u8>` of the whole memory, once it is instantiated.
pub const ATTACH_IMPORT: &str = "pathprof-attach";

/// How an instrumented module reaches its host function ([`HostImport`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostCalls {
    /// An import from [`IMPORT_MODULE`]: a module run alone.
    #[default]
    Import,
    /// A function of the module's own, the first of its defined functions (where the import would
    /// be), that calls slot 0 of a one-slot table it exports as [`HOOKS_EXPORT`]: a module inside a
    /// component, whose instantiation cannot be given imports it did not have. The component fills
    /// the slot once the module is instantiated (`crate::component`).
    Table,
}

/// The host functions an instrumented module may import.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostImport {
    /// `count_path(i32 function, i64 path)`: one more execution of a path of a function whose
    /// counters do not fit in an array; the host keeps an exact hash table. A supergraph ID with
    /// `n` high keys (mode `ippp`, [`pathprof_core::supergraph`]) takes one call: the probe writes
    /// the high keys, in order, to the `n` words at [`HIGH_KEYS`] of the profiler's memory, and
    /// passes the function with [`HIGH_KEY`] set and the ID.
    CountPath,
    /// `sample_path(i32 function, i64 path)`: a path end while the sampling flag is set, for
    /// sampling without a buffer (every N-th path end).
    SamplePath,
    /// `flush_stream()`: the stream buffer is full; the host takes its items and empties it.
    FlushStream,
}

impl HostImport {
    /// The import's field name.
    pub fn name(self) -> &'static str {
        match self {
            HostImport::CountPath => "count_path",
            HostImport::SamplePath => "sample_path",
            HostImport::FlushStream => "flush_stream",
        }
    }

    /// The name of the same function imported by a component (`pathprof-count-path`...), which
    /// takes `(function: u32, path: u64)` or nothing.
    pub fn component_name(self) -> &'static str {
        match self {
            HostImport::CountPath => "pathprof-count-path",
            HostImport::SamplePath => "pathprof-sample-path",
            HostImport::FlushStream => "pathprof-flush-stream",
        }
    }

    /// Whether the import takes `(i32 function, i64 path)`; otherwise it takes nothing. None returns
    /// a value.
    pub fn takes_path(self) -> bool {
        !matches!(self, HostImport::FlushStream)
    }
}

/// The bit of `count_path`'s function argument that says the ID it passes has high keys, at
/// [`HIGH_KEYS`] in the profiler's memory (function indices stay below 2^31).
pub const HIGH_KEY: u32 = 1 << 31;

/// Mode `ippp`: byte offset of the `i64` head word, through which a callee hands its first path to
/// its caller ([`pathprof_core::supergraph`]): a caller sets it to [`HEAD_ARMED`] before a call; an
/// instrumented function that finds it armed at its entry clears it to [`HEAD_EMPTY`] and writes its
/// first path's head there when it returns.
pub const HEAD_WORD: u32 = 0;
/// Mode `ippp`: byte offset of the high keys of the supergraph ID a path end passes to
/// `count_path` with [`HIGH_KEY`] set, `u64` words in order, past the head words of every depth
/// (room for [`MAX_HIGH_WORDS`](pathprof_core::supergraph::MAX_HIGH_WORDS)).
pub const HIGH_KEYS: u32 = HEAD_WORD + 8 * pathprof_core::ips::MAX_DEPTH as u32;
/// The head word of a call no instrumented function has taken yet.
pub const HEAD_ARMED: i64 = -1;
/// The head word of a call taken by a function that has not returned.
pub const HEAD_EMPTY: i64 = 0;

/// Byte offset of the sampling flag, an `i32`: the number of samples still to take. A path end
/// samples while it is not 0.
pub const SAMPLE_FLAG: u32 = 0;
/// Byte offset of the `i32` number of path ends to let go by before the next sample.
pub const SAMPLE_SKIP: u32 = 4;
/// Byte offset of the `i32` number of samples in the buffer.
pub const SAMPLE_INDEX: u32 = 8;
/// Byte offset of the `i32` random value the host writes before it sets the flag (loops running a
/// copy without probes read it: see the instrumenter's sampling sink).
pub const SAMPLE_RANDOM: u32 = 12;
/// Byte offset of the `i32` count of ticks that found the flag still set.
pub const SAMPLE_MISSED: u32 = 16;
/// Byte offset of the sample buffer (little-endian `u64` [`sample_item`]s).
pub const SAMPLE_BUFFER: u32 = 24;
/// Bytes of the sampling words before the buffer, without a buffer.
pub const SAMPLE_WORDS: u32 = 8;

// The words do not overlap, and the 64-bit ones are aligned; the stream's words leave the sampling
// flag's word alone.
const _: () = {
    assert!(SAMPLE_FLAG + 4 <= SAMPLE_SKIP && SAMPLE_SKIP + 4 <= SAMPLE_INDEX);
    assert!(SAMPLE_INDEX + 4 <= SAMPLE_RANDOM && SAMPLE_RANDOM + 4 <= SAMPLE_MISSED);
    assert!(SAMPLE_MISSED + 4 <= SAMPLE_BUFFER && SAMPLE_BUFFER.is_multiple_of(8) && SAMPLE_WORDS >= SAMPLE_FLAG + 4);
    assert!(SAMPLE_FLAG + 4 <= STREAM_INDEX && STREAM_INDEX + 4 <= STREAM_LAST && STREAM_LAST + 8 <= STREAM_RUN);
    assert!(STREAM_RUN + 8 <= STREAM_BUFFER);
    assert!(STREAM_LAST.is_multiple_of(8) && STREAM_RUN.is_multiple_of(8) && STREAM_BUFFER.is_multiple_of(8));
};

/// A sample: the function's index and the path's ID in one word.
pub fn sample_item(function: u32, path: u64) -> u64 {
    u64::from(function) << 32 | path
}

/// The function and the path of a sample.
pub fn sample_parts(item: u64) -> (u32, u64) {
    ((item >> 32) as u32, item & 0xffff_ffff)
}

/// Where a sampled module keeps its samples in the profiler's memory, when path ends do not call the
/// host. While the flag (at [`SAMPLE_FLAG`]) is non-zero, a path end decrements `skip` if it is
/// non-zero, and otherwise appends its [`sample_item`] at slot `index` of `buffer`, increments
/// `index` and decrements the flag, in that order. The host reads and empties the buffer only while
/// the flag is zero, and sets the flag last.
///
/// The module's stores must become visible to the host in that order. On x86-64, whose stores are
/// seen in program order, plain loads and stores do it; elsewhere the module orders them with an
/// atomic fence and an atomic store of the flag (`atomic`), which Cranelift compiles to code that
/// is slower even where it does not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleBufferLayout {
    /// Byte offset of the `i32` number of path ends to let go by before the next sample.
    pub skip: u32,
    /// Byte offset of the `i32` number of samples in the buffer.
    pub index: u32,
    /// Byte offset of the buffer of little-endian `u64` samples.
    pub buffer: u32,
    /// Size of the buffer, in samples: the host never asks for more at a time.
    pub slots: u32,
    /// The path ends order their stores with atomics (see above).
    pub atomic: bool,
    /// Byte offset of an `i32` that the host sets to a fresh random value before it sets the flag:
    /// loops that run a copy without probes while the flag is 0 use it to decide how many of their
    /// iterations came after the flag was set.
    pub random: u32,
    /// Byte offset of an `i32` that the host sets to 0 before it sets the flag and increments at every
    /// tick that finds the flag still set (its samples not all taken), which those loops read when
    /// their copy ends.
    pub missed: u32,
}

impl SampleBufferLayout {
    /// The layout of a buffer of `slots` samples (at least 1).
    pub fn new(slots: u32) -> SampleBufferLayout {
        SampleBufferLayout {
            skip: SAMPLE_SKIP,
            index: SAMPLE_INDEX,
            buffer: SAMPLE_BUFFER,
            slots: slots.max(1),
            atomic: !cfg!(target_arch = "x86_64"),
            random: SAMPLE_RANDOM,
            missed: SAMPLE_MISSED,
        }
    }

    /// Bytes from the start of the profiler's memory to the end of the buffer.
    pub fn end(&self) -> u64 {
        u64::from(self.buffer) + 8 * u64::from(self.slots)
    }
}

/// Slots of the hash table of a function whose paths are too many for an array (fewer when it has
/// fewer paths): 16 KiB each.
pub const TABLE_SLOTS: u32 = 1024;
/// Bytes of a slot of such a table: the path ID plus one (0 when empty), then its count.
pub const TABLE_SLOT_BYTES: u32 = 16;
/// Slots a path end probes, from the one its ID hashes to, before it passes the path to the host.
pub const TABLE_PROBES: u32 = 8;

/// Bytes of a slot of a preferentially counted function: the Ball–Larus ID of the interesting path
/// whose preferential ID indexes it (a little-endian `u64`, [`PPP_HOLE`] for a hole), then its count.
pub const PPP_SLOT_BYTES: u32 = 16;
/// Byte offset of a slot's count.
pub const PPP_SLOT_COUNT: u32 = 8;
/// The Ball–Larus ID of a hole: no path has it.
pub const PPP_HOLE: u64 = u64::MAX;

/// Items the stream buffer holds before the host drains it.
pub const STREAM_CAPACITY: u32 = 4096;
/// Byte offset of the stream's write index (an `i32` count of items).
pub const STREAM_INDEX: u32 = 8;
/// Byte offset of the last item appended to the stream (an `i64`, initially `u64::MAX`, which no
/// item equals).
pub const STREAM_LAST: u32 = 16;
/// Byte offset of the repetitions of the last item not yet appended (an `i64`).
pub const STREAM_RUN: u32 = 24;
/// Byte offset of the stream buffer (`u64` items).
pub const STREAM_BUFFER: u32 = 32;

/// Where the stream buffer of k-BLPP lives in the profiler's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamLayout {
    /// Byte offset of the `i32` number of items in the buffer.
    pub index: u32,
    /// Byte offset of the last item appended (`i64`).
    pub last: u32,
    /// Byte offset of the number of repetitions of the last item not yet appended (`i64`).
    pub run: u32,
    /// Byte offset of the buffer of little-endian `u64` items ([`StreamItem`]). A path item equal to
    /// the last one is only counted in `run`, which is appended as a [`StreamItem::Repeat`] before the
    /// next different item. Functions whose activations end one path each (no loops, no cuts) count
    /// in arrays instead, without markers.
    pub buffer: u32,
    pub capacity: u32,
}

impl StreamLayout {
    /// The stream's words and buffer, as the instrumenter lays them out.
    pub const fn standard() -> StreamLayout {
        StreamLayout {
            index: STREAM_INDEX,
            last: STREAM_LAST,
            run: STREAM_RUN,
            buffer: STREAM_BUFFER,
            capacity: STREAM_CAPACITY,
        }
    }

    /// Bytes from the start of the profiler's memory to the end of the buffer.
    pub fn end(&self) -> u64 {
        u64::from(self.buffer) + 8 * u64::from(self.capacity)
    }
}

/// Tag of a stream item that marks an activation's entry; the low bits carry the function index.
pub const STREAM_ENTER: u64 = 1 << 62;
/// The stream item that marks a call (mode `ips`): an entry tag with no function.
pub const STREAM_CALL: u64 = STREAM_ENTER | 1 << 32;
/// The stream item that ends the innermost activation's streamed window without ending the
/// activation (bursty `kbl`): an entry tag with no function.
pub const STREAM_LEAVE: u64 = STREAM_ENTER | 2 << 32;
/// Tag of a stream item that ends a path at the function's exit, and so also the activation.
pub const STREAM_PATH_EXIT: u64 = 2 << 62;
/// Tag of a stream item that repeats the item before it as many more times as its low 62 bits say.
pub const STREAM_REPEAT: u64 = 3 << 62;
/// Bit of a path item (tag 0) that makes it a count only: a path that a function of bursty `kbl`
/// counts but whose table could not hold it ([`StreamItem::Count`]). Function indices stay below
/// 2^29 (validation allows 10^6 functions), so no label has it.
pub const STREAM_COUNT: u64 = 1 << 61;

/// One item of the k-BLPP stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamItem {
    /// An activation of `function` begins.
    Enter { function: u32 },
    /// The innermost activation calls a function (streamed before every call in mode `ips`).
    Call,
    /// The innermost activation stops streaming its paths, at a path end, while it runs on (a burst
    /// of bursty `kbl` is over): for the fold, it has returned.
    Leave,
    /// A path of the innermost activation ends (`function << 32 | path`, as a k-SF label).
    Path { label: u64 },
    /// A path ends at the function's exit, and with it the activation.
    ExitPath { label: u64 },
    /// The item before repeats this many more times.
    Repeat(u64),
    /// A path ended that its function's table could not hold (bursty `kbl`, outside or inside a
    /// window): a Ball–Larus count, not part of any sequence.
    Count { label: u64 },
}

impl StreamItem {
    /// The label of a path: its function and its ID in one word.
    pub fn label(function: u32, path: u64) -> u64 {
        u64::from(function) << 32 | path
    }

    pub fn decode(item: u64) -> StreamItem {
        let low = item & !STREAM_REPEAT;
        match item & STREAM_REPEAT {
            0 if item & STREAM_COUNT != 0 => StreamItem::Count { label: item & !STREAM_COUNT },
            0 => StreamItem::Path { label: item },
            STREAM_ENTER if item == STREAM_LEAVE => StreamItem::Leave,
            STREAM_ENTER if low >> 32 != 0 => StreamItem::Call,
            STREAM_ENTER => StreamItem::Enter { function: low as u32 },
            STREAM_PATH_EXIT => StreamItem::ExitPath { label: low },
            _ => StreamItem::Repeat(low),
        }
    }

    pub fn encode(self) -> u64 {
        match self {
            StreamItem::Enter { function } => STREAM_ENTER | u64::from(function),
            StreamItem::Call => STREAM_CALL,
            StreamItem::Leave => STREAM_LEAVE,
            StreamItem::Path { label } => label,
            StreamItem::ExitPath { label } => STREAM_PATH_EXIT | label,
            StreamItem::Repeat(n) => STREAM_REPEAT | n,
            StreamItem::Count { label } => STREAM_COUNT | label,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_items_round_trip() {
        let items = [
            StreamItem::Enter { function: 7 },
            StreamItem::Call,
            StreamItem::Path { label: StreamItem::label(7, 3) },
            StreamItem::Repeat(5),
            StreamItem::Count { label: StreamItem::label(999_999, 0xffff_ffff) },
            StreamItem::ExitPath { label: StreamItem::label(7, 0xffff_ffff) },
        ];
        for item in items {
            assert_eq!(StreamItem::decode(item.encode()), item);
        }
        assert_eq!(StreamItem::Repeat(5).encode(), 3 << 62 | 5);
        assert_eq!(sample_parts(sample_item(9, 4)), (9, 4));
    }
}
