//! The Hot Path Table [PPP07 §5.4, Fig. 5.6]: a set-associative table of path descriptors, each with
//! an accumulator. A path that leaves the path stack is looked up in the set its descriptor indexes;
//! a hit adds to the entry's accumulator, a miss replaces an entry of the set — the least frequently
//! used (LFU, the thesis' choice) or the least recently used (LRU) — with the path.

use super::Descriptor;

/// How the set is chosen from a descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexFn {
    /// Bits of the start address only.
    Start,
    /// The start address XOR the length XOR the outcome bits: the thesis' best [PPP07 §5.5.2].
    Xor,
}

/// Which entry of a full set a miss replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Replacement {
    /// Least frequently used: the smallest accumulator (ties: the least recently used).
    Lfu,
    /// Least recently used.
    Lru,
}

impl Replacement {
    pub fn name(self) -> &'static str {
        match self {
            Replacement::Lfu => "lfu",
            Replacement::Lru => "lru",
        }
    }
}

/// The shape of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HptConfig {
    /// Entries in all (a multiple of `ways`).
    pub entries: u32,
    pub ways: u32,
    pub replacement: Replacement,
    pub index: IndexFn,
}

impl HptConfig {
    /// The thesis' table: 512 entries, 4 ways, LFU, XOR index.
    pub const DEFAULT: HptConfig =
        HptConfig { entries: 512, ways: 4, replacement: Replacement::Lfu, index: IndexFn::Xor };

    pub fn sets(&self) -> u32 {
        (self.entries / self.ways.max(1)).max(1)
    }

    /// Bytes of the table in hardware: per entry a descriptor (32-bit start, 5-bit length, 32
    /// outcome bits) and a 32-bit accumulator [PPP07 §5.5: 512 entries ≈ 7 KB].
    pub fn bytes(&self) -> u64 {
        u64::from(self.entries) * (32 + 5 + 32 + 32) / 8
    }

    /// Cycles a miss costs with LFU: log2 of the ways [PPP07 §5.5.3] (at least one).
    pub fn miss_cycles(&self) -> u64 {
        u64::from(self.ways.max(2).ilog2())
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    path: Descriptor,
    count: u64,
    used: u64,
    full: bool,
}

const EMPTY: Slot =
    Slot { path: Descriptor { start: 0, length: 0, bits: 0, outcomes: 0 }, count: 0, used: 0, full: false };

/// Hits and misses of a table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HptStats {
    pub hits: u64,
    pub misses: u64,
    /// Misses that replaced an entry.
    pub evictions: u64,
}

impl HptStats {
    pub fn hit_rate(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            0.0
        } else {
            self.hits as f64 / n as f64
        }
    }
}

/// A Hot Path Table.
#[derive(Clone, Debug)]
pub struct Hpt {
    pub config: HptConfig,
    sets: u32,
    slots: Vec<Slot>,
    clock: u64,
    pub stats: HptStats,
}

impl Hpt {
    pub fn new(config: HptConfig) -> Hpt {
        let ways = config.ways.max(1);
        let sets = config.sets();
        Hpt { config, sets, slots: vec![EMPTY; (sets * ways) as usize], clock: 0, stats: HptStats::default() }
    }

    /// The set of `path`.
    pub fn set_of(&self, path: &Descriptor) -> u32 {
        let h = match self.config.index {
            IndexFn::Start => path.start,
            IndexFn::Xor => {
                let o = path.outcomes;
                let folded = (o as u32) ^ ((o >> 32) as u32) ^ ((o >> 64) as u32) ^ ((o >> 96) as u32);
                path.start ^ folded.rotate_left(7) ^ (u32::from(path.length) << 3)
            }
        };
        if self.sets.is_power_of_two() {
            h & (self.sets - 1)
        } else {
            h % self.sets
        }
    }

    /// Adds `amount` to `path`'s entry, replacing an entry of its set if it has none; whether it hit.
    #[inline]
    pub fn insert(&mut self, path: &Descriptor, amount: u64) -> bool {
        self.clock += 1;
        let ways = self.config.ways.max(1) as usize;
        let base = self.set_of(path) as usize * ways;
        let set = &mut self.slots[base..base + ways];
        if let Some(slot) = set.iter_mut().find(|s| s.full && s.path == *path) {
            slot.count += amount;
            slot.used = self.clock;
            self.stats.hits += 1;
            return true;
        }
        self.stats.misses += 1;
        let victim = match set.iter().position(|s| !s.full) {
            Some(i) => i,
            None => {
                self.stats.evictions += 1;
                let key = |s: &Slot| match self.config.replacement {
                    Replacement::Lfu => (s.count, s.used),
                    Replacement::Lru => (s.used, 0),
                };
                (0..ways).min_by_key(|&i| key(&set[i])).expect("a set has ways")
            }
        };
        set[victim] = Slot { path: *path, count: amount, used: self.clock, full: true };
        false
    }

    /// The entries held, with their accumulators.
    pub fn entries(&self) -> impl Iterator<Item = (&Descriptor, u64)> + Clone {
        self.slots.iter().filter(|s| s.full).map(|s| (&s.path, s.count))
    }

    /// Empties the table (the profiler starts afresh), keeping its statistics.
    pub fn clear(&mut self) {
        self.slots.fill(EMPTY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_set(ways: u32, replacement: Replacement) -> Hpt {
        Hpt::new(HptConfig { entries: ways, ways, replacement, index: IndexFn::Xor })
    }

    /// A stream where LFU keeps the hot path and LRU loses it: a hot path, then a burst of cold ones
    /// that fills the set, then the hot path again.
    #[test]
    fn lfu_keeps_hot_paths_that_lru_evicts() {
        let hot = Descriptor::at(1);
        let cold: Vec<Descriptor> = (10..14).map(Descriptor::at).collect();
        let mut stream = vec![hot; 10];
        for round in 0..3 {
            stream.extend(&cold[round..round + 2]);
            stream.push(hot);
        }
        let (mut lfu, mut lru) = (one_set(2, Replacement::Lfu), one_set(2, Replacement::Lru));
        for p in &stream {
            lfu.insert(p, 1);
            lru.insert(p, 1);
        }
        let count = |t: &Hpt, p: &Descriptor| t.entries().find(|(d, _)| *d == p).map(|(_, c)| c);
        assert_eq!(count(&lfu, &hot), Some(13));
        assert_eq!(lfu.stats.hits, 14);
        // LRU: two cold paths push the hot one out each round; it comes back with a count of 1.
        assert_eq!(count(&lru, &hot), Some(1));
        assert_eq!(lru.stats.hits, 11);
        assert!(lfu.stats.hit_rate() > lru.stats.hit_rate());
    }

    #[test]
    fn a_table_big_enough_counts_exactly() {
        let mut t = Hpt::new(HptConfig { entries: 64, ways: 64, ..HptConfig::DEFAULT });
        for i in 0..1000u32 {
            t.insert(&Descriptor::at(i % 50), 2);
        }
        assert_eq!(t.entries().count(), 50);
        assert!(t.entries().all(|(_, c)| c == 40));
        assert_eq!(t.stats.misses, 50);
        assert_eq!(HptConfig::DEFAULT.bytes(), 6464);
    }
}
