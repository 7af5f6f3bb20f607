//! The collector of sampled path ends (`pep`): simplified Arnold–Grove sampling [PEP05 §3.3, AG05]
//! driven by a timer.
//!
//! Path ends — at loop headers and function exits, where the JVM has its yieldpoints — test the
//! module's sampling flag, a word of its profiler memory. At every tick a timer thread collects the
//! samples of the last tick from the module's sample buffer and asks for the next: a rotating stride
//! of `1..=stride` path ends go by, then the next `samples` are written to the buffer (see
//! [`SampleBufferLayout`]). A loop that ran a copy without probes while ticks went by adds a burst
//! of samples of its path for each tick it kept the host from arming the flag. With
//! [`Sampling::Every`], the module is instrumented without a buffer and calls the host instead: the
//! flag stays set and every N-th path end is recorded, deterministically.

use super::{Collector, HostCall};
use crate::replay::HostRecord;
use crate::words::{Flag, Word};
use anyhow::{bail, ensure, Result};
use pathprof_wasm::abi::{sample_parts, HostImport, SampleBufferLayout, SAMPLE_FLAG};
use pathprof_wasm::map::{read_bursts, LoopBursts, RawCounts, SinkLayout};
use pathprof_wasm::ProfileMap;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How path ends are sampled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sampling {
    /// PEP(`samples`, `stride`): after every `tick`, a rotating stride of `1..=stride` path ends go
    /// by, then the next `samples` are taken (from a buffer of that many slots).
    Timer { samples: u32, stride: u32, tick: Duration },
    /// Every N-th path end, passed to the host (deterministic; every path end calls it).
    Every(u64),
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling::Timer { samples: 64, stride: 17, tick: Duration::from_micros(250) }
    }
}

impl Sampling {
    /// The sample buffer a module sampled this way is instrumented with (slots for the samples of a
    /// tick), or `None` for [`Sampling::Every`], whose path ends call the host instead.
    pub fn sample_buffer(&self) -> Option<u32> {
        match *self {
            Sampling::Timer { samples, .. } => Some(samples),
            Sampling::Every(_) => None,
        }
    }
}

/// The words of a module's sample buffer (see [`SampleBufferLayout`]).
#[derive(Clone, Copy)]
pub struct SampleBuffer {
    flag: Flag,
    skip: Word<AtomicU32>,
    index: Word<AtomicU32>,
    first: Word<AtomicU64>,
    slots: u32,
    random: Word<AtomicU32>,
    missed: Word<AtomicU32>,
}

impl SampleBuffer {
    /// The buffer laid out as `layout` says in the profiler's memory `memory`.
    pub fn new(memory: &[u8], layout: SampleBufferLayout) -> Result<SampleBuffer> {
        ensure!(
            layout.atomic || cfg!(target_arch = "x86_64"),
            "this module's sample buffer relies on x86-64's store order; instrument it on this machine"
        );
        let slots = layout.slots.max(1);
        // The last slot must lie inside the memory too.
        Word::<AtomicU64>::new(memory, layout.buffer + 8 * (slots - 1))?;
        Ok(SampleBuffer {
            flag: Word::new(memory, SAMPLE_FLAG)?,
            skip: Word::new(memory, layout.skip)?,
            index: Word::new(memory, layout.index)?,
            first: Word::new(memory, layout.buffer)?,
            slots,
            random: Word::new(memory, layout.random)?,
            missed: Word::new(memory, layout.missed)?,
        })
    }

    /// Moves the samples out of the buffer into `out`. Only while the module writes none: while the
    /// flag is 0, or once the program no longer runs.
    pub fn take(&self, out: &mut Vec<u64>) {
        let n = self.index.get().load(Ordering::Relaxed).min(self.slots) as usize;
        // SAFETY: the slots follow the first one, and the last lies inside the memory (checked in
        // `new`).
        out.extend((0..n).map(|i| unsafe { self.first.add(i) }.get().load(Ordering::Relaxed)));
        self.index.get().store(0, Ordering::Relaxed);
    }

    /// If the module took all the samples asked for, moves them into `out` and asks for the next
    /// `samples` after `skip` path ends, with `random` and no missed tick yet for the loops that ran
    /// without probes; otherwise leaves the module to finish, and counts the tick as missed (for
    /// those loops).
    pub fn rearm(&self, out: &mut Vec<u64>, skip: u32, samples: u32, random: u32) -> bool {
        if self.flag.get().load(Ordering::Acquire) != 0 {
            self.missed.get().fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.take(out);
        self.skip.get().store(skip, Ordering::Relaxed);
        self.random.get().store(random, Ordering::Relaxed);
        self.missed.get().store(0, Ordering::Relaxed);
        self.flag.get().store(self.per_tick(samples), Ordering::Release);
        true
    }

    /// How many samples the host asks for at a tick when the user asks for `samples`: also the size
    /// of a burst that a loop copy did not take.
    pub fn per_tick(&self, samples: u32) -> u32 {
        samples.clamp(1, self.slots)
    }
}

/// Sampled path ends of one run.
pub struct SampleCollector {
    sampling: Sampling,
    buffer_layout: Option<SampleBufferLayout>,
    bursts: Vec<(u32, LoopBursts)>,
    /// Samples by `(function, path ID)`.
    counts: HashMap<(u32, u64), u64>,
    /// [`Sampling::Every`]: path ends still to let go by before the next sample.
    skip: u64,
    /// The first `record` samples, in order.
    record: usize,
    recorded: Vec<(u32, u64)>,
    taken: u64,
    buffer: Option<SampleBuffer>,
    ticker: Option<Ticker>,
    ticks: Arc<AtomicU64>,
}

/// What a sampled run gave.
#[derive(Debug)]
pub struct Sampled {
    /// Samples by function.
    pub counts: RawCounts,
    /// Timer ticks during the run, and samples taken.
    pub ticks: u64,
    pub samples: u64,
    /// The first samples, in order, as many as [`SampleCollector::record`] asked for.
    pub recorded: Vec<(u32, u64)>,
}

impl SampleCollector {
    /// The collector of a module instrumented for `sampling`.
    pub fn new(map: &ProfileMap, sampling: Sampling) -> Result<SampleCollector> {
        let SinkLayout::Sample { buffer, .. } = map.sink else {
            bail!("this module was not instrumented to sample its paths");
        };
        match (sampling, buffer) {
            (Sampling::Timer { samples, .. }, Some(layout)) => ensure!(
                samples <= layout.slots,
                "this module's sample buffer holds {} samples a tick, not {samples}",
                layout.slots
            ),
            (Sampling::Every(_), None) => {}
            (Sampling::Every(_), Some(_)) => bail!(
                "this module keeps its samples in a buffer for the timer; sampling every N path ends needs one instrumented without it"
            ),
            (Sampling::Timer { .. }, None) => {
                bail!("this module passes every sampled path end to the host; timer sampling needs a sample buffer")
            }
        }
        Ok(SampleCollector {
            sampling,
            buffer_layout: buffer,
            bursts: map.loop_bursts(),
            counts: HashMap::new(),
            skip: 0,
            record: 0,
            recorded: Vec::new(),
            taken: 0,
            buffer: None,
            ticker: None,
            ticks: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Keeps the first `n` samples in order (in [`Sampled::recorded`]).
    pub fn record(mut self, n: usize) -> SampleCollector {
        self.record = n;
        self
    }

    /// Finds the sampling words in the profiler's memory, without setting the flag.
    pub fn attach(&mut self, memory: &mut [u8]) -> Result<()> {
        if let Some(layout) = self.buffer_layout {
            self.buffer = Some(SampleBuffer::new(memory, layout)?);
        }
        Ok(())
    }

    /// The module's sample buffer, once attached.
    pub fn buffer(&self) -> Option<&SampleBuffer> {
        self.buffer.as_ref()
    }

    /// The samples passed to the host so far ([`Sampling::Every`]), in order, as many as recorded.
    pub fn recorded(&self) -> &[(u32, u64)] {
        &self.recorded
    }

    /// Counts a sample.
    fn add(&mut self, func: u32, id: u64, n: u64) {
        *self.counts.entry((func, id)).or_insert(0) += n;
        self.taken += n;
        super::record(&mut self.recorded, self.record, std::iter::repeat_n((func, id), n as usize));
    }

    /// A path end while the flag was set: with [`Sampling::Every`], let `every - 1` go by, then
    /// record one; on the timer, a sample of a function whose path IDs do not fit the buffer's items.
    fn sample(&mut self, func: u32, id: u64) {
        let Sampling::Every(every) = self.sampling else {
            self.add(func, id, 1);
            return;
        };
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        self.add(func, id, 1);
        self.skip = every - 1;
    }
}

impl Collector for SampleCollector {
    type Output = Sampled;

    const IMPORT: Option<HostImport> = Some(HostImport::SamplePath);

    fn host_call(&mut self, call: HostCall<'_>) -> Result<()> {
        let HostCall::Path { function, path } = call else { bail!("sample_path takes a path") };
        self.sample(function, path);
        Ok(())
    }

    /// The samples a host kept of the path ends passed to it, every N-th as [`Sampling::Every`]
    /// keeps them.
    fn replay(&mut self, host: &HostRecord, _: Option<&[u8]>) -> Result<()> {
        ensure!(
            matches!(self.sampling, Sampling::Every(_)),
            "timer sampling needs pathprof's own host: a run recorded elsewhere samples every N path ends"
        );
        ensure!(host.stream.is_empty(), "the host recorded a stream, which this module does not write");
        for &(function, path, n) in &host.counts {
            self.add(function, path, n);
        }
        Ok(())
    }

    /// Starts sampling: every N-th path end from now on, or the timer.
    fn start(&mut self, memory: Option<&mut [u8]>) -> Result<()> {
        let Some(memory) = memory else { bail!("the sampled module does not export its profiler memory") };
        self.attach(memory)?;
        match self.sampling {
            Sampling::Every(every) => {
                self.skip = every.max(1) - 1;
                Flag::new(memory, SAMPLE_FLAG)?.set(1);
            }
            Sampling::Timer { samples, stride, tick } => {
                let buffer = self.buffer.expect("attached: timer sampling has a buffer");
                self.ticker = Some(Ticker::start(buffer, self.ticks.clone(), samples, stride, tick));
            }
        }
        Ok(())
    }

    /// The samples so far: those the host counted, those the timer collected, and the bursts of the
    /// loops that ran without probes (the samples of the tick under way are left to later).
    fn snapshot(&mut self, memory: Option<&mut [u8]>) -> Option<Result<Sampled>> {
        let mut counts = self.counts.clone();
        let mut taken = self.taken;
        let mut add = |func: u32, id: u64, n: u64| {
            *counts.entry((func, id)).or_insert(0) += n;
            taken += n;
        };
        for item in self.ticker.as_ref().map(Ticker::collected).unwrap_or_default() {
            let (func, id) = sample_parts(item);
            add(func, id, 1);
        }
        if let (Some(b), Some(memory), Sampling::Timer { samples, .. }) = (self.buffer, memory, self.sampling) {
            let per_tick = u64::from(b.per_tick(samples));
            for (func, bursts) in &self.bursts {
                let n = read_bursts(memory, bursts) * per_tick;
                if n > 0 {
                    add(*func, bursts.path, n);
                }
            }
        }
        let mut raw = RawCounts::new();
        super::add_host_counts(&mut raw, &counts);
        Some(Ok(Sampled {
            counts: raw,
            ticks: self.ticks.load(Ordering::Relaxed),
            samples: taken,
            recorded: Vec::new(),
        }))
    }

    fn finish(&mut self, memory: Option<&mut [u8]>) -> Result<Sampled> {
        let mut buffered = self.ticker.take().map(Ticker::finish).unwrap_or_default();
        if let (Some(b), Some(memory)) = (self.buffer, memory) {
            // The samples of the last tick (the program no longer writes any).
            b.take(&mut buffered);
            for item in buffered {
                let (func, id) = sample_parts(item);
                self.add(func, id, 1);
            }
            // The bursts that loop copies did not take, each of a tick's samples.
            let Sampling::Timer { samples, .. } = self.sampling else { unreachable!("a buffer samples on a timer") };
            let per_tick = u64::from(b.per_tick(samples));
            for (func, bursts) in std::mem::take(&mut self.bursts) {
                let n = read_bursts(memory, &bursts) * per_tick;
                if n > 0 {
                    self.add(func, bursts.path, n);
                }
            }
        }
        let mut counts = RawCounts::new();
        super::add_host_counts(&mut counts, &self.counts);
        Ok(Sampled {
            counts,
            ticks: self.ticks.load(Ordering::Relaxed),
            samples: self.taken,
            recorded: std::mem::take(&mut self.recorded),
        })
    }
}

/// The timer: a thread that counts a tick every `tick` until stopped. At each tick it collects the
/// samples of the last tick from the sample buffer and asks for the next (after a stride rotating
/// through `1..=stride` path ends).
struct Ticker {
    stop: Arc<AtomicBool>,
    /// The samples collected so far.
    taken: Arc<Mutex<Vec<u64>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(buffer: SampleBuffer, ticks: Arc<AtomicU64>, samples: u32, stride: u32, tick: Duration) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let done = stop.clone();
        let taken = Arc::new(Mutex::new(Vec::new()));
        let collected = taken.clone();
        let thread = std::thread::spawn(move || {
            let mut tick_samples = Vec::new();
            let mut last = 0;
            // xorshift32: the loops that ran without probes need only an even spread.
            let mut random = 0x9e37_79b9u32;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                ticks.fetch_add(1, Ordering::Relaxed);
                let next = last % stride.max(1) + 1;
                random ^= random << 13;
                random ^= random >> 17;
                random ^= random << 5;
                if buffer.rearm(&mut tick_samples, next - 1, samples, random) {
                    last = next;
                }
                if !tick_samples.is_empty() {
                    collected.lock().expect("the samples' lock").append(&mut tick_samples);
                }
            }
        });
        Ticker { stop, taken, thread: Some(thread) }
    }

    /// The samples collected so far.
    fn collected(&self) -> Vec<u64> {
        self.taken.lock().expect("the samples' lock").clone()
    }

    /// Stops the timer; returns the samples it collected from the sample buffer.
    fn finish(mut self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(Err(panic)) = self.thread.take().map(|t| t.join()) {
            std::panic::resume_unwind(panic);
        }
        std::mem::take(&mut *self.taken.lock().expect("the samples' lock"))
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
