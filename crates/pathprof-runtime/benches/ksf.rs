//! k-SF construction throughput [KBL13 Fig. 6], in path IDs per second on one core, over streams
//! recorded from programs of ../shared/corpus run in kbl mode: as built (child cache, move to front,
//! nodes laid out anew as the forest grows), without the relayout, without the child cache, and
//! without the cache and moving to the front. Nothing runs when the corpus is absent.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pathprof_core::kpath::{Activations, Options};
use pathprof_runtime::{record_stream, StreamFolder};
use pathprof_wasm::abi::StreamItem;
use std::path::Path;

/// Items recorded per program.
const ITEMS: usize = 40_000_000;

const PROGRAMS: &[&str] = &[
    "shootout/shootout-sieve.wasm",
    "shootout/shootout-matrix.wasm",
    "shootout/shootout-fib2.wasm",
    "shootout/shootout-minicsv.wasm",
    "bz2/benchmark.wasm",
    "quicksort/benchmark.wasm",
    "shootout/shootout-heapsort.wasm",
    "shootout/shootout-switch.wasm",
];

fn bench_ksf(c: &mut Criterion) {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    if !corpus.is_dir() {
        eprintln!("../shared/corpus is absent: nothing to measure");
        return;
    }
    let mut group = c.benchmark_group("ksf");
    group.sample_size(10);
    for program in PROGRAMS {
        let stream = record_stream(&corpus.join(program), ITEMS).unwrap();
        // Path IDs, a repeat item standing for as many as it repeats.
        let paths: u64 = stream
            .iter()
            .map(|&i| match StreamItem::decode(i) {
                StreamItem::Enter { .. } | StreamItem::Call | StreamItem::Leave | StreamItem::Count { .. } => 0,
                StreamItem::Repeat(n) => n,
                StreamItem::Path { .. } | StreamItem::ExitPath { .. } => 1,
            })
            .sum();
        group.throughput(Throughput::Elements(paths));
        for k in [2, 8] {
            let layout = Options::default().relayout_from;
            for (move_to_front, child_cache, relayout_from, variant) in [
                (true, true, layout, ""),
                (true, true, None, " no-layout"),
                (true, false, layout, " no-cache"),
                (false, false, layout, " no-cache no-mtf"),
            ] {
                let id = format!("{program} k={k}{variant}");
                let options = Options { move_to_front, child_cache, relayout_from, ..Options::default() };
                let fold = |stream: &[u64]| {
                    let mut folder = StreamFolder::new(Activations::with_options(k, options));
                    folder.fold(stream);
                    folder
                };
                let folder = fold(&stream);
                let forest = folder.activations.forest();
                eprintln!(
                    "{id}: {} nodes, {:.3} sibling scans per path ID, {} relayouts",
                    forest.len(),
                    forest.sibling_scans() as f64 / paths.max(1) as f64,
                    forest.relayouts()
                );
                group.bench_with_input(BenchmarkId::from_parameter(id), &stream, |b, stream| {
                    b.iter(|| fold(stream).activations.forest().len())
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_ksf);
criterion_main!(benches);
