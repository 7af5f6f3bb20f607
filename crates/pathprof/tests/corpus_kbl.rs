//! The properties of k-iteration path forests [KBL13 §2.2] on real programs of ../shared/corpus, in
//! `--mode kbl`:
//!
//! * Property 1: every node's count is at least the sum of its children's counts;
//! * Property 2: the k-IPF is the (k+1)-IPF cut to depth k, counts included;
//! * the first level is the Ball–Larus profile: the run's own path counts, and those of a separate
//!   `--mode bl` run;
//! * the instrumented programs print exactly what they should;
//! * three threads folding the stream, each its share of the trees, build the forest one does;
//! * under a node bound a quarter of the forest, every count and bound holds the exact count, the
//!   roots stay exact, and every sequence missing ran at most `dropped` times;
//! * in bursts (`kbl:K:burst`), the roots are exact and every sequence ran, at most as often as its
//!   count says; a burst for the whole run gives the exact forest.
//!
//! Runs are compared with each other only on programs whose paths are the same in every run; the
//! others draw from `random_get` and are checked one run at a time. Skipped, with a message, when the
//! corpus is absent.

mod common;

use common::{corpus_dir, expected, run_in, Run, DETERMINISTIC, NONDETERMINISTIC};
use pathprof_core::profile::{Endpoint, FunctionProfile, KipfNodeProfile, Profile};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

/// Depths of the k-IPFs of every deterministic program, increasing: each one is compared with the next.
const KS: [usize; 6] = [1, 2, 3, 4, 7, 8];

/// Depth of the single run of each nondeterministic program.
const K_SINGLE: usize = 8;

/// Runs `wasm` in its own folder with `extra` options, and checks its exit status and its output
/// against the expected files.
fn run_checked(wasm: &Path, name: &str, mode: &str, extra: &[&str]) -> Run {
    let mut args = vec!["--dir", "."];
    args.extend_from_slice(extra);
    let run = run_in(wasm.parent().unwrap(), &args, wasm, &[]);
    assert_eq!(
        run.output.status.code(),
        Some(0),
        "{name} ({mode}) failed: {}",
        String::from_utf8_lossy(&run.output.stderr)
    );
    for (stream, got) in [("stdout", &run.output.stdout), ("stderr", &run.output.stderr)] {
        if let Some(file) = expected(wasm, stream) {
            let want = std::fs::read(&file).unwrap();
            assert!(
                *got == want,
                "{name} ({mode}): {stream} ({} bytes) differs from {} ({} bytes)",
                got.len(),
                file.display(),
                want.len()
            );
        }
    }
    run
}

/// Profiles `wasm` in kbl mode with depth `k`.
fn run_kbl(wasm: &Path, name: &str, k: usize) -> Run {
    let k_arg = k.to_string();
    run_checked(wasm, name, &format!("kbl, k = {k}"), &["--mode", "kbl", "-k", &k_arg])
}

/// How assertion messages name a function.
fn label(f: &FunctionProfile) -> String {
    match &f.name {
        Some(n) => format!("function {} ({n})", f.index),
        None => format!("function {}", f.index),
    }
}

/// The k-IPF roots of `f`.
fn roots<'a>(f: &'a FunctionProfile, what: &str) -> &'a [KipfNodeProfile] {
    &f.kipf().unwrap_or_else(|| panic!("{what}: {} has no k-IPF", label(f))).roots
}

/// Path counts by path ID.
fn path_counts(f: &FunctionProfile) -> BTreeMap<u64, u64> {
    f.paths().iter().map(|p| (p.id.0, p.count.0)).collect()
}

/// The counts of the k-IPF's roots by path ID.
fn root_counts(roots: &[KipfNodeProfile]) -> BTreeMap<u64, u64> {
    roots.iter().map(|r| (r.path.0, r.count.0)).collect()
}

/// `(path ID, count in a, count in b)` for every path ID whose counts differ.
fn differences(a: &BTreeMap<u64, u64>, b: &BTreeMap<u64, u64>) -> Vec<(u64, Option<u64>, Option<u64>)> {
    let ids: BTreeSet<u64> = a.keys().chain(b.keys()).copied().collect();
    ids.into_iter()
        .filter(|id| a.get(id) != b.get(id))
        .map(|id| (id, a.get(&id).copied(), b.get(&id).copied()))
        .collect()
}

/// Checks one node and everything under it (`seq` is the sequence of path IDs down to it): the count
/// is positive, at least the sum of the children's counts (Property 1), siblings have distinct path
/// IDs below `num_paths`, and no sequence is longer than `k`.
fn check_node(n: &KipfNodeProfile, seq: &mut Vec<u64>, k: usize, num_paths: u64, what: &str) -> usize {
    seq.push(n.path.0);
    assert!(seq.len() <= k, "{what}: sequence {seq:?} is longer than k = {k}");
    assert!(n.path.0 < num_paths, "{what}: sequence {seq:?} has a path ID beyond the function's {num_paths} paths");
    assert!(n.count.0 > 0, "{what}: sequence {seq:?} has count 0");
    let children: u64 = n.children.iter().map(|c| c.count.0).sum();
    assert!(
        n.count.0 >= children,
        "{what}: Property 1 fails at {seq:?}: count {} < {children}, the sum of its children's counts {:?}",
        n.count.0,
        n.children.iter().map(|c| (c.path.0, c.count.0)).collect::<Vec<_>>()
    );
    check_siblings(&n.children, seq, what);
    let mut nodes = 1;
    for c in &n.children {
        nodes += check_node(c, seq, k, num_paths, what);
    }
    seq.pop();
    nodes
}

/// Siblings (the children of sequence `seq`) have distinct path IDs.
fn check_siblings(nodes: &[KipfNodeProfile], seq: &[u64], what: &str) {
    let mut ids: Vec<u64> = nodes.iter().map(|n| n.path.0).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "{what}: the children of {seq:?} repeat a path ID");
}

/// Checks the k-IPF of every instrumented function of one kbl run on its own, and returns the
/// number of k-IPF nodes.
///
/// Besides Property 1, the roots are the run's Ball–Larus counts, path by path; and since each
/// activation's paths form one sequence (a call suspends it, the return resumes it), the second level
/// is short of the first by one per activation: the sequences of one path ending an activation's
/// sequence, as many as there are paths from the function's entry.
fn check_kipf(p: &Profile, k: usize, name: &str) -> usize {
    if let Some(kbl) = p.mode.kbl() {
        assert_eq!(kbl.k, k, "{name}: the profile says it was built with k = {}, not {k}", kbl.k);
        assert_eq!(kbl.dropped.0, 0, "{name} (k = {k}): {} path IDs dropped without a node bound", kbl.dropped.0);
    }
    let mut nodes = 0;
    for f in p.functions.iter().filter(|f| f.is_instrumented()) {
        let what = format!("{name} (k = {k}), {}", label(f));
        let kipf = f.kipf().unwrap_or_else(|| panic!("{what}: no k-IPF"));
        assert_eq!(kipf.k, k, "{what}: k-IPF of depth {}", kipf.k);
        check_siblings(&kipf.roots, &[], &what);
        for r in &kipf.roots {
            nodes += check_node(r, &mut Vec::new(), k, f.num_paths(), &what);
        }
        let level1 = root_counts(&kipf.roots);
        let diff = differences(&level1, &path_counts(f));
        assert!(
            diff.is_empty(),
            "{what}: the roots differ from the path counts (ID, root count, path count): {diff:?}"
        );
        if k >= 2 && p.open_activations_at_exit == 0 {
            let first: u64 = level1.values().sum();
            let second: u64 = kipf.roots.iter().flat_map(|r| &r.children).map(|c| c.count.0).sum();
            let activations: u64 = f.paths().iter().filter(|x| x.start == Endpoint::Entry).map(|x| x.count.0).sum();
            assert_eq!(
                first - second,
                activations,
                "{what}: {first} sequences of one path and {second} of two, but {activations} activations"
            );
        }
    }
    nodes
}

/// The first difference between `small`, a level of a k-IPF, and `big`, the same level of a deeper
/// k'-IPF, down to `depth` more levels, under the sequence `seq`.
fn first_difference(
    small: &[KipfNodeProfile],
    big: &[KipfNodeProfile],
    depth: usize,
    seq: &mut Vec<u64>,
) -> Option<String> {
    let a: BTreeMap<u64, &KipfNodeProfile> = small.iter().map(|n| (n.path.0, n)).collect();
    let b: BTreeMap<u64, &KipfNodeProfile> = big.iter().map(|n| (n.path.0, n)).collect();
    let ids: BTreeSet<u64> = a.keys().chain(b.keys()).copied().collect();
    for id in ids {
        seq.push(id);
        let found = match (a.get(&id), b.get(&id)) {
            (Some(x), None) => Some(format!("{seq:?} (count {}) is only in the k-IPF", x.count.0)),
            (None, Some(y)) => Some(format!("{seq:?} (count {}) is only in the deeper k'-IPF", y.count.0)),
            (Some(x), Some(y)) if x.count != y.count => {
                Some(format!("{seq:?} has count {} in the k-IPF, {} in the k'-IPF", x.count.0, y.count.0))
            }
            (Some(x), Some(y)) if depth > 1 => first_difference(&x.children, &y.children, depth - 1, seq),
            (Some(x), Some(_)) if !x.children.is_empty() => {
                Some(format!("{seq:?} has children in the k-IPF, at depth k"))
            }
            _ => None,
        };
        seq.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Property 2: every function's k-IPF in `small` is its k'-IPF in `big` (k' > k) cut to depth k.
fn check_property_2(small: &Profile, k: usize, big: &Profile, k_big: usize, name: &str) {
    assert!(k < k_big);
    assert_eq!(small.functions.len(), big.functions.len(), "{name}: runs with k = {k} and {k_big} differ in functions");
    for (f, g) in small.functions.iter().zip(&big.functions).filter(|(f, _)| f.is_instrumented()) {
        let what = format!("{name}, {}", label(f));
        assert_eq!(
            (f.index, f.is_instrumented()),
            (g.index, g.is_instrumented()),
            "{what}: the runs list other functions"
        );
        if let Some(diff) = first_difference(roots(f, &what), roots(g, &what), k, &mut Vec::new()) {
            panic!("{what}: Property 2 fails, the {k}-IPF is not the {k_big}-IPF cut to depth {k}: {diff}");
        }
    }
}

/// How often each block ran, from a function's path counts.
fn block_frequencies(f: &FunctionProfile) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for p in f.paths() {
        for &b in &p.blocks {
            *out.entry(b).or_default() += p.count.0;
        }
    }
    out
}

/// The first level of a kbl profile equals the path counts of a `bl` profile of the same program;
/// in a function cut further for the stream's 32-bit path IDs, its paths go through the same blocks
/// as often.
fn check_against_bl(kbl: &Profile, k: usize, bl: &Profile, name: &str) {
    assert_eq!(kbl.functions.len(), bl.functions.len(), "{name}: the kbl and bl runs differ in functions");
    for (f, g) in kbl.functions.iter().zip(&bl.functions).filter(|(f, _)| f.is_instrumented()) {
        let what = format!("{name} (k = {k}), {}", label(f));
        assert_eq!(
            (f.index, f.is_instrumented()),
            (g.index, g.is_instrumented()),
            "{what}: the runs list other functions"
        );
        if f.cut_blocks() != g.cut_blocks() {
            assert!(f.cut_blocks().len() > g.cut_blocks().len(), "{what}: other cuts than bl's");
            assert_eq!(block_frequencies(f), block_frequencies(g), "{what}: the blocks ran otherwise");
            continue;
        }
        let diff = differences(&root_counts(roots(f, &what)), &path_counts(g));
        assert!(diff.is_empty(), "{what}: the roots differ from the bl run's path counts (ID, kbl, bl): {diff:?}");
    }
}

/// Every sequence of every function's k-IPF in `p`, with its count and bound.
fn sequences(p: &Profile) -> BTreeMap<(u32, Vec<u64>), (u64, u64)> {
    let mut out = BTreeMap::new();
    for f in &p.functions {
        if let Some(kipf) = f.kipf() {
            kipf.for_each_node(|seq, n| {
                out.insert((f.index, seq.iter().map(|s| s.0).collect()), (n.count.0, n.upper()));
            });
        }
    }
    out
}

/// Runs `wasm` with a node bound a quarter of the forest of `exact`, its unbounded k-IPF, and checks
/// the bounded profile's promises against it; returns whether the bound pruned the forest.
fn check_bounded(wasm: &Path, name: &str, k: usize, exact: &Profile) -> usize {
    let nodes = exact.mode.kbl().unwrap().ksf_nodes.0;
    let bound = (nodes / 4).max(64).to_string();
    let (k_arg, what) = (k.to_string(), format!("{name} (k = {k}, at most {bound} nodes)"));
    let run = run_checked(wasm, name, &what, &["--mode", "kbl", "-k", &k_arg, "--max-nodes", &bound]);
    let kbl = run.profile.mode.kbl().unwrap();
    let dropped = kbl.dropped.0;
    assert!(kbl.ksf_nodes.0 <= (nodes / 4).max(64), "{what}: {} nodes", kbl.ksf_nodes.0);
    let (truth, got) = (sequences(exact), sequences(&run.profile));
    for ((f, seq), &(n, _)) in &truth {
        match got.get(&(*f, seq.clone())) {
            Some(&(count, upper)) if seq.len() == 1 => assert_eq!((count, upper), (n, n), "{what}: root {seq:?}"),
            Some(&(count, upper)) => assert!(
                count <= n && n <= upper && upper - count <= dropped,
                "{what}: function {f}, {seq:?} ran {n} times, the profile says {count} to {upper}"
            ),
            None => assert!(n <= dropped, "{what}: function {f}, {seq:?} ran {n} times and is missing"),
        }
    }
    assert!(got.keys().all(|key| truth.contains_key(key)), "{what}: a sequence that never ran");
    usize::from(dropped > 0)
}

/// Runs `wasm` in bursts (short ones, so that short programs get some) and in one burst for the whole
/// run, and checks both against `exact`, its k-IPF; returns whether the short bursts recorded a
/// sequence of two paths or more.
fn check_bursts(wasm: &Path, name: &str, k: usize, exact: &Profile) -> usize {
    let mode = format!("kbl:{k}:burst");
    let run = |ms: &str, every: &str| {
        let what = format!("{name} ({mode}, {ms} ms every {every} ms)");
        let args = ["--mode", mode.as_str(), "--burst-ms", ms, "--burst-every", every];
        (run_checked(wasm, name, &what, &args).profile, what)
    };
    let truth = sequences(exact);
    let (whole, what) = run("1", "1");
    assert!(sequences(&whole) == truth, "{what}: another forest than kbl's");
    let (sampled, what) = run("0.5", "2");
    let got = sequences(&sampled);
    for ((f, seq), &(count, _)) in &got {
        let Some(&(n, _)) = truth.get(&(*f, seq.clone())) else {
            panic!("{what}: function {f}, {seq:?} never ran");
        };
        if seq.len() == 1 {
            assert_eq!(count, n, "{what}: function {f}, root {seq:?}");
        } else {
            assert!(count <= n, "{what}: function {f}, {seq:?} ran {n} times, the profile says {count}");
        }
    }
    let roots = |s: &BTreeMap<(u32, Vec<u64>), (u64, u64)>| s.iter().filter(|(k, _)| k.1.len() == 1).count();
    assert_eq!(roots(&got), roots(&truth), "{what}: other roots than kbl's");
    usize::from(got.keys().any(|(_, seq)| seq.len() > 1))
}

#[test]
fn corpus_kipf_properties() {
    let Some(dir) = corpus_dir() else {
        eprintln!("skipped: ../shared/corpus is absent");
        return;
    };
    eprintln!("{:<40} {:>4} {:>12} {:>10} {:>8}", "program", "k", "path ends", "k-IPF nodes", "seconds");
    let report = |name: &str, k: usize, p: &Profile, nodes: usize, t: Instant| {
        let secs = t.elapsed().as_secs_f64();
        eprintln!("{name:<40} {k:>4} {:>12} {nodes:>10} {secs:>8.2}", p.path_executions.0);
    };
    let (mut pruned, mut bursty) = (0, 0);
    for name in DETERMINISTIC {
        let wasm = dir.join(name);
        assert!(wasm.is_file(), "{} is missing from the corpus", wasm.display());
        let bl = run_checked(&wasm, name, "bl", &[]).profile;
        let mut previous: Option<(usize, Profile)> = None;
        for k in KS {
            let t = Instant::now();
            let p = run_kbl(&wasm, name, k).profile;
            let nodes = check_kipf(&p, k, name);
            check_against_bl(&p, k, &bl, name);
            if let Some((k_small, small)) = &previous {
                check_property_2(small, *k_small, &p, k, name);
            }
            report(name, k, &p, nodes, t);
            previous = Some((k, p));
        }
        let (k, one) = previous.expect("KS is not empty");
        let k_arg = k.to_string();
        let three = run_checked(&wasm, name, "kbl, 3 threads", &["--mode", "kbl", "-k", &k_arg, "--fold-threads", "3"]);
        let (a, b) = (one.mode.kbl().unwrap(), three.profile.mode.kbl().unwrap());
        assert_eq!((b.fold_threads, b.ksf_nodes, b.stream_items), (3, a.ksf_nodes, a.stream_items), "{name}");
        assert!(three.profile.functions == one.functions, "{name}: three threads folded another {k}-IPF than one");
        pruned += check_bounded(&wasm, name, k, &one);
        bursty += check_bursts(&wasm, name, k, &one);
    }
    assert!(pruned > 0, "no program's forest was pruned");
    assert!(bursty > 0, "no program's bursts recorded a sequence");
    for name in NONDETERMINISTIC {
        let wasm = dir.join(name);
        assert!(wasm.is_file(), "{} is missing from the corpus", wasm.display());
        let t = Instant::now();
        let p = run_kbl(&wasm, name, K_SINGLE).profile;
        let nodes = check_kipf(&p, K_SINGLE, name);
        report(name, K_SINGLE, &p, nodes, t);
    }
}
