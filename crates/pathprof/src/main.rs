//! `pathprof`: the command-line interface.
//!
//! * `pathprof run` — instrument a module, run it under Wasmtime, write the profile, print hot paths;
//! * `pathprof instrument` — write an instrumented module and its counter map;
//! * `pathprof report` — print hot paths from a profile file;
//! * `pathprof export` — write the k-iteration path forests of a `kbl` profile as folded stacks or as
//!   a flame graph.

/// The instrumenter's per-function analyses allocate many small vectors on several threads, where
/// mimalloc is markedly faster than the system allocator (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench;
mod export;
mod profile_file;
mod report;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use pathprof_core::profile::{ModuleInfo as ProfileModule, Profile, U64};
use pathprof_runtime::RunConfig;
use pathprof_wasm::debuginfo::LineTable;
use pathprof_wasm::{InstrumentOptions, ProfileMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser)]
#[command(name = "pathprof", version, about = "Path profiler for WebAssembly programs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Run the program uninstrumented (the baseline for overhead measurements).
    None,
    /// Exact Ball–Larus path profiling.
    Bl,
    /// Sampled path and edge profiling (PEP): paths are numbered as in `bl`, only sampled path ends
    /// are recorded.
    Pep,
    /// Multi-iteration path profiling (k-BLPP): every sequence of up to `-k` consecutive paths of an
    /// activation, counted exactly.
    Kbl,
}

/// Sampling options of `--mode pep`.
#[derive(clap::Args, Clone, Debug)]
struct SamplingArgs {
    /// PEP: consecutive path ends sampled after each timer tick (at most 1048576).
    #[arg(long, default_value_t = 64)]
    samples: u32,
    /// PEP: after each tick, skip a rotating number of path ends in 1..=STRIDE before sampling.
    #[arg(long, default_value_t = 17)]
    stride: u32,
    /// PEP: sample every N-th path end instead, without a timer (deterministic).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    every: Option<u64>,
    /// PEP: timer period in milliseconds.
    #[arg(long, default_value_t = 0.25)]
    tick_ms: f64,
}

impl SamplingArgs {
    fn sampling(&self) -> Result<pathprof_runtime::Sampling> {
        if self.samples == 0 || self.stride == 0 || !self.tick_ms.is_finite() || self.tick_ms <= 0.0 {
            bail!("--samples, --stride and --tick-ms must be positive");
        }
        // The samples of a tick are kept in the profiler's memory, 8 bytes each.
        if self.samples > MAX_SAMPLES_PER_TICK {
            bail!("--samples must be at most {MAX_SAMPLES_PER_TICK}");
        }
        Ok(pathprof_runtime::Sampling {
            samples: self.samples,
            stride: self.stride,
            every: self.every,
            tick: std::time::Duration::from_secs_f64(self.tick_ms / 1e3),
        })
    }
}

/// Most samples per timer tick.
pub(crate) const MAX_SAMPLES_PER_TICK: u32 = 1 << 20;

#[derive(Subcommand)]
enum Command {
    /// Profile a WASI program and print its hot paths.
    Run {
        /// Profiling mode.
        #[arg(long, value_enum, default_value = "bl")]
        mode: Mode,
        /// Where to write the profile.
        #[arg(short = 'o', long = "output", default_value = "pathprof.json")]
        output: PathBuf,
        /// Print nothing (the program's own output is untouched either way).
        #[arg(long)]
        quiet: bool,
        /// Number of hot paths to print.
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Grant a host directory to the program: HOST or HOST::GUEST (repeatable).
        #[arg(long = "dir", value_name = "HOST[::GUEST]")]
        dirs: Vec<String>,
        /// Set an environment variable for the program (repeatable).
        #[arg(long = "env", value_name = "NAME=VALUE")]
        envs: Vec<String>,
        /// Call this exported function instead of `_start`; ARGS are its arguments.
        #[arg(long)]
        invoke: Option<String>,
        /// A previous profile of the same module: its edge frequencies place the increments on cold
        /// edges (the static estimate from loop depth is used otherwise).
        #[arg(long, value_name = "PROFILE")]
        edge_profile: Option<PathBuf>,
        #[command(flatten)]
        sampling: SamplingArgs,
        /// k-BLPP: longest sequences of paths profiled.
        #[arg(short = 'k', default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
        k: u16,
        /// k-BLPP: most k-slab-forest nodes (16 bytes each). Past the bound, the Ball–Larus counts stay
        /// exact and longer sequences' counts become lower bounds; the profile says by how much.
        #[arg(long, value_name = "N")]
        max_nodes: Option<usize>,
        /// The program.
        app: PathBuf,
        /// Arguments of the program.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Write an instrumented module and the map that decodes its counters.
    Instrument {
        input: PathBuf,
        /// The instrumented module.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Where to write the map (default: OUTPUT with `.map.json` appended).
        #[arg(long)]
        map: Option<PathBuf>,
        /// A previous profile of the same module, as for `run`.
        #[arg(long, value_name = "PROFILE")]
        edge_profile: Option<PathBuf>,
    },
    /// Measure each mode's overhead against the uninstrumented programs of a Sightglass-style corpus.
    Bench {
        /// Folder of programs (searched recursively for `.wasm` files).
        corpus: PathBuf,
        /// Modes to compare with `none`, comma-separated: `bl`, `pep`, `kbl:K` (k-BLPP with sequences
        /// of up to K paths, 1 ≤ K ≤ 64).
        #[arg(long, default_value = "bl", value_delimiter = ',')]
        modes: Vec<String>,
        /// Least number of runs per mode.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Most runs per mode.
        #[arg(long, default_value_t = 200)]
        max_runs: usize,
        /// Stop repeating once every mode's median absolute deviation is within this fraction.
        #[arg(long, default_value_t = 0.02)]
        spread: f64,
        /// Seconds of runs per program after which no more rounds start.
        #[arg(long, default_value_t = 60.0)]
        budget: f64,
        /// Only programs whose path contains this string.
        #[arg(long)]
        filter: Option<String>,
        /// Leave programs whose uninstrumented bench region lasts less than this many seconds out of
        /// the summary (they keep their row).
        #[arg(long, default_value_t = 0.0)]
        min_seconds: f64,
        /// Also write the figures as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Accuracy of a sampled profile against an exact one of the same run (seed 004 §6.3–6.4).
    Compare {
        exact: PathBuf,
        sampled: PathBuf,
        /// Hot-path threshold, as a fraction of the total branch flow.
        #[arg(long, default_value_t = pathprof_core::accuracy::HOT_THRESHOLD)]
        threshold: f64,
        /// Functions listed.
        #[arg(long, default_value_t = 10)]
        top: usize,
    },
    /// Print the hot paths of a profile.
    Report {
        profile: PathBuf,
        #[arg(long, default_value_t = 10)]
        top: usize,
        /// Only this function (its name or its index).
        #[arg(long)]
        function: Option<String>,
        /// Print the selected paths as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the k-iteration path forests of a `kbl` profile as folded stacks and/or a flame graph.
    #[command(group(clap::ArgGroup::new("output").args(["folded", "svg"]).required(true).multiple(true)))]
    Export {
        profile: PathBuf,
        /// Write folded stacks (`function;path;path... COUNT`, one line per sequence) to this file
        /// (`-`: standard output).
        #[arg(long, value_name = "OUT")]
        folded: Option<PathBuf>,
        /// Draw the flame graph to this SVG file (`-`: standard output).
        #[arg(long, value_name = "OUT")]
        svg: Option<PathBuf>,
        /// Only this function (its name or its index).
        #[arg(long)]
        function: Option<String>,
    },
}

fn main() {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("pathprof: error: {msg}");
            std::process::exit(1);
        }
    }
}

fn dispatch(command: Command) -> Result<i32> {
    match command {
        Command::Run {
            mode,
            output,
            quiet,
            top,
            dirs,
            envs,
            invoke,
            edge_profile,
            sampling,
            k,
            max_nodes,
            app,
            args,
        } => {
            let mut config = run_config(&app, &dirs, &envs, invoke, args)?;
            config.sampling = sampling.sampling()?;
            config.k = usize::from(k);
            config.max_nodes = max_nodes;
            run(mode, &app, &output, quiet, top, &config, edge_profile.as_deref())
        }
        Command::Instrument { input, output, map, edge_profile } => {
            let bytes = read_module(&input)?;
            let options = instrument_options(&bytes, edge_profile.as_deref())?;
            let mut inst = pathprof_wasm::instrument(&bytes, &options)
                .with_context(|| format!("cannot instrument {}", input.display()))?;
            if let Some(lines) = LineTable::read(&bytes) {
                lines.attach(inst.map.functions.iter_mut().flat_map(|f| &mut f.blocks));
            }
            pathprof_wasm::module::validate(&inst.bytes)
                .map_err(|e| anyhow!("the instrumented module of {} does not validate: {e}", input.display()))?;
            let map_path = map.unwrap_or_else(|| {
                let mut p = output.clone().into_os_string();
                p.push(".map.json");
                PathBuf::from(p)
            });
            profile_file::write_atomically(&output, &inst.bytes)?;
            profile_file::write_atomically(&map_path, inst.map.to_json().as_bytes())?;
            let probed = inst.map.functions.iter().filter(|f| f.probes.is_some()).count();
            eprintln!(
                "pathprof: wrote {} ({} of {} functions instrumented) and {}",
                output.display(),
                probed,
                inst.map.functions.len(),
                map_path.display()
            );
            Ok(0)
        }
        Command::Bench { corpus, modes, runs, max_runs, spread, budget, filter, min_seconds, json } => {
            if !min_seconds.is_finite() || min_seconds < 0.0 {
                bail!("--min-seconds must be a number of seconds, at least 0");
            }
            let options = bench::BenchOptions {
                modes: bench::parse_modes(&modes)?,
                min_runs: runs.max(1),
                max_runs: max_runs.max(runs),
                spread,
                budget_seconds: budget,
                filter,
                min_seconds,
            };
            report::bench_header(&mut std::io::stdout(), &options.modes)?;
            let result = bench::bench(&corpus, &options, |p| {
                let _ = report::bench_row(&mut std::io::stdout(), p);
                let _ = bench::write_details(&mut std::io::stdout(), p);
            })?;
            report::bench_summary(&mut std::io::stdout(), &result, options.timed_from())?;
            bench::write_summary_vs_bl(&mut std::io::stdout(), &result)?;
            if let Some(path) = json {
                profile_file::write_atomically(&path, serde_json::to_string_pretty(&result)?.as_bytes())?;
            }
            Ok(0)
        }
        Command::Compare { exact, sampled, threshold, top } => {
            let a = profile_file::read(&exact)?;
            let b = profile_file::read(&sampled)?;
            if a.module.sha256 != b.module.sha256 {
                bail!("{} and {} profile different modules", exact.display(), sampled.display());
            }
            report::compare(&mut std::io::stdout().lock(), &a, &b, threshold, top)?;
            Ok(0)
        }
        Command::Report { profile, top, function, json } => {
            let p = profile_file::read(&profile)?;
            if let Some(f) = &function {
                if !p.functions.iter().any(|x| report::matches(x, f)) {
                    bail!("no function {f:?} in {}", profile.display());
                }
            }
            let mut out = std::io::stdout().lock();
            if json {
                report::json(&mut out, &p, top, function.as_deref())?;
            } else {
                report::text(&mut out, &p, top, function.as_deref())?;
            }
            Ok(0)
        }
        Command::Export { profile, folded, svg, function } => {
            export::export(&profile, folded.as_deref(), svg.as_deref(), function.as_deref())?;
            Ok(0)
        }
    }
}

fn run_config(
    app: &Path,
    dirs: &[String],
    envs: &[String],
    invoke: Option<String>,
    args: Vec<String>,
) -> Result<RunConfig> {
    let mut config = RunConfig { invoke, ..RunConfig::default() };
    for d in dirs {
        let (host, guest) = match d.split_once("::") {
            Some((h, g)) => (h.to_string(), g.to_string()),
            None => (d.clone(), d.clone()),
        };
        if !Path::new(&host).is_dir() {
            bail!("--dir {d}: {host} is not a directory");
        }
        config.dirs.push((PathBuf::from(host), guest));
    }
    for e in envs {
        let (k, v) = e.split_once('=').ok_or_else(|| anyhow!("--env {e}: expected NAME=VALUE"))?;
        config.env.push((k.to_string(), v.to_string()));
    }
    let name = app.file_name().map_or_else(|| app.display().to_string(), |n| n.to_string_lossy().into_owned());
    config.args.push(name);
    config.args.extend(args);
    Ok(config)
}

/// Reads a module in the binary format, or in the text format (`.wat`).
fn read_module(path: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.starts_with(b"\0asm") || !bytes.iter().take(64).all(|b| b.is_ascii()) {
        return Ok(bytes);
    }
    wat::parse_bytes(&bytes).map(|b| b.into_owned()).map_err(|e| {
        anyhow!(
            "{}: not a WebAssembly module (text format error: {})",
            path.display(),
            e.to_string().lines().next().unwrap_or("")
        )
    })
}

/// Gives every function its part of the run's k-IPF (labels are `function << 32 | path ID`), cut to
/// sequences of at most `k` paths.
fn attach_kipf(functions: &mut [pathprof_core::profile::FunctionProfile], kipf: &pathprof_core::kpath::Kipf, k: usize) {
    use pathprof_core::kpath::KipfNode;
    use pathprof_core::profile::{KipfNodeProfile, KipfProfile};
    fn convert(n: &KipfNode, depth: usize) -> KipfNodeProfile {
        let children = if depth > 1 { n.children.iter().map(|c| convert(c, depth - 1)).collect() } else { Vec::new() };
        KipfNodeProfile { path: U64(n.path & 0xffff_ffff), count: U64(n.count), children }
    }
    for f in functions.iter_mut().filter(|f| f.instrumented) {
        // The roots are the function's Ball–Larus counts. Sequences of two paths or more come from the
        // stream: a function counted in an array, or an activation that ended a single path, has none.
        let mut streamed: std::collections::HashMap<u64, KipfNodeProfile> = kipf
            .roots
            .iter()
            .filter(|r| (r.path >> 32) as u32 == f.index)
            .map(|r| (r.path & 0xffff_ffff, convert(r, k)))
            .collect();
        let mut roots: Vec<KipfNodeProfile> = f
            .paths
            .iter()
            .map(|p| KipfNodeProfile {
                path: p.id,
                count: p.count,
                children: streamed.remove(&p.id.0).map_or_else(Vec::new, |n| n.children),
            })
            .collect();
        roots.extend(streamed.into_values());
        roots.sort_by_key(|r| r.path);
        f.kipf = Some(KipfProfile { k, roots });
    }
}

/// Instrumentation options, with the edge frequencies of `edge_profile` when one is given.
fn instrument_options(bytes: &[u8], edge_profile: Option<&Path>) -> Result<InstrumentOptions> {
    let mut options = InstrumentOptions::default();
    if let Some(path) = edge_profile {
        let profile = profile_file::read(path)?;
        if profile.module.sha256 != profile_file::sha256_hex(bytes) {
            bail!("{} is a profile of another module ({})", path.display(), profile.module.path);
        }
        options.edge_profile = profile.functions.into_iter().map(|f| (f.index, f.paths)).collect();
    }
    Ok(options)
}

fn run(
    mode: Mode,
    app: &Path,
    output: &Path,
    quiet: bool,
    top: usize,
    config: &RunConfig,
    edge_profile: Option<&Path>,
) -> Result<i32> {
    let bytes = read_module(app)?;
    let info = pathprof_wasm::ModuleInfo::read(&bytes).with_context(|| format!("cannot profile {}", app.display()))?;
    let (run_bytes, map, instrumentation_seconds): (Vec<u8>, Option<ProfileMap>, Option<f64>) = match mode {
        Mode::None => (bytes.clone(), None, None),
        Mode::Bl | Mode::Pep | Mode::Kbl => {
            let mut options = instrument_options(&bytes, edge_profile)?;
            options.sampled = mode == Mode::Pep;
            // Timer-driven sampling collects its samples from a buffer, without calls; `--every`
            // calls the host at every sampled path end.
            options.sample_buffer = config.sampling.sample_buffer();
            options.stream = mode == Mode::Kbl;
            let t = Instant::now();
            let inst = pathprof_wasm::instrument(&bytes, &options)
                .with_context(|| format!("cannot instrument {}", app.display()))?;
            (inst.bytes, Some(inst.map), Some(t.elapsed().as_secs_f64()))
        }
    };
    let engine = pathprof_runtime::engine()?;
    let outcome = pathprof_runtime::run(&engine, &run_bytes, map.as_ref(), config)?;
    let mut functions = match &map {
        Some(m) => m.function_profiles(&outcome.counts).map_err(|e| anyhow!("corrupt counters: {e}"))?,
        None => Vec::new(),
    };
    if let Some(kipf) = &outcome.kipf {
        attach_kipf(&mut functions, kipf, config.k);
    }
    // Source lines are read once the program has run (uninstrumented runs have no blocks).
    if let Some(lines) = (!functions.is_empty()).then(|| LineTable::read(&bytes)).flatten() {
        lines.attach(functions.iter_mut().flat_map(|f| &mut f.blocks));
    }
    let path_executions = functions.iter().flat_map(|f| &f.paths).map(|p| p.count.0).sum::<u64>();
    let profile = Profile {
        format: pathprof_core::profile::FORMAT.to_string(),
        version: pathprof_core::profile::VERSION,
        module: ProfileModule {
            path: app.display().to_string(),
            sha256: profile_file::sha256_hex(&bytes),
            size: bytes.len() as u64,
            code_section_size: info.code_size() as u64,
        },
        mode: match mode {
            Mode::None => "none",
            Mode::Bl => "bl",
            Mode::Pep => "pep",
            Mode::Kbl => "kbl",
        }
        .to_string(),
        args: config.args.clone(),
        wall_seconds: outcome.wall_seconds,
        bench_region_seconds: outcome.bench_region_seconds,
        instrumentation_seconds,
        exit_code: outcome.exit_code,
        trap: outcome.trap.clone(),
        open_activations_at_exit: outcome.open_activations,
        path_executions: U64(path_executions),
        sampling: (mode == Mode::Pep).then_some(pathprof_core::profile::SamplingInfo {
            samples: config.sampling.samples,
            stride: config.sampling.stride,
            every: config.sampling.every,
            tick_ms: config.sampling.tick.as_secs_f64() * 1e3,
            ticks: outcome.ticks,
            samples_taken: outcome.samples,
        }),
        kbl: outcome.ksf.map(|f| pathprof_core::profile::KblInfo {
            k: config.k,
            stream_items: U64(f.stream_items),
            ksf_nodes: U64(f.nodes as u64),
            ksf_node_bytes: pathprof_core::kpath::NODE_BYTES as u32,
            sibling_scans: U64(f.sibling_scans),
            max_nodes: config.max_nodes.map(|n| U64(n as u64)),
            dropped: U64(f.dropped),
        }),
        functions,
    };
    profile_file::write_atomically(output, profile.to_json().as_bytes())?;
    for r in &outcome.results {
        println!("{r}");
    }
    if !quiet {
        let mut err = std::io::stderr().lock();
        report::text(&mut err, &profile, top, None)?;
        use std::io::Write;
        writeln!(err, "profile written to {}", output.display())?;
    }
    Ok(outcome.exit_code)
}
