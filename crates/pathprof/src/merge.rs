//! Profiles of several runs of one module, added up into one (`pathprof merge`).
//!
//! The profiles must be of the same module (its SHA-256) taken in the same mode with the same
//! settings, so that every function is numbered alike: then path counts add up by path ID, edge
//! counts by edge, k-iteration path forests node by node, event counts by event, and the residual
//! paths of `ppp` profiles are those of the union. Counts are added exactly; a sum past 2^64 − 1
//! is an error, not a wrapped or saturated count.

use crate::modes::{sum as add, ModeKind, Registry};
use anyhow::{bail, Context, Result};
use pathprof_core::profile::{EdgeCount, FunctionProfile, FunctionState, PathProfile, Profile, U64};
use std::collections::BTreeMap;

/// The profiles `profiles` (each with the name it was given by) added up, in order: the first
/// gives the module's path, the arguments, the exit code and the trap. Their mode's kind, which
/// `registry` knows, adds up what the mode measured.
pub fn merge(registry: &Registry, profiles: &[(String, Profile)]) -> Result<Profile> {
    let Some(((first_name, first), rest)) = profiles.split_first() else {
        bail!("nothing to merge");
    };
    let Some(kind) = registry.kind(first.mode.name()) else {
        bail!("cannot merge {first_name}: no mode {} is known", first.mode);
    };
    let mut out = first.clone();
    for (name, p) in rest {
        add_profile(kind, &mut out, p).with_context(|| format!("cannot merge {name} into {first_name}"))?;
    }
    Ok(out)
}

/// Adds `p` to `out`, both profiles of mode `kind`'s.
fn add_profile(kind: &dyn ModeKind, out: &mut Profile, p: &Profile) -> Result<()> {
    if p.module.sha256 != out.module.sha256 {
        bail!("it is a profile of another module ({}, SHA-256 {})", p.module.path, short(&p.module.sha256));
    }
    if p.mode.name() != out.mode.name() {
        bail!("it is a {} profile, not a {} one", p.mode, out.mode);
    }
    // Snapshots of one run hold one another: adding them would count what ran twice.
    let runs = |p: &Profile| p.run_id.iter().flat_map(|ids| ids.split('+')).map(str::to_string).collect::<Vec<_>>();
    let (mine, theirs) = (runs(out), runs(p));
    if let Some(id) = theirs.iter().find(|id| mine.contains(id)) {
        bail!("it is a profile of run {id} too, each of whose snapshots holds the ones before: merge only its last");
    }
    if p.functions.len() != out.functions.len() {
        bail!("it lists {} functions, not {}", p.functions.len(), out.functions.len());
    }
    let mode = kind.merge(&out.mode, &p.mode)?;
    for (mine, theirs) in out.functions.iter_mut().zip(&p.functions) {
        add_function(kind, mine, theirs).with_context(|| format!("function {}", theirs.index))?;
    }
    out.mode = kind.after_merge(mode, &out.functions);
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
    if out.stopped.is_none() {
        out.stopped.clone_from(&p.stopped);
    }
    // Seeded alike and deterministic only if every run was.
    if out.random_seed != p.random_seed {
        out.random_seed = None;
    }
    out.deterministic &= p.deterministic;
    // The runs a sum holds, so that none is added to it twice; a sum is no snapshot.
    let all: Vec<String> = mine.into_iter().chain(theirs).collect();
    out.run_id = (!all.is_empty()).then(|| all.join("+"));
    out.snapshot = None;
    Ok(())
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Adds function `b` to `a`: both skipped for the same reason, or both instrumented alike. A
/// profile lists the blocks of the functions that ran in its run: the sum, of those that ran in any.
fn add_function(kind: &dyn ModeKind, a: &mut FunctionProfile, b: &FunctionProfile) -> Result<()> {
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
        (FunctionState::Instrumented(x), FunctionState::Instrumented(y)) => {
            add_paths(x, y)?;
            kind.merge_function(x, y)
        }
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
    Ok(())
}
