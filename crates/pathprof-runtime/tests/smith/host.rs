//! The host of the instrumented instances: the runtime's own collectors, one per mode, linked into
//! one linker with the host functions that generated modules may import; and what the test reads of
//! an instance at some point (its counts, its samples, its stream).

use crate::check::{Mode, Variant};
use crate::{INSTRUMENTED_FUEL, MAX_BACKTRACE, MAX_WASM_STACK, SAMPLE_SKIP, SAMPLE_SLOTS};
use pathprof_runtime::{
    Collector, CountCollector, ForestSettings, HostCall, SampleCollector, Sampling, SegmentConsumer, StreamCollector,
};
use pathprof_wasm::abi::{HostImport, StreamItem, IMPORT_MODULE, MEMORY_EXPORT, SAMPLE_FLAG};
use pathprof_wasm::map::{RawCounts, SinkLayout};
use pathprof_wasm::ProfileMap;
use std::collections::HashMap;
use wasmtime::{Caller, Engine, Instance, Linker, Store};

/// The store data of an instance: the collector of its mode (none for the original module).
#[derive(Default)]
pub struct Host {
    pub count: Option<CountCollector>,
    pub sample: Option<SampleCollector>,
    pub stream: Option<StreamCollector>,
    pub segments: Option<StreamCollector<SegmentConsumer>>,
}

impl Host {
    pub fn sample(&self) -> &SampleCollector {
        self.sample.as_ref().expect("a sampled instance has a sample collector")
    }

    /// The items the stream collector (`kbl`'s or `ips`'s) handed to its consumer so far.
    pub fn recorded(&self) -> &[u64] {
        match (&self.stream, &self.segments) {
            (Some(c), _) => c.recorded(),
            (None, Some(c)) => c.recorded(),
            (None, None) => panic!("a streaming instance has a stream collector"),
        }
    }

    /// How many times the stream collector drained a full buffer.
    pub fn drains(&self) -> u64 {
        match (&self.stream, &self.segments) {
            (Some(c), _) => c.drains(),
            (None, Some(c)) => c.drains(),
            (None, None) => panic!("a streaming instance has a stream collector"),
        }
    }
}

pub fn engine() -> Engine {
    let mut c = wasmtime::Config::new();
    c.consume_fuel(true)
        .wasm_multi_memory(true)
        .wasm_multi_value(true)
        .wasm_bulk_memory(true)
        .wasm_reference_types(true)
        .wasm_simd(true)
        .wasm_relaxed_simd(true)
        .wasm_tail_call(true)
        .wasm_memory64(true)
        .wasm_extended_const(true)
        .wasm_function_references(true)
        .wasm_gc(true)
        .wasm_exceptions(true)
        .wasm_threads(true)
        .shared_memory(true)
        .wasm_backtrace_max_frames(std::num::NonZeroUsize::new(MAX_BACKTRACE))
        .max_wasm_stack(MAX_WASM_STACK)
        .async_stack_size(MAX_WASM_STACK + (1 << 20))
        .cranelift_nan_canonicalization(false);
    Engine::new(&c).expect("engine configuration")
}

/// A linker with the imports of every collector, and the functions of `HOST_IMPORTS`.
pub fn linker(engine: &Engine) -> Linker<Host> {
    let mut linker: Linker<Host> = Linker::new(engine);
    CountCollector::link(&mut linker, |h: &mut Host| h.count.as_mut().expect("a count collector"), None).unwrap();
    SampleCollector::link(&mut linker, |h: &mut Host| h.sample.as_mut().expect("a sample collector"), None).unwrap();
    // The flush import of both stream collectors, `kbl`'s and `ips`'s, whichever the store has.
    linker
        .func_wrap(
            IMPORT_MODULE,
            HostImport::FlushStream.name(),
            |mut caller: Caller<'_, Host>| -> wasmtime::Result<()> {
                let memory = caller.get_export(MEMORY_EXPORT).and_then(|e| e.into_memory());
                let lost =
                    || wasmtime::Error::from_anyhow(anyhow::anyhow!("the module does not export its profiler memory"));
                let memory = memory.ok_or_else(lost)?;
                let (data, host) = memory.data_and_store_mut(&mut caller);
                let call = HostCall::Memory(data);
                let flushed = match (&mut host.stream, &mut host.segments) {
                    (Some(c), _) => c.host_call(call),
                    (None, Some(c)) => c.host_call(call),
                    (None, None) => panic!("a stream collector"),
                };
                flushed.map_err(wasmtime::Error::from_anyhow)
            },
        )
        .unwrap();
    // The functions of `HOST_IMPORTS`.
    linker.func_wrap("env", "f_i32", |x: i32| x.wrapping_mul(3).wrapping_add(1)).unwrap();
    linker.func_wrap("env", "f_void", || {}).unwrap();
    linker.func_wrap("env", "f_multi", |a: i64, b: f64| (a as i32, a ^ b.to_bits() as i64)).unwrap();
    linker
}

/// One side of the comparison.
pub struct Side {
    pub store: Store<Host>,
    pub instance: Instance,
}

/// A store for an instrumented module, with its mode's collector and its fuel for instantiation:
/// `pep` samples every path end (once armed, see [`arm_sampling`]) and records the samples in order;
/// `pep-buffer` has a buffer of `SAMPLE_SLOTS` samples and no timer; `kbl`, `kbl-burst` (without
/// bursts of its own: see [`set_burst_flag`]) and `ips` record their streams (`ips` folds its IPSs at
/// the variant's depth); `ppp` counts as `bl` does.
pub fn instrumented_store(engine: &Engine, v: &Variant) -> Store<Host> {
    let mut host = Host::default();
    match v.mode {
        Mode::Counts | Mode::Ppp | Mode::EventPaths | Mode::Decode | Mode::Direct => {
            host.count = Some(CountCollector::new(&v.map).unwrap())
        }
        Mode::Sampled => {
            host.sample = Some(SampleCollector::new(&v.map, Sampling::Every(1)).unwrap().record(usize::MAX))
        }
        Mode::SampleBuffer => {
            let sampling = Sampling::Timer { samples: SAMPLE_SLOTS, stride: 1, tick: std::time::Duration::MAX };
            host.sample = Some(SampleCollector::new(&v.map, sampling).unwrap().record(usize::MAX));
        }
        Mode::Stream | Mode::Bursts => {
            let forest = ForestSettings::k(2);
            host.stream = Some(StreamCollector::new(&v.map, forest).unwrap().record(usize::MAX));
        }
        Mode::Segments => {
            let consumer = SegmentConsumer::new(&v.map, v.ips.as_ref().expect("an ips variant's setup").k);
            host.segments = Some(StreamCollector::with_consumer(&v.map, consumer).unwrap().record(usize::MAX));
        }
    }
    let mut store = Store::new(engine, host);
    store.set_fuel(INSTRUMENTED_FUEL).unwrap();
    store
}

/// The profiler's memory of an instance, with its store's data.
pub fn profiler_memory<'a>(map: &ProfileMap, side: &'a mut Side) -> Result<(&'a mut [u8], &'a mut Host), String> {
    let name = map.memory_export.as_deref().ok_or("the module has no profiler memory")?;
    let memory =
        side.instance.get_memory(&mut side.store, name).ok_or_else(|| format!("memory {name:?} is not exported"))?;
    Ok(memory.data_and_store_mut(&mut side.store))
}

/// Starts sampling after instantiation: `pep` samples every path end from now on (the collector
/// sets the flag for good); `pep-buffer` asks its collector's buffer for `SAMPLE_SLOTS` samples after
/// `SAMPLE_SKIP` path ends, once.
pub fn arm_sampling(map: &ProfileMap, side: &mut Side) -> Result<(), String> {
    let (data, host) = profiler_memory(map, side)?;
    let sample = host.sample.as_mut().ok_or("no sample collector")?;
    match map.sink {
        SinkLayout::Sample { buffer: Some(_), .. } => {
            sample.attach(data).map_err(|e| e.to_string())?;
            let buffer = sample.buffer().ok_or("no sample buffer")?;
            if !buffer.rearm(&mut Vec::new(), SAMPLE_SKIP, SAMPLE_SLOTS, 0) {
                return Err("the sample buffer's flag was set before the host armed it".into());
            }
            Ok(())
        }
        _ => sample.start(Some(data)).map_err(|e| e.to_string()),
    }
}

/// Sets the burst flag of a `kbl-burst` instance (`on`) or clears it, for good: while it is set, the
/// functions instrumented for bursts stream their paths.
pub fn set_burst_flag(map: &ProfileMap, side: &mut Side, on: bool) -> Result<(), String> {
    let (data, _) = profiler_memory(map, side)?;
    let at = SAMPLE_FLAG as usize;
    data[at..at + 4].copy_from_slice(&u32::from(on).to_le_bytes());
    Ok(())
}

/// What an instrumented instance had counted at some point.
pub struct Snapshot {
    /// The counts in its arrays and tables, and in the count collector's table.
    pub counts: RawCounts,
    /// The number of samples, or of stream items the host had drained.
    pub len: usize,
    /// Stream mode: the items in the buffer, whether it was full (only possible when the call ran
    /// out of fuel before the flush import), and the pending repetitions of the last item. Sampled
    /// mode with a buffer: the samples in the buffer.
    pub buffer: Vec<u64>,
    pub full: bool,
    pub run: u64,
    /// Sampled mode with a buffer: the flag (samples still to take) and the path ends still to skip.
    /// Stream mode: the burst flag.
    pub flag: u64,
    pub skip: u64,
    /// Event modes: the event counters of the functions that have them.
    pub events: HashMap<u32, Vec<u64>>,
}

/// The `u64` items of a buffer at `buffer` whose `i32` length is at `index`, at most `capacity`.
fn buffered(data: &[u8], index: u32, buffer: u32, capacity: u32, what: &str) -> Result<Vec<u64>, String> {
    let n = word(data, index, 4);
    if n > u64::from(capacity) {
        return Err(format!("the {what} holds {n} items"));
    }
    Ok((0..n).map(|i| word(data, buffer + 8 * i as u32, 8)).collect())
}

/// What the instance of `map` recorded so far, read as the ABI lays it out.
pub fn snapshot(map: &ProfileMap, side: &mut Side) -> Result<Snapshot, String> {
    let mut s = Snapshot {
        counts: RawCounts::new(),
        len: 0,
        buffer: Vec::new(),
        full: false,
        run: 0,
        flag: 0,
        skip: 0,
        events: HashMap::new(),
    };
    if map.memory_export.is_none() {
        // Every function counted by the host.
        let count = side.store.data().count.as_ref().ok_or("a module without a profiler memory counts exactly")?;
        s.counts = count.counts(None);
        return Ok(s);
    }
    let (data, host) = profiler_memory(map, side)?;
    let (data, host): (Option<&[u8]>, &Host) = (Some(data), host);
    match map.sink {
        SinkLayout::Count { .. } | SinkLayout::Ppp { .. } => {
            let count = host.count.as_ref().ok_or("no count collector")?;
            s.counts = count.counts(data);
            s.events = count.events(data);
        }
        SinkLayout::Sample { buffer, .. } => {
            s.len = host.sample().recorded().len();
            if let (Some(layout), Some(data)) = (buffer, data) {
                s.buffer = buffered(data, layout.index, layout.buffer, layout.slots, "sample buffer")?;
                s.flag = word(data, SAMPLE_FLAG, 4);
                s.skip = word(data, layout.skip, 4);
            }
        }
        SinkLayout::Stream(layout) => {
            s.len = host.recorded().len();
            let data = data.ok_or("a streaming module without a profiler memory")?;
            map.stored_counters().read(data, &mut s.counts);
            s.buffer = buffered(data, layout.index, layout.buffer, layout.capacity, "stream buffer")?;
            s.full = s.buffer.len() == layout.capacity as usize;
            s.run = word(data, layout.run, 8);
            s.flag = word(data, SAMPLE_FLAG, 4);
        }
    }
    Ok(s)
}

/// The stream of a stream instance at snapshot `s`, from item `from` on: the items drained, then
/// those in the buffer, then the pending repetitions as a repeat item (as the runtime drains it at
/// the end). After running out of fuel (`torn`), the instance may have stopped between appending
/// the repeat item and clearing the count, which is then left out.
pub fn stream_items(host: &Host, s: &Snapshot, from: usize, torn: bool) -> Vec<u64> {
    let drained = &host.recorded()[..s.len];
    let mut items: Vec<u64> = drained.iter().chain(&s.buffer).skip(from).copied().collect();
    let last = s.buffer.last().or(drained.last());
    if s.run > 0 && !(torn && last.is_some_and(|&i| matches!(StreamItem::decode(i), StreamItem::Repeat(_)))) {
        items.push(StreamItem::Repeat(s.run).encode());
    }
    items
}

/// The little-endian word of `bytes` bytes at `at`.
pub fn word(data: &[u8], at: u32, bytes: usize) -> u64 {
    let mut b = [0u8; 8];
    b[..bytes].copy_from_slice(&data[at as usize..at as usize + bytes]);
    u64::from_le_bytes(b)
}
