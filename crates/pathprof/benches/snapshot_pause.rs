//! How long a snapshot pauses the program: a program whose functions take about 2^17 distinct paths,
//! run with a snapshot every 20 ms, in two layouts — every path in a dense array of the profiler's
//! memory (eight functions of 2^14 paths), and every path in the host's hash table (one function of
//! 2^17 paths, too many for an array or the in-memory table) — for `bl` and `pep`. The pause is
//! what the program waits while its collector reads the counts (`snapshot.pause_seconds` of each
//! snapshot); the profiles are made of them on another thread.
//!
//! ```sh
//! cargo bench -p pathprof --bench snapshot_pause
//! ```

use pathprof::{Inputs, Mode, Prepared, RunConfig};
use std::sync::Mutex;
use std::time::Duration;

/// A module whose `_start` calls each of `functions` functions of `diamonds` two-way branches with
/// every argument below 2^diamonds, `rounds` times: every path of every function runs.
fn module(functions: u32, diamonds: u32, rounds: u32) -> Vec<u8> {
    let mut wat = String::from("(module\n");
    for f in 0..functions {
        wat += &format!("(func $f{f} (param $i i32) (result i32) (local $x i32)\n");
        for j in 0..diamonds {
            wat += &format!(
                "(if (i32.and (local.get $i) (i32.const {})) (then (local.set $x (i32.add (local.get $x) (i32.const {j})))) (else (local.set $x (i32.sub (local.get $x) (i32.const 1)))))\n",
                1u32 << j
            );
        }
        wat += "(local.get $x))\n";
    }
    wat += "(func (export \"_start\") (local $i i32) (local $r i32) (local $acc i32)\n";
    wat += "(loop $rounds (local.set $i (i32.const 0)) (loop $paths\n";
    for f in 0..functions {
        wat += &format!("(local.set $acc (i32.add (local.get $acc) (call $f{f} (local.get $i))))\n");
    }
    wat += &format!(
        "(local.set $i (i32.add (local.get $i) (i32.const 1))) (br_if $paths (i32.lt_u (local.get $i) (i32.const {})))) (local.set $r (i32.add (local.get $r) (i32.const 1))) (br_if $rounds (i32.lt_u (local.get $r) (i32.const {rounds})))))\n",
        1u32 << diamonds
    );
    wat += ")\n";
    wat::parse_str(&wat).expect("the benchmark's module parses")
}

fn main() {
    let engine = pathprof_runtime::engine().unwrap();
    let config = RunConfig { args: vec!["paths.wasm".into()], capture_output: true, ..RunConfig::default() };
    println!("{:<24} {:>5} {:>10} {:>9} {:>9} {:>9}", "layout", "mode", "paths", "snapshots", "median ms", "max ms");
    for (layout, functions, diamonds, rounds) in
        [("arrays (8 x 2^14)", 8, 14, 40), ("host table (1 x 2^17)", 1, 17, 40)]
    {
        let bytes = module(functions, diamonds, rounds);
        for spec in ["bl", "pep"] {
            let mode = Mode::parse(spec).unwrap();
            let prepared = Prepared::new(&bytes, "paths.wasm", &mode, &Inputs::default()).unwrap();
            let pauses = Mutex::new(Vec::new());
            let distinct = Mutex::new(0usize);
            let every = Duration::from_millis(20);
            prepared
                .run_with_snapshots(&engine, &config, every, "bench", |p| {
                    let p = p.expect("a snapshot is a profile");
                    pauses.lock().unwrap().push(p.snapshot.unwrap().pause_seconds * 1e3);
                    *distinct.lock().unwrap() = p.functions.iter().map(|f| f.paths().len()).sum();
                })
                .unwrap();
            let mut pauses = pauses.into_inner().unwrap();
            pauses.sort_by(f64::total_cmp);
            let median = pauses.get(pauses.len() / 2).copied().unwrap_or(f64::NAN);
            let max = pauses.last().copied().unwrap_or(f64::NAN);
            let paths = distinct.into_inner().unwrap();
            println!("{layout:<24} {spec:>5} {paths:>10} {:>9} {median:>9.3} {max:>9.3}", pauses.len());
        }
    }
}
