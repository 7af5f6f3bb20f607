//! What both runners share: what the program may see ([`RunConfig`]), its WASI context, and how a
//! run ends — returned, trapped or `proc_exit` — with the activations it left open and what the
//! collector read ([`RunOutcome`]).

use crate::clock::VirtualClock;
use crate::collect::Collector;
pub use crate::stop::{StopReason, Stopper};
use anyhow::{anyhow, bail, Result};
use pathprof_wasm::ProfileMap;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;
use wasmtime::WasmBacktrace;
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
    /// Make what the program can observe repeat from run to run: WASI's clocks are virtual
    /// ([`VirtualClock`](crate::clock::VirtualClock)) and its random numbers seeded (with
    /// `random_seed`, or 0).
    pub deterministic: bool,
    /// What may stop the run before the program ends (a signal's handler); nothing when `None`.
    pub stopper: Option<Stopper>,
    /// Stop the run once it has run this long.
    pub time_limit: Option<Duration>,
}

impl RunConfig {
    /// The seed of the program's random numbers, when they are seeded.
    pub fn seed(&self) -> Option<u64> {
        self.random_seed.or(self.deterministic.then_some(0))
    }
}

impl RunOutcome {
    /// The outcome of a program still running, `wall_seconds` into its run (that of a snapshot).
    pub fn running(wall_seconds: f64) -> RunOutcome {
        RunOutcome {
            exit_code: 0,
            trap: None,
            stopped: None,
            compile_seconds: 0.0,
            wall_seconds,
            bench_region_seconds: None,
            open_frames: Vec::new(),
            results: Vec::new(),
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }
}

/// The program could not be started (no entry point, bad `--invoke` arguments).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NoEntry(pub String);

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
    /// Why the run was stopped before the program ended, when it was (then `exit_code` is the
    /// reason's, and there is no trap).
    pub stopped: Option<StopReason>,
    /// The functions (indices of the original module) of the activations of profiled functions
    /// still open when the program stopped, the innermost first.
    pub open_frames: Vec<u32>,
    /// Results of `--invoke`, formatted one per line.
    pub results: Vec<String>,
    /// Captured output, with [`RunConfig::capture_output`].
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
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
    if let Some(seed) = config.seed() {
        // ChaCha12, the same stream on every host for a seed.
        wasi.secure_random(StdRng::seed_from_u64(seed));
        wasi.insecure_random(StdRng::seed_from_u64(seed.wrapping_add(1)));
        wasi.insecure_random_seed(u128::from(seed));
    }
    if config.deterministic {
        wasi.wall_clock(VirtualClock::default());
        wasi.monotonic_clock(VirtualClock::default());
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

/// How a run went up to the program's stop, as its runner saw it.
pub(crate) struct Ran {
    /// What the entry point returned.
    pub entry: wasmtime::Result<()>,
    /// Instantiation and execution.
    pub wall_seconds: f64,
    pub bench_region_seconds: Option<f64>,
    /// Results of `--invoke`.
    pub results: Vec<String>,
    pub pipes: Option<Pipes>,
    /// Why the run was asked to stop, when it was.
    pub stop: Option<StopReason>,
    /// Whether the stopper closed the run's poll page: then a trap on memory access is the stop.
    pub polled: bool,
}

/// Ends a run, whatever its ending: `collector` reads what the probes recorded in the profiler's
/// `memory`, and the ending gives the exit status, the trap, and the activations still open of the
/// functions `map` profiles (the frames that `profiled_frame` accepts).
pub(crate) fn conclude<C: Collector>(
    collector: &mut C,
    memory: Option<&mut [u8]>,
    ran: Ran,
    map: Option<&ProfileMap>,
    profiled_frame: impl Fn(&wasmtime::FrameInfo) -> bool,
) -> Result<(RunOutcome, C::Output)> {
    let output = collector.finish(memory);
    let Ending { exit_code, trap, stopped, frames } = ending(ran.entry, ran.stop, ran.polled, profiled_frame)?;
    let output = output?;
    let (stdout, stderr) = match ran.pipes {
        Some(p) => (p.out.contents().to_vec(), p.err.contents().to_vec()),
        None => (Vec::new(), Vec::new()),
    };
    let outcome = RunOutcome {
        exit_code,
        trap,
        stopped,
        compile_seconds: 0.0,
        wall_seconds: ran.wall_seconds,
        bench_region_seconds: ran.bench_region_seconds,
        open_frames: open_profiled_frames(map, frames),
        results: ran.results,
        stdout,
        stderr,
    };
    Ok((outcome, output))
}

/// How a run ended.
struct Ending {
    exit_code: i32,
    /// The trap's message, when it trapped.
    trap: Option<String>,
    /// Why it was stopped, when it was.
    stopped: Option<StopReason>,
    /// The functions of the frames still open (as the backtrace numbers them, innermost first).
    frames: Vec<u32>,
}

/// How a run ended, from what its entry point returned and why it was asked to stop (`stop`, and
/// whether its poll page was closed: `polled`); only the open frames that `profiled_frame` accepts
/// are kept.
fn ending(
    outcome: wasmtime::Result<()>,
    stop: Option<StopReason>,
    polled: bool,
    profiled_frame: impl Fn(&wasmtime::FrameInfo) -> bool,
) -> Result<Ending> {
    let end = |exit_code, trap, stopped, frames| Ending { exit_code, trap, stopped, frames };
    Ok(match outcome {
        Ok(()) => end(0, None, None, Vec::new()),
        Err(e) if e.downcast_ref::<NoEntry>().is_some() => bail!("{e}"),
        Err(e) => {
            let frames: Vec<u32> = e
                .downcast_ref::<WasmBacktrace>()
                .map(|bt| bt.frames().iter().filter(|f| profiled_frame(f)).map(|f| f.func_index()).collect())
                .unwrap_or_default();
            let trap = e.downcast_ref::<wasmtime::Trap>();
            match (e.downcast_ref::<I32Exit>(), trap, stop) {
                (Some(exit), ..) => end(exit.0, None, None, frames),
                (None, Some(wasmtime::Trap::Interrupt), Some(reason)) => {
                    end(reason.exit_code(), None, Some(reason), frames)
                }
                (None, Some(wasmtime::Trap::MemoryOutOfBounds), Some(reason)) if polled => {
                    end(reason.exit_code(), None, Some(reason), frames)
                }
                (None, Some(t), _) => end(TRAP_EXIT_CODE, Some(t.to_string()), None, frames),
                // An exception no handler caught left every activation, and each instrumented
                // function counts its path as the exception leaves it (`throws`): the backtrace
                // is that of the last of them, already counted.
                (None, None, _) if e.is::<wasmtime::ThrownException>() => {
                    end(TRAP_EXIT_CODE, Some("uncaught exception".into()), None, Vec::new())
                }
                (None, None, _) => end(TRAP_EXIT_CODE, Some(failure(&e)), None, frames),
            }
        }
    })
}

/// What ended a run that neither exited nor trapped: each error of the chain but the backtrace
/// (which wraps the cause as "error while executing at wasm backtrace"), on one line.
fn failure(e: &wasmtime::Error) -> String {
    let backtrace = e.downcast_ref::<WasmBacktrace>().map(ToString::to_string);
    let causes: Vec<String> = e
        .chain()
        .map(|c| c.to_string())
        .filter(|c| Some(c) != backtrace.as_ref())
        .map(|c| c.lines().next().unwrap_or_default().to_string())
        .collect();
    causes.join(": ")
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
