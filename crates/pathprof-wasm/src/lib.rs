//! The WebAssembly frontend of pathprof.
//!
//! * [`module`] — reads and validates a module: types, functions, names, code ranges;
//! * [`abi`] — what instrumented modules and the host agree on: the profiler's memory, its words and
//!   the host imports;
//! * [`branches`] — how every CFG edge is taken (the branches a processor retires), for the
//!   hardware path profiler's simulator [PPP07 §5.2];
//! * [`cfg`](mod@cfg) — the CFG of every function body, with the places where probes go, validating
//!   the body on the way;
//! * [`debuginfo`] — source lines of code offsets from DWARF;
//! * [`events`] — event classes over operators, and the event vectors of blocks [EVT23];
//! * [`hints`] — branch hints (`metadata.code.branch_hint`): the two-way branches of a module's
//!   functions, and the module written anew with a section of hints;
//! * [`instrument`](mod@instrument) — rewrites the module with Ball–Larus path probes (the original
//!   operators copied as they are, the other sections through wasm-encoder's `reencode`); what a
//!   path end does is a [sink](instrument::sink) that the profiling mode chooses;
//! * [`map`] — what is needed to decode what an instrumented module recorded into a profile;
//! * [`parallel`] — independent per-function work spread over the cores;
//! * [`polls`] — stop polls: a load at every function entry and loop header that the host can make
//!   trap, to stop a run more cheaply than Wasmtime's epoch checks;
//! * [`throws`] — which calls may throw an exception.

pub mod abi;
pub mod branches;
pub mod cfg;
pub mod component;
pub mod debuginfo;
pub mod events;
pub mod hints;
pub mod instrument;
pub mod map;
pub mod module;
pub mod parallel;
pub mod polls;
mod sections;
pub mod throws;

pub use instrument::{instrument, InstrumentOptions, Instrumented, OnlyFunctions, SinkKind};
pub use map::ProfileMap;
pub use module::{ModuleError, ModuleInfo};
