//! The event modes against the oracle, the events of `bl`'s paths: every path's count times the sum
//! of its blocks' event vectors [EVT23 §4.2]. Path counting with every merge cut, path decoding and
//! direct counting must each count those events, function by function; with every merge cut, every
//! block's frequency is the sum of the counts of the paths through it, as in `bl`.

use crate::check::{Mode, Variant};
use crate::host::Snapshot;
use crate::session::Stop;
use crate::stats::Stats;
use pathprof_core::events::totals;
use pathprof_core::profile::FunctionProfile;
use pathprof_wasm::map::{Counters, RawCounts};
use pathprof_wasm::ProfileMap;
use std::collections::BTreeMap;

/// The event totals of every function of `profiles` that `keep` accepts, its blocks' vectors taken
/// from `events` (the map of an event mode: the same functions and blocks).
fn event_totals(
    profiles: &[FunctionProfile],
    events: &ProfileMap,
    keep: &dyn Fn(u32) -> bool,
) -> BTreeMap<u32, Vec<u64>> {
    let width = events.events.len();
    let mut out = BTreeMap::new();
    for p in profiles.iter().filter(|p| keep(p.index)) {
        let Some(f) = events.functions.iter().find(|f| f.index == p.index) else { continue };
        let vectors: Vec<Vec<u64>> = f.blocks.iter().map(|b| b.events.clone()).collect();
        out.insert(p.index, totals(p.paths().iter().map(|x| (x.blocks.as_slice(), x.count.0)), &vectors, width));
    }
    out
}

/// How often each block of each function ran on the paths of `profiles`.
pub fn block_frequencies(profiles: &[FunctionProfile], keep: &dyn Fn(u32) -> bool) -> BTreeMap<(u32, u32), u64> {
    let mut out = BTreeMap::new();
    for p in profiles.iter().filter(|p| keep(p.index)) {
        for path in p.paths() {
            for &b in &path.blocks {
                *out.entry((p.index, b)).or_default() += path.count.0;
            }
        }
    }
    out
}

/// Compares the events the event variant `v` counted at snapshot `got` with those of `bl`'s paths
/// at `bl_at`. When a call stopped in the middle (a trap, an exception unwinding the frame), direct
/// counting also counts the events of the paths that never ended, and paths cut at every merge end
/// more often, so that some of them ended where `bl`'s did not: these must count as many events or
/// more, and exactly as many when every call returned.
#[allow(clippy::too_many_arguments)]
pub fn check_events(
    bl: &ProfileMap,
    v: &Variant,
    bl_at: &RawCounts,
    got: &Snapshot,
    both: &dyn Fn(u32) -> bool,
    stop: Stop,
    exact: bool,
    stats: &mut Stats,
) -> Result<(), String> {
    let mode = v.mode.name();
    let bl_profiles = bl.function_profiles(bl_at).map_err(|e| format!("decoding bl's counters: {e}"))?;
    let expected = event_totals(&bl_profiles, &v.map, both);
    let own = v.map.function_profiles(&got.counts).map_err(|e| format!("[{mode}] decoding its counters: {e}"))?;
    let mut counted = event_totals(&own, &v.map, both);
    for (f, p) in v.map.probed().filter(|(f, _)| both(f.index)) {
        if let Counters::Events { .. } = p.counters {
            let events = got.events.get(&f.index).cloned().unwrap_or_else(|| vec![0; v.map.events.len()]);
            counted.insert(f.index, events);
        }
    }
    let at_least = matches!(v.mode, Mode::Direct | Mode::EventPaths) && (stop == Stop::Trap || !exact);
    for (f, want) in &expected {
        let have = counted.get(f).ok_or_else(|| format!("[{mode}] function {f} has no events"))?;
        let fine = if at_least { have.iter().zip(want).all(|(h, w)| h >= w) } else { have == want };
        if !fine {
            return Err(format!(
                "[{mode}] function {f} counts events {have:?} ({:?}), bl's paths {want:?}{}",
                v.map.events,
                if at_least { " or fewer" } else { "" }
            ));
        }
        stats.event_functions += 1;
        stats.events_compared += want.iter().sum::<u64>();
    }
    if v.mode == Mode::EventPaths && !at_least {
        let want = block_frequencies(&bl_profiles, both);
        let have = block_frequencies(&own, both);
        if want != have {
            let k = want.iter().find(|(k, n)| have.get(k) != Some(n)).map(|(k, _)| *k);
            return Err(format!("[{mode}] block frequencies differ from bl's, first at (function, block) {k:?}"));
        }
        stats.merge_blocks += want.len() as u64;
    }
    stats.event_sessions += 1;
    Ok(())
}
