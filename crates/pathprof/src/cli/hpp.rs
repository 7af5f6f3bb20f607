//! `pathprof hpp`: the hardware path profiler [PPP07 ch. 5] simulated on a run's branches.

use anyhow::{bail, Result};
use pathprof::files::{check_outputs, write_atomically};
use pathprof::hpp::{simulate_on, HppSettings, TableBranches};
use pathprof::render;
use pathprof_core::hpp::{Extend, HptConfig, IndexFn, Mapping, Metric, Replacement, SimulatorOptions};
use pathprof_runtime::Stopper;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Entries of the Hot Path Table.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=1 << 24))]
    entries: u32,
    /// Ways of the Hot Path Table (its associativity; it divides the entries).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1 << 24))]
    ways: u32,
    /// Replacement: lfu (least frequently used) or lru (least recently used).
    #[arg(long, default_value = "lfu")]
    replacement: String,
    /// Set index: xor (start address, length and outcomes) or start (start address only).
    #[arg(long, default_value = "xor")]
    index: String,
    /// Which branches end paths: bl (backward and indirect branches, returns [PPP07 Table 5.1]) or
    /// wpp (also calls and returns [PPP07 Table 5.2]).
    #[arg(long, default_value = "bl")]
    mapping: String,
    /// Extended paths: across up to N backward branches (loops:N) or calls (calls:N).
    #[arg(long, value_name = "loops:N|calls:N")]
    extend: Option<String>,
    /// What the table accumulates per path: frequency, instructions or memory (accesses).
    #[arg(long, default_value = "frequency")]
    metric: String,
    /// Instructions (wasm operators) per window of the dynamic overlap; 0 for none.
    #[arg(long, default_value_t = 10_000_000)]
    window: u64,
    /// Entries of the path stack; 0 for a stack that grows into memory.
    #[arg(long, default_value_t = 32)]
    stack: usize,
    /// Most branches of a path descriptor.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u8).range(1..=96))]
    max_length: u8,
    /// Entries of the branch queue between the pipeline and the profiler.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1 << 16))]
    queue: u32,
    /// Instructions the pipeline commits per cycle, for the branch queue's cost.
    #[arg(long, default_value_t = 1.0)]
    ipc: f64,
    /// br_table as a forward multi-way branch (forward) or as an indirect one that ends paths
    /// (indirect).
    #[arg(long, default_value = "forward")]
    table_branches: String,
    /// Also simulate tables of 64 to 8192 entries and 1 to 16 ways on the same run, and print the
    /// overlap of each.
    #[arg(long)]
    sweep: bool,
    /// With --sweep, write a plot of complete overlap against table size (SVG) here.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Write the figures as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    program: super::run::Program,
}

/// Table sizes and ways of a sweep.
pub const SWEEP_ENTRIES: [u32; 8] = [64, 128, 256, 512, 1024, 2048, 4096, 8192];
pub const SWEEP_WAYS: [u32; 5] = [1, 2, 4, 8, 16];

fn settings(a: &Args) -> Result<HppSettings> {
    let replacement = match a.replacement.as_str() {
        "lfu" => Replacement::Lfu,
        "lru" => Replacement::Lru,
        r => bail!("--replacement {r}: lfu or lru"),
    };
    let index = match a.index.as_str() {
        "xor" => IndexFn::Xor,
        "start" => IndexFn::Start,
        i => bail!("--index {i}: xor or start"),
    };
    let mapping = match a.mapping.as_str() {
        "bl" => Mapping::BallLarus,
        "wpp" => Mapping::WholeProgram,
        m => bail!("--mapping {m}: bl or wpp"),
    };
    let extend = match a.extend.as_deref().map(|e| (e, e.split_once(':').map(|(k, n)| (k, n.parse::<u32>())))) {
        None => None,
        Some((_, Some(("loops", Ok(n))))) if n > 0 => Some(Extend::Loops(n)),
        Some((_, Some(("calls", Ok(n))))) if n > 0 => Some(Extend::Calls(n)),
        Some((e, _)) => bail!("--extend {e}: loops:N or calls:N, N at least 1"),
    };
    if matches!(extend, Some(Extend::Calls(_))) && mapping == Mapping::WholeProgram {
        bail!("--extend calls:N extends Ball–Larus paths across calls; --mapping wpp ends paths at every call");
    }
    let metric = match Metric::ALL.into_iter().find(|m| m.name() == a.metric) {
        Some(m) => m,
        None => bail!("--metric {}: frequency, instructions or memory", a.metric),
    };
    let tables = match a.table_branches.as_str() {
        "forward" => TableBranches::Forward,
        "indirect" => TableBranches::Indirect,
        t => bail!("--table-branches {t}: forward or indirect"),
    };
    if !a.entries.is_multiple_of(a.ways) {
        bail!("--entries {} is not a multiple of --ways {}", a.entries, a.ways);
    }
    if !(a.ipc.is_finite() && a.ipc > 0.0) {
        bail!("--ipc {}: a positive number", a.ipc);
    }
    if a.svg.is_some() && !a.sweep {
        bail!("--svg plots a sweep: give --sweep too");
    }
    let first = HptConfig { entries: a.entries, ways: a.ways, replacement, index };
    let mut configs = vec![first];
    if a.sweep {
        for entries in SWEEP_ENTRIES {
            for ways in SWEEP_WAYS {
                configs.push(HptConfig { entries, ways, ..first });
            }
        }
    }
    Ok(HppSettings {
        simulator: SimulatorOptions {
            mapping,
            extend,
            stack_capacity: (a.stack > 0).then_some(a.stack),
            max_length: a.max_length,
            metric,
            tables: configs,
            window: a.window,
            queue: a.queue as usize,
            ipc: a.ipc,
        },
        tables,
    })
}

pub fn run(a: Args, stopper: &Stopper) -> Result<i32> {
    let settings = settings(&a)?;
    let outputs: Vec<&std::path::Path> = a.svg.iter().chain(&a.json).map(PathBuf::as_path).collect();
    check_outputs(&[&a.program.app], &outputs)?;
    let mut config = a.program.config()?;
    config.stopper = Some(stopper.clone());
    config.time_limit = a.program.time_limit()?;
    let app = a.program.app.display().to_string();
    let bytes = a.program.bytes()?;
    let engine = a.program.engine(&bytes, false)?;
    a.program.check(&engine, &bytes)?;
    let hpp = simulate_on(&engine, &bytes, &app, &settings, &config)?;
    for r in &hpp.outcome.results {
        println!("{r}");
    }
    let mut err = std::io::stderr().lock();
    render::hpp::text(&mut err, &app, &hpp)?;
    if a.sweep {
        render::hpp::sweep(&mut err, &hpp.report)?;
    }
    if let Some(svg) = &a.svg {
        write_atomically(svg, render::hpp::svg(&hpp.report).as_bytes())?;
    }
    if let Some(json) = &a.json {
        write_atomically(json, render::hpp::json(&hpp).as_bytes())?;
    }
    Ok(hpp.outcome.exit_code)
}
