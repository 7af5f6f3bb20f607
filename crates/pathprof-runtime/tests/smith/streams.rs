//! The `pep` and `kbl` instances against the oracle, `bl`'s counts: samples, the sample buffer, and
//! the k-BLPP stream decoded item by item (activations, repeats, the 2-IPF that the runtime's
//! folder builds from it); what `ips`'s stream shares with it (see `segments`).

use crate::check::{Mode, Variant};
use crate::host::{stream_items, Side, Snapshot};
use crate::session::{compare_paths, decode, subtract, Stop};
use crate::stats::Stats;
use crate::{MAX_BACKTRACE, SAMPLE_SKIP, SAMPLE_SLOTS};
use pathprof_core::regen::{self, PathPoint};
use pathprof_wasm::abi::StreamItem;
use pathprof_wasm::map::{Counters, RawCounts, SinkLayout};
use pathprof_wasm::ProfileMap;
use std::collections::{BTreeMap, HashMap};

/// Whether `map` counts each function (by index) through the stream.
pub fn streamed(map: &ProfileMap) -> Vec<bool> {
    let mut out = vec![false; map.functions.last().map_or(0, |f| f.index as usize + 1)];
    for f in &map.functions {
        out[f.index as usize] = f.probes().is_some_and(|p| matches!(p.counters, Counters::Stream { .. }));
    }
    out
}

/// Compares what the `pep` and `kbl` instances counted with the oracle, `bl`'s counts, at the same
/// point `at` (snapshots of every variant, `bl` first; between calls, or at a trap): `pep` samples
/// every path end after instantiation (`instantiated`: the snapshots then); `kbl`'s stream must
/// decode (see [`decode_stream`]) to `bl`'s counts with its array counters (single-path functions,
/// singles of streamed ones), and its activations must agree with the stack (see
/// [`check_activations`]; `frames` are the backtraces of a trap, innermost first); `kbl-burst`'s
/// (see [`crate::bursts::check_bursts`]); `ips`'s stream likewise, and its IPSs (see
/// [`crate::segments::check_segments`]).
#[allow(clippy::too_many_arguments)]
pub fn check_modes(
    variants: &[Variant],
    sides: &mut [Side],
    at: &[Snapshot],
    instantiated: &[Snapshot],
    stop: Stop,
    frames: &[Option<Vec<u32>>],
    exact: bool,
    stats: &mut Stats,
) -> Result<(), String> {
    let bl = &variants[0].map;
    stats.mode_sessions += 1;
    stats.trap_sessions += u64::from(stop == Stop::Trap);
    for (i, v) in variants.iter().enumerate().skip(1) {
        let mode = v.mode.name();
        let both = |f: u32| {
            let probed = |m: &ProfileMap| m.functions.iter().any(|g| g.index == f && g.probes().is_some());
            probed(bl) && probed(&v.map)
        };
        let host = sides[i].store.data();
        match v.mode {
            Mode::Counts => unreachable!("bl is the first variant"),
            Mode::EventPaths | Mode::Decode | Mode::Direct => {
                crate::events::check_events(bl, v, &at[0].counts, &at[i], &both, stop, exact, stats)?
            }
            Mode::Ppp => {
                // Every path counted exactly, and marked interesting exactly when it was chosen.
                let expected = decode(bl, &at[0].counts, &both)?;
                let got = decode(&v.map, &at[i].counts, &both).map_err(|e| format!("[{mode}] {e}"))?;
                compare_paths(mode, &expected, &got)?;
                let profiles = v.map.function_profiles(&at[i].counts).map_err(|e| format!("[{mode}] {e}"))?;
                for f in profiles.iter().filter(|f| both(f.index)) {
                    for path in f.paths() {
                        let key = (f.index, path.start, path.end, path.blocks.clone());
                        if path.interesting != Some(v.chosen.contains(&key)) {
                            return Err(format!("[{mode}] path {key:?} is marked {:?}", path.interesting));
                        }
                        stats.ppp_residual += u64::from(path.interesting == Some(false));
                    }
                }
                stats.ppp_paths += got.len() as u64;
            }
            Mode::Sampled => {
                let mut counts = at[i].counts.clone();
                for &(f, id) in &host.sample().recorded()[..at[i].len] {
                    counts.entry(f).or_default().push((id, 1));
                }
                let expected = decode(bl, &subtract(&at[0].counts, &instantiated[0].counts)?, &both)?;
                let got = decode(&v.map, &counts, &both).map_err(|e| format!("[{mode}] {e}"))?;
                compare_paths(mode, &expected, &got)?;
                stats.sampled_paths += got.len() as u64;
                stats.sampled_ends += got.values().sum::<u64>();
            }
            Mode::SampleBuffer => {
                let pep = variants.iter().position(|v| v.mode == Mode::Sampled).expect("a pep variant");
                let ends = &sides[pep].store.data().sample().recorded()[..at[pep].len];
                let skipped = ends.len().min(SAMPLE_SKIP as usize);
                let taken = (ends.len() - skipped).min(SAMPLE_SLOTS as usize);
                // Functions with 64-bit path IDs hand their samples to the host, the others to the
                // buffer.
                let wide = |f: u32| {
                    v.map
                        .functions
                        .iter()
                        .find(|g| g.index == f)
                        .and_then(|g| g.probes())
                        .is_some_and(|p| p.register_bits == 64)
                };
                let taken_ends = &ends[skipped..skipped + taken];
                let to_host: Vec<(u32, u64)> = taken_ends.iter().copied().filter(|&(f, _)| wide(f)).collect();
                let expected: Vec<u64> =
                    taken_ends.iter().filter(|&&(f, _)| !wide(f)).map(|&(f, id)| u64::from(f) << 32 | id).collect();
                let passed = &host.sample().recorded()[..at[i].len];
                if passed != to_host {
                    return Err(format!(
                        "[{mode}] {} samples passed to the host, {} expected",
                        passed.len(),
                        to_host.len()
                    ));
                }
                stats.host_samples += to_host.len() as u64;
                if at[i].buffer != expected {
                    let k = at[i].buffer.iter().zip(&expected).position(|(x, y)| x != y);
                    return Err(format!(
                        "[{mode}] {} samples in the buffer, {} expected; first difference at {k:?}",
                        at[i].buffer.len(),
                        expected.len()
                    ));
                }
                let words = (at[i].flag, at[i].skip);
                let want = (u64::from(SAMPLE_SLOTS) - taken as u64, u64::from(SAMPLE_SKIP) - skipped as u64);
                if words != want {
                    return Err(format!("[{mode}] flag and skip {words:?}, expected {want:?}"));
                }
                stats.buffered_samples += taken as u64;
            }
            Mode::Stream => {
                stats.stream_flushes += host.drains();
                if at[i].full {
                    return Err(format!("[{mode}] the stream buffer is full, the flush import was not called"));
                }
                let items = stream_items(host, &at[i], 0, false);
                let tally =
                    decode_stream(&items, &streamed(&v.map), exact, false).map_err(|e| format!("[{mode}] {e}"))?;
                let compared =
                    compare_stream_counts(mode, bl, &at[0].counts, &v.map, &at[i].counts, &tally, &both, stop, exact)?;
                stats.stream_cut_blocks += compared.cut_blocks;
                stats.stream_paths += compared.paths;
                stats.stream_ends += compared.ends;
                stats.stream_items += items.len() as u64;
                stats.stream_runs += tally.runs;
                stats.stream_entries += tally.entries.values().sum::<u64>();
                check_activations(&v.map, &tally, items.last().copied(), stop, frames[i].as_deref(), exact, stats)
                    .map_err(|e| format!("[{mode}] {e}"))?;
                check_folder(&items, &tally).map_err(|e| format!("[{mode}] {e}"))?;
            }
            Mode::Bursts => crate::bursts::check_bursts(
                variants,
                sides,
                at,
                instantiated,
                i,
                &both,
                stop,
                frames[i].as_deref(),
                exact,
                stats,
            )
            .map_err(|e| format!("[{mode}] {e}"))?,
            Mode::Segments => {
                crate::segments::check_segments(
                    v,
                    &mut sides[i],
                    bl,
                    &at[0].counts,
                    &at[i],
                    &both,
                    stop,
                    frames[i].as_deref(),
                    exact,
                    stats,
                )
                .map_err(|e| format!("[{mode}] {e}"))?;
            }
        }
    }
    Ok(())
}

/// What [`compare_stream_counts`] compared: distinct paths, path ends, and blocks whose frequencies
/// were compared in functions cut further for the stream.
pub struct Compared {
    pub paths: u64,
    pub ends: u64,
    pub cut_blocks: u64,
}

/// Compares the counts of a stream instance of `map` (its array counters `arrays` and its stream's
/// path ends, `tally`) with `bl`'s at the same point (`bl_counts`), path by path, in the functions
/// both instrument (`both`): decoded with each map where the plans are `bl`'s; where the function
/// was cut further for 32-bit IDs, its paths run through the same blocks as often once every call
/// returned.
#[allow(clippy::too_many_arguments)]
pub fn compare_stream_counts(
    mode: &str,
    bl: &ProfileMap,
    bl_counts: &RawCounts,
    map: &ProfileMap,
    arrays: &RawCounts,
    tally: &StreamTally,
    both: &dyn Fn(u32) -> bool,
    stop: Stop,
    exact: bool,
) -> Result<Compared, String> {
    let mut counts = arrays.clone();
    for (&(f, id), &n) in tally.paths.iter().chain(&tally.counted) {
        counts.entry(f).or_default().push((id, n));
    }
    let same_plan = |f: u32| plan_of(bl, f) == plan_of(map, f);
    let same = |f: u32| both(f) && same_plan(f);
    let cut = |f: u32| both(f) && !same_plan(f);
    let expected = decode(bl, bl_counts, &same)?;
    let got = decode(map, &counts, &same).map_err(|e| format!("[{mode}] {e}"))?;
    compare_paths(mode, &expected, &got)?;
    let mut cut_blocks = 0;
    if stop == Stop::Completed && exact {
        let profiles = |m: &ProfileMap, c: &RawCounts| m.function_profiles(c).map_err(|e| format!("[{mode}] {e}"));
        let want = crate::events::block_frequencies(&profiles(bl, bl_counts)?, &cut);
        let have = crate::events::block_frequencies(&profiles(map, &counts)?, &cut);
        if want != have {
            return Err(format!("[{mode}] block frequencies of the functions cut for the stream differ from bl's"));
        }
        cut_blocks = want.len() as u64;
    }
    Ok(Compared { paths: got.len() as u64, ends: got.values().sum(), cut_blocks })
}

/// After a call that ran out of fuel (in a module without exception handling), checks that the path
/// ends `pep` sampled in the call and those `kbl` streamed are prefixes of the same sequence, the
/// program's: `pep` ran with the original's fuel, `kbl` with `INSTRUMENTED_FUEL`, enough to go at
/// least as far as the original (as every call that returns checks), so the samples of the
/// functions counted through the stream must be a prefix of the stream's path items (which must
/// decode, from no open activation).
pub fn check_out_of_fuel(
    variants: &[Variant],
    sides: &[Side],
    before: &[Snapshot],
    after: &[Snapshot],
    stats: &mut Stats,
) -> Result<(), String> {
    let pep = variants.iter().position(|v| v.mode == Mode::Sampled).expect("a pep variant");
    let kbl = variants.iter().position(|v| v.mode == Mode::Stream).expect("a kbl variant");
    let streamed = streamed(&variants[kbl].map);
    // A streamed function with singles counts an activation that ends one path (from its entry to
    // an exit) in its array, not in the stream: such samples have no item to match.
    let single = |f: u32, id: u64| {
        let g = variants[kbl].map.functions.iter().find(|g| g.index == f);
        g.and_then(|g| g.probes()).is_some_and(|p| {
            matches!(p.counters, Counters::Stream { singles: Some(_) })
                && regen::regenerate(&p.plan.dag, &p.plan.numbering, id).is_ok_and(|path| {
                    path.start == PathPoint::Boundary
                        && path.end != PathPoint::Block(0)
                        && !matches!(path.end, PathPoint::Block(_))
                })
        })
    };
    let samples = &sides[pep].store.data().sample().recorded()[before[pep].len..after[pep].len];
    let sampled = run_lengths(
        samples
            .iter()
            .filter(|&&(f, id)| streamed.get(f as usize).copied().unwrap_or(false) && !single(f, id))
            .map(|&key| (key, 1)),
    );
    let ends: u64 = sampled.iter().map(|x| x.1).sum();
    // The call's items (it starts with no activation open and no repetition pending), up to the one
    // that ends as many paths as `pep` sampled: the rest has nothing to compare with.
    let host = sides[kbl].store.data();
    let start = before[kbl].len + before[kbl].buffer.len() + usize::from(before[kbl].run > 0);
    let mut items = stream_items(host, &after[kbl], start, true);
    let mut seen = 0;
    if let Some(cut) = items.iter().position(|&item| {
        seen += match StreamItem::decode(item) {
            StreamItem::Enter { .. } | StreamItem::Call | StreamItem::Leave | StreamItem::Count { .. } => 0,
            StreamItem::Repeat(n) => n,
            StreamItem::Path { .. } | StreamItem::ExitPath { .. } => 1,
        };
        seen >= ends
    }) {
        items.truncate(cut + 1);
    }
    let tally = decode_stream(&items, &streamed, true, false).map_err(|e| format!("[kbl] in the call: {e}"))?;
    if !is_prefix(&sampled, &tally.sequence) {
        let at = sampled
            .iter()
            .zip(&tally.sequence)
            .position(|(x, y)| x != y)
            .unwrap_or(sampled.len().min(tally.sequence.len()));
        return Err(format!(
            "[kbl] the call's path ends differ from pep's samples at run {at}: (path, times) {:?} vs {:?}",
            tally.sequence.get(at),
            sampled.get(at)
        ));
    }
    check_folder(&items, &tally).map_err(|e| format!("[kbl] {e}"))?;
    stats.fuel_checks += 1;
    stats.fuel_ends += ends;
    stats.stream_items += items.len() as u64;
    stats.stream_runs += tally.runs;
    // The buffers the host drained while `kbl` streamed these items.
    let SinkLayout::Stream(layout) = variants[kbl].map.sink else { return Err("kbl without a stream".into()) };
    let capacity = layout.capacity as usize;
    let drained = host.recorded().len();
    stats.fuel_flushes += ((start + items.len()).min(drained) / capacity - start / capacity) as u64;
    Ok(())
}

/// A sequence of path ends with each repetition as one `(path, times)` pair.
pub fn run_lengths(ends: impl IntoIterator<Item = ((u32, u64), u64)>) -> Vec<((u32, u64), u64)> {
    let mut out: Vec<((u32, u64), u64)> = Vec::new();
    for (key, n) in ends {
        match out.last_mut() {
            Some((k, m)) if *k == key => *m += n,
            _ => out.push((key, n)),
        }
    }
    out
}

/// Whether the sequence `x` is a prefix of `y` (both by [`run_lengths`]).
pub fn is_prefix(x: &[((u32, u64), u64)], y: &[((u32, u64), u64)]) -> bool {
    let Some(((key, n), init)) = x.split_last() else { return true };
    init.len() < y.len() && init == &y[..init.len()] && y[init.len()].0 == *key && *n <= y[init.len()].1
}

/// A k-BLPP stream, decoded.
#[derive(Default)]
pub struct StreamTally {
    /// Path ends by `(function, path ID)`, with the repetitions of run items.
    pub paths: HashMap<(u32, u64), u64>,
    /// The path ends in order, by [`run_lengths`].
    pub sequence: Vec<((u32, u64), u64)>,
    /// Activations entered and exited, by function.
    pub entries: BTreeMap<u32, u64>,
    pub exits: BTreeMap<u32, u64>,
    /// The functions of the activations open at the end, outermost first (only with `exact`).
    pub open: Vec<u32>,
    pub runs: u64,
    /// Call markers (`ips`).
    pub calls: u64,
    /// Count items (bursts' tables), by `(function, path ID)`, with their repetitions.
    pub counted: HashMap<(u32, u64), u64>,
}

/// Decodes a stream ([`StreamItem`]s). Every item must name a function of `streamed`; call markers
/// are allowed only with `markers` (`ips`'s stream); a repeat item must follow a path item or
/// another repeat (entries and call markers are never repeated: each is written apart; a repeated
/// exit item ends as many nested activations); with `exact` (no exception unwound a frame without
/// its exit item), activations must nest: every path item belongs to the innermost open activation,
/// whose function an exit item must name.
pub fn decode_stream(items: &[u64], streamed: &[bool], exact: bool, markers: bool) -> Result<StreamTally, String> {
    let mut t = StreamTally::default();
    // The path item that a repeat item repeats, and whether it ends its activation.
    let mut repeated: Option<((u32, u64), bool)> = None;
    // The count item that a repeat item repeats.
    let mut repeated_count: Option<(u32, u64)> = None;
    let mut ends = Vec::new();
    let is_streamed = |f: u32| streamed.get(f as usize).copied().unwrap_or(false);
    for (i, &item) in items.iter().enumerate() {
        let decoded = StreamItem::decode(item);
        if let (StreamItem::Repeat(n), Some(key)) = (decoded, repeated_count) {
            *t.counted.entry(key).or_default() += n;
            continue;
        }
        repeated_count = None;
        let (label, exit) = match decoded {
            StreamItem::Count { label } => {
                let key = ((label >> 32) as u32, label & 0xffff_ffff);
                *t.counted.entry(key).or_default() += 1;
                (repeated, repeated_count) = (None, Some(key));
                continue;
            }
            StreamItem::Call if markers => {
                t.calls += 1;
                repeated = None;
                continue;
            }
            StreamItem::Call => return Err(format!("stream item {i}: a call marker, which kbl does not write")),
            StreamItem::Leave => return Err(format!("stream item {i}: a leave marker, which only bursts write")),
            StreamItem::Repeat(n) => {
                let Some((key, exit)) = repeated.filter(|_| n > 0) else {
                    return Err(format!(
                        "stream item {i} ({item:#x}): a repeat after {:#x}",
                        items[i.saturating_sub(1)]
                    ));
                };
                *t.paths.entry(key).or_default() += n;
                ends.push((key, n));
                t.runs += 1;
                if exit {
                    *t.exits.entry(key.0).or_default() += n;
                    for _ in 0..n {
                        if exact && t.open.pop() != Some(key.0) {
                            return Err(format!(
                                "stream item {i} ({item:#x}): repeats an exit of function {} out of its activation",
                                key.0
                            ));
                        }
                    }
                }
                continue;
            }
            StreamItem::Enter { function } => {
                if !is_streamed(function) || item & 0x3fff_ffff_0000_0000 != 0 {
                    return Err(format!("stream item {i} ({item:#x}): not a function counted through the stream"));
                }
                *t.entries.entry(function).or_default() += 1;
                if exact {
                    t.open.push(function);
                }
                repeated = None;
                continue;
            }
            StreamItem::Path { label } => (label, false),
            StreamItem::ExitPath { label } => (label, true),
        };
        let (f, id) = ((label >> 32) as u32, label & 0xffff_ffff);
        if !is_streamed(f) {
            return Err(format!("stream item {i} ({item:#x}): not a function counted through the stream"));
        }
        if exact && t.open.last() != Some(&f) {
            return Err(format!(
                "stream item {i} ({item:#x}): a path of function {f} in an activation of {:?}",
                t.open.last()
            ));
        }
        *t.paths.entry((f, id)).or_default() += 1;
        ends.push(((f, id), 1));
        if exit {
            *t.exits.entry(f).or_default() += 1;
            t.open.pop();
        }
        repeated = Some(((f, id), exit));
    }
    t.sequence = run_lengths(ends);
    Ok(t)
}

/// Activations of the stream: with `exact`, none is open between calls, and at a trap the open
/// ones are the stream-counted frames of the backtrace (`frames`, innermost first, function indices
/// of the instrumented module; not checked when it may have been cut at `MAX_BACKTRACE`), but for
/// frames of functions with singles that have not streamed a path yet (their entry marker comes
/// before the first), and the innermost when it trapped in a tail call after its exit item
/// (`last_item` of the stream); otherwise no function exits more often than it entered.
#[allow(clippy::too_many_arguments)]
pub fn check_activations(
    map: &ProfileMap,
    tally: &StreamTally,
    last_item: Option<u64>,
    stop: Stop,
    frames: Option<&[u32]>,
    exact: bool,
    stats: &mut Stats,
) -> Result<(), String> {
    if !exact {
        for (f, &n) in &tally.exits {
            let entered = tally.entries.get(f).copied().unwrap_or(0);
            if n > entered {
                return Err(format!("function {f} exits {n} times but entered {entered} times"));
            }
        }
        return Ok(());
    }
    if stop != Stop::Trap {
        if !tally.open.is_empty() {
            return Err(format!("activations of functions {:?} are open between calls", tally.open));
        }
        return Ok(());
    }
    let Some(frames) = frames else { return Err("a trap without a backtrace".into()) };
    if frames.len() >= MAX_BACKTRACE {
        stats.deep_traps += 1;
        return Ok(());
    }
    let counters = |f: u32| map.functions.iter().find(|g| g.index == f).and_then(|g| g.probes()).map(|p| p.counters);
    // Defined functions follow the profiler's import, when there is one.
    let shift = u32::from(map.sink.import().is_some());
    let first_defined = map.functions.first().map_or(0, |f| f.index) + shift;
    let on_stack: Vec<u32> = frames
        .iter()
        .rev()
        .filter(|&&i| i >= first_defined && matches!(counters(i - shift), Some(Counters::Stream { .. })))
        .map(|&i| i - shift)
        .collect();
    let mut open = tally.open.iter().peekable();
    for (k, &f) in on_stack.iter().enumerate() {
        if open.peek() == Some(&&f) {
            open.next();
            stats.open_activations += 1;
        } else if matches!(counters(f), Some(Counters::Stream { singles: Some(_) })) {
            stats.unentered_activations += 1;
        } else if k + 1 == on_stack.len()
            && last_item.is_some_and(|item| {
                matches!(StreamItem::decode(item), StreamItem::ExitPath { label } if label >> 32 == u64::from(f))
            })
        {
            // A tail call that traps (a bad table index, say) does so in its caller's frame, whose
            // exit item was appended just before: the last item of the stream.
            stats.tail_call_traps += 1;
        } else {
            return Err(format!(
                "at the trap, the stream leaves {:?} open, the backtrace has {on_stack:?}",
                tally.open
            ));
        }
    }
    if open.next().is_some() {
        return Err(format!("at the trap, the stream leaves {:?} open, the backtrace has {on_stack:?}", tally.open));
    }
    Ok(())
}

/// The roots of the 2-IPF that the runtime's [`pathprof_runtime::StreamFolder`] folds from `items`
/// are the path totals of the stream, and folding by shards of the trees on three threads
/// builds the 4-IPF that one thread builds.
pub fn check_folder(items: &[u64], tally: &StreamTally) -> Result<(), String> {
    let settings =
        |n| pathprof_runtime::ForestSettings { fold_threads: Some(n), ..pathprof_runtime::ForestSettings::k(4) };
    let fold = |n| pathprof_runtime::fold_stream(items, settings(n)).map_err(|e| e.to_string());
    let (one, three) = (fold(1)?, fold(3)?);
    if one.kipf != three.kipf || one.ksf.nodes != three.ksf.nodes {
        return Err(format!(
            "three threads fold another 4-IPF ({} nodes) than one ({})",
            three.ksf.nodes, one.ksf.nodes
        ));
    }
    let mut folder = pathprof_runtime::StreamFolder::new(pathprof_core::kpath::Activations::new(2));
    folder.fold(items);
    let roots: HashMap<u64, u64> =
        folder.activations.forest().to_kipf().roots.iter().map(|r| (r.path, r.count)).collect();
    let totals: HashMap<u64, u64> = tally.paths.iter().map(|(&(f, id), &n)| (u64::from(f) << 32 | id, n)).collect();
    if roots != totals {
        let differs =
            totals.iter().find(|(l, n)| roots.get(l) != Some(n)).map(|(l, n)| (*l, *n, roots.get(l).copied()));
        return Err(format!("the 2-IPF's roots differ from the stream's paths: (label, stream, root) {differs:?}"));
    }
    Ok(())
}

/// The plan of function `f` in `map`, when it is instrumented.
fn plan_of(map: &ProfileMap, f: u32) -> Option<&pathprof_core::FunctionPlan> {
    map.functions.iter().find(|g| g.index == f)?.probes().map(|p| &p.plan)
}
