//! Mode `ips`: interprocedural path segments [PPP07 §3.4.1–3.4.2]. Every function streams its
//! path ends as `kbl`'s do, with a marker before every call; a second thread cuts each path into
//! its subpaths (the stretches between its calls) and counts, exactly, every depth-`K` IPS that
//! ran: a subpath that ends at a call, followed into the callee and back, through at most `K`
//! calls, up to a loop header or the exit of the function it started in. The instrumenter's sink
//! is `stream` (with call markers); the runtime's collector is `stream` with the consumer
//! `segments`; the segments are `pathprof_core::ips`. The profile's paths are the exact Ball–Larus
//! counts; its `mode_facts` list the IPSs (docs/profile-format.md; their types and checks are in
//! `facts.rs`). With interesting segments, the others are residual (`residual.rs`).

mod facts;
mod residual;

pub(crate) use facts::to_mode;
pub use facts::{
    counts_segments, facts, FunctionSlots, IpsCount, IpsFacts, IpsStep, Mark, NotCounted, NotCountedRoot,
    ResidualSegments, SlotFacts, Subpath,
};
pub use residual::{untested, TestedSegments, UntestedSegments};

use super::mode::{instrumented, sum, Given, Mode, ModeKind, ModeRun, ProfilingMode, Report, RunFigure, SnapshotSink};
use super::setting::{whole_number, Setting};
use crate::inputs::Inputs;
use crate::mode_identity;
use crate::profiled::ProfiledModule;
use crate::render::{group, share};
use crate::view::{function_name, source_lines};
use anyhow::{bail, Context, Result};
use pathprof_core::ips::{Segments, Step, MAX_DEPTH};
use pathprof_core::profile::{FunctionProfile, InterestingRule, Profile, ProfileMode, U64};
use pathprof_core::regen;
use pathprof_core::supergraph::{MAX_HIGH_WORDS, MAX_WORD_CALLS};
use pathprof_runtime::{Engine, Program, Recorded, RunConfig, RunOutcome, SegmentConsumer, Segmented, StreamCollector};
use pathprof_wasm::abi::STREAM_CAPACITY;
use pathprof_wasm::{InstrumentOptions, ProfileMap, SinkKind};
use std::collections::HashMap;
use std::fmt;
use std::io::Write;

/// `K` when the mode does not give it.
pub const DEFAULT_K: usize = 1;

/// Mode `ips`'s kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ips;

/// An `ips` mode: the most calls an IPS follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpsMode {
    pub k: usize,
}

impl ModeKind for Ips {
    fn name(&self) -> &'static str {
        "ips"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["ips[:K]"]
    }

    fn parse(&self, spec: &str, settings: Option<&str>) -> Option<Result<Mode>> {
        let k = match settings.map(|k| whole_number(spec, "K", k, MAX_DEPTH as u64)) {
            None => DEFAULT_K,
            Some(Ok(k)) => k as usize,
            Some(Err(e)) => return Some(Err(e)),
        };
        Some(Ok(Mode::new(IpsMode { k })))
    }

    /// The IPSs of both, those of one sequence of steps adding their counts.
    fn merge(&self, a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode> {
        merge_segments(self, a, b)
    }

    /// The totals, and the most frequent IPSs (those through `function`, when given) with the
    /// source lines of their subpaths.
    fn report(&self, out: &mut dyn Write, p: &Profile, top: usize, function: Option<&str>) -> Result<Report> {
        report_segments(out, p, top, function)
    }
}

/// Refuses, for `mode`, whose segments follow up to `k` calls, interesting profiles whose segments
/// follow another number, or that have none.
pub(crate) fn check_interesting(mode: &Mode, k: usize, profiled: &ProfiledModule, inputs: &Inputs) -> Result<()> {
    let Some(interesting) = inputs.interesting else { return Ok(()) };
    profiled.check_same_core_module("the interesting segments' profile", interesting.core_module.as_ref())?;
    let calls = |k: usize| if k == 1 { "one call".to_string() } else { format!("up to {k} calls") };
    match &interesting.segments {
        Some(t) if t.k == k => Ok(()),
        Some(t) => bail!("--mode {mode} takes interesting segments of {}, not {}", calls(k), t.k),
        None => bail!("--mode {mode} takes ips profiles as --interesting (their segments are the interesting ones)"),
    }
}

/// The mode of the sum of two profiles of mode `kind` that count IPSs: those of one sequence of
/// steps add their counts.
pub(crate) fn merge_segments(kind: &dyn ModeKind, a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode> {
    let (x, y) = (facts(a)?, facts(b)?);
    if x.k != y.k {
        bail!("its segments follow up to {} calls, not {}", y.k, x.k);
    }
    let from =
        |r: &Option<ResidualSegments>| r.as_ref().map(|r| (r.interesting_from.clone(), r.chosen_by, r.interesting));
    if from(&x.residual) != from(&y.residual) {
        bail!("its interesting segments come from other profiles, or were chosen by another rule");
    }
    let mut counts: HashMap<Vec<IpsStep>, IpsCount> = HashMap::new();
    for s in x.ips.into_iter().chain(y.ips) {
        match counts.get_mut(&s.steps) {
            Some(c) => c.count = U64(sum(c.count.0, s.count.0, "the segments' counts")?),
            None => {
                counts.insert(s.steps.clone(), s);
            }
        }
    }
    let mut merged = IpsFacts {
        k: x.k,
        segments: U64(0),
        executions: U64(0),
        stream_items: U64(sum(x.stream_items.0, y.stream_items.0, "the stream items")?),
        stream_wait_seconds: x.stream_wait_seconds + y.stream_wait_seconds,
        mismatched: U64(sum(x.mismatched.0, y.mismatched.0, "the mismatched path ends")?),
        open_activations: U64(sum(x.open_activations.0, y.open_activations.0, "the open activations")?),
        residual: x.residual,
        not_counted: match (x.not_counted, y.not_counted) {
            (Some(a), Some(b)) => {
                let mut roots: HashMap<(u32, u64, u32), u64> = HashMap::new();
                for r in a.roots.into_iter().chain(b.roots) {
                    let c = roots.entry((r.function, r.path.0, r.part)).or_default();
                    *c = sum(*c, r.count.0, "a subpath's count")?;
                }
                NotCounted::from_roots(roots, sum(a.path_ends.0, b.path_ends.0, "the path ends not counted")?)?
            }
            (a, b) => a.or(b),
        },
        slots: SlotFacts::merge(x.slots, y.slots)?,
        ips: Vec::new(),
    };
    merged.set_segments(counts.into_values().collect())?;
    to_mode(kind, &merged)
}

/// The report of a profile that counts IPSs: the totals, and the most frequent IPSs (those through
/// `function`, when given) with the source lines of their subpaths.
pub(crate) fn report_segments(out: &mut dyn Write, p: &Profile, top: usize, function: Option<&str>) -> Result<Report> {
    let facts = facts(&p.mode)?;
    writeln!(
        out,
        "  {} interprocedural path segments of up to {} call{} ran, {} times{}{}",
        group(facts.segments.0),
        facts.k,
        if facts.k == 1 { "" } else { "s" },
        group(facts.executions.0),
        match facts.mismatched.0 {
            0 => String::new(),
            n if p.mode.name() == "ippp" => {
                format!("; {} path ends with a call that unwound (their segments not counted)", group(n))
            }
            n => format!("; {} path ends had calls the stream did not mark (not counted)", group(n)),
        },
        match facts.open_activations.0 {
            0 => String::new(),
            n => format!("; {} activations still open at the end (their segments unfinished)", group(n)),
        },
    )?;
    if let Some(n) = &facts.not_counted {
        writeln!(
            out,
            "  segments at some calls of {} function{} were not counted (their supergraph IDs would need more words of 64 bits than {}: {} in all, fewer in a function of more than {} calls): {} executions, rooted at {} path ends",
            n.functions.len(),
            if n.functions.len() == 1 { "" } else { "s" },
            if n.functions.len() == 1 { "it may have" } else { "they may have" },
            u32::from(MAX_HIGH_WORDS) + 1,
            MAX_WORD_CALLS / usize::from(MAX_HIGH_WORDS),
            group(n.executions.0),
            group(n.path_ends.0)
        )?;
    }
    if let Some(s) = &facts.slots {
        writeln!(
            out,
            "  {} function{} count{} {} interesting supergraph paths in {} slots (δ {:.3}): {} path ends ({:.1}%)",
            s.functions.len(),
            if s.functions.len() == 1 { "" } else { "s" },
            if s.functions.len() == 1 { "s" } else { "" },
            group(s.interesting.0),
            group(s.slots.0),
            s.slots.0 as f64 / s.interesting.0.max(1) as f64,
            group(s.path_ends.0),
            share(
                u128::from(s.path_ends.0),
                p.functions.iter().flat_map(|f| f.paths()).map(|c| u128::from(c.count.0)).sum()
            ),
        )?;
    }
    if let Some(r) = &facts.residual {
        writeln!(
            out,
            "  {} interesting segments (from {}: {}); {} residual segments ran, {} times (`report --untested`)",
            group(r.interesting.0),
            r.interesting_from.join(", "),
            r.chosen_by,
            group(r.segments.0),
            group(r.executions.0)
        )?;
    }
    let by_index: HashMap<u32, &FunctionProfile> = p.functions.iter().map(|f| (f.index, f)).collect();
    let name = |i: u32| by_index.get(&i).map_or_else(|| format!("func[{i}]"), |f| function_name(f));
    let through = |s: &IpsCount| {
        function.is_none_or(|want| s.steps.iter().any(|x| matches!(x, IpsStep::Sub(sub) if name(sub.function) == want)))
    };
    writeln!(out)?;
    for (rank, s) in facts.ips.iter().filter(|s| through(s)).take(top).enumerate() {
        writeln!(
            out,
            "#{:<3} {:>12}  {:5.1}%",
            rank + 1,
            group(s.count.0),
            share(u128::from(s.count.0), u128::from(facts.executions.0))
        )?;
        write_steps(out, p, &s.steps)?;
    }
    Ok(Report::Done)
}

/// Writes a segment's subpaths of `p`'s functions, one a line, indented by call depth, with their
/// blocks and source lines.
pub fn write_steps(out: &mut dyn Write, p: &Profile, steps: &[IpsStep]) -> Result<()> {
    let mut depth = 0usize;
    for step in steps {
        match step {
            IpsStep::Mark(Mark::Call) => depth += 1,
            IpsStep::Mark(Mark::Return) => depth = depth.saturating_sub(1),
            IpsStep::Sub(sub) => {
                let f = p.functions.iter().find(|f| f.index == sub.function);
                let lines = f.and_then(|f| source_lines(f, &sub.blocks));
                writeln!(
                    out,
                    "      {:indent$}{} path {} part {}  blocks {}{}",
                    "",
                    f.map_or_else(|| format!("func[{}]", sub.function), function_name),
                    sub.path.0,
                    sub.part,
                    blocks(&sub.blocks),
                    lines.map_or_else(String::new, |l| format!("  {l}")),
                    indent = 2 * depth
                )?;
            }
        }
    }
    Ok(())
}

/// `3-7` for consecutive blocks, else `3,5,9`.
fn blocks(blocks: &[u32]) -> String {
    match blocks {
        [] => "-".into(),
        [one] => one.to_string(),
        [first, .., last] if blocks.windows(2).all(|w| w[1] == w[0] + 1) => format!("{first}-{last}"),
        _ => blocks.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
    }
}

impl ProfilingMode for IpsMode {
    fn kind(&self) -> &'static dyn ModeKind {
        &Ips
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.k {
            DEFAULT_K => f.write_str("ips"),
            k => write!(f, "ips:{k}"),
        }
    }

    fn accepts(&self, setting: Setting) -> bool {
        setting == Setting::Interesting
    }

    fn sink(&self) -> Option<SinkKind> {
        Some(SinkKind::Segments)
    }

    /// With `--interesting`, the profiles must be `ips` profiles of the same depth.
    fn instrument(&self, _: &mut InstrumentOptions, profiled: &ProfiledModule, inputs: &Inputs) -> Result<()> {
        check_interesting(&Mode::new(*self), self.k, profiled, inputs)
    }

    /// The segments are counted on a thread of their own, which a snapshot would have to wait for:
    /// an `ips` run takes none.
    fn run(
        &self,
        engine: &Engine,
        program: &Program,
        map: Option<&ProfileMap>,
        config: &RunConfig,
        _: Option<&SnapshotSink>,
    ) -> Result<ModeRun> {
        let map = instrumented(map)?;
        let collector = StreamCollector::with_consumer(map, SegmentConsumer::new(map, self.k))?;
        let (outcome, segmented) = pathprof_runtime::run_module(engine, program, Some(map), collector, config)?;
        Ok(segmented_run(outcome, segmented))
    }

    fn replay(&self, map: &ProfileMap, recorded: Recorded) -> Result<ModeRun> {
        let collector = StreamCollector::with_consumer(map, SegmentConsumer::new(map, self.k))?;
        let (outcome, segmented) = pathprof_runtime::replay(collector, map, recorded)?;
        Ok(segmented_run(outcome, segmented))
    }

    fn profile_mode(
        &self,
        run: &ModeRun,
        _: &[FunctionProfile],
        map: Option<&ProfileMap>,
        given: &Given,
    ) -> Result<ProfileMode> {
        let segmented = run.facts::<Segmented>()?;
        let facts = segment_facts(
            &segmented.segments,
            segmented.stream_items,
            segmented.waited.as_secs_f64(),
            instrumented(map)?,
            given,
        )?;
        to_mode(self.kind(), &facts)
    }

    mode_identity!();
}

impl fmt::Display for IpsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f)
    }
}

/// The facts of a profile that counts the IPSs `s` of a module instrumented as `map`, given
/// `given`, from a run that streamed `stream_items` and waited `waited` seconds for the fold.
pub(crate) fn segment_facts(
    s: &Segments,
    stream_items: u64,
    waited: f64,
    map: &ProfileMap,
    given: &Given,
) -> Result<IpsFacts> {
    let mut parts = Parts::new(map);
    let tested = given.tested_segments.as_deref();
    let mut ips = Vec::with_capacity(s.segments.len());
    for (steps, &count) in &s.segments {
        let untested_path = tested.is_some_and(|t| {
                steps.iter().any(|x| matches!(x, Step::Sub { label, .. } if !t.paths.contains(&((label >> 32) as u32, label & 0xffff_ffff))))
            });
        let steps = steps.iter().map(|&step| parts.step(step)).collect::<Result<Vec<_>>>()?;
        let interesting = tested.map(|t| t.segments.contains(&steps));
        let untested_path = untested_path && interesting == Some(false);
        ips.push(IpsCount { count: U64(count), steps, interesting, untested_path });
    }
    if s.saturated {
        bail!("a segment ran 2^64 times or more: its count cannot be written exactly");
    }
    let mut facts = IpsFacts {
        k: s.k,
        segments: U64(0),
        executions: U64(0),
        stream_items: U64(stream_items),
        stream_wait_seconds: waited,
        mismatched: U64(s.mismatched + s.stray),
        open_activations: U64(s.open as u64),
        residual: tested.map(|t| ResidualSegments {
            interesting_from: given.interesting_from.clone(),
            chosen_by: given.interesting_chosen.map_or(InterestingRule::Executed, |c| c.0),
            interesting: U64(t.segments.len() as u64),
            chosen_share: t.share,
            segments: U64(0),
            executions: U64(0),
        }),
        not_counted: None,
        slots: None,
        ips: Vec::new(),
    };
    facts.set_segments(ips)?;
    Ok(facts)
}

/// What a run streamed, as a run of the mode.
fn segmented_run(outcome: RunOutcome, segmented: Segmented) -> ModeRun {
    let counts = segmented.counts.clone();
    let distinct = segmented.segments.segments.len() as u64;
    // The stream buffers of the host, and the segments' steps.
    let steps: usize = segmented.segments.segments.keys().map(Vec::len).sum();
    let host_bytes = 8 * u64::from(STREAM_CAPACITY) + (steps * std::mem::size_of::<Step>()) as u64;
    let figures = vec![RunFigure { key: "segments", label: "IPSs", value: distinct }];
    ModeRun { outcome, counts, facts: Box::new(segmented), host_bytes, figures }
}

/// The blocks of every part of the paths of a module's functions, found when first asked for.
struct Parts<'m> {
    map: &'m ProfileMap,
    known: HashMap<u64, Vec<Vec<u32>>>,
}

impl<'m> Parts<'m> {
    fn new(map: &'m ProfileMap) -> Parts<'m> {
        Parts { map, known: HashMap::new() }
    }

    fn step(&mut self, step: Step) -> Result<IpsStep> {
        let (label, part) = match step {
            Step::Call => return Ok(IpsStep::Mark(Mark::Call)),
            Step::Return => return Ok(IpsStep::Mark(Mark::Return)),
            Step::Sub { label, part } => (label, part),
        };
        let (function, path) = ((label >> 32) as u32, label & 0xffff_ffff);
        if !self.known.contains_key(&label) {
            let f = self.map.functions.iter().find(|f| f.index == function);
            let (f, probes) =
                f.and_then(|f| Some((f, f.probes()?))).context("a segment in a function without probes")?;
            let p = regen::regenerate(&probes.plan.dag, &probes.plan.numbering, path)?;
            let mut parts: Vec<Vec<u32>> = vec![Vec::new()];
            for &b in &p.blocks {
                parts.last_mut().expect("a part").push(b);
                for _ in 0..f.blocks.get(b as usize).map_or(0, |info| info.calls) {
                    parts.push(vec![b]);
                }
            }
            self.known.insert(label, parts);
        }
        let blocks = self.known[&label].get(part as usize).context("a segment's part beyond its path's calls")?.clone();
        Ok(IpsStep::Sub(Subpath { function, path: U64(path), part, blocks }))
    }
}
