//! Profiles of several runs of one module, added up into one (`pathprof merge`).
//!
//! The profiles must be of the same module (its SHA-256) taken in the same mode with the same
//! settings, so that every function is numbered alike: then path counts add up by path ID, edge
//! counts by edge, k-iteration path forests node by node, event counts by event, and the residual
//! paths of `ppp` profiles are those of the union. Counts are added exactly; a sum past 2^64 − 1
//! is an error, not a wrapped or saturated count.

use crate::modes::ppp;
use anyhow::{bail, Context, Result};
use pathprof_core::profile::{
    residual, EdgeCount, EventCounts, FunctionProfile, FunctionState, KipfNodeProfile, PathProfile, Profile,
    ProfileMode, SamplingInfo, U64,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// `a + b`, or an error naming what overflowed.
fn add(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_add(b).with_context(|| format!("{what} add up past 2^64 - 1"))
}

/// The profiles `profiles` (each with the name it was given by) added up, in order: the first
/// gives the module's path, the arguments, the exit code and the trap.
pub fn merge(profiles: &[(String, Profile)]) -> Result<Profile> {
    let Some(((first_name, first), rest)) = profiles.split_first() else {
        bail!("nothing to merge");
    };
    let mut out = first.clone();
    for (name, p) in rest {
        add_profile(&mut out, p).with_context(|| format!("cannot merge {name} into {first_name}"))?;
    }
    Ok(out)
}

/// Adds `p` to `out`.
fn add_profile(out: &mut Profile, p: &Profile) -> Result<()> {
    if p.module.sha256 != out.module.sha256 {
        bail!("it is a profile of another module ({}, SHA-256 {})", p.module.path, short(&p.module.sha256));
    }
    if p.mode.name() != out.mode.name() {
        bail!("it is a {} profile, not a {} one", p.mode, out.mode);
    }
    if p.functions.len() != out.functions.len() {
        bail!("it lists {} functions, not {}", p.functions.len(), out.functions.len());
    }
    let mode = add_mode(&out.mode, &p.mode)?;
    for (mine, theirs) in out.functions.iter_mut().zip(&p.functions) {
        add_function(mine, theirs).with_context(|| format!("function {}", theirs.index))?;
    }
    out.mode = match mode {
        ProfileMode::Ppp(x) => ProfileMode::Ppp(ppp::info(&x.interesting_from, &out.functions)),
        mode => mode,
    };
    out.runs = add(out.runs, p.runs, "the runs")?;
    out.path_executions = U64(add(out.path_executions.0, p.path_executions.0, "the path executions")?);
    out.open_activations_at_exit = add(out.open_activations_at_exit, p.open_activations_at_exit, "open activations")?;
    out.wall_seconds += p.wall_seconds;
    out.bench_region_seconds = out.bench_region_seconds.zip(p.bench_region_seconds).map(|(a, b)| a + b);
    out.instrumentation_seconds = out.instrumentation_seconds.zip(p.instrumentation_seconds).map(|(a, b)| a + b);
    if out.exit_code == 0 {
        out.exit_code = p.exit_code;
    }
    if out.trap.is_none() {
        out.trap.clone_from(&p.trap);
    }
    Ok(())
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// The mode of the sum of two profiles in modes `a` and `b`, or why they do not add up. The summary
/// of a PPP profile is left to be recomputed from the summed functions.
fn add_mode(a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode> {
    Ok(match (a, b) {
        (ProfileMode::None, ProfileMode::None) => ProfileMode::None,
        (ProfileMode::Bl, ProfileMode::Bl) => ProfileMode::Bl,
        (ProfileMode::Pep(x), ProfileMode::Pep(y)) => {
            let settings = |s: &SamplingInfo| (s.samples, s.stride, s.every, s.tick_ms, s.function_copies);
            if settings(x) != settings(y) {
                bail!("it was sampled with other settings");
            }
            let mut s = x.clone();
            s.ticks = add(x.ticks, y.ticks, "the timer ticks")?;
            s.samples_taken = add(x.samples_taken, y.samples_taken, "the samples")?;
            ProfileMode::Pep(s)
        }
        (ProfileMode::Kbl(x), ProfileMode::Kbl(y)) => {
            if (x.k, x.max_nodes, x.ksf_node_bytes) != (y.k, y.max_nodes, y.ksf_node_bytes) {
                bail!("its forests were built with k = {} and another bound or layout (here k = {})", y.k, x.k);
            }
            let mut k = x.clone();
            k.stream_items = U64(add(x.stream_items.0, y.stream_items.0, "the stream items")?);
            k.ksf_nodes = U64(add(x.ksf_nodes.0, y.ksf_nodes.0, "the k-SF nodes")?);
            k.sibling_scans = U64(add(x.sibling_scans.0, y.sibling_scans.0, "the sibling scans")?);
            k.dropped = U64(add(x.dropped.0, y.dropped.0, "the dropped path IDs")?);
            k.stream_handovers = U64(add(x.stream_handovers.0, y.stream_handovers.0, "the stream hand-overs")?);
            k.stream_wait_seconds = x.stream_wait_seconds + y.stream_wait_seconds;
            ProfileMode::Kbl(k)
        }
        (ProfileMode::Ppp(x), ProfileMode::Ppp(y)) => {
            if (&x.interesting_from, x.interesting) != (&y.interesting_from, y.interesting) {
                bail!("its interesting paths come from other profiles");
            }
            ProfileMode::Ppp(x.clone())
        }
        (ProfileMode::Events(x), ProfileMode::Events(y)) => {
            if (x.strategy, x.cut, &x.names, &x.alloc_functions, &x.user_events)
                != (y.strategy, y.cut, &y.names, &y.alloc_functions, &y.user_events)
            {
                bail!("it counted other events or counted them otherwise");
            }
            let mut e = x.clone();
            e.totals = add_events(&x.totals, &y.totals)?;
            e.undercount_bound = add_bounds(&x.undercount_bound, &y.undercount_bound)?;
            e.overcount_bound = add_bounds(&x.overcount_bound, &y.overcount_bound)?;
            ProfileMode::Events(e)
        }
        _ => bail!("it is a {b} profile, not a {a} one"),
    })
}

/// Event counts of the same events added up.
fn add_events(a: &EventCounts, b: &EventCounts) -> Result<EventCounts> {
    let names: Vec<&str> = a.names().collect();
    if names != b.names().collect::<Vec<_>>() {
        bail!("it counted other events");
    }
    let mut out = a.clone();
    for ((name, x), y) in out.0.iter_mut().zip(b.values()) {
        x.0 = add(x.0, y, &format!("the counts of event {name}"))?;
    }
    Ok(out)
}

/// Bounds that one of the runs may lack.
fn add_bounds(a: &Option<EventCounts>, b: &Option<EventCounts>) -> Result<Option<EventCounts>> {
    Ok(match (a, b) {
        (Some(a), Some(b)) => Some(add_events(a, b)?),
        (a, b) => a.clone().or_else(|| b.clone()),
    })
}

/// Adds function `b` to `a`: both skipped for the same reason, or both instrumented alike. A
/// profile lists the blocks of the functions that ran in its run: the sum, of those that ran in any.
fn add_function(a: &mut FunctionProfile, b: &FunctionProfile) -> Result<()> {
    if a.index != b.index {
        bail!("its functions differ");
    }
    if a.blocks.is_empty() {
        a.blocks.clone_from(&b.blocks);
    } else if !b.blocks.is_empty() && a.blocks.len() != b.blocks.len() {
        bail!("its blocks differ");
    }
    match (&mut a.state, &b.state) {
        (FunctionState::Skipped { reason: x }, FunctionState::Skipped { reason: y }) if x == y => Ok(()),
        (FunctionState::Instrumented(x), FunctionState::Instrumented(y)) => add_paths(x, y),
        _ => bail!("it was instrumented in one profile and not in the other, or skipped for another reason"),
    }
}

/// Adds the path profile `b` of a function to `a`, numbered alike.
fn add_paths(a: &mut PathProfile, b: &PathProfile) -> Result<()> {
    if (a.num_paths, a.counters, &a.cut_blocks, a.increments) != (b.num_paths, b.counters, &b.cut_blocks, b.increments)
    {
        bail!("its paths are numbered otherwise (another number of paths, counters or cuts)");
    }
    let mut paths: BTreeMap<U64, _> = a.paths.drain(..).map(|p| (p.id, p)).collect();
    for p in &b.paths {
        match paths.get_mut(&p.id) {
            Some(mine) => mine.count = U64(add(mine.count.0, p.count.0, &format!("the counts of path {}", p.id))?),
            None => {
                paths.insert(p.id, p.clone());
            }
        }
    }
    a.paths = paths.into_values().collect();
    a.paths.sort_by(|x, y| y.count.cmp(&x.count).then(x.id.cmp(&y.id)));
    let mut edges: BTreeMap<_, u64> = a.edges.drain(..).map(|e| ((e.from, e.to), e.count.0)).collect();
    for e in &b.edges {
        let c = edges.entry((e.from, e.to)).or_insert(0);
        *c = add(*c, e.count.0, "edge counts")?;
    }
    a.edges = edges.into_iter().map(|((from, to), c)| EdgeCount { from, to, count: U64(c) }).collect();
    a.increments_executed = U64(add(a.increments_executed.0, b.increments_executed.0, "the executed increments")?);
    match (&mut a.kipf, &b.kipf) {
        (Some(x), Some(y)) if x.k == y.k => add_forest(&mut x.roots, &y.roots)?,
        (None, None) => {}
        _ => bail!("its k-iteration path forests differ in k"),
    }
    match (&mut a.events, &b.events) {
        (Some(x), Some(y)) => *x = add_events(x, y)?,
        (None, None) => {}
        _ => bail!("one profile has its events and the other not"),
    }
    match (&mut a.ppp, &b.ppp) {
        (Some(x), Some(y)) => {
            if (x.interesting, x.range) != (y.interesting, y.range) {
                bail!("its interesting paths differ");
            }
            if (x.untested.len() as u64, y.untested.len() as u64) != (x.untested_edges, y.untested_edges) {
                bail!("a profile lacks the list of its untested edges (written by an older pathprof)");
            }
            (x.residual_paths, x.residual_executions) =
                residual(&a.paths).context("the residual executions add up past 2^64 - 1")?;
            let untested: BTreeSet<_> = x.untested.iter().chain(&y.untested).copied().collect();
            x.untested = untested.into_iter().collect();
            x.untested_edges = x.untested.len() as u64;
        }
        (None, None) => {}
        _ => bail!("one profile has preferential paths and the other not"),
    }
    Ok(())
}

/// Adds forest `b` to `a`: nodes of the same sequence of paths add their counts.
fn add_forest(a: &mut Vec<KipfNodeProfile>, b: &[KipfNodeProfile]) -> Result<()> {
    let mut at: HashMap<U64, usize> = a.iter().enumerate().map(|(i, x)| (x.path, i)).collect();
    for node in b {
        match at.get(&node.path) {
            Some(&i) => {
                let mine = &mut a[i];
                mine.count = U64(add(mine.count.0, node.count.0, "k-IPF counts")?);
                add_forest(&mut mine.children, &node.children)?;
            }
            None => {
                at.insert(node.path, a.len());
                a.push(node.clone());
            }
        }
    }
    Ok(())
}
