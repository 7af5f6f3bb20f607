//! `pathprof run`: instrument a module for a mode, run it, write its profile, print its hot paths.

use anyhow::{anyhow, bail, Result};
use pathprof::files::{check_outputs, read_module, read_profile, write_atomically};
use pathprof::modes::Setting;
use pathprof::render;
use pathprof::view::Rank;
use pathprof::{HotFunctions, Inputs, Interesting, Mode, ModeFlags, Prepared, Registry, RunConfig};
use pathprof_core::profile::InterestingRule;
use pathprof_runtime::Stopper;
use pathprof_wasm::component::{ComponentInfo, CoreModulePath};
use pathprof_wasm::events::EventSpec;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value = "bl", help = super::mode_help())]
    mode: String,
    /// Where to write the profile.
    #[arg(short = 'o', long = "output", default_value = "pathprof.json")]
    output: PathBuf,
    /// Print nothing (the program's own output is untouched either way).
    #[arg(long)]
    quiet: bool,
    /// Number of hot paths to print.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// A previous profile of the same module: its edge frequencies place the increments on cold
    /// edges (the static estimate from loop depth is used otherwise).
    #[arg(long, value_name = "PROFILE")]
    edge_profile: Option<PathBuf>,
    /// pep, bl: instrument only the functions that carried SHARE (default 0.99) of the branch flow
    /// of a previous profile of the same module; the others run as they were.
    #[arg(long, value_name = "PROFILE[:SHARE]")]
    hot_from: Option<String>,
    /// ppp: a profile of the same module whose executed paths are interesting (repeatable: a test
    /// suite's runs, whose union is taken).
    #[arg(long, value_name = "PROFILE")]
    interesting: Vec<PathBuf>,
    #[command(flatten)]
    choice: InterestingChoice,
    /// pep: consecutive path ends sampled after each timer tick (S; default 64, at most 1048576).
    #[arg(long)]
    samples: Option<u32>,
    /// pep: after each tick, skip a rotating number of path ends in 1..=STRIDE before sampling (T;
    /// default 17).
    #[arg(long)]
    stride: Option<u32>,
    /// pep: sample every N-th path end instead, without a timer (deterministic).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    every: Option<u64>,
    /// pep: timer period in milliseconds (default 0.25; from 0.01 to 3600000).
    #[arg(long, allow_negative_numbers = true)]
    tick_ms: Option<f64>,
    /// kbl: longest sequences of paths profiled (K; default 4).
    #[arg(short = 'k', value_parser = clap::value_parser!(u16).range(1..=64))]
    k: Option<u16>,
    /// kbl: most k-slab-forest nodes (16 bytes each). Near the bound the coldest subtrees are pruned,
    /// keeping the hottest nodes: the Ball–Larus counts stay exact, longer sequences' counts become
    /// intervals (count to max) that the profile writes, and a sequence missing ran at most `dropped`
    /// times.
    #[arg(long, value_name = "N")]
    max_nodes: Option<usize>,
    /// kbl: threads folding the stream into the forest, each the trees of its share of the root
    /// paths (default: the cores the program leaves free, at least 1). The profile is the same for
    /// any number; a --max-nodes bound is shared evenly.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    fold_threads: Option<u16>,
    /// kbl:K:burst: milliseconds each burst lasts, during which activations stream their paths
    /// (default 1; at least --burst-every keeps one burst open for the whole run).
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    burst_ms: Option<f64>,
    /// kbl:K:burst: milliseconds from one burst's start to the next's (default 20).
    #[arg(long, value_name = "MS", allow_negative_numbers = true)]
    burst_every: Option<f64>,
    /// events: pc (count paths, compute the events after the run; the default), pd (add each path's
    /// events at its end) or dec (count every event where it occurs).
    #[arg(long)]
    strategy: Option<String>,
    /// events: cut paths at every merge (merges), only in functions with more than 16384 paths
    /// (auto, the default), or nowhere (none).
    #[arg(long)]
    cut: Option<String>,
    #[command(flatten)]
    events: EventArgs,
    /// For a component: the core module to profile, by its index (`2`), after the indices of the
    /// nested components that hold it (`1/0`) (default: the one with the most code, at any depth,
    /// among those the component's tooling did not add); `all`: each core module with code, in a
    /// run of its own, each profile written beside the -o file (`p.json` → `p.1-0.json`).
    #[arg(long, value_name = "N")]
    core_module: Option<CoreModuleChoice>,
    /// Write the profile so far every SECONDS while the program runs, over the profile file (each a
    /// whole profile of the run so far, marked a snapshot); the last is written when the run ends.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    snapshot_every: Option<f64>,
    /// With --snapshot-every: write snapshot N to PROFILE.N.json (PROFILE without `.json`) instead.
    #[arg(long, requires = "snapshot_every")]
    snapshot_files: bool,
    #[command(flatten)]
    program: Program,
}

/// The longest time limit: a year.
const MAX_TIME_LIMIT_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// The program to run, and what it may see.
#[derive(clap::Args)]
pub struct Program {
    /// Grant a host directory to the program: HOST or HOST::GUEST (repeatable).
    #[arg(long = "dir", value_name = "HOST[::GUEST]")]
    dirs: Vec<String>,
    /// Set an environment variable for the program (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    envs: Vec<String>,
    /// Call this exported function instead of `_start`; ARGS are its arguments.
    #[arg(long)]
    invoke: Option<String>,
    /// Seed the program's random numbers (WASI `random_get`), so that runs on the same input repeat
    /// exactly.
    #[arg(long, value_name = "N")]
    random_seed: Option<u64>,
    /// Make every run repeat exactly: the program's clocks are virtual (they start at 2000-01-01
    /// and advance 1 ms at every reading) and its random numbers seeded (with --random-seed, or 0).
    #[arg(long)]
    deterministic: bool,
    /// Stop the program once it has run this many seconds; its profile is written as after a
    /// trap, marked stopped (exit status 124).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    time_limit: Option<f64>,
    /// Compile the program afresh, without taking or keeping compiled code in the cache
    /// (`pathprof cache` says where it is).
    #[arg(long)]
    no_cache: bool,
    /// The program.
    pub app: PathBuf,
    /// Arguments of the program.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

impl Program {
    /// What the program sees: the directories and variables granted, and its arguments.
    pub fn config(&self) -> Result<RunConfig> {
        let mut config = run_config(&self.app, &self.dirs, &self.envs, self.invoke.clone(), self.args.clone())?;
        config.random_seed = self.random_seed;
        config.deterministic = self.deterministic;
        Ok(config)
    }

    /// The engine to run the program (`bytes`): one that keeps compiled code in the cache unless
    /// `--no-cache` is given (or no cache directory can be named), and that stops a core module
    /// through its polls — cheaper than Wasmtime's epoch checks — unless the run takes `snapshots`
    /// or the program is a component, which need the epochs (`pathprof_runtime::stop`).
    pub fn engine(&self, bytes: &[u8], snapshots: bool) -> Result<pathprof_runtime::Engine> {
        let cache = if self.no_cache { None } else { pathprof_runtime::cache::default_dir() };
        let polls = !snapshots && !pathprof_wasm::component::is_component(bytes);
        pathprof_runtime::engine_with(&pathprof_runtime::EngineOptions { cache, polls, ..Default::default() })
    }

    /// The time limit given.
    pub fn time_limit(&self) -> Result<Option<Duration>> {
        match self.time_limit {
            None => Ok(None),
            Some(s) if s.is_finite() && s > 0.0 && s <= MAX_TIME_LIMIT_SECONDS => Ok(Some(Duration::from_secs_f64(s))),
            Some(_) => bail!("--time-limit must be a number of seconds above 0, at most {MAX_TIME_LIMIT_SECONDS}"),
        }
    }

    /// The program's bytes (binary or text format).
    pub fn bytes(&self) -> Result<Vec<u8>> {
        read_module(&self.app)
    }

    /// Checks that the program (`bytes`) imports only what a run on `engine` provides.
    pub fn check(&self, engine: &pathprof_runtime::Engine, bytes: &[u8]) -> Result<()> {
        pathprof_runtime::check_imports(engine, bytes).map_err(|e| anyhow!("{}: {e}", self.app.display()))
    }
}

pub fn run(a: Args, stopper: &Stopper) -> Result<i32> {
    let flags = ModeFlags {
        samples: a.samples,
        stride: a.stride,
        every: a.every,
        tick_ms: a.tick_ms,
        k: a.k,
        max_nodes: a.max_nodes,
        fold_threads: a.fold_threads.map(usize::from),
        burst_ms: a.burst_ms,
        burst_every: a.burst_every,
        strategy: a.strategy.clone(),
        cut: a.cut.clone(),
    };
    let registry = Registry::built_in();
    let given = Setting::given([
        (a.edge_profile.is_some(), Setting::EdgeProfile),
        (a.hot_from.is_some(), Setting::HotFrom),
        (!a.interesting.is_empty(), Setting::Interesting),
        (a.events.given(), Setting::Events),
        (a.snapshot_every.is_some(), Setting::Snapshots),
    ]);
    let mode = registry.with_flags(&a.mode, &flags, &given)?;
    let mut inputs: Vec<&Path> = vec![&a.program.app];
    inputs.extend(a.edge_profile.as_deref());
    let hot_from = a.hot_from.as_deref().map(hot_from);
    inputs.extend(hot_from.as_ref().map(|(p, _)| p.as_path()));
    inputs.extend(a.interesting.iter().map(PathBuf::as_path));
    let mut config = a.program.config()?;
    config.stopper = Some(stopper.clone());
    config.time_limit = a.program.time_limit()?;
    let bytes = a.program.bytes()?;
    let engine = a.program.engine(&bytes, a.snapshot_every.is_some())?;
    a.program.check(&engine, &bytes)?;
    let edge_profile = a.edge_profile.as_deref().map(read_profile).transpose()?;
    let interesting = interesting_paths(&bytes, &a.interesting, &a.choice)?;
    let hot = hot_functions(&bytes, hot_from.as_ref())?;
    let events = a.events.spec()?;
    // The core modules to profile, each with its profile's file.
    let runs: Vec<(Option<CoreModulePath>, PathBuf)> = match &a.core_module {
        None => vec![(None, a.output.clone())],
        Some(CoreModuleChoice::One(path)) => vec![(Some(path.clone()), a.output.clone())],
        Some(CoreModuleChoice::All) => {
            if !given.is_empty() || a.snapshot_every.is_some() {
                bail!("--core-module all takes no profile of one module (--edge-profile, --hot-from, --interesting) nor --snapshot-every");
            }
            let modules = every_core_module(&bytes)?;
            modules.into_iter().map(|m| (Some(m.clone()), module_file(&a.output, &m))).collect()
        }
    };
    check_outputs(&inputs, &runs.iter().map(|(_, o)| o.as_path()).collect::<Vec<_>>())?;
    let every = matches!(a.core_module, Some(CoreModuleChoice::All));
    let session = Session { a: &a, engine: &engine, registry: &registry, bytes: &bytes, mode: &mode };
    let mut exit_code = None;
    for (module, output) in &runs {
        let inputs = Inputs {
            edge_profile: edge_profile.as_ref(),
            hot: hot.as_ref(),
            interesting: interesting.as_ref(),
            events: events.as_ref(),
            core_module: module.as_ref(),
        };
        // The program's output is its first run's.
        let config = RunConfig { capture_output: config.capture_output || exit_code.is_some(), ..config.clone() };
        match session.profile(&inputs, &config, output) {
            Ok(code) => {
                exit_code.get_or_insert(code);
            }
            // With every core module asked for, one that cannot be profiled leaves the others.
            Err(e) if every => {
                let module = module.as_ref().map(ToString::to_string).unwrap_or_default();
                eprintln!("pathprof: warning: core module {module} is not profiled: {e:#}");
            }
            Err(e) => return Err(e),
        }
        if stopper.reason().is_some() {
            break;
        }
    }
    exit_code.ok_or_else(|| anyhow!("no core module of {} could be profiled", a.program.app.display()))
}

/// The path of every core module with code of the component `program`.
fn every_core_module(program: &[u8]) -> Result<Vec<CoreModulePath>> {
    if !pathprof_wasm::component::is_component(program) {
        bail!("--core-module all profiles the core modules of a component; this is a module");
    }
    let info = ComponentInfo::read(program)?;
    Ok(info.modules.iter().filter(|m| m.code_size > 0).map(|m| m.path()).collect())
}

/// The profile file of core module `module` when every one is profiled: `p.json` → `p.1-0.json`.
fn module_file(output: &Path, module: &CoreModulePath) -> PathBuf {
    numbered_file(output, &module.to_string().replace('/', "-"))
}

/// Which core module of a component `--core-module` names.
#[derive(Clone, Debug)]
pub enum CoreModuleChoice {
    One(CoreModulePath),
    All,
}

impl std::str::FromStr for CoreModuleChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<CoreModuleChoice, String> {
        match s {
            "all" => Ok(CoreModuleChoice::All),
            _ => s.parse().map(CoreModuleChoice::One),
        }
    }
}

/// What every run of `pathprof run` shares: the command line, the engine, the program and the mode.
struct Session<'a> {
    a: &'a Args,
    engine: &'a pathprof_runtime::Engine,
    registry: &'a Registry,
    bytes: &'a [u8],
    mode: &'a Mode,
}

impl Session<'_> {
    /// Profiles one core module of the program (its module when `inputs` names none) in a run of
    /// its own, writes its profile to `output` and reports it: the program's exit status.
    fn profile(&self, inputs: &Inputs, config: &RunConfig, output: &Path) -> Result<i32> {
        let Session { a, engine, registry, bytes, mode } = *self;
        let prepared = Prepared::new(bytes, &a.program.app.display().to_string(), mode, inputs)?;
        if !a.quiet {
            for w in &prepared.warnings {
                eprintln!("pathprof: warning: {}: {w}", a.program.app.display());
            }
        }
        let (run, run_id) = match snapshot_every(a.snapshot_every)? {
            None => (prepared.run(engine, config)?, None),
            Some(every) => {
                let run_id = run_id();
                let (numbered, quiet) = (a.snapshot_files, a.quiet);
                let write = |profile: Result<pathprof_core::profile::Profile>| {
                    let written = profile.and_then(|p| {
                        let index = p.snapshot.map_or(0, |s| s.index);
                        let path =
                            if numbered { numbered_file(output, &index.to_string()) } else { output.to_path_buf() };
                        write_atomically(&path, p.to_json().as_bytes())
                    });
                    // A snapshot not written is not the run's end: say so, and go on.
                    if let (Err(e), false) = (written, quiet) {
                        eprintln!("pathprof: warning: a snapshot was not written: {e:#}");
                    }
                };
                (prepared.run_with_snapshots(engine, config, every, &run_id, write)?, Some(run_id))
            }
        };
        let mut profile = prepared.profile(&run, config)?;
        profile.run_id = run_id;
        write_atomically(output, profile.to_json().as_bytes())?;
        for r in &run.outcome.results {
            println!("{r}");
        }
        if !a.quiet {
            let mut err = std::io::stderr().lock();
            render::paths::text(&mut err, registry, &profile, a.top, None, Rank::Cost)?;
            writeln!(err, "profile written to {}", output.display())?;
        }
        Ok(run.outcome.exit_code)
    }
}

/// The period of `--snapshot-every`.
fn snapshot_every(seconds: Option<f64>) -> Result<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(s) if s.is_finite() && (0.01..=MAX_TIME_LIMIT_SECONDS).contains(&s) => {
            Ok(Some(Duration::from_secs_f64(s)))
        }
        Some(_) => bail!("--snapshot-every must be a number of seconds from 0.01 to {MAX_TIME_LIMIT_SECONDS}"),
    }
}

/// An identity for a run of this process, which its snapshots and final profile share.
fn run_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{:x}-{:x}", std::process::id(), nanos)
}

/// The file of snapshot `index` of a profile written to `output`: `p.json` → `p.3.json`.
fn numbered_file(output: &Path, index: &str) -> PathBuf {
    let stem = output.file_stem().map_or_else(|| "pathprof".into(), |s| s.to_string_lossy().into_owned());
    let name = match output.extension() {
        Some(ext) => format!("{stem}.{index}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{index}"),
    };
    output.with_file_name(name)
}

/// The events to count (mode `events`).
#[derive(clap::Args)]
pub struct EventArgs {
    /// events: the events to count, comma-separated: load, store, call, call_indirect, memory_grow,
    /// br_table, div, float, simd, atomic, bulk, gc_new, gc_access, instr, bytes_loaded,
    /// bytes_stored, alloc (default: all but alloc, and alloc too with --alloc-fn).
    #[arg(long = "events", value_name = "LIST", value_delimiter = ',')]
    list: Option<Vec<String>>,
    /// events: a function whose calls event alloc counts (repeatable).
    #[arg(long = "alloc-fn", value_name = "NAME")]
    alloc_fns: Vec<String>,
    /// events: an event of your own, counting the operators named (as `i32.load8_u`) (repeatable).
    #[arg(long = "event", value_name = "NAME=OP,OP")]
    user: Vec<String>,
}

impl EventArgs {
    /// Whether events are asked for.
    pub fn given(&self) -> bool {
        self.list.is_some() || !self.alloc_fns.is_empty() || !self.user.is_empty()
    }

    /// The events asked for; `None` when none were (every built-in class, in mode `events`).
    pub fn spec(&self) -> Result<Option<EventSpec>> {
        if !self.given() {
            return Ok(None);
        }
        let user = self.user.iter().map(|u| EventSpec::parse_user(u)).collect::<Result<Vec<_>, _>>()?;
        let list = self.list.as_ref().map(|l| l.iter().map(|e| e.trim().to_string()).collect());
        Ok(Some(EventSpec { list, alloc_fns: self.alloc_fns.clone(), user }))
    }
}

/// The guiding profile and share of `--hot-from PROFILE[:SHARE]` (a file named as given, when
/// there is one, else what precedes a last `:SHARE` that reads as a number; SHARE 0.99 by default).
pub fn hot_from(spec: &str) -> (PathBuf, f64) {
    let whole = PathBuf::from(spec);
    let split = spec.rsplit_once(':').and_then(|(p, s)| Some((PathBuf::from(p), s.parse::<f64>().ok()?)));
    match split {
        Some((path, share)) if !whole.exists() => (path, share),
        _ => (whole, DEFAULT_HOT_SHARE),
    }
}

/// The functions to instrument, hot in the guiding profile given by `--hot-from`.
pub fn hot_functions(module: &[u8], hot_from: Option<&(PathBuf, f64)>) -> Result<Option<HotFunctions>> {
    let Some((path, share)) = hot_from else { return Ok(None) };
    HotFunctions::of(module, &path.display().to_string(), &read_profile(path)?, *share).map(Some)
}

/// The share of `--hot-from` when none is given.
const DEFAULT_HOT_SHARE: f64 = 0.99;

/// Which of the paths that ran in the `--interesting` profiles are interesting: all of them unless
/// one of these says otherwise [PPP07 §3.1, §3.5].
#[derive(clap::Args, Debug, Default)]
pub struct InterestingChoice {
    /// ppp: only the hottest paths of the --interesting profiles (counts added up over them), as
    /// few as carry SHARE (in (0, 1]) of their executions.
    #[arg(long, value_name = "SHARE", conflicts_with = "interesting_top")]
    interesting_coverage: Option<f64>,
    /// ppp: only the N hottest paths of each function in the --interesting profiles.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    interesting_top: Option<u32>,
}

impl InterestingChoice {
    /// The rule the flags give.
    fn rule(&self) -> InterestingRule {
        match (self.interesting_coverage, self.interesting_top) {
            (Some(share), _) => InterestingRule::Coverage { share },
            (None, Some(per_function)) => InterestingRule::Top { per_function },
            (None, None) => InterestingRule::Executed,
        }
    }
}

/// The interesting paths of the profiles `files`, chosen as `choice` says, when some are given.
pub fn interesting_paths(module: &[u8], files: &[PathBuf], choice: &InterestingChoice) -> Result<Option<Interesting>> {
    if files.is_empty() {
        if choice.rule() != InterestingRule::Executed {
            bail!("--interesting-coverage and --interesting-top choose among the paths of --interesting profiles: give one");
        }
        return Ok(None);
    }
    let profiles = files.iter().map(|f| Ok((f.display().to_string(), read_profile(f)?))).collect::<Result<Vec<_>>>()?;
    Interesting::of(module, &profiles, choice.rule()).map(Some)
}

/// What the program sees: the directories and variables granted, and its arguments.
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
        if host.is_empty() || guest.is_empty() {
            bail!("--dir {d}: give a host directory, and with `::` the path the program sees it at");
        }
        if !Path::new(&host).is_dir() {
            bail!("--dir {d}: {host} is not a directory");
        }
        if config.dirs.iter().any(|(_, g)| *g == guest) {
            bail!("--dir {d}: the program sees another directory at {guest} already");
        }
        config.dirs.push((PathBuf::from(host), guest));
    }
    for e in envs {
        let (k, v) = e.split_once('=').ok_or_else(|| anyhow!("--env {e}: expected NAME=VALUE"))?;
        if k.is_empty() {
            bail!("--env {e}: the variable's name is empty");
        }
        if config.env.iter().any(|(name, _)| name == k) {
            bail!("--env {k}: the variable is given twice");
        }
        config.env.push((k.to_string(), v.to_string()));
    }
    let name = app.file_name().map_or_else(|| app.display().to_string(), |n| n.to_string_lossy().into_owned());
    config.args.push(name);
    config.args.extend(args);
    Ok(config)
}
