//! Mode `ippp[:K]`: interprocedural path segments of up to `K` calls counted as paths of
//! supergraphs [PPP07 §3.4.3–3.4.5]. Where `ips` streams every path end to a thread that pairs calls with
//! their callees, here each function counts, in an array or a table as `bl` counts its paths, its
//! *supergraph* path: its Ball–Larus path with, for each call on it, the first path of the
//! activation the call entered, which the callee hands back when it returns (the instrumenter's
//! sink `supergraph`; `pathprof_core::supergraph`). Every depth-1 IPS is counted exactly, the
//! same as `ips:1` counts it; the profile's paths are the exact Ball–Larus counts and its
//! `mode_facts` the IPSs, in `ips`'s form. For `K > 1` a callee hands back its head of depth
//! `K − 1`: its first path with its own calls' heads of depth `K − 2`, and so on down to the first
//! paths ([`pathprof_core::supergraph::HeadLevel`]); the decoder reads the tree of activations a
//! counted ID names and walks it as `ips:K` walks the stream ([`pathprof_core::ips::walk_tree`]),
//! so every depth-`K` IPS is counted exactly, as `ips:K` counts it. With interesting segments (`--interesting`, the `ips`
//! profiles of a test suite) the others are residual (`report --untested`), and the supergraph
//! paths whose segments are all interesting get compact preferential IDs [PPP07 §3.4.5 with §3.3]:
//! they count in slots in the functions whose supergraph paths the host would count (too many for
//! an array, and their table too large for the profiler's memory), or with `ippp[:K]:slots` in every
//! function, as `ppp` and `ppp:slots` count interesting paths. A segment of
//! more than one call names the heads of deeper depths its callees publish
//! ([`pathprof_core::supergraph::Taken`]); the interesting segments also decide which calls keep
//! their digits.

use super::bl::{replay_counted, run_counted};
use super::ips::{
    check_interesting, merge_segments, report_segments, segment_facts, to_mode, FunctionSlots, IpsStep, Mark,
    NotCounted, SlotFacts, TestedSegments,
};
use super::mode::{instrumented, sum, Given, Mode, ModeKind, ModeRun, ProfilingMode, Report, RunFigure, SnapshotSink};
use super::setting::{whole_number, Setting};
use crate::inputs::Inputs;
use crate::mode_identity;
use crate::profiled::ProfiledModule;
use anyhow::{bail, Context, Result};
use pathprof_core::ips::{depth_one, walk_tree, Callee, FirstPath, HeadTree, Segments, Step};
use pathprof_core::profile::{FunctionProfile, Profile, ProfileMode, U64};
use pathprof_core::regen::{self, PathPoint};
use pathprof_core::supergraph::{call_digits, CallDigit, Head, HeadSpace, Heads, InterestingPath, Taken};
use pathprof_runtime::{Counted, Engine, Program, Recorded, RunConfig};
use pathprof_wasm::map::{FunctionMap, RawCounts};
use pathprof_wasm::{InstrumentOptions, ProfileMap, SinkKind};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::io::Write;

/// Mode `ippp`'s kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ippp;

/// An `ippp` mode, of segments of up to `k` calls: with `slots_everywhere`, the
/// interesting supergraph paths of every function count in slots, not only those of functions whose
/// supergraph paths the host would count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpppMode {
    pub slots_everywhere: bool,
    pub k: usize,
}

impl ModeKind for Ippp {
    fn name(&self) -> &'static str {
        "ippp"
    }

    fn forms(&self) -> &'static [&'static str] {
        &["ippp[:K]", "ippp[:K]:slots"]
    }

    fn parse(&self, spec: &str, settings: Option<&str>) -> Option<Result<Mode>> {
        let (k, slots_everywhere) = match settings {
            Some("slots") => (None, true),
            Some(s) => match s.strip_suffix(":slots") {
                Some(k) => (Some(k), true),
                None => (Some(s), false),
            },
            None => (None, false),
        };
        let k = k.map_or(Ok(1), |k| whole_number(spec, "K", k, pathprof_core::ips::MAX_DEPTH as u64));
        Some(k.map(|k| Mode::new(IpppMode { slots_everywhere, k: k as usize })))
    }

    fn merge(&self, a: &ProfileMode, b: &ProfileMode) -> Result<ProfileMode> {
        merge_segments(self, a, b)
    }

    fn report(&self, out: &mut dyn Write, p: &Profile, top: usize, function: Option<&str>) -> Result<Report> {
        report_segments(out, p, top, function)
    }
}

impl ProfilingMode for IpppMode {
    fn kind(&self) -> &'static dyn ModeKind {
        &Ippp
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.slots_everywhere, self.k) {
            (true, 1) => f.write_str("ippp:slots"),
            (true, k) => write!(f, "ippp:{k}:slots"),
            (false, 1) => f.write_str("ippp"),
            (false, k) => write!(f, "ippp:{k}"),
        }
    }

    fn accepts(&self, setting: Setting) -> bool {
        setting == Setting::Interesting
    }

    /// Slots everywhere are for the interesting segments.
    fn requires(&self, setting: Setting) -> bool {
        self.slots_everywhere && setting == Setting::Interesting
    }

    fn sink(&self) -> Option<SinkKind> {
        Some(SinkKind::Supergraph { slots_everywhere: self.slots_everywhere, depth: self.k as u8 })
    }

    /// With `--interesting`, the profiles must count segments of `k` calls: the paths their
    /// segments start on, with the first paths of the callees they enter, are the interesting ones.
    fn instrument(&self, options: &mut InstrumentOptions, profiled: &ProfiledModule, inputs: &Inputs) -> Result<()> {
        if self.slots_everywhere && inputs.interesting.is_none() {
            bail!("--mode {self} needs --interesting PROFILE (ips:{} profiles whose segments are interesting)", self.k);
        }
        check_interesting(&Mode::new(*self), self.k, profiled, inputs)?;
        if let Some(tested) = inputs.interesting.and_then(|i| i.segments.as_ref()) {
            options.interesting_segments = interesting_paths(tested);
        }
        Ok(())
    }

    fn run(
        &self,
        engine: &Engine,
        program: &Program,
        map: Option<&ProfileMap>,
        config: &RunConfig,
        _: Option<&SnapshotSink>,
    ) -> Result<ModeRun> {
        let run = run_counted(engine, program, map, config, None, |c| Box::new(c))?;
        supergraph_run(instrumented(map)?, run, self.k)
    }

    fn replay(&self, map: &ProfileMap, recorded: Recorded) -> Result<ModeRun> {
        supergraph_run(map, replay_counted(map, recorded, |c| Box::new(c))?, self.k)
    }

    fn profile_mode(
        &self,
        run: &ModeRun,
        _: &[FunctionProfile],
        map: Option<&ProfileMap>,
        given: &Given,
    ) -> Result<ProfileMode> {
        let decoded = run.facts::<Decoded>()?;
        let map = instrumented(map)?;
        let mut facts = segment_facts(&decoded.segments, 0, 0.0, map, given)?;
        facts.not_counted = NotCounted::from_roots(decoded.roots.clone(), decoded.not_counted_ends)?;
        let slotted = map.functions.iter().filter_map(|f| {
            let s = f.probes()?.supergraph_slots.as_ref()?;
            let span = s.ids.last()? - s.ids.first()? + 1;
            let (interesting, slots) = (U64(s.ids.len() as u64), U64(u64::from(s.slots)));
            Some(FunctionSlots { function: f.index, interesting, slots, span: U64(span) })
        });
        facts.slots = SlotFacts::new(slotted.collect(), decoded.in_slots)?;
        to_mode(self.kind(), &facts)
    }

    mode_identity!();
}

impl fmt::Display for IpppMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f)
    }
}

/// The paths that the segments `tested` take, by function, with what their calls took there: each
/// of the chosen Ball–Larus paths, and at its call `j` what every interesting segment rooted there
/// took of the activation the call entered (its first path, and as deep as the segment went).
fn interesting_paths(tested: &TestedSegments) -> HashMap<u32, Vec<InterestingPath>> {
    let mut heads: HashMap<(u32, u64), Vec<BTreeSet<Taken>>> = tested.paths.iter().map(|&p| (p, Vec::new())).collect();
    for steps in &tested.segments {
        let [IpsStep::Sub(root), IpsStep::Mark(Mark::Call), ..] = steps.as_slice() else { continue };
        let Some(calls) = heads.get_mut(&(root.function, root.path.0)) else { continue };
        let core: Vec<Step> = steps.iter().map(core_step).collect();
        let Some(taken) = Taken::of_segment(&core) else { continue };
        let j = root.part as usize;
        if calls.len() <= j {
            calls.resize(j + 1, BTreeSet::new());
        }
        calls[j].insert(taken);
    }
    let mut out: HashMap<u32, Vec<InterestingPath>> = HashMap::new();
    for ((function, path), heads) in heads {
        out.entry(function).or_default().push(InterestingPath { path, heads });
    }
    for paths in out.values_mut() {
        paths.sort_unstable_by_key(|p| p.path);
    }
    out
}

/// A profile's step as the walks of `pathprof_core::ips` spell it.
fn core_step(step: &IpsStep) -> Step {
    match step {
        IpsStep::Sub(sub) => Step::Sub { label: u64::from(sub.function) << 32 | sub.path.0, part: sub.part },
        IpsStep::Mark(Mark::Call) => Step::Call,
        IpsStep::Mark(Mark::Return) => Step::Return,
    }
}

/// What a run's supergraph path counts hold besides the Ball–Larus path counts.
struct Decoded {
    segments: Segments,
    /// The path ends that rooted segments not counted (at calls dropped so that their function's
    /// supergraph IDs fit in their words), and how often each subpath ending at such a call ran, by
    /// `(function, path, part)`.
    not_counted_ends: u64,
    roots: HashMap<(u32, u64, u32), u64>,
    /// The path ends counted in the slots of interesting supergraph paths, read from the slots.
    in_slots: u64,
}

/// A run that counted supergraph paths of segments of `k` calls, as a run of the mode: the
/// Ball–Larus path counts and the IPSs they hold.
fn supergraph_run(map: &ProfileMap, run: ModeRun, k: usize) -> Result<ModeRun> {
    let probed = |f: u32| map.functions.iter().any(|m| m.index == f && m.probes().is_some());
    let open = run.outcome.open_frames.iter().filter(|&&f| probed(f)).count();
    let counted = run.facts::<Counted>()?;
    let (counts, mut decoded) = Decoder::new(map, k).decode(&run.counts, counted)?;
    decoded.segments.open = open;
    let figures = vec![RunFigure { key: "segments", label: "IPSs", value: decoded.segments.segments.len() as u64 }];
    Ok(ModeRun { counts, facts: Box::new(decoded), figures, ..run })
}

/// The IPSs a path roots, and the parts of it (the indices of its calls) at which the segments it
/// roots are not counted.
type Rooted = (Vec<Vec<Step>>, Vec<u32>);

/// A supergraph ID's key and high keys (none: all 0).
type Keys<'a> = (u64, &'a [u64]);

/// A counted supergraph ID, its high keys and its count.
type CountedId<'a> = (u64, &'a [u64], u64);

/// The calls on a path (their indices among the function's), their digits, and the path's end.
type CallsOn = (Vec<usize>, Vec<u64>, PathPoint);

/// Reads supergraph IDs back into Ball–Larus paths and the IPSs they root.
struct Decoder<'m> {
    map: &'m ProfileMap,
    k: usize,
    /// The head space of each depth, 0 to `k − 1`.
    spaces: Vec<HeadSpace>,
    by_index: HashMap<u32, &'m FunctionMap>,
    /// The first paths already read: whether each has no calls and is its activation's last
    /// (`None`: it cannot be told).
    returns: HashMap<u64, Option<bool>>,
    /// The heads already read, by function, head and depth (`None`: they name no activation).
    trees: HashMap<(u32, u64, usize), Option<HeadTree>>,
    /// By function with a supergraph: the index of each block's first call among its calls, and
    /// how many calls its blocks have ([`first_calls`]).
    first_calls: HashMap<u32, (Vec<usize>, usize)>,
}

/// The index of each block's first call among `f`'s calls (in operator order, as the blocks'
/// offsets are).
fn first_calls(f: &FunctionMap) -> (Vec<usize>, usize) {
    let mut by_offset: Vec<usize> = (0..f.blocks.len()).collect();
    by_offset.sort_by_key(|&b| f.blocks[b].offset);
    let mut first_call = vec![0; f.blocks.len()];
    let mut n = 0usize;
    for b in by_offset {
        first_call[b] = n;
        n += f.blocks[b].calls as usize;
    }
    (first_call, n)
}

impl<'m> Decoder<'m> {
    fn new(map: &'m ProfileMap, k: usize) -> Decoder<'m> {
        let with: Vec<_> = map.functions.iter().filter_map(|f| Some((f, f.probes()?.supergraph.as_ref()?))).collect();
        let spaces = (0..k)
            .map(|d| {
                HeadSpace::new(with.iter().filter_map(|(f, s)| {
                    let (offset, keys) = match d {
                        0 => (s.head_offset, 1),
                        d => s.levels.get(d - 1).map(|l| (l.offset, l.keys))?,
                    };
                    Some(Heads {
                        function: f.index,
                        offset,
                        entry_base: s.entry_base,
                        entry_paths: s.entry_paths,
                        keys,
                    })
                }))
            })
            .collect();
        let by_index = map.functions.iter().map(|f| (f.index, f)).collect();
        let first_calls = with.iter().map(|(f, _)| (f.index, first_calls(f))).collect();
        let (returns, trees) = (HashMap::new(), HashMap::new());
        Decoder { map, k, spaces, by_index, returns, trees, first_calls }
    }

    /// The Ball–Larus path counts and the IPSs of supergraph path counts `counts`, and of what
    /// `counted` has besides: the IDs of several words and the path ends counted in slots.
    fn decode(&mut self, counts: &RawCounts, counted: &Counted) -> Result<(RawCounts, Decoded)> {
        let in_slots = counted.in_slots.context("the path ends counted in slots pass 2^64")?;
        let mut out = Segments { k: self.k, ..Segments::default() };
        let (mut not_counted_ends, mut roots) = (0u64, HashMap::new());
        let mut paths = RawCounts::new();
        // Every counted ID by function: `(ID, high keys, count)`.
        let mut ids: HashMap<u32, Vec<CountedId>> = HashMap::new();
        for (&f, list) in counts {
            ids.entry(f).or_default().extend(list.iter().map(|&(id, count)| (id, &[][..], count)));
        }
        for (&f, list) in &counted.wide {
            for (keys, &count) in list {
                let (id, high) = keys.split_last().context("an ID of several words without its ID")?;
                ids.entry(f).or_default().push((*id, high, count));
            }
        }
        for f in &self.map.functions {
            let Some(list) = ids.get(&f.index) else { continue };
            let Some(sg) = f.probes().and_then(|p| p.supergraph.as_ref()) else {
                paths.insert(f.index, list.iter().map(|&(id, _, count)| (id, count)).collect());
                continue;
            };
            let (first_call, n) = self.first_calls[&f.index].clone();
            let deep = !sg.levels.is_empty();
            if sg.calls.len() != n
                || (deep && sg.depths.len() != n)
                || sg.levels.iter().any(|l| l.calls.len() != n || l.depths.len() != n)
            {
                bail!("the map of function {} has {} calls for its blocks' {n}", f.index, sg.calls.len());
            }
            let mut by_path: HashMap<u64, u64> = HashMap::new();
            for &(id, high, count) in list {
                let (path, key) = sg.split(id);
                let c = by_path.entry(path).or_default();
                *c = sum(*c, count, "a path's counts")?;
                let rooted = match self.k {
                    1 => self.segments(f, &first_call, path, (key, high))?,
                    _ => self.deep_segments(f, &first_call, path, (key, high))?,
                };
                match rooted {
                    Some((found, dropped)) => {
                        if !dropped.is_empty() {
                            not_counted_ends = sum(not_counted_ends, count, "the path ends not counted")?;
                        }
                        for part in dropped {
                            let c = roots.entry((f.index, path, part)).or_default();
                            *c = sum(*c, count, "a subpath's count")?;
                        }
                        for steps in found {
                            let c = out.segments.entry(steps).or_default();
                            *c = c.checked_add(count).unwrap_or_else(|| {
                                out.saturated = true;
                                u64::MAX
                            });
                        }
                    }
                    None => out.mismatched = sum(out.mismatched, count, "the mismatched path ends")?,
                }
            }
            for (&path, &count) in &by_path {
                out.paths.insert(u64::from(f.index) << 32 | path, count);
            }
            paths.insert(f.index, by_path.into_iter().collect());
        }
        Ok((paths, Decoded { segments: out, not_counted_ends, roots, in_slots }))
    }

    /// The IPSs that path `path` of `f` roots, its calls' digits in `keys` (the key and the high
    /// keys; each block's first call being `first_call[block]` among `f`'s), but those rooted at
    /// dropped calls, whose parts (the indices of the calls on the path) come second; `None` when
    /// the digits are not those of the path's calls.
    fn segments(&mut self, f: &FunctionMap, first_call: &[usize], path: u64, keys: Keys) -> Result<Option<Rooted>> {
        let p = f.probes().context("a supergraph path of a function without probes")?;
        let sg = p.supergraph.as_ref().context("a supergraph path of a function without a supergraph")?;
        let regenerated = regen::regenerate(&p.plan.dag, &p.plan.numbering, path)?;
        let calls: Vec<usize> = (regenerated.blocks.iter())
            .flat_map(|&b| first_call[b as usize]..first_call[b as usize] + f.blocks[b as usize].calls as usize)
            .collect();
        let Some(ds) = call_digits(keys.0, keys.1, &calls, &sg.calls) else { return Ok(None) };
        // A dropped call's head is not known: its segment is left out.
        let mut heads: Vec<FirstPath> = Vec::with_capacity(calls.len());
        let mut dropped = Vec::new();
        for (j, (&c, d)) in calls.iter().zip(ds).enumerate() {
            if sg.calls[c].dropped {
                dropped.push(j as u32);
                heads.push(None);
                continue;
            }
            heads.push(match self.spaces[0].read(sg.calls[c], d) {
                None => return Ok(None),
                Some(Head::None) => None,
                Some(Head::Path { function, path }) => match self.returns(function, path)? {
                    Some(returned) => Some((u64::from(function) << 32 | path, returned)),
                    None => return Ok(None),
                },
            });
        }
        let found = (depth_one(u64::from(f.index) << 32 | path, &heads).into_iter())
            .zip(&calls)
            .filter_map(|(steps, &c)| (!sg.calls[c].dropped).then_some(steps))
            .collect();
        Ok(Some((found, dropped)))
    }

    /// The calls (their indices among `f`'s) on path `path` of `f`, its end, and the digits `keys`
    /// (the key and the high keys) hold for them read as `calls` says; `None` when `keys` are not
    /// those of the path's calls.
    fn digits_on(
        f: &FunctionMap,
        first_call: &[usize],
        path: u64,
        keys: Keys,
        calls: &[CallDigit],
    ) -> Result<Option<CallsOn>> {
        let p = f.probes().context("a supergraph path of a function without probes")?;
        let regenerated = regen::regenerate(&p.plan.dag, &p.plan.numbering, path)?;
        let on: Vec<usize> = (regenerated.blocks.iter())
            .flat_map(|&b| first_call[b as usize]..first_call[b as usize] + f.blocks[b as usize].calls as usize)
            .collect();
        Ok(call_digits(keys.0, keys.1, &on, calls).map(|ds| (on, ds, regenerated.end)))
    }

    /// What the calls `on` of a function, read as `calls` with digits `ds`, each in the space of
    /// the depth `depth` gives it (none: it reads no head), entered; `None` when a digit names no
    /// activation.
    fn callees(
        &mut self,
        calls: &[CallDigit],
        on: &[usize],
        ds: &[u64],
        depth: impl Fn(usize) -> Option<usize>,
    ) -> Result<Option<Vec<Callee>>> {
        let mut out = Vec::with_capacity(on.len());
        for (&c, &digit) in on.iter().zip(ds) {
            let Some(d) = depth(c).filter(|&d| d < self.spaces.len() && !calls[c].dropped) else {
                out.push(Callee::Unknown);
                continue;
            };
            out.push(match self.spaces[d].read(calls[c], digit) {
                None => return Ok(None),
                Some(Head::None) => Callee::None,
                Some(Head::Path { function, path }) => match self.tree(function, path, d)? {
                    Some(tree) => Callee::Entered(Box::new(tree)),
                    None => return Ok(None),
                },
            });
        }
        Ok(Some(out))
    }

    /// The activation that head `head` of `function`, of depth `d`, names: its first path, whether
    /// that ended at the exit, and what its calls entered, as deep as a walk of `d` calls needs
    /// (`HeadLevel`); `None` when the head names none.
    fn tree(&mut self, function: u32, head: u64, d: usize) -> Result<Option<HeadTree>> {
        if let Some(t) = self.trees.get(&(function, head, d)) {
            return Ok(t.clone());
        }
        let f = *self.by_index.get(&function).context("a head of a function the map does not have")?;
        let sg =
            (f.probes().and_then(|p| p.supergraph.as_ref())).context("a head of a function without a supergraph")?;
        let tree = match self.spaces[d].of(function).and_then(|h| h.split(head)) {
            None => None,
            Some((path, key)) => {
                let first_call =
                    &self.first_calls.get(&function).context("a head of a function without a supergraph")?.0;
                let level = match d {
                    0 => None,
                    d => Some(sg.levels.get(d - 1).context("a head deeper than its function's levels")?),
                };
                let calls = level.map_or(&sg.calls, |l| &l.calls);
                match Self::digits_on(f, first_call, path, (key, &[]), calls)? {
                    None => None,
                    Some((on, ds, end)) => {
                        let exit = match end {
                            PathPoint::Boundary => Some(true),
                            PathPoint::Throw => (!f.blocks.iter().any(|b| b.landing)).then_some(true),
                            PathPoint::Block(_) => Some(false),
                        };
                        let label = u64::from(function) << 32 | path;
                        let callees = match d {
                            // A head of depth 0 tells nothing of its calls.
                            0 => Some(vec![Callee::Unknown; on.len()]),
                            _ => {
                                let depths = level.map_or(&[][..], |l| &l.depths[..]);
                                self.callees(calls, &on, &ds, |c| depths.get(c).copied().flatten().map(usize::from))?
                            }
                        };
                        callees.map(|calls| HeadTree { label, exit, calls })
                    }
                }
            }
        };
        self.trees.insert((function, head, d), tree.clone());
        Ok(tree)
    }

    /// The IPSs of up to `k > 1` calls that path `path` of `f` roots, its calls' digits `key`
    /// naming the heads of depth `k − 1` of the activations they entered; those that need a head
    /// not known (a call dropped at some depth, an end that cannot be told) are left out and their
    /// parts come second; `None` when the digits name no activations.
    fn deep_segments(
        &mut self,
        f: &FunctionMap,
        first_call: &[usize],
        path: u64,
        keys: Keys,
    ) -> Result<Option<Rooted>> {
        let p = f.probes().context("a supergraph path of a function without probes")?;
        let sg = p.supergraph.as_ref().context("a supergraph path of a function without a supergraph")?;
        let Some((on, ds, _)) = Self::digits_on(f, first_call, path, keys, &sg.calls)? else { return Ok(None) };
        // Each call's digit reads its head of depth `k − 1`, or the shallower one the map gives.
        let depth = |c: usize| sg.depths.get(c).copied().flatten().map(usize::from);
        let Some(callees) = self.callees(&sg.calls, &on, &ds, depth)? else { return Ok(None) };
        let label = u64::from(f.index) << 32 | path;
        let (mut found, mut dropped) = (Vec::new(), Vec::new());
        for (j, walked) in walk_tree(label, &callees, self.k).into_iter().enumerate() {
            match walked {
                Some(steps) => found.push(steps),
                None => dropped.push(j as u32),
            }
        }
        Ok(Some((found, dropped)))
    }

    /// Whether path `path` of `function`, the first of an activation, has no calls and is the
    /// activation's last. A path that ends at the function's exit is; one that ends by an exception
    /// is when nothing in the function catches it but its own label (or nothing: the caller then
    /// unwinds, and reads no head), and cannot be told when the function has landings (`None`).
    fn returns(&mut self, function: u32, path: u64) -> Result<Option<bool>> {
        let label = u64::from(function) << 32 | path;
        if let Some(&r) = self.returns.get(&label) {
            return Ok(r);
        }
        let f = self.by_index.get(&function).context("a head of a function the map does not have")?;
        let p = f.probes().context("a head of a function without probes")?;
        let q = regen::regenerate(&p.plan.dag, &p.plan.numbering, path)?;
        let calls: u32 = q.blocks.iter().map(|&b| f.blocks[b as usize].calls).sum();
        let r = match q.end {
            _ if calls > 0 => Some(false),
            PathPoint::Boundary => Some(true),
            PathPoint::Throw => (!f.blocks.iter().any(|b| b.landing)).then_some(true),
            PathPoint::Block(_) => Some(false),
        };
        self.returns.insert(label, r);
        Ok(r)
    }
}
