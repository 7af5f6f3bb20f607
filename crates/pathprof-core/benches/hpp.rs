//! The hardware path profiler's simulator [PPP07 ch. 5] alone, in branches per second on one core:
//! a synthetic stream shaped as programs are — a driver calling 64 functions, each a loop whose body
//! takes 2 to 9 forward branches with skewed outcomes (a few hot paths, a tail of cold ones), with
//! instructions and memory accesses between branches — fed to the thesis' 512-entry 4-way LFU table
//! with 10 M-instruction windows, and to the 41 tables of `pathprof hpp --sweep`. (`pathprof hpp`
//! prints the speed of the whole consumer on a real run: the trace's decoding included.)

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pathprof_core::hpp::{Branch, BranchKind, Events, HptConfig, Simulator, SimulatorOptions};

/// Branches in the stream.
const BRANCHES: usize = 4_000_000;

fn stream() -> Vec<Branch> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let events = |n: u64| Events { instructions: n, memory: n / 3 };
    let branch = |kind, target, outcome, n| Branch { kind, target, outcome, width: 1, events: events(n) };
    let mut out = Vec::with_capacity(BRANCHES + 64);
    while out.len() < BRANCHES {
        let f = (rand() % 64) as u32;
        let entry = 10_000 + 1_000 * f;
        out.push(branch(BranchKind::Call, entry, 1, 4));
        let body = 2 + f % 8;
        for _ in 0..1 + rand() % 20 {
            for b in 0..body {
                // Mostly the same way; now and then the other.
                let outcome = u32::from((f + b).is_multiple_of(3)) ^ u32::from(rand().is_multiple_of(16));
                out.push(branch(BranchKind::Forward, entry + 10 * (b + 1), outcome, 3 + rand() % 6));
            }
            out.push(branch(BranchKind::Backward, entry + 4, 1, 2));
        }
        out.push(branch(BranchKind::Return, 8, 1, 3));
    }
    out
}

fn bench_hpp(c: &mut Criterion) {
    let stream = stream();
    let mut group = c.benchmark_group("hpp");
    group.sample_size(10);
    group.throughput(Throughput::Elements(stream.len() as u64));
    let mut sweep = vec![HptConfig::DEFAULT];
    for entries in [64, 128, 256, 512, 1024, 2048, 4096, 8192] {
        for ways in [1, 2, 4, 8, 16] {
            sweep.push(HptConfig { entries, ways, ..HptConfig::DEFAULT });
        }
    }
    for (name, tables) in [("512x4", vec![HptConfig::DEFAULT]), ("sweep", sweep)] {
        group.bench_with_input(BenchmarkId::new("simulate", name), &tables, |b, tables| {
            b.iter(|| {
                let mut sim = Simulator::new(SimulatorOptions {
                    tables: tables.clone(),
                    window: 10_000_000,
                    ..SimulatorOptions::default()
                });
                for br in &stream {
                    sim.branch(br);
                }
                sim.finish();
                sim.reports()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_hpp);
criterion_main!(benches);
