//! Running a core module: WASI preview 1 and the Sightglass `bench` imports, with the collector's
//! host import and the profiler's memory found by its export name.

use crate::collect::Collector;
use crate::entry::call_entry;
use crate::outcome::{conclude, wasi_context, Ran, RunConfig, RunOutcome};
use crate::stop::{PollGuard, SnapshotTaken, Snapshots};
use anyhow::{anyhow, bail, Result};
use pathprof_wasm::polls::{poll_page, POLL_EXPORT};
use pathprof_wasm::ProfileMap;
use std::collections::HashSet;
use std::time::{Duration, Instant};
use wasmtime::{Caller, Engine, Linker, Module, Store, StoreContextMut};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::WasiCtxBuilder;

/// The store's data: the program's WASI context, the bench region, the collector, the profiler's
/// memory once the instance has one, and where snapshots go.
struct Host<C: Collector> {
    wasi: WasiP1Ctx,
    bench_start: Option<Instant>,
    bench_region: Option<Duration>,
    collector: C,
    memory: Option<wasmtime::Memory>,
    snapshots: Option<Snapshots<C::Output>>,
    taken: u64,
}

/// Takes a snapshot of the run in `store`, `seconds` into it.
fn snapshot<C: Collector>(mut store: StoreContextMut<'_, Host<C>>, seconds: f64) {
    let paused = Instant::now();
    let output = match store.data().memory {
        Some(m) => {
            let (data, host) = m.data_and_store_mut(&mut store);
            host.collector.snapshot(Some(data))
        }
        None => store.data_mut().collector.snapshot(None),
    };
    let host = store.data_mut();
    if let (Some(Ok(output)), Some(s)) = (output, host.snapshots.as_mut()) {
        host.taken += 1;
        let taken = SnapshotTaken { index: host.taken, seconds, pause_seconds: paused.elapsed().as_secs_f64() };
        (s.sink)(output, taken);
    }
}

fn unknown_import(module: &str, name: &str) -> anyhow::Error {
    anyhow!("unknown import: {module}::{name} (pathprof provides WASI preview 1, bench.start and bench.end)")
}

/// Checks that a module imports only WASI preview 1 and the `bench` functions.
pub(crate) fn check_imports(engine: &Engine, bytes: &[u8]) -> Result<()> {
    let mut store = Store::new(engine, WasiCtxBuilder::new().build_p1());
    let mut linker: Linker<WasiP1Ctx> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |c: &mut WasiP1Ctx| c)?;
    let provided: HashSet<(String, String)> =
        linker.iter(&mut store).map(|(module, name, _)| (module.to_string(), name.to_string())).collect();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let Ok(wasmparser::Payload::ImportSection(imports)) = payload else { continue };
        for import in imports.into_imports() {
            // A malformed section is reported by the validation that follows.
            let Ok(import) = import else { return Ok(()) };
            let bench = import.module == "bench" && matches!(import.name, "start" | "end");
            if !bench && !provided.contains(&(import.module.to_string(), import.name.to_string())) {
                return Err(unknown_import(import.module, import.name));
            }
        }
    }
    Ok(())
}

/// Runs a compiled core module, with WASI preview 1 and the `bench` imports.
pub(crate) fn run<C: Collector>(
    engine: &Engine,
    module: &Module,
    map: Option<&ProfileMap>,
    collector: C,
    config: &RunConfig,
    snapshots: Option<Snapshots<C::Output>>,
) -> Result<(RunOutcome, C::Output)> {
    let (mut wasi, pipes) = wasi_context(config)?;
    let every = snapshots.as_ref().map(|s| s.every);
    let host = Host {
        wasi: wasi.build_p1(),
        bench_start: None,
        bench_region: None,
        collector,
        memory: None,
        snapshots,
        taken: 0,
    };
    if every.is_some() && !engine.get_epoch_interruption() {
        bail!("snapshots need an engine with epoch interruption");
    }
    let mut store = Store::new(engine, host);
    let stopper = config.stopper.clone().unwrap_or_default();
    let _watch = crate::stop::arm(&mut store, engine, &stopper, config.time_limit, every, snapshot::<C>);
    let mut linker: Linker<Host<C>> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |h: &mut Host<C>| &mut h.wasi)?;
    linker.func_wrap("bench", "start", |mut caller: Caller<'_, Host<C>>| {
        caller.data_mut().bench_start = Some(Instant::now());
    })?;
    linker.func_wrap("bench", "end", |mut caller: Caller<'_, Host<C>>| {
        let host = caller.data_mut();
        if let Some(start) = host.bench_start.take() {
            *host.bench_region.get_or_insert(Duration::ZERO) += start.elapsed();
        }
    })?;
    let memory_export = map.and_then(|m| m.memory_export.as_deref());
    C::link(&mut linker, |h: &mut Host<C>| &mut h.collector, memory_export)?;
    for import in module.imports() {
        if linker.get_by_import(&mut store, &import).is_none() {
            return Err(unknown_import(import.module(), import.name()));
        }
    }
    let profiler_memory = |instance: &wasmtime::Instance, store: &mut Store<Host<C>>| {
        map.and_then(|m| m.memory_export.as_deref()).and_then(|name| instance.get_memory(store, name))
    };

    let run_start = Instant::now();
    let mut results = Vec::new();
    let mut polled = false;
    let (instance, entry) = match linker.instantiate(&mut store, module) {
        Err(e) => (None, Err(e)),
        Ok(instance) => {
            let memory = profiler_memory(&instance, &mut store);
            store.data_mut().memory = memory;
            match memory {
                Some(m) => {
                    let (data, host) = m.data_and_store_mut(&mut store);
                    host.collector.start(Some(data))?;
                }
                None => store.data_mut().collector.start(None)?,
            }
            // Under an engine without epoch interruption, the program stops at its polls, which
            // load from the poll memory's last page.
            let poll = match instance.get_memory(&mut store, POLL_EXPORT) {
                Some(m) if !engine.get_epoch_interruption() => stopper.poll(poll_page(m.data_mut(&mut store))),
                _ => None,
            };
            let r = call_entry(&mut store, &instance, config, &mut results);
            polled = poll.is_some_and(PollGuard::release);
            (Some(instance), r)
        }
    };
    let wall_seconds = run_start.elapsed().as_secs_f64();
    let bench_region_seconds = store.data().bench_region.map(|d| d.as_secs_f64());
    let ran = Ran { entry, wall_seconds, bench_region_seconds, results, pipes, stop: stopper.reason(), polled };
    let memory = instance.as_ref().and_then(|i| profiler_memory(i, &mut store));
    match memory {
        Some(m) => {
            let (data, host) = m.data_and_store_mut(&mut store);
            conclude(&mut host.collector, Some(data), ran, map, |_| true)
        }
        None => conclude(&mut store.data_mut().collector, None, ran, map, |_| true),
    }
}
