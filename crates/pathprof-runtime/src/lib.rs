//! Runs WebAssembly programs under an embedded Wasmtime — core modules with WASI preview 1,
//! components with WASI preview 2 — and collects what their probes record.
//!
//! * [`run`](mod@run) — the engine, compiling a program, and [`run_module`], which runs it with a
//!   collector: it keeps only what every mode shares;
//! * [`outcome`] — what both runners share: the program's environment and its ending. The program
//!   sees only the directories and environment variables granted in [`RunConfig`]. When it traps
//!   or calls `proc_exit`, what the probes recorded is read all the same, and the activations still
//!   on the stack are taken from the trap's backtrace;
//! * [`module`](mod@module) — core modules: WASI preview 1, and the Sightglass imports
//!   `bench.start`/`bench.end` (recording the wall time between them);
//! * [`component`](mod@component) — components: `wasi:cli/run` under the component model, and the
//!   profiler's memory handed over by the component itself;
//! * [`collect`] — the host's side of each way of recording path ends, one collector per mode;
//! * [`replay`] — runs recorded by pathprof's JavaScript host under another engine, handed to
//!   the same collectors;
//! * [`cache`] — where compiled programs are kept between runs (Wasmtime's cache);
//! * [`clock`] — the virtual clocks of deterministic runs;
//! * [`stop`] — stopping a run on a signal or a time limit, its profile kept;
//! * [`entry`] — `_start` or the export named by `--invoke`.

pub mod cache;
pub mod clock;
pub mod collect;
mod component;
mod entry;
mod module;
pub mod outcome;
pub mod replay;
pub mod run;
pub mod stop;
mod words;

pub use collect::burst::Bursts;
pub use collect::count::{CountCollector, Counted, WideCounts};
pub use collect::sample::{SampleBuffer, SampleCollector, Sampled, Sampling};
pub use collect::segments::{PathCallTable, SegmentConsumer, Segmented};
pub use collect::stream::{
    default_fold_threads, fold_stream, record_stream, ForestSettings, KsfFacts, StreamCollector, StreamConsumer,
    StreamEnd, StreamFolder, Streamed,
};
pub use collect::{Collector, HostCall, NoCollector};
pub use outcome::{NoEntry, RunConfig, RunOutcome, TRAP_EXIT_CODE};
pub use replay::{replay, HostRecord, Recorded, RecordedEnding};
pub use run::{
    check_imports, compile, engine, engine_with, run, run_module, run_module_with_snapshots, EngineOptions, Program,
};
pub use stop::{SnapshotTaken, Snapshots, StopReason, Stopper};
pub use wasmtime::{Engine, Module};
