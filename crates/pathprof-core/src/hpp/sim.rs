//! The whole profiler: branches into the path stack, paths into one or more Hot Path Tables, the
//! branch queue's cost, and the tables' accuracy against the exact profile of the same stream
//! [PPP07 §5.5].
//!
//! The exact profile is an unbounded table fed with the same paths. *Complete overlap* compares a
//! table at the end of the run with it; *dynamic overlap* is the mean over windows of `window`
//! instructions of the overlap of a table that starts empty at the window's start with the exact
//! profile of the window (the profiler switched on for a short while) [PPP07 §5.5.2]. A last window
//! shorter than `window` counts only when it is the only one.
//!
//! Several tables can watch one stream (a sweep over sizes and ways): they see the same paths, and
//! the first one's hits and misses drive the branch queue.

use super::stack::{PathStack, StackStats};
use super::table::{Hpt, HptConfig, HptStats};
use super::{overlap, Branch, BranchQueue, Descriptor, DescriptorMap, Extend, Mapping, Metric};

/// How to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulatorOptions {
    pub mapping: Mapping,
    pub extend: Option<Extend>,
    /// Entries of the path stack; `None` for a stack that grows into memory.
    pub stack_capacity: Option<usize>,
    /// Most branches of a path.
    pub max_length: u8,
    pub metric: Metric,
    /// The tables; the first one's misses cost the branch queue.
    pub tables: Vec<HptConfig>,
    /// Instructions per window of the dynamic overlap; 0 for none.
    pub window: u64,
    /// Entries of the branch queue.
    pub queue: usize,
    /// Instructions the pipeline commits per cycle.
    pub ipc: f64,
}

impl Default for SimulatorOptions {
    fn default() -> Self {
        SimulatorOptions {
            mapping: Mapping::BallLarus,
            extend: None,
            stack_capacity: Some(super::stack::DEFAULT_CAPACITY),
            max_length: super::stack::DEFAULT_MAX_LENGTH,
            metric: Metric::Frequency,
            tables: vec![HptConfig::DEFAULT],
            window: 100_000_000,
            queue: 4,
            ipc: 1.0,
        }
    }
}

struct Table {
    complete: Hpt,
    window: Hpt,
    window_overlaps: f64,
}

/// What a table did, and how close it came.
#[derive(Clone, Debug, PartialEq)]
pub struct TableReport {
    pub config: HptConfig,
    pub stats: HptStats,
    /// Complete overlap, per cent.
    pub complete_overlap: f64,
    /// Dynamic overlap, per cent (the mean over windows).
    pub dynamic_overlap: f64,
    /// Entries in use at the end.
    pub used: usize,
}

/// The simulator.
pub struct Simulator {
    options: SimulatorOptions,
    stack: PathStack,
    tables: Vec<Table>,
    exact: DescriptorMap<u64>,
    window_exact: DescriptorMap<u64>,
    window_instructions: u64,
    windows: u64,
    queue: BranchQueue,
    instructions: u64,
}

impl Simulator {
    pub fn new(options: SimulatorOptions) -> Simulator {
        let tables = options
            .tables
            .iter()
            .map(|&c| Table { complete: Hpt::new(c), window: Hpt::new(c), window_overlaps: 0.0 })
            .collect();
        Simulator {
            stack: PathStack::new(options.mapping, options.extend, options.stack_capacity, options.max_length),
            tables,
            exact: DescriptorMap::default(),
            window_exact: DescriptorMap::default(),
            window_instructions: 0,
            windows: 0,
            queue: BranchQueue::new(options.queue, options.ipc),
            instructions: 0,
            options,
        }
    }

    /// One retiring branch.
    #[inline]
    pub fn branch(&mut self, b: &Branch) {
        let metric = self.options.metric;
        let (exact, window_exact, tables) = (&mut self.exact, &mut self.window_exact, &mut self.tables);
        let windows = self.options.window > 0;
        let mut hpt_cycles = 0u64;
        let ops = self.stack.branch(b, &mut |d: &Descriptor, events| {
            let amount = metric.amount(events);
            if amount == 0 {
                return;
            }
            *exact.entry(*d).or_default() += amount;
            if windows {
                *window_exact.entry(*d).or_default() += amount;
            }
            for (i, t) in tables.iter_mut().enumerate() {
                let hit = t.complete.insert(d, amount);
                if windows {
                    t.window.insert(d, amount);
                }
                if i == 0 {
                    hpt_cycles += if hit { 1 } else { t.complete.config.miss_cycles() };
                }
            }
        });
        self.queue.branch(b.events.instructions, ops + hpt_cycles);
        self.instructions += b.events.instructions;
        self.window_instructions += b.events.instructions;
        if self.options.window > 0 && self.window_instructions >= self.options.window {
            self.close_window();
        }
    }

    fn close_window(&mut self) {
        for t in &mut self.tables {
            t.window_overlaps += overlap(t.window.entries(), &self.window_exact);
            t.window.clear();
        }
        self.window_exact.clear();
        self.windows += 1;
        self.window_instructions = 0;
    }

    /// Instructions that do not end with a branch (the run stopped after them).
    pub fn instructions(&mut self, n: u64) {
        self.instructions += n;
        self.window_instructions += n;
    }

    /// The end of the run: the last window, if it is the only one.
    pub fn finish(&mut self) {
        if self.options.window > 0 && self.windows == 0 && !self.window_exact.is_empty() {
            self.close_window();
        }
    }

    /// Every path that left the stack, with its metric: the exact profile.
    pub fn exact(&self) -> &DescriptorMap<u64> {
        &self.exact
    }

    /// The `i`-th table at the end of the run.
    pub fn table(&self, i: usize) -> &Hpt {
        &self.tables[i].complete
    }

    pub fn stack(&self) -> &StackStats {
        &self.stack.stats
    }

    /// Paths still on the stack (the run stopped inside them).
    pub fn open_paths(&self) -> usize {
        self.stack.depth()
    }

    pub fn queue(&self) -> &BranchQueue {
        &self.queue
    }

    pub fn windows(&self) -> u64 {
        self.windows
    }

    pub fn total_instructions(&self) -> u64 {
        self.instructions
    }

    /// Every table's figures.
    pub fn reports(&self) -> Vec<TableReport> {
        self.tables
            .iter()
            .map(|t| TableReport {
                config: t.complete.config,
                stats: t.complete.stats,
                complete_overlap: overlap(t.complete.entries(), &self.exact),
                dynamic_overlap: if self.windows == 0 { 0.0 } else { t.window_overlaps / self.windows as f64 },
                used: t.complete.entries().count(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BranchKind, Events, IndexFn, Replacement};
    use super::*;

    fn br(kind: BranchKind, target: u32, outcome: u32) -> Branch {
        Branch { kind, target, outcome, width: 1, events: Events { instructions: 5, memory: 1 } }
    }

    /// A loop whose body takes one of two paths, 3:1, called once: a table with room for every path
    /// counts exactly; a table of two entries keeps the hot path and the last one.
    #[test]
    fn overlap_of_small_and_large_tables() {
        let big = HptConfig { entries: 64, ways: 4, replacement: Replacement::Lfu, index: IndexFn::Xor };
        let tiny = HptConfig { entries: 2, ways: 2, ..big };
        let mut sim = Simulator::new(SimulatorOptions { tables: vec![big, tiny], window: 40, ..Default::default() });
        sim.branch(&br(BranchKind::Call, 100, 1));
        for i in 0..100 {
            sim.branch(&br(BranchKind::Forward, 0, u32::from(i % 4 == 3)));
            sim.branch(&br(BranchKind::Backward, 100, 1));
        }
        sim.branch(&br(BranchKind::Return, 0, 1));
        sim.finish();
        let exact = sim.exact();
        let hot = Descriptor::at(100).then(0, 1).then(1, 1);
        let cold = Descriptor::at(100).then(1, 1).then(1, 1);
        assert_eq!(exact[&hot], 75);
        assert_eq!(exact[&cold], 25);
        assert_eq!(exact.len(), 3);
        let r = sim.reports();
        assert!((r[0].complete_overlap - 100.0).abs() < 1e-9);
        assert!((r[0].dynamic_overlap - 100.0).abs() < 1e-9);
        // Two entries: LFU keeps the hot path (75 of 101) and the return's empty path, which evicted
        // the cold one: min(75/76, 75/101) + min(1/76, 1/101).
        let want = 100.0 * (75.0 / 101.0 + 1.0 / 101.0);
        assert!((r[1].complete_overlap - want).abs() < 1e-9, "{}", r[1].complete_overlap);
        assert_eq!(sim.windows(), 25);
        assert_eq!(sim.total_instructions(), 5 * 202);
        assert_eq!(sim.open_paths(), 0);
    }
}
