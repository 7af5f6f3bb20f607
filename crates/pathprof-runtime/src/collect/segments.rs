//! The consumer of mode `ips`'s stream: interprocedural path segments [PPP07 §3.4.1] counted on a
//! second thread while the program runs.
//!
//! The module streams as `kbl`'s does (`pathprof_wasm`'s stream sink, from every function), with a
//! call marker before every call; [`SegmentConsumer`] decodes the items into
//! [`pathprof_core::ips::SegmentFolder`], which needs the number of calls on each path that ends:
//! [`PathCallTable`] regenerates the path from the function's plan and adds up its blocks' calls
//! (the folder asks once per path and keeps the answer).

use super::stream::{StreamConsumer, StreamEnd};
use anyhow::{ensure, Result};
use pathprof_core::ips::{PathCalls, SegmentFolder, Segments};
use pathprof_core::{regen, Dag, Numbering};
use pathprof_wasm::abi::{STREAM_CALL, STREAM_ENTER, STREAM_PATH_EXIT, STREAM_REPEAT};
use pathprof_wasm::map::RawCounts;
use pathprof_wasm::ProfileMap;
use std::collections::HashMap;
use std::time::Duration;

/// The calls on every path of the streamed functions.
pub struct PathCallTable {
    /// By function: its DAG, numbering and the calls of each block.
    functions: HashMap<u32, (Dag, Numbering, Vec<u32>)>,
}

impl PathCallTable {
    /// The table of the functions `map` gives probes.
    pub fn new(map: &ProfileMap) -> PathCallTable {
        let functions = map
            .probed()
            .map(|(f, p)| {
                let calls = f.blocks.iter().map(|b| b.calls).collect();
                (f.index, (p.plan.dag.clone(), p.plan.numbering.clone(), calls))
            })
            .collect();
        PathCallTable { functions }
    }
}

impl PathCalls for PathCallTable {
    fn calls(&mut self, label: u64) -> Option<u32> {
        self.functions.get(&((label >> 32) as u32)).and_then(|(dag, numbering, calls)| {
            let path = regen::regenerate(dag, numbering, label & 0xffff_ffff).ok()?;
            Some(path.blocks.iter().map(|&b| calls.get(b as usize).copied().unwrap_or(0)).sum())
        })
    }
}

/// Decodes the stream of mode `ips` into a [`SegmentFolder`].
pub struct SegmentConsumer {
    folder: SegmentFolder,
    calls: PathCallTable,
    /// The last item, which a repeat item repeats.
    last: u64,
    items: u64,
}

/// What an `ips` run streamed.
#[derive(Debug)]
pub struct Segmented {
    pub segments: Segments,
    /// Ball–Larus counts by function.
    pub counts: RawCounts,
    pub stream_items: u64,
    /// Buffers handed to the consumer, and how long the program waited for one to come back.
    pub handovers: u64,
    pub waited: Duration,
}

impl SegmentConsumer {
    /// A consumer of the stream of a module that `map` describes, counting IPSs of depth `k`.
    pub fn new(map: &ProfileMap, k: usize) -> SegmentConsumer {
        SegmentConsumer { folder: SegmentFolder::new(k), calls: PathCallTable::new(map), last: STREAM_ENTER, items: 0 }
    }
}

impl StreamConsumer for SegmentConsumer {
    type Output = Segmented;

    fn fold(&mut self, items: &[u64]) {
        let (folder, calls) = (&mut self.folder, &mut self.calls);
        self.items += items.len() as u64;
        for &item in items {
            match item & STREAM_REPEAT {
                0 => folder.path(item, false, 1, calls),
                STREAM_ENTER if item == STREAM_CALL => folder.call(),
                STREAM_ENTER => folder.enter(),
                STREAM_PATH_EXIT => folder.path(item & !STREAM_REPEAT, true, 1, calls),
                _ => {
                    let n = item & !STREAM_REPEAT;
                    match self.last & STREAM_REPEAT {
                        0 => folder.path(self.last, false, n, calls),
                        STREAM_PATH_EXIT => folder.path(self.last & !STREAM_REPEAT, true, n, calls),
                        // Entries and call markers are never repeated: each is written apart.
                        _ => {}
                    }
                    continue;
                }
            }
            self.last = item;
        }
    }

    fn finish(parts: Vec<SegmentConsumer>, end: StreamEnd) -> Result<Segmented> {
        ensure!(parts.len() == 1, "interprocedural path segments are folded on one thread");
        let part = parts.into_iter().next().expect("one part");
        let segments = part.folder.finish();
        let mut counts = end.arrays;
        for (&label, &n) in &segments.paths {
            counts.entry((label >> 32) as u32).or_default().push((label & 0xffff_ffff, n));
        }
        Ok(Segmented { segments, counts, stream_items: part.items, handovers: end.handovers, waited: end.waited })
    }
}
