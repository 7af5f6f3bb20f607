//! Interprocedural residual path profiling [PPP07 §3.5.2]: the interesting segments of a test
//! suite's `ips` profiles, and the untested segments of a field run with the figures of
//! [PPP07 Table 3.2].

use super::facts::{facts, key, IpsCount, IpsStep};
use super::DEFAULT_K;
use crate::modes::sum;
use anyhow::{bail, Context, Result};
use pathprof_core::profile::{InterestingRule, PathCount, Profile};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// The interesting segments of `ips` profiles given as `--interesting` (a test suite's runs):
/// those that ran in any of them, or the hottest as a rule says (a segment is grouped with the
/// function it starts in).
#[derive(Clone, Debug, PartialEq)]
pub struct TestedSegments {
    /// The depth of the profiles' segments.
    pub k: usize,
    pub segments: HashSet<Vec<IpsStep>>,
    /// The share of the profiles' segment executions the chosen ones carried.
    pub share: f64,
    /// The Ball–Larus paths chosen as interesting from the same profiles, by function and ID.
    pub paths: HashSet<(u32, u64)>,
}

impl TestedSegments {
    /// The segments `rule` chooses in `profiles` when they are `ips` profiles (of one depth), and
    /// the Ball–Larus `paths` chosen from them; `None` when none is an `ips` profile.
    pub fn of(
        profiles: &[(String, Profile)],
        rule: InterestingRule,
        paths: &HashMap<u32, Vec<PathCount>>,
    ) -> Result<Option<TestedSegments>> {
        let is_ips = |p: &Profile| super::counts_segments(&p.mode);
        let Some((first, _)) = profiles.iter().find(|(_, p)| is_ips(p)) else { return Ok(None) };
        let mut k = None;
        let mut counts: HashMap<Vec<IpsStep>, u64> = HashMap::new();
        for (name, p) in profiles {
            if !is_ips(p) {
                bail!("{name} is not an ips profile, as {first} is");
            }
            let facts = facts(&p.mode).with_context(|| name.clone())?;
            match k {
                Some(k) if k != facts.k => bail!("{name} has segments of up to {} calls, {first} of {k}", facts.k),
                _ => k = Some(facts.k),
            }
            for s in facts.ips {
                let c = counts.entry(s.steps).or_default();
                *c = sum(*c, s.count.0, "the interesting segments' counts")?;
            }
        }
        let k = k.unwrap_or(DEFAULT_K);
        let mut ranked: Vec<(u32, (Vec<IpsStep>, u64))> =
            counts.into_iter().map(|(steps, n)| (root_function(&steps), (steps, n))).collect();
        ranked.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| key(&a.1 .0).cmp(&key(&b.1 .0))));
        let (chosen, share) = crate::inputs::pick(ranked, |x| x.1, rule)?;
        let paths = paths.iter().flat_map(|(&f, list)| list.iter().map(move |p| (f, p.id.0))).collect();
        Ok(Some(TestedSegments { k, segments: chosen.into_iter().map(|(_, (s, _))| s).collect(), share, paths }))
    }
}

/// The function a segment starts in.
fn root_function(steps: &[IpsStep]) -> u32 {
    match steps.first() {
        Some(IpsStep::Sub(s)) => s.function,
        _ => u32::MAX,
    }
}

/// What interprocedural residual path profiling found in an `ips` profile taken with interesting
/// segments [PPP07 §3.5.2, Table 3.2]: the segments that ran and were not interesting — untested,
/// when the interesting ones are a test suite's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UntestedSegments {
    /// Untested segments, and their share of the distinct segments that ran.
    pub paths: u64,
    pub paths_share: f64,
    /// Their executions, and their share of all segment executions.
    pub executions: u64,
    pub executions_share: f64,
    /// Functions that untested segments go through.
    pub functions_involved: u64,
    /// Untested segments all of whose Ball–Larus paths were tested: intraprocedural residual path
    /// profiling on the same runs would miss them.
    pub missed_by_intraprocedural: u64,
    /// Executions of segments the run did not count (`ippp`: rooted at calls dropped so that
    /// supergraph IDs fit in their words), tested or not: the figures above leave them out.
    pub not_counted_executions: u64,
    /// The untested segments, by decreasing count.
    #[serde(skip)]
    pub list: Vec<IpsCount>,
}

/// The untested segments of `p`; `None` unless it is an `ips` profile taken with interesting
/// segments.
pub fn untested(p: &Profile) -> Option<UntestedSegments> {
    let facts = facts(&p.mode).ok()?;
    facts.residual.as_ref()?;
    let list: Vec<IpsCount> = facts.ips.iter().filter(|s| s.interesting == Some(false)).cloned().collect();
    let functions: HashSet<u32> = list
        .iter()
        .flat_map(|s| s.steps.iter().filter_map(|x| if let IpsStep::Sub(sub) = x { Some(sub.function) } else { None }))
        .collect();
    let executions: u64 = list.iter().map(|s| s.count.0).sum();
    let share = |x: u64, of: u64| if of == 0 { 0.0 } else { x as f64 / of as f64 };
    Some(UntestedSegments {
        paths: list.len() as u64,
        paths_share: share(list.len() as u64, facts.segments.0),
        executions,
        executions_share: share(executions, facts.executions.0),
        functions_involved: functions.len() as u64,
        missed_by_intraprocedural: list.iter().filter(|s| !s.untested_path).count() as u64,
        not_counted_executions: facts.not_counted.as_ref().map_or(0, |n| n.executions.0),
        list,
    })
}
