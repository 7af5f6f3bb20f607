//! Records a program's k-BLPP stream to a file, and folds a recorded stream into a k-slab forest
//! [KBL13 Fig. 6] on one thread, timing the fold apart from the program: the consumer's side of
//! `kbl` mode alone, for measuring it (docs/PERFORMANCE.md, "k-BLPP").
//!
//! ```sh
//! cargo run --release -p pathprof-runtime --example fold_stream -- record PROGRAM.wasm STREAM N
//! cargo run --release -p pathprof-runtime --example fold_stream -- fold K ROUNDS STREAM...
//! ```
//!
//! `record` runs the program (its directory granted as `.`) and writes the first `N` items of its
//! stream, little-endian `u64`s as the module wrote them; `fold` folds each stream `ROUNDS` times and
//! prints the median and fastest fold with the forest's size.

use anyhow::{bail, ensure, Context, Result};
use pathprof_core::kpath::{Activations, Options};
use pathprof_runtime::{record_stream, StreamFolder};
use std::path::Path;
use std::time::Instant;

fn record(wasm: &Path, out: &Path, n: usize) -> Result<()> {
    let items = record_stream(wasm, n)?;
    let bytes: Vec<u8> = items.iter().flat_map(|i| i.to_le_bytes()).collect();
    std::fs::write(out, bytes).with_context(|| format!("cannot write {}", out.display()))?;
    println!("{}: {} items", out.display(), items.len());
    Ok(())
}

fn fold(k: usize, rounds: usize, stream: &Path) -> Result<()> {
    let bytes = std::fs::read(stream).with_context(|| format!("cannot read {}", stream.display()))?;
    ensure!(bytes.len() % 8 == 0, "{} is not a stream of 8-byte items", stream.display());
    let items: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    let mut times = Vec::with_capacity(rounds);
    let mut forest = (0, 0);
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        let mut folder = StreamFolder::new(Activations::with_options(k, Options::default()));
        folder.fold(&items);
        times.push(started.elapsed().as_secs_f64());
        let f = folder.activations.forest();
        forest = (f.len(), f.sibling_scans());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "{}: k = {k}, {} items, fold median {median:.3} s, fastest {:.3} s ({:.1} ns an item), {} nodes, {} sibling scans",
        stream.display(),
        items.len(),
        times[0],
        median * 1e9 / items.len().max(1) as f64,
        forest.0,
        forest.1
    );
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["record", wasm, out, n] => record(Path::new(wasm), Path::new(out), n.parse().context("N: a number of items")?),
        ["fold", k, rounds, streams @ ..] if !streams.is_empty() => {
            let k: usize = k.parse().context("K: a number of paths")?;
            ensure!(k >= 2, "K must be at least 2");
            let rounds = rounds.parse().context("ROUNDS: a number")?;
            streams.iter().try_for_each(|s| fold(k, rounds, Path::new(s)))
        }
        _ => bail!("usage: fold_stream record PROGRAM.wasm STREAM N | fold K ROUNDS STREAM..."),
    }
}
