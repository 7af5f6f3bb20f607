//! Sampled mode with a sample buffer: a loop of one block that calls nothing runs a copy without
//! probes while the sampling flag is 0. When the flag is set while the copy runs, the loop's exit
//! takes the samples of the loop's path that the probes would have taken, from the host's random
//! word: `random * n >> 32` of the `n - 1` path ends came after the flag was set; and it counts the
//! ticks the host missed meanwhile, each a burst of samples that the host adds.

use pathprof_wasm::abi::SAMPLE_FLAG;
use pathprof_wasm::map::SinkLayout;
use pathprof_wasm::{instrument, InstrumentOptions, SinkKind};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use wasmtime::{Engine, Instance, Module, Store};

/// `spin(n)` goes round its loop `n` times.
const SPIN: &str = r#"(module
  (memory 1)
  (func (export "spin") (param i32) (result i32)
    (local i32)
    loop
      local.get 1
      i32.const 1
      i32.add
      local.tee 1
      local.get 0
      i32.lt_u
      br_if 0
    end
    local.get 1))"#;

/// Iterations of a run: long enough for the flag to be set while the copy runs.
const N: u32 = 1 << 28;

struct Words {
    base: usize,
    flag: u32,
    skip: u32,
    index: u32,
    random: u32,
    missed: u32,
    buffer: u32,
    /// The loop's count of missed ticks (bursts the copy did not take).
    bursts: u32,
}

impl Words {
    fn word(&self, offset: u32) -> &AtomicU32 {
        // SAFETY: the offsets lie inside the profiler's memory, which outlives the test's runs and
        // does not move (its minimum is its maximum); compiled code accesses it meanwhile, as the
        // runtime's timer thread does.
        unsafe { &*((self.base + offset as usize) as *const AtomicU32) }
    }

    fn bursts(&self) -> u64 {
        let lo = self.word(self.bursts).load(Ordering::Relaxed);
        let hi = self.word(self.bursts + 4).load(Ordering::Relaxed);
        u64::from(hi) << 32 | u64::from(lo)
    }

    fn sample(&self, i: u32) -> u64 {
        let lo = self.word(self.buffer + 8 * i).load(Ordering::Relaxed);
        let hi = self.word(self.buffer + 8 * i + 4).load(Ordering::Relaxed);
        u64::from(hi) << 32 | u64::from(lo)
    }

    /// As the host sets the words before it sets the flag.
    fn reset(&self, skip: u32, random: u32) {
        self.word(self.index).store(0, Ordering::Relaxed);
        self.word(self.missed).store(0, Ordering::Relaxed);
        self.word(self.skip).store(skip, Ordering::Relaxed);
        self.word(self.random).store(random, Ordering::Relaxed);
    }
}

struct Setup {
    store: Store<()>,
    instance: Instance,
    words: Words,
}

/// `spin` instrumented with a buffer, as a whole-function copy too or not.
fn setup(function_copies: bool) -> Setup {
    let wasm = wat::parse_str(SPIN).unwrap();
    let options =
        InstrumentOptions { function_copies, ..InstrumentOptions::with_sink(SinkKind::Sample { buffer: Some(64) }) };
    let inst = instrument(&wasm, &options).unwrap();
    let SinkLayout::Sample { buffer: Some(layout), .. } = inst.map.sink else { panic!("a sample buffer") };
    let engine = Engine::new(wasmtime::Config::new().wasm_multi_memory(true)).unwrap();
    let module = Module::new(&engine, &inst.bytes).unwrap();
    let mut store = Store::new(&engine, ());
    let instance = Instance::new(&mut store, &module, &[]).unwrap();
    let name = inst.map.memory_export.as_deref().expect("the profiler's memory is exported");
    let memory = instance.get_memory(&mut store, name).unwrap();
    let words = Words {
        base: memory.data_ptr(&store) as usize,
        flag: SAMPLE_FLAG,
        skip: layout.skip,
        index: layout.index,
        random: layout.random,
        missed: layout.missed,
        buffer: layout.buffer,
        bursts: inst.map.functions[0].probes().expect("instrumented").loop_bursts[0].slot,
    };
    Setup { store, instance, words }
}

/// Runs `spin(N)` with the flag set to `samples`, at once or after `delay`, and then `missed` ticks
/// counted as missed; returns the samples taken, and whether that happened while the loop ran (more
/// than a millisecond after the call began and before it returned).
fn run(s: &mut Setup, samples: u32, missed: u32, delay: Option<Duration>) -> (Vec<u64>, bool) {
    let spin = s.instance.get_typed_func::<u32, u32>(&mut s.store, "spin").unwrap();
    let (flag, missed_word) = (s.words.base + s.words.flag as usize, s.words.base + s.words.missed as usize);
    // SAFETY: as in `Words::word`.
    let set = move || {
        unsafe { &*(flag as *const AtomicU32) }.store(samples, Ordering::Release);
        unsafe { &*(missed_word as *const AtomicU32) }.fetch_add(missed, Ordering::Relaxed);
        Instant::now()
    };
    let began = Instant::now();
    let setter = match delay {
        None => {
            set();
            None
        }
        Some(d) => Some(std::thread::spawn(move || {
            std::thread::sleep(d);
            set()
        })),
    };
    assert_eq!(spin.call(&mut s.store, N).unwrap(), N);
    let returned = Instant::now();
    let during =
        setter.map(|t| t.join().unwrap()).is_some_and(|at| at > began + Duration::from_millis(1) && at < returned);
    let taken = s.words.word(s.words.index).load(Ordering::Relaxed);
    ((0..taken).map(|i| s.words.sample(i)).collect(), during)
}

#[test]
fn the_loop_copy_takes_the_samples_of_the_iterations_after_the_flag() {
    loop_copy_samples(false);
}

/// With whole-function copies, the loop's copy runs in the function's plain copy, which records no
/// path end: the path out of the loop is not sampled.
#[test]
fn the_loop_copy_of_a_function_copy_takes_the_samples_of_the_iterations_after_the_flag() {
    loop_copy_samples(true);
}

fn loop_copy_samples(function_copies: bool) {
    let mut s = setup(function_copies);
    // With the flag set before the call, the instrumented loop runs and samples the path into the
    // loop, then the loop's own path.
    s.words.reset(0, 0);
    let (taken, _) = run(&mut s, 3, 0, None);
    assert_eq!(taken.len(), 3);
    let (into, path) = (taken[0], taken[1]);
    assert_eq!(taken[2], path, "the loop's path, twice: {taken:x?}");
    assert_ne!(into, path);
    // `random * N >> 32` with N = 2^28 is `random >> 4`: `left` path ends of the loop came after
    // the flag; `skip` of them go by, the next `samples` are taken.
    for (left, skip, samples, missed) in [(1000, 5, 64, 3), (30, 5, 64, 0), (3, 5, 64, 1), (0, 5, 64, 0), (10, 0, 4, 2)]
    {
        let (taken, skip_after, flag_after) = (0..5)
            .find_map(|_| {
                s.words.word(s.words.flag).store(0, Ordering::Relaxed);
                s.words.reset(skip, left << 4);
                let bursts = s.words.bursts();
                let (taken, during) = run(&mut s, samples, missed, Some(Duration::from_millis(20)));
                // Each missed tick is a burst the host adds.
                assert_eq!(s.words.bursts() - bursts, u64::from(missed), "left {left}");
                let skip = s.words.word(s.words.skip).load(Ordering::Relaxed);
                let flag = s.words.word(s.words.flag).load(Ordering::Relaxed);
                during.then_some((taken, skip, flag))
            })
            .expect("the flag was set while the loop ran in one of five runs");
        let in_loop = (left - left.min(skip)).min(samples);
        assert!(taken.len() >= in_loop as usize, "left {left}: {taken:x?}");
        assert!(taken[..in_loop as usize].iter().all(|&t| t == path), "left {left}: {taken:x?}");
        // The path out of the loop ends after it, at the function's exit, where the probes see the
        // flag as usual: they let it go by while `skip` is not 0, and sample it otherwise.
        let skip_left = skip - left.min(skip);
        let flag_left = samples - in_loop;
        let exit_sampled = flag_left > 0 && skip_left == 0 && !function_copies;
        assert_eq!(taken.len(), in_loop as usize + usize::from(exit_sampled), "left {left}: {taken:x?}");
        if exit_sampled {
            assert!(taken[in_loop as usize] != path && taken[in_loop as usize] != into, "{taken:x?}");
        }
        let exit_skipped = flag_left > 0 && skip_left > 0 && !function_copies;
        assert_eq!(skip_after, skip_left - u32::from(exit_skipped), "left {left}");
        assert_eq!(flag_after, flag_left - u32::from(exit_sampled), "left {left}");
    }
}
