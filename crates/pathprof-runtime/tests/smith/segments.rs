//! The `ips` instances: the stream with call markers, decoded as `kbl`'s is and compared with `bl`'s
//! counts, and the interprocedural path segments folded from it, checked against the paths they
//! start from and against the call sites of the original module.

use crate::check::{Mode, Variant};
use crate::host::{profiler_memory, stream_items, Side, Snapshot};
use crate::session::Stop;
use crate::stats::Stats;
use crate::streams::{
    check_activations, compare_stream_counts, decode_stream, is_prefix, run_lengths, streamed, StreamTally,
};
use pathprof_core::ips::{SegmentFolder, Segments, Step, MAX_DEPTH};
use pathprof_core::regen::{self, PathPoint};
use pathprof_runtime::{Collector, PathCallTable};
use pathprof_wasm::abi::StreamItem;
use pathprof_wasm::map::RawCounts;
use pathprof_wasm::ProfileMap;
use std::collections::{BTreeSet, HashMap};
use wasmparser::{Operator, Parser, Payload, TypeRef};

/// What a call operator may call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callee {
    /// `call f` and `return_call f`: only `f`.
    Func(u32),
    /// `call_indirect`, `call_ref` and their tail calls: any function.
    Any,
}

/// The calls of the original module, read with wasmparser, and the depth of the IPSs its `ips`
/// instances fold.
pub struct IpsSetup {
    /// The most calls an IPS follows.
    pub k: usize,
    /// Whether a function catches exceptions (`try_table`, or the legacy `try`): a caught exception
    /// loses the path it cut short, whose calls were marked, so that a later path end of the frame
    /// is mismatched.
    pub catches: bool,
    /// Function imports: the host functions have the indices below.
    imported: u32,
    /// By defined function (index minus `imported`): its calls and its tail calls.
    calls: Vec<Vec<Callee>>,
    tails: Vec<Vec<Callee>>,
    /// By function the `ips` map gives probes, by block: the callees of the block's calls, in order.
    blocks: HashMap<u32, Vec<Vec<Callee>>>,
}

impl IpsSetup {
    /// The setup of module `bytes`, whose `ips` map is `map`, for IPSs of depth `k`; checks that every
    /// block of the map has as many calls as the module's operators in its byte range.
    pub fn new(bytes: &[u8], map: &ProfileMap, k: usize) -> Result<IpsSetup, String> {
        let mut setup =
            IpsSetup { k, catches: false, imported: 0, calls: Vec::new(), tails: Vec::new(), blocks: HashMap::new() };
        // By defined function: the offset and callee of each call.
        let mut sites: Vec<Vec<(u64, Callee)>> = Vec::new();
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.map_err(|e| e.to_string())? {
                Payload::ImportSection(r) => {
                    for import in r.into_imports() {
                        let import = import.map_err(|e| e.to_string())?;
                        setup.imported += u32::from(matches!(import.ty, TypeRef::Func(_) | TypeRef::FuncExact(_)));
                    }
                }
                Payload::CodeSectionEntry(body) => {
                    let (mut calls, mut tails) = (Vec::new(), Vec::new());
                    let mut reader = body.get_operators_reader().map_err(|e| e.to_string())?;
                    while !reader.eof() {
                        let (op, offset) = reader.read_with_offset().map_err(|e| e.to_string())?;
                        match op {
                            Operator::Call { function_index } => {
                                calls.push((offset as u64, Callee::Func(function_index)))
                            }
                            Operator::CallIndirect { .. } | Operator::CallRef { .. } => {
                                calls.push((offset as u64, Callee::Any))
                            }
                            Operator::ReturnCall { function_index } => tails.push(Callee::Func(function_index)),
                            Operator::ReturnCallIndirect { .. } | Operator::ReturnCallRef { .. } => {
                                tails.push(Callee::Any)
                            }
                            Operator::TryTable { .. } | Operator::Try { .. } => setup.catches = true,
                            _ => {}
                        }
                    }
                    setup.calls.push(calls.iter().map(|c| c.1).collect());
                    setup.tails.push(tails);
                    sites.push(calls);
                }
                _ => {}
            }
        }
        for (f, _) in map.probed() {
            let defined = f.index.checked_sub(setup.imported).and_then(|d| sites.get(d as usize));
            let Some(sites) = defined else { return Err(format!("function {} has no body", f.index)) };
            let mut blocks = Vec::with_capacity(f.blocks.len());
            for b in &f.blocks {
                let inside: Vec<Callee> =
                    sites.iter().filter(|(at, _)| (b.offset..b.end).contains(at)).map(|c| c.1).collect();
                if inside.len() != b.calls as usize {
                    return Err(format!(
                        "function {} block {} ({:#x}..{:#x}) has {} calls in the map, {} in the module",
                        f.index,
                        b.id,
                        b.offset,
                        b.end,
                        b.calls,
                        inside.len()
                    ));
                }
                blocks.push(inside);
            }
            setup.blocks.insert(f.index, blocks);
        }
        Ok(setup)
    }

    /// What a call of `callee` may stream first: the functions whose activation may be the first
    /// entered after the call marker, whether that may be any function, and whether it may stream
    /// nothing. A function with probes streams first; a host function streams nothing; a function
    /// without probes may call (or tail-call) others, or nothing.
    fn reach(&self, callee: Callee) -> (BTreeSet<u32>, bool, bool) {
        let (mut first, mut silent) = (BTreeSet::new(), false);
        let mut todo = vec![callee];
        let mut seen = BTreeSet::new();
        while let Some(c) = todo.pop() {
            let Callee::Func(f) = c else { return (first, true, true) };
            if !seen.insert(f) {
                continue;
            }
            if self.blocks.contains_key(&f) {
                first.insert(f);
                continue;
            }
            silent = true;
            if let Some(d) = f.checked_sub(self.imported) {
                todo.extend(self.calls[d as usize].iter().chain(&self.tails[d as usize]));
            }
        }
        (first, false, silent)
    }
}

/// A path of the `ips` map, regenerated: where its calls are (block and index among the block's
/// calls, in order), and whether it ends at the function's exit.
struct PathCalls {
    sites: Vec<(u32, usize)>,
    exit: bool,
}

/// The paths of the `ips` map by label, regenerated when first asked for.
struct PathTable<'a> {
    map: &'a ProfileMap,
    known: HashMap<u64, Option<PathCalls>>,
}

impl PathTable<'_> {
    fn get(&mut self, label: u64) -> Result<&PathCalls, String> {
        let map = self.map;
        let found = self.known.entry(label).or_insert_with(|| {
            let f = map.functions.iter().find(|f| u64::from(f.index) == label >> 32)?;
            let p = f.probes()?;
            let path = regen::regenerate(&p.plan.dag, &p.plan.numbering, label & 0xffff_ffff).ok()?;
            let mut sites = Vec::new();
            for &b in &path.blocks {
                let calls = f.blocks.get(b as usize).map_or(0, |b| b.calls);
                sites.extend((0..calls as usize).map(|i| (b, i)));
            }
            Some(PathCalls { sites, exit: !matches!(path.end, PathPoint::Block(_)) })
        });
        found.as_ref().ok_or_else(|| format!("label {label:#x} is no path of the map"))
    }
}

/// Folds `items` into depth-`k` IPSs with a fresh [`SegmentFolder`], decoding each item with
/// [`StreamItem::decode`], and with the map's [`PathCallTable`] as the oracle of the paths' calls.
fn fold(items: &[u64], k: usize, map: &ProfileMap) -> Segments {
    let mut folder = SegmentFolder::new(k);
    let mut calls = PathCallTable::new(map);
    let mut last = None;
    for &item in items {
        let decoded = StreamItem::decode(item);
        match decoded {
            StreamItem::Enter { .. } => folder.enter(),
            StreamItem::Call => folder.call(),
            StreamItem::Leave => panic!("ips wrote a burst's leave marker"),
            StreamItem::Count { .. } => panic!("ips wrote a burst's count item"),
            StreamItem::Path { label } => folder.path(label, false, 1, &mut calls),
            StreamItem::ExitPath { label } => folder.path(label, true, 1, &mut calls),
            StreamItem::Repeat(n) => {
                match last {
                    Some(StreamItem::Path { label }) => folder.path(label, false, n, &mut calls),
                    Some(StreamItem::ExitPath { label }) => folder.path(label, true, n, &mut calls),
                    _ => {}
                }
                continue;
            }
        }
        last = Some(decoded);
    }
    folder.finish()
}

/// Checks what the `ips` instance `side` streamed up to snapshot `at` (see `check_modes`; `bl_counts`
/// are `bl`'s counts there, `both` the functions both maps give probes, `frames` the backtrace of a
/// trap): the stream decodes as `kbl`'s does, with call markers, and gives `bl`'s counts; its
/// activations agree with the stack; its IPSs pass [`check_folded`]; and when the snapshot is the
/// instance's last state, the collector's own consumer gives the same IPSs.
#[allow(clippy::too_many_arguments)]
pub fn check_segments(
    v: &Variant,
    side: &mut Side,
    bl: &ProfileMap,
    bl_counts: &RawCounts,
    at: &Snapshot,
    both: &dyn Fn(u32) -> bool,
    stop: Stop,
    frames: Option<&[u32]>,
    exact: bool,
    stats: &mut Stats,
) -> Result<(), String> {
    let setup = v.ips.as_ref().ok_or("an ips variant without its setup")?;
    let host = side.store.data();
    stats.segment_flushes += host.drains();
    if at.full {
        return Err("the stream buffer is full, the flush import was not called".into());
    }
    let items = stream_items(host, at, 0, false);
    let tally = decode_stream(&items, &streamed(&v.map), exact, true)?;
    let compared = compare_stream_counts("ips", bl, bl_counts, &v.map, &at.counts, &tally, both, stop, exact)?;
    stats.segment_paths += compared.paths;
    stats.segment_ends += compared.ends;
    stats.segment_cut_blocks += compared.cut_blocks;
    stats.segment_items += items.len() as u64;
    stats.segment_markers += tally.calls;
    check_activations(&v.map, &tally, items.last().copied(), stop, frames, exact, stats)?;

    let folded = check_folded(&items, &tally, setup, &v.map, exact, stats)?;

    // The collector's consumer folded the same items on its thread; its output is read once the
    // instance has stopped for good.
    if matches!(stop, Stop::Completed | Stop::Trap) {
        let (data, host) = profiler_memory(&v.map, side)?;
        let mut collector = host.segments.take().ok_or("no segment collector")?;
        let out = collector.finish(Some(data)).map_err(|e| format!("the collector fails: {e:#}"))?;
        if out.segments != folded {
            return Err(format!(
                "the collector's consumer counts {} segments, {} mismatched, {} stray, {} open; a fresh folder {}, \
                 {}, {}, {} (or other counts)",
                out.segments.segments.len(),
                out.segments.mismatched,
                out.segments.stray,
                out.segments.open,
                folded.segments.len(),
                folded.mismatched,
                folded.stray,
                folded.open
            ));
        }
        if out.stream_items != items.len() as u64 {
            return Err(format!(
                "the collector's consumer read {} items, the stream has {}",
                out.stream_items,
                items.len()
            ));
        }
        stats.segment_outputs += 1;
    }
    Ok(())
}

/// Folds `items` (a stream from no open activation, decoded as `tally`) with a fresh
/// [`SegmentFolder`] and checks the IPSs: the folder counts the stream's paths; with `exact` (the
/// stream nests, see [`decode_stream`]) every item has its activation and those left open are the
/// stream's, and when no function catches an exception, every path end has the calls the stream
/// marked; the IPSs start at every call of every path ([`check_roots`]) and follow the calls that
/// their call sites can make ([`check_steps`]).
fn check_folded(
    items: &[u64],
    tally: &StreamTally,
    setup: &IpsSetup,
    map: &ProfileMap,
    exact: bool,
    stats: &mut Stats,
) -> Result<Segments, String> {
    let folded = fold(items, setup.k, map);
    let labels: HashMap<u64, u64> = tally.paths.iter().map(|(&(f, id), &n)| (u64::from(f) << 32 | id, n)).collect();
    if folded.paths != labels {
        return Err("the folder's path counts differ from the stream's".into());
    }
    if folded.k != setup.k || folded.saturated {
        return Err(format!("the folder has depth {} (saturated: {})", folded.k, folded.saturated));
    }
    if exact && (folded.stray != 0 || folded.open != tally.open.len()) {
        return Err(format!(
            "the folder found {} stray items and leaves {} activations open, the stream {}",
            folded.stray,
            folded.open,
            tally.open.len()
        ));
    }
    let strict = exact && !setup.catches;
    if strict && folded.mismatched != 0 {
        return Err(format!("{} path ends have other calls than the stream marked", folded.mismatched));
    }
    stats.segment_mismatched += folded.mismatched;
    let mut paths = PathTable { map, known: HashMap::new() };
    check_roots(&folded, &mut paths, strict, stats)?;
    for (steps, &n) in &folded.segments {
        check_steps(steps, setup, &mut paths, stats).map_err(|e| format!("segment {steps:?} (run {n} times): {e}"))?;
    }
    stats.segments += folded.segments.len() as u64;
    stats.segment_executions += folded.segments.values().sum::<u64>();
    Ok(folded)
}

/// Each IPS starts with a part of a path that ends at a call (`Sub { label, part }` with `part`
/// below the path's calls), followed by that call; for every path that ran `n` times and every one
/// of its calls `j`, the IPSs starting with `Sub { label, part: j }` ran `n` times in all (`strict`:
/// no path end was left uncounted; otherwise at most `n`).
fn check_roots(folded: &Segments, paths: &mut PathTable, strict: bool, stats: &mut Stats) -> Result<(), String> {
    let mut roots: HashMap<(u64, u32), u64> = HashMap::new();
    for (steps, &n) in &folded.segments {
        let Some(&Step::Sub { label, part }) = steps.first() else {
            return Err(format!("segment {steps:?} does not start with a subpath"));
        };
        if steps.get(1) != Some(&Step::Call) {
            return Err(format!("segment {steps:?} does not follow a call after its first subpath"));
        }
        let calls = steps.iter().filter(|s| **s == Step::Call).count();
        if calls > folded.k {
            return Err(format!("segment {steps:?} follows {calls} calls, more than {}", folded.k));
        }
        *roots.entry((label, part)).or_default() += n;
    }
    for &(label, part) in roots.keys() {
        let calls = paths.get(label)?.sites.len();
        if part as usize >= calls || !folded.paths.contains_key(&label) {
            return Err(format!(
                "segments start at part {part} of path {label:#x}, which has {calls} calls and ran {:?} times",
                folded.paths.get(&label)
            ));
        }
    }
    for (&label, &n) in &folded.paths {
        let calls = paths.get(label)?.sites.len();
        for j in 0..calls as u32 {
            let started = roots.get(&(label, j)).copied().unwrap_or(0);
            if started != n && (strict || started > n) {
                return Err(format!("path {label:#x} ran {n} times, the segments starting at its call {j} {started}"));
            }
        }
        stats.segment_roots += u64::from(calls > 0);
    }
    Ok(())
}

/// One subpath of an IPS being walked: part `part` of path `label`.
struct Level {
    label: u64,
    part: u32,
}

/// The steps of one IPS follow the program: a call (`Step::Call`) ends the part of the path before
/// it, at the call of the module that the path's blocks put there, and is followed by the first
/// part of a path of a function that call can enter first, or (`Step::Return`) by nothing when it
/// can call a host function, a function without probes, or any function; a callee returns after
/// the last part of a path that ends at its exit, and the caller goes on with its next part; the
/// IPS ends after a subpath, once it followed `k` calls or at the end of a path (of a callee, one
/// that does not end at its exit).
fn check_steps(steps: &[Step], setup: &IpsSetup, paths: &mut PathTable, stats: &mut Stats) -> Result<(), String> {
    let mut levels: Vec<Level> = Vec::new();
    let mut used = 0;
    for (i, &step) in steps.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| steps[j]);
        match step {
            Step::Sub { label, part } => {
                if part as usize > paths.get(label)?.sites.len() {
                    return Err(format!("part {part} of path {label:#x}, which has fewer calls"));
                }
                match before {
                    None => levels.push(Level { label, part }),
                    Some(Step::Call) if part == 0 => levels.push(Level { label, part }),
                    Some(Step::Return) => match levels.last_mut() {
                        Some(top) if top.label == label && top.part + 1 == part => top.part = part,
                        _ => return Err(format!("step {i}: the caller goes on elsewhere")),
                    },
                    _ => return Err(format!("step {i}: a subpath after {before:?}")),
                }
            }
            Step::Call => {
                let Some(Step::Sub { label, part }) = before else {
                    return Err(format!("step {i}: a call after {before:?}"));
                };
                used += 1;
                let path = paths.get(label)?;
                let Some(&(block, k)) = path.sites.get(part as usize) else {
                    return Err(format!("step {i}: a call after the last part of path {label:#x}"));
                };
                let f = (label >> 32) as u32;
                let callee = setup.blocks.get(&f).and_then(|b| b.get(block as usize)).and_then(|c| c.get(k));
                let Some(&callee) = callee else {
                    return Err(format!("step {i}: function {f} block {block} has no call {k}"));
                };
                let (first, any, silent) = setup.reach(callee);
                match steps.get(i + 1) {
                    Some(&Step::Sub { label: g, .. }) if any || first.contains(&((g >> 32) as u32)) => {
                        stats.segment_callees += 1
                    }
                    Some(Step::Return) if silent => stats.segment_silent_calls += 1,
                    next => {
                        return Err(format!(
                            "step {i}: function {f} block {block} call {k} ({callee:?}) reaches {first:?} first \
                             (nothing: {silent}), followed by {next:?}"
                        ))
                    }
                }
            }
            Step::Return => match before {
                Some(Step::Call) => {}
                Some(Step::Sub { label, part }) if levels.len() >= 2 => {
                    let path = paths.get(label)?;
                    if !path.exit || part as usize != path.sites.len() {
                        return Err(format!("step {i}: a return after part {part} of path {label:#x}"));
                    }
                    levels.pop();
                }
                _ => return Err(format!("step {i}: a return after {before:?}")),
            },
        }
    }
    let Some(Step::Sub { label, part }) = steps.last().copied() else {
        return Err("the segment does not end with a subpath".into());
    };
    if used > setup.k {
        return Err(format!("{used} calls followed"));
    }
    if used < setup.k {
        let path = paths.get(label)?;
        let ended = part as usize == path.sites.len() && (levels.len() == 1 || !path.exit);
        if !ended {
            return Err(format!("the segment stops at part {part} of path {label:#x} after {used} calls"));
        }
    }
    Ok(())
}

/// After a call that ran out of fuel (in a module without exception handling), checks the `ips`
/// stream of the call as `check_out_of_fuel` checks `kbl`'s: `ips` ran with `INSTRUMENTED_FUEL`, so
/// the path ends `pep` sampled in the call (of the functions whose plans are the same in both) must
/// be a prefix of those the stream holds; the stream, up to the item that ends as many paths, must
/// decode from no open activation, and its IPSs pass [`check_folded`].
pub fn check_segments_out_of_fuel(
    variants: &[Variant],
    sides: &[Side],
    before: &[Snapshot],
    after: &[Snapshot],
    stats: &mut Stats,
) -> Result<(), String> {
    let pep = variants.iter().position(|v| v.mode == Mode::Sampled).expect("a pep variant");
    let ips = variants.iter().position(|v| v.mode == Mode::Segments).expect("an ips variant");
    let (pep_map, map) = (&variants[pep].map, &variants[ips].map);
    let setup = variants[ips].ips.as_ref().ok_or("an ips variant without its setup")?;
    let plan = |m: &'_ ProfileMap, f: u32| {
        m.functions.iter().find(|g| g.index == f).and_then(|g| g.probes()).map(|p| p.plan.clone())
    };
    let mut same_plans: HashMap<u32, bool> = HashMap::new();
    let mut same =
        |f: u32| *same_plans.entry(f).or_insert_with(|| plan(map, f).is_some() && plan(map, f) == plan(pep_map, f));
    let samples = &sides[pep].store.data().sample().recorded()[before[pep].len..after[pep].len];
    let sampled = run_lengths(samples.iter().filter(|&&(f, _)| same(f)).map(|&key| (key, 1)));
    let ends: u64 = sampled.iter().map(|x| x.1).sum();
    let host = sides[ips].store.data();
    let start = before[ips].len + before[ips].buffer.len() + usize::from(before[ips].run > 0);
    let mut items = stream_items(host, &after[ips], start, true);
    let mut seen = 0;
    if let Some(cut) = items.iter().position(|&item| {
        seen += match StreamItem::decode(item) {
            StreamItem::Path { label } | StreamItem::ExitPath { label } if same((label >> 32) as u32) => 1,
            _ => 0,
        };
        seen >= ends
    }) {
        items.truncate(cut + 1);
    }
    let tally = decode_stream(&items, &streamed(map), true, true).map_err(|e| format!("[ips] in the call: {e}"))?;
    let sequence: Vec<_> = tally.sequence.iter().copied().filter(|&((f, _), _)| same(f)).collect();
    if !is_prefix(&sampled, &run_lengths(sequence.iter().copied())) {
        return Err(format!(
            "[ips] the call's path ends ({} runs) are not those pep sampled ({} runs)",
            sequence.len(),
            sampled.len()
        ));
    }
    check_folded(&items, &tally, setup, map, true, stats).map_err(|e| format!("[ips] in the call: {e}"))?;
    stats.segment_fuel_checks += 1;
    stats.segment_items += items.len() as u64;
    stats.segment_markers += tally.calls;
    Ok(())
}

/// The depth of the IPSs the `ips` instances of module `bytes` fold: 1 to `MAX_DEPTH`, by module.
pub fn depth(bytes: &[u8]) -> usize {
    1 + bytes.len() % MAX_DEPTH
}
