//! Sessions: the planned calls made on fresh instances of the original and of every variant until a
//! call ends them, the outcomes and states compared call by call, the modes' counts compared with
//! `bl`'s, and path flow checked over all sessions.

use crate::bursts::check_bursts_out_of_fuel;
use crate::check::{plan_calls, Call, Mode, Variant};
use crate::gen::Rng;
use crate::host::{arm_sampling, instrumented_store, set_burst_flag, snapshot, Host, Side, Snapshot};
use crate::outcome::{compare_outcomes, compare_state, count_outcome, describe, outcome, Outcome};
use crate::segments::check_segments_out_of_fuel;
use crate::stats::Stats;
use crate::streams::{check_modes, check_out_of_fuel};
use crate::{FUEL, INSTRUMENTED_FUEL};
use pathprof_core::profile::{Endpoint, FunctionProfile};
use pathprof_wasm::map::RawCounts;
use pathprof_wasm::ProfileMap;
use std::collections::{BTreeMap, HashMap};
use wasmtime::{Engine, Linker, Module, Store, Trap, Val};

/// How one set of instances ended.
pub struct SessionEnd {
    /// The call new instances start with (`None`: no call is left).
    pub next: Option<usize>,
    /// `bl` counts before the call that ended the instances: whole paths only.
    pub whole: RawCounts,
    /// `bl` counts at the end (with the partial paths of a trap).
    pub all: RawCounts,
}

/// How the last call of a set of instances ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Every call returned.
    Completed,
    /// The original and every instrumented module trapped alike (not a stack overflow), at the same
    /// point of the program: the paths ended up to the trap compare.
    Trap,
    /// The original ran out of fuel, and so did `bl` and `pep`, each elsewhere: what they counted
    /// before the call compares, `pep`'s samples in the call are a prefix of `kbl`'s stream, and
    /// `kbl-burst`'s stream in the call and `kbl`'s are prefixes of one sequence.
    OutOfFuel,
    /// A stack overflow or another error: only what was counted before the call compares.
    Cut,
}

/// Makes the calls from `first` on fresh instances of the original and of every variant, until a
/// call ends them (the original runs out of fuel, or a call does not return normally); compares
/// outcomes and state call by call, and then the counts of the modes (see [`check_modes`] and
/// [`check_out_of_fuel`]). `kbl-burst`'s burst flag is set (`bursts`) or left clear after
/// instantiation.
#[allow(clippy::too_many_arguments)]
pub fn session(
    linker: &Linker<Host>,
    engine: &Engine,
    original: &Module,
    variants: &[Variant],
    calls: &[Call],
    first: usize,
    exact: bool,
    bursts: bool,
    stats: &mut Stats,
) -> Result<SessionEnd, String> {
    let mut sa = Store::new(engine, Host::default());
    sa.set_fuel(FUEL).unwrap();
    let ia = match linker.instantiate(&mut sa, original) {
        Ok(i) => i,
        Err(e) => {
            let (o, _) = outcome(Err(e));
            if let Outcome::Trap(Trap::OutOfFuel) = o {
                stats.out_of_fuel += 1;
            } else {
                for v in variants {
                    let mut sb = instrumented_store(engine, v);
                    let (ob, _) = outcome(linker.instantiate(&mut sb, &v.module).map(|_| Vec::new()));
                    compare_outcomes(&format!("[{}] instantiation", v.mode.name()), &o, &ob)?;
                }
                stats.instantiation_traps += u64::from(matches!(o, Outcome::Trap(_)));
                count_outcome(&o, stats);
            }
            // Every new set of instances would end the same way.
            return Ok(SessionEnd { next: None, whole: RawCounts::new(), all: RawCounts::new() });
        }
    };
    let mut a = Side { store: sa, instance: ia };
    let mut sides = Vec::with_capacity(variants.len());
    for v in variants {
        let mode = v.mode.name();
        let mut store = instrumented_store(engine, v);
        let instance = linker
            .instantiate(&mut store, &v.module)
            .map_err(|e| format!("[{mode}] the original instantiates but the instrumented module fails: {e:#}"))?;
        let mut b = Side { store, instance };
        if matches!(v.mode, Mode::Sampled | Mode::SampleBuffer) {
            arm_sampling(&v.map, &mut b).map_err(|e| format!("[{mode}] {e}"))?;
        }
        if v.mode == Mode::Bursts {
            set_burst_flag(&v.map, &mut b, bursts).map_err(|e| format!("[{mode}] {e}"))?;
        }
        compare_state(original, &mut a, &mut b).map_err(|e| format!("[{mode}] after instantiation: {e}"))?;
        sides.push(b);
    }
    let snapshots = |sides: &mut [Side]| -> Result<Vec<Snapshot>, String> {
        variants
            .iter()
            .zip(sides)
            .map(|(v, s)| snapshot(&v.map, s).map_err(|e| format!("[{}] {e}", v.mode.name())))
            .collect()
    };
    let instantiated = snapshots(&mut sides)?;
    let mut before = Vec::new();
    let mut frames = vec![None; variants.len()];
    let mut next = None;
    let mut stop = Stop::Completed;
    for (k, call) in calls.iter().enumerate().skip(first) {
        before = snapshots(&mut sides)?;
        let name = &call.name;
        let fa = a.instance.get_func(&mut a.store, name).unwrap();
        a.store.set_fuel(FUEL).unwrap();
        let mut ra = vec![Val::I32(0); call.results];
        let (oa, _) = outcome(fa.call(&mut a.store, &call.params, &mut ra).map(|()| ra));
        let out_of_fuel = matches!(oa, Outcome::Trap(Trap::OutOfFuel));
        for (i, (v, b)) in variants.iter().zip(&mut sides).enumerate() {
            let what = format!("[{}] call {name:?}{:?}", v.mode.name(), call.params);
            let fb = b
                .instance
                .get_func(&mut b.store, name)
                .ok_or_else(|| format!("{what}: the function is not exported"))?;
            // Probes only add instructions, so with the same fuel the instrumented call must run out
            // too; with more, it must end as the original did. `kbl` and `ips` always get more, so that
            // `kbl` runs at least as far as the original and `pep` (see `check_out_of_fuel`).
            let fuel = if out_of_fuel && !v.mode.streams() { FUEL } else { INSTRUMENTED_FUEL };
            b.store.set_fuel(fuel).unwrap();
            let mut rb = vec![Val::I32(0); call.results];
            let (ob, f) = outcome(fb.call(&mut b.store, &call.params, &mut rb).map(|()| rb));
            frames[i] = f;
            if out_of_fuel && v.mode.streams() {
                // It may return or trap where the original ran out of fuel; `kbl`'s path ends are
                // compared with the samples of `pep` by `check_out_of_fuel`. Only a failing host (the
                // flush import) or an uncaught exception ends it otherwise.
                if exact && matches!(ob, Outcome::Other(_)) {
                    return Err(format!(
                        "{what}: the original runs out of fuel, `{}` ends with {}",
                        v.mode.name(),
                        describe(&ob)
                    ));
                }
            } else if out_of_fuel {
                if !matches!(ob, Outcome::Trap(Trap::OutOfFuel)) {
                    return Err(format!(
                        "{what}: the original runs out of fuel, the instrumented module ends with {}",
                        describe(&ob)
                    ));
                }
            } else if compare_outcomes(&what, &oa, &ob)? {
                compare_state(original, &mut a, b).map_err(|e| format!("after {what}: {e}"))?;
            }
        }
        if out_of_fuel {
            stats.out_of_fuel += 1;
        } else {
            stats.calls_compared += 1;
            count_outcome(&oa, stats);
        }
        if !matches!(oa, Outcome::Values(_)) {
            next = Some(k + 1);
            stop = match oa {
                Outcome::Trap(Trap::OutOfFuel) => Stop::OutOfFuel,
                Outcome::Trap(t) if t != Trap::StackOverflow => Stop::Trap,
                _ => Stop::Cut,
            };
            break;
        }
    }
    let after = snapshots(&mut sides)?;
    let at = if matches!(stop, Stop::OutOfFuel | Stop::Cut) { &before } else { &after };
    check_modes(variants, &mut sides, at, &instantiated, stop, &frames, exact, stats)?;
    if stop == Stop::OutOfFuel && exact {
        check_out_of_fuel(variants, &sides, &before, &after, stats)?;
        check_segments_out_of_fuel(variants, &sides, &before, &after, stats)?;
    }
    if stop == Stop::OutOfFuel {
        check_bursts_out_of_fuel(variants, &sides, &before, &after, exact, stats)?;
    }
    let all = after.into_iter().next().expect("bl is a variant").counts;
    let whole = match (next, before.into_iter().next()) {
        (Some(_), Some(s)) => s.counts,
        _ => all.clone(),
    };
    Ok(SessionEnd { next, whole, all })
}

/// A path, decoded: function, start, end and blocks.
pub type PathKey = (u32, Endpoint, Endpoint, Vec<u32>);

/// Decodes `counts` with `map`, keeping the functions that `keep` accepts.
pub fn decode(
    map: &ProfileMap,
    counts: &RawCounts,
    keep: &dyn Fn(u32) -> bool,
) -> Result<BTreeMap<PathKey, u64>, String> {
    let mut out = BTreeMap::new();
    for p in map.function_profiles(counts).map_err(|e| format!("decoding the counters: {e}"))? {
        if !keep(p.index) {
            continue;
        }
        for path in p.paths() {
            *out.entry((p.index, path.start, path.end, path.blocks.clone())).or_default() += path.count.0;
        }
    }
    Ok(out)
}

/// Compares the decoded paths of `mode` with `bl`'s.
pub fn compare_paths(mode: &str, bl: &BTreeMap<PathKey, u64>, other: &BTreeMap<PathKey, u64>) -> Result<(), String> {
    let keys: std::collections::BTreeSet<&PathKey> = bl.keys().chain(other.keys()).collect();
    for key in keys {
        let (x, y) = (bl.get(key).copied().unwrap_or(0), other.get(key).copied().unwrap_or(0));
        if x != y {
            return Err(format!(
                "[{mode}] function {} path {:?} → {:?} over blocks {:?}: counted {y} times, {x} times in bl",
                key.0, key.1, key.2, key.3
            ));
        }
    }
    Ok(())
}

/// `counts - base`, by `(function, path ID)`; an error when a count went down.
pub fn subtract(counts: &RawCounts, base: &RawCounts) -> Result<RawCounts, String> {
    let mut flat: HashMap<(u32, u64), i128> = HashMap::new();
    for (sign, c) in [(1, counts), (-1, base)] {
        for (&f, list) in c {
            for &(id, n) in list {
                *flat.entry((f, id)).or_default() += sign * i128::from(n);
            }
        }
    }
    let mut out = RawCounts::new();
    for ((f, id), n) in flat {
        if n < 0 {
            return Err(format!("bl count of function {f} path {id} went down after instantiation"));
        }
        if n > 0 {
            out.entry(f).or_default().push((id, n as u64));
        }
    }
    Ok(out)
}

/// Adds up the counts of the same path.
pub fn merge_counts(counts: &mut RawCounts) {
    for list in counts.values_mut() {
        list.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(list.len());
        for &(id, c) in list.iter() {
            match merged.last_mut() {
                Some((last, n)) if *last == id => *n += c,
                _ => merged.push((id, c)),
            }
        }
        *list = merged;
    }
}

/// Runs the calls of `plan_calls` on sets of instances (see [`session`]; `kbl-burst`'s flag set in
/// most cases, clear in the others) and checks the `bl` counters: they decode, and their flow balances (`exact`) or at least does not go negative.
pub fn compare_runs(
    linker: &Linker<Host>,
    engine: &Engine,
    original: &Module,
    variants: &[Variant],
    exact: bool,
    rng: &mut Rng,
    stats: &mut Stats,
) -> Result<(), String> {
    let map = &variants[0].map;
    let calls = plan_calls(original, rng, stats);
    // Most cases run `kbl-burst` in one burst that never ends, the others in none.
    let bursts = rng.below(4) != 0;
    // Counts of every instance, and of every instance up to its first abnormal call.
    let mut all: RawCounts = HashMap::new();
    let mut whole: RawCounts = HashMap::new();
    let mut first = 0;
    loop {
        let end = session(linker, engine, original, variants, &calls, first, exact, bursts, stats)?;
        stats.sessions += 1;
        for (f, list) in end.all {
            all.entry(f).or_default().extend(list);
        }
        for (f, list) in end.whole {
            whole.entry(f).or_default().extend(list);
        }
        match end.next {
            Some(k) if k < calls.len() => first = k,
            _ => break,
        }
    }
    merge_counts(&mut all);
    merge_counts(&mut whole);
    let all_profiles = map.function_profiles(&all).map_err(|e| format!("decoding the counters: {e}"))?;
    check_flow(&all_profiles, false, stats)?;
    for p in &all_profiles {
        stats.paths_counted += p.paths().len() as u64;
        stats.header_paths += p.paths().iter().filter(|path| matches!(path.end, Endpoint::Block(_))).count() as u64;
    }
    let profiles = map.function_profiles(&whole).map_err(|e| format!("decoding the counters: {e}"))?;
    check_flow(&profiles, exact, stats)
}

/// Flow of counted paths. In every function, each invocation starts one path at the entry and
/// ends one at an exit or by an exception that leaves it; at each entry to a loop header or cut
/// block one path ends there and another starts; at a handler's landing, one starts for each path
/// that ends there and for each exception caught there. With `exact` (no call stopped in the
/// middle), the counts balance exactly; otherwise each unfinished invocation may leave one path
/// uncounted, so only the inequalities hold.
pub fn check_flow(profiles: &[FunctionProfile], exact: bool, stats: &mut Stats) -> Result<(), String> {
    for p in profiles.iter().filter(|p| p.is_instrumented()) {
        let mut ends: BTreeMap<u32, u64> = BTreeMap::new();
        let mut starts: BTreeMap<u32, u64> = BTreeMap::new();
        let (mut entries, mut exits, mut throws) = (0u64, 0u64, 0u64);
        for path in p.paths() {
            let c = path.count.0;
            match path.start {
                Endpoint::Entry => entries += c,
                Endpoint::Block(h) => *starts.entry(h).or_default() += c,
                Endpoint::Exit | Endpoint::Throw => return Err(format!("function {}: path starts at exit", p.index)),
            }
            match path.end {
                Endpoint::Exit => exits += c,
                Endpoint::Throw => throws += c,
                Endpoint::Block(h) => *ends.entry(h).or_default() += c,
                Endpoint::Entry => return Err(format!("function {}: path ends at entry", p.index)),
            }
        }
        let landing = |b: u32| p.blocks.iter().any(|x| x.id == b && x.landing);
        // Exceptions caught at each landing: the paths that start there beyond those that end there.
        let mut caught = 0u64;
        for (&b, &n) in &starts {
            let ended = ends.get(&b).copied().unwrap_or(0);
            if landing(b) && n >= ended {
                caught += n - ended;
            } else if exact && n != ended || !exact && n > ended {
                return Err(format!(
                    "function {}: paths ending at blocks {ends:?} vs starting there {starts:?}",
                    p.index
                ));
            }
        }
        if exact && (entries + caught != exits + throws || caught > throws) {
            return Err(format!(
                "function {}: {entries} paths start at the entry and {caught} after a catch, but {exits} end at an \
                 exit and {throws} by an exception",
                p.index
            ));
        }
        if entries < exits {
            return Err(format!("function {}: {entries} paths start at the entry but {exits} end at an exit", p.index));
        }
        if exact {
            stats.flow_paths += p.paths().len() as u64;
            stats.flow_functions += u64::from(!p.paths().is_empty());
            stats.flow_blocks += ends.len() as u64;
        }
        stats.flow_throws += throws;
    }
    Ok(())
}
