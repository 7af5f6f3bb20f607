//! `pathprof instrument`: write the instrumented module (or component) of a mode and the map that
//! decodes what it records.

use anyhow::{anyhow, bail, Context, Result};
use pathprof::files::{check_outputs, read_module, read_profile, sha256_hex, write_atomically};
use pathprof::profiled::ProfiledModule;
use pathprof::profiler::instrument_options;
use pathprof::{Inputs, Registry};
use pathprof_wasm::component::CoreModulePath;
use pathprof_wasm::debuginfo::LineTable;
use pathprof_wasm::map::MapOrigin;
use pathprof_wasm::ModuleInfo;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    input: PathBuf,
    /// The instrumented module (a component for a component).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Where to write the map (default: OUTPUT with `.map.json` appended).
    #[arg(long)]
    map: Option<PathBuf>,
    #[arg(long, default_value = "bl", help = super::mode_help())]
    mode: String,
    /// A previous profile of the same module, as for `run`.
    #[arg(long, value_name = "PROFILE")]
    edge_profile: Option<PathBuf>,
    /// pep, bl: instrument only the functions hot in a previous profile, as for `run`.
    #[arg(long, value_name = "PROFILE[:SHARE]")]
    hot_from: Option<String>,
    /// ppp: a profile of the same module whose executed paths are interesting (repeatable: a test
    /// suite's runs, whose union is taken).
    #[arg(long, value_name = "PROFILE")]
    interesting: Vec<PathBuf>,
    #[command(flatten)]
    choice: super::run::InterestingChoice,
    #[command(flatten)]
    events: super::run::EventArgs,
    /// For a component: the core module to instrument, by its index (`2`), after the indices of the
    /// nested components that hold it (`1/0`) (default: the program's).
    #[arg(long, value_name = "N")]
    core_module: Option<CoreModulePath>,
}

pub fn run(a: Args) -> Result<i32> {
    let mode = Registry::built_in().parse(&a.mode)?;
    if mode.is_baseline() {
        bail!("--mode {mode} has no probes to write");
    }
    let map_path = a.map.clone().unwrap_or_else(|| {
        let mut p = a.output.clone().into_os_string();
        p.push(".map.json");
        PathBuf::from(p)
    });
    let mut inputs: Vec<&Path> = vec![&a.input];
    inputs.extend(a.edge_profile.as_deref());
    let hot_from = a.hot_from.as_deref().map(super::run::hot_from);
    inputs.extend(hot_from.as_ref().map(|(p, _)| p.as_path()));
    inputs.extend(a.interesting.iter().map(PathBuf::as_path));
    check_outputs(&inputs, &[&a.output, &map_path])?;
    let bytes = read_module(&a.input)?;
    let edge_profile = a.edge_profile.as_deref().map(read_profile).transpose()?;
    let interesting = super::run::interesting_paths(&bytes, &a.interesting, &a.choice)?;
    let hot = super::run::hot_functions(&bytes, hot_from.as_ref())?;
    let events = a.events.spec()?;
    let inputs = Inputs {
        edge_profile: edge_profile.as_ref(),
        hot: hot.as_ref(),
        interesting: interesting.as_ref(),
        events: events.as_ref(),
        core_module: a.core_module.as_ref(),
    };
    let cannot = || format!("cannot instrument {}", a.input.display());
    let profiled = ProfiledModule::of(&bytes, a.core_module.as_ref()).with_context(cannot)?;
    let options = instrument_options(&bytes, &profiled, &mode, &inputs)?;
    let mut inst = profiled.instrument(&bytes, &options).with_context(cannot)?;
    for w in &inst.warnings {
        eprintln!("pathprof: warning: {}: {w}", a.input.display());
    }
    if let Some(lines) = LineTable::read(profiled.bytes) {
        lines.attach(inst.map.functions.iter_mut().flat_map(|f| &mut f.blocks));
    }
    pathprof_wasm::module::validate(&inst.bytes)
        .map_err(|e| anyhow!("the instrumented program of {} does not validate: {e}", a.input.display()))?;
    let code_section_size = ModuleInfo::read(profiled.bytes).with_context(cannot)?.code_size();
    inst.map.origin = Some(MapOrigin {
        mode: mode.to_string(),
        module: profiled.describe(&bytes, &a.input.display().to_string(), code_section_size),
        instrumented_sha256: sha256_hex(&inst.bytes),
        memory_bytes: inst.memory_bytes,
        interesting_from: interesting.as_ref().map_or_else(Vec::new, |i| i.names.clone()),
        interesting_chosen: interesting.as_ref().map(|i| (i.rule, i.share)),
        alloc_functions: events.as_ref().map_or_else(Vec::new, |e| e.alloc_fns.clone()),
        user_events: events.as_ref().map_or_else(Vec::new, |e| e.user.clone()),
    });
    write_atomically(&a.output, &inst.bytes)?;
    write_atomically(&map_path, inst.map.to_json().as_bytes())?;
    eprintln!(
        "pathprof: wrote {} ({} of {} functions instrumented for {mode}) and {}",
        a.output.display(),
        inst.map.probed().count(),
        inst.map.functions.len(),
        map_path.display()
    );
    Ok(0)
}
