//! The hardware path profiler (HPP) of [PPP07 ch. 5], as a simulator fed with a program's branches.
//!
//! The profiler watches the stream of retiring branches. A *path stack* ([`stack`]) turns them into
//! *path descriptors* — a path's start address, its length in branches and one outcome per branch
//! [PPP07 §5.2] — by the operations that the branch kind maps to (the Ball–Larus mapping of
//! [PPP07 Table 5.1], the whole-program-path mapping of Table 5.2, and extended paths). Each path
//! that leaves the stack goes to a set-associative *Hot Path Table* ([`table`]) that keeps the hot
//! ones with LFU (or LRU) replacement [PPP07 §5.4]; a *branch queue* ([`queue`]) between the
//! pipeline and the profiler gives the cycles the profiler would stall commit by [PPP07 §5.5.3].
//! [`sim`] puts them together and measures the tables against the exact profile of the same stream
//! (an unbounded table): complete and dynamic overlap [PPP07 §5.5.2].
//!
//! Where the hardware has fixed widths — an 8-bit event counter per stack entry, a 32-bit
//! accumulator per table entry — the simulator counts exactly in 64 bits: the figures are those of
//! the design, not of its overflows.
//!
//! Nothing here knows where branches come from; `pathprof`'s `hpp` module feeds it the branches of
//! a WebAssembly run.

pub mod queue;
pub mod sim;
pub mod stack;
pub mod table;

pub use queue::BranchQueue;
pub use sim::{Simulator, SimulatorOptions, TableReport};
pub use stack::{Extend, Mapping, PathStack};
pub use table::{Hpt, HptConfig, IndexFn, Replacement};

/// What a retiring branch is, as the path stack classifies it [PPP07 §5.2].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BranchKind {
    Call,
    Return,
    /// A branch to a later address: conditional, unconditional or multi-way.
    Forward,
    /// A branch to a loop header.
    Backward,
    /// A branch whose target is computed (as a jump table is on most machines).
    Indirect,
}

/// One retiring branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branch {
    pub kind: BranchKind,
    /// The address the branch goes to: where a path pushed by it starts.
    pub target: u32,
    /// The branch's outcome, `width` bits of it: 1 bit for a two-way branch (1 when taken, and for
    /// an unconditional branch), more for a multi-way one (the index of the target taken).
    pub outcome: u32,
    pub width: u8,
    /// Events since the branch before (the block event counter [PPP07 §5.3]): instructions, and
    /// memory accesses.
    pub events: Events,
}

/// Events that travel with a branch and add up along a path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    pub instructions: u64,
    pub memory: u64,
}

impl Events {
    pub fn add(&mut self, other: Events) {
        self.instructions += other.instructions;
        self.memory += other.memory;
    }
}

/// Most outcome bits a descriptor holds: a path is split before it would need more.
pub const OUTCOME_BITS: u32 = 128;

/// A path as the hardware names it: where it starts, how many branches it has, and their outcomes
/// (`bits` of them, the first branch's in the lowest bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Descriptor {
    pub start: u32,
    pub length: u8,
    pub bits: u8,
    pub outcomes: u128,
}

impl Descriptor {
    /// The empty path at `start`.
    pub fn at(start: u32) -> Descriptor {
        Descriptor { start, length: 0, bits: 0, outcomes: 0 }
    }

    /// The path with one more branch.
    pub fn then(mut self, outcome: u32, width: u8) -> Descriptor {
        let mask = if width >= 32 { u32::MAX } else { (1u32 << width) - 1 };
        self.outcomes |= u128::from(outcome & mask) << self.bits;
        self.bits += width;
        self.length += 1;
        self
    }

    /// Whether one more branch of `width` bits would overflow the outcome bits.
    pub fn full_for(&self, width: u8) -> bool {
        u32::from(self.bits) + u32::from(width) > OUTCOME_BITS
    }
}

/// Which metric the tables accumulate per path [PPP07 §5.3].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Executions: one per path.
    Frequency,
    /// Instructions along the path.
    Instructions,
    /// Memory accesses along the path.
    Memory,
}

impl Metric {
    pub const ALL: [Metric; 3] = [Metric::Frequency, Metric::Instructions, Metric::Memory];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Frequency => "frequency",
            Metric::Instructions => "instructions",
            Metric::Memory => "memory",
        }
    }

    /// What one execution of a path with `events` adds.
    pub fn amount(self, events: Events) -> u64 {
        match self {
            Metric::Frequency => 1,
            Metric::Instructions => events.instructions,
            Metric::Memory => events.memory,
        }
    }
}

/// The overlap percentage of two profiles [PPP07 §5.5]: Σ over paths of the smaller of the two
/// shares, in per cent (100 for profiles in the same proportions, 0 for disjoint ones or when one is
/// empty).
pub fn overlap<'a>(
    a: impl IntoIterator<Item = (&'a Descriptor, u64)> + Clone,
    b: &std::collections::HashMap<Descriptor, u64, impl std::hash::BuildHasher>,
) -> f64 {
    let total_a: u64 = a.clone().into_iter().map(|(_, c)| c).sum();
    let total_b: u64 = b.values().sum();
    if total_a == 0 || total_b == 0 {
        return 0.0;
    }
    let mut sum = 0.0;
    for (d, c) in a {
        if let Some(&cb) = b.get(d) {
            sum += (c as f64 / total_a as f64).min(cb as f64 / total_b as f64);
        }
    }
    100.0 * sum
}

/// A map keyed by descriptors.
pub type DescriptorMap<V> = std::collections::HashMap<Descriptor, V, crate::hash::FxBuildHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_pack_outcomes_in_order() {
        let d = Descriptor::at(7).then(1, 1).then(0, 1).then(5, 3);
        assert_eq!((d.start, d.length, d.bits, d.outcomes), (7, 3, 5, 0b10101));
        assert!(!d.full_for(123));
        assert!(d.full_for(124));
    }

    #[test]
    fn overlap_of_shares() {
        let (p, q, r) = (Descriptor::at(1), Descriptor::at(2), Descriptor::at(3));
        let exact: DescriptorMap<u64> = [(p, 60), (q, 30), (r, 10)].into_iter().collect();
        // Same proportions: 100 %.
        assert!((overlap([(&p, 6), (&q, 3), (&r, 1)], &exact) - 100.0).abs() < 1e-9);
        // Only p kept: its share is 100 % in a, 60 % in b.
        assert!((overlap([(&p, 6)], &exact) - 60.0).abs() < 1e-9);
        // p and q kept at 50/50: min(.5,.6) + min(.5,.3) = 80 %.
        assert!((overlap([(&p, 5), (&q, 5)], &exact) - 80.0).abs() < 1e-9);
        assert_eq!(overlap([], &exact), 0.0);
    }
}
