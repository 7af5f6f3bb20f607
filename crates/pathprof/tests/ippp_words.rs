//! Supergraph IDs of two words on generated modules: a function `many` makes 40 to 220 calls, some
//! under tests of its argument's bits, of callees with 2 to 16 paths from their entry, so that its
//! IDs need one word, two, or more than two. Under `ippp` and `ippp:2` the program prints what it
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
    let calls = 40 + g.below(181);
    let mut body = String::new();
    for i in 0..calls {
        let k = 1 + g.below(4);
        let call = format!("(call $c{k} (i32.rotl (local.get $x) (i32.const {})))", g.below(32));
        // About one call in four runs only when a bit of the argument is set.
        if g.below(4) == 0 {
            let bit = 1u32 << ((i + g.below(7)) % 31);
            body.push_str(&format!("(if (i32.and (local.get $x) (i32.const {bit})) (then {call}))\n"));
        } else {
            body.push_str(&call);
            body.push('\n');
        }
    }
    let callees: String = (1..=4).map(callee).collect();
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
    // Functions with a high key, and with calls dropped, over all cases and both depths.
    let (mut wide, mut dropped) = (0, 0);
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
            let map = std::fs::read_to_string(dir.path().join("out.wasm.map.json")).unwrap();
            wide += usize::from(map.contains("\"high\":true"));
            dropped += usize::from(map.contains("\"dropped\":true"));
        }
    }
    assert!(wide >= 4 && dropped >= 2, "cases with a high key: {wide}, with calls dropped: {dropped}");
}
