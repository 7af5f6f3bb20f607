//! Depth-1 interprocedural path segments counted as supergraph paths (`--mode ippp`) on the real
//! programs of ../shared/corpus, each run deterministically: the programs print exactly what they
//! should; the segments are those `ips:1` counts from its stream, but for those rooted at the
//! subpaths the profile names as not counted (at calls dropped so that supergraph IDs fit in 64
//! bits), which ran as often as it says; the Ball–Larus counts are the same. With the `ips:1` run's
//! segments as interesting, `ippp:slots` counts the same, and its slots take the supergraph paths
//! of the functions that have them. `ippp:2` counts the segments of `ips:2` the same way.
//! Skipped, with a message, when the corpus is absent.

mod common;

use common::{
    check_segment_roots, corpus_config, corpus_dir, expected, without_not_counted, DETERMINISTIC, NONDETERMINISTIC,
};
use pathprof::modes::ips::{facts, IpsStep};
use pathprof::{Inputs, Interesting};
use pathprof_core::profile::InterestingRule;
use pathprof_core::profile::Profile;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Profiles `wasm` in `mode`, every run repeating the last, and checks its output.
fn profile(engine: &pathprof_runtime::Engine, wasm: &Path, name: &str, mode: &str) -> Profile {
    profile_with(engine, wasm, name, mode, &Inputs::default())
}

/// The same, with `inputs`.
fn profile_with(engine: &pathprof_runtime::Engine, wasm: &Path, name: &str, mode: &str, inputs: &Inputs) -> Profile {
    let config = pathprof::RunConfig { deterministic: true, ..corpus_config(wasm) };
    let bytes = std::fs::read(wasm).unwrap();
    let prepared = pathprof::Prepared::new(&bytes, name, &pathprof::Mode::parse(mode).unwrap(), inputs).unwrap();
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
    let (mut slotted, mut interesting, mut slots, mut in_slots, mut ends) = (0, 0, 0, 0u64, 0u64);
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
        // The run's own segments as interesting: slots in every function that can have them.
        let bytes = std::fs::read(&wasm).unwrap();
        let tested = Interesting::of(&bytes, &[("ips".to_string(), ips.clone())], InterestingRule::Executed).unwrap();
        let inputs = Inputs { interesting: Some(&tested), ..Inputs::default() };
        let with_slots = profile_with(&engine, &wasm, name, "ippp:slots", &inputs);
        assert_eq!(counts(&with_slots), counts(&ips), "{name}: ippp:slots's Ball–Larus counts differ");
        let c = facts(&with_slots.mode).unwrap();
        let got_slots: HashMap<Vec<IpsStep>, u64> = c.ips.iter().map(|s| (s.steps.clone(), s.count.0)).collect();
        let (want_slots, _) = without_not_counted(a.ips.iter().map(|s| (s.steps.clone(), s.count.0)).collect(), &c);
        assert!(got_slots == want_slots, "{name}: ippp:slots's segments differ from ips:1's");
        assert_eq!(c.residual.as_ref().map(|r| r.segments.0), Some(0), "{name}: the same run has no residual segment");
        let f = c.slots.as_ref().unwrap_or_else(|| panic!("{name}: no function has slots"));
        (slotted, interesting, slots) = (slotted + f.functions.len(), interesting + f.interesting.0, slots + f.slots.0);
        in_slots += f.path_ends.0;
        ends += counts(&ips).values().sum::<u64>();
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
    eprintln!(
        "ippp:slots: {slotted} functions count {interesting} interesting supergraph paths in {slots} slots (δ {:.3}); {in_slots} of {ends} path ends in slots",
        slots as f64 / interesting as f64
    );
    // Functions with high keys count in slots too; what stays outside is a path end whose high
    // keys are not 0, or whose digits pass the bound on a function's tables of weights.
    assert!(ends - in_slots <= ends / 1000, "at most 0.1 % of path ends outside slots");
    assert!(exact * 2 > DETERMINISTIC.len() + NONDETERMINISTIC.len(), "most programs have every segment counted");
}

/// Segments of up to 2 calls (`ippp:2`) on the same programs: the output and the Ball–Larus counts
/// are `ips:2`'s, and so are the segments, but for those rooted at the subpaths the profile names as
/// not counted (a head of depth 1 of a function of many paths does not fit beside its caller's
/// digits in 64 bits), which ran as often as it says, and under 1 % as often as those counted.
#[test]
fn supergraphs_of_two_calls_count_the_segments_of_ips_2() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    let engine = pathprof_runtime::engine().unwrap();
    let (mut exact, mut segments, mut executions, mut left_out, mut left_executions) = (0, 0, 0u64, 0, 0u64);
    for name in DETERMINISTIC.iter().chain(NONDETERMINISTIC) {
        let wasm = dir.join(name);
        let ips = profile(&engine, &wasm, name, "ips:2");
        let ippp = profile(&engine, &wasm, name, "ippp:2");
        assert_eq!(counts(&ippp), counts(&ips), "{name}: the Ball–Larus counts differ");
        let (a, b) = (facts(&ips.mode).unwrap(), facts(&ippp.mode).unwrap());
        assert_eq!((b.k, b.mismatched.0, b.open_activations.0), (2, 0, a.open_activations.0), "{name}");
        let want: HashMap<Vec<IpsStep>, u64> = a.ips.iter().map(|s| (s.steps.clone(), s.count.0)).collect();
        let (want, left) = without_not_counted(want, &b);
        let got: HashMap<Vec<IpsStep>, u64> = b.ips.iter().map(|s| (s.steps.clone(), s.count.0)).collect();
        assert!(got == want, "{name}: the segments differ from ips:2's");
        check_segment_roots(&ippp, &b);
        match &b.not_counted {
            None => exact += 1,
            Some(n) => {
                left_executions += n.executions.0;
                eprintln!(
                    "{name}: {} of {} executions not counted, in {:?}",
                    n.executions.0,
                    got.values().sum::<u64>(),
                    n.functions
                );
            }
        }
        segments += got.len();
        executions += got.values().sum::<u64>();
        left_out += left;
    }
    eprintln!(
        "{exact} of {} programs with every segment counted; {segments} segments ({executions} executions) equal to ips:2's, {left_out} ({left_executions} executions) rooted at calls not counted",
        DETERMINISTIC.len() + NONDETERMINISTIC.len()
    );
    assert!(left_executions * 100 < executions, "segment executions not counted are under 1 % of those counted");
}
