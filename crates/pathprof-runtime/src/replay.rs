//! Runs recorded elsewhere: a program that ran under another engine (V8 in Node or a browser) with
//! pathprof's JavaScript host, which kept what the collector's host calls would have received and
//! copied the profiler's memory at the end (`pathprof decode`). The collector of the run's mode
//! is handed the same calls and the same memory, and reads them as it reads a run of its own.

use crate::collect::Collector;
use crate::outcome::{open_profiled_frames, RunOutcome};
use anyhow::{ensure, Result};
use pathprof_wasm::ProfileMap;

/// What a host outside pathprof recorded of the calls of a collector's import.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostRecord {
    /// Path ends passed to `count_path` or `sample_path` (and kept, for `pep:every:N`): a count by
    /// `(function, path ID)`.
    pub counts: Vec<(u32, u64, u64)>,
    /// Path ends of several words passed to `count_path` (mode `ippp`): a count by `(function,
    /// high keys, path ID)`.
    pub wide: Vec<(u32, Box<[u64]>, u64, u64)>,
    /// The items `flush_stream` took from the stream buffer, in order.
    pub stream: Vec<u64>,
}

impl HostRecord {
    /// Whether the host recorded nothing.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty() && self.wide.is_empty() && self.stream.is_empty()
    }
}

/// How a recorded run ended, as its host saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedEnding {
    pub exit_code: i32,
    pub trap: Option<String>,
    pub wall_seconds: f64,
    pub bench_region_seconds: Option<f64>,
    /// The functions of the activations still open when the program stopped, innermost first, as
    /// the instrumented module numbers them (the engine's stack trace at `proc_exit` or the trap).
    pub frames: Vec<u32>,
}

/// A run recorded by another host.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    /// The profiler's memory once the program had stopped.
    pub memory: Vec<u8>,
    pub host: HostRecord,
    pub ending: RecordedEnding,
}

/// The outcome of a recorded run of a module instrumented as `map` says, and what `collector`
/// reads of it.
pub fn replay<C: Collector>(mut collector: C, map: &ProfileMap, recorded: Recorded) -> Result<(RunOutcome, C::Output)> {
    let Recorded { mut memory, host, ending } = recorded;
    let memory = map.memory_export.is_some().then_some(memory.as_mut_slice());
    collector.replay(&host, memory.as_deref())?;
    let output = collector.finish(memory)?;
    let outcome = RunOutcome {
        exit_code: ending.exit_code,
        trap: ending.trap,
        stopped: None,
        compile_seconds: 0.0,
        wall_seconds: ending.wall_seconds,
        bench_region_seconds: ending.bench_region_seconds,
        open_frames: open_profiled_frames(Some(map), ending.frames),
        results: Vec::new(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    Ok((outcome, output))
}

/// Refuses a record of host calls for a collector that defines no import.
pub(crate) fn nothing_recorded(host: &HostRecord) -> Result<()> {
    ensure!(host.is_empty(), "the host recorded calls of an import this module does not have");
    Ok(())
}
