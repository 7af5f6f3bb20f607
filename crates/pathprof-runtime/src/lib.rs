//! Runs WebAssembly programs under an embedded Wasmtime with WASI preview 1 and collects path counts.
//!
//! The host provides the Sightglass imports `bench.start`/`bench.end` (recording the wall time between
//! them), the `pathprof.count_path` import of hash-counted functions (an exact host hash table), and
//! nothing else: the program sees only the directories and environment variables granted in
//! [`RunConfig`]. When the program traps or calls `proc_exit`, the counters are read all the same and
//! the number of activations still on the stack is taken from the trap's backtrace.

use anyhow::{anyhow, bail, ensure, Result};
use pathprof_wasm::map::RawCounts;
use pathprof_wasm::ProfileMap;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::{Caller, Config, Linker, Store, Val, ValType, WasmBacktrace};
pub use wasmtime::{Engine, Module};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{I32Exit, WasiCtxBuilder};

/// Most output kept when capturing a program's stdout or stderr.
const CAPTURE_LIMIT: usize = 256 << 20;

/// Exit status reported when the program traps (as a process killed by `SIGABRT` would).
pub const TRAP_EXIT_CODE: i32 = 134;

/// What the program may see and how it is started.
#[derive(Clone, Debug, Default)]
pub struct RunConfig {
    /// `(host directory, guest path)` pre-opened for the program.
    pub dirs: Vec<(PathBuf, String)>,
    pub env: Vec<(String, String)>,
    /// `argv`, including the program name.
    pub args: Vec<String>,
    /// Exported function to call instead of `_start`; its arguments are `args[1..]`.
    pub invoke: Option<String>,
    /// Capture stdout and stderr (and give an empty stdin) instead of inheriting the host's.
    pub capture_output: bool,
    /// How to sample, for a module instrumented in sampled mode.
    pub sampling: Sampling,
    /// Longest k-iteration paths, for a module instrumented in stream mode (at least 1).
    pub k: usize,
    /// Stream mode: most k-SF nodes (see `pathprof_core::kpath` on bounded memory).
    pub max_nodes: Option<usize>,
    /// Stream mode: keep the first `record_stream` items of the stream in [`RunOutcome::stream`].
    pub record_stream: usize,
}

/// Sampling of path ends (PEP, seed 004 §3.3): simplified Arnold–Grove sampling driven by a timer.
///
/// Path ends — at loop headers and function exits, where the JVM has its yieldpoints — test the
/// module's sampling flag, a word of its profiler memory. At every tick a timer thread collects the
/// samples of the last tick from the module's sample buffer and asks for the next: a rotating stride
/// of `1..=stride` path ends go by, then the next `samples` are written to the buffer (see
/// `pathprof_wasm::map::SampleBufferLayout`). With `every`, the module is instrumented to call the
/// host instead: the flag stays set and every `every`-th path end is recorded, deterministically.
#[derive(Clone, Debug)]
pub struct Sampling {
    pub samples: u32,
    pub stride: u32,
    pub every: Option<u64>,
    pub tick: Duration,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling { samples: 64, stride: 17, every: None, tick: Duration::from_micros(250) }
    }
}

impl Sampling {
    /// The sample buffer a module sampled this way is instrumented with (slots for `samples` path
    /// ends), or `None` for `every`, whose path ends call the host instead.
    pub fn sample_buffer(&self) -> Option<u32> {
        self.every.is_none().then_some(self.samples)
    }
}

/// A word of the instance's profiler memory, at a fixed address because that memory never grows (its
/// minimum is its maximum, and no instruction grows it): the timer thread may use it while the
/// program runs.
struct Word<T> {
    at: *const T,
}

impl<T> Clone for Word<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Word<T> {}

// SAFETY: the word lives in the instance's profiler memory, which outlives every holder of the word:
// the store owns the memory and the sampler, and the timer thread is joined as soon as the call into
// the instance returns, before the store can be dropped.
unsafe impl<T> Send for Word<T> {}

impl<T> Word<T> {
    /// The word at `offset` of `memory`.
    fn new(memory: &wasmtime::Memory, store: &impl wasmtime::AsContext, offset: u32) -> Result<Word<T>> {
        let data = memory.data(store);
        let (offset, size) = (offset as usize, std::mem::size_of::<T>());
        ensure!(
            offset.is_multiple_of(size) && offset + size <= data.len(),
            "a sampling word lies outside the profiler's memory"
        );
        Ok(Word { at: data[offset..].as_ptr() as *const T })
    }

    fn get(&self) -> &T {
        // SAFETY: the word is aligned and inside the memory (checked in `new`; the memory is
        // page-aligned), and the memory neither moves nor is freed while the word is in use (see
        // `Send`). Compiled code reads and writes it while this thread accesses it atomically, which
        // is how Wasmtime itself publishes its epoch counter to compiled code.
        unsafe { &*self.at }
    }
}

/// The sampling flag: the number of samples still to take (a path end samples while it is not 0).
type Flag = Word<AtomicU32>;

impl Flag {
    fn set(&self, armed: bool) {
        self.get().store(u32::from(armed), Ordering::Relaxed);
    }
}

/// The sample buffer of a module whose path ends do not call the host (see
/// `pathprof_wasm::map::SampleBufferLayout`).
#[derive(Clone, Copy)]
struct SampleBuffer {
    flag: Flag,
    skip: Word<AtomicU32>,
    index: Word<AtomicU32>,
    first: Word<AtomicU64>,
    slots: u32,
    random: Option<Word<AtomicU32>>,
    missed: Option<Word<AtomicU32>>,
}

impl SampleBuffer {
    fn new(
        memory: &wasmtime::Memory,
        store: &impl wasmtime::AsContext,
        flag: Flag,
        layout: pathprof_wasm::map::SampleBufferLayout,
    ) -> Result<SampleBuffer> {
        ensure!(
            layout.atomic || cfg!(target_arch = "x86_64"),
            "this module's sample buffer relies on x86-64's store order; instrument it on this machine"
        );
        let slots = layout.slots.max(1);
        // The last slot must lie inside the memory too.
        Word::<AtomicU64>::new(memory, store, layout.buffer + 8 * (slots - 1))?;
        Ok(SampleBuffer {
            flag,
            skip: Word::new(memory, store, layout.skip)?,
            index: Word::new(memory, store, layout.index)?,
            first: Word::new(memory, store, layout.buffer)?,
            slots,
            random: layout.random.map(|offset| Word::new(memory, store, offset)).transpose()?,
            missed: layout.missed.map(|offset| Word::new(memory, store, offset)).transpose()?,
        })
    }

    /// Moves the samples out of the buffer into `out`. Only while the module writes none: while the
    /// flag is 0, or once the program no longer runs.
    fn take(&self, out: &mut Vec<u64>) {
        let n = self.index.get().load(Ordering::Relaxed).min(self.slots) as usize;
        // SAFETY: the slots follow the first one, and the last lies inside the memory (checked in
        // `new`); see `Word::get`.
        out.extend((0..n).map(|i| unsafe { &*self.first.at.add(i) }.load(Ordering::Relaxed)));
        self.index.get().store(0, Ordering::Relaxed);
    }

    /// If the module took all the samples asked for, moves them into `out` and asks for the next
    /// `samples` after `skip` path ends, with `random` and no missed tick yet for the loops that ran
    /// without probes; otherwise leaves the module to finish, and counts the tick as missed (for
    /// those loops).
    fn rearm(&self, out: &mut Vec<u64>, skip: u32, samples: u32, random: u32) -> bool {
        if self.flag.get().load(Ordering::Acquire) != 0 {
            if let Some(word) = &self.missed {
                word.get().fetch_add(1, Ordering::Relaxed);
            }
            return false;
        }
        self.take(out);
        self.skip.get().store(skip, Ordering::Relaxed);
        if let Some(word) = &self.random {
            word.get().store(random, Ordering::Relaxed);
        }
        if let Some(word) = &self.missed {
            word.get().store(0, Ordering::Relaxed);
        }
        self.flag.get().store(self.per_tick(samples), Ordering::Release);
        true
    }

    /// How many samples the host asks for at a tick when the user asks for `samples`: also the size
    /// of a burst that a loop copy did not take.
    fn per_tick(&self, samples: u32) -> u32 {
        samples.clamp(1, self.slots)
    }
}

/// The host's side of sampling.
#[derive(Default)]
struct Sampler {
    config: Option<Sampling>,
    flag: Option<Flag>,
    /// Ticks of the timer thread; `seen` of them already turned into a stride.
    ticks: std::sync::Arc<std::sync::atomic::AtomicU64>,
    seen: u64,
    /// Path ends still to let go by before the next sample.
    skip: u64,
    /// Samples still to take in this tick.
    left: u32,
    /// The stride of the last tick.
    stride: u32,
    taken: u64,
}

/// The facts of one run.
#[derive(Debug)]
pub struct RunOutcome {
    pub exit_code: i32,
    pub trap: Option<String>,
    /// Compile time of the module.
    pub compile_seconds: f64,
    /// Instantiation and execution.
    pub wall_seconds: f64,
    pub bench_region_seconds: Option<f64>,
    /// Activations of profiled functions still open when the program stopped.
    pub open_activations: u64,
    /// Path counts by original function index (empty without a map).
    pub counts: RawCounts,
    /// Results of `--invoke`, formatted one per line.
    pub results: Vec<String>,
    /// Captured output, with [`RunConfig::capture_output`].
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Entries of the host's hash table of path counts.
    pub hash_entries: usize,
    /// Sampled mode: timer ticks and samples taken.
    pub ticks: u64,
    pub samples: u64,
    /// Stream mode: the k-IPF of the run (labels are `function << 32 | path ID`).
    pub kipf: Option<pathprof_core::kpath::Kipf>,
    /// Stream mode: how the k-SF was built.
    pub ksf: Option<KsfFacts>,
    /// Stream mode: the first [`RunConfig::record_stream`] items of the stream.
    pub stream: Vec<u64>,
}

/// Facts of a run's k-slab forest.
#[derive(Clone, Copy, Debug, Default)]
pub struct KsfFacts {
    pub stream_items: u64,
    pub nodes: usize,
    pub sibling_scans: u64,
    /// Path IDs kept out by [`RunConfig::max_nodes`].
    pub dropped: u64,
}

struct Host {
    wasi: WasiP1Ctx,
    bench_start: Option<Instant>,
    bench_region: Option<Duration>,
    hash_counts: HashMap<(u32, u64), u64>,
    sampler: Sampler,
    stream: Option<Stream>,
}

/// The program's side of a k-BLPP stream (seed 000 §3, "exploiting multiple cores"): a full buffer in
/// the profiler's memory is copied into one of two host buffers and handed to the consumer thread,
/// which folds it into the k-SF while the program runs on and fills the other. When both are in
/// flight, the program waits for one: no item is ever lost.
struct Stream {
    layout: pathprof_wasm::map::StreamLayout,
    memory: Option<wasmtime::Memory>,
    full: Option<std::sync::mpsc::Sender<Vec<u64>>>,
    free: std::sync::mpsc::Receiver<Vec<u64>>,
    consumer: Option<std::thread::JoinHandle<Consumed>>,
}

/// Decodes a k-BLPP stream (see `pathprof_wasm::map::StreamLayout`) into per-activation k-SFs.
pub struct StreamFolder {
    pub activations: pathprof_core::kpath::Activations,
    /// The last item, which a run item repeats.
    last: u64,
}

impl StreamFolder {
    pub fn new(activations: pathprof_core::kpath::Activations) -> Self {
        StreamFolder { activations, last: pathprof_wasm::instrument::STREAM_ENTER }
    }

    /// Folds the next items of the stream.
    pub fn fold(&mut self, items: &[u64]) {
        use pathprof_wasm::instrument::{STREAM_ENTER, STREAM_PATH_EXIT, STREAM_RUN_TAG};
        for &item in items {
            match item & STREAM_RUN_TAG {
                0 => self.activations.path(item),
                STREAM_ENTER => self.activations.enter(),
                STREAM_PATH_EXIT => {
                    self.activations.path(item & !STREAM_RUN_TAG);
                    self.activations.exit();
                }
                _ => {
                    let n = item & !STREAM_RUN_TAG;
                    match self.last & STREAM_RUN_TAG {
                        0 => self.activations.path_run(self.last, n),
                        // Nested activations of one function may end with the same exit path in a row.
                        STREAM_PATH_EXIT => {
                            for _ in 0..n {
                                self.activations.path(self.last & !STREAM_RUN_TAG);
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

/// What the consumer thread built.
struct Consumed {
    activations: pathprof_core::kpath::Activations,
    recorded: Vec<u64>,
}

impl Stream {
    fn start(layout: pathprof_wasm::map::StreamLayout, config: &RunConfig) -> Stream {
        let (full, full_rx) = std::sync::mpsc::channel::<Vec<u64>>();
        let (free_tx, free) = std::sync::mpsc::channel();
        for _ in 0..2 {
            let _ = free_tx.send(Vec::with_capacity(layout.capacity as usize));
        }
        let options = pathprof_core::kpath::Options { max_nodes: config.max_nodes, ..Default::default() };
        let (k, record) = (config.k.max(2), config.record_stream);
        let consumer = std::thread::spawn(move || {
            let mut folder = StreamFolder::new(pathprof_core::kpath::Activations::with_options(k, options));
            let mut recorded = Vec::new();
            for buffer in full_rx {
                if recorded.len() < record {
                    recorded.extend(buffer.iter().take(record - recorded.len()));
                }
                folder.fold(&buffer);
                // The program may have finished and stopped taking buffers back.
                let _ = free_tx.send(buffer);
            }
            Consumed { activations: folder.activations, recorded }
        });
        Stream { layout, memory: None, full: Some(full), free, consumer: Some(consumer) }
    }

    /// Hands the items of the buffer to the consumer and empties the buffer; at the `end` of the run,
    /// also the repetitions of the last item still pending.
    fn drain(&mut self, mut store: impl wasmtime::AsContextMut, end: bool) -> Result<()> {
        let Some(memory) = self.memory else { return Ok(()) };
        let data = memory.data_mut(&mut store);
        let word = |data: &[u8], at: u32| u64::from_le_bytes(data[at as usize..at as usize + 8].try_into().expect("8"));
        let at = self.layout.index as usize;
        let n = u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes")).min(self.layout.capacity) as usize;
        let run = if end { word(data, self.layout.run) } else { 0 };
        if n == 0 && run == 0 {
            return Ok(());
        }
        let lost = || anyhow!("the k-SF consumer thread stopped");
        let mut buffer = self.free.recv().map_err(|_| lost())?;
        buffer.clear();
        let base = self.layout.buffer as usize;
        buffer.extend(data[base..base + 8 * n].chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8"))));
        if run > 0 {
            buffer.push(pathprof_wasm::instrument::STREAM_RUN_TAG | run);
            data[self.layout.run as usize..self.layout.run as usize + 8].fill(0);
        }
        data[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
        self.full.as_ref().ok_or_else(lost)?.send(buffer).map_err(|_| lost())
    }

    /// Waits for the consumer to fold the last buffer.
    fn finish(mut self) -> Result<Consumed> {
        drop(self.full.take());
        let consumer = self.consumer.take().expect("joined once");
        consumer.join().map_err(|_| anyhow!("the k-SF consumer thread failed"))
    }
}

impl Host {
    /// A path end while the flag was set: after a new tick, start a stride; let the stride go by, then
    /// record until this tick's samples are taken and clear the flag.
    fn sample(&mut self, func: u32, id: u64) {
        let s = &mut self.sampler;
        let Some(config) = s.config.as_ref() else { return };
        if config.every.is_none() {
            let ticks = s.ticks.load(std::sync::atomic::Ordering::Relaxed);
            if ticks != s.seen {
                s.seen = ticks;
                s.stride = s.stride % config.stride.max(1) + 1;
                s.skip = u64::from(s.stride - 1);
                s.left = config.samples;
            }
            if s.left == 0 {
                if let Some(f) = &s.flag {
                    f.set(false);
                }
                return;
            }
        }
        if s.skip > 0 {
            s.skip -= 1;
            return;
        }
        *self.hash_counts.entry((func, id)).or_insert(0) += 1;
        s.taken += 1;
        match config.every {
            Some(every) => s.skip = every - 1,
            None => {
                s.left -= 1;
                if s.left == 0 {
                    if let Some(f) = &s.flag {
                        f.set(false);
                    }
                }
            }
        }
    }
}

/// A Wasmtime engine configured for profiling runs.
pub fn engine() -> Result<Engine> {
    let mut config = Config::new();
    config.wasm_multi_memory(true);
    // Programs may declare shared memories and use atomics.
    config.wasm_threads(true);
    config.shared_memory(true);
    Ok(Engine::new(&config)?)
}

/// Compiles a module, returning it with the compile time in seconds.
pub fn compile(engine: &Engine, bytes: &[u8]) -> Result<(Module, f64)> {
    let start = Instant::now();
    let module = Module::new(engine, bytes).map_err(|e| anyhow!("cannot compile the module: {e}"))?;
    Ok((module, start.elapsed().as_secs_f64()))
}

/// Compiles and runs `bytes` (an instrumented module described by `map`, or any module when `map` is
/// `None`).
pub fn run(engine: &Engine, bytes: &[u8], map: Option<&ProfileMap>, config: &RunConfig) -> Result<RunOutcome> {
    let (module, compile_seconds) = compile(engine, bytes)?;
    let mut outcome = run_module(engine, &module, map, config)?;
    outcome.compile_seconds = compile_seconds;
    Ok(outcome)
}

/// Runs a compiled module in a fresh instance.
pub fn run_module(
    engine: &Engine,
    module: &Module,
    map: Option<&ProfileMap>,
    config: &RunConfig,
) -> Result<RunOutcome> {
    let compile_seconds = 0.0;
    let mut wasi = WasiCtxBuilder::new();
    let pipes = if config.capture_output {
        let out = MemoryOutputPipe::new(CAPTURE_LIMIT);
        let err = MemoryOutputPipe::new(CAPTURE_LIMIT);
        wasi.stdout(out.clone()).stderr(err.clone());
        Some((out, err))
    } else {
        wasi.inherit_stdio();
        None
    };
    wasi.args(&config.args);
    for (k, v) in &config.env {
        wasi.env(k, v);
    }
    for (host, guest) in &config.dirs {
        wasi.preopened_dir(host, guest, wasmtime_wasi::FsPerms::ReadWrite)
            .map_err(|e| anyhow!("cannot open directory {}: {e}", host.display()))?;
    }
    let sampled = map.and_then(|m| m.sample_flag).is_some();
    let host = Host {
        wasi: wasi.build_p1(),
        bench_start: None,
        bench_region: None,
        hash_counts: HashMap::new(),
        sampler: Sampler { config: sampled.then(|| config.sampling.clone()), ..Sampler::default() },
        stream: map.and_then(|m| m.stream).map(|layout| Stream::start(layout, config)),
    };
    let mut store = Store::new(engine, host);
    let mut linker: Linker<Host> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |h: &mut Host| &mut h.wasi)?;
    linker.func_wrap("bench", "start", |mut caller: Caller<'_, Host>| {
        caller.data_mut().bench_start = Some(Instant::now());
    })?;
    linker.func_wrap("bench", "end", |mut caller: Caller<'_, Host>| {
        let host = caller.data_mut();
        if let Some(start) = host.bench_start.take() {
            *host.bench_region.get_or_insert(Duration::ZERO) += start.elapsed();
        }
    })?;
    if let Some((m, n)) = map.and_then(|m| m.count_import.as_ref()) {
        if map.is_some_and(|m| m.stream.is_some()) {
            let export = map.and_then(|m| m.memory_export.clone());
            linker.func_wrap(m, n, move |mut caller: Caller<'_, Host>| -> wasmtime::Result<()> {
                // The start function may fill the buffer before instantiation hands out the instance.
                if caller.data().stream.as_ref().is_some_and(|s| s.memory.is_none()) {
                    let memory = export.as_deref().and_then(|e| caller.get_export(e)).and_then(|e| e.into_memory());
                    if let Some(stream) = caller.data_mut().stream.as_mut() {
                        stream.memory = memory;
                    }
                }
                if let Some(mut stream) = caller.data_mut().stream.take() {
                    let drained = stream.drain(&mut caller, false);
                    caller.data_mut().stream = Some(stream);
                    drained.map_err(wasmtime::Error::from_anyhow)?;
                }
                Ok(())
            })?;
        } else if sampled {
            linker.func_wrap(m, n, |mut caller: Caller<'_, Host>, func: i32, id: i64| {
                caller.data_mut().sample(func as u32, id as u64);
            })?;
        } else {
            linker.func_wrap(m, n, |mut caller: Caller<'_, Host>, func: i32, id: i64| {
                *caller.data_mut().hash_counts.entry((func as u32, id as u64)).or_insert(0) += 1;
            })?;
        }
    }
    let timer = sampled && config.sampling.every.is_none();
    for import in module.imports() {
        if linker.get_by_import(&mut store, &import).is_none() {
            bail!(
                "unknown import: {}::{} (pathprof provides WASI preview 1, bench.start and bench.end)",
                import.module(),
                import.name()
            );
        }
    }

    let run_start = Instant::now();
    let mut results = Vec::new();
    let (instance, outcome) = match linker.instantiate(&mut store, module) {
        Err(e) => (None, Err(e)),
        Ok(instance) => {
            if let (Some(name), true) = (map.and_then(|m| m.memory_export.as_ref()), store.data().stream.is_some()) {
                let memory = instance.get_memory(&mut store, name);
                if let Some(stream) = store.data_mut().stream.as_mut() {
                    stream.memory = memory;
                }
            }
            let (mut ticker, mut sample_buffer) = (None, None);
            if let (Some(offset), Some(name)) =
                (map.and_then(|m| m.sample_flag), map.and_then(|m| m.memory_export.as_ref()))
            {
                let memory = instance
                    .get_memory(&mut store, name)
                    .ok_or_else(|| anyhow!("the instrumented module does not export its memory ({name})"))?;
                let flag = Flag::new(&memory, &store, offset)?;
                if let Some(layout) = map.and_then(|m| m.sample_buffer) {
                    ensure!(
                        config.sampling.every.is_none(),
                        "this module keeps its samples in a buffer for the timer; sampling every N path ends needs one instrumented without it"
                    );
                    ensure!(
                        config.sampling.samples <= layout.slots,
                        "this module's sample buffer holds {} samples a tick, not {}",
                        layout.slots,
                        config.sampling.samples
                    );
                    sample_buffer = Some(SampleBuffer::new(&memory, &store, flag, layout)?);
                }
                if let Some(every) = config.sampling.every {
                    store.data_mut().sampler.skip = every.max(1) - 1;
                    flag.set(true);
                }
                if timer {
                    let ticks = store.data().sampler.ticks.clone();
                    ticker = Some(Ticker::start(flag, sample_buffer, ticks, &config.sampling));
                }
                store.data_mut().sampler.flag = Some(flag);
            }
            let r = call_entry(&mut store, &instance, config, &mut results);
            let mut buffered = ticker.map(Ticker::finish).unwrap_or_default();
            // The samples of the last tick (the program no longer writes any).
            if let Some(b) = &sample_buffer {
                b.take(&mut buffered);
            }
            // The bursts that loop copies did not take, each of a tick's samples.
            let mut bursts = Vec::new();
            if let (Some(map), Some(b), Some(export)) =
                (map, &sample_buffer, map.and_then(|m| m.memory_export.as_ref()))
            {
                if let Some(memory) = instance.get_memory(&mut store, export) {
                    let per_tick = u64::from(b.per_tick(config.sampling.samples));
                    bursts = map.read_loop_bursts(memory.data(&store));
                    bursts.iter_mut().for_each(|(_, _, n)| *n *= per_tick);
                }
            }
            let host = store.data_mut();
            host.sampler.taken += buffered.len() as u64;
            for item in buffered {
                *host.hash_counts.entry(((item >> 32) as u32, item & 0xffff_ffff)).or_insert(0) += 1;
            }
            for (func, path, n) in bursts {
                host.sampler.taken += n;
                *host.hash_counts.entry((func, path)).or_insert(0) += n;
            }
            (Some(instance), r)
        }
    };
    let wall_seconds = run_start.elapsed().as_secs_f64();

    let (exit_code, trap, open_frames) = match outcome {
        Ok(()) => (0, None, Vec::new()),
        Err(e) if e.downcast_ref::<NoEntry>().is_some() => bail!("{e}"),
        Err(e) => {
            let frames: Vec<u32> = e
                .downcast_ref::<WasmBacktrace>()
                .map(|bt| bt.frames().iter().map(|f| f.func_index()).collect())
                .unwrap_or_default();
            if let Some(exit) = e.downcast_ref::<I32Exit>() {
                (exit.0, None, frames)
            } else {
                let msg = match e.downcast_ref::<wasmtime::Trap>() {
                    Some(t) => t.to_string(),
                    None => format!("{e:#}").lines().next().unwrap_or_default().to_string(),
                };
                (TRAP_EXIT_CODE, Some(msg), frames)
            }
        }
    };

    // The items still in the buffer, also after a trap.
    let (mut kipf, mut ksf, mut recorded) = (None, None, Vec::new());
    if let Some(mut stream) = store.data_mut().stream.take() {
        let drained = stream.drain(&mut store, true);
        let consumed = stream.finish()?;
        drained?;
        let a = &consumed.activations;
        ksf = Some(KsfFacts {
            stream_items: a.items(),
            nodes: a.forest().len(),
            sibling_scans: a.forest().sibling_scans(),
            dropped: a.forest().dropped(),
        });
        kipf = Some(a.forest().to_kipf());
        recorded = consumed.recorded;
    }
    let mut counts = RawCounts::new();
    let open_activations;
    if let Some(map) = map {
        // A sampled module has no counter arrays.
        if let (Some(instance), Some(export), None) = (instance, &map.memory_export, map.sample_flag) {
            let memory = instance
                .get_memory(&mut store, export)
                .ok_or_else(|| anyhow!("the instrumented module does not export its counters ({export})"))?;
            map.read_array_counters(memory.data(&store), &mut counts);
        }
        for (&(func, id), &c) in &store.data().hash_counts {
            counts.entry(func).or_default().push((id, c));
        }
        // The 1-IPF is the Ball–Larus profile.
        for root in kipf.iter().flat_map(|f| &f.roots) {
            counts.entry((root.path >> 32) as u32).or_default().push((root.path & 0xffff_ffff, root.count));
        }
        // Frames report indices of the instrumented module, which has one more import when hash
        // counters are in use.
        let shift = u32::from(map.count_import.is_some());
        let profiled: std::collections::HashSet<u32> =
            map.functions.iter().filter(|f| f.probes.is_some()).map(|f| f.index).collect();
        let first_defined = map.functions.first().map_or(0, |f| f.index);
        open_activations =
            open_frames.iter().filter(|&&i| i >= first_defined + shift && profiled.contains(&(i - shift))).count()
                as u64;
    } else {
        open_activations = open_frames.len() as u64;
    }
    let bench_region_seconds = store.data().bench_region.map(|d| d.as_secs_f64());
    let hash_entries = store.data().hash_counts.len();
    let ticks = store.data().sampler.ticks.load(std::sync::atomic::Ordering::Relaxed);
    let samples = store.data().sampler.taken;
    let (stdout, stderr) = match pipes {
        Some((out, err)) => (out.contents().to_vec(), err.contents().to_vec()),
        None => (Vec::new(), Vec::new()),
    };
    Ok(RunOutcome {
        exit_code,
        trap,
        compile_seconds,
        wall_seconds,
        bench_region_seconds,
        open_activations,
        counts,
        results,
        stdout,
        stderr,
        hash_entries,
        ticks,
        samples,
        kipf,
        ksf,
        stream: recorded,
    })
}

/// The timer: a thread that counts a tick every `tick` until stopped. At each tick it sets the
/// sampling flag or, for a module with a sample buffer, collects the samples of the last tick and
/// asks for the next (after a stride rotating through `1..=stride` path ends).
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<u64>>>,
}

impl Ticker {
    fn start(flag: Flag, buffer: Option<SampleBuffer>, ticks: Arc<AtomicU64>, sampling: &Sampling) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let done = stop.clone();
        let Sampling { samples, stride, tick, .. } = sampling.clone();
        let thread = std::thread::spawn(move || {
            let mut taken = Vec::new();
            let mut last = 0;
            // xorshift32: the loops that ran without probes need only an even spread.
            let mut random = 0x9e37_79b9u32;
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                ticks.fetch_add(1, Ordering::Relaxed);
                match &buffer {
                    None => flag.set(true),
                    Some(b) => {
                        let next = last % stride.max(1) + 1;
                        random ^= random << 13;
                        random ^= random >> 17;
                        random ^= random << 5;
                        if b.rearm(&mut taken, next - 1, samples, random) {
                            last = next;
                        }
                    }
                }
            }
            taken
        });
        Ticker { stop, thread: Some(thread) }
    }

    /// Stops the timer; returns the samples it collected from a sample buffer.
    fn finish(mut self) -> Vec<u64> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(taken)) => taken,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Vec::new(),
        }
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

fn call_entry(
    store: &mut Store<Host>,
    instance: &wasmtime::Instance,
    config: &RunConfig,
    results: &mut Vec<String>,
) -> wasmtime::Result<()> {
    match &config.invoke {
        None => {
            let start = instance.get_typed_func::<(), ()>(&mut *store, "_start").map_err(|_| {
                wasmtime::Error::new(NoEntry("the module exports no `_start` function; use --invoke FUNC".into()))
            })?;
            start.call(&mut *store, ())
        }
        Some(name) => {
            let func = instance
                .get_func(&mut *store, name)
                .ok_or_else(|| wasmtime::Error::new(NoEntry(format!("the module exports no function `{name}`"))))?;
            let ty = func.ty(&*store);
            let args: Vec<&String> = config.args.iter().skip(1).collect();
            if args.len() != ty.params().len() {
                return Err(wasmtime::Error::new(NoEntry(format!(
                    "`{name}` takes {} arguments, {} given",
                    ty.params().len(),
                    args.len()
                ))));
            }
            let params = ty
                .params()
                .zip(args)
                .map(|(t, a)| parse_val(&t, a))
                .collect::<Result<Vec<_>>>()
                .map_err(|e| wasmtime::Error::new(NoEntry(e.to_string())))?;
            let mut out = vec![Val::I32(0); ty.results().len()];
            func.call(&mut *store, &params, &mut out)?;
            results.extend(out.iter().map(format_val));
            Ok(())
        }
    }
}

/// The program could not be started (no entry point, bad `--invoke` arguments).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NoEntry(pub String);

fn parse_val(ty: &ValType, s: &str) -> Result<Val> {
    let bad = || anyhow!("cannot read {s:?} as {ty}");
    Ok(match ty {
        ValType::I32 => Val::I32(s.parse::<i32>().or_else(|_| s.parse::<u32>().map(|v| v as i32)).map_err(|_| bad())?),
        ValType::I64 => Val::I64(s.parse::<i64>().or_else(|_| s.parse::<u64>().map(|v| v as i64)).map_err(|_| bad())?),
        ValType::F32 => Val::F32(s.parse::<f32>().map_err(|_| bad())?.to_bits()),
        ValType::F64 => Val::F64(s.parse::<f64>().map_err(|_| bad())?.to_bits()),
        _ => bail!("--invoke supports only numeric parameters"),
    })
}

fn format_val(v: &Val) -> String {
    match v {
        Val::I32(x) => x.to_string(),
        Val::I64(x) => x.to_string(),
        Val::F32(x) => f32::from_bits(*x).to_string(),
        Val::F64(x) => f64::from_bits(*x).to_string(),
        other => format!("{other:?}"),
    }
}
