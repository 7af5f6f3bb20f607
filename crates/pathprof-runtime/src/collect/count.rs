//! The collector of exact counts (`bl`, and `ppp`) [BL96]: functions with few paths count in arrays
//! of the profiler's memory, read once the program has stopped; the others in hash tables of the
//! same memory, which pass the paths they cannot hold to [`HostImport::CountPath`], which this
//! collector counts in an exact hash table (as it counts every path of the functions whose tables
//! do not fit), with the supergraph IDs of two words of mode `ippp` in a table of their own.
//! Preferentially counted functions [PPP07 §3.3] keep their interesting paths in slots of the
//! profiler's memory and pass the residual ones to the same import. In mode `events`, functions
//! whose path ends add event vectors (`pd`), or that count their events directly (`dec`), keep
//! event counters in the profiler's memory, read with the rest [EVT23 §4.2].

use super::{Collector, HostCall};
use crate::replay::HostRecord;
use anyhow::{bail, ensure, Context, Result};
use pathprof_wasm::abi::{HostImport, HIGH_KEY};
use pathprof_wasm::map::{EventCounters, RawCounts, SinkLayout, StoredCounters};
use pathprof_wasm::ProfileMap;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// Exact path counts of one run.
pub struct CountCollector {
    stored: StoredCounters,
    events: Vec<EventCounters>,
    /// Events of the map.
    width: usize,
    /// Counts of the hash-counted functions, by `(function, path ID)`.
    hash: HashMap<(u32, u64), u64>,
    /// Counts of the IDs of two words, by `(function, high key, path ID)`.
    wide: WideCounts,
    /// The function and high key the last call passed, for the ID the next call passes.
    high: Option<(u32, u64)>,
    /// The functions whose IDs may have two words.
    wide_functions: HashSet<u32>,
}

/// Counts of supergraph IDs of two words, by `(function, high key, ID)`.
pub type WideCounts = HashMap<(u32, u64, u64), u64>;

/// What a run counted.
#[derive(Debug)]
pub struct Counted {
    /// Path counts by function.
    pub counts: RawCounts,
    /// Entries of the host's hash table.
    pub hash_entries: usize,
    /// Counts of the supergraph IDs of two words.
    pub wide: WideCounts,
    /// Event totals of the functions with event counters, an entry per event of the map.
    pub events: HashMap<u32, Vec<u64>>,
}

impl CountCollector {
    /// The collector of a module instrumented with exact counts.
    pub fn new(map: &ProfileMap) -> Result<CountCollector> {
        if !matches!(map.sink, SinkLayout::Count { .. } | SinkLayout::Ppp { .. }) {
            bail!("this module was not instrumented to count its paths exactly");
        }
        Ok(CountCollector {
            stored: map.stored_counters(),
            events: map.event_counters(),
            width: map.events.len(),
            hash: HashMap::new(),
            wide: HashMap::new(),
            high: None,
            wide_functions: (map.functions.iter())
                .filter(|f| f.probes().and_then(|p| p.supergraph.as_ref()).is_some_and(|s| s.wide()))
                .map(|f| f.index)
                .collect(),
        })
    }

    /// The counts so far: the arrays in `memory` and the host's table.
    pub fn counts(&self, memory: Option<&[u8]>) -> RawCounts {
        let mut counts = RawCounts::new();
        if let Some(memory) = memory {
            self.stored.read(memory, &mut counts);
        }
        super::add_host_counts(&mut counts, &self.hash);
        counts
    }
}

impl CountCollector {
    /// The event totals so far of the functions with event counters in `memory`, an entry per event
    /// of the map.
    pub fn events(&self, memory: Option<&[u8]>) -> HashMap<u32, Vec<u64>> {
        match memory {
            Some(memory) => self.events.iter().map(|c| (c.function, c.read(memory, self.width))).collect(),
            None => HashMap::new(),
        }
    }
}

impl CountCollector {
    /// The counts in `memory` and the host's table, and the event totals.
    fn read(&self, memory: Option<&[u8]>) -> Counted {
        Counted {
            counts: self.counts(memory),
            hash_entries: self.hash.len() + self.wide.len(),
            wide: self.wide.clone(),
            events: self.events(memory),
        }
    }
}

impl Collector for CountCollector {
    type Output = Counted;

    const IMPORT: Option<HostImport> = Some(HostImport::CountPath);

    fn host_call(&mut self, call: HostCall<'_>) -> Result<()> {
        let HostCall::Path { function, path } = call else { bail!("count_path takes a path") };
        match self.high.take() {
            Some(_) if function & HIGH_KEY != 0 => bail!("count_path passed two high keys in a row"),
            None if function & HIGH_KEY != 0 => {
                let f = function & !HIGH_KEY;
                ensure!(
                    self.wide_functions.contains(&f),
                    "count_path passed a high key for function {f}, whose IDs have one word"
                );
                self.high = Some((f, path));
            }
            Some((f, high)) => {
                ensure!(f == function, "count_path passed a high key of function {f} and then a path of {function}");
                *self.wide.entry((function, high, path)).or_insert(0) += 1;
            }
            None => *self.hash.entry((function, path)).or_insert(0) += 1,
        }
        Ok(())
    }

    fn replay(&mut self, host: &HostRecord, _: Option<&[u8]>) -> Result<()> {
        ensure!(host.stream.is_empty(), "the host recorded a stream, which this module does not write");
        for &(function, path, n) in &host.counts {
            add_recorded(&mut self.hash, (function, path), n)?;
        }
        for &(function, high, path, n) in &host.wide {
            ensure!(
                self.wide_functions.contains(&function),
                "the host recorded an ID of two words for function {function}, whose IDs have one word"
            );
            add_recorded(&mut self.wide, (function, high, path), n)?;
        }
        Ok(())
    }

    fn finish(&mut self, memory: Option<&mut [u8]>) -> Result<Counted> {
        Ok(self.read(memory.as_deref()))
    }

    /// Reading the counts changes nothing: a snapshot reads what `finish` reads.
    fn snapshot(&mut self, memory: Option<&mut [u8]>) -> Option<Result<Counted>> {
        Some(Ok(self.read(memory.as_deref())))
    }
}

/// Adds a recorded count `n` to `key`'s in `table`.
fn add_recorded<K: Hash + Eq>(table: &mut HashMap<K, u64>, key: K, n: u64) -> Result<()> {
    let count = table.entry(key).or_insert(0);
    *count = count.checked_add(n).context("a recorded path count adds up past 2^64 - 1")?;
    Ok(())
}
