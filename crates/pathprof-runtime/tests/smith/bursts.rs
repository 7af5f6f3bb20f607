//! Bursty k-BLPP (`kbl-burst`) against `kbl` and `bl`. The test opens no bursts of its own timer:
//! it sets the burst flag for a whole case after instantiation, or leaves it clear.
//!
//! * With the flag set, every activation of a function instrumented for bursts streams from its
//!   first path end at a loop header on, and never leaves the stream: its stream after
//!   instantiation is `kbl`'s, item for item (`kbl` defers the entry marker of a function with
//!   singles to the same path end, and counts in its singles array the activations that end no
//!   path before their exit, which do not stream here either).
//! * With the flag clear, only the functions too large for an array (streamed always) stream, and
//!   their activations agree with the stack as `kbl`'s do.
//!
//! Either way, the arrays (functions instrumented for bursts, and single-path ones) count `bl`'s
//! paths, and the stream the paths of the functions streamed always.

use crate::check::{Mode, Variant};
use crate::host::{stream_items, Side, Snapshot};
use crate::session::Stop;
use crate::stats::Stats;
use crate::streams::{check_activations, compare_stream_counts, decode_stream, streamed, StreamTally};
use pathprof_wasm::abi::StreamItem;
use pathprof_wasm::map::Counters;
use pathprof_wasm::ProfileMap;

/// Checks the map of `kbl-burst` against `kbl`'s: the same plans and path registers, a function
/// with singles in `kbl` instrumented for bursts, and the others counted as `kbl` counts them (in
/// an array when an activation ends one path, streamed always when the function's paths do not fit
/// an array).
pub fn check_burst_map(map: &ProfileMap, kbl: &ProfileMap) -> Result<(), String> {
    if map.sink != kbl.sink {
        return Err(format!("sink {:?}, kbl's {:?}", map.sink, kbl.sink));
    }
    for (f, g) in map.functions.iter().zip(&kbl.functions) {
        let (p, q) = match (f.probes(), g.probes()) {
            (Some(p), Some(q)) => (p, q),
            (None, None) => continue,
            _ => return Err(format!("function {} is instrumented in one of kbl-burst and kbl only", f.index)),
        };
        if p.plan != q.plan || p.register_bits != q.register_bits {
            return Err(format!("function {}: another plan or path register than kbl's", f.index));
        }
        match (p.counters, q.counters) {
            (Counters::Burst { .. }, Counters::Stream { singles: Some(_) })
            | (Counters::BurstTable { .. } | Counters::Stream { singles: None }, Counters::Stream { singles: None })
            | (Counters::Array { .. }, Counters::Array { .. }) => {}
            (c, d) => return Err(format!("function {}: counters {c:?}, kbl's {d:?}", f.index)),
        }
    }
    Ok(())
}

/// The counters of function `f` in `map`, when it is instrumented.
fn counters_of(map: &ProfileMap, f: u32) -> Option<Counters> {
    map.functions.iter().find(|g| g.index == f).and_then(|g| g.probes()).map(|p| p.counters)
}

/// The items of `items` but those of the functions `dropped` (their entries, path ends and count
/// items, and the repeat items after them), with equal path items in a row as one item and how many
/// times it ends a path (entries kept apart). The functions that count in a table stream their paths
/// during bursts as the others do, but a window opens at a path end where `kbl` enters them: without
/// them, a stream with the flag set is `kbl`'s, whose sequences the tables' are of.
fn without(items: &[u64], dropped: &dyn Fn(u32) -> bool) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut kept = false;
    for &item in items {
        let decoded = StreamItem::decode(item);
        let function = match decoded {
            StreamItem::Repeat(n) => {
                if let (true, Some(last)) = (kept, out.last_mut()) {
                    last.1 += n;
                }
                continue;
            }
            StreamItem::Enter { function } => Some(function),
            StreamItem::Path { label } | StreamItem::ExitPath { label } | StreamItem::Count { label } => {
                Some((label >> 32) as u32)
            }
            StreamItem::Call | StreamItem::Leave => None,
        };
        kept = !function.is_some_and(dropped);
        if !kept {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.0 == item && !matches!(decoded, StreamItem::Enter { .. }) => last.1 += 1,
            _ => out.push((item, 1)),
        }
    }
    out
}

/// The item where the stream of a snapshot `s` taken between calls goes on: the items drained and
/// buffered, and the repetitions pending (the next item appends them as one repeat item).
fn resumes_at(s: &Snapshot) -> usize {
    s.len + s.buffer.len() + usize::from(s.run > 0)
}

/// Checks the `kbl-burst` instance, variant `i`, at the same point `at` as the others (snapshots of
/// every variant, `bl` first; `instantiated`: the snapshots after instantiation, when the test set
/// the flag or left it clear): the flag is as the test left it, and the stream decodes, with no
/// leave marker; with the flag set, the items after instantiation are `kbl`'s; with it clear, every
/// item is one of a function streamed always and the activations agree with the stack (see
/// [`check_activations`]); and the arrays and the paths of the functions streamed always count
/// `bl`'s paths (see [`compare_stream_counts`]).
#[allow(clippy::too_many_arguments)]
pub fn check_bursts(
    variants: &[Variant],
    sides: &[Side],
    at: &[Snapshot],
    instantiated: &[Snapshot],
    i: usize,
    both: &dyn Fn(u32) -> bool,
    stop: Stop,
    frames: Option<&[u32]>,
    exact: bool,
    stats: &mut Stats,
) -> Result<(), String> {
    let v = &variants[i];
    let host = sides[i].store.data();
    if at[i].full {
        return Err("the stream buffer is full, the flush import was not called".into());
    }
    if at[i].flag != instantiated[i].flag {
        return Err(format!("the burst flag went from {} to {}", instantiated[i].flag, at[i].flag));
    }
    let bursts = at[i].flag != 0;
    let always = streamed(&v.map);
    let counters = |f: u32| counters_of(&v.map, f);
    let sampled = |f: u32| matches!(counters(f), Some(Counters::Burst { .. } | Counters::BurstTable { .. }));
    let tabled = |f: u32| matches!(counters(f), Some(Counters::BurstTable { .. }));
    let mut streaming = always.clone();
    if bursts {
        for f in &v.map.functions {
            streaming[f.index as usize] |= sampled(f.index);
        }
    }
    let items = stream_items(host, &at[i], 0, false);
    let tally = decode_stream(&items, &streaming, exact, false)?;
    if bursts {
        let kbl = variants.iter().position(|v| v.mode == Mode::Stream).expect("a kbl variant");
        let ours = stream_items(host, &at[i], resumes_at(&instantiated[i]), false);
        let theirs = stream_items(sides[kbl].store.data(), &at[kbl], resumes_at(&instantiated[kbl]), false);
        let (ours, theirs) = (without(&ours, &tabled), without(&theirs, &tabled));
        if ours != theirs {
            let k = ours.iter().zip(&theirs).position(|(x, y)| x != y).unwrap_or(ours.len().min(theirs.len()));
            let item = |s: &[(u64, u64)]| s.get(k).map(|&(x, n)| (StreamItem::decode(x), n));
            return Err(format!(
                "with the flag set, {} stream items after instantiation (runs as one), kbl {}; item {k}: {:?}, \
                 kbl's {:?}",
                ours.len(),
                theirs.len(),
                item(&ours),
                item(&theirs)
            ));
        }
        stats.burst_sessions += 1;
        stats.burst_items += ours.len() as u64;
    } else {
        check_activations(&v.map, &tally, items.last().copied(), stop, frames, exact, &mut Stats::default())?;
        stats.burst_quiet_sessions += 1;
        stats.burst_quiet_items += items.len() as u64;
    }
    // The stream's paths of the functions streamed always; the arrays count every other path.
    let paths = tally.paths.iter().filter(|(&(f, _), _)| always.get(f as usize).copied().unwrap_or(false));
    let tally = StreamTally {
        paths: paths.map(|(&key, &n)| (key, n)).collect(),
        counted: tally.counted.clone(),
        ..StreamTally::default()
    };
    stats.burst_counted_ends += tally.counted.values().sum::<u64>();
    let bl = &variants[0].map;
    let compared =
        compare_stream_counts("kbl-burst", bl, &at[0].counts, &v.map, &at[i].counts, &tally, both, stop, exact)
            .map_err(|e| e.trim_start_matches("[kbl-burst] ").to_string())?;
    stats.burst_paths += compared.paths;
    stats.burst_ends += compared.ends;
    stats.burst_array_ends +=
        at[i].counts.iter().filter(|(&f, _)| sampled(f)).flat_map(|(_, list)| list).map(|&(_, n)| n).sum::<u64>();
    Ok(())
}

/// After a call that ran out of fuel, in which `kbl-burst` and `kbl` both got `INSTRUMENTED_FUEL`
/// and stopped wherever their probes let them (or ended as the program does): with the flag set,
/// the items of one in the call are a prefix of the other's (but for the last, a repetition of no
/// more path ends than the other's); with it clear, they decode as items of the functions streamed
/// always, from no open activation (nesting with `exact`). `before` and `after` are the snapshots
/// of every variant before and after the call.
pub fn check_bursts_out_of_fuel(
    variants: &[Variant],
    sides: &[Side],
    before: &[Snapshot],
    after: &[Snapshot],
    exact: bool,
    stats: &mut Stats,
) -> Result<(), String> {
    let i = variants.iter().position(|v| v.mode == Mode::Bursts).expect("a kbl-burst variant");
    let kbl = variants.iter().position(|v| v.mode == Mode::Stream).expect("a kbl variant");
    let ours = stream_items(sides[i].store.data(), &after[i], resumes_at(&before[i]), true);
    if after[i].flag == 0 {
        decode_stream(&ours, &streamed(&variants[i].map), exact, false)
            .map_err(|e| format!("[kbl-burst] in the call: {e}"))?;
        stats.burst_quiet_items += ours.len() as u64;
        return Ok(());
    }
    let theirs = stream_items(sides[kbl].store.data(), &after[kbl], resumes_at(&before[kbl]), true);
    let tabled = |f: u32| matches!(counters_of(&variants[i].map, f), Some(Counters::BurstTable { .. }));
    let (ours, theirs) = (without(&ours, &tabled), without(&theirs, &tabled));
    let (short, long) = if ours.len() <= theirs.len() { (&ours, &theirs) } else { (&theirs, &ours) };
    if let Some(k) = short.iter().zip(long.iter()).position(|(x, y)| x != y) {
        let ((x, n), (y, m)) = (short[k], long[k]);
        let fewer = x == y && (n <= m || short.len() == long.len());
        if k + 1 != short.len() || !fewer {
            let item = |s: &[(u64, u64)]| s.get(k).map(|&(x, n)| (StreamItem::decode(x), n));
            return Err(format!(
                "[kbl-burst] in the call, with the flag set, {} stream items, kbl {}; item {k}: {:?}, kbl's {:?}",
                ours.len(),
                theirs.len(),
                item(&ours),
                item(&theirs)
            ));
        }
    }
    stats.burst_fuel_checks += 1;
    stats.burst_items += short.len() as u64;
    Ok(())
}
