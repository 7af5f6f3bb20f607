//! Mode `events`: event counts from path counts [EVT23]. An event is a predicate over operators
//! (`pathprof_wasm::events`: loads, calls, bytes stored, calls of an allocator, …); every block has
//! an event vector, a path the sum of its blocks', and an event's total is
//!
//! * `pc` — path counting: exact Ball–Larus path counts, the totals computed after the run as every
//!   path's count times its vector [EVT23 §4.2] (the instrumenter's sinks `array` and `hash`);
//! * `pd` — path decoding: each path end adds its path's vector, from a table, to the function's
//!   event counters (sink `decode`; a function whose table would not fit counts its paths as `pc`
//!   does);
//! * `dec` — direct counting, the baseline: no paths, every stretch of straight-line code adds its
//!   events where it starts (sink `direct`).
//!
//! Paths are cut besides loop headers as `--cut` says [EVT23 §4.3]: nowhere (`none`), at every merge
//! (`merges`: as many paths as edges), or only in functions whose paths exceed [`AUTO_CUT_BUDGET`]
//! (`auto`, the default), so that every function fits a dense array or table. Cut or not, the totals
//! are the same. The runtime's collector is `count`; the arithmetic is `pathprof_core::events`.

use super::{ModeFacts, ModeFlags, ModeRun};
use anyhow::{bail, Result};
use pathprof_core::events::{max_path_vector, totals};
use pathprof_core::profile::{EventCounts, EventStrategy, EventsInfo, FunctionProfile, PathCut};
use pathprof_core::PlanOptions;
use pathprof_runtime::{Engine, Program, RunConfig, RunOutcome};
use pathprof_wasm::events::EventSpec;
use pathprof_wasm::map::Counters;
use pathprof_wasm::{ProfileMap, SinkKind};
use std::collections::HashMap;
use std::fmt;

/// How events are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSettings {
    pub strategy: EventStrategy,
    pub cut: PathCut,
}

/// The settings of `events` without any.
pub const DEFAULT: EventSettings = EventSettings { strategy: EventStrategy::Pc, cut: PathCut::Auto };

/// With `--cut auto`, functions with more paths than this are cut until they have no more: the size
/// of the largest dense counter array.
pub const AUTO_CUT_BUDGET: u64 = 1 << 14;

fn strategy(name: &str) -> Option<EventStrategy> {
    EventStrategy::ALL.into_iter().find(|s| s.name() == name)
}

fn cut(name: &str) -> Option<PathCut> {
    PathCut::ALL.into_iter().find(|c| c.name() == name)
}

/// Reads what follows `events:` in `spec` (`STRATEGY[:CUT]`), or nothing.
pub(crate) fn parse(spec: &str, settings: Option<&str>) -> Result<EventSettings> {
    let Some(settings) = settings else { return Ok(DEFAULT) };
    let (s, c) = match settings.split_once(':') {
        Some((s, c)) => (s, Some(c)),
        None => (settings, None),
    };
    let Some(strategy) = strategy(s) else {
        bail!("mode {spec:?}: the strategy is pc, pd or dec");
    };
    let cut = match c.map(|c| (c, cut(c))) {
        None => DEFAULT.cut,
        Some((_, Some(cut))) => cut,
        Some((c, None)) => bail!("mode {spec:?}: paths are cut at none, merges or auto, not {c:?}"),
    };
    checked(EventSettings { strategy, cut })
}

/// `dec` counts no paths, and cuts none.
fn checked(settings: EventSettings) -> Result<EventSettings> {
    if settings.strategy == EventStrategy::Dec && settings.cut != DEFAULT.cut {
        bail!("events:dec counts no paths: there are none to cut");
    }
    Ok(settings)
}

/// Writes the mode in its shortest form.
pub(crate) fn fmt(f: &mut fmt::Formatter<'_>, settings: &EventSettings) -> fmt::Result {
    match (settings.strategy, settings.cut) {
        (EventStrategy::Pc, PathCut::Auto) => f.write_str("events"),
        (s, PathCut::Auto) | (s @ EventStrategy::Dec, _) => write!(f, "events:{}", s.name()),
        (s, c) => write!(f, "events:{}:{}", s.name(), c.name()),
    }
}

/// `settings` with the settings of `pathprof run`'s flags.
pub(crate) fn with_flags(settings: EventSettings, flags: &ModeFlags) -> Result<EventSettings> {
    let mut out = settings;
    if let Some(s) = &flags.strategy {
        out.strategy = strategy(s).ok_or_else(|| anyhow::anyhow!("--strategy {s}: the strategy is pc, pd or dec"))?;
    }
    if let Some(c) = &flags.cut {
        out.cut = cut(c).ok_or_else(|| anyhow::anyhow!("--cut {c}: paths are cut at none, merges or auto"))?;
    }
    checked(out)
}

/// The sink of a strategy.
pub(crate) fn sink(settings: &EventSettings) -> SinkKind {
    match settings.strategy {
        EventStrategy::Pc => SinkKind::Count,
        EventStrategy::Pd => SinkKind::Decode,
        EventStrategy::Dec => SinkKind::Direct,
    }
}

/// Where paths are cut (direct counting has no paths to cut).
pub(crate) fn plan(settings: &EventSettings, plan: &mut PlanOptions) {
    if settings.strategy == EventStrategy::Dec {
        return;
    }
    match settings.cut {
        PathCut::None => {}
        PathCut::Merges => plan.cuts = pathprof_core::plan::ExtraCuts::Merges,
        PathCut::Auto => plan.max_paths = AUTO_CUT_BUDGET,
    }
}

/// Runs a module instrumented to count events.
pub(crate) fn run(
    engine: &Engine,
    module: &Program,
    map: &ProfileMap,
    config: &RunConfig,
    settings: EventSettings,
) -> Result<ModeRun> {
    super::bl::run_counted(engine, module, map, config, |counters| ModeFacts::Events { settings, counters })
}

/// The event vectors of a function's blocks.
fn block_vectors(f: &FunctionProfile) -> Vec<Vec<u64>> {
    f.blocks.iter().map(|b| b.events.clone()).collect()
}

/// Every instrumented function's event totals: read from its event counters, or computed from its
/// path counts.
pub(crate) fn attach(functions: &mut [FunctionProfile], map: &ProfileMap, counters: &HashMap<u32, Vec<u64>>) {
    let width = map.events.len();
    let counted: HashMap<u32, Counters> = map.probed().map(|(f, p)| (f.index, p.counters)).collect();
    for f in functions.iter_mut() {
        let values = match counted.get(&f.index) {
            None => continue,
            Some(Counters::Events { .. }) => counters.get(&f.index).cloned().unwrap_or_else(|| vec![0; width]),
            Some(_) => {
                let vectors = block_vectors(f);
                totals(f.paths().iter().map(|p| (p.blocks.as_slice(), p.count.0)), &vectors, width)
            }
        };
        if let Some(p) = f.profiled_mut() {
            p.events = Some(EventCounts::new(&map.events, &values));
        }
    }
}

/// What the profile says of an `events` run: how it counted, its totals, and how far they can be
/// off when the run stopped with activations open.
pub(crate) fn info(
    settings: EventSettings,
    spec: Option<&EventSpec>,
    functions: &[FunctionProfile],
    map: &ProfileMap,
    outcome: &RunOutcome,
) -> EventsInfo {
    let width = map.events.len();
    let mut sum = vec![0u64; width];
    for e in functions.iter().filter_map(|f| f.events()) {
        for (s, v) in sum.iter_mut().zip(e.values()) {
            *s = s.saturating_add(v);
        }
    }
    let by_index: HashMap<u32, &FunctionProfile> = functions.iter().map(|f| (f.index, f)).collect();
    let plans: HashMap<u32, (&pathprof_core::FunctionPlan, Counters)> =
        map.probed().map(|(f, p)| (f.index, (&p.plan, p.counters))).collect();
    let add = |acc: &mut Vec<u64>, v: &[u64]| {
        for (a, x) in acc.iter_mut().zip(v) {
            *a = a.saturating_add(*x);
        }
    };
    let (mut under, mut over) = (vec![0u64; width], vec![0u64; width]);
    for (depth, index) in outcome.open_frames.iter().enumerate() {
        let (Some(f), Some(&(plan, counters))) = (by_index.get(index), plans.get(index)) else { continue };
        let vectors = block_vectors(f);
        match counters {
            // Direct counting added the events of the stretch it stopped in when the stretch began:
            // only a trap inside it, in the innermost frame, counts events that did not occur.
            Counters::Events { decoded: false, .. } => {
                if depth == 0 && outcome.trap.is_some() {
                    for v in &vectors {
                        for (o, x) in over.iter_mut().zip(v) {
                            *o = (*o).max(*x);
                        }
                    }
                }
            }
            // The path the activation was on never ended: its events so far are not counted.
            _ => add(&mut under, &max_path_vector(&plan.dag, &vectors, width)),
        }
    }
    let bound = |v: Vec<u64>| v.iter().any(|&x| x > 0).then(|| EventCounts::new(&map.events, &v));
    EventsInfo {
        strategy: settings.strategy,
        cut: settings.cut,
        names: map.events.clone(),
        alloc_functions: spec.map_or_else(Vec::new, |s| s.alloc_fns.clone()),
        user_events: spec.map_or_else(Vec::new, |s| s.user.clone()),
        totals: EventCounts::new(&map.events, &sum),
        undercount_bound: bound(under),
        overcount_bound: bound(over),
    }
}
