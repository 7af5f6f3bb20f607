//! The subcommands, one module each: its arguments, and what it does with them. Each returns the
//! process's exit status.

pub mod bench;
pub mod cache;
pub mod compare;
pub mod decode;
pub mod export;
pub mod hint;
pub mod hpp;
pub mod instrument;
pub mod merge;
pub mod report;
pub mod run;
pub mod signals;

/// The help of every `--mode`: the grammar of the modes the registry knows.
pub fn mode_help() -> String {
    format!("Profiling mode: {}", pathprof::Registry::built_in().grammar())
}
