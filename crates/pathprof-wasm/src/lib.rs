//! The WebAssembly frontend of pathprof.
//!
//! * [`module`] — reads and validates a module: types, functions, names, code ranges;
//! * [`cfg`](mod@cfg) — the CFG of every function body, with the places where probes go, validating
//!   the body on the way;
//! * [`debuginfo`] — source lines of code offsets from DWARF;
//! * [`instrument`](mod@instrument) — rewrites the module with Ball–Larus path probes (the original
//!   operators copied as they are, the other sections through wasm-encoder's `reencode`), counters in
//!   a memory of the profiler's own;
//! * [`map`] — what is needed to decode the counters of an instrumented module into a profile;
//! * [`parallel`] — independent per-function work spread over the cores.

pub mod cfg;
pub mod debuginfo;
pub mod instrument;
pub mod map;
pub mod module;
pub mod parallel;

pub use instrument::{instrument, InstrumentOptions, Instrumented};
pub use map::ProfileMap;
pub use module::{ModuleError, ModuleInfo};
