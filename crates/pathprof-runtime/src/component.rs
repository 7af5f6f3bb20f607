//! Running a component: a WASI preview 2 command under Wasmtime's component model.
//!
//! An instrumented component (`pathprof_wasm::component`) imports the profiler's host function
//! under its component name ([`HostImport::component_name`]) and [`ATTACH_IMPORT`], which it calls
//! once, while it is instantiated, with the whole of the profiler's memory as a `list<u8>`. The
//! host keeps that view: the memory never grows, so its bytes stay where they are for the life of
//! the store, and the collector reads them after the run, however it ended, as it reads a module's
//! exported memory.
//!
//! As Sightglass's components do, a component may import an instance `bench` of two functions
//! `start` and `end` (`[] -> []`): they delimit the bench region, as the core modules' `bench.start`
//! and `bench.end` do.

use crate::collect::{Collector, HostCall};
use crate::outcome::{conclude, wasi_context, Ran, RunConfig, RunOutcome};
use crate::stop::{SnapshotTaken, Snapshots};
use anyhow::{anyhow, bail, Result};
use pathprof_wasm::abi::{ATTACH_IMPORT, HIGH_KEY};
use pathprof_wasm::ProfileMap;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, Linker, ResourceTable, WasmList};
use wasmtime::{Engine, Store, StoreContextMut};
use wasmtime_wasi::p2::bindings::sync::Command;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The store's data of a component run.
struct Host<C: Collector> {
    wasi: WasiCtx,
    table: ResourceTable,
    collector: C,
    memory: Option<ProfilerMemory>,
    snapshots: Option<Snapshots<C::Output>>,
    taken: u64,
    bench_start: Option<Instant>,
    bench_region: Option<Duration>,
}

impl<C: Collector> WasiView for Host<C> {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// The profiler's memory of the instrumented module, as the component handed it over.
struct ProfilerMemory {
    base: *mut u8,
    len: usize,
}

// The pointer is only used on the thread that runs the store, which owns the memory.
unsafe impl Send for ProfilerMemory {}

impl ProfilerMemory {
    /// The memory's bytes.
    ///
    /// The bytes are the linear memory of a module instance of the store (a mapping that
    /// Wasmtime owns, not a Rust allocation), which the program also writes: the slice lives only
    /// while the store's thread runs host code, and the memory never grows or moves.
    #[allow(clippy::mut_from_ref)]
    fn bytes(&self) -> &mut [u8] {
        // SAFETY: see above; `base..base + len` was checked in bounds by the canonical ABI's lift
        // of the `list<u8>`.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
    }
}

/// Takes a snapshot of the run in `store`, `seconds` into it.
fn snapshot<C: Collector>(mut store: StoreContextMut<'_, Host<C>>, seconds: f64) {
    let paused = Instant::now();
    let host = store.data_mut();
    let output = host.collector.snapshot(host.memory.as_ref().map(ProfilerMemory::bytes));
    if let (Some(Ok(output)), Some(s)) = (output, host.snapshots.as_mut()) {
        host.taken += 1;
        let taken = SnapshotTaken { index: host.taken, seconds, pause_seconds: paused.elapsed().as_secs_f64() };
        (s.sink)(output, taken);
    }
}

/// The instance a component imports to delimit its bench region.
pub const BENCH_INSTANCE: &str = "bench";

/// Defines the `bench` instance: `start` and `end` delimit the bench region.
fn link_bench<C: Collector>(linker: &mut Linker<Host<C>>) -> Result<()> {
    let mut bench = linker.instance(BENCH_INSTANCE)?;
    bench.func_wrap("start", |mut store: StoreContextMut<'_, Host<C>>, (): ()| {
        store.data_mut().bench_start = Some(Instant::now());
        Ok(())
    })?;
    bench.func_wrap("end", |mut store: StoreContextMut<'_, Host<C>>, (): ()| {
        let host = store.data_mut();
        if let Some(start) = host.bench_start.take() {
            *host.bench_region.get_or_insert(Duration::ZERO) += start.elapsed();
        }
        Ok(())
    })?;
    Ok(())
}

/// Defines the profiler's component imports: [`ATTACH_IMPORT`], and the collector's host function.
fn link<C: Collector>(linker: &mut Linker<Host<C>>) -> Result<()> {
    let mut root = linker.root();
    root.func_wrap(ATTACH_IMPORT, |mut store: StoreContextMut<'_, Host<C>>, (list,): (WasmList<u8>,)| {
        let bytes = list.as_le_slice(&store);
        let memory = ProfilerMemory { base: bytes.as_ptr().cast_mut(), len: bytes.len() };
        store.data_mut().memory = Some(memory);
        Ok(())
    })?;
    let Some(import) = C::IMPORT else { return Ok(()) };
    fn fail(e: anyhow::Error) -> wasmtime::Error {
        wasmtime::Error::from_anyhow(e)
    }
    if import.takes_path() {
        root.func_wrap(
            import.component_name(),
            |mut store: StoreContextMut<'_, Host<C>>, (function, path): (u32, u64)| {
                let host = store.data_mut();
                if function & HIGH_KEY == 0 {
                    return host.collector.host_call(HostCall::Path { function, path }).map_err(fail);
                }
                let memory =
                    host.memory.as_ref().ok_or_else(|| fail(anyhow!("the profiler's memory was not attached")))?;
                let call = HostCall::Wide { function: function & !HIGH_KEY, path, memory: memory.bytes() };
                host.collector.host_call(call).map_err(fail)
            },
        )?;
    } else {
        root.func_wrap(import.component_name(), |mut store: StoreContextMut<'_, Host<C>>, (): ()| {
            let host = store.data_mut();
            let memory = host.memory.as_ref().ok_or_else(|| fail(anyhow!("the profiler's memory was not attached")))?;
            host.collector.host_call(HostCall::Memory(memory.bytes())).map_err(fail)
        })?;
    }
    Ok(())
}

/// A component's imports are WASI's interfaces (`wasi:...`), whose versions Wasmtime checks when
/// it links them, and the [`BENCH_INSTANCE`].
pub(crate) fn check_imports(bytes: &[u8]) -> Result<()> {
    use wasmparser::Payload;
    // Only the component's own imports: nested modules and components are its business.
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload {
            Ok(Payload::ModuleSection { .. } | Payload::ComponentSection { .. }) => depth += 1,
            Ok(Payload::End(_)) => depth = depth.saturating_sub(1),
            Ok(Payload::ComponentImportSection(imports)) if depth == 0 => {
                for import in imports {
                    // A malformed section is reported when the component is read.
                    let Ok(import) = import else { return Ok(()) };
                    let name = import.name.name;
                    if !name.starts_with("wasi:") && name != BENCH_INSTANCE {
                        bail!("unknown component import: {name} (pathprof provides WASI preview 2 and bench)");
                    }
                }
            }
            Err(_) => return Ok(()),
            _ => {}
        }
    }
    Ok(())
}

/// Runs a compiled component's `wasi:cli/run` in a fresh instance, with `collector` on the host's
/// side of its probes.
pub(crate) fn run<C: Collector>(
    engine: &Engine,
    component: &Component,
    map: Option<&ProfileMap>,
    collector: C,
    config: &RunConfig,
    snapshots: Option<Snapshots<C::Output>>,
) -> Result<(RunOutcome, C::Output)> {
    if let Some(name) = &config.invoke {
        bail!("--invoke {name}: a component is started through wasi:cli/run; --invoke applies to modules");
    }
    let (mut wasi, pipes) = wasi_context(config)?;
    let every = snapshots.as_ref().map(|s| s.every);
    let host = Host {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        collector,
        memory: None,
        snapshots,
        taken: 0,
        bench_start: None,
        bench_region: None,
    };
    let mut store = Store::new(engine, host);
    let stopper = config.stopper.clone().unwrap_or_default();
    let _watch = crate::stop::arm(&mut store, engine, &stopper, config.time_limit, every, snapshot::<C>);
    let mut linker: Linker<Host<C>> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    link(&mut linker)?;
    link_bench(&mut linker)?;

    let run_start = Instant::now();
    let entry = match Command::instantiate(&mut store, component, &linker) {
        Err(e) => Err(e),
        Ok(command) => {
            let host = store.data_mut();
            let memory = host.memory.as_ref().map(ProfilerMemory::bytes);
            if map.is_some_and(|m| m.memory_export.is_some()) && memory.is_none() {
                bail!("the instrumented component did not hand over its profiler's memory");
            }
            host.collector.start(memory)?;
            match command.wasi_cli_run().call_run(&mut store) {
                Ok(Ok(())) => Ok(()),
                // The command reported failure without an exit status of its own.
                Ok(Err(())) => Err(wasmtime::Error::new(wasmtime_wasi::I32Exit(1))),
                Err(e) => Err(e),
            }
        }
    };
    let ran = Ran {
        entry,
        wall_seconds: run_start.elapsed().as_secs_f64(),
        bench_region_seconds: store.data().bench_region.map(|d| d.as_secs_f64()),
        results: Vec::new(),
        pipes,
        stop: stopper.reason(),
        polled: false,
    };
    let host = store.data_mut();
    // Frames of the instrumented module: the one that exports the profiler's memory.
    let export = map.and_then(|m| m.memory_export.as_deref());
    let profiled = |f: &wasmtime::FrameInfo| export.is_some_and(|e| f.module().exports().any(|x| x.name() == e));
    conclude(&mut host.collector, host.memory.as_ref().map(ProfilerMemory::bytes), ran, map, profiled)
}
