//! Running a program: the engine, compiling a module or a component, and running it with a
//! collector — a core module with WASI preview 1 ([`module`](crate::module)), a component with WASI
//! preview 2 ([`component`](crate::component)); what both share is [`outcome`](crate::outcome)'s.

use crate::collect::Collector;
use crate::outcome::{RunConfig, RunOutcome};
use crate::stop::Snapshots;
use anyhow::{anyhow, bail, Result};
use pathprof_wasm::ProfileMap;
use std::path::PathBuf;
use std::time::Instant;
use wasmtime::component::Component;
use wasmtime::{Cache, CacheConfig, Config, Engine, Module};

/// Checks, before any work on it, that a program imports only functions a run provides: WASI
/// preview 1 and the `bench` functions for a module, WASI preview 2 interfaces for a component.
/// The profiler's own imports are added later.
pub fn check_imports(engine: &Engine, bytes: &[u8]) -> Result<()> {
    if pathprof_wasm::component::is_component(bytes) {
        crate::component::check_imports(bytes)
    } else {
        crate::module::check_imports(engine, bytes)
    }
}

/// The wasm stack of a run: 8 times Wasmtime's default (512 KiB), since probes make frames larger
/// (locals of the probes, values spilled around calls): a program that runs within the default
/// stack uninstrumented must not exhaust it instrumented. The engine's runs all get it, with or
/// without probes.
pub const WASM_STACK_BYTES: usize = 4 << 20;

/// The stack of the thread a program runs on: the wasm stack, and room for the host's frames
/// (WASI calls, the collector) beyond it.
const RUN_THREAD_STACK_BYTES: usize = WASM_STACK_BYTES + (8 << 20);

/// Frames of a backtrace kept at most: more than the wasm stack can hold (each frame takes at
/// least 16 bytes).
const MAX_BACKTRACE_FRAMES: usize = WASM_STACK_BYTES / 16;

/// A Wasmtime engine configured for profiling runs.
pub fn engine() -> Result<Engine> {
    engine_with(&EngineOptions::default())
}

/// Choices of the engine: the code it compiles, and where it keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// Read the module's branch hints (`metadata.code.branch_hint`): Cranelift lays the unlikely
    /// side of a hinted branch out of line.
    pub branch_hinting: bool,
    /// Keep compiled code in this directory (an absolute path), and take it from there when the
    /// same program is compiled by an engine of the same settings again: Wasmtime's cache, keyed by
    /// the program's bytes, the engine's settings and Wasmtime's version ([`crate::cache`]).
    pub cache: Option<PathBuf>,
    /// Stop core modules through polls rather than epoch interruption (on Unix hosts): Wasmtime
    /// leaves its epoch checks out, and [`compile`] adds a poll at every function entry and loop
    /// header of a core module instead ([`crate::stop`]). Such an engine runs no components and
    /// takes no snapshots.
    pub polls: bool,
}

/// [`engine`], with `options`.
pub fn engine_with(options: &EngineOptions) -> Result<Engine> {
    let mut config = Config::new();
    config.wasm_branch_hinting(options.branch_hinting);
    config.wasm_multi_memory(true);
    // Programs may declare shared memories and use atomics.
    config.wasm_threads(true);
    config.shared_memory(true);
    // (Wasmtime refuses a wasm stack larger than the stacks of its async fibers, which no run
    // uses.)
    config.async_stack_size(WASM_STACK_BYTES + (1 << 20));
    config.max_wasm_stack(WASM_STACK_BYTES);
    // Every frame of a trap's backtrace: the activations still open are counted from it.
    config.wasm_backtrace_max_frames(std::num::NonZeroUsize::new(MAX_BACKTRACE_FRAMES));
    // A run stops at the next function entry or loop header once it is asked to (`stop`).
    config.epoch_interruption(!(options.polls && cfg!(unix)));
    if let Some(dir) = &options.cache {
        let mut cache = CacheConfig::new();
        cache.with_directory(dir);
        let cache = Cache::new(cache).map_err(|e| anyhow!("cannot keep compiled code in {}: {e}", dir.display()))?;
        config.cache(Some(cache));
    }
    Ok(Engine::new(&config)?)
}

/// A compiled program: a core module run with WASI preview 1, or a component (a WASI preview 2
/// command) run with the component model.
pub enum Program {
    Module(Module),
    Component(Component),
}

impl Program {
    /// The machine code compiled for a module (none for a component).
    pub fn text(&self) -> Option<&[u8]> {
        match self {
            Program::Module(m) => Some(m.text()),
            Program::Component(_) => None,
        }
    }
}

/// Compiles a module or a component, returning it with the compile time in seconds. Under an engine
/// without epoch interruption ([`EngineOptions::polls`]), a core module is compiled with its stop
/// polls, and a component is refused.
pub fn compile(engine: &Engine, bytes: &[u8]) -> Result<(Program, f64)> {
    let start = Instant::now();
    let (component, epochs) = (pathprof_wasm::component::is_component(bytes), engine.get_epoch_interruption());
    if component && !epochs {
        bail!("components run on an engine with epoch interruption");
    }
    let polled;
    let bytes = match component || epochs {
        true => bytes,
        false => {
            polled = pathprof_wasm::polls::add_polls(bytes).map_err(|e| anyhow!("cannot compile the module: {e}"))?;
            &polled[..]
        }
    };
    let program = if component {
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
    run_module_with_snapshots(engine, program, map, collector, config, None)
}

/// [`run_module`], handing `snapshots` what the collector has read so far at every period while
/// the program runs (when the collector can be read while it runs: [`Collector::snapshot`]). The
/// program runs on a thread of its own, whose stack holds [`WASM_STACK_BYTES`] of wasm frames.
pub fn run_module_with_snapshots<C: Collector>(
    engine: &Engine,
    program: &Program,
    map: Option<&ProfileMap>,
    collector: C,
    config: &RunConfig,
    snapshots: Option<Snapshots<C::Output>>,
) -> Result<(RunOutcome, C::Output)> {
    std::thread::scope(|scope| {
        let run = move || match program {
            Program::Module(module) => crate::module::run(engine, module, map, collector, config, snapshots),
            Program::Component(component) => {
                crate::component::run(engine, component, map, collector, config, snapshots)
            }
        };
        let thread = std::thread::Builder::new()
            .name("pathprof-run".into())
            .stack_size(RUN_THREAD_STACK_BYTES)
            .spawn_scoped(scope, run)
            .map_err(|e| anyhow!("cannot start the thread that runs the program: {e}"))?;
        thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::{NoCollector, StopReason, Stopper};
    use std::time::Duration;

    fn run_wat(engine: &Engine, wat: &str, stopper: &Stopper) -> RunOutcome {
        let bytes = wat::parse_str(wat).unwrap();
        let config = RunConfig { invoke: Some("run".into()), stopper: Some(stopper.clone()), ..RunConfig::default() };
        run(engine, &bytes, None, NoCollector, &config).unwrap().0
    }

    /// Under an engine without epochs, a stop reaches a loop that never calls the host through its
    /// poll; the trap of a stop is the stop, any other trap stays a trap.
    #[test]
    fn polls_stop_a_loop_and_leave_traps_alone() {
        let engine = engine_with(&EngineOptions { polls: true, ..Default::default() }).unwrap();
        assert!(!engine.get_epoch_interruption());
        let stopper = Stopper::new();
        let asker = stopper.clone();
        let ask = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            asker.stop(StopReason::Interrupt);
        });
        let spin = r#"(module (func (export "run") (local i32)
                        (loop (local.set 0 (i32.add (local.get 0) (i32.const 1))) (br 0))))"#;
        let outcome = run_wat(&engine, spin, &stopper);
        ask.join().unwrap();
        assert_eq!((outcome.stopped, outcome.trap.as_deref()), (Some(StopReason::Interrupt), None));

        let out_of_bounds = r#"(module (memory 1) (func (export "run") (drop (i32.load (i32.const 65536)))))"#;
        let outcome = run_wat(&engine, out_of_bounds, &Stopper::new());
        assert_eq!(outcome.stopped, None);
        assert!(outcome.trap.as_deref().is_some_and(|t| t.contains("out of bounds")), "{:?}", outcome.trap);
        // Components need the epochs.
        let component = wat::parse_str("(component)").unwrap();
        assert!(compile(&engine, &component).is_err());
    }
}
