//! pathprof: a path profiler for WebAssembly.
//!
//! [`profile`] runs a program under an embedded Wasmtime with path probes of the chosen [`Mode`] and
//! returns its [`Profile`](pathprof_core::profile::Profile). Data flows one way: module → CFG → DAG
//! → numbering → placement → instrumented module (`pathprof_wasm`) → run and collection
//! (`pathprof_runtime`) → profile (`pathprof_core::profile`) → report (the `pathprof` command).
//!
//! * [`modes`] — the modes, their grammar, and the one registry of their parts in every layer;
//! * [`inputs`] — what a mode may be given besides its settings (edge profile, interesting paths,
//!   events);
//! * [`profiled`] — the core module profiled in a program (a module, or one of a component's);
//! * [`profiler`] — a module instrumented for a mode, run, and turned into a profile;
//! * [`bench`] — each mode's overhead against the uninstrumented program, side by side;
//! * [`dump`] — runs recorded under another engine by pathprof's JavaScript host, decoded into
//!   profiles;
//! * [`view`] — what reports show: hottest paths and sequences, labels and source lines;
//! * [`source`] — a path as the source lines it runs, with their text;
//! * [`merge`] — profiles of several runs of one module added up;
//! * [`export`] — profiles in other tools' formats: folded stacks and flame graphs, pprof,
//!   speedscope;
//! * [`hpp`] — the hardware path profiler simulated on a run's branches [PPP07 ch. 5];
//! * [`hint`] — branch hints (`metadata.code.branch_hint`) from a profile's edge counts;
//! * [`render`] — profiles and figures laid out for people (text, HTML) and tools (JSON);
//! * [`files`] — reading modules and profiles, writing files whole.

pub mod bench;
pub mod dump;
pub mod export;
pub mod files;
pub mod hint;
pub mod hpp;
pub mod inputs;
pub mod merge;
pub mod modes;
pub mod profiled;
pub mod profiler;
pub mod render;
pub mod source;
pub mod view;

pub use inputs::{HotFunctions, Inputs, Interesting};
pub use modes::{Mode, ModeFlags, ModeRun, Registry};
pub use pathprof_runtime::RunConfig;
pub use profiler::{profile, profile_with, Prepared};
