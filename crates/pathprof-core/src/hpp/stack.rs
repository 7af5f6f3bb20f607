//! The path stack [PPP07 §5.2]: one entry per active procedure, each the path its procedure is
//! on — a [`Descriptor`], the path's events, and an extension counter.
//!
//! Every branch does, in this order, *update* (the top path gets the branch: one more branch, its
//! outcome, its events) or *update-count* (the top path gets the events only), then *pop* (the top
//! path leaves the stack, to the Hot Path Table), then *push* (a new path starts at the branch's
//! target), as the [`Mapping`] says for the branch's kind. An update that makes the path
//! as many branches long as the stack allows (or leaves fewer than 32 of its outcome bits free) ends
//! it there and starts a new one at the branch's target, unless the branch ends the path anyway.
//!
//! Extended paths [PPP07 §5.2] go on across up to N backward branches ([`Extend::Loops`]) or calls
//! ([`Extend::Calls`]: the callee's branches join the caller's path, and the return is a branch of
//! it). An entry that replaces one spanning calls (after a backward branch or a split inside a
//! callee) keeps its extension counter, so that the stack keeps one entry per group of frames and
//! each return finds its own.
//!
//! A bounded stack drops its oldest entry when full ("ignoring older entries"); a return into a
//! frame whose entry was dropped starts a new path at the return address.

use super::{Branch, BranchKind, Descriptor, Events};

/// Which operations each kind of branch does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mapping {
    /// [PPP07 Table 5.1]: Ball–Larus paths that end at backward and indirect branches; calls push
    /// and returns pop, so the stack mirrors the program's frames.
    BallLarus,
    /// [PPP07 Table 5.2]: paths also end at calls and returns, for a whole-program path.
    WholeProgram,
}

impl Mapping {
    pub fn name(self) -> &'static str {
        match self {
            Mapping::BallLarus => "bl",
            Mapping::WholeProgram => "wpp",
        }
    }
}

/// Extended paths: across how many backward branches, or calls, a path may go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extend {
    Loops(u32),
    Calls(u32),
}

/// One entry of the stack.
#[derive(Clone, Copy, Debug)]
struct Entry {
    path: Descriptor,
    events: Events,
    /// Backward branches crossed (with [`Extend::Loops`]), or calls entered and not yet returned
    /// from (with [`Extend::Calls`]).
    ext: u32,
}

impl Entry {
    fn at(start: u32, ext: u32) -> Entry {
        Entry { path: Descriptor::at(start), events: Events::default(), ext }
    }
}

/// What happened on the stack.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackStats {
    pub branches: u64,
    /// Paths that left the stack.
    pub paths: u64,
    /// Paths that started on it.
    pub pushes: u64,
    /// Paths ended because they reached the most branches (or outcome bits) a descriptor holds.
    pub splits: u64,
    /// Entries dropped because the stack was full.
    pub overflows: u64,
    /// Branches that found the stack empty (before the first call, or after the run's outermost
    /// return): no path takes them.
    pub orphans: u64,
    /// The most entries the stack held.
    pub deepest: usize,
}

/// The path stack.
#[derive(Clone, Debug)]
pub struct PathStack {
    entries: Vec<Entry>,
    /// Most entries; `None` for a stack that grows into memory.
    capacity: Option<usize>,
    mapping: Mapping,
    extend: Option<Extend>,
    max_length: u8,
    /// Entries dropped below the bottom and not yet returned to.
    dropped: u64,
    pub stats: StackStats,
}

/// The thesis' stack: 32 entries.
pub const DEFAULT_CAPACITY: usize = 32;
/// The thesis' descriptors: up to 32 branches.
pub const DEFAULT_MAX_LENGTH: u8 = 32;

impl PathStack {
    pub fn new(mapping: Mapping, extend: Option<Extend>, capacity: Option<usize>, max_length: u8) -> PathStack {
        PathStack {
            entries: Vec::with_capacity(capacity.unwrap_or(64).min(1 << 16)),
            capacity: capacity.map(|c| c.max(1)),
            mapping,
            extend,
            max_length: max_length.max(1),
            dropped: 0,
            stats: StackStats::default(),
        }
    }

    /// Entries on the stack.
    pub fn depth(&self) -> usize {
        self.entries.len()
    }

    /// Processes one branch; every path that leaves the stack goes to `out`. The number of operations
    /// it took: one update or update-count, then two per pop (the pop and the table's update), one
    /// per push.
    #[inline]
    pub fn branch(&mut self, b: &Branch, out: &mut impl FnMut(&Descriptor, Events)) -> u64 {
        self.stats.branches += 1;
        let (paths, pushes) = (self.stats.paths, self.stats.pushes);
        let ext = self.entries.last().map_or(0, |e| e.ext);
        match (self.mapping, b.kind, self.extend) {
            (_, BranchKind::Forward, _) => self.update(b, out, true),
            (_, BranchKind::Backward, Some(Extend::Loops(max))) if ext < max && !self.entries.is_empty() => {
                self.update(b, out, true);
                if let Some(top) = self.entries.last_mut() {
                    top.ext += 1;
                }
            }
            (_, BranchKind::Backward | BranchKind::Indirect, _) => {
                self.update(b, out, false);
                self.pop(out);
                self.push(b.target, self.carried(ext));
            }
            (Mapping::BallLarus, BranchKind::Call, Some(Extend::Calls(max)))
                if ext < max && !self.entries.is_empty() =>
            {
                self.update(b, out, true);
                if let Some(top) = self.entries.last_mut() {
                    top.ext += 1;
                }
            }
            (Mapping::BallLarus, BranchKind::Call, _) => {
                self.update_count(b);
                self.push(b.target, 0);
            }
            (Mapping::BallLarus, BranchKind::Return, Some(Extend::Calls(_))) if ext > 0 => {
                self.update(b, out, true);
                if let Some(top) = self.entries.last_mut() {
                    top.ext -= 1;
                }
            }
            (Mapping::BallLarus, BranchKind::Return, _) => {
                self.update_count(b);
                self.pop(out);
                if self.entries.is_empty() && self.dropped > 0 {
                    // Back into a frame whose entry was dropped.
                    self.dropped -= 1;
                    self.push(b.target, 0);
                }
            }
            (Mapping::WholeProgram, BranchKind::Call | BranchKind::Return, _) => {
                self.update_count(b);
                self.pop(out);
                self.push(b.target, 0);
            }
        }
        1 + 2 * (self.stats.paths - paths) + (self.stats.pushes - pushes)
    }

    /// The extension counter of an entry that replaces one with `ext`: kept when it counts open
    /// calls.
    fn carried(&self, ext: u32) -> u32 {
        match self.extend {
            Some(Extend::Calls(_)) => ext,
            _ => 0,
        }
    }

    /// The top path gets the branch; with `split`, a path that is then as long as a descriptor
    /// allows ends there (not when the branch pops it anyway).
    fn update(&mut self, b: &Branch, out: &mut impl FnMut(&Descriptor, Events), split: bool) {
        let max_length = self.max_length;
        let Some(top) = self.entries.last_mut() else {
            self.stats.orphans += 1;
            return;
        };
        top.path = top.path.then(b.outcome, b.width);
        top.events.add(b.events);
        if split && (top.path.length >= max_length || top.path.full_for(32)) {
            let ext = top.ext;
            self.stats.splits += 1;
            self.pop(out);
            self.push(b.target, self.carried(ext));
        }
    }

    fn update_count(&mut self, b: &Branch) {
        match self.entries.last_mut() {
            Some(top) => top.events.add(b.events),
            None => self.stats.orphans += 1,
        }
    }

    fn pop(&mut self, out: &mut impl FnMut(&Descriptor, Events)) {
        if let Some(e) = self.entries.pop() {
            self.stats.paths += 1;
            out(&e.path, e.events);
        }
    }

    fn push(&mut self, start: u32, ext: u32) {
        if self.capacity.is_some_and(|c| self.entries.len() >= c) {
            self.entries.remove(0);
            self.dropped += 1;
            self.stats.overflows += 1;
        }
        self.entries.push(Entry::at(start, ext));
        self.stats.pushes += 1;
        self.stats.deepest = self.stats.deepest.max(self.entries.len());
    }

    /// Pops every entry (the run has ended), innermost first.
    pub fn drain(&mut self, out: &mut impl FnMut(&Descriptor, Events)) {
        while !self.entries.is_empty() {
            self.pop(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn br(kind: BranchKind, target: u32, outcome: u32) -> Branch {
        Branch { kind, target, outcome, width: 1, events: Events { instructions: 1, memory: 0 } }
    }

    fn run(stack: &mut PathStack, branches: &[Branch]) -> Vec<(Descriptor, u64)> {
        let mut out = Vec::new();
        for b in branches {
            stack.branch(b, &mut |d, e| out.push((*d, e.instructions)));
        }
        out
    }

    use BranchKind::*;

    /// A call, a loop of two iterations in the callee (a forward branch each), the return, and the
    /// caller's own end: Table 5.1's operations.
    #[test]
    fn ball_larus_mapping() {
        let mut s = PathStack::new(Mapping::BallLarus, None, None, 32);
        let out = run(
            &mut s,
            &[
                br(Call, 100, 1),     // push main's path at 100
                br(Forward, 0, 0),    // main: 0
                br(Call, 200, 1),     // f's path at 200; main gets the count
                br(Forward, 0, 1),    // f: 1
                br(Backward, 210, 1), // f: 1 1 → pop; push at 210
                br(Forward, 0, 0),    // f@210: 0
                br(Return, 0, 1),     // f@210 popped
                br(Return, 0, 1),     // main popped
            ],
        );
        let f1 = Descriptor::at(200).then(1, 1).then(1, 1);
        let f2 = Descriptor::at(210).then(0, 1);
        let main = Descriptor::at(100).then(0, 1);
        assert_eq!(out, vec![(f1, 2), (f2, 2), (main, 3)]);
        assert_eq!(s.depth(), 0);
        assert_eq!(s.stats.paths, 3);
    }

    /// Table 5.2: calls and returns end paths, and the stack stays one deep.
    #[test]
    fn whole_program_mapping() {
        let mut s = PathStack::new(Mapping::WholeProgram, None, None, 32);
        s.push(100, 0);
        let out = run(&mut s, &[br(Forward, 0, 1), br(Call, 200, 1), br(Forward, 0, 0), br(Return, 104, 1)]);
        assert_eq!(
            out.iter().map(|(d, _)| *d).collect::<Vec<_>>(),
            vec![Descriptor::at(100).then(1, 1), Descriptor::at(200).then(0, 1)]
        );
        assert_eq!(s.depth(), 1);
        assert_eq!(s.stats.deepest, 1);
    }

    /// Paths split at the most branches, and go on at the branch's target.
    #[test]
    fn split_at_max_length() {
        let mut s = PathStack::new(Mapping::BallLarus, None, None, 3);
        s.push(0, 0);
        let out = run(&mut s, &(1..=7).map(|i| br(Forward, 10 * i, i % 2)).collect::<Vec<_>>());
        let want = vec![
            Descriptor::at(0).then(1, 1).then(0, 1).then(1, 1),
            Descriptor::at(30).then(0, 1).then(1, 1).then(0, 1),
        ];
        assert_eq!(out.iter().map(|(d, _)| *d).collect::<Vec<_>>(), want);
        assert_eq!(s.stats.splits, 2);
        s.drain(&mut |d, _| assert_eq!(*d, Descriptor::at(60).then(1, 1)));
    }

    /// Extended loop paths: the first backward branch is crossed, the second ends the path.
    #[test]
    fn extension_across_loops() {
        let mut s = PathStack::new(Mapping::BallLarus, Some(Extend::Loops(1)), None, 32);
        s.push(50, 0);
        let out = run(&mut s, &[br(Forward, 0, 1), br(Backward, 50, 1), br(Forward, 0, 0), br(Backward, 50, 1)]);
        assert_eq!(out, vec![(Descriptor::at(50).then(1, 1).then(1, 1).then(0, 1).then(1, 1), 4)]);
    }

    /// Extended interprocedural paths: the call and the return are branches of the caller's path,
    /// and a backward branch inside the callee keeps the entry's count of open calls.
    #[test]
    fn extension_across_calls() {
        let mut s = PathStack::new(Mapping::BallLarus, Some(Extend::Calls(1)), None, 32);
        s.push(0, 0);
        let out = run(
            &mut s,
            &[
                br(Call, 100, 1),     // crossed: ext 1
                br(Backward, 110, 1), // in the callee: pop, push at 110 with ext 1
                br(Call, 300, 1),     // ext at its most: a new entry
                br(Return, 0, 1),     // pops the callee's callee
                br(Return, 8, 1),     // crossed back: ext 0
                br(Return, 0, 1),     // pops
            ],
        );
        assert_eq!(
            out.iter().map(|(x, _)| *x).collect::<Vec<_>>(),
            vec![Descriptor::at(0).then(1, 1).then(1, 1), Descriptor::at(300), Descriptor::at(110).then(1, 1)]
        );
        assert_eq!(s.depth(), 0);
    }

    /// A full stack drops its oldest entry; the return into that frame starts a new path there.
    #[test]
    fn overflow_drops_the_oldest_entry() {
        let mut s = PathStack::new(Mapping::BallLarus, None, Some(2), 32);
        let out = run(
            &mut s,
            &[
                br(Call, 1, 1),
                br(Call, 2, 1),
                br(Call, 3, 1),
                br(Return, 20, 1),
                br(Return, 10, 1),
                br(Forward, 0, 1),
                br(Return, 0, 1),
            ],
        );
        assert_eq!(s.stats.overflows, 1);
        assert_eq!(
            out.iter().map(|(x, _)| *x).collect::<Vec<_>>(),
            vec![Descriptor::at(3), Descriptor::at(2), Descriptor::at(10).then(1, 1)]
        );
    }
}
