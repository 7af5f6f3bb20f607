//! Sinks: what a path end does with the path whose ID is in the register.
//!
//! A profiling mode chooses a [`SinkKind`] for the module; the kind gives every function a [`Sink`]
//! of its own ([`SinkKind::assign`], in [`kind`], with what each kind asks of the instrumenter), and
//! the rest of the instrumenter emits the path register and calls the function's sink wherever a
//! path ends. One file per sink:
//!
//! * [`array`] — `count[r]++` in a dense array of the profiler's memory [BL96];
//! * [`table`] — an open-addressing hash table in the profiler's memory, for functions with too
//!   many paths for an array, which passes the paths it cannot hold to the host;
//! * [`hash`] — a call of the host, which keeps an exact hash table, for the functions whose tables
//!   do not fit either;
//! * [`sample`] — PEP's sampling [PEP05 §3.3]: a test of the host's flag, and a sample written to
//!   a buffer (or passed to the host) while it is set;
//! * [`stream`] — k-BLPP's stream of path IDs with activation markers [KBL13 §3];
//! * [`burst`] — bursty k-BLPP: exact counts in an array (or a table), and the stream only while
//!   the host's timer holds a burst open [KBL13 §6];
//! * [`ppp`] — preferential counting: the interesting paths in compact slots, checked against their
//!   Ball–Larus IDs, the residual ones counted by the host [PPP07 §3.3–3.5];
//! * [`supergraph`] — mode `ippp`: the supergraph path (the path and the first path of every
//!   call's callee) counted as [`array`] or [`table`] count paths, and each function's first path
//!   handed to its caller [PPP07 §3.4.3–3.4.5];
//! * [`decode`] — event counting by path decoding (`pd`): a path end adds its path's event vector,
//!   from a table, to the function's event counters [EVT23 §4.2];
//! * [`direct`] — direct event counting (`dec`), the baseline: no paths, every stretch of
//!   straight-line code adds its events where it starts [EVT23 §3.2].
//!
//! The words each sink uses in the profiler's memory, and its host import, are the
//! [ABI](crate::abi)'s.

mod array;
mod burst;
mod decode;
mod direct;
mod hash;
mod kind;
mod path_sink;
mod ppp;
mod sample;
mod stream;
mod supergraph;
mod table;

pub(crate) use array::ArraySink;
pub(crate) use burst::{BurstCounts, BurstProbes, BurstSink};
pub(crate) use decode::DecodeSink;
pub(crate) use direct::DirectSink;
pub use kind::SinkKind;
pub(crate) use path_sink::{PathEnd, PathSink};
pub(crate) use ppp::PppSink;
pub(crate) use sample::SampleSink;
pub(crate) use stream::StreamSink;
pub(crate) use supergraph::{Digit, Read, SupergraphCounts, SupergraphSink, Weights};
pub(crate) use table::TableSink;

use super::emit::Emitter;
use crate::map::Counters;
use wasm_encoder::{Function, ValType};

/// The sink of one function.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Sink {
    Array(ArraySink),
    Table(TableSink),
    Hash,
    Sample(SampleSink),
    Stream(StreamSink),
    Burst(BurstSink),
    Ppp(PppSink),
    Decode(DecodeSink),
    Direct(DirectSink),
    Supergraph(SupergraphSink),
}

impl PathSink for Sink {
    fn locals(&self) -> &'static [ValType] {
        self.inner().locals()
    }

    fn enter(&self, e: &mut Emitter) {
        self.inner().enter(e)
    }

    fn record(&self, e: &mut Emitter, end: PathEnd) {
        self.inner().record(e, end)
    }

    fn enter_loop(&self, e: &mut Emitter) {
        self.inner().enter_loop(e)
    }

    fn record_loop_header(&self, e: &mut Emitter) {
        self.inner().record_loop_header(e)
    }

    fn stretch(&self, e: &mut Emitter, vector: &[u64]) {
        self.inner().stretch(e, vector)
    }

    fn call(&self, e: &mut Emitter, digit: Option<Digit>) {
        self.inner().call(e, digit)
    }

    fn returned(&self, e: &mut Emitter, digit: Option<Digit>) {
        self.inner().returned(e, digit)
    }
}

impl Sink {
    fn inner(&self) -> &dyn PathSink {
        match self {
            Sink::Array(s) => s,
            Sink::Table(s) => s,
            Sink::Hash => &hash::HashSink,
            Sink::Sample(s) => s,
            Sink::Stream(s) => s,
            Sink::Burst(s) => s,
            Sink::Ppp(s) => s,
            Sink::Decode(s) => s,
            Sink::Direct(s) => s,
            Sink::Supergraph(s) => s,
        }
    }

    /// Where the function's paths are recorded, as the map says.
    pub(crate) fn counters(&self) -> Counters {
        match self {
            Sink::Array(a) => Counters::Array { offset: a.offset },
            Sink::Table(t) => Counters::Table { offset: t.offset, slots: t.slots },
            Sink::Hash => Counters::Hash,
            Sink::Sample(_) => Counters::Sampled,
            Sink::Stream(s) => Counters::Stream { singles: s.singles.map(|a| a.offset) },
            Sink::Burst(BurstSink { counts: BurstCounts::Array(a) }) => Counters::Burst { offset: a.offset },
            Sink::Burst(BurstSink { counts: BurstCounts::Table(t) }) => {
                Counters::BurstTable { offset: t.offset, slots: t.slots }
            }
            Sink::Ppp(s) => Counters::Ppp { offset: s.offset, slots: s.slots },
            Sink::Decode(s) => Counters::Events { offset: s.counters, mask: s.mask, decoded: true },
            Sink::Direct(s) => Counters::Events { offset: s.counters, mask: s.mask, decoded: false },
            Sink::Supergraph(s) => match s.counts {
                SupergraphCounts::Array(a) => Counters::Array { offset: a.offset },
                SupergraphCounts::Table(t) => Counters::Table { offset: t.offset, slots: t.slots },
                SupergraphCounts::Hash => Counters::Hash,
                SupergraphCounts::Split { array, table } => Counters::Split {
                    offset: array.offset,
                    table_offset: table.map(|t| t.offset),
                    slots: table.map_or(0, |t| t.slots),
                },
            },
        }
    }

    /// Whether the function's path ends may call the profiler's host import.
    pub(crate) fn calls_import(&self) -> bool {
        match self {
            Sink::Array(_) | Sink::Decode(_) | Sink::Direct(_) => false,
            Sink::Table(_) | Sink::Hash | Sink::Stream(_) | Sink::Burst(_) | Sink::Ppp(_) => true,
            Sink::Supergraph(s) => s.high > 0 || !matches!(s.counts, SupergraphCounts::Array(_)),
            Sink::Sample(s) => s.buffer.is_none() || s.wide,
        }
    }

    /// Whether the function's simple loops get a copy without probes (see [`sample`]).
    pub(crate) fn wants_loop_copies(&self) -> bool {
        matches!(self, Sink::Sample(SampleSink { buffer: Some(_), wide: false }))
    }

    /// Whether the function also runs as a copy without probes (see [`switch`](super::switch)):
    /// where its path ends only matter while the host's flag is set, which they do not test.
    pub(crate) fn wants_function_copies(&self) -> bool {
        matches!(self, Sink::Sample(SampleSink { buffer: Some(_), .. }))
    }

    /// Whether the function has a path register: every sink but direct event counting's.
    pub(crate) fn counts_paths(&self) -> bool {
        !matches!(self, Sink::Direct(_))
    }

    /// Whether the function's path ends read the preferential register too.
    pub(crate) fn reads_preferential_register(&self) -> bool {
        self.preferential_local().is_some()
    }

    /// The preferential register among the sink's locals, when the sink reads one.
    pub(crate) fn preferential_local(&self) -> Option<u32> {
        match self {
            Sink::Ppp(_) => Some(0),
            Sink::Supergraph(s) => s.preferential_local(),
            Sink::Array(_)
            | Sink::Table(_)
            | Sink::Hash
            | Sink::Sample(_)
            | Sink::Stream(_)
            | Sink::Burst(_)
            | Sink::Decode(_)
            | Sink::Direct(_) => None,
        }
    }

    /// Mode `ippp`: where the slots of the function's interesting supergraph paths lie, when it
    /// has them.
    pub(crate) fn supergraph_slots(&self) -> Option<PppSink> {
        match self {
            Sink::Supergraph(SupergraphSink { slots: Some(s), .. }) => Some(*s),
            _ => None,
        }
    }

    /// Whether the function adds its events where stretches of straight-line code start.
    pub(crate) fn counts_stretches(&self) -> bool {
        matches!(self, Sink::Direct(_))
    }

    /// The function's array of counters, which its loop and run counters add to, when it counts
    /// in one.
    pub(crate) fn array(&self) -> Option<ArraySink> {
        match self {
            Sink::Array(a) => Some(*a),
            Sink::Burst(BurstSink { counts: BurstCounts::Array(a) }) => Some(*a),
            Sink::Burst(BurstSink { counts: BurstCounts::Table(_) })
            | Sink::Table(_)
            | Sink::Hash
            | Sink::Sample(_)
            | Sink::Stream(_)
            | Sink::Ppp(_)
            | Sink::Decode(_)
            | Sink::Direct(_)
            | Sink::Supergraph(_) => None,
        }
    }

    /// Moves the function's preferential slots, numbered from the first slot until every array is
    /// placed, to `base`; whether it has any.
    pub(crate) fn place_slots(&mut self, base: u32) -> bool {
        match self {
            Sink::Ppp(s) => {
                s.offset += base;
                true
            }
            Sink::Supergraph(SupergraphSink { slots: Some(s), .. }) => {
                s.offset += base;
                true
            }
            Sink::Array(_)
            | Sink::Table(_)
            | Sink::Hash
            | Sink::Sample(_)
            | Sink::Stream(_)
            | Sink::Burst(_)
            | Sink::Decode(_)
            | Sink::Direct(_)
            | Sink::Supergraph(_) => false,
        }
    }

    /// Whether the function's register holds 64 bits whatever its paths: its path ends put the
    /// supergraph ID there.
    pub(crate) fn wide_register(&self) -> bool {
        matches!(self, Sink::Supergraph(s) if s.digits)
    }
}

/// A function of the profiler's own, appended to the module after the program's.
pub(crate) struct AppendedFunction {
    /// Its index in the instrumented module, and the index of its type.
    pub index: u32,
    pub ty: u32,
    pub params: &'static [ValType],
    pub body: Function,
}
