//! Runs WebAssembly programs under an embedded Wasmtime — core modules with WASI preview 1,
//! components with WASI preview 2 — and collects what their probes record.
//!
//! * [`run`](mod@run) — the engine, the program's environment and its ending: [`run_module`] keeps
//!   only what every mode shares. The host provides the Sightglass imports `bench.start`/`bench.end`
//!   (recording the wall time between them) and nothing else but WASI: the program sees only the
//!   directories and environment variables granted in [`RunConfig`]. When the program traps or
//!   calls `proc_exit`, what the probes recorded is read all the same, and the number of
//!   activations still on the stack is taken from the trap's backtrace.
//! * [`component`](mod@component) — components: `wasi:cli/run` under the component model, and the
//!   profiler's memory handed over by the component itself;
//! * [`collect`] — the host's side of each way of recording path ends, one collector per mode;
//! * [`entry`] — `_start` or the export named by `--invoke`.

pub mod collect;
mod component;
mod entry;
pub mod run;
mod words;

pub use collect::count::{CountCollector, Counted};
pub use collect::sample::{SampleBuffer, SampleCollector, Sampled, Sampling};
pub use collect::stream::{
    ForestSettings, KsfFacts, StreamCollector, StreamConsumer, StreamEnd, StreamFolder, Streamed,
};
pub use collect::{Collector, HostCall, NoCollector};
pub use entry::NoEntry;
pub use run::{check_imports, compile, engine, run, run_module, Program, RunConfig, RunOutcome, TRAP_EXIT_CODE};
pub use wasmtime::{Engine, Module};
