//! Profiling a program: module → instrumented module → run → profile.
//!
//! [`profile`] does it all in one call. [`Prepared`] splits it where `pathprof bench` needs to: the
//! module is instrumented once for a mode, then compiled and run as often as wanted, and a run's
//! profile is built only when asked for.

use crate::files::sha256_hex;
use crate::inputs::Inputs;
use crate::modes::{Given, Mode, ModeRun, SnapshotSink};
use crate::profiled::{core_module_of, ProfiledModule};
use anyhow::{bail, Context, Result};
use pathprof_core::profile::{FunctionProfile, ModuleInfo as ProfileModule, Profile, SnapshotInfo, U64};
use pathprof_runtime::{Engine, Program, RunConfig};
use pathprof_wasm::component::ComponentInfo;
use pathprof_wasm::debuginfo::LineTable;
use pathprof_wasm::{InstrumentOptions, ModuleInfo, OnlyFunctions, ProfileMap};
use std::collections::HashSet;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Profiles the program `module` in `mode`, as `config` runs it: its profile records the module as
/// `config`'s program name (`args[0]`).
pub fn profile(module: &[u8], mode: &Mode, config: &RunConfig) -> Result<Profile> {
    profile_with(module, mode, &Inputs::default(), config)
}

/// [`profile`], with the inputs that some modes need.
pub fn profile_with(module: &[u8], mode: &Mode, inputs: &Inputs, config: &RunConfig) -> Result<Profile> {
    let path = config.args.first().map_or("module.wasm", String::as_str);
    let prepared = Prepared::new(module, path, mode, inputs)?;
    // A core module stops through its polls, a component through epoch checks (`pathprof_runtime::stop`).
    let polls = !pathprof_wasm::component::is_component(module);
    let engine = pathprof_runtime::engine_with(&pathprof_runtime::EngineOptions { polls, ..Default::default() })?;
    let run = prepared.run(&engine, config)?;
    prepared.profile(&run, config)
}

/// A module made ready to run in one mode.
pub struct Prepared<'a> {
    pub mode: Mode,
    /// The program as given (a module or a component), and the path its profile records.
    pub original: &'a [u8],
    /// The core module profiled: `original`, or the program's module of a component.
    pub profiled: ProfiledModule<'a>,
    pub path: String,
    /// The program to run: the instrumented one, or the original in mode `none`.
    pub code: Vec<u8>,
    /// The map of the instrumented module (none in mode `none`).
    pub map: Option<ProfileMap>,
    pub instrumentation_seconds: Option<f64>,
    /// What was wrong with the module but did not keep it from being instrumented.
    pub warnings: Vec<String>,
    /// What the mode was given besides its settings, as the profile records it.
    given: Given,
    info: ModuleInfo,
}

impl<'a> Prepared<'a> {
    /// Validates `original` and instruments it for `mode` with `inputs`.
    pub fn new(original: &'a [u8], path: &str, mode: &Mode, inputs: &Inputs) -> Result<Prepared<'a>> {
        let profiled =
            ProfiledModule::of(original, inputs.core_module).with_context(|| format!("cannot profile {path}"))?;
        let info = ModuleInfo::read(profiled.bytes).with_context(|| format!("cannot profile {path}"))?;
        let (code, map, instrumentation_seconds, warnings) = match mode.sink() {
            None => {
                mode.check(&inputs.given())?;
                (original.to_vec(), None, None, Vec::new())
            }
            Some(_) => {
                let options = instrument_options(original, &profiled, mode, inputs)?;
                let t = Instant::now();
                let inst =
                    profiled.instrument(original, &options).with_context(|| format!("cannot instrument {path}"))?;
                (inst.bytes, Some(inst.map), Some(t.elapsed().as_secs_f64()), inst.warnings)
            }
        };
        Ok(Prepared {
            mode: mode.clone(),
            original,
            profiled,
            path: path.to_string(),
            code,
            map,
            instrumentation_seconds,
            warnings,
            given: Given {
                interesting_from: inputs.interesting.map_or_else(Vec::new, |i| i.names.clone()),
                interesting_chosen: inputs.interesting.map(|i| (i.rule, i.share)),
                tested_segments: inputs.interesting.and_then(|i| i.segments.clone()).map(std::sync::Arc::new),
                events: inputs.events.cloned(),
            },
            info,
        })
    }

    /// Compiles the module to run and runs it.
    pub fn run(&self, engine: &Engine, config: &RunConfig) -> Result<ModeRun> {
        let (module, compile_seconds) = pathprof_runtime::compile(engine, &self.code)?;
        let mut run = self.run_compiled(engine, &module, config)?;
        run.outcome.compile_seconds = compile_seconds;
        Ok(run)
    }

    /// Runs the module to run, compiled as `module`, in a fresh instance.
    pub fn run_compiled(&self, engine: &Engine, module: &Program, config: &RunConfig) -> Result<ModeRun> {
        self.mode.run(engine, module, self.map.as_ref(), config, None)
    }

    /// [`Prepared::run`], handing `on_snapshot` the profile so far every `every` while the program
    /// runs, each marked with `run_id` and when it was taken. Snapshots are made into profiles on a
    /// thread of their own: the program pauses only while its collector reads what the probes
    /// recorded. A mode whose collector cannot be read while the program runs takes none.
    pub fn run_with_snapshots(
        &self,
        engine: &Engine,
        config: &RunConfig,
        every: Duration,
        run_id: &str,
        mut on_snapshot: impl FnMut(Result<Profile>) + Send,
    ) -> Result<ModeRun> {
        let (module, compile_seconds) = pathprof_runtime::compile(engine, &self.code)?;
        let (sender, receiver) = mpsc::channel();
        let sink = SnapshotSink { every, sender };
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for (run, taken) in receiver {
                    let profile = self.profile(&run, config).map(|mut profile| {
                        profile.run_id = Some(run_id.to_string());
                        profile.snapshot = Some(SnapshotInfo {
                            index: taken.index,
                            seconds: taken.seconds,
                            pause_seconds: taken.pause_seconds,
                        });
                        profile
                    });
                    on_snapshot(profile);
                }
            });
            let run = self.mode.run(engine, &module, self.map.as_ref(), config, Some(&sink));
            // The writer ends once the last snapshot is in.
            drop(sink);
            let mut run = run?;
            run.outcome.compile_seconds = compile_seconds;
            Ok(run)
        })
    }

    /// The function profiles of a run: its counts decoded with the map, and what the mode adds to
    /// them.
    pub fn functions(&self, run: &ModeRun) -> Result<Vec<FunctionProfile>> {
        run_functions(&self.mode, self.map.as_ref(), run)
    }

    /// The profile of a run, with source lines from the module's DWARF.
    pub fn profile(&self, run: &ModeRun, config: &RunConfig) -> Result<Profile> {
        let parts = ProfileParts {
            mode: &self.mode,
            map: self.map.as_ref(),
            given: &self.given,
            module: self.profiled.describe(self.original, &self.path, self.info.code_size()),
            args: config.args.clone(),
            instrumentation_seconds: self.instrumentation_seconds,
            random_seed: config.seed(),
            deterministic: config.deterministic,
        };
        // Source lines are read once the program has run (uninstrumented runs have no blocks).
        parts.profile(run, || LineTable::read(self.profiled.bytes))
    }

    /// Size of the code section of the module that runs: the instrumented module (the original in
    /// mode `none`), inside its component for a component.
    pub fn code_size(&self) -> Result<usize> {
        let Some(path) = self.profiled.core_module() else { return Ok(ModuleInfo::read(&self.code)?.code_size()) };
        let info = ComponentInfo::read(&self.code)?;
        let module = info.module(&path).context("the component to run lost its profiled module")?;
        Ok(module.code_size)
    }

    /// Size of the code section of the profiled module.
    pub fn original_code_size(&self) -> usize {
        self.info.code_size()
    }
}

/// Instrumentation options for `mode`, with the edge frequencies of an edge profile and what else
/// `inputs` gives the mode: `program` is the program given (which profiles name by its digest),
/// `profiled` the core module profiled in it, which the profiles given must have profiled too.
pub fn instrument_options(
    program: &[u8],
    profiled: &ProfiledModule,
    mode: &Mode,
    inputs: &Inputs,
) -> Result<InstrumentOptions> {
    let Some(sink) = mode.sink() else { bail!("mode {mode} has no probes") };
    mode.check(&inputs.given())?;
    let mut options = InstrumentOptions::with_sink(sink);
    if let Some(profile) = inputs.edge_profile {
        if profile.module.sha256 != sha256_hex(program) {
            bail!("the edge profile is a profile of another module ({})", profile.module.path);
        }
        profiled.check_same_core_module("the edge profile", core_module_of(&profile.module).as_ref())?;
        options.edge_profile = profile.functions.iter().map(|f| (f.index, f.paths().to_vec())).collect();
    }
    if let Some(hot) = inputs.hot {
        profiled.check_same_core_module("the guiding profile", hot.core_module.as_ref())?;
        options.only = Some(OnlyFunctions {
            functions: hot.functions.iter().copied().collect(),
            reason: crate::inputs::COLD_REASON.to_string(),
        });
    }
    mode.instrument(&mut options, profiled, inputs)?;
    Ok(options)
}

/// The function profiles of a run of `mode`: its counts decoded with `map` (none without probes),
/// and what the mode adds to them.
fn run_functions(mode: &Mode, map: Option<&ProfileMap>, run: &ModeRun) -> Result<Vec<FunctionProfile>> {
    let Some(map) = map else { return Ok(Vec::new()) };
    let mut functions = map.function_profiles(&run.counts)?;
    mode.attach(run, map, &mut functions)?;
    Ok(functions)
}

/// What a profile says besides what its run recorded.
pub(crate) struct ProfileParts<'a> {
    pub mode: &'a Mode,
    /// The map of the instrumented module (none in mode `none`).
    pub map: Option<&'a ProfileMap>,
    pub given: &'a Given,
    pub module: ProfileModule,
    pub args: Vec<String>,
    pub instrumentation_seconds: Option<f64>,
    pub random_seed: Option<u64>,
    pub deterministic: bool,
}

impl ProfileParts<'_> {
    /// The profile of `run`, with the source lines `lines` reads (none where the map's blocks
    /// have theirs).
    pub fn profile(self, run: &ModeRun, lines: impl FnOnce() -> Option<LineTable>) -> Result<Profile> {
        let mut functions = run_functions(self.mode, self.map, run)?;
        let mode = self.mode.profile_mode(run, &functions, self.map, self.given)?;
        // A profile is as large as what ran: the blocks of functions without paths, and the names
        // of the instrumented ones that did not run, are the module's (`instrument --map` lists
        // them), not the run's. Skipped functions keep their names, which reports list, and so do
        // functions that ran without completing a path (still open at the end, or counting events).
        let open: HashSet<u32> = run.outcome.open_frames.iter().copied().collect();
        for f in functions.iter_mut().filter(|f| f.paths().is_empty()) {
            f.blocks = Vec::new();
            let counted_events = f.events().is_some_and(|e| e.values().any(|n| n > 0));
            if f.is_instrumented() && !counted_events && !open.contains(&f.index) {
                f.name = None;
            }
        }
        if let Some(lines) = (!functions.is_empty()).then(lines).flatten() {
            lines.attach(functions.iter_mut().flat_map(|f| &mut f.blocks));
        }
        let path_executions = functions
            .iter()
            .flat_map(|f| f.paths())
            .try_fold(0u64, |sum, p| sum.checked_add(p.count.0))
            .context("the path executions add up past 2^64 - 1")?;
        let outcome = &run.outcome;
        Ok(Profile {
            module: self.module,
            mode,
            args: self.args,
            wall_seconds: outcome.wall_seconds,
            bench_region_seconds: outcome.bench_region_seconds,
            instrumentation_seconds: self.instrumentation_seconds,
            exit_code: outcome.exit_code,
            trap: outcome.trap.clone(),
            stopped: outcome.stopped.map(|r| r.name().to_string()),
            random_seed: self.random_seed,
            deterministic: self.deterministic,
            run_id: None,
            snapshot: None,
            open_activations_at_exit: outcome.open_frames.len() as u64,
            runs: 1,
            path_executions: U64(path_executions),
            functions,
        })
    }
}
