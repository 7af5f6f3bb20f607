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
//! of the path it is on. Heads and IPSs are interned as they are found (a walk is its first part
//! and the heads of the calls it follows), so that a path end allocates nothing once its IPSs have
//! been seen; they are spelled out as steps at the end.
//!
//! An IPS is counted once all its subpaths have run: those a trap or an exit cut short are not.

use crate::hash::FxBuildHasher;
use std::collections::HashMap;

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

/// The number of calls on a Ball–Larus path, which the stream does not carry ([`SegmentFolder`]
/// asks once per path).
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

/// What a depth-1 IPS takes of a callee: the first path of the activation its call entered, with
/// whether that path has no calls and ends at the function's exit (the IPS then goes on in the
/// caller); `None` when no instrumented function ran a path for the call.
pub type FirstPath = Option<(u64, bool)>;

/// The depth-1 IPSs rooted on the Ball–Larus path `label`, whose calls entered activations whose
/// first paths were `heads` (one per call, in order): one per call, its part up to the call, the
/// callee's first part, and, when the callee returned with that path, the path's next part — the
/// segments [`SegmentFolder`] counts at `k = 1`.
pub fn depth_one(label: u64, heads: &[FirstPath]) -> Vec<Vec<Step>> {
    heads
        .iter()
        .enumerate()
        .map(|(j, head)| {
            let part = j as u32;
            let mut steps = vec![Step::Sub { label, part }, Step::Call];
            let returned = match *head {
                None => true,
                Some((first, returned)) => {
                    steps.push(Step::Sub { label: first, part: 0 });
                    returned
                }
            };
            if returned {
                steps.extend([Step::Return, Step::Sub { label, part: part + 1 }]);
            }
            steps
        })
        .collect()
}

/// What a walk finds at a call, read back from the heads a caller counted with its path (mode
/// `ippp:K`, [`crate::supergraph::HeadLevel`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    /// No instrumented function ran a path for the call: the call returns at once.
    None,
    /// What the callee ran is not known (the call adds no digit at the depth read).
    Unknown,
    /// The activation the call entered, by its first path.
    Entered(Box<HeadTree>),
}

/// The first path of an activation, `label`, with whether it ended at the function's exit (`None`:
/// it cannot be told) and what its calls entered, as deep as its head tells: a head of depth `d`
/// knows its calls' heads of depth `d − 1`, and one of depth 0 none ([`Callee::Unknown`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeadTree {
    pub label: u64,
    pub exit: Option<bool>,
    pub calls: Vec<Callee>,
}

/// The depth-`k` IPSs rooted on the Ball–Larus path `label`, whose calls entered `calls` (each as
/// deep as `k − 1` calls): one per call, in order, as [`SegmentFolder`] counts them; `None` for a
/// segment whose walk needs what a head does not tell.
pub fn walk_tree(label: u64, calls: &[Callee], k: usize) -> Vec<Option<Vec<Step>>> {
    (0..calls.len())
        .map(|part| {
            let mut steps = Vec::new();
            tree_walk(label, Some(false), calls, part, k, &mut steps).map(|_| steps)
        })
        .collect()
}

/// Walks from part `part` of the path `label` (ending at the exit as `exit` says, its calls having
/// entered `calls`), following at most `left` calls, as [`SegmentFolder`]'s walk does: its steps
/// pushed on `out`, and whether the activation returned at the walk's end and how many calls the
/// walk followed; `None` when a head it needs is not known.
fn tree_walk(
    label: u64,
    exit: Option<bool>,
    calls: &[Callee],
    part: usize,
    mut left: usize,
    out: &mut Vec<Step>,
) -> Option<(bool, usize)> {
    let budget = left;
    out.push(Step::Sub { label, part: part as u32 });
    for (j, callee) in calls.iter().enumerate().skip(part) {
        if left == 0 {
            return Some((false, budget));
        }
        left -= 1;
        out.push(Step::Call);
        match callee {
            Callee::Unknown => return None,
            Callee::None => {}
            Callee::Entered(tree) => {
                let (returned, used) = tree_walk(tree.label, tree.exit, &tree.calls, 0, left, out)?;
                left -= used;
                if !returned {
                    return Some((false, budget - left));
                }
            }
        }
        out.extend([Step::Return, Step::Sub { label, part: j as u32 + 1 }]);
    }
    Some((exit?, budget - left))
}

/// The head of a callee that streamed no path: the call returns at once.
const EMPTY: u32 = u32::MAX;

/// A walk from a part of a path: the part it starts at, and the (interned) heads of the calls it
/// follows, in order. It determines the walk's steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Walk {
    label: u64,
    part: u32,
    heads: [u32; MAX_DEPTH],
    followed: u8,
}

/// An interned walk, with what its caller needs of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    id: u32,
    /// The activation returned at the end of the walk (an IPS goes on in the caller).
    returned: bool,
    /// Calls the walk followed, its callees' included.
    used: u8,
}

/// The heads of an activation, by the calls an IPS entering it may still follow (`0..k`).
type Heads = [Head; MAX_DEPTH];

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
    /// The open activations: the first `depth` frames (those beyond keep their buffers for reuse).
    stack: Vec<Frame>,
    depth: usize,
    /// Every walk found, by its interned index, and the index of each.
    walks: Vec<(Walk, bool)>,
    index: HashMap<Walk, u32, FxBuildHasher>,
    /// Executions of the walks that are IPSs, by walk (0 for a walk that is only a head).
    segments: Vec<u64>,
    /// What the folder knows of each path that ended, by label.
    paths: HashMap<u64, PathFacts, FxBuildHasher>,
    /// The calls of the path that ended last, taken from its frame.
    marked: Vec<Option<Heads>>,
    /// Path ends whose calls differ from those the stream marked (an exception unwinding a call),
    /// or whose path is unknown: their IPSs are not counted.
    mismatched: u64,
    /// Items that no open activation could take (a path end with none open).
    stray: u64,
    /// A count reached 2^64 - 1 and stayed there.
    saturated: bool,
}

/// What the folder knows of a path that ended.
#[derive(Clone, Copy, Debug, Default)]
struct PathFacts {
    count: u64,
    /// Its calls (`None`: no such path).
    calls: Option<u32>,
    /// For a path without calls: its only walk, interned once.
    walk: Option<u32>,
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
            depth: 0,
            walks: Vec::new(),
            index: HashMap::default(),
            segments: Vec::new(),
            paths: HashMap::default(),
            marked: Vec::new(),
            mismatched: 0,
            stray: 0,
            saturated: false,
        }
    }

    /// The innermost open activation.
    fn top(&mut self) -> Option<&mut Frame> {
        self.depth.checked_sub(1).map(|i| &mut self.stack[i])
    }

    /// An activation begins.
    pub fn enter(&mut self) {
        let slot = self.top().filter(|f| f.awaiting).map(|f| {
            f.awaiting = false;
            f.calls.len() - 1
        });
        if self.depth == self.stack.len() {
            self.stack.push(Frame::default());
        }
        let frame = &mut self.stack[self.depth];
        frame.calls.clear();
        (frame.awaiting, frame.started, frame.slot) = (false, false, slot);
        self.depth += 1;
    }

    /// The innermost activation is about to call a function.
    pub fn call(&mut self) {
        match self.top() {
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
        let facts = self.add_path(label, 1, calls);
        self.path_end(label, exit, facts);
        if n == 1 {
            return;
        }
        if exit {
            for _ in 1..n {
                let facts = self.add_path(label, 1, calls);
                self.path_end(label, true, facts);
            }
        } else {
            // A repeated path was streamed with no call marker in between: after the first, each has
            // no calls, and an activation that has started has no IPS to add.
            if self.add_path(label, n - 1, calls).calls != Some(0) {
                self.mismatched += n - 1;
            }
        }
    }

    /// Counts `n` more ends of the path `label`, and what is known of it.
    fn add_path(&mut self, label: u64, n: u64, calls: &mut impl PathCalls) -> PathFacts {
        let facts =
            self.paths.entry(label).or_insert_with(|| PathFacts { calls: calls.calls(label), ..PathFacts::default() });
        facts.count = facts.count.checked_add(n).unwrap_or_else(|| {
            self.saturated = true;
            u64::MAX
        });
        *facts
    }

    fn path_end(&mut self, label: u64, exit: bool, facts: PathFacts) {
        let Some(top) = self.depth.checked_sub(1) else {
            self.stray += 1;
            return;
        };
        let frame = &mut self.stack[top];
        frame.awaiting = false;
        let started = std::mem::replace(&mut frame.started, true);
        let slot = frame.slot;
        std::mem::swap(&mut self.marked, &mut frame.calls);
        frame.calls.clear();
        let n = self.marked.len();
        if facts.calls.is_none_or(|c| c as usize != n) {
            self.mismatched += 1;
        } else {
            // The first path decides what an IPS entering the activation takes of it.
            if let (false, Some(slot), Some(caller)) = (started, slot, self.depth.checked_sub(2)) {
                let heads = match (n, facts.walk) {
                    // A path without calls is one walk, whatever the depth left.
                    (0, Some(id)) => [Head { id, returned: exit, used: 0 }; MAX_DEPTH],
                    _ => {
                        let mut heads = [Head { id: EMPTY, returned: true, used: 0 }; MAX_DEPTH];
                        for (left, head) in heads.iter_mut().enumerate().take(self.k) {
                            *head = self.walk(label, exit, 0, left);
                        }
                        if n == 0 {
                            if let Some(f) = self.paths.get_mut(&label) {
                                f.walk = Some(heads[0].id);
                            }
                        }
                        heads
                    }
                };
                if let Some(c) = self.stack[caller].calls.get_mut(slot) {
                    *c = Some(heads);
                }
            }
            for part in 0..n {
                let id = self.walk(label, exit, part, self.k).id as usize;
                let c = &mut self.segments[id];
                *c = c.checked_add(1).unwrap_or_else(|| {
                    self.saturated = true;
                    u64::MAX
                });
            }
        }
        if exit {
            self.depth -= 1;
        }
    }

    /// The walk from part `part` of the path `label` that just ended (its calls' heads in
    /// `self.marked`; at the exit with `exit`), following at most `left` calls, interned.
    fn walk(&mut self, label: u64, exit: bool, part: usize, left: usize) -> Head {
        let (budget, mut left, mut j) = (left, left, part);
        let mut walk = Walk { label, part: part as u32, heads: [EMPTY; MAX_DEPTH], followed: 0 };
        let returned = loop {
            if j == self.marked.len() {
                break exit;
            }
            if left == 0 {
                break false;
            }
            left -= 1;
            let head = self.marked[j].map(|heads| heads[left]);
            walk.heads[walk.followed as usize] = head.map_or(EMPTY, |h| h.id);
            walk.followed += 1;
            if let Some(head) = head {
                left -= usize::from(head.used);
                if !head.returned {
                    break false;
                }
            }
            j += 1;
        };
        let next = self.walks.len() as u32;
        let id = *self.index.entry(walk).or_insert(next);
        if id == next {
            self.walks.push((walk, returned));
            self.segments.push(0);
        }
        Head { id, returned, used: (budget - left) as u8 }
    }

    /// The steps of the interned walk `id`.
    fn steps(&self, id: u32, out: &mut Vec<Step>) {
        let (walk, _) = self.walks[id as usize];
        out.push(Step::Sub { label: walk.label, part: walk.part });
        for (i, &head) in walk.heads[..walk.followed as usize].iter().enumerate() {
            out.push(Step::Call);
            let returned = match head {
                EMPTY => true,
                head => {
                    self.steps(head, out);
                    self.walks[head as usize].1
                }
            };
            if !returned {
                return;
            }
            out.push(Step::Return);
            out.push(Step::Sub { label: walk.label, part: walk.part + i as u32 + 1 });
        }
    }

    /// What was counted; activations still open are left unfinished.
    pub fn finish(self) -> Segments {
        let segments = (self.segments.iter().enumerate())
            .filter(|&(_, &n)| n > 0)
            .map(|(id, &n)| {
                let mut steps = Vec::new();
                self.steps(id as u32, &mut steps);
                (steps, n)
            })
            .collect();
        Segments {
            k: self.k,
            segments,
            paths: self.paths.iter().map(|(&label, f)| (label, f.count)).collect(),
            mismatched: self.mismatched,
            stray: self.stray,
            open: self.depth,
            saturated: self.saturated,
        }
    }
}
