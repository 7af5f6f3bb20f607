//! What an `ips` profile records besides its paths (its `mode_facts`): every interprocedural path
//! segment with its steps, and with interesting segments the residual ones [PPP07 §3.4.1, §3.5.2];
//! checked on read to be what a run could have written.

use super::Ips;
use crate::modes::ippp::Ippp;
use crate::modes::{sum, ModeKind};
use anyhow::{bail, Context, Result};
use pathprof_core::ips::MAX_DEPTH;
use pathprof_core::profile::{Extension, InterestingRule, ProfileMode, U64};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// What an `ips` profile records besides its paths (its `mode_facts`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IpsFacts {
    /// The most calls an IPS follows.
    pub k: usize,
    /// Distinct IPSs that ran, and their executions.
    pub segments: U64,
    pub executions: U64,
    /// Items the program streamed, and how long it waited, all told, for the thread folding them to
    /// give a buffer back (the part of the run the fold's speed bounds).
    pub stream_items: U64,
    #[serde(default)]
    pub stream_wait_seconds: f64,
    /// Path ends whose calls the stream did not mark as the path has them (an exception unwinding
    /// a call, or a stream not of this module): their IPSs are not counted.
    pub mismatched: U64,
    /// Activations still open when the run ended (a trap, `proc_exit`, a stop): IPSs in them had
    /// not finished and are not counted.
    pub open_activations: U64,
    /// With `--interesting`: the segments of those `ips` profiles (a test suite's) are the
    /// interesting ones, and the others that ran are residual — in the field, untested
    /// [PPP07 §3.5.2].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual: Option<ResidualSegments>,
    /// Mode `ippp`: the functions whose supergraph IDs would need more words than they may have, `max_high_words` + 1, whose paths
    /// are counted but not the segments they root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_counted: Option<NotCounted>,
    /// Mode `ippp` with interesting segments: the functions whose interesting supergraph paths
    /// count in compact slots [PPP07 §3.4.5 with §3.3].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<SlotFacts>,
    /// Every IPS that ran, the most frequent first.
    pub ips: Vec<IpsCount>,
}

/// The residual segments of a run given interesting ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResidualSegments {
    /// The profiles whose segments are the interesting ones, as given, how they were chosen among
    /// the segments that ran there, and how many were chosen.
    pub interesting_from: Vec<String>,
    pub chosen_by: InterestingRule,
    pub interesting: U64,
    /// The share of those profiles' segment executions the interesting ones carried.
    pub chosen_share: f64,
    /// Segments that ran and were not interesting, and how often they ran.
    pub segments: U64,
    pub executions: U64,
}

/// The segments a run did not count, at calls whose heads their functions do not add to their
/// supergraph paths (whose IDs would need more words than they may have, `max_high_words` + 1 with them): the functions where such
/// calls ran, how many path ends rooted such segments, and, by subpath ending at such a call (a
/// segment's first step), how often it ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotCounted {
    pub functions: Vec<u32>,
    pub path_ends: U64,
    /// The executions of the segments not counted (the sum of the roots' counts).
    #[serde(default)]
    pub executions: U64,
    /// The most frequent first.
    #[serde(default)]
    pub roots: Vec<NotCountedRoot>,
}

impl NotCounted {
    /// The segments not counted at `roots` (how often each subpath ending at a dropped call ran, by
    /// `(function, path, part)`), rooted at `path_ends` path ends; `None` when there are none.
    pub fn from_roots(roots: HashMap<(u32, u64, u32), u64>, path_ends: u64) -> Result<Option<NotCounted>> {
        if roots.is_empty() {
            return Ok(None);
        }
        let executions = roots.values().try_fold(0, |n, &c| sum(n, c, "the segments not counted"))?;
        let mut functions: Vec<u32> = roots.keys().map(|r| r.0).collect();
        functions.sort_unstable();
        functions.dedup();
        let mut roots: Vec<NotCountedRoot> = (roots.into_iter())
            .map(|((function, path, part), count)| NotCountedRoot {
                function,
                path: U64(path),
                part,
                count: U64(count),
            })
            .collect();
        roots.sort_by(|a, b| (b.count, a.function, a.path, a.part).cmp(&(a.count, b.function, b.path, b.part)));
        Ok(Some(NotCounted { functions, path_ends: U64(path_ends), executions: U64(executions), roots }))
    }
}

/// The functions whose interesting supergraph paths count in compact slots, their paths and slots
/// in all (`slots / interesting` is δ [PPP07 Fig. 3.20]), and the path ends counted there (those
/// of the interesting supergraph paths, which count nowhere else).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotFacts {
    pub interesting: U64,
    pub slots: U64,
    pub path_ends: U64,
    /// By function index.
    pub functions: Vec<FunctionSlots>,
}

/// One function's interesting supergraph paths, the slots they take, and the span of their
/// supergraph IDs (the largest less the smallest, plus one: what counting them by those IDs would
/// take).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionSlots {
    pub function: u32,
    pub interesting: U64,
    pub slots: U64,
    pub span: U64,
}

impl SlotFacts {
    /// The facts of `functions` (`(index, interesting paths, slots)`), `path_ends` counted in
    /// their slots; `None` without any.
    pub fn new(mut functions: Vec<FunctionSlots>, path_ends: u64) -> Result<Option<SlotFacts>> {
        if functions.is_empty() {
            return Ok(None);
        }
        functions.sort_unstable_by_key(|f| f.function);
        let interesting = functions.iter().try_fold(0, |n, f| sum(n, f.interesting.0, "the interesting paths"))?;
        let slots = functions.iter().try_fold(0, |n, f| sum(n, f.slots.0, "the slots"))?;
        Ok(Some(SlotFacts { interesting: U64(interesting), slots: U64(slots), path_ends: U64(path_ends), functions }))
    }

    /// Refuses slot facts no run writes: no function, a function listed twice or out of order, one
    /// with fewer slots or a narrower span than interesting paths, totals that are not the sums.
    fn check(&self) -> Result<()> {
        if self.functions.is_empty() || self.functions.windows(2).any(|w| w[0].function >= w[1].function) {
            bail!("the slots' functions are none, or not each once in order");
        }
        for f in &self.functions {
            if f.interesting.0 == 0 || f.slots.0 < f.interesting.0 || f.span.0 < f.interesting.0 {
                bail!("function {} has fewer slots, or a narrower span, than interesting supergraph paths", f.function);
            }
        }
        let interesting = self.functions.iter().try_fold(0, |n, f| sum(n, f.interesting.0, "the interesting paths"))?;
        let slots = self.functions.iter().try_fold(0, |n, f| sum(n, f.slots.0, "the slots"))?;
        if (interesting, slots) != (self.interesting.0, self.slots.0) {
            bail!("the slots' totals are not the sums of their functions'");
        }
        Ok(())
    }

    /// The sum of the slot facts of two runs of one instrumented module.
    pub fn merge(a: Option<SlotFacts>, b: Option<SlotFacts>) -> Result<Option<SlotFacts>> {
        match (a, b) {
            (None, None) => Ok(None),
            (Some(a), Some(b)) if a.functions == b.functions => {
                let path_ends = sum(a.path_ends.0, b.path_ends.0, "the path ends counted in slots")?;
                Ok(Some(SlotFacts { path_ends: U64(path_ends), ..a }))
            }
            _ => bail!("its interesting supergraph paths have other slots"),
        }
    }
}

/// A subpath ending at a call whose segments were not counted, and how often it ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotCountedRoot {
    pub function: u32,
    pub path: U64,
    pub part: u32,
    pub count: U64,
}

/// An IPS and how often it ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IpsCount {
    pub count: U64,
    pub steps: Vec<IpsStep>,
    /// With interesting segments: whether this one is (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interesting: Option<bool>,
    /// A residual segment that takes a Ball–Larus path none of the interesting profiles' chosen
    /// paths is: intraprocedural residual path profiling finds it too (absent otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untested_path: bool,
}

/// A step of an IPS: a subpath, a call `"("` or a return `")"`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IpsStep {
    Sub(Subpath),
    Mark(Mark),
}

/// A call or a return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mark {
    #[serde(rename = "(")]
    Call,
    #[serde(rename = ")")]
    Return,
}

/// Part `part` of the Ball–Larus path `path` of `function`: from its `part`-th call (its start, for
/// 0) to the next or the path's end; `blocks` are those it runs through (the first and last hold
/// its calls).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Subpath {
    pub function: u32,
    pub path: U64,
    pub part: u32,
    pub blocks: Vec<u32>,
}

/// Whether a profile's mode is one of those that count interprocedural path segments (`ips`,
/// `ippp`), whose facts are [`IpsFacts`].
pub fn counts_segments(mode: &ProfileMode) -> bool {
    matches!(mode, ProfileMode::Extension(x) if x.name == Ips.name() || x.name == Ippp.name())
}

/// The facts of an `ips` or `ippp` profile, checked to be what a run could have written.
pub fn facts(mode: &ProfileMode) -> Result<IpsFacts> {
    match mode {
        ProfileMode::Extension(x) if counts_segments(mode) => {
            let facts: IpsFacts =
                serde_json::from_value(x.facts.clone()).context("the profile's interprocedural path segments")?;
            facts.check().context("the profile's interprocedural path segments")?;
            Ok(facts)
        }
        _ => bail!("it is not an ips or ippp profile"),
    }
}

/// The profile's mode `kind` with `facts`.
pub(crate) fn to_mode(kind: &dyn ModeKind, facts: &IpsFacts) -> Result<ProfileMode> {
    Ok(ProfileMode::Extension(Extension { name: kind.name().into(), facts: serde_json::to_value(facts)? }))
}

impl IpsFacts {
    /// Refuses what no run writes: a depth outside 1 to [`MAX_DEPTH`], totals that are not the sums
    /// of the segments, a segment listed twice or never run, steps that are no segment (one that
    /// does not start with a subpath ending at a call, follows more than `k` calls, returns from
    /// the function it started in, or goes on in a caller with another part than the next), and
    /// interesting marks without interesting segments or the residual totals they give.
    fn check(&self) -> Result<()> {
        if !(1..=MAX_DEPTH).contains(&self.k) {
            bail!("k = {} is outside 1 to {MAX_DEPTH}", self.k);
        }
        let mut executions = 0u64;
        let mut seen = HashSet::new();
        let (mut residual, mut residual_executions) = (0u64, 0u64);
        for s in &self.ips {
            if s.count.0 == 0 {
                bail!("a segment with count 0");
            }
            executions = sum(executions, s.count.0, "the segments' counts")?;
            if !seen.insert(&s.steps) {
                bail!("a segment is listed twice");
            }
            check_steps(&s.steps, self.k)?;
            match (s.interesting, &self.residual) {
                (Some(false), Some(_)) => {
                    residual += 1;
                    residual_executions = sum(residual_executions, s.count.0, "the residual segments' counts")?;
                }
                (Some(true), Some(_)) => {}
                (None, None) => {}
                _ => bail!("segments marked interesting or not, without the interesting segments, or the reverse"),
            }
        }
        if (self.segments.0, self.executions.0) != (self.ips.len() as u64, executions) {
            bail!("`segments` and `executions` are not the number and the sum of the segments listed");
        }
        if let Some(r) = &self.residual {
            if (r.segments.0, r.executions.0) != (residual, residual_executions) {
                bail!("the residual totals are not those of the segments marked residual");
            }
        }
        if let Some(s) = &self.slots {
            s.check()?;
        }
        Ok(())
    }

    /// Takes `ips` as the profile's segments, most frequent first, and counts them.
    pub(super) fn set_segments(&mut self, mut ips: Vec<IpsCount>) -> Result<()> {
        ips.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| key(&a.steps).cmp(&key(&b.steps))));
        let mut executions = 0u64;
        for s in &ips {
            executions = sum(executions, s.count.0, "the segments' executions")?;
        }
        if let Some(r) = &mut self.residual {
            let residual = ips.iter().filter(|s| s.interesting == Some(false));
            (r.segments, r.executions) = (U64(0), U64(0));
            for s in residual {
                r.segments.0 += 1;
                r.executions = U64(sum(r.executions.0, s.count.0, "the residual segments' executions")?);
            }
        }
        (self.segments, self.executions, self.ips) = (U64(ips.len() as u64), U64(executions), ips);
        Ok(())
    }
}

/// Refuses steps that are no segment of depth at most `k` (see [`IpsFacts::check`]).
fn check_steps(steps: &[IpsStep], k: usize) -> Result<()> {
    let bad = |why: &str| anyhow::anyhow!("a segment's steps are no segment: {why}");
    // The caller's subpath at each open call, and the subpath the next part follows.
    let mut callers: Vec<&Subpath> = Vec::new();
    let mut last: Option<&Subpath> = None;
    let mut calls = 0;
    for (i, step) in steps.iter().enumerate() {
        match step {
            IpsStep::Sub(sub) => {
                match steps.get(i.wrapping_sub(1)).filter(|_| i > 0) {
                    Some(IpsStep::Sub(_)) => return Err(bad("two subpaths in a row")),
                    Some(IpsStep::Mark(Mark::Return)) => {
                        let caller = last.ok_or_else(|| bad("a return with no subpath before"))?;
                        if (sub.function, sub.path, sub.part) != (caller.function, caller.path, caller.part + 1) {
                            return Err(bad("the caller goes on with another part than the next"));
                        }
                    }
                    _ => {}
                }
                last = Some(sub);
            }
            IpsStep::Mark(Mark::Call) => {
                let sub = match steps.get(i.wrapping_sub(1)).filter(|_| i > 0) {
                    Some(IpsStep::Sub(sub)) => sub,
                    Some(IpsStep::Mark(Mark::Return)) => return Err(bad("a call right after a return")),
                    _ => return Err(bad("a call with no subpath before it")),
                };
                calls += 1;
                if calls > k {
                    return Err(bad("more calls than k"));
                }
                callers.push(sub);
            }
            IpsStep::Mark(Mark::Return) => {
                last = Some(callers.pop().ok_or_else(|| bad("a return from the function it started in"))?);
            }
        }
    }
    match (steps.first(), steps.get(1), steps.last()) {
        (Some(IpsStep::Sub(_)), Some(IpsStep::Mark(Mark::Call)), Some(IpsStep::Sub(_))) => Ok(()),
        _ => Err(bad("it does not start with a subpath that ends at a call and end with a subpath")),
    }
}

/// An order of IPSs with equal counts that does not depend on how they were found.
pub(super) fn key(steps: &[IpsStep]) -> Vec<(u32, u64, u32)> {
    steps
        .iter()
        .map(|s| match s {
            IpsStep::Sub(x) => (x.function, x.path.0, x.part),
            IpsStep::Mark(Mark::Call) => (u32::MAX, 0, 0),
            IpsStep::Mark(Mark::Return) => (u32::MAX, 1, 0),
        })
        .collect()
}
