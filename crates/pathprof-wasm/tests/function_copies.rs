//! Sampled mode with whole-function copies: every function runs a plain copy while the host's flag
//! is clear and switches to its instrumented copy at its entry or at a loop header once the flag is
//! set — also in the middle of an activation — and back once the samples are taken.
//!
//! The oracle is the same program instrumented without function copies, its flag set before the
//! run, so that every path end is sampled: the full sequence of path ends, and where in it each call
//! of the host's `tick` came. Arming the flag at the k-th tick instead, the program must compute the
//! same result, and its samples must be the path ends of that sequence that follow the tick — but
//! the few whose paths were under way when the flag was set (one per frame, each finished in a
//! plain copy), which a switch never records.

use pathprof_wasm::abi::{SampleBufferLayout, SAMPLE_FLAG};
use pathprof_wasm::map::SinkLayout;
use pathprof_wasm::{instrument, InstrumentOptions, SinkKind};
use wasmtime::{Caller, Engine, Linker, Module, Store};

/// Loops at every kind of place: in both arms of an `if`, behind `br_table`s and branches that
/// cross the dispatch's wrappers, one entered with a value on the stack (no switch point), one in a
/// function that catches exceptions, and `tick` called from inside them.
const PROGRAM: &str = r#"(module
  (import "env" "tick" (func $tick (param i32)))
  (tag $oops (param i32))
  (memory 1)
  (global $t (mut i32) (i32.const 0))
  (func $step (result i32)
    global.get $t
    call $tick
    global.get $t
    i32.const 1
    i32.add
    global.set $t
    global.get $t)
  (func $inner (param $n i32) (result i32)
    (local $i i32) (local $j i32) (local $acc i32)
    block $out
      loop $l1
        local.get $i
        local.get $n
        i32.ge_u
        br_if $out
        local.get $acc
        i32.const 1000000
        i32.gt_u
        if
          local.get $acc
          return
        end
        local.get $i
        i32.const 3
        i32.rem_u
        if
          i32.const 0
          local.set $j
          loop $l2
            call $step
            local.get $acc
            i32.add
            local.set $acc
            local.get $j
            i32.const 1
            i32.add
            local.tee $j
            local.get $i
            i32.const 4
            i32.rem_u
            i32.le_u
            br_if $l2
          end
        else
          block $b
            block $c
              local.get $i
              i32.const 6
              i32.eq
              br_table $c $b
            end
            i32.const 0
            local.set $j
            loop $l3
              local.get $j
              i32.const 1
              i32.add
              local.set $j
              call $step
              i32.const 3
              i32.rem_u
              br_table $l3 $b $l3
            end
          end
        end
        i32.const 0
        local.set $j
        loop $l5
          call $step
          local.get $i
          i32.add
          i32.const 2
          i32.rem_u
          local.get $j
          i32.const 1
          i32.add
          local.tee $j
          i32.const 2
          i32.lt_u
          i32.and
          br_if $l5
        end
        i32.const 7
        i32.const 0
        local.set $j
        loop $l4 (result i32)
          call $step
          drop
          local.get $j
          i32.const 1
          i32.add
          local.tee $j
          i32.const 3
          i32.lt_u
          br_if $l4
          local.get $j
        end
        i32.add
        local.get $acc
        i32.add
        local.set $acc
        local.get $i
        i32.const 1
        i32.add
        local.set $i
        br $l1
      end
    end
    local.get $acc)
  (func $thrower (param $x i32)
    local.get $x
    i32.const 5
    i32.rem_u
    i32.eqz
    if
      local.get $x
      throw $oops
    end)
  (func $guarded (param $n i32) (result i32)
    (local $i i32) (local $caught i32)
    loop $l
      local.get $i
      i32.const 2
      i32.rem_u
      if
        global.get $t
        drop
      else
        loop $g
          call $step
          i32.const 4
          i32.rem_u
          br_if $g
        end
      end
      block $h (result i32)
        try_table (catch $oops $h)
          call $step
          call $thrower
        end
        i32.const 0
      end
      local.get $caught
      i32.add
      local.set $caught
      local.get $i
      i32.const 1
      i32.add
      local.tee $i
      local.get $n
      i32.lt_u
      br_if $l
    end
    local.get $caught)
  (func (export "main") (param $n i32) (result i32)
    (local $k i32) (local $sum i32)
    loop $m
      local.get $k
      call $inner
      local.get $sum
      i32.add
      local.set $sum
      local.get $k
      call $guarded
      local.get $sum
      i32.add
      local.set $sum
      local.get $k
      i32.const 1
      i32.add
      local.tee $k
      local.get $n
      i32.lt_u
      br_if $m
    end
    local.get $sum))"#;

const N: i32 = 9;
const SLOTS: u32 = 1 << 14;
/// Samples asked for at the tick.
const SAMPLES: u32 = 40;

/// When the host sets the flag.
#[derive(Clone, Copy)]
enum Arm {
    Never,
    /// Before the run, for every path end.
    Before,
    /// At the k-th tick, for `SAMPLES` path ends.
    AtTick(u32),
}

struct Host {
    arm: Arm,
    memory: String,
    layout: SampleBufferLayout,
    /// The number of samples in the buffer at each tick.
    ticks: Vec<u32>,
    next_tick: u32,
}

struct Run {
    result: i32,
    samples: Vec<u64>,
    ticks: Vec<u32>,
}

fn engine() -> Engine {
    Engine::new(wasmtime::Config::new().wasm_multi_memory(true).wasm_exceptions(true)).unwrap()
}

fn word(data: &mut [u8], offset: u32) -> &mut [u8] {
    &mut data[offset as usize..offset as usize + 4]
}

fn read_word(data: &[u8], offset: u32) -> u32 {
    u32::from_le_bytes(data[offset as usize..offset as usize + 4].try_into().unwrap())
}

/// Runs `main(N)` of `wasm` (instrumented when `map` gives its sample buffer).
fn run(engine: &Engine, wasm: &[u8], sampled: Option<(&str, SampleBufferLayout)>, arm: Arm) -> Run {
    let module = Module::new(engine, wasm).unwrap();
    let (memory, layout) = sampled.map_or((String::new(), SampleBufferLayout::new(1)), |(m, l)| (m.to_string(), l));
    let host = Host { arm, memory, layout, ticks: Vec::new(), next_tick: 0 };
    let mut store = Store::new(engine, host);
    let mut linker = Linker::new(engine);
    linker
        .func_wrap("env", "tick", |mut caller: Caller<'_, Host>, _: i32| {
            let (arm, name, layout, k) = {
                let h = caller.data_mut();
                h.next_tick += 1;
                (h.arm, h.memory.clone(), h.layout, h.next_tick - 1)
            };
            let Some(memory) = caller.get_export(&name).and_then(|e| e.into_memory()) else { return };
            let data = memory.data_mut(&mut caller);
            if matches!(arm, Arm::AtTick(at) if at == k) {
                word(data, layout.skip).copy_from_slice(&0u32.to_le_bytes());
                word(data, layout.index).copy_from_slice(&0u32.to_le_bytes());
                word(data, SAMPLE_FLAG).copy_from_slice(&SAMPLES.to_le_bytes());
            }
            let index = read_word(data, layout.index);
            caller.data_mut().ticks.push(index);
        })
        .unwrap();
    let instance = linker.instantiate(&mut store, &module).unwrap();
    let name = store.data().memory.clone();
    let memory = instance.get_memory(&mut store, &name);
    if let (Some(memory), Arm::Before) = (memory, arm) {
        let data = memory.data_mut(&mut store);
        word(data, SAMPLE_FLAG).copy_from_slice(&SLOTS.to_le_bytes());
    }
    let main = instance.get_typed_func::<i32, i32>(&mut store, "main").unwrap();
    let result = main.call(&mut store, N).unwrap();
    let samples = match memory {
        Some(memory) => {
            let data = memory.data(&store);
            let layout = store.data().layout;
            let n = read_word(data, layout.index);
            assert!(n < SLOTS, "the buffer holds every sample");
            (0..n)
                .map(|i| {
                    let at = (layout.buffer + 8 * i) as usize;
                    u64::from_le_bytes(data[at..at + 8].try_into().unwrap())
                })
                .collect()
        }
        None => Vec::new(),
    };
    Run { result, samples, ticks: std::mem::take(&mut store.data_mut().ticks) }
}

fn instrumented(wasm: &[u8], function_copies: bool) -> (Vec<u8>, String, SampleBufferLayout) {
    let options =
        InstrumentOptions { function_copies, ..InstrumentOptions::with_sink(SinkKind::Sample { buffer: Some(SLOTS) }) };
    let inst = instrument(wasm, &options).unwrap();
    let SinkLayout::Sample { buffer: Some(layout), wide: false } = inst.map.sink else { panic!("a sample buffer") };
    assert!(inst.map.functions.iter().all(|f| f.probes().is_some()), "every function is instrumented");
    (inst.bytes, inst.map.memory_export.expect("a profiler memory"), layout)
}

/// Functions switch to functions of their own, which take their locals as parameters.
#[test]
fn a_function_switches_copies_where_the_flag_is_set_and_samples_what_follows() {
    switches_and_samples(PROGRAM);
}

/// `inner`, with more locals than a function can take as parameters, holds both copies itself.
#[test]
fn a_function_with_too_many_locals_to_pass_switches_copies_within_itself() {
    let extra = format!("(local{})", " i64".repeat(1000));
    switches_and_samples(&PROGRAM.replace(
        "(local $i i32) (local $j i32) (local $acc i32)",
        &format!("(local $i i32) (local $j i32) (local $acc i32) {extra}"),
    ));
}

/// What `wasm` computes, its every path end in order (and where each tick came), and the module
/// with function copies, checked to compute the same: with the flag set from the start the
/// instrumented copies run throughout and sample every path end, with the flag never set the
/// plain copies run throughout and sample none.
struct Copied {
    expected: i32,
    full: Run,
    copied: Vec<u8>,
    memory: String,
    layout: SampleBufferLayout,
}

fn copies_agree(engine: &Engine, wasm: &[u8]) -> Copied {
    let expected = run(engine, wasm, None, Arm::Never).result;
    let (oracle, memory, layout) = instrumented(wasm, false);
    let full = run(engine, &oracle, Some((&memory, layout)), Arm::Before);
    assert_eq!(full.result, expected);
    let (copied, memory, layout) = instrumented(wasm, true);
    let same = run(engine, &copied, Some((&memory, layout)), Arm::Before);
    assert_eq!(same.result, expected);
    assert_eq!(same.samples, full.samples, "the instrumented copy samples as the instrumented function does");
    let plain = run(engine, &copied, Some((&memory, layout)), Arm::Never);
    assert_eq!(plain.result, expected);
    assert!(plain.samples.is_empty());
    Copied { expected, full, copied, memory, layout }
}

fn switches_and_samples(program: &str) {
    let wasm = wat::parse_str(program).unwrap();
    let engine = engine();
    let Copied { expected, full, copied, memory, layout } = copies_agree(&engine, &wasm);
    assert!(full.ticks.len() > 100, "{} ticks", full.ticks.len());

    // Functions by index: the import, then `step`, `inner`, `thrower`, `guarded`, `main`. At every
    // tick, `step`, its caller (`inner` or `guarded`) and `main` are under way: only their paths may
    // be left out, each frame's until it reaches a switch point.
    let live = |sample: u64| matches!(sample >> 32, 1 | 2 | 4 | 5);
    let mut resumed_inside = 0;
    for k in 0..full.ticks.len() as u32 {
        let armed = run(&engine, &copied, Some((&memory, layout)), Arm::AtTick(k));
        assert_eq!(armed.result, expected, "armed at tick {k}");
        let after = &full.samples[full.ticks[k as usize] as usize..];
        let mut left_out = Vec::new();
        let mut rest = after.iter();
        for &s in &armed.samples {
            loop {
                let &t = rest.next().unwrap_or_else(|| panic!("tick {k}: sample {s:x} is not among those after it"));
                if t == s {
                    break;
                }
                left_out.push(t);
            }
        }
        // Fewer samples than asked: the run ended first, and what followed the last one was left
        // out too.
        if armed.samples.len() < SAMPLES as usize {
            left_out.extend(rest);
        }
        assert!(
            left_out.len() <= 10 && left_out.iter().all(|&t| live(t)),
            "tick {k}: {left_out:x?} left out before the samples {:x?}",
            armed.samples
        );
        resumed_inside += usize::from(left_out.len() > 1);
    }
    // Resuming a frame that was under way at a loop header leaves out its path and its callee's.
    assert!(resumed_inside > 0);
}

/// Typed-reference branches (`br_on_null`, `br_on_cast_fail`) that leave a loop's dispatch
/// wrappers, before the loop and inside it: relabeled in the copies, they take the instrumented
/// copy to the same places as the plain one. `main(9)` walks lists of 0 to 8 nodes twice.
const GC_PROGRAM: &str = r#"(module
  (type $node (struct (field $next (ref null $node))))
  (memory 1)
  (func $walk (param $l (ref null $node)) (result i32) (local $n i32)
    (block $done
      (drop (br_on_null $done (local.get $l)))
      (loop $next
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (local.set $l (struct.get $node $next (local.get $l)))
        (drop (br_on_null $done (local.get $l)))
        (br $next)))
    (local.get $n))
  (func $nodes (param $r anyref) (result i32) (local $n i32)
    (block $done (result anyref)
      (br_on_cast_fail $done anyref (ref $node) (local.get $r))
      (drop)
      (loop $next
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (local.set $r (struct.get $node $next (ref.cast (ref $node) (local.get $r))))
        (br_on_cast_fail $done anyref (ref $node) (local.get $r))
        (drop)
        (br $next))
      (unreachable))
    (drop)
    (local.get $n))
  (func (export "main") (param $n i32) (result i32)
    (local $l (ref null $node)) (local $k i32) (local $sum i32)
    (loop $m
      (local.set $sum (i32.add (local.get $sum) (call $walk (local.get $l))))
      (local.set $sum (i32.add (local.get $sum) (call $nodes (local.get $l))))
      (local.set $l (struct.new $node (local.get $l)))
      (local.set $k (i32.add (local.get $k) (i32.const 1)))
      (br_if $m (i32.lt_u (local.get $k) (local.get $n))))
    (local.get $sum)))"#;

#[test]
fn typed_reference_branches_leave_the_wrappers_in_both_copies() {
    let wasm = wat::parse_str(GC_PROGRAM).unwrap();
    let engine = Engine::new(wasmtime::Config::new().wasm_multi_memory(true).wasm_gc(true)).unwrap();
    let copied = copies_agree(&engine, &wasm);
    assert_eq!(copied.expected, 2 * (0..N).sum::<i32>());
    assert!(!copied.full.samples.is_empty());
}
