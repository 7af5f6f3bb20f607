//! The profile data model, versioned and documented in docs/profile-format.md.
//!
//! A [`Profile`] is what one run of a program gives: the module, how it was profiled
//! ([`ProfileMode`], with what the mode measured besides paths), the run's ending, and one
//! [`FunctionProfile`] per defined function, either with its path profile
//! ([`FunctionState::Instrumented`]) or with the reason it was left as it was
//! ([`FunctionState::Skipped`]). The types admit only consistent profiles; their JSON form
//! ([`json`](self::json)) is read back into them or refused.

mod function;
mod json;
mod kipf;
mod mode;
mod mode_fields;
#[cfg(test)]
mod testing;
mod wire;

pub use function::*;
pub use json::{ReadError, FORMAT, VERSION};
pub use kipf::{KipfNodeProfile, KipfProfile, KipfStats};
pub use mode::*;
pub use wire::{Endpoint, U64};

use serde::{Deserialize, Serialize};

/// When a snapshot of a run was taken, and what it cost the program.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// The snapshot's number in its run, from 1.
    pub index: u64,
    /// How long the program had run.
    pub seconds: f64,
    /// How long the program was paused while the snapshot was read.
    pub pause_seconds: f64,
}

/// The profiled module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModuleInfo {
    pub path: String,
    pub sha256: String,
    pub size: u64,
    /// Of the profiled core module.
    pub code_section_size: u64,
    /// When the program is a component: the index of the core module profiled in it, in the core
    /// module index space of the component that defines it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_module: Option<u32>,
    /// When that component is nested in the program: the nested components that hold the core
    /// module, from the top level down, each by its index in its parent's component index space.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub core_module_within: Vec<u32>,
}

/// A whole profile: one run of one module.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub module: ModuleInfo,
    /// How the run was profiled, with what the mode measured besides the paths.
    pub mode: ProfileMode,
    pub args: Vec<String>,
    pub wall_seconds: f64,
    pub bench_region_seconds: Option<f64>,
    pub instrumentation_seconds: Option<f64>,
    pub exit_code: i32,
    /// The trap message when the program trapped.
    pub trap: Option<String>,
    /// Why the run was stopped before the program ended — `"SIGINT"`, `"SIGTERM"` or `"time
    /// limit"` — when it was.
    pub stopped: Option<String>,
    /// The seed of the program's random numbers, when they were seeded.
    pub random_seed: Option<u64>,
    /// Whether everything the program could observe repeated from run to run (virtual clocks, seeded
    /// random numbers: `--deterministic`).
    pub deterministic: bool,
    /// The run's identity, when snapshots were taken of it: each snapshot and the final profile of
    /// one run have the same, and none of them adds to another (each holds the ones before).
    pub run_id: Option<String>,
    /// When the profile is a snapshot of a run still under way: when it was taken.
    pub snapshot: Option<SnapshotInfo>,
    pub open_activations_at_exit: u64,
    /// How many runs the profile adds up: 1, or more for profiles merged by `pathprof merge` (whose
    /// `args`, `exit_code` and `trap` are those of the first run, and whose times are sums).
    pub runs: u64,
    /// Sum of all path counts.
    pub path_executions: U64,
    pub functions: Vec<FunctionProfile>,
}
