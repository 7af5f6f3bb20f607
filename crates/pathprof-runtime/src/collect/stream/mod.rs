//! The collector of the k-BLPP stream (`kbl`) [KBL13 §3], with the k-slab forest built on a second
//! core ("exploiting multiple cores").
//!
//! A full stream buffer in the profiler's memory calls [`HostImport::FlushStream`], which copies it
//! into one of two host buffers and hands it to the consumer thread; the consumer folds the items
//! into per-activation k-SF cursors ([`pathprof_core::kpath`]) while the program runs on and fills
//! the other. When both are in flight, the program waits for one: no item is ever lost. Once the
//! program has stopped, the items still in the buffer (and a pending repetition) are folded too,
//! and the forest is converted to the k-IPF, whose roots are the Ball–Larus counts of the streamed
//! functions; the functions counted in arrays and tables add theirs, and the count items
//! ([`StreamItem::Count`]: paths a bursty function's table could not hold) theirs.
//!
//! **Parallel folding** ([`ForestSettings::fold_threads`]). Every node of the k-SF lies in the tree
//! of the path that starts its slab, so the forest splits by root into disjoint parts: with `n`
//! consumer threads, thread `i` builds the trees of the roots of its [`Shard`] (a hash of the root's
//! label) and only moves the activations' cursors through the others'. Every thread reads every
//! buffer (shared, and given back when the last thread is done with it; two buffers per thread are
//! in flight); their k-IPFs, made in parallel at the end, add up to the forest a single thread
//! would have built ([`Kipf::add`]). The split is by root path, so a program whose slabs mostly
//! start with one path is folded mostly by one thread.

mod record;

pub use record::record_stream;

use super::burst::{BurstTimer, Bursts};
use super::{Collector, HostCall};
use crate::replay::HostRecord;
use anyhow::{anyhow, bail, ensure, Context, Result};
use pathprof_core::kpath::{Activations, Kipf, Options, Shard};
use pathprof_wasm::abi::{
    HostImport, StreamItem, StreamLayout, STREAM_COUNT, STREAM_ENTER, STREAM_LEAVE, STREAM_PATH_EXIT, STREAM_REPEAT,
};
use pathprof_wasm::map::{Counters, RawCounts, SinkLayout, StoredCounters};
use pathprof_wasm::ProfileMap;
use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the k-slab forest is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForestSettings {
    /// Longest k-iteration paths (at least 1).
    pub k: usize,
    /// Most k-SF nodes (see `pathprof_core::kpath` on bounded memory), shared evenly by the
    /// threads' forests.
    pub max_nodes: Option<usize>,
    /// Consumer threads folding the stream, each the trees of its [`Shard`]; by default
    /// [`default_fold_threads`].
    pub fold_threads: Option<usize>,
}

impl ForestSettings {
    /// The forest of sequences of up to `k` paths, unbounded, folded by the default threads.
    pub fn k(k: usize) -> ForestSettings {
        ForestSettings { k, max_nodes: None, fold_threads: None }
    }

    /// The consumer threads that fold the stream.
    pub fn threads(&self) -> usize {
        self.fold_threads.unwrap_or_else(default_fold_threads).max(1)
    }
}

/// The cores the program leaves free (it runs on one), at least one.
pub fn default_fold_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1)).max(1)
}

/// Facts of a run's k-slab forest.
#[derive(Clone, Copy, Debug, Default)]
pub struct KsfFacts {
    pub stream_items: u64,
    pub nodes: usize,
    pub sibling_scans: u64,
    /// Path IDs kept out by [`ForestSettings::max_nodes`].
    pub dropped: u64,
    /// Consumer threads that folded the stream.
    pub fold_threads: usize,
    /// Buffers of items handed to the consumer, and how long the program waited, all told, for
    /// the consumer to give one back: the part of the run that the consumer's speed bounds.
    pub handovers: u64,
    pub waited: Duration,
}

/// The end of a stream, as its consumer gets it.
pub struct StreamEnd {
    /// The counts of the functions counted in arrays and tables.
    pub arrays: RawCounts,
    /// The first items, as many as [`StreamCollector::record`] asked for.
    pub recorded: Vec<u64>,
    /// Buffers handed to the consumer, and how long the program waited for one to come back.
    pub handovers: u64,
    pub waited: Duration,
    /// The functions streamed during bursts only, whose counts are in `arrays`, and the bursts
    /// opened (bursty k-BLPP; `None` without bursts).
    pub sampled: Vec<u32>,
    pub bursts: Option<u64>,
}

/// What a streamed run gave.
#[derive(Debug)]
pub struct Streamed {
    /// Ball–Larus counts by function: the k-IPF's roots and the arrays.
    pub counts: RawCounts,
    /// The run's k-IPF (labels are `function << 32 | path ID`).
    pub kipf: Kipf,
    pub ksf: KsfFacts,
    /// The first items of the stream, as many as [`StreamCollector::record`] asked for.
    pub recorded: Vec<u64>,
    /// With bursts ([`StreamCollector::bursts`]): how many were opened. The k-IPF's roots then
    /// count the path ends streamed, and `counts` has every path end.
    pub bursts: Option<u64>,
}

/// Decodes a k-BLPP stream ([`StreamItem`]) into per-activation k-SFs.
pub struct StreamFolder {
    pub activations: Activations,
    /// The last item, which a repeat item repeats.
    last: u64,
    /// The count items ([`StreamItem::Count`]), by label: paths counted, not part of any sequence.
    counted: HashMap<u64, u64>,
}

impl StreamFolder {
    pub fn new(activations: Activations) -> Self {
        StreamFolder { activations, last: STREAM_ENTER, counted: HashMap::new() }
    }

    /// Counts `n` path ends of the count item `item`.
    fn count(&mut self, item: u64, n: u64) {
        *self.counted.entry(item & !STREAM_COUNT).or_insert(0) += n;
    }

    /// Folds the next items of the stream. This loop is the consumer thread's, and keeps up with the
    /// program only when it is fast: it tests the items' tag bits ([`StreamItem`] spells them out)
    /// rather than decoding each.
    pub fn fold(&mut self, items: &[u64]) {
        for &item in items {
            match item & STREAM_REPEAT {
                0 if item & STREAM_COUNT != 0 => self.count(item, 1),
                0 => self.activations.path(item),
                // The end of an activation's streamed window is, for its sequences, its return.
                STREAM_ENTER if item == STREAM_LEAVE => self.activations.exit(),
                STREAM_ENTER => self.activations.enter(),
                STREAM_PATH_EXIT => {
                    self.activations.path(item & !STREAM_REPEAT);
                    self.activations.exit();
                }
                _ => {
                    let n = item & !STREAM_REPEAT;
                    match self.last & STREAM_REPEAT {
                        0 if self.last & STREAM_COUNT != 0 => self.count(self.last, n),
                        0 => self.activations.path_run(self.last, n),
                        // Nested activations of one function may end with the same exit path in a row.
                        STREAM_PATH_EXIT => {
                            for _ in 0..n {
                                self.activations.path(self.last & !STREAM_REPEAT);
                                self.activations.exit();
                            }
                        }
                        // A run of entries is never written: each is counted apart.
                        _ => {
                            for _ in 0..n {
                                self.activations.enter();
                            }
                        }
                    }
                    continue;
                }
            }
            self.last = item;
        }
    }
}

/// The folders of a forest built as `settings` say, one per thread's [`Shard`] of the trees, each
/// with its share of the node bound.
fn folders(settings: ForestSettings) -> Vec<StreamFolder> {
    let threads = settings.threads();
    let max_nodes = settings.max_nodes.map(|n| n.div_ceil(threads));
    let options = Options { max_nodes, ..Default::default() };
    let k = settings.k.max(2);
    let of = threads as u32;
    let options = |index| Options { shard: Shard { index, of }, ..options };
    (0..of).map(|index| StreamFolder::new(Activations::with_options(k, options(index)))).collect()
}

/// Folds a whole recorded stream, `items`, on this thread, split into the shards of `settings`
/// as the consumer threads would split it.
pub fn fold_stream(items: &[u64], settings: ForestSettings) -> Result<Streamed> {
    let mut parts = folders(settings);
    for part in &mut parts {
        part.fold(items);
    }
    let end = StreamEnd {
        arrays: RawCounts::new(),
        recorded: Vec::new(),
        handovers: 0,
        waited: Duration::ZERO,
        sampled: Vec::new(),
        bursts: None,
    };
    StreamFolder::finish(parts, end)
}

/// What folds a stream as the program runs, on a thread of its own: the k-slab forest of `kbl`
/// ([`StreamFolder`]), or any other consumer of the same items (the hardware path profiler's
/// simulator of `hpp`).
pub trait StreamConsumer: Send + Sized + 'static {
    type Output: Send;
    /// Folds the next items of the stream, in order.
    fn fold(&mut self, items: &[u64]);
    /// The stream has ended: what the consumers that folded it, each on a thread, give together.
    fn finish(parts: Vec<Self>, end: StreamEnd) -> Result<Self::Output>;
}

impl StreamConsumer for StreamFolder {
    type Output = Streamed;

    fn fold(&mut self, items: &[u64]) {
        StreamFolder::fold(self, items)
    }

    /// The parts' k-IPFs, each made on a thread of its own, added up.
    fn finish(parts: Vec<StreamFolder>, end: StreamEnd) -> Result<Streamed> {
        let StreamEnd { arrays: mut counts, recorded, handovers, waited, sampled, bursts } = end;
        let mut ksf = KsfFacts { fold_threads: parts.len(), handovers, waited, ..KsfFacts::default() };
        for part in &parts {
            let forest = part.activations.forest();
            // Every part reads every item.
            ksf.stream_items = part.activations.items();
            ksf.nodes += forest.len();
            ksf.sibling_scans += forest.sibling_scans();
            ksf.dropped += forest.dropped();
        }
        let kipfs = std::thread::scope(|s| {
            let made: Vec<_> = parts.iter().map(|p| s.spawn(|| p.activations.forest().to_kipf())).collect();
            made.into_iter().map(|t| t.join().map_err(|_| anyhow!("making a k-IPF failed"))).collect::<Result<Vec<_>>>()
        })?;
        let mut kipf = Kipf { k: 0, roots: Vec::new() };
        for mine in kipfs {
            kipf.k = mine.k;
            kipf.add(mine);
        }
        // Every part read the count items: one part's are all of them.
        if let Some(part) = parts.first() {
            for (&label, &n) in &part.counted {
                counts.entry((label >> 32) as u32).or_default().push((label & 0xffff_ffff, n));
            }
        }
        // The 1-IPF is the Ball–Larus profile, but of the path ends streamed during bursts only.
        for root in &kipf.roots {
            let function = (root.path >> 32) as u32;
            if sampled.binary_search(&function).is_err() {
                counts.entry(function).or_default().push((root.path & 0xffff_ffff, root.count));
            }
        }
        Ok(Streamed { counts, kipf, ksf, recorded, bursts })
    }
}

/// A buffer of items that every consumer thread reads: given back to the program's side when the
/// last of them drops it.
struct SharedBuffer {
    items: Vec<u64>,
    free: Sender<Vec<u64>>,
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        // The program may have finished and stopped taking buffers back.
        let _ = self.free.send(std::mem::take(&mut self.items));
    }
}

/// The stream of one run, and its consumers `C`, each on a thread.
pub struct StreamCollector<C = StreamFolder> {
    layout: StreamLayout,
    stored: StoredCounters,
    /// Where full buffers go: one channel per consumer thread.
    full: Vec<Sender<Arc<SharedBuffer>>>,
    /// Where buffers come back, and what gives them back.
    free: Receiver<Vec<u64>>,
    give_back: Sender<Vec<u64>>,
    consumers: Vec<JoinHandle<C>>,
    /// The first `record` items of the stream, in order.
    record: usize,
    recorded: Vec<u64>,
    /// Buffers handed to the consumer.
    drains: u64,
    /// Time spent waiting for the consumer to give a buffer back.
    waited: Duration,
    /// The functions streamed during bursts only (sorted), the bursts, and their timer once the
    /// program runs.
    sampled: Vec<u32>,
    bursts: Option<Bursts>,
    timer: Option<BurstTimer>,
}

impl StreamCollector<StreamFolder> {
    /// The collector of a module instrumented to stream its paths into a k-slab forest; starts the
    /// consumer threads, each with its [`Shard`] of the trees and of the node bound.
    pub fn new(map: &ProfileMap, settings: ForestSettings) -> Result<StreamCollector> {
        StreamCollector::with_consumers(map, folders(settings))
    }
}

impl<C: StreamConsumer> StreamCollector<C> {
    /// The collector of a module instrumented to stream its paths into `consumer`; starts the
    /// consumer thread.
    pub fn with_consumer(map: &ProfileMap, consumer: C) -> Result<StreamCollector<C>> {
        Self::with_consumers(map, vec![consumer])
    }

    /// The collector of a module instrumented to stream its paths into `consumers`, every one of
    /// which reads every item; starts a thread for each.
    pub fn with_consumers(map: &ProfileMap, consumers: Vec<C>) -> Result<StreamCollector<C>> {
        let SinkLayout::Stream(layout) = map.sink else {
            bail!("this module was not instrumented to stream its paths");
        };
        ensure!(!consumers.is_empty(), "a stream needs a consumer");
        let (give_back, free) = channel();
        // Two buffers for one consumer: one filled while the other is folded. More consumers run
        // apart: a few more let one that is behind catch up while the others go on.
        let buffers = if consumers.len() == 1 { 2 } else { 2 * consumers.len() };
        for _ in 0..buffers {
            let _ = give_back.send(Vec::with_capacity(layout.capacity as usize));
        }
        let (full, consumers) = consumers
            .into_iter()
            .map(|mut consumer| {
                let (full, full_rx) = channel::<Arc<SharedBuffer>>();
                let thread = std::thread::spawn(move || {
                    for buffer in full_rx {
                        consumer.fold(&buffer.items);
                    }
                    consumer
                });
                (full, thread)
            })
            .unzip();
        let mut sampled: Vec<u32> = map
            .functions
            .iter()
            .filter(|f| {
                f.probes().is_some_and(|p| matches!(p.counters, Counters::Burst { .. } | Counters::BurstTable { .. }))
            })
            .map(|f| f.index)
            .collect();
        sampled.sort_unstable();
        Ok(StreamCollector {
            layout,
            stored: map.stored_counters(),
            sampled,
            bursts: None,
            timer: None,
            full,
            free,
            give_back,
            consumers,
            record: 0,
            recorded: Vec::new(),
            drains: 0,
            waited: Duration::ZERO,
        })
    }

    /// Opens `bursts` while the program runs, during which the functions instrumented for bursts
    /// stream their paths (bursty k-BLPP); without, they stream none.
    pub fn bursts(mut self, bursts: Bursts) -> StreamCollector<C> {
        self.bursts = Some(bursts);
        self
    }

    /// Keeps the first `n` items of the stream in order (in [`Streamed::recorded`]).
    pub fn record(mut self, n: usize) -> StreamCollector<C> {
        self.record = n;
        self
    }

    /// The items handed to the consumer so far, in order, as many as recorded.
    pub fn recorded(&self) -> &[u64] {
        &self.recorded
    }

    /// How many times the buffer was handed to the consumer.
    pub fn drains(&self) -> u64 {
        self.drains
    }

    /// Hands the items of the buffer to the consumer and empties the buffer; at the `end` of the run,
    /// also the repetitions of the last item still pending.
    pub fn drain(&mut self, data: &mut [u8], end: bool) -> Result<()> {
        let (items, run) = buffered(&self.layout, data);
        let run = if end { run } else { 0 };
        if items.len() == 0 && run == 0 {
            return Ok(());
        }
        self.hand_over(|buffer| {
            buffer.extend(items);
            if run > 0 {
                buffer.push(StreamItem::Repeat(run).encode());
            }
        })?;
        if run > 0 {
            data[self.layout.run as usize..self.layout.run as usize + 8].fill(0);
        }
        let at = self.layout.index as usize;
        data[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
        Ok(())
    }

    /// Hands the consumer a buffer that `fill` fills, waiting for one to come back if both are in
    /// flight.
    fn hand_over(&mut self, fill: impl FnOnce(&mut Vec<u64>)) -> Result<()> {
        let lost = || anyhow!("the stream's consumer thread stopped");
        let asked = Instant::now();
        let mut buffer = self.free.recv().map_err(|_| lost())?;
        self.waited += asked.elapsed();
        buffer.clear();
        fill(&mut buffer);
        super::record(&mut self.recorded, self.record, buffer.iter().copied());
        self.drains += 1;
        ensure!(!self.full.is_empty(), "the stream was already finished");
        let shared = Arc::new(SharedBuffer { items: buffer, free: self.give_back.clone() });
        for full in &self.full {
            full.send(Arc::clone(&shared)).map_err(|_| lost())?;
        }
        Ok(())
    }

    /// Waits for the consumers to fold the last buffer.
    fn join(&mut self) -> Result<Vec<C>> {
        self.full.clear();
        ensure!(!self.consumers.is_empty(), "the stream was already finished");
        let threads = std::mem::take(&mut self.consumers);
        threads.into_iter().map(|t| t.join().map_err(|_| anyhow!("the stream's consumer thread failed"))).collect()
    }
}

impl<C: StreamConsumer> Collector for StreamCollector<C> {
    type Output = C::Output;

    const IMPORT: Option<HostImport> = Some(HostImport::FlushStream);

    fn host_call(&mut self, call: HostCall<'_>) -> Result<()> {
        let HostCall::Memory(data) = call else { bail!("flush_stream takes no path") };
        self.drain(data, false)
    }

    /// The items a host flushed, handed to the consumer in buffers of the stream's capacity, once
    /// they and the items still in the buffer of `memory` are found to be a stream the module
    /// could have written.
    fn replay(&mut self, host: &HostRecord, memory: Option<&[u8]>) -> Result<()> {
        ensure!(host.counts.is_empty(), "the host recorded path counts, which this module does not pass it");
        let (pending, run) = memory.map_or_else(
            || (Vec::new(), 0),
            |data| {
                let (items, run) = buffered(&self.layout, data);
                (items.collect(), run)
            },
        );
        let run = (run > 0).then(|| StreamItem::Repeat(run).encode());
        check_stream(host.stream.iter().chain(&pending).chain(&run).copied())?;
        for items in host.stream.chunks(self.layout.capacity.max(1) as usize) {
            self.hand_over(|buffer| buffer.extend_from_slice(items))?;
        }
        Ok(())
    }

    /// Opens the bursts, if any.
    fn start(&mut self, memory: Option<&mut [u8]>) -> Result<()> {
        if let Some(bursts) = self.bursts {
            let Some(memory) = memory else { bail!("the streamed module does not export its profiler memory") };
            self.timer = Some(BurstTimer::start(memory, bursts)?);
        }
        Ok(())
    }

    fn finish(&mut self, memory: Option<&mut [u8]>) -> Result<C::Output> {
        let bursts = self.bursts.map(|_| self.timer.take().map_or(0, BurstTimer::finish));
        // The items still in the buffer, also after a trap.
        let mut counts = RawCounts::new();
        let drained = match memory {
            Some(data) => {
                let drained = self.drain(data, true);
                self.stored.read(data, &mut counts);
                drained
            }
            None => Ok(()),
        };
        let consumers = self.join()?;
        drained?;
        C::finish(
            consumers,
            StreamEnd {
                arrays: counts,
                recorded: std::mem::take(&mut self.recorded),
                handovers: self.drains,
                waited: self.waited,
                sampled: std::mem::take(&mut self.sampled),
                bursts,
            },
        )
    }
}

/// The items in the stream buffer of `data` (at most its capacity), and the repetitions of the
/// last item not yet appended.
fn buffered<'d>(layout: &StreamLayout, data: &'d [u8]) -> (impl ExactSizeIterator<Item = u64> + 'd, u64) {
    let word = |at: u32| u64::from_le_bytes(data[at as usize..at as usize + 8].try_into().expect("8 bytes"));
    let at = layout.index as usize;
    let n = u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes")).min(layout.capacity) as usize;
    let base = layout.buffer as usize;
    let items = data[base..base + 8 * n].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")));
    (items, word(layout.run))
}

/// Most exits in a row of one path: more activations than a stack holds.
const MAX_EXIT_RUN: u64 = 1 << 24;

/// Refuses what no instrumented module writes and what would make a fold take forever or overflow
/// its counts: a repetition of an entry, or of nothing, a run of more exits than a stack holds, and
/// more path ends than 2^63.
fn check_stream(items: impl Iterator<Item = u64>) -> Result<()> {
    let mut last = None;
    let mut ends = 0u64;
    for item in items {
        let n = match (StreamItem::decode(item), last) {
            (StreamItem::Repeat(n), Some(StreamItem::Path { .. } | StreamItem::Count { .. })) => n,
            (StreamItem::Repeat(n), Some(StreamItem::ExitPath { .. })) if n <= MAX_EXIT_RUN => n,
            (StreamItem::Repeat(_), Some(StreamItem::ExitPath { .. })) => {
                bail!("the stream ends more activations in a row than a stack holds")
            }
            (StreamItem::Repeat(_), _) => bail!("the stream repeats an item that no module repeats"),
            (decoded, _) => {
                last = Some(decoded);
                1
            }
        };
        ends = ends.checked_add(n).filter(|&e| e <= 1 << 63).context("the stream is longer than any run")?;
    }
    Ok(())
}

impl<C> Drop for StreamCollector<C> {
    fn drop(&mut self) {
        self.full.clear();
        for consumer in self.consumers.drain(..) {
            let _ = consumer.join();
        }
    }
}

#[cfg(test)]
mod tests;
