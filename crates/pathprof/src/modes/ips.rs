//! Mode `ips`: interprocedural path segments [PPP07 §3.4.1–3.4.2]. Every function streams its
//! path ends as `kbl`'s do, with a marker before every call; a second thread cuts each path into
//! its subpaths (the stretches between its calls) and counts, exactly, every depth-`K` IPS that
//! ran: a subpath that ends at a call, followed into the callee and back, through at most `K`
//! calls, up to a loop header or the exit of the function it started in. The instrumenter's sink
//! is `stream` (with call markers); the runtime's collector is `stream` with the consumer
//! `segments`; the segments are `pathprof_core::ips`. The profile's paths are the exact Ball–Larus
//! counts; its `mode_facts` list the IPSs (docs/profile-format.md).

use super::mode::{instrumented, sum, Given, Mode, ModeKind, ModeRun, ProfilingMode, Report, RunFigure, SnapshotSink};
use super::setting::Setting;
use crate::inputs::Inputs;
use crate::mode_identity;
use crate::profiled::ProfiledModule;
use crate::render::{group, share};
use crate::view::{function_name, source_lines};
use anyhow::{bail, Context, Result};
use pathprof_core::ips::{Step, MAX_DEPTH};
use pathprof_core::profile::{Extension, FunctionProfile, InterestingRule, PathCount, Profile, ProfileMode, U64};
use pathprof_core::regen;
use pathprof_runtime::{Engine, Program, Recorded, RunConfig, RunOutcome, SegmentConsumer, Segmented, StreamCollector};
use pathprof_wasm::abi::STREAM_CAPACITY;
use pathprof_wasm::{InstrumentOptions, ProfileMap, SinkKind};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
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
        let is_ips = |p: &Profile| matches!(&p.mode, ProfileMode::Extension(x) if x.name == Ips.name());
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

/// The facts of an `ips` profile.
/// The facts of an `ips` profile, checked to be what a run could have written.
pub fn facts(mode: &ProfileMode) -> Result<IpsFacts> {
    match mode {
        ProfileMode::Extension(x) if x.name == Ips.name() => {
            let facts: IpsFacts =
                serde_json::from_value(x.facts.clone()).context("the profile's interprocedural path segments")?;
            facts.check().context("the profile's interprocedural path segments")?;
            Ok(facts)
        }
        _ => bail!("it is not an ips profile"),
    }
}

fn to_mode(facts: &IpsFacts) -> Result<ProfileMode> {
    Ok(ProfileMode::Extension(Extension { name: Ips.name().into(), facts: serde_json::to_value(facts)? }))
}

impl ModeKind for Ips {
    fn name(&self) -> &'static str {
        "ips"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["ips[:K]"]
    }

    fn parse(&self, spec: &str, settings: Option<&str>) -> Option<Result<Mode>> {
        let k = match settings {
            None => DEFAULT_K,
            Some(k) => match k.parse::<usize>() {
                Ok(k) if (1..=MAX_DEPTH).contains(&k) => k,
                _ => {
                    return Some(Err(anyhow::anyhow!("mode {spec:?}: K must be a whole number from 1 to {MAX_DEPTH}")))
                }
            },
        };
        Some(Ok(Mode::new(IpsMode { k })))
    }

    /// The IPSs of both, those of one sequence of steps adding their counts.
    fn merge(&self, a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode> {
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
            ips: Vec::new(),
        };
        merged.set_segments(counts.into_values().collect())?;
        to_mode(&merged)
    }

    /// The totals, and the most frequent IPSs (those through `function`, when given) with the
    /// source lines of their subpaths.
    fn report(&self, out: &mut dyn Write, p: &Profile, top: usize, function: Option<&str>) -> Result<Report> {
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
                n => format!("; {} path ends had calls the stream did not mark (not counted)", group(n)),
            },
            match facts.open_activations.0 {
                0 => String::new(),
                n => format!("; {} activations still open at the end (their segments unfinished)", group(n)),
            },
        )?;
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
            function
                .is_none_or(|want| s.steps.iter().any(|x| matches!(x, IpsStep::Sub(sub) if name(sub.function) == want)))
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
        Ok(())
    }

    /// Takes `ips` as the profile's segments, most frequent first, and counts them.
    fn set_segments(&mut self, mut ips: Vec<IpsCount>) -> Result<()> {
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
        list,
    })
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
fn key(steps: &[IpsStep]) -> Vec<(u32, u64, u32)> {
    steps
        .iter()
        .map(|s| match s {
            IpsStep::Sub(x) => (x.function, x.path.0, x.part),
            IpsStep::Mark(Mark::Call) => (u32::MAX, 0, 0),
            IpsStep::Mark(Mark::Return) => (u32::MAX, 1, 0),
        })
        .collect()
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
        if let Some(interesting) = inputs.interesting {
            profiled.check_same_core_module("the interesting segments' profile", interesting.core_module)?;
            match &interesting.segments {
                Some(t) if t.k == self.k => {}
                Some(t) => bail!("--mode {self} takes interesting segments of up to {} calls, not {}", self.k, t.k),
                None => {
                    bail!("--mode {self} takes ips profiles as --interesting (their segments are the interesting ones)")
                }
            }
        }
        Ok(())
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
        let map = instrumented(map)?;
        let mut parts = Parts::new(map);
        let s = &segmented.segments;
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
            stream_items: U64(segmented.stream_items),
            stream_wait_seconds: segmented.waited.as_secs_f64(),
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
            ips: Vec::new(),
        };
        facts.set_segments(ips)?;
        to_mode(&facts)
    }

    mode_identity!();
}

impl fmt::Display for IpsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f)
    }
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
