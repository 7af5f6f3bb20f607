//! Depth-1 interprocedural path segments counted as supergraph paths (`--mode ippp`) on the real
//! programs of ../shared/corpus, each run deterministically: the programs print exactly what they
//! should; the segments are those `ips:1` counts from its stream, but for those rooted at the
//! subpaths the profile names as not counted (at calls dropped so that supergraph IDs fit in 64
//! bits), which ran as often as it says; the Ball–Larus counts are the same.
//! Skipped, with a message, when the corpus is absent.

mod common;

use common::{
    check_segment_roots, corpus_config, corpus_dir, expected, without_not_counted, DETERMINISTIC, NONDETERMINISTIC,
};
use pathprof::modes::ips::{facts, IpsStep};
use pathprof::Inputs;
use pathprof_core::profile::Profile;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Profiles `wasm` in `mode`, every run repeating the last, and checks its output.
fn profile(engine: &pathprof_runtime::Engine, wasm: &Path, name: &str, mode: &str) -> Profile {
    let config = pathprof::RunConfig { deterministic: true, ..corpus_config(wasm) };
    let bytes = std::fs::read(wasm).unwrap();
    let prepared =
        pathprof::Prepared::new(&bytes, name, &pathprof::Mode::parse(mode).unwrap(), &Inputs::default()).unwrap();
    let run = prepared.run(engine, &config).unwrap_or_else(|e| panic!("{name} ({mode}): {e:#}"));
    let out = &run.outcome;
    assert_eq!((out.exit_code, out.trap.as_deref()), (0, None), "{name} ({mode})");
    for (stream, got) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if let Some(file) = expected(wasm, stream) {
            assert!(*got == std::fs::read(&file).unwrap(), "{name} ({mode}): {stream} differs");
        }
    }
    prepared.profile(&run, &config).unwrap()
}

fn counts(p: &Profile) -> BTreeMap<(u32, u64), u64> {
    p.functions.iter().flat_map(|f| f.paths().iter().map(move |x| ((f.index, x.id.0), x.count.0))).collect()
}

#[test]
fn supergraphs_count_the_segments_of_ips_1() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let engine = pathprof_runtime::engine().unwrap();
    let (mut exact, mut segments, mut left_out) = (0, 0, 0);
    for name in DETERMINISTIC.iter().chain(NONDETERMINISTIC) {
        let wasm = dir.join(name);
        let ips = profile(&engine, &wasm, name, "ips:1");
        let ippp = profile(&engine, &wasm, name, "ippp");
        assert_eq!(counts(&ippp), counts(&ips), "{name}: the Ball–Larus counts differ");
        let (a, b) = (facts(&ips.mode).unwrap(), facts(&ippp.mode).unwrap());
        assert_eq!((b.mismatched.0, b.open_activations.0), (0, a.open_activations.0), "{name}");
        let want: HashMap<Vec<IpsStep>, u64> = a.ips.iter().map(|s| (s.steps.clone(), s.count.0)).collect();
        let (want, left) = without_not_counted(want, &b);
        let got: HashMap<Vec<IpsStep>, u64> = b.ips.iter().map(|s| (s.steps.clone(), s.count.0)).collect();
        assert!(got == want, "{name}: the segments differ from ips:1's");
        check_segment_roots(&ippp, &b);
        if b.not_counted.is_none() {
            exact += 1;
        }
        segments += got.len();
        left_out += left;
    }
    eprintln!(
        "{exact} of {} programs with every segment counted; {segments} segments equal to ips:1's, {left_out} rooted at calls not counted",
        DETERMINISTIC.len() + NONDETERMINISTIC.len()
    );
    assert!(exact * 2 > DETERMINISTIC.len() + NONDETERMINISTIC.len(), "most programs have every segment counted");
}
