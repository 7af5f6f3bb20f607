//! Supergraph IDs of several words on generated modules: a function `many` makes 20 to 1300 calls,
//! some under tests of its argument's bits, of callees with 2 to 2^32 paths from their entry, so
//! that its IDs need one word, two, several, or more than they may have (256 words, fewer in a
//! function of more than 257 calls). Under `ippp` and `ippp:2` the program prints what it
//! prints under `bl`, and the Ball–Larus counts and the segments are those of `ips:K` on the same
//! run, but for the segments rooted where the profile says it left some out; the oracle walks the
//! run's stream of path IDs, not the supergraph.

mod common;

use common::{check_segment_roots, run_in, without_not_counted};
use pathprof::modes::ips::{facts, IpsFacts, IpsStep};
use pathprof_core::profile::Profile;
use std::collections::{BTreeMap, HashMap};

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

/// Callee `$c{k}` tests `k` bits of its argument: 2^k paths from its entry.
fn callee(k: u32) -> String {
    let tests: String = (0..k)
        .map(|i| {
            format!(
                "(if (i32.and (local.get $x) (i32.const {})) (then (global.set $acc (i32.add (global.get $acc) (i32.const {})))))\n",
                1u32 << i,
                i + 1
            )
        })
        .collect();
    format!("(func $c{k} (param $x i32) {tests})\n")
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
        let run = |mode: &str| {
            let r = run_in(dir.path(), &["--mode", mode, "--invoke", "run"], &wasm, &["5"]);
            assert!(r.output.status.success(), "case {seed}, {mode}: {}", String::from_utf8_lossy(&r.output.stderr));
            r
        };
        let bl = run("bl");
        for k in 1..=2 {
            let what = format!("case {seed} ({calls} calls), K = {k}");
            let (ips, ippp) = (run(&format!("ips:{k}")), run(if k == 1 { "ippp" } else { "ippp:2" }));
            assert_eq!(ippp.output.stdout, bl.output.stdout, "{what}: the output");
            // (A function of more than 2^32 paths is cut further for `ips` and `ippp` than for `bl`.)
            assert_eq!(counts(&ippp.profile), counts(&ips.profile), "{what}: the Ball–Larus counts");
            let (a, b) = (facts(&ips.profile.mode).unwrap(), facts(&ippp.profile.mode).unwrap());
            assert_eq!(b.mismatched.0, 0, "{what}");
            let (want, _) = without_not_counted(segments(&a), &b);
            assert_eq!(segments(&b), want, "{what}: the segments are ips:{k}'s");
            check_segment_roots(&ippp.profile, &b);
            let mode = if k == 1 { "ippp" } else { "ippp:2" };
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
