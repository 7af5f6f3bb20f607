//! Interprocedural path segments (IPSs) [PPP07 §3.4.1–3.4.2], counted exactly from a stream of
//! path ends and call markers.
//!
//! A *subpath* is an acyclic intraprocedural path that ends at a call as well as at a loop header
//! or the function's exit. The whole program path (WPP) is the sequence of subpaths a run takes,
//! with a `(` at every call and a `)` at every return. A *depth-k IPS* is a stretch of the WPP that
//! starts with a subpath ending at a call and follows the calls, at most `k` of them, into the
//! callees and back: it stops after a subpath that ends at a loop header, at the exit of the
//! function it started in, or at a call beyond the `k`-th (that subpath is the IPS's last).
//! [PPP07 §3.4.2]'s example, at `k = 1`, has the IPSs `⟨f1,p1⟩(⟨f2,p2⟩)`, `⟨f2,p2⟩(⟨f3,p3⟩)`,
//! `⟨f3,p3⟩(⟨f4,p4⟩)` (`p4` ends at a loop header) and `⟨f3,p7⟩(⟨f5,p8⟩)⟨f3,p9⟩`.
//!
//! A subpath is a part of a Ball–Larus path (loops cut at their headers, as everywhere in pathprof):
//! the `j`-th part of a path with `n` calls runs from its `j`-th call (its start, for `j = 0`) to
//! the next, or to the path's end for `j = n` ([`Step::Sub`]). The profiled program streams its
//! paths as `kbl` does — an activation's entry, each path's `function << 32 | ID` when it ends — and
//! a marker before every call. A path is streamed when it *ends*, after the calls it makes have
//! returned, so the stream holds a callee's paths before the caller's path that called it:
//! [`SegmentFolder`] keeps, for every call since the caller's last path end, the *heads* of the
//! callee — what an IPS entering it at each remaining depth takes of it, which its first path
//! decides — and counts the IPSs of a path when the path ends, from the path's calls and the heads
//! of its callees. Its memory is one frame per open activation, each with the heads of the calls
//! of the path it is on.
//!
//! An IPS is counted once all its subpaths have run: those a trap or an exit cut short are not.

use std::collections::HashMap;
use std::sync::Arc;

/// Deepest IPSs (`k`).
pub const MAX_DEPTH: usize = 4;

/// One step of an IPS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// The part `part` of the Ball–Larus path `label` (`function << 32 | path ID`): from its
    /// `part`-th call (its start, for 0) to its next call or its end.
    Sub { label: u64, part: u32 },
    /// A call, `(`: the callee's subpaths follow (none when the callee is a host function or a
    /// function without probes).
    Call,
    /// The callee returned, `)`: the caller's next part follows.
    Return,
}

/// The number of calls on a Ball–Larus path, which the stream does not carry.
pub trait PathCalls {
    /// The calls on the path `label` (`function << 32 | path ID`); `None` when the function has no
    /// such path.
    fn calls(&mut self, label: u64) -> Option<u32>;
}

impl<F: FnMut(u64) -> Option<u32>> PathCalls for F {
    fn calls(&mut self, label: u64) -> Option<u32> {
        self(label)
    }
}

/// What an IPS entering an activation takes of it, given how many calls it may still follow.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Head {
    steps: Vec<Step>,
    /// The activation returned at the end of these steps (the IPS goes on in the caller).
    returned: bool,
    /// Calls the steps followed.
    used: usize,
}

/// The heads of an activation, by the calls an IPS entering it may still follow (`0..k`).
type Heads = Arc<[Head]>;

/// An open activation.
#[derive(Debug, Default)]
struct Frame {
    /// Per call since the activation's last path end, in order: the callee's heads, once its first
    /// path has ended; `None` for a callee that streamed no path.
    calls: Vec<Option<Heads>>,
    /// The last item was a call marker, whose callee's entry may come next.
    awaiting: bool,
    /// Its first path has ended (and its heads are with its caller).
    started: bool,
    /// The call of the caller's frame that entered it; `None` when no marker precedes its entry
    /// (the program's entry, a tail call, a host calling back in).
    slot: Option<usize>,
}

/// Folds a stream of entries, call markers and path ends into exact counts of depth-`k` IPSs and of
/// Ball–Larus paths.
#[derive(Debug)]
pub struct SegmentFolder {
    k: usize,
    stack: Vec<Frame>,
    segments: HashMap<Vec<Step>, u64>,
    paths: HashMap<u64, u64>,
    /// Path ends whose calls differ from those the stream marked (an exception unwinding a call),
    /// or whose path is unknown: their IPSs are not counted.
    mismatched: u64,
    /// Items that no open activation could take (a path end with none open).
    stray: u64,
    /// A count reached 2^64 - 1 and stayed there.
    saturated: bool,
}

/// What a [`SegmentFolder`] counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Segments {
    pub k: usize,
    /// Every IPS that ran, with its count.
    pub segments: HashMap<Vec<Step>, u64>,
    /// Ball–Larus path counts by label (`function << 32 | path ID`).
    pub paths: HashMap<u64, u64>,
    /// Path ends whose IPSs were not counted (see [`SegmentFolder`]).
    pub mismatched: u64,
    pub stray: u64,
    /// Activations still open when the stream ended: IPSs in them did not finish.
    pub open: usize,
    pub saturated: bool,
}

impl SegmentFolder {
    /// A folder of IPSs of depth `k` (1 to [`MAX_DEPTH`]).
    pub fn new(k: usize) -> SegmentFolder {
        assert!((1..=MAX_DEPTH).contains(&k), "IPS depth {k} outside 1..={MAX_DEPTH}");
        SegmentFolder {
            k,
            stack: Vec::new(),
            segments: HashMap::new(),
            paths: HashMap::new(),
            mismatched: 0,
            stray: 0,
            saturated: false,
        }
    }

    /// An activation begins.
    pub fn enter(&mut self) {
        let slot = self.stack.last_mut().filter(|f| f.awaiting).map(|f| {
            f.awaiting = false;
            f.calls.len() - 1
        });
        self.stack.push(Frame { slot, ..Frame::default() });
    }

    /// The innermost activation is about to call a function.
    pub fn call(&mut self) {
        match self.stack.last_mut() {
            Some(f) => {
                f.calls.push(None);
                f.awaiting = true;
            }
            None => self.stray += 1,
        }
    }

    /// A path of the innermost activation ends, `n` times in a row (`n ≥ 1`); with `exit`, at the
    /// function's exit, which ends the activation (a run of exits ends `n` nested activations).
    pub fn path(&mut self, label: u64, exit: bool, n: u64, calls: &mut impl PathCalls) {
        self.add_path(label, 1);
        self.path_end(label, exit, calls);
        if n == 1 {
            return;
        }
        if exit {
            for _ in 1..n {
                self.add_path(label, 1);
                self.path_end(label, true, calls);
            }
        } else {
            // A repeated path was streamed with no call marker in between: after the first, each has
            // no calls, and an activation that has started has no IPS to add.
            self.add_path(label, n - 1);
            if calls.calls(label) != Some(0) {
                self.mismatched += n - 1;
            }
        }
    }

    fn add_path(&mut self, label: u64, n: u64) {
        let c = self.paths.entry(label).or_default();
        *c = c.checked_add(n).unwrap_or_else(|| {
            self.saturated = true;
            u64::MAX
        });
    }

    fn path_end(&mut self, label: u64, exit: bool, calls: &mut impl PathCalls) {
        let Some(frame) = self.stack.last_mut() else {
            self.stray += 1;
            return;
        };
        frame.awaiting = false;
        let marked = std::mem::take(&mut frame.calls);
        let path = match calls.calls(label) {
            Some(n) if n as usize == marked.len() => Some(Path { label, calls: &marked, exit }),
            _ => None,
        };
        let Some(path) = path else {
            self.mismatched += 1;
            if exit {
                self.stack.pop();
            }
            return;
        };
        let (k, depth) = (self.k, self.stack.len());
        let frame = &mut self.stack[depth - 1];
        // The first path decides what an IPS entering the activation takes of it.
        if !frame.started {
            frame.started = true;
            if let Some(slot) = frame.slot {
                let heads: Heads = (0..k).map(|left| path.walk(0, left)).collect();
                if depth >= 2 {
                    self.stack[depth - 2].calls[slot] = Some(heads);
                }
            }
        }
        for part in 0..marked.len() {
            let ips = path.walk(part, k).steps;
            let c = self.segments.entry(ips).or_default();
            *c = c.checked_add(1).unwrap_or_else(|| {
                self.saturated = true;
                u64::MAX
            });
        }
        if exit {
            self.stack.pop();
        }
    }

    /// What was counted; activations still open are left unfinished.
    pub fn finish(self) -> Segments {
        Segments {
            k: self.k,
            segments: self.segments,
            paths: self.paths,
            mismatched: self.mismatched,
            stray: self.stray,
            open: self.stack.len(),
            saturated: self.saturated,
        }
    }
}

/// A path that ended, with the heads of its calls' callees.
struct Path<'a> {
    label: u64,
    calls: &'a [Option<Heads>],
    exit: bool,
}

impl Path<'_> {
    /// The steps from part `part` on, following at most `left` calls.
    fn walk(&self, part: usize, left: usize) -> Head {
        let (budget, mut left, mut j) = (left, left, part);
        let sub = |j: usize| Step::Sub { label: self.label, part: j as u32 };
        let mut steps = vec![sub(j)];
        let returned = loop {
            if j == self.calls.len() {
                break self.exit;
            }
            if left == 0 {
                break false;
            }
            left -= 1;
            steps.push(Step::Call);
            if let Some(heads) = &self.calls[j] {
                let head = &heads[left];
                steps.extend_from_slice(&head.steps);
                left -= head.used;
                if !head.returned {
                    break false;
                }
            }
            steps.push(Step::Return);
            j += 1;
            steps.push(sub(j));
        };
        Head { steps, returned, used: budget - left }
    }
}
