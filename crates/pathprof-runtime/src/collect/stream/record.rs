//! A program's k-BLPP stream as it comes, for measuring the fold apart from the program (the `ksf`
//! benchmark, the `fold_stream` example).

use super::{ForestSettings, StreamCollector};
use crate::RunConfig;
use anyhow::{Context, Result};
use pathprof_wasm::{instrument, InstrumentOptions, SinkKind};
use std::path::Path;

/// The first `items` items of the stream of the WASI program `wasm`, instrumented for `kbl` and run
/// with its own directory granted as `.` and its output captured.
pub fn record_stream(wasm: &Path, items: usize) -> Result<Vec<u64>> {
    let wasm = wasm.canonicalize().with_context(|| format!("cannot find {}", wasm.display()))?;
    let bytes = std::fs::read(&wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
    let inst = instrument(&bytes, &InstrumentOptions::with_sink(SinkKind::Stream))?;
    let config = RunConfig {
        dirs: vec![(wasm.parent().context("a program in no directory")?.to_path_buf(), ".".into())],
        args: vec![wasm.file_name().context("a program without a name")?.to_string_lossy().into_owned()],
        capture_output: true,
        ..RunConfig::default()
    };
    let settings = ForestSettings { fold_threads: Some(1), ..ForestSettings::k(2) };
    let collector = StreamCollector::new(&inst.map, settings)?.record(items);
    let engine = crate::engine()?;
    Ok(crate::run(&engine, &inst.bytes, Some(&inst.map), collector, &config)?.1.recorded)
}
