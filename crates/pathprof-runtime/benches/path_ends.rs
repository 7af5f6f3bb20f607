//! What a path end costs by where it is counted: in the function's array of counters, in its hash
//! table in the profiler's memory, or by a call of the host [BL96 §3.3]. A loop calls a function of
//! ten diamonds (1,024 paths) whose arms follow the low bits of the loop counter, so that eight of
//! its paths run, each call ending one. Measured twice: with a function that calls another, as
//! functions with that many paths do, and with a leaf. A function whose path ends may call the host
//! is never a leaf, and Wasmtime gives a function that calls a frame and a stack check that a leaf
//! does without: a leaf counted in a table or by the host pays them at every call. The same module runs uninstrumented and with each kind of
//! counters, interleaved, `ROUNDS` times; the cost of a path end is the difference of the medians
//! with the uninstrumented run's, per call, and the table's and the host's are given as multiples of
//! the array's.

use pathprof_runtime::{compile, engine, run_module, CountCollector, NoCollector, RunConfig};
use pathprof_wasm::map::Counters;
use pathprof_wasm::{instrument, InstrumentOptions};
use std::time::Instant;

const CALLS: u32 = 2_000_000;
const ROUNDS: usize = 15;

/// The module; `$f` calls `$leaf` unless it is to be a leaf itself.
fn module(leaf: bool) -> String {
    let mut body = String::new();
    for k in 0..10 {
        body += &format!(
            "(if (i32.and (i32.shr_u (local.get $x) (i32.const {})) (i32.const 1))
               (then (global.set $g (i32.add (global.get $g) (i32.const {k}))))
               (else (global.set $g (i32.xor (global.get $g) (i32.const {k})))))\n",
            k % 3
        );
    }
    let call = if leaf { "" } else { "(call $leaf (local.get $x))" };
    format!(
        r#"(module
          (global $g (mut i32) (i32.const 0))
          (func $leaf (param $x i32) (global.set $g (i32.add (global.get $g) (local.get $x))))
          (func $f (param $x i32) {body} {call})
          (func (export "run") (param $n i32) (result i32)
            (local $i i32)
            (loop $top
              (call $f (local.get $i))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $top (i32.lt_u (local.get $i) (local.get $n))))
            (global.get $g)))"#
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    for leaf in [false, true] {
        measure(leaf);
    }
}

fn measure(leaf: bool) {
    let bytes = wat::parse_str(module(leaf)).unwrap();
    let engine = engine().unwrap();
    let config = RunConfig {
        args: vec!["m.wasm".into(), CALLS.to_string()],
        invoke: Some("run".into()),
        capture_output: true,
        ..RunConfig::default()
    };
    // The loop's function keeps an array in every variant; `$f` counts as each variant says.
    let variants: [(&str, InstrumentOptions); 3] = [
        ("array", InstrumentOptions::default()),
        ("table", InstrumentOptions { array_max_paths: 1000, ..InstrumentOptions::default() }),
        ("host", InstrumentOptions { array_max_paths: 1000, array_max_bytes: 64, ..InstrumentOptions::default() }),
    ];
    let original = compile(&engine, &bytes).unwrap().0;
    let mut compiled = Vec::new();
    for (name, options) in &variants {
        let inst = instrument(&bytes, options).unwrap();
        let counters = inst.map.probed().find(|(f, _)| f.index == 1).unwrap().1.counters;
        let kind = match counters {
            Counters::Array { .. } => "array",
            Counters::Table { .. } => "table",
            Counters::Hash => "host",
            other => panic!("{other:?}"),
        };
        assert_eq!(kind, *name, "the variant counts where it says");
        compiled.push((name, compile(&engine, &inst.bytes).unwrap().0, inst.map));
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); 1 + compiled.len()];
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let (outcome, ()) = run_module(&engine, &original, None, NoCollector, &config).unwrap();
        times[0].push(start.elapsed().as_secs_f64());
        let expected = outcome.results;
        for (k, (_, module, map)) in compiled.iter().enumerate() {
            let start = Instant::now();
            let (outcome, counted) =
                run_module(&engine, module, Some(map), CountCollector::new(map).unwrap(), &config).unwrap();
            times[k + 1].push(start.elapsed().as_secs_f64());
            assert_eq!(outcome.results, expected);
            let calls: u64 = counted.counts[&1].iter().map(|&(_, n)| n).sum();
            assert_eq!(calls, u64::from(CALLS), "every call counted");
            if *compiled[k].0 == "table" {
                assert_eq!(counted.hash_entries, 0, "the table holds every path that ran");
            }
        }
    }
    let base = median(times[0].clone());
    let per_end = |k: usize| (median(times[k].clone()) - base) / f64::from(CALLS) * 1e9;
    let what = if leaf { "a leaf" } else { "a function that calls" };
    println!("{CALLS} calls of {what}, each ending one path; medians of {ROUNDS} interleaved runs");
    println!("uninstrumented {:>8.1} ms", base * 1e3);
    let array = median(times[1].clone());
    for (k, (name, ..)) in compiled.iter().enumerate() {
        let t = median(times[k + 1].clone());
        println!(
            "{name:<14} {:>8.1} ms  ratio {:.3}  {:.3} of the array's run  path end {:>6.2} ns more than uncounted",
            t * 1e3,
            t / base,
            t / array,
            per_end(k + 1)
        );
    }
}
