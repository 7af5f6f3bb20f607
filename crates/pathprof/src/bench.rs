//! `pathprof bench`: overhead of each profiling mode against the uninstrumented program, measured side
//! by side in one run.
//!
//! For every program of a Sightglass-style corpus, the original and each mode's instrumented module
//! are compiled once, then run in fresh instances, interleaved (none, mode, none, mode, …), each run
//! timed over its bench region (`bench.start` → `bench.end`). Every run's output is checked against
//! the program's expected files: a changed output is an error, not a data point. Runs repeat until the
//! medians are stable (relative median absolute deviation at most `--spread`), between `--runs` and
//! `--max-runs` rounds and within `--budget` seconds per program.

use anyhow::{bail, Context, Result};
use pathprof_runtime::RunConfig;
use pathprof_wasm::map::Counters;
use pathprof_wasm::{InstrumentOptions, ModuleInfo};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of one benchmark session.
pub struct BenchOptions {
    pub modes: Vec<String>,
    pub min_runs: usize,
    pub max_runs: usize,
    pub spread: f64,
    pub budget_seconds: f64,
    pub filter: Option<String>,
}

/// Figures of one mode on one program.
#[derive(Serialize)]
pub struct ModeFigures {
    pub mode: String,
    pub runs: usize,
    pub median_seconds: f64,
    /// Median absolute deviation relative to the median.
    pub spread: f64,
    /// Median of this mode over median of `none`.
    pub ratio: f64,
    pub instrumentation_seconds: f64,
    pub compile_seconds: f64,
    /// Compile time over the original's.
    pub compile_ratio: f64,
    /// Code section size over the original's.
    pub code_growth: f64,
    /// Bytes of counters in the profiler's memory plus the host's hash entries.
    pub profiler_memory_bytes: u64,
}

/// Figures of one program.
#[derive(Serialize)]
pub struct ProgramFigures {
    pub program: String,
    pub code_bytes: usize,
    pub none_median_seconds: f64,
    pub none_spread: f64,
    pub none_runs: usize,
    pub none_compile_seconds: f64,
    pub modes: Vec<ModeFigures>,
}

/// Corpus-wide summary of one mode.
#[derive(Serialize)]
pub struct ModeSummary {
    pub mode: String,
    pub geomean_ratio: f64,
    pub max_ratio: f64,
    pub max_program: String,
}

#[derive(Serialize)]
pub struct BenchReport {
    pub programs: Vec<ProgramFigures>,
    pub summary: Vec<ModeSummary>,
}

struct Variant {
    mode: String,
    module: pathprof_runtime::Module,
    map: Option<pathprof_wasm::ProfileMap>,
    instrumentation_seconds: f64,
    compile_seconds: f64,
    code_bytes: usize,
    times: Vec<f64>,
    hash_entries: usize,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn spread(v: &[f64]) -> f64 {
    let m = median(v);
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    if m > 0.0 {
        median(&dev) / m
    } else {
        0.0
    }
}

/// The `.wasm` files under `dir`, sorted.
pub fn programs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let p = entry?.path();
        if p.is_dir() {
            out.extend(programs(&p)?);
        } else if p.extension().is_some_and(|e| e == "wasm") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// `<stem>.<stream>.expected` beside the program, else `default.<stream>.expected`.
pub fn expected_output(wasm: &Path, stream: &str) -> Option<PathBuf> {
    let dir = wasm.parent()?;
    let stem = wasm.file_stem()?.to_string_lossy();
    [format!("{stem}.{stream}.expected"), format!("default.{stream}.expected")]
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

fn instrument_for(mode: &str, bytes: &[u8]) -> Result<(Vec<u8>, Option<pathprof_wasm::ProfileMap>, f64)> {
    match mode {
        "none" => Ok((bytes.to_vec(), None, 0.0)),
        "bl" | "pep" => {
            let options = InstrumentOptions { sampled: mode == "pep", ..InstrumentOptions::default() };
            let t = Instant::now();
            let inst = pathprof_wasm::instrument(bytes, &options)?;
            Ok((inst.bytes, Some(inst.map), t.elapsed().as_secs_f64()))
        }
        other => bail!("unknown mode {other:?} (modes: none, bl, pep)"),
    }
}

/// Benchmarks every program under `dir`.
pub fn bench(dir: &Path, options: &BenchOptions, mut progress: impl FnMut(&ProgramFigures)) -> Result<BenchReport> {
    // Epoch checks are compiled into every mode's code alike, so that they compare fairly.
    let engine = pathprof_runtime::engine()?;
    let dir = dir.canonicalize().with_context(|| format!("cannot read {}", dir.display()))?;
    let mut report = BenchReport { programs: Vec::new(), summary: Vec::new() };
    for wasm in programs(&dir)? {
        let name = wasm.strip_prefix(&dir).unwrap_or(&wasm).display().to_string();
        if options.filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let figures = bench_program(&engine, &wasm, &name, options).with_context(|| name.clone())?;
        progress(&figures);
        report.programs.push(figures);
    }
    for mode in options.modes.iter().filter(|m| *m != "none") {
        let ratios: Vec<(f64, &str)> = report
            .programs
            .iter()
            .flat_map(|p| p.modes.iter().filter(|m| &m.mode == mode).map(move |m| (m.ratio, p.program.as_str())))
            .collect();
        if ratios.is_empty() {
            continue;
        }
        let geomean = (ratios.iter().map(|(r, _)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let (max_ratio, max_program) =
            ratios.iter().copied().max_by(|a, b| a.0.total_cmp(&b.0)).expect("ratios is not empty");
        report.summary.push(ModeSummary {
            mode: mode.clone(),
            geomean_ratio: geomean,
            max_ratio,
            max_program: max_program.to_string(),
        });
    }
    Ok(report)
}

fn bench_program(
    engine: &pathprof_runtime::Engine,
    wasm: &Path,
    name: &str,
    options: &BenchOptions,
) -> Result<ProgramFigures> {
    let bytes = std::fs::read(wasm)?;
    let info = ModuleInfo::read(&bytes)?;
    let expected: Vec<Option<Vec<u8>>> = ["stdout", "stderr"]
        .iter()
        .map(|s| expected_output(wasm, s).map(std::fs::read).transpose())
        .collect::<Result<_, _>>()?;
    let mut variants = Vec::new();
    for mode in std::iter::once("none").chain(options.modes.iter().map(String::as_str).filter(|m| *m != "none")) {
        let (code, map, instrumentation_seconds) = instrument_for(mode, &bytes)?;
        let code_bytes = ModuleInfo::read(&code)?.code_size();
        let (module, compile_seconds) = pathprof_runtime::compile(engine, &code)?;
        variants.push(Variant {
            mode: mode.to_string(),
            module,
            map,
            instrumentation_seconds,
            compile_seconds,
            code_bytes,
            times: Vec::new(),
            hash_entries: 0,
        });
    }
    let config = RunConfig {
        dirs: vec![(wasm.parent().unwrap().to_path_buf(), ".".to_string())],
        args: vec![wasm.file_name().unwrap().to_string_lossy().into_owned()],
        capture_output: true,
        ..RunConfig::default()
    };
    measure(engine, &mut variants, &config, &expected, options, name)?;

    let none = &variants[0];
    let none_median = median(&none.times);
    let modes = variants[1..]
        .iter()
        .map(|v| {
            let counter_bytes: u64 = v.map.as_ref().map_or(0, |m| {
                m.functions
                    .iter()
                    .filter_map(|f| f.probes.as_ref())
                    .filter(|p| matches!(p.counters, Counters::Array { .. }))
                    .map(|p| 8 * p.plan.num_paths())
                    .sum()
            });
            ModeFigures {
                mode: v.mode.clone(),
                runs: v.times.len(),
                median_seconds: median(&v.times),
                spread: spread(&v.times),
                ratio: median(&v.times) / none_median,
                instrumentation_seconds: v.instrumentation_seconds,
                compile_seconds: v.compile_seconds,
                compile_ratio: v.compile_seconds / none.compile_seconds,
                code_growth: v.code_bytes as f64 / none.code_bytes.max(1) as f64,
                profiler_memory_bytes: counter_bytes + 16 * v.hash_entries as u64,
            }
        })
        .collect();
    Ok(ProgramFigures {
        program: name.to_string(),
        code_bytes: info.code_size(),
        none_median_seconds: none_median,
        none_spread: spread(&none.times),
        none_runs: none.times.len(),
        none_compile_seconds: none.compile_seconds,
        modes,
    })
}

fn measure(
    engine: &pathprof_runtime::Engine,
    variants: &mut [Variant],
    config: &RunConfig,
    expected: &[Option<Vec<u8>>],
    options: &BenchOptions,
    name: &str,
) -> Result<()> {
    let start = Instant::now();
    let mut reference: Option<(Vec<u8>, Vec<u8>)> = None;
    for round in 0.. {
        let enough = round >= options.min_runs
            && (round >= options.max_runs
                || start.elapsed().as_secs_f64() > options.budget_seconds
                || variants.iter().all(|v| spread(&v.times) <= options.spread));
        if enough {
            break;
        }
        for v in variants.iter_mut() {
            let out = pathprof_runtime::run_module(engine, &v.module, v.map.as_ref(), config)?;
            if out.exit_code != 0 || out.trap.is_some() {
                bail!("{name} in mode {}: exit {} {}", v.mode, out.exit_code, out.trap.unwrap_or_default());
            }
            for (i, (stream, got)) in [("stdout", &out.stdout), ("stderr", &out.stderr)].into_iter().enumerate() {
                let want = match (&expected[i], &reference) {
                    (Some(e), _) => e,
                    (None, Some(r)) => {
                        if i == 0 {
                            &r.0
                        } else {
                            &r.1
                        }
                    }
                    (None, None) => continue,
                };
                if got != want {
                    bail!("{name} in mode {}: {stream} differs from the expected output", v.mode);
                }
            }
            if reference.is_none() {
                reference = Some((out.stdout.clone(), out.stderr.clone()));
            }
            v.times.push(out.bench_region_seconds.unwrap_or(out.wall_seconds));
            v.hash_entries = out.hash_entries;
        }
    }
    Ok(())
}
