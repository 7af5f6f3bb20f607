//! The heads an interesting segment names at depths past 0 [PPP07 §3.4.5 with §3.4.1], for compact
//! slots of segments of more than one call.
//!
//! A segment rooted at a call takes, of the activation the call entered, its first path and, for
//! each call on that path its walk followed, what that call entered, recursively ([`Taken`]). A
//! head of depth `d` ([`super::HeadLevel`]) names the first path and, for every call a walk of `d`
//! calls may reach, that call's head of the depth it reads: it holds the calls the segment followed,
//! and also those a walk could have reached had the segment's callees used fewer calls. So one
//! segment names a set of heads: those whose digits agree with it on the calls it followed, with
//! any digit at the calls it did not ([`HeadNames::digits`], capped). A slot holds a supergraph
//! path's whole ID, so a head named here that no interesting segment takes only costs a slot.

use super::{CallDigit, Head, HeadLevel, HeadSpace};
use crate::ips::Step;

/// What a segment took of the activation a call entered, as far as its walk went.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Taken {
    /// No instrumented function ran a path for the call: it returned at once.
    None,
    /// The activation's first path `path` of `function`, and what each call on it that the walk
    /// followed entered, in order (the calls past those are not known).
    Entered { function: u32, path: u64, calls: Vec<Taken> },
}

impl Taken {
    /// What the segment `steps` (of [`crate::ips::walk_tree`]'s form: its root's part, a call, …)
    /// took at its first call; `None` when `steps` are not of that form.
    pub fn of_segment(steps: &[Step]) -> Option<Taken> {
        let [Step::Sub { .. }, Step::Call, rest @ ..] = steps else { return None };
        let mut at = 0;
        taken(rest, &mut at)
    }
}

/// What the call just before `steps[*at]` entered, `*at` moved past its walk (to the `Return` that
/// follows, if any).
fn taken(steps: &[Step], at: &mut usize) -> Option<Taken> {
    let (label, part) = match steps.get(*at)? {
        Step::Return => return Some(Taken::None),
        Step::Sub { label, part } => (*label, *part),
        Step::Call => return None,
    };
    if part != 0 {
        return None;
    }
    *at += 1;
    let mut calls = Vec::new();
    while let Some(Step::Call) = steps.get(*at) {
        *at += 1;
        calls.push(taken(steps, at)?);
        match steps.get(*at) {
            // It returned: the caller's next part follows.
            Some(Step::Return) => match steps.get(*at + 1) {
                Some(&Step::Sub { label: l, part: p }) if l == label && p as usize == calls.len() => *at += 2,
                _ => return None,
            },
            // The walk ended inside it.
            _ => break,
        }
    }
    Some(Taken::Entered { function: (label >> 32) as u32, path: label & u64::from(u32::MAX), calls })
}

/// What naming heads of depths past 0 needs of a module: each depth's space, each function's
/// [`HeadLevel`]s, and the calls on its paths from the entry.
pub trait HeadNames {
    /// The space of the heads of depth `depth`.
    fn space(&self, depth: usize) -> Option<&HeadSpace>;
    /// The heads of depth `depth ≥ 1` of `function`.
    fn level(&self, function: u32, depth: usize) -> Option<&HeadLevel>;
    /// The calls (their indices among the function's, in operator order) on path `path` of
    /// `function`, which starts at its entry.
    fn calls_on(&self, function: u32, path: u64) -> Option<Vec<usize>>;

    /// The digits of a call read as `call` in the space of depth `depth` that name what `taken`
    /// says (`None`: anything, named by every digit while the radix is at most `cap`), at most
    /// `cap` of them; `None` when there would be more, or `taken` names no head.
    fn digits(&self, call: CallDigit, depth: usize, taken: Option<&Taken>, cap: usize) -> Option<Vec<u64>> {
        let space = self.space(depth)?;
        let mut out = match taken {
            None => (call.radix <= cap as u64).then(|| (0..call.radix).collect())?,
            Some(Taken::None) => space.digits_of(call, Head::None),
            Some(Taken::Entered { function, path, calls }) => {
                let mut out = Vec::new();
                for head in self.heads(*function, *path, calls, depth, cap)? {
                    out.extend(space.digits_of(call, Head::Path { function: *function, path: head }));
                    if out.len() > cap {
                        return None;
                    }
                }
                out
            }
        };
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// The heads of depth `depth` of `function` (as [`Head::Path`]'s `path`: the entry base plus
    /// the head's place among the function's) whose first path is `path` and whose calls entered
    /// what `calls` says of the first of them, at most `cap`; `None` when there would be more.
    fn heads(&self, function: u32, path: u64, calls: &[Taken], depth: usize, cap: usize) -> Option<Vec<u64>> {
        let heads = self.space(depth)?.of(function)?;
        let first = path.checked_sub(heads.entry_base).filter(|&u| u < heads.entry_paths)?;
        if depth == 0 {
            return Some(vec![path]);
        }
        let level = self.level(function, depth)?;
        let on = self.calls_on(function, path)?;
        // Each call's digits, in order: one, 0, for a call that reads no head at this depth.
        let mut choices: Vec<(u64, Vec<u64>)> = Vec::with_capacity(on.len());
        for (i, &c) in on.iter().enumerate() {
            let call = *level.calls.get(c)?;
            if call.word != 0 {
                return None;
            }
            match level.depths.get(c).copied().flatten() {
                Some(d) if call.adds_digit() => {
                    choices.push((call.radix, self.digits(call, usize::from(d), calls.get(i), cap)?));
                }
                _ => choices.push((1, vec![0])),
            }
        }
        let mut keys = vec![0u64];
        for (radix, ds) in choices {
            if keys.len().checked_mul(ds.len())? > cap {
                return None;
            }
            keys = (keys.iter())
                .flat_map(|&k| ds.iter().map(move |&d| k.checked_mul(radix)?.checked_add(d)))
                .collect::<Option<_>>()?;
        }
        keys.into_iter()
            .filter(|&key| key < heads.keys)
            .map(|key| heads.entry_base.checked_add(key.checked_mul(heads.entry_paths)?.checked_add(first)?))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ips::{walk_tree, Callee, HeadTree};

    fn label(function: u32, path: u64) -> u64 {
        u64::from(function) << 32 | path
    }

    fn entered(function: u32, path: u64, calls: Vec<Taken>) -> Taken {
        Taken::Entered { function, path, calls }
    }

    /// The root's first call enters `a` (path 4), whose first call enters `b` (path 2, no calls,
    /// returning) and whose second calls a host function; the root's second call a host function.
    /// Each walk of [`walk_tree`] is read back into what it took at its first call, as deep as its
    /// budget let it go.
    #[test]
    fn segments_are_read_back_into_what_they_took() {
        let b = HeadTree { label: label(2, 2), exit: Some(true), calls: Vec::new() };
        let a =
            HeadTree { label: label(1, 4), exit: Some(true), calls: vec![Callee::Entered(Box::new(b)), Callee::None] };
        let calls = [Callee::Entered(Box::new(a)), Callee::None];
        let root = label(0, 7);
        let taken = |k: usize| -> Vec<Option<Taken>> {
            walk_tree(root, &calls, k).into_iter().map(|s| Taken::of_segment(&s.expect("known heads"))).collect()
        };
        let whole = entered(1, 4, vec![entered(2, 2, Vec::new()), Taken::None]);
        assert_eq!(taken(1), vec![Some(entered(1, 4, Vec::new())), Some(Taken::None)]);
        assert_eq!(taken(2), vec![Some(entered(1, 4, vec![entered(2, 2, Vec::new())])), Some(Taken::None)]);
        assert_eq!(taken(3), vec![Some(whole.clone()), Some(Taken::None)]);
        assert_eq!(taken(4), vec![Some(whole), Some(Taken::None)]);
        // Steps not of a walk's form.
        let sub = |l, part| Step::Sub { label: l, part };
        assert_eq!(Taken::of_segment(&[sub(root, 0)]), None);
        assert_eq!(Taken::of_segment(&[sub(root, 0), Step::Call, sub(label(1, 4), 1)]), None);
        let wrong_return = [sub(root, 0), Step::Call, sub(label(1, 4), 0), Step::Call, Step::Return, sub(root, 1)];
        assert_eq!(Taken::of_segment(&wrong_return), None);
    }
}
