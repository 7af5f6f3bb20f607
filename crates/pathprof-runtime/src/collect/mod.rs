//! Collectors: the host's side of each way of recording path ends.
//!
//! A profiling mode's instrumented module records its paths through the sink the instrumenter gave
//! it (`pathprof_wasm::instrument::sink`); its collector is the other end of the same ABI
//! (`pathprof_wasm::abi`): it defines the host imports the module calls, starts the threads that
//! work beside the program, and, once the program has stopped — returned, trapped or called
//! `proc_exit` — reads what the profiler's memory holds. One file per collector:
//!
//! * [`count`] — exact counts (`bl`): arrays in the profiler's memory and the host's hash table;
//! * [`sample`] — sampled path ends (`pep`) [PEP05 §3.3]: a timer thread and a sample buffer, or
//!   every N-th path end passed to the host;
//! * [`stream`] — the k-BLPP stream (`kbl`) [KBL13 §3], folded into a k-slab forest by a second
//!   thread while the program runs; [`burst`] opens and closes the bursts of bursty k-BLPP
//!   (`kbl:K:burst`) [KBL13 §6];
//! * [`segments`] — the same stream with call markers (`ips`), folded into interprocedural path
//!   segments [PPP07 §3.4.1].
//!
//! A collector lives in the data of the store that runs the program, reached through an accessor
//! as WASI's context is (`get`), so that any embedding — the runtime's [`run_module`](crate::run_module)
//! or a test's own store — runs a module with the real host.

pub mod burst;
pub mod count;
pub mod sample;
pub mod segments;
pub mod stream;

use crate::replay::HostRecord;
use anyhow::{anyhow, Result};
use pathprof_wasm::abi::{HostImport, HIGH_KEY, IMPORT_MODULE};
use pathprof_wasm::map::RawCounts;
use std::collections::HashMap;
use std::sync::OnceLock;
use wasmtime::{Caller, Linker, Memory};

/// Adds the counts the host kept by `(function, path ID)` to `counts`, by function.
fn add_host_counts(counts: &mut RawCounts, host: &HashMap<(u32, u64), u64>) {
    for (&(func, id), &c) in host {
        counts.entry(func).or_default().push((id, c));
    }
}

/// Keeps the first `limit` items of a stream in `recorded`: as many of `items` as there is room for.
fn record<T>(recorded: &mut Vec<T>, limit: usize, items: impl Iterator<Item = T>) {
    let room = limit.saturating_sub(recorded.len());
    recorded.extend(items.take(room));
}

/// A call of the module's host import ([`Collector::IMPORT`]).
pub enum HostCall<'a> {
    /// An import that takes a path: the function and the path ID the module passed.
    Path { function: u32, path: u64 },
    /// `count_path` with [`HIGH_KEY`] set on the function: an ID whose high keys the module wrote to
    /// the profiler's memory, `memory` ([`HIGH_KEYS`](pathprof_wasm::abi::HIGH_KEYS)).
    Wide { function: u32, path: u64, memory: &'a [u8] },
    /// An import that takes nothing, and works on the profiler's memory.
    Memory(&'a mut [u8]),
}

/// The profiler's memory of the module calling a host import, found by its export name at the
/// first call and kept: the imports [`Collector::link`] defines serve the one store their linker
/// instantiates in. A path end that passes high keys reads it at every call (docs/PERFORMANCE.md
/// measures the lookup this spares).
struct ProfilerMemory {
    export: Option<String>,
    found: OnceLock<Memory>,
}

impl ProfilerMemory {
    fn new(export: Option<&str>) -> ProfilerMemory {
        ProfilerMemory { export: export.map(str::to_string), found: OnceLock::new() }
    }

    fn get<T>(&self, caller: &mut Caller<'_, T>) -> wasmtime::Result<Memory> {
        if let Some(&memory) = self.found.get() {
            return Ok(memory);
        }
        let memory = self.export.as_deref().and_then(|e| caller.get_export(e)).and_then(|e| e.into_memory());
        let memory = memory
            .ok_or_else(|| wasmtime::Error::from_anyhow(anyhow!("the module does not export its profiler memory")))?;
        Ok(*self.found.get_or_init(|| memory))
    }
}

/// The host's side of one way of recording path ends.
pub trait Collector: Send + Sized + 'static {
    /// What the collector gives once the program has stopped.
    type Output: Send;

    /// The host import that modules of this collector's sink may call.
    const IMPORT: Option<HostImport>;

    /// One call of [`Self::IMPORT`]. Module and component runs reach it alike: each links the
    /// import its own way and passes the call on.
    fn host_call(&mut self, call: HostCall<'_>) -> Result<()>;

    /// Defines [`Self::IMPORT`] for modules run alone, in a linker that instantiates them in one
    /// store; `get` reaches the collector inside the store's data. An import that works on the
    /// profiler's memory finds it by its export name, `memory_export`, at its first call (the
    /// start function may make it, before instantiation hands out the instance) and keeps it.
    fn link<T: 'static>(
        linker: &mut Linker<T>,
        get: fn(&mut T) -> &mut Self,
        memory_export: Option<&str>,
    ) -> Result<()> {
        let Some(import) = Self::IMPORT else { return Ok(()) };
        if import.takes_path() {
            let profiler = ProfilerMemory::new(memory_export);
            linker.func_wrap(
                IMPORT_MODULE,
                import.name(),
                move |mut caller: Caller<'_, T>, function: i32, path: i64| -> wasmtime::Result<()> {
                    let (function, path) = (function as u32, path as u64);
                    if function & HIGH_KEY == 0 {
                        let call = HostCall::Path { function, path };
                        return get(caller.data_mut()).host_call(call).map_err(wasmtime::Error::from_anyhow);
                    }
                    let memory = profiler.get(&mut caller)?;
                    let (data, host) = memory.data_and_store_mut(&mut caller);
                    let call = HostCall::Wide { function: function & !HIGH_KEY, path, memory: data };
                    get(host).host_call(call).map_err(wasmtime::Error::from_anyhow)
                },
            )?;
        } else {
            let profiler = ProfilerMemory::new(memory_export);
            linker.func_wrap(
                IMPORT_MODULE,
                import.name(),
                move |mut caller: Caller<'_, T>| -> wasmtime::Result<()> {
                    let memory = profiler.get(&mut caller)?;
                    let (data, host) = memory.data_and_store_mut(&mut caller);
                    get(host).host_call(HostCall::Memory(data)).map_err(wasmtime::Error::from_anyhow)
                },
            )?;
        }
        Ok(())
    }

    /// What a host outside pathprof recorded in place of this collector's calls of
    /// [`Self::IMPORT`] (see [`crate::replay`]), taken as those calls would have been. `memory`,
    /// the profiler's memory at the end, which [`Collector::finish`] reads next, may be checked
    /// with it: a record is read from a file, and what no run writes is refused.
    fn replay(&mut self, host: &HostRecord, _memory: Option<&[u8]>) -> Result<()> {
        crate::replay::nothing_recorded(host)
    }

    /// The instance is ready (its start function has run) and its entry point is about to be called:
    /// `memory` is its profiler memory, when it has one.
    fn start(&mut self, _memory: Option<&mut [u8]>) -> Result<()> {
        Ok(())
    }

    /// The program has stopped: stops the collector's threads and reads what the profiler's memory
    /// holds (after a trap too: the memory keeps what the probes stored).
    fn finish(&mut self, memory: Option<&mut [u8]>) -> Result<Self::Output>;

    /// While the program runs (paused at a snapshot): what the probes recorded so far, read without
    /// changing what [`Collector::finish`] will read; `None` for a collector that cannot be read
    /// while the program runs.
    fn snapshot(&mut self, _memory: Option<&mut [u8]>) -> Option<Result<Self::Output>> {
        None
    }
}

/// The collector of an uninstrumented run: nothing to link, nothing to collect.
pub struct NoCollector;

impl Collector for NoCollector {
    type Output = ();

    const IMPORT: Option<HostImport> = None;

    fn host_call(&mut self, _: HostCall<'_>) -> Result<()> {
        Err(anyhow!("an uninstrumented run has no host import to call"))
    }

    fn finish(&mut self, _: Option<&mut [u8]>) -> Result<()> {
        Ok(())
    }
}
