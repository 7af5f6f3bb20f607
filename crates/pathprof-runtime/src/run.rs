//! Running a program: the engine, the program's WASI environment, the Sightglass `bench` imports,
//! and the ending — returned, trapped or `proc_exit` — with the activations it left open. What the
//! profiler records is its [collector](crate::collect)'s.

use crate::collect::Collector;
use crate::entry::{call_entry, NoEntry};
use anyhow::{anyhow, bail, Result};
use pathprof_wasm::ProfileMap;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use wasmtime::component::Component;
use wasmtime::{Caller, Config, Engine, Linker, Module, Store, WasmBacktrace};
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
    /// Seed of the program's random numbers (`random_get`), for runs that repeat exactly; without
    /// it they come from the host's generator.
    pub random_seed: Option<u64>,
}

/// How one run went.
#[derive(Debug)]
pub struct RunOutcome {
    pub exit_code: i32,
    pub trap: Option<String>,
    /// Compile time of the module (0 when it was compiled before).
    pub compile_seconds: f64,
    /// Instantiation and execution.
    pub wall_seconds: f64,
    pub bench_region_seconds: Option<f64>,
    /// The functions (indices of the original module) of the activations of profiled functions
    /// still open when the program stopped, the innermost first.
    pub open_frames: Vec<u32>,
    /// Results of `--invoke`, formatted one per line.
    pub results: Vec<String>,
    /// Captured output, with [`RunConfig::capture_output`].
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// The store's data: the program's WASI context, the bench region, and the collector.
struct Host<C> {
    wasi: WasiP1Ctx,
    bench_start: Option<Instant>,
    bench_region: Option<Duration>,
    collector: C,
}

fn unknown_import(module: &str, name: &str) -> anyhow::Error {
    anyhow!("unknown import: {module}::{name} (pathprof provides WASI preview 1, bench.start and bench.end)")
}

/// Checks, before any work on it, that a program imports only functions a run provides: WASI
/// preview 1 and the `bench` functions for a module, WASI preview 2 interfaces for a component.
/// The profiler's own imports are added later.
pub fn check_imports(engine: &Engine, bytes: &[u8]) -> Result<()> {
    if pathprof_wasm::component::is_component(bytes) {
        return check_component_imports(bytes);
    }
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

/// A component's imports are WASI's interfaces (`wasi:...`), whose versions Wasmtime checks when
/// it links them.
fn check_component_imports(bytes: &[u8]) -> Result<()> {
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
                    if !name.starts_with("wasi:") {
                        bail!("unknown component import: {name} (pathprof provides WASI preview 2)");
                    }
                }
            }
            Err(_) => return Ok(()),
            _ => {}
        }
    }
    Ok(())
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

/// A compiled program: a core module run with WASI preview 1, or a component (a WASI preview 2
/// command) run with the component model.
pub enum Program {
    Module(Module),
    Component(Component),
}

/// Compiles a module or a component, returning it with the compile time in seconds.
pub fn compile(engine: &Engine, bytes: &[u8]) -> Result<(Program, f64)> {
    let start = Instant::now();
    let program = if pathprof_wasm::component::is_component(bytes) {
        let component = Component::new(engine, bytes).map_err(|e| anyhow!("cannot compile the component: {e}"))?;
        Program::Component(component)
    } else {
        Program::Module(Module::new(engine, bytes).map_err(|e| anyhow!("cannot compile the module: {e}"))?)
    };
    Ok((program, start.elapsed().as_secs_f64()))
}

/// Compiles and runs `bytes` (an instrumented module or component described by `map` with its
/// `collector`, or any program with [`NoCollector`](crate::collect::NoCollector) and no map).
pub fn run<C: Collector>(
    engine: &Engine,
    bytes: &[u8],
    map: Option<&ProfileMap>,
    collector: C,
    config: &RunConfig,
) -> Result<(RunOutcome, C::Output)> {
    let (program, compile_seconds) = compile(engine, bytes)?;
    let (mut outcome, output) = run_module(engine, &program, map, collector, config)?;
    outcome.compile_seconds = compile_seconds;
    Ok((outcome, output))
}

/// Runs a compiled program in a fresh instance, with `collector` on the host's side of its probes.
pub fn run_module<C: Collector>(
    engine: &Engine,
    program: &Program,
    map: Option<&ProfileMap>,
    collector: C,
    config: &RunConfig,
) -> Result<(RunOutcome, C::Output)> {
    match program {
        Program::Module(module) => run_core(engine, module, map, collector, config),
        Program::Component(component) => crate::component::run(engine, component, map, collector, config),
    }
}

/// The program's WASI context as `config` grants it, and the pipes that capture its output.
pub(crate) fn wasi_context(config: &RunConfig) -> Result<(WasiCtxBuilder, Option<Pipes>)> {
    let mut wasi = WasiCtxBuilder::new();
    let pipes = if config.capture_output {
        let out = MemoryOutputPipe::new(CAPTURE_LIMIT);
        let err = MemoryOutputPipe::new(CAPTURE_LIMIT);
        wasi.stdout(out.clone()).stderr(err.clone());
        Some(Pipes { out, err })
    } else {
        wasi.inherit_stdio();
        None
    };
    wasi.args(&config.args);
    if let Some(seed) = config.random_seed {
        // ChaCha12, the same stream on every host for a seed.
        wasi.secure_random(StdRng::seed_from_u64(seed));
        wasi.insecure_random(StdRng::seed_from_u64(seed.wrapping_add(1)));
        wasi.insecure_random_seed(u128::from(seed));
    }
    for (k, v) in &config.env {
        wasi.env(k, v);
    }
    for (host, guest) in &config.dirs {
        wasi.preopened_dir(host, guest, wasmtime_wasi::FsPerms::ReadWrite)
            .map_err(|e| anyhow!("cannot open directory {}: {e}", host.display()))?;
    }
    Ok((wasi, pipes))
}

/// The captured stdout and stderr of a run.
pub(crate) struct Pipes {
    out: MemoryOutputPipe,
    err: MemoryOutputPipe,
}

/// How a run ended, from what its entry point returned: the exit status, the trap's message, and
/// the functions of the frames still open (as the backtrace numbers them, innermost first) that
/// `profiled_frame` accepts.
pub(crate) fn ending(
    outcome: wasmtime::Result<()>,
    profiled_frame: impl Fn(&wasmtime::FrameInfo) -> bool,
) -> Result<(i32, Option<String>, Vec<u32>)> {
    Ok(match outcome {
        Ok(()) => (0, None, Vec::new()),
        Err(e) if e.downcast_ref::<NoEntry>().is_some() => bail!("{e}"),
        Err(e) => {
            let frames: Vec<u32> = e
                .downcast_ref::<WasmBacktrace>()
                .map(|bt| bt.frames().iter().filter(|f| profiled_frame(f)).map(|f| f.func_index()).collect())
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
    })
}

/// The open frames of profiled functions, as indices of the original module.
pub(crate) fn open_profiled_frames(map: Option<&ProfileMap>, frames: Vec<u32>) -> Vec<u32> {
    let Some(map) = map else { return frames };
    // Frames report indices of the instrumented module, which has one more function when the
    // profiler calls a host function.
    let shift = u32::from(map.sink.import().is_some());
    let profiled: HashSet<u32> = map.probed().map(|(f, _)| f.index).collect();
    let first_defined = map.functions.first().map_or(0, |f| f.index);
    frames
        .iter()
        .filter(|&&i| i >= first_defined + shift && profiled.contains(&(i - shift)))
        .map(|&i| i - shift)
        .collect()
}

/// The outcome of a run that ended as `ending` says.
pub(crate) fn run_outcome(
    (exit_code, trap, open_frames): (i32, Option<String>, Vec<u32>),
    wall_seconds: f64,
    bench_region_seconds: Option<f64>,
    results: Vec<String>,
    pipes: Option<Pipes>,
) -> RunOutcome {
    let (stdout, stderr) = match pipes {
        Some(p) => (p.out.contents().to_vec(), p.err.contents().to_vec()),
        None => (Vec::new(), Vec::new()),
    };
    RunOutcome {
        exit_code,
        trap,
        compile_seconds: 0.0,
        wall_seconds,
        bench_region_seconds,
        open_frames,
        results,
        stdout,
        stderr,
    }
}

/// Runs a compiled core module, with WASI preview 1 and the `bench` imports.
fn run_core<C: Collector>(
    engine: &Engine,
    module: &Module,
    map: Option<&ProfileMap>,
    collector: C,
    config: &RunConfig,
) -> Result<(RunOutcome, C::Output)> {
    let (mut wasi, pipes) = wasi_context(config)?;
    let host = Host { wasi: wasi.build_p1(), bench_start: None, bench_region: None, collector };
    let mut store = Store::new(engine, host);
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
    let (instance, outcome) = match linker.instantiate(&mut store, module) {
        Err(e) => (None, Err(e)),
        Ok(instance) => {
            let memory = profiler_memory(&instance, &mut store);
            match memory {
                Some(m) => {
                    let (data, host) = m.data_and_store_mut(&mut store);
                    host.collector.start(Some(data))?;
                }
                None => store.data_mut().collector.start(None)?,
            }
            let r = call_entry(&mut store, &instance, config, &mut results);
            (Some(instance), r)
        }
    };
    let wall_seconds = run_start.elapsed().as_secs_f64();
    let memory = instance.as_ref().and_then(|i| profiler_memory(i, &mut store));
    let output = match memory {
        Some(m) => {
            let (data, host) = m.data_and_store_mut(&mut store);
            host.collector.finish(Some(data))
        }
        None => store.data_mut().collector.finish(None),
    };

    let (exit_code, trap, frames) = ending(outcome, |_| true)?;
    let output = output?;
    let ended = (exit_code, trap, open_profiled_frames(map, frames));
    let bench_region = store.data().bench_region.map(|d| d.as_secs_f64());
    Ok((run_outcome(ended, wall_seconds, bench_region, results, pipes), output))
}
