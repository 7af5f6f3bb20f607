//! Supergraph IDs of several words on generated modules: a function `many` makes 20 to 1300 calls,
//! some under tests of its argument's bits, of callees with 2 to 2^32 paths from their entry, so
//! that its IDs need one word, two, several, or more than they may have (256 words, fewer in a
//! function of more than 257 calls). Under `ippp` and `ippp:2` the program prints what it
//! prints under `bl`, and the Ball–Larus counts and the segments are those of `ips:K` on the same
//! run, but for the segments rooted where the profile says it left some out; the oracle walks the
//! run's stream of path IDs, not the supergraph. A function with high keys counts its supergraph
//! paths whose high keys are 0 in slots; a call whose interesting digits are few and far apart
//! reads their weights from a hashed table.

mod common;

use common::{check_segment_roots, function, pathprof, run_in, without_not_counted, Run};
use pathprof::modes::ips::{facts, IpsFacts, IpsStep};
use pathprof_core::profile::Profile;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// A small generator (xorshift64*), so that each case is the same from run to run.
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// `k` tests of the bits of `$x`, each adding to `$acc` when its bit is set: 2^k paths.
fn bit_tests(k: u32) -> String {
    (0..k)
        .map(|i| {
            format!(
                "(if (i32.and (local.get $x) (i32.const {})) (then (global.set $acc (i32.add (global.get $acc) (i32.const {})))))\n",
                1u32 << i,
                i + 1
            )
        })
        .collect()
}

/// Callee `$c{k}` tests `k` bits of its argument: 2^k paths from its entry.
fn callee(k: u32) -> String {
    format!("(func $c{k} (param $x i32) {})\n", bit_tests(k))
}

/// The module of case `seed`, and how many calls `many` makes.
fn module(seed: u64) -> (String, u64) {
    let mut g = Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    // A quarter of the cases with IDs of a word or two, half of several, a quarter of more than
    // they may have (their callees have 2^24 to 2^32 paths, about two calls to a word).
    // (A function of more than 2^32 paths has them cut, so a path makes only some of its calls.)
    let calls = match seed % 4 {
        0 => 20 + g.below(40),
        1 | 2 => 100 + g.below(500),
        _ => 900 + g.below(400),
    };
    let mut body = String::new();
    for i in 0..calls {
        let k = if seed % 4 == 3 { 24 + g.below(9) } else { 1 + g.below(8) };
        let call = format!("(call $c{k} (i32.rotl (local.get $x) (i32.const {})))", g.below(32));
        // About one call in four runs only when a bit of the argument is set (one in 64 in the
        // largest cases, whose paths would otherwise be cut before they make many calls).
        if g.below(if seed % 4 == 3 { 64 } else { 4 }) == 0 {
            let bit = 1u32 << ((i + g.below(7)) % 31);
            body.push_str(&format!("(if (i32.and (local.get $x) (i32.const {bit})) (then {call}))\n"));
        } else {
            body.push_str(&call);
            body.push('\n');
        }
    }
    let callees: String = (1..=8).chain(24..=32).map(callee).collect();
    let wat = format!(
        r#"(module
          (global $acc (mut i32) (i32.const 0))
          {callees}
          (func $many (param $x i32) {body})
          (func (export "run") (param $n i32) (result i32) (local $i i32)
            (loop $l
              (call $many (i32.mul (local.get $i) (i32.const 0x9e3779b1)))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
            (global.get $acc)))"#
    );
    (wat, calls)
}

/// Path counts by function and path ID.
fn counts(p: &Profile) -> BTreeMap<(u32, u64), u64> {
    p.functions.iter().flat_map(|f| f.paths().iter().map(move |x| ((f.index, x.id.0), x.count.0))).collect()
}

/// The segments and their counts.
fn segments(f: &IpsFacts) -> HashMap<Vec<IpsStep>, u64> {
    f.ips.iter().map(|s| (s.steps.clone(), s.count.0)).collect()
}

#[test]
fn ids_of_one_word_two_words_or_more_count_the_segments_of_ips() {
    // The most words `many`'s IDs have, and whether calls are dropped, by case and depth.
    let mut shapes = Vec::new();
    for seed in 0..8 {
        let (wat, calls) = module(seed);
        let (dir, wasm) = common::wat_module(&wat);
        let run_with = |mode: &str, more: &[&str]| {
            let r = run_in(dir.path(), &[&["--mode", mode, "--invoke", "run"], more].concat(), &wasm, &["5"]);
            assert!(r.output.status.success(), "case {seed}, {mode}: {}", String::from_utf8_lossy(&r.output.stderr));
            r
        };
        let run = |mode: &str| run_with(mode, &[]);
        let bl = run("bl");
        for k in 1..=2 {
            let what = format!("case {seed} ({calls} calls), K = {k}");
            let mode = if k == 1 { "ippp" } else { "ippp:2" };
            let (ips, ippp) = (run(&format!("ips:{k}")), run(mode));
            assert_eq!(ippp.output.stdout, bl.output.stdout, "{what}: the output");
            // (A function of more than 2^32 paths is cut further for `ips` and `ippp` than for `bl`.)
            assert_eq!(counts(&ippp.profile), counts(&ips.profile), "{what}: the Ball–Larus counts");
            let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
            assert_eq!(b.mismatched.0, 0, "{what}");
            let (want, _) = without_not_counted(segments(&a), &b);
            assert_eq!(segments(&b), want, "{what}: the segments are ips:{k}'s");
            check_segment_roots(&ippp.profile, &b);
            // With every segment that ran interesting, slots too (in `many` for its IDs whose high
            // keys are 0): the same segments.
            let tested = dir.path().join("tested.json");
            std::fs::write(&tested, ips.profile.to_json()).unwrap();
            let slots = if k == 1 { "ippp:slots" } else { "ippp:2:slots" };
            let r = run_with(slots, &["--interesting", tested.to_str().unwrap()]);
            assert_eq!(r.output.stdout, bl.output.stdout, "{what}, {slots}: the output");
            let c = facts(&r.profile.mode).unwrap();
            assert_eq!(c.mismatched.0, 0, "{what}, {slots}");
            assert_eq!(segments(&c), segments(&b), "{what}, {slots}: the segments are {mode}'s");
            assert_eq!(c.residual.as_ref().map(|r| r.segments.0), Some(0), "{what}, {slots}");
            let out = common::pathprof()
                .current_dir(dir.path())
                .args(["instrument", "--mode", mode, "-o", "out.wasm"])
                .arg(&wasm)
                .output()
                .unwrap();
            assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
            let map: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.path().join("out.wasm.map.json")).unwrap()).unwrap();
            let many = (map["functions"].as_array().unwrap().iter())
                .find(|f| f["state"]["supergraph"]["calls"].as_array().is_some_and(|c| c.len() as u64 == calls))
                .expect("many's supergraph");
            let calls = many["state"]["supergraph"]["calls"].as_array().unwrap();
            let words = 1 + calls.iter().filter_map(|c| c["word"].as_u64()).max().unwrap_or(0);
            shapes.push((words, calls.iter().any(|c| c["dropped"] == true)));
        }
    }
    let with = |f: &dyn Fn(&(u64, bool)) -> bool| shapes.iter().filter(|s| f(s)).count();
    assert!(
        with(&|s| s.0 == 2) >= 1 && with(&|s| s.0 > 2 && !s.1) >= 4 && with(&|s| s.1) >= 2,
        "words and drops by case: {shapes:?}"
    );
}

/// The `ippp:K:slots` run of `wasm` (`--invoke run ARG`) tested on the same input: its interesting
/// segments are those of an `ips:K` run, whose profile goes to `dir`. Checked to print what `bl`
/// printed and to find `ips:K`'s segments; gives the mode, the `ips:K` profile's path, its facts
/// and the run.
fn slotted_as_tested(dir: &Path, wasm: &Path, arg: &str, k: usize, bl: &Run) -> (String, PathBuf, IpsFacts, Run) {
    let ips = run_in(dir, &["--mode", &format!("ips:{k}"), "--invoke", "run"], wasm, &[arg]);
    assert!(ips.output.status.success(), "ips:{k}: {}", String::from_utf8_lossy(&ips.output.stderr));
    let tested = dir.join(format!("ips{k}.json"));
    std::fs::write(&tested, ips.profile.to_json()).unwrap();
    let mode = if k == 1 { "ippp:slots".to_string() } else { format!("ippp:{k}:slots") };
    let extra = ["--mode", &mode, "--invoke", "run", "--interesting", tested.to_str().unwrap()];
    let r = run_in(dir, &extra, wasm, &[arg]);
    assert!(r.output.status.success(), "{mode}: {}", String::from_utf8_lossy(&r.output.stderr));
    assert_eq!(r.output.stdout, bl.output.stdout, "{mode}: the output");
    let (want, got) = (facts(&ips.profile.mode).unwrap(), facts(&r.profile.mode).unwrap());
    assert_eq!(got.mismatched.0, 0, "{mode}");
    assert_eq!(segments(&got), segments(&want), "{mode}: the segments are ips:{k}'s");
    (mode, tested, want, r)
}

/// `f` either runs once through eight calls of `big` (2^30 paths from its entry: its IDs need high
/// keys) or, every other time, calls `small` twice. Tested on the same input (the segments of an
/// `ips:K` run given as the interesting ones), `ippp:K:slots` gives `f` slots: its supergraph paths
/// whose high keys are 0 count there — every path end of the calls of `small`, and the one through
/// `big`'s calls if each of them took `big`'s first path from its entry (digit 0), which the `ips:K`
/// run's segments say —, the others, whose high keys are not 0, beside them; the segments are
/// `ips:K`'s and the program prints what it prints under `bl`.
#[test]
fn a_function_with_high_keys_counts_its_paths_of_one_word_in_slots() {
    let calls = (0..8).map(|_| "(call $big (i32.const -1))\n").collect::<String>();
    let wat = format!(
        r#"(module
          (global $acc (mut i32) (i32.const 0))
          (func $big (param $x i32) {big})
          (func $small (param $x i32) {small})
          (func $f (param $x i32)
            (if (i32.eqz (local.get $x))
              (then {calls})
              (else
                (call $small (local.get $x))
                (call $small (i32.shr_u (local.get $x) (i32.const 2))))))
          (func (export "run") (param $n i32) (result i32) (local $i i32)
            (call $f (i32.const 0))
            (loop $l
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (call $f (local.get $i))
              (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
            (global.get $acc)))"#,
        big = bit_tests(30),
        small = bit_tests(4),
    );
    let (dir, wasm) = common::wat_module(&wat);
    let dir = dir.path();
    let bl = run_in(dir, &["--mode", "bl", "--invoke", "run"], &wasm, &["40"]);
    assert!(bl.output.status.success(), "{}", String::from_utf8_lossy(&bl.output.stderr));
    for k in 1..=2 {
        let (mode, tested, want, r) = slotted_as_tested(dir, &wasm, "40", k, &bl);
        assert_eq!(counts(&r.profile), counts(&bl.profile), "{mode}: the Ball–Larus counts");
        let got = facts(&r.profile.mode).unwrap();
        // f's IDs have high keys; the calls of small add their digits to the key.
        let (f, big) = (function(&r.profile, "f").index, function(&r.profile, "big").index);
        let map = {
            let mut command = pathprof();
            let out = command.current_dir(dir).args(["instrument", "--mode", &mode, "-o", "out.wasm", "--interesting"]);
            let out = out.arg(&tested).arg(&wasm);
            let out = out.output().unwrap();
            assert!(out.status.success(), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
            let text = std::fs::read_to_string(dir.join("out.wasm.map.json")).unwrap();
            serde_json::from_str::<serde_json::Value>(&text).unwrap()
        };
        let supergraph = |index: u32| {
            let f = map["functions"].as_array().unwrap().iter().find(|x| x["index"] == index).unwrap();
            f["state"]["supergraph"].clone()
        };
        let words: Vec<u64> =
            (supergraph(f)["calls"].as_array().unwrap().iter()).map(|c| c["word"].as_u64().unwrap_or(0)).collect();
        assert!(words[..8].iter().any(|&w| w > 0) && words[8..] == [0, 0], "{mode}: {words:?}");
        // Whether big's calls in f took its first path from the entry (digit 0).
        let entry_base = supergraph(big)["entry_base"].as_u64().unwrap_or(0);
        let paths_of_big: Vec<u64> = (want.ips.iter().flat_map(|s| &s.steps))
            .filter_map(|s| match s {
                IpsStep::Sub(s) if s.function == big => Some(s.path.0),
                _ => None,
            })
            .collect();
        assert!(!paths_of_big.is_empty() && paths_of_big.iter().all(|&p| p == paths_of_big[0]));
        let through_big_in_slots = paths_of_big[0] == entry_base;
        let slots = got.slots.expect("slots");
        let with: Vec<u32> = slots.functions.iter().map(|s| s.function).collect();
        assert!(with.contains(&f), "{mode}: f has slots: {with:?}");
        let ends: u64 = counts(&r.profile).iter().filter(|((g, _), _)| with.contains(g)).map(|(_, c)| c).sum();
        let outside = u64::from(!through_big_in_slots);
        assert_eq!(slots.path_ends.0, ends - outside, "{mode}: every path end with high keys 0 counts in slots");
    }
}

/// `f` calls `big` (2^20 paths from its entry) with twelve arguments spread over its bits: the
/// digits its interesting paths take are twelve among 2^20, which a table by digit would hold only
/// in 2^20 weights, past a function's bound. Hashed, they fit: tested on the same input,
/// `ippp:K:slots` counts every path end of `f`, and of each function with slots, in its slots, and
/// the segments are `ips:K`'s.
#[test]
fn sparse_digits_read_their_weights_from_a_hashed_table() {
    let wat = format!(
        r#"(module
          (global $acc (mut i32) (i32.const 0))
          (func $big (param $x i32) {big})
          (func $f (param $x i32) (call $big (local.get $x)))
          (func (export "run") (param $n i32) (result i32) (local $i i32)
            (loop $l
              (call $f (i32.mul (local.get $i) (i32.const 0x9e3779b1)))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
            (global.get $acc)))"#,
        big = bit_tests(20),
    );
    let (dir, wasm) = common::wat_module(&wat);
    let dir = dir.path();
    let bl = run_in(dir, &["--mode", "bl", "--invoke", "run"], &wasm, &["12"]);
    assert!(bl.output.status.success(), "{}", String::from_utf8_lossy(&bl.output.stderr));
    for k in 1..=2 {
        let (mode, _, _, r) = slotted_as_tested(dir, &wasm, "12", k, &bl);
        let got = facts(&r.profile.mode).unwrap();
        // Twelve paths of big, far apart.
        let f = function(&r.profile, "f").index;
        let slots = got.slots.expect("slots");
        let of_f = slots.functions.iter().find(|s| s.function == f).unwrap_or_else(|| panic!("{mode}: f has slots"));
        assert_eq!(of_f.interesting.0, 12, "{mode}");
        assert!(of_f.span.0 > 1 << 18, "{mode}: the IDs span {}", of_f.span.0);
        let with: Vec<u32> = slots.functions.iter().map(|s| s.function).collect();
        let ends: u64 = counts(&r.profile).iter().filter(|((g, _), _)| with.contains(g)).map(|(_, c)| c).sum();
        assert_eq!(slots.path_ends.0, ends, "{mode}: every path end of a function with slots counts in them");
    }
}
