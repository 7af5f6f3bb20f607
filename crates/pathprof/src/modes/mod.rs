//! Profiling modes, and the one registry that ties each to its parts in the other layers.
//!
//! A mode is written in one grammar wherever one is given (`pathprof run --mode`, `pathprof
//! instrument --mode`, `pathprof bench --modes`):
//!
//! ```text
//! none | bl | pep[:S[:T]][:dup] | pep:every:N | kbl[:K][:burst] | ppp[:slots] | events[:STRATEGY[:CUT]] | ips[:K] | ippp[:K]
//! ```
//!
//! * `none` — the program as it is, the baseline of overhead measurements;
//! * `bl` — exact Ball–Larus path counts [BL96] ([`bl`]);
//! * `pep` — sampled paths (PEP [PEP05]): S samples after a rotating stride of up to T path ends at
//!   every timer tick (64 and 17 when not given), or every N-th path end ([`pep`]); with `dup`,
//!   whole functions run a copy without probes between samples (Arnold–Ryder duplication [AR01]);
//! * `kbl` — exact counts of every sequence of up to K consecutive paths of an activation
//!   (k-BLPP [KBL13]; K = 4 when not given) ([`kbl`]);
//! * `ppp` — exact counts, the paths that ran in given profiles (the interesting ones) in compact
//!   arrays and every other path (residual: in the field, untested) counted apart (preferential
//!   and residual path profiling [PPP07 §3.3–3.5]) ([`ppp`]). The interesting paths go to slots
//!   where a function's paths are too many for a dense array; `ppp:slots` puts them in slots in
//!   every function that has residual paths too, as the thesis does.
//! * `events` — event counts (loads, calls, bytes stored, …) from path counts [EVT23] ([`events`]):
//!   STRATEGY `pc` (path counting, the default), `pd` (path decoding) or `dec` (direct counting),
//!   CUT `auto` (the default), `merges` or `none`. The events are chosen by flags
//!   (`--events`, `--alloc-fn`, `--event`).
//! * `ips` — exact counts of every interprocedural path segment through up to K calls (K = 1 when
//!   not given, at most 4): subpaths end at calls too, and a segment follows a call into the
//!   callee and back [PPP07 §3.4.1] ([`ips`]); the profile's paths are the Ball–Larus counts.
//! * `ippp[:K]` — the segments of up to `K` calls (default 1) that `ips:K` counts, counted as
//!   supergraph paths: each function's path with the head of each call's callee (its first path,
//!   and for `K > 1` its own calls' heads one depth less), in arrays and tables, without a stream
//!   [PPP07 §3.4.3–3.4.5] ([`ippp`]).
//!
//! A mode is written back in its shortest form: `pep:64:17` is `pep`, `pep:8:17` is `pep:8`,
//! `kbl:4` is `kbl`, `events:pc:auto` is `events`. Settings outside the grammar (the timer's period,
//! a bound on k-SF nodes) are given by flags that apply to their mode only.
//!
//! # The parts of a mode
//!
//! Each mode is one file here: a [`ModeKind`] (its name, grammar, how its profiles add up, what its
//! report adds) and a [`ProfilingMode`] for its settings, which answers for itself what it asks of
//! the other layers — the settings it takes besides its grammar ([`ProfilingMode::accepts`]), the
//! instrumenter's sink ([`pathprof_wasm::SinkKind`], one file per sink in
//! `pathprof_wasm::instrument::sink`) and options, the runtime's collector
//! (`pathprof_runtime::collect`, one file per collector), and the facts it adds to the profile
//! ([`pathprof_core::profile::ProfileMode`]). The [`Registry`] lists every kind once
//! ([`registry::BUILT_IN`]); the rest of pathprof holds modes as [`Mode`] values and asks them.

pub mod bl;
pub mod events;
pub mod ippp;
pub mod ips;
pub mod kbl;
mod mode;
pub mod none;
pub mod pep;
pub mod ppp;
pub mod registry;
mod setting;

pub use mode::{sum, Given, Mode, ModeKind, ModeRun, ProfilingMode, Report, RunFigure, SnapshotSink};
pub use registry::Registry;
pub use setting::{ModeFlags, Setting};
