//! Preferential and residual path profiling [PPP07 §3.3–3.5] on the programs of ../shared/corpus
//! whose paths are the same in every run:
//!
//! * with the program's own `bl` paths as the interesting ones, `ppp` gives exactly the `bl` counts,
//!   every path interesting, and no residual path;
//! * with every other path of each function left out of the interesting ones, the residual paths
//!   are exactly those left out, with their exact counts, and the others stay interesting — with
//!   slots where Ball–Larus counting would hash (`ppp`) and wherever a function has residual paths
//!   (`ppp:slots`);
//! * the instrumented programs print exactly what they should.
//!
//! Skipped, with a message, when the corpus is absent.

mod common;

use common::{corpus_dir, profile_checked, DETERMINISTIC};
use pathprof::{Inputs, Interesting};
use pathprof_core::profile::{CounterKind, FunctionProfile, PathCount, Profile};
use std::collections::BTreeMap;

/// `(function, path ID) → (count, interesting)` of every path that ran.
fn paths(p: &Profile) -> BTreeMap<(u32, u64), (u64, Option<bool>)> {
    p.functions
        .iter()
        .flat_map(|f| f.paths().iter().map(move |x| ((f.index, x.id.0), (x.count.0, x.interesting))))
        .collect()
}

/// `functions` with every other executed path of each function (by ID) left out.
fn halved(functions: &[FunctionProfile]) -> (Vec<FunctionProfile>, Vec<(u32, u64)>) {
    let mut removed = Vec::new();
    let mut out = functions.to_vec();
    for f in &mut out {
        let index = f.index;
        let Some(profile) = f.profiled_mut() else { continue };
        let mut by_id: Vec<PathCount> = profile.paths.clone();
        by_id.sort_by_key(|p| p.id);
        profile.paths = by_id.iter().step_by(2).cloned().collect();
        removed.extend(by_id.iter().skip(1).step_by(2).map(|p| (index, p.id.0)));
    }
    (out, removed)
}

#[test]
fn residual_paths_are_exactly_the_uninteresting_ones() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let engine = pathprof_runtime::engine().unwrap();
    let mut slots_instead_of_hash = 0;
    for name in DETERMINISTIC {
        let wasm = dir.join(name);
        let bl = profile_checked(&engine, &wasm, name, "bl", &Inputs::default());
        let bl_paths: BTreeMap<(u32, u64), u64> = paths(&bl).into_iter().map(|(k, (c, _))| (k, c)).collect();

        let mut all = Interesting::default();
        all.add("bl", &bl.functions);
        let ppp =
            profile_checked(&engine, &wasm, name, "ppp", &Inputs { interesting: Some(&all), ..Inputs::default() });
        let got = paths(&ppp);
        assert_eq!(got.len(), bl_paths.len(), "{name}: the same paths ran");
        for (key, &count) in &bl_paths {
            assert_eq!(got.get(key), Some(&(count, Some(true))), "{name}: path {key:?}");
        }
        let info = ppp.mode.ppp().expect("a ppp profile");
        assert_eq!((info.residual_paths.0, info.residual_executions.0), (0, 0), "{name}");
        assert_eq!(info.interesting.0, bl_paths.len() as u64, "{name}");
        for (f, g) in ppp.functions.iter().zip(&bl.functions) {
            if g.profiled().is_some_and(|p| p.counters == CounterKind::Hash) && !g.paths().is_empty() {
                let counters = f.profiled().map(|p| p.counters);
                assert_eq!(counters, Some(CounterKind::Ppp), "{name}: {:?} needed a hash table in bl", f.name);
                slots_instead_of_hash += 1;
            }
        }

        let (half, removed) = halved(&bl.functions);
        let mut some = Interesting::default();
        some.add("half of bl", &half);
        for mode in ["ppp", "ppp:slots"] {
            let ppp =
                profile_checked(&engine, &wasm, name, mode, &Inputs { interesting: Some(&some), ..Inputs::default() });
            let got = paths(&ppp);
            assert_eq!(got.len(), bl_paths.len(), "{name}: the same paths ran");
            let mut residual = Vec::new();
            for (key, &count) in &bl_paths {
                let (c, interesting) = got[key];
                assert_eq!(c, count, "{name}: path {key:?} is counted exactly");
                assert_eq!(interesting, Some(!removed.contains(key)), "{name}: path {key:?}");
                if interesting == Some(false) {
                    residual.push((*key, count));
                }
            }
            residual.sort();
            let mut want: Vec<((u32, u64), u64)> = removed.iter().map(|k| (*k, bl_paths[k])).collect();
            want.sort();
            assert_eq!(residual, want, "{name}: the residual paths are the ones left out");
            let info = ppp.mode.ppp().expect("a ppp profile");
            assert_eq!(info.residual_paths.0, removed.len() as u64, "{name}");
            assert_eq!(info.residual_executions.0, want.iter().map(|(_, c)| c).sum::<u64>(), "{name}");
            if mode == "ppp:slots" {
                let slotted =
                    ppp.functions.iter().filter(|f| f.profiled().is_some_and(|p| p.counters == CounterKind::Ppp));
                eprintln!(
                    "{name}: {} paths, {} left out, {} residual executions, {} functions in slots",
                    bl_paths.len(),
                    removed.len(),
                    info.residual_executions.0,
                    slotted.count()
                );
            }
        }
    }
    eprintln!("{slots_instead_of_hash} functions hash-counted in bl counted their paths in slots");
}
