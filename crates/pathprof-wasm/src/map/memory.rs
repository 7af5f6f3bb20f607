//! What the instrumented code wrote in the profiler's memory, read after the run (or while it runs):
//! counter arrays with their pending loop and run counts, hash tables, preferential slots, event
//! counters and the bursts of sampled loops.

use super::{Counters, LoopBursts, LoopCounter, ProfileMap, RunCounter, SinkLayout};
use std::collections::HashMap;

/// Path counts of one run, by original function index: `(path ID, count)` with `count > 0`.
pub type RawCounts = HashMap<u32, Vec<(u64, u64)>>;

/// Where one function's event counters lie in the profiler's memory ([`Counters::Events`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventCounters {
    pub function: u32,
    pub offset: u32,
    pub mask: u64,
}

impl EventCounters {
    /// The function's event totals in `memory`: an entry per event of the map (`width`).
    pub fn read(&self, memory: &[u8], width: usize) -> Vec<u64> {
        let mut out = vec![0u64; width];
        let mut at = self.offset as usize;
        for (j, v) in out.iter_mut().enumerate() {
            if self.mask >> j & 1 == 1 {
                *v = le_u64(memory, at);
                at += 8;
            }
        }
        out
    }
}

/// Where one function's array of counters lies in the profiler's memory: `len` little-endian `u64`
/// counters at byte `offset`, indexed by path ID, and the slots of its loop and run counters, which
/// hold the iterations not yet added to the array when the program stopped in the loop (a trap); or
/// `len` preferential slots ([`Counters::Ppp`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayCounters {
    pub function: u32,
    pub offset: u32,
    pub len: u64,
    pub loop_counters: Vec<LoopCounter>,
    pub run_counters: Vec<RunCounter>,
    /// The array holds preferential slots.
    pub slots: bool,
}

/// A function's hash table of paths in the profiler's memory ([`Counters::Table`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableCounters {
    pub function: u32,
    pub offset: u32,
    pub slots: u32,
}

impl TableCounters {
    /// Adds the paths the table holds in `memory` to `counts`.
    pub fn read(&self, memory: &[u8], counts: &mut RawCounts) {
        let bytes = crate::abi::TABLE_SLOT_BYTES as usize;
        let entry = counts.entry(self.function).or_default();
        for i in 0..self.slots as usize {
            let at = self.offset as usize + i * bytes;
            let key = le_u64(memory, at);
            if key != 0 {
                entry.push((key - 1, le_u64(memory, at + 8)));
            }
        }
    }
}

/// Every array and table of a module's counters: what a run counted in the profiler's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredCounters {
    pub arrays: Vec<ArrayCounters>,
    pub tables: Vec<TableCounters>,
}

impl StoredCounters {
    /// The path ends the preferential slots in `memory` counted, all functions' together (`None`
    /// past 2^64).
    pub fn in_slots(&self, memory: &[u8]) -> Option<u64> {
        let mut counts = RawCounts::new();
        for a in self.arrays.iter().filter(|a| a.slots) {
            a.read(memory, &mut counts);
        }
        counts.values().flatten().try_fold(0u64, |sum, &(_, n)| sum.checked_add(n))
    }

    /// Adds the counts that the arrays (pending loop and run counts included) and the tables hold in
    /// `memory` to `counts`.
    pub fn read(&self, memory: &[u8], counts: &mut RawCounts) {
        for a in &self.arrays {
            a.read(memory, counts);
        }
        for t in &self.tables {
            t.read(memory, counts);
        }
    }
}

impl ArrayCounters {
    /// Bytes of one entry: a counter, or a preferential slot.
    fn entry_bytes(&self) -> u64 {
        if self.slots {
            u64::from(crate::abi::PPP_SLOT_BYTES)
        } else {
            8
        }
    }

    /// Bytes of the array.
    pub fn bytes(&self) -> u64 {
        self.len * self.entry_bytes()
    }

    /// The end of the last byte the array and its loop and run counters take (`None` past 2^64).
    fn extent(&self) -> Option<u64> {
        let array = self.len.checked_mul(self.entry_bytes()).and_then(|b| u64::from(self.offset).checked_add(b));
        let slots = self.loop_counters.iter().map(|l| u64::from(l.slot) + 8);
        let runs = self.run_counters.iter().map(|r| u64::from(r.slot) + 16);
        Some(slots.chain(runs).fold(array?, u64::max))
    }

    /// Adds the function's counts in `memory` to `counts`, pending loop and run counts included.
    pub fn read(&self, memory: &[u8], counts: &mut RawCounts) {
        let word = |at: usize| le_u64(memory, at);
        if self.slots {
            let entry = counts.entry(self.function).or_default();
            for i in 0..self.len as usize {
                let at = self.offset as usize + i * crate::abi::PPP_SLOT_BYTES as usize;
                let (id, count) = (word(at), word(at + crate::abi::PPP_SLOT_COUNT as usize));
                if count > 0 {
                    entry.push((id, count));
                }
            }
            return;
        }
        let base = self.offset as usize;
        let mut values: Vec<u64> = memory[base..base + 8 * self.len as usize]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
            .collect();
        // A loop counter's slot holds its path's pending count, a run counter's the run's length and
        // then its path.
        let word = |at: u32| le_u64(memory, at as usize);
        let pending = self
            .loop_counters
            .iter()
            .map(|l| (l.path, word(l.slot)))
            .chain(self.run_counters.iter().map(|r| (word(r.slot + 8), word(r.slot))));
        for (path, n) in pending {
            if let Some(v) = usize::try_from(path).ok().and_then(|p| values.get_mut(p)) {
                *v += n;
            }
        }
        let entry = counts.entry(self.function).or_default();
        entry.extend(values.into_iter().enumerate().filter(|&(_, c)| c > 0).map(|(id, c)| (id as u64, c)));
    }
}

/// A sampled loop's count of the bursts its copy did not take, in `memory` (0 when the memory
/// does not reach the slot).
pub fn read_bursts(memory: &[u8], bursts: &LoopBursts) -> u64 {
    let at = bursts.slot as usize;
    if memory.len() < at + 8 {
        return 0;
    }
    le_u64(memory, at)
}

/// The little-endian `u64` at byte `at` of `memory`.
fn le_u64(memory: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(memory[at..at + 8].try_into().expect("8 bytes"))
}

impl ProfileMap {
    /// Bytes of the profiler's memory that the map's words, counters and slots reach (`None` when
    /// they reach past 2^64): a memory shorter than that cannot be read with this map.
    pub fn memory_extent(&self) -> Option<u64> {
        let end = |offset: u32, bytes: u64| u64::from(offset).checked_add(bytes);
        let sink = match self.sink {
            SinkLayout::Sample { buffer: Some(b), .. } => b.end(),
            SinkLayout::Sample { buffer: None, .. } => u64::from(crate::abi::SAMPLE_WORDS),
            SinkLayout::Stream(s) => s.end(),
            SinkLayout::Count { .. } | SinkLayout::Ppp { .. } => 0,
        };
        let arrays = self.arrays();
        let table_slot = u64::from(crate::abi::TABLE_SLOT_BYTES);
        let tables = self.tables().into_iter().map(|t| end(t.offset, u64::from(t.slots) * table_slot));
        let events = self.event_counters().into_iter().map(|e| end(e.offset, 8 * u64::from(e.mask.count_ones())));
        let bursts = self.loop_bursts().into_iter().map(|(_, b)| end(b.slot, 8));
        let arrays = arrays.iter().map(ArrayCounters::extent);
        arrays.chain(tables).chain(events).chain(bursts).try_fold(sink, |m, e| Some(m.max(e?)))
    }

    /// Where the counter arrays lie: one per function counted in an array (a streamed function's
    /// singles too).
    pub fn arrays(&self) -> Vec<ArrayCounters> {
        self.probed()
            .flat_map(|(f, p)| {
                let (offset, len, slots) = match (p.counters, &p.supergraph) {
                    (Counters::Ppp { offset, slots }, _) => (Some(offset), u64::from(slots), true),
                    // A supergraph's IDs in an array of their own; below its paths in a split one.
                    (Counters::Array { offset }, Some(s)) => (Some(offset), s.ids, false),
                    (counters, _) => (counters.array(), p.plan.num_paths(), false),
                };
                let array = offset.map(|offset| ArrayCounters {
                    function: f.index,
                    offset,
                    len,
                    loop_counters: p.loop_counters.clone(),
                    run_counters: p.run_counters.clone(),
                    slots,
                });
                // The interesting supergraph paths' slots besides.
                let interesting = p.supergraph_slots.as_ref().map(|s| ArrayCounters {
                    function: f.index,
                    offset: s.offset,
                    len: u64::from(s.slots),
                    loop_counters: Vec::new(),
                    run_counters: Vec::new(),
                    slots: true,
                });
                array.into_iter().chain(interesting)
            })
            .collect()
    }

    /// The arrays and tables of the functions that count in one.
    pub fn stored_counters(&self) -> StoredCounters {
        StoredCounters { arrays: self.arrays(), tables: self.tables() }
    }

    /// The hash tables of the functions that count in one ([`Counters::Table`],
    /// [`Counters::BurstTable`]).
    pub fn tables(&self) -> Vec<TableCounters> {
        self.probed()
            .filter_map(|(f, p)| match p.counters {
                Counters::Table { offset, slots }
                | Counters::BurstTable { offset, slots }
                | Counters::Split { table_offset: Some(offset), slots, .. } => {
                    Some(TableCounters { function: f.index, offset, slots })
                }
                _ => None,
            })
            .collect()
    }

    /// Mode `events`: where the event counters lie, one set per function that has them.
    pub fn event_counters(&self) -> Vec<EventCounters> {
        self.probed()
            .filter_map(|(f, p)| match p.counters {
                Counters::Events { offset, mask, .. } => Some(EventCounters { function: f.index, offset, mask }),
                _ => None,
            })
            .collect()
    }

    /// Sampled mode: the loops that run a copy without probes, with their functions.
    pub fn loop_bursts(&self) -> Vec<(u32, LoopBursts)> {
        self.probed().flat_map(|(f, p)| p.loop_bursts.iter().map(move |&l| (f.index, l))).collect()
    }
}
