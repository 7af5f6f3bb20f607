//! Instrumentation throughput (validation, CFG + numbering + placement + re-encoding) in bytes of code
//! section per second, on the largest modules of ../shared/corpus; beside it, reading the DWARF line
//! table and attaching lines to every block, which a profile does after its run. Nothing runs when the
//! corpus is absent.

/// The allocator of the `pathprof` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pathprof_wasm::debuginfo::LineTable;
use pathprof_wasm::{instrument, InstrumentOptions, ModuleInfo};
use std::path::{Path, PathBuf};

fn corpus_modules() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "wasm") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"), &mut out);
    out
}

fn bench_instrument(c: &mut Criterion) {
    let mut modules: Vec<(String, Vec<u8>, usize)> = corpus_modules()
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            let code = ModuleInfo::read(&bytes).unwrap().code_size();
            let name = format!(
                "{}/{}",
                p.parent().unwrap().file_name().unwrap().to_string_lossy(),
                p.file_name().unwrap().to_string_lossy()
            );
            (name, bytes, code)
        })
        .collect();
    if modules.is_empty() {
        eprintln!("../shared/corpus is absent: nothing to measure");
        return;
    }
    modules.sort_by_key(|m| std::cmp::Reverse(m.2));
    let mut group = c.benchmark_group("instrument");
    group.sample_size(20);
    let options = InstrumentOptions::default();
    for (name, bytes, code) in modules.iter().take(4) {
        group.throughput(Throughput::Bytes(*code as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), bytes, |b, bytes| {
            b.iter(|| instrument(bytes, &options).unwrap())
        });
    }
    group.finish();
    let mut group = c.benchmark_group("lines");
    group.sample_size(20);
    for (name, bytes, code) in modules.iter().take(4) {
        let mut map = instrument(bytes, &options).unwrap().map;
        group.throughput(Throughput::Bytes(*code as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), bytes, |b, bytes| {
            b.iter(|| {
                if let Some(lines) = LineTable::read(bytes) {
                    lines.attach(map.functions.iter_mut().flat_map(|f| &mut f.blocks));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_instrument);
criterion_main!(benches);
