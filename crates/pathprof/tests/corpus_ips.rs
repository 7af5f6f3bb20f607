//! Interprocedural path segments (`--mode ips`) on the real programs of ../shared/corpus: the
//! programs print exactly what they should; the Ball–Larus counts are those of a `bl` run (on the
//! programs whose paths are the same in every run); every path's calls were marked in the stream
//! as its blocks have them (no path end mismatched); every path with `c` calls roots exactly `c`
//! segments; no segment follows more than K calls; and the activations the stream leaves open are
//! the profiled frames of the backtrace at exit. Skipped, with a message, when the corpus is absent.

mod common;

use common::{check_segment_roots, corpus_dir, profile_checked, DETERMINISTIC, NONDETERMINISTIC};
use pathprof::modes::ips::{facts, IpsStep, Mark};
use pathprof::Inputs;
use pathprof_core::profile::Profile;
use std::collections::BTreeMap;

/// Path counts by function and path ID.
fn counts(p: &Profile) -> BTreeMap<(u32, u64), u64> {
    p.functions.iter().flat_map(|f| f.paths().iter().map(move |x| ((f.index, x.id.0), x.count.0))).collect()
}

fn check(p: &Profile, name: &str, k: usize) {
    let facts = facts(&p.mode).unwrap();
    assert_eq!(facts.k, k, "{name}");
    assert_eq!(facts.mismatched.0, 0, "{name}: path ends whose calls the stream did not mark");
    assert_eq!(facts.open_activations.0, p.open_activations_at_exit, "{name}: open activations");
    assert!(facts.segments.0 > 0, "{name}: some segment ran");
    check_segment_roots(p, &facts);
    for s in &facts.ips {
        let calls = s.steps.iter().filter(|x| **x == IpsStep::Mark(Mark::Call)).count();
        assert!((1..=k).contains(&calls), "{name}: a segment through {calls} calls");
    }
}

#[test]
fn segments_of_the_corpus() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let engine = pathprof_runtime::engine().unwrap();
    for name in DETERMINISTIC {
        let wasm = dir.join(name);
        let bl = profile_checked(&engine, &wasm, name, "bl", &Inputs::default());
        let ips = profile_checked(&engine, &wasm, name, "ips:2", &Inputs::default());
        check(&ips, name, 2);
        assert!(counts(&ips) == counts(&bl), "{name}: the Ball–Larus counts differ from bl's");
    }
    for name in NONDETERMINISTIC {
        let wasm = dir.join(name);
        let ips = profile_checked(&engine, &wasm, name, "ips:3", &Inputs::default());
        check(&ips, name, 3);
    }
}
