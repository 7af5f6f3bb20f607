//! The collector of exact counts (`bl`, and `ppp`) [BL96]: functions with few paths count in arrays
//! of the profiler's memory, read once the program has stopped; the others in hash tables of the
//! same memory, which pass the paths they cannot hold to [`HostImport::CountPath`], which this
//! collector counts in an exact hash table (as it counts every path of the functions whose tables
//! do not fit), with the supergraph IDs of several words of mode `ippp` in a table of their own.
//! Preferentially counted functions [PPP07 §3.3] keep their interesting paths in slots of the
//! profiler's memory and pass the residual ones to the same import. In mode `events`, functions
//! whose path ends add event vectors (`pd`), or that count their events directly (`dec`), keep
//! event counters in the profiler's memory, read with the rest [EVT23 §4.2].

use super::{Collector, HostCall};
use crate::replay::HostRecord;
use anyhow::{bail, ensure, Context, Result};
use pathprof_wasm::abi::{HostImport, HIGH_KEYS};
use pathprof_wasm::map::{EventCounters, RawCounts, SinkLayout, StoredCounters};
use pathprof_wasm::ProfileMap;
use std::collections::HashMap;
use std::hash::Hash;

/// Exact path counts of one run.
pub struct CountCollector {
    stored: StoredCounters,
    events: Vec<EventCounters>,
    /// Events of the map.
    width: usize,
    /// Counts of the hash-counted functions, by `(function, path ID)`.
    hash: HashMap<(u32, u64), u64>,
    /// Counts of the IDs of several words.
    wide: WideCounts,
    /// The high keys and the ID of the last ID of several words (a buffer kept from one to the next).
    pending: Vec<u64>,
    /// The functions whose IDs may have several words, with their high keys.
    wide_functions: HashMap<u32, usize>,
}

/// Counts of supergraph IDs of several words, by function, then by its high keys followed by the
/// ID (a slice, so that a count is looked up without building a key).
pub type WideCounts = HashMap<u32, HashMap<Box<[u64]>, u64>>;

/// What a run counted.
#[derive(Debug)]
pub struct Counted {
    /// Path counts by function.
    pub counts: RawCounts,
    /// Entries of the host's hash table.
    pub hash_entries: usize,
    /// Counts of the supergraph IDs of several words.
    pub wide: WideCounts,
    /// Event totals of the functions with event counters, an entry per event of the map.
    pub events: HashMap<u32, Vec<u64>>,
    /// The path ends the preferential slots counted (`None` past 2^64).
    pub in_slots: Option<u64>,
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
            pending: Vec::new(),
            wide_functions: (map.functions.iter())
                .filter_map(|f| Some((f.index, f.probes()?.supergraph.as_ref()?.high_words())))
                .filter(|&(_, words)| words > 0)
                .map(|(f, words)| (f, usize::from(words)))
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
            hash_entries: self.hash.len() + self.wide.values().map(HashMap::len).sum::<usize>(),
            wide: self.wide.clone(),
            events: self.events(memory),
            in_slots: memory.map_or(Some(0), |m| self.stored.in_slots(m)),
        }
    }
}

impl Collector for CountCollector {
    type Output = Counted;

    const IMPORT: Option<HostImport> = Some(HostImport::CountPath);

    fn host_call(&mut self, call: HostCall<'_>) -> Result<()> {
        match call {
            HostCall::Path { function, path } => *self.hash.entry((function, path)).or_insert(0) += 1,
            HostCall::Wide { function: f, path, memory } => {
                let Some(&words) = self.wide_functions.get(&f) else {
                    bail!("count_path passed high keys for function {f}, whose IDs have one word")
                };
                let at = HIGH_KEYS as usize;
                let Some(keys) = memory.get(at..at + 8 * words) else {
                    bail!("the profiler's memory ends before the {words} high keys of function {f}")
                };
                self.pending.clear();
                let high = keys.chunks_exact(8).map(|k| u64::from_le_bytes(k.try_into().expect("8 bytes")));
                self.pending.extend(high.chain([path]));
                let ids = self.wide.entry(f).or_default();
                match ids.get_mut(&self.pending[..]) {
                    Some(count) => *count += 1,
                    None => {
                        ids.insert(self.pending[..].into(), 1);
                    }
                }
            }
            HostCall::Memory(_) => bail!("count_path takes a path"),
        }
        Ok(())
    }

    fn replay(&mut self, host: &HostRecord, _: Option<&[u8]>) -> Result<()> {
        ensure!(host.stream.is_empty(), "the host recorded a stream, which this module does not write");
        for &(function, path, n) in &host.counts {
            add_recorded(&mut self.hash, (function, path), n)?;
        }
        for (function, high, path, n) in &host.wide {
            let words = self.wide_functions.get(function).copied().unwrap_or(0);
            ensure!(
                high.len() == words,
                "the host recorded an ID of {} words for function {function}, whose IDs have {}",
                high.len() + 1,
                words + 1
            );
            let keys: Box<[u64]> = high.iter().chain([path]).copied().collect();
            add_recorded(self.wide.entry(*function).or_default(), keys, *n)?;
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
