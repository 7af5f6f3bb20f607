//! The branch queue between the pipeline and the profiler, and its cost [PPP07 §5.5.3].
//!
//! Branches retire as the program commits instructions, `ipc` per cycle. Each enters the queue,
//! whose profiler serves one branch at a time: push, update and update-count take a cycle each, a
//! pop a cycle plus the Hot Path Table's update — a cycle on a hit, log2(ways) on a miss. A branch
//! that finds the queue full (`capacity` branches not yet served, the one in service included)
//! stalls commit until the oldest is done; every later instruction commits that much later. The
//! stall cycles over the cycles of the program alone are the profiler's overhead.

/// A branch queue.
#[derive(Clone, Debug)]
pub struct BranchQueue {
    capacity: usize,
    /// Cycles an instruction takes to commit: 1 / ipc.
    cycles_per_instruction: f64,
    /// When each of the last `capacity` branches leaves the profiler (a ring).
    done: Vec<f64>,
    next: usize,
    /// The last branch's departure.
    last: f64,
    /// Instructions committed.
    instructions: u64,
    pub stall_cycles: f64,
    pub busy_cycles: u64,
}

impl BranchQueue {
    pub fn new(capacity: usize, ipc: f64) -> BranchQueue {
        let capacity = capacity.max(1);
        BranchQueue {
            capacity,
            cycles_per_instruction: if ipc > 0.0 { 1.0 / ipc } else { 1.0 },
            done: vec![0.0; capacity],
            next: 0,
            last: 0.0,
            instructions: 0,
            stall_cycles: 0.0,
            busy_cycles: 0,
        }
    }

    /// A branch retires after `instructions` more instructions, and takes the profiler `cycles`.
    #[inline]
    pub fn branch(&mut self, instructions: u64, cycles: u64) {
        self.instructions += instructions;
        let commit = self.instructions as f64 * self.cycles_per_instruction + self.stall_cycles;
        // The slot this branch takes was the `capacity`-th branch before it: it must have left.
        let free = self.done[self.next];
        let enter = if free > commit {
            self.stall_cycles += free - commit;
            free
        } else {
            commit
        };
        let leave = enter.max(self.last) + cycles as f64;
        self.done[self.next] = leave;
        self.next += 1;
        if self.next == self.capacity {
            self.next = 0;
        }
        self.last = leave;
        self.busy_cycles += cycles;
    }

    /// Cycles of the program without the profiler.
    pub fn program_cycles(&self) -> f64 {
        self.instructions as f64 * self.cycles_per_instruction
    }

    /// Stall cycles over the program's cycles.
    pub fn overhead(&self) -> f64 {
        let p = self.program_cycles();
        if p == 0.0 {
            0.0
        } else {
            self.stall_cycles / p
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A branch every instruction at one per cycle, each taking the profiler two cycles: a queue of
    /// one stalls every branch by a cycle after the first; a queue of four only delays the stall
    /// (branch i leaves at 2i + 1 until then, and waits once branch i − 4 leaves after i commits:
    /// from the eighth).
    #[test]
    fn a_profiler_slower_than_the_branches_stalls_commit() {
        let mut q = BranchQueue::new(1, 1.0);
        for _ in 0..100 {
            q.branch(1, 2);
        }
        assert_eq!(q.stall_cycles, 99.0);
        let mut q4 = BranchQueue::new(4, 1.0);
        for _ in 0..100 {
            q4.branch(1, 2);
        }
        assert_eq!(q4.stall_cycles, 93.0);
    }

    /// Branches far enough apart never stall, whatever the queue.
    #[test]
    fn a_fast_enough_profiler_costs_nothing() {
        let mut q = BranchQueue::new(1, 2.0);
        for _ in 0..100 {
            q.branch(10, 3);
        }
        assert_eq!(q.stall_cycles, 0.0);
        assert_eq!(q.overhead(), 0.0);
        assert_eq!(q.busy_cycles, 300);
    }

    /// A burst is absorbed by a queue as long as the burst.
    #[test]
    fn a_queue_absorbs_bursts() {
        let burst = |capacity| {
            let mut q = BranchQueue::new(capacity, 1.0);
            for _ in 0..10 {
                for _ in 0..4 {
                    q.branch(0, 2);
                }
                q.branch(20, 1);
            }
            q.stall_cycles
        };
        assert!(burst(1) > 0.0);
        assert_eq!(burst(8), 0.0);
    }
}
