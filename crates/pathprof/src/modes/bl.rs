//! Mode `bl`: exact Ball–Larus path counts [BL96], with the increments on chords of a spanning
//! tree and smart numbering [PEP05 Figs. 2, 4]. The instrumenter's sinks are `array` and `hash`;
//! the runtime's collector is `count`.

use super::{ModeFacts, ModeRun};
use anyhow::Result;
use pathprof_runtime::{CountCollector, Engine, Program, RunConfig};
use pathprof_wasm::ProfileMap;
use std::collections::HashMap;

/// Bytes the host keeps per entry of its hash table of path counts.
pub(crate) const HASH_ENTRY_BYTES: u64 = 16;

/// Runs a module instrumented with exact counts.
pub(crate) fn run(engine: &Engine, module: &Program, map: &ProfileMap, config: &RunConfig) -> Result<ModeRun> {
    run_counted(engine, module, map, config, |_| ModeFacts::Bl)
}

/// Runs a module whose paths (and events) the count collector counts (modes `bl`, `ppp` and
/// `events`); `facts` makes the mode's facts of the event counters by function.
pub(crate) fn run_counted(
    engine: &Engine,
    module: &Program,
    map: &ProfileMap,
    config: &RunConfig,
    facts: impl FnOnce(HashMap<u32, Vec<u64>>) -> ModeFacts,
) -> Result<ModeRun> {
    let (outcome, counted) =
        pathprof_runtime::run_module(engine, module, Some(map), CountCollector::new(map)?, config)?;
    Ok(ModeRun {
        outcome,
        counts: counted.counts,
        facts: facts(counted.events),
        host_bytes: HASH_ENTRY_BYTES * counted.hash_entries as u64,
    })
}
