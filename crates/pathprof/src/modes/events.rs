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

use super::mode::{instrumented, sum, Given, Mode, ModeKind, ModeRun, ProfilingMode, Report, SnapshotSink};
use super::setting::{ModeFlags, Setting};
use crate::inputs::Inputs;
use crate::mode_identity;
use crate::profiled::ProfiledModule;
use crate::render;
use anyhow::{bail, Result};
use pathprof_core::events::{max_path_vector, totals};
use pathprof_core::profile::{
    EventCounts, EventStrategy, EventsInfo, FunctionProfile, PathCut, PathProfile, Profile, ProfileMode,
};
use pathprof_core::PlanOptions;
use pathprof_runtime::{Engine, Program, Recorded, RunConfig, RunOutcome};
use pathprof_wasm::events::{EventSet, EventSpec};
use pathprof_wasm::map::Counters;
use pathprof_wasm::{InstrumentOptions, ModuleInfo, ProfileMap, SinkKind};
use std::collections::HashMap;
use std::fmt;
use std::io::Write;

/// Mode `events`' kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Events;

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
fn parse(spec: &str, settings: Option<&str>) -> Result<EventSettings> {
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

/// What an `events` run measured besides its paths: the event totals of the functions with event
/// counters, by function (an entry per event of the map).
struct EventCounters(HashMap<u32, Vec<u64>>);

impl ModeKind for Events {
    fn name(&self) -> &'static str {
        "events"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["events[:STRATEGY[:CUT]]"]
    }

    fn parse(&self, spec: &str, settings: Option<&str>) -> Option<Result<Mode>> {
        Some(parse(spec, settings).map(Mode::new))
    }

    fn merge(&self, a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode> {
        let (ProfileMode::Events(x), ProfileMode::Events(y)) = (a, b) else { bail!("it is not an events profile") };
        if (x.strategy, x.cut, &x.names, &x.alloc_functions, &x.user_events)
            != (y.strategy, y.cut, &y.names, &y.alloc_functions, &y.user_events)
        {
            bail!("it counted other events or counted them otherwise");
        }
        let mut e = x.clone();
        e.totals = add_events(&x.totals, &y.totals)?;
        e.undercount_bound = add_bounds(&x.undercount_bound, &y.undercount_bound)?;
        e.overcount_bound = add_bounds(&x.overcount_bound, &y.overcount_bound)?;
        Ok(ProfileMode::Events(e))
    }

    fn merge_function(&self, a: &mut PathProfile, b: &PathProfile) -> Result<()> {
        match (&mut a.events, &b.events) {
            (Some(x), Some(y)) => *x = add_events(x, y)?,
            (None, None) => {}
            _ => bail!("one profile has its events and the other not"),
        }
        Ok(())
    }

    /// The totals, and the functions ranked by every operator executed (or the first event); no
    /// paths follow when none ran (events counted without paths).
    fn report(&self, mut out: &mut dyn Write, p: &Profile, top: usize, function: Option<&str>) -> Result<Report> {
        let Some(info) = p.mode.events() else { return Ok(Report::Paths) };
        render::events::summary(&mut out, p)?;
        let by = info.names.iter().position(|n| n == "instr").unwrap_or(0);
        if !info.names.is_empty() {
            render::events::functions(&mut out, p, by, top, function)?;
        }
        Ok(match p.functions.iter().all(|f| f.paths().is_empty()) {
            true => Report::Done,
            false => Report::Paths,
        })
    }
}

impl ProfilingMode for EventSettings {
    fn kind(&self) -> &'static dyn ModeKind {
        &Events
    }

    /// Writes the mode in its shortest form.
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.strategy, self.cut) {
            (EventStrategy::Pc, PathCut::Auto) => f.write_str("events"),
            (s, PathCut::Auto) | (s @ EventStrategy::Dec, _) => write!(f, "events:{}", s.name()),
            (s, c) => write!(f, "events:{}:{}", s.name(), c.name()),
        }
    }

    fn accepts(&self, setting: Setting) -> bool {
        matches!(
            setting,
            Setting::Strategy | Setting::Cut | Setting::Events | Setting::EdgeProfile | Setting::Snapshots
        )
    }

    fn with_flags(&self, flags: &ModeFlags) -> Result<Mode> {
        with_flags(*self, flags).map(Mode::new)
    }

    /// The sink of a strategy.
    fn sink(&self) -> Option<SinkKind> {
        Some(match self.strategy {
            EventStrategy::Pc => SinkKind::Count,
            EventStrategy::Pd => SinkKind::Decode,
            EventStrategy::Dec => SinkKind::Direct,
        })
    }

    fn instrument(&self, options: &mut InstrumentOptions, profiled: &ProfiledModule, inputs: &Inputs) -> Result<()> {
        plan(self, &mut options.plan);
        let names = ModuleInfo::read(profiled.bytes)?.names;
        options.events = Some(EventSet::new(inputs.events.unwrap_or(&EventSpec::default()), &names)?);
        Ok(())
    }

    fn run(
        &self,
        engine: &Engine,
        program: &Program,
        map: Option<&ProfileMap>,
        config: &RunConfig,
        snapshots: Option<&SnapshotSink>,
    ) -> Result<ModeRun> {
        super::bl::run_counted(engine, program, map, config, snapshots, |c| Box::new(EventCounters(c.events)))
    }

    fn replay(&self, map: &ProfileMap, recorded: Recorded) -> Result<ModeRun> {
        super::bl::replay_counted(map, recorded, |c| Box::new(EventCounters(c.events)))
    }

    fn attach(&self, run: &ModeRun, map: &ProfileMap, functions: &mut [FunctionProfile]) -> Result<()> {
        attach(functions, map, &run.facts::<EventCounters>()?.0);
        Ok(())
    }

    fn profile_mode(
        &self,
        run: &ModeRun,
        functions: &[FunctionProfile],
        map: Option<&ProfileMap>,
        given: &Given,
    ) -> Result<ProfileMode> {
        Ok(ProfileMode::Events(info(*self, given.events.as_ref(), functions, instrumented(map)?, &run.outcome)))
    }

    mode_identity!();
}

/// `settings` with the settings of `pathprof run`'s flags.
fn with_flags(settings: EventSettings, flags: &ModeFlags) -> Result<EventSettings> {
    let mut out = settings;
    if let Some(s) = &flags.strategy {
        out.strategy = strategy(s).ok_or_else(|| anyhow::anyhow!("--strategy {s}: the strategy is pc, pd or dec"))?;
    }
    if let Some(c) = &flags.cut {
        out.cut = cut(c).ok_or_else(|| anyhow::anyhow!("--cut {c}: paths are cut at none, merges or auto"))?;
    }
    checked(out)
}

/// Where paths are cut (direct counting has no paths to cut).
fn plan(settings: &EventSettings, plan: &mut PlanOptions) {
    if settings.strategy == EventStrategy::Dec {
        return;
    }
    match settings.cut {
        PathCut::None => {}
        PathCut::Merges => plan.cuts = pathprof_core::plan::ExtraCuts::Merges,
        PathCut::Auto => plan.max_paths = AUTO_CUT_BUDGET,
    }
}

/// The event vectors of a function's blocks.
fn block_vectors(f: &FunctionProfile) -> Vec<Vec<u64>> {
    f.blocks.iter().map(|b| b.events.clone()).collect()
}

/// Every instrumented function's event totals: read from its event counters, or computed from its
/// path counts.
fn attach(functions: &mut [FunctionProfile], map: &ProfileMap, counters: &HashMap<u32, Vec<u64>>) {
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
fn info(
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

/// Event counts of the same events added up.
fn add_events(a: &EventCounts, b: &EventCounts) -> Result<EventCounts> {
    let names: Vec<&str> = a.names().collect();
    if names != b.names().collect::<Vec<_>>() {
        bail!("it counted other events");
    }
    let mut out = a.clone();
    for ((name, x), y) in out.0.iter_mut().zip(b.values()) {
        x.0 = sum(x.0, y, &format!("the counts of event {name}"))?;
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
