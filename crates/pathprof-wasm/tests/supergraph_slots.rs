//! Mode `ippp`'s preferential slots [PPP07 §3.4.5 with §3.3], read from the profiler's memory: with
//! some supergraph paths interesting, a run counts exactly those in their slots — each at the slot
//! that holds its supergraph ID, none of them anywhere else — and every other supergraph path where
//! it counted without slots; the counts of slots and counters together are those of the same run
//! instrumented without interesting paths, ID for ID. A call whose interesting digits are few and
//! far apart reads their weights from a hashed table, with the same result.

use pathprof_core::supergraph::{InterestingPath, Taken};
use pathprof_wasm::map::{ArrayCounters, RawCounts};
use pathprof_wasm::{instrument, InstrumentOptions, ProfileMap, SinkKind};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use wasmtime::{Engine, Instance, Linker, Module, Store};

/// `run(n)` calls `f` on every iteration and `g` on every other four, `f` and `g` branching on their
/// argument.
const CALLS: &str = r#"(module
  (global $acc (mut i32) (i32.const 0))
  (func $f (param $x i32) (result i32)
    (if (result i32) (i32.and (local.get $x) (i32.const 1))
      (then (i32.mul (local.get $x) (i32.const 3)))
      (else
        (if (result i32) (i32.and (local.get $x) (i32.const 2))
          (then (i32.const 7))
          (else (local.get $x))))))
  (func $g (param $x i32)
    (if (i32.gt_u (local.get $x) (i32.const 5))
      (then (global.set $acc (i32.add (global.get $acc) (i32.const 1))))))
  (func (export "run") (param $n i32)
    (local $i i32)
    (loop $l
      (if (i32.and (local.get $i) (i32.const 4))
        (then (call $g (call $f (local.get $i))))
        (else (drop (call $f (i32.add (local.get $i) (i32.const 1))))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))))"#;

const RUNS: i32 = 100;

/// The counts a run of `bytes` (instrumented as `map`) left in the profiler's memory: those in
/// preferential slots, and those of every other counter; paths the host counted go with the latter.
fn run(bytes: &[u8], map: &ProfileMap) -> (RawCounts, RawCounts) {
    let engine = Engine::default();
    let module = Module::new(&engine, bytes).unwrap();
    let mut store = Store::new(&engine, RawCounts::new());
    let mut linker: Linker<RawCounts> = Linker::new(&engine);
    linker
        .func_wrap("pathprof", "count_path", |mut c: wasmtime::Caller<'_, RawCounts>, f: i32, p: i64| {
            c.data_mut().entry(f as u32).or_default().push((p as u64, 1));
        })
        .unwrap();
    let instance: Instance = linker.instantiate(&mut store, &module).unwrap();
    let run = instance.get_typed_func::<i32, ()>(&mut store, "run").unwrap();
    run.call(&mut store, RUNS).unwrap();
    let name = map.memory_export.as_deref().expect("a profiler's memory");
    let memory = instance.get_memory(&mut store, name).unwrap().data(&store).to_vec();
    let (slots, others): (Vec<ArrayCounters>, Vec<ArrayCounters>) = map.arrays().into_iter().partition(|a| a.slots);
    let mut in_slots = RawCounts::new();
    for a in &slots {
        a.read(&memory, &mut in_slots);
    }
    let mut counted = store.into_data();
    for a in &others {
        a.read(&memory, &mut counted);
    }
    for t in map.tables() {
        t.read(&memory, &mut counted);
    }
    (in_slots, counted)
}

/// Counts by function and ID, summed.
fn by_id(counts: &RawCounts) -> BTreeMap<(u32, u64), u64> {
    let mut out = BTreeMap::new();
    for (&f, list) in counts {
        for &(id, n) in list {
            *out.entry((f, id)).or_default() += n;
        }
    }
    out.retain(|_, n| *n > 0);
    out
}

/// `run(n)` calls `f`, whose twenty tests of its argument's bits make 2^20 paths from its entry,
/// with arguments spread over those bits.
fn sparse() -> String {
    let tests: String = (0..20)
        .map(|i| format!("(if (i32.and (local.get $x) (i32.const {})) (then (global.set $acc (i32.add (global.get $acc) (i32.const {i})))))\n", 1 << i))
        .collect();
    format!(
        r#"(module
          (global $acc (mut i32) (i32.const 0))
          (func $f (param $x i32) {tests})
          (func (export "run") (param $n i32) (local $i i32)
            (loop $l
              (call $f (i32.mul (local.get $i) (i32.const 0x9e3779b1)))
              (local.set $i (i32.add (local.get $i) (i32.const 1)))
              (br_if $l (i32.lt_u (local.get $i) (local.get $n))))))"#
    )
}

fn instrumented(options: &InstrumentOptions) -> (Vec<u8>, ProfileMap) {
    instrumented_from(CALLS, options)
}

fn instrumented_from(wat: &str, options: &InstrumentOptions) -> (Vec<u8>, ProfileMap) {
    let wasm = wat::parse_str(wat).unwrap();
    let out = instrument(&wasm, options).unwrap();
    (out.bytes, out.map)
}

/// Interesting: every path of `run` whose call of `f` took one of `f`'s first two paths from its
/// entry (any head of `g`), and the even paths of `f` and `g`.
fn interesting(map: &ProfileMap) -> HashMap<u32, Vec<InterestingPath>> {
    let sg = |f: usize| map.functions[f].probes().unwrap().supergraph.clone().unwrap();
    let (f, g, run) = (sg(0), sg(1), sg(2));
    let entered = |function, path| Taken::Entered { function, path, calls: Vec::new() };
    let mut heads: BTreeSet<Taken> = (0..2).map(|d| entered(0, f.entry_base + d)).collect();
    heads.extend((0..g.entry_paths).map(|d| entered(1, g.entry_base + d)));
    let even = |s: &pathprof_core::supergraph::Supergraph| {
        (0..s.paths).step_by(2).map(|path| InterestingPath { path, heads: Vec::new() }).collect()
    };
    HashMap::from([
        (0, even(&f)),
        (1, even(&g)),
        (2, (0..run.paths).map(|path| InterestingPath { path, heads: vec![heads.clone(), heads.clone()] }).collect()),
    ])
}

fn check(options: InstrumentOptions, slotted: &[u32]) {
    check_with(CALLS, options, |map, _| interesting(map), slotted, 2);
}

/// The run of module `wat` instrumented with the interesting paths `choose` makes of its map and
/// of the counts of a run without them: functions `slotted` have slots, which count exactly the
/// interesting IDs; function `both` counts in its slots and apart.
fn check_with(
    wat: &str,
    options: InstrumentOptions,
    choose: impl Fn(&ProfileMap, &RawCounts) -> HashMap<u32, Vec<InterestingPath>>,
    slotted: &[u32],
    both: u32,
) {
    let plain = InstrumentOptions { interesting_segments: HashMap::new(), ..options.clone() };
    let (bytes, map) = instrumented_from(wat, &plain);
    let (none, exact) = run(&bytes, &map);
    assert!(none.is_empty());
    let options = InstrumentOptions { interesting_segments: choose(&map, &exact), ..options };
    let (bytes, map) = instrumented_from(wat, &options);
    let (in_slots, counted) = run(&bytes, &map);
    let (in_slots, counted) = (by_id(&in_slots), by_id(&counted));
    // Slots and counters together count what the run counts without slots.
    let mut all = counted.clone();
    for (&k, &n) in &in_slots {
        *all.entry(k).or_default() += n;
    }
    assert_eq!(all, by_id(&exact));
    let ids: HashMap<u32, BTreeSet<u64>> = (map.functions.iter())
        .filter_map(|f| Some((f.index, f.probes()?.supergraph_slots.as_ref()?.ids.iter().copied().collect())))
        .collect();
    let mut got: Vec<u32> = ids.keys().copied().collect();
    got.sort_unstable();
    assert_eq!(got, slotted, "the functions with slots");
    for &(f, id) in by_id(&exact).keys() {
        let interesting = ids.get(&f).is_some_and(|s| s.contains(&id));
        assert_eq!(in_slots.contains_key(&(f, id)), interesting, "function {f}, ID {id}: in a slot");
        assert_eq!(counted.contains_key(&(f, id)), !interesting, "function {f}, ID {id}: counted apart");
    }
    // Both kinds ran.
    assert!(in_slots.keys().any(|k| k.0 == both) && counted.keys().any(|k| k.0 == both), "{in_slots:?} {counted:?}");
}

#[test]
fn sparse_digits_count_in_their_slots_through_a_hashed_table() {
    // Every other path of f that ran is interesting, with a path that never runs; run's paths are
    // interesting through those heads. Their digits are far apart among 2^20: a table by digit
    // would pass a function's 2^18 weights, and run would have no slots.
    let choose = |map: &ProfileMap, exact: &RawCounts| {
        let mut ran: Vec<u64> = by_id(exact).keys().filter(|k| k.0 == 0).map(|k| k.1).collect();
        ran.sort_unstable();
        assert!(ran.len() > 50 && ran.last().unwrap() - ran[0] > 1 << 18, "{ran:?}");
        let sg = map.functions[0].probes().unwrap().supergraph.clone().unwrap();
        let chosen: Vec<u64> = ran.iter().copied().step_by(2).chain([sg.entry_base + (1 << 19) + 1]).collect();
        let heads: BTreeSet<Taken> =
            chosen.iter().map(|&path| Taken::Entered { function: 0, path, calls: Vec::new() }).collect();
        let run_paths = map.functions[1].probes().unwrap().plan.num_paths();
        HashMap::from([
            (0, chosen.iter().map(|&path| InterestingPath { path, heads: Vec::new() }).collect()),
            (1, (0..run_paths).map(|path| InterestingPath { path, heads: vec![heads.clone()] }).collect()),
        ])
    };
    let options =
        InstrumentOptions { sink: SinkKind::Supergraph { slots_everywhere: true, depth: 1 }, ..Default::default() };
    check_with(&sparse(), options, choose, &[0, 1], 1);
}

#[test]
fn slots_everywhere_count_the_interesting_supergraph_paths() {
    check(
        InstrumentOptions { sink: SinkKind::Supergraph { slots_everywhere: true, depth: 1 }, ..Default::default() },
        &[0, 1, 2],
    );
}

#[test]
fn slots_count_them_where_the_host_would() {
    // `run`'s supergraph IDs are more than 8, those of `f` and `g` fewer; its table (1 KiB) does
    // not fit in the profiler's memory, its slots do (past the sink's header: the head word and
    // the room for high keys).
    let header = u64::from(pathprof_wasm::abi::HIGH_KEYS) + 8 * u64::from(pathprof_core::supergraph::MAX_HIGH_WORDS);
    let options = InstrumentOptions {
        sink: SinkKind::Supergraph { slots_everywhere: false, depth: 1 },
        array_max_paths: 8,
        array_max_bytes: header + 512,
        ..Default::default()
    };
    check(options.clone(), &[2]);
    // With room for its table, it has no slots.
    let roomy = InstrumentOptions { array_max_bytes: header + 4096, ..options };
    let (_, map) = instrumented(&roomy);
    let (_, map) = instrumented(&InstrumentOptions { interesting_segments: interesting(&map), ..roomy });
    assert!(map.functions.iter().all(|f| f.probes().is_none_or(|p| p.supergraph_slots.is_none())));
}
