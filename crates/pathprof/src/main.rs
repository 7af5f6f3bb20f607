//! `pathprof`: the command-line interface. One module per subcommand in [`cli`]; the reports they
//! print are laid out by the library's `render`, and everything else is the library's too.

/// The instrumenter's per-function analyses allocate many small vectors on several threads, where
/// mimalloc is markedly faster than the system allocator (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "pathprof", version, about = "Path profiler for WebAssembly programs")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Profile a WASI program and print its hot paths.
    Run(cli::run::Args),
    /// Write an instrumented module and the map that decodes what it records.
    Instrument(cli::instrument::Args),
    /// Decode the dump of a run under another engine (Node, a browser) into a profile.
    Decode(cli::decode::Args),
    /// Measure each mode's overhead against the uninstrumented programs of a Sightglass-style corpus.
    Bench(cli::bench::Args),
    /// Simulate the hardware path profiler (path stack, Hot Path Table) on a run's branches [PPP07 ch. 5].
    Hpp(cli::hpp::Args),
    /// Accuracy of a sampled profile against an exact one of the same run [PEP05 §6.3–6.4].
    Compare(cli::compare::Args),
    /// Print the hot paths of a profile, as text, JSON, source lines or an HTML page.
    Report(cli::report::Args),
    /// Say where compiled programs are kept between runs, and how much they take; clear them.
    Cache(cli::cache::Args),
    /// Add up profiles of several runs of one module.
    Merge(cli::merge::Args),
    /// Write a profile as folded stacks, a flame graph, a pprof profile or a speedscope file.
    Export(cli::export::Args),
    /// Write the program with branch hints (metadata.code.branch_hint) from a profile of it.
    Hint(cli::hint::Args),
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => usage_error(e),
    };
    let result = cli::signals::stopper().and_then(|stopper| match cli.command {
        Command::Run(args) => cli::run::run(args, &stopper),
        Command::Instrument(args) => cli::instrument::run(args),
        Command::Bench(args) => cli::bench::run(args, &stopper),
        Command::Compare(args) => cli::compare::run(args),
        Command::Decode(args) => cli::decode::run(args),
        Command::Hpp(args) => cli::hpp::run(args, &stopper),
        Command::Report(args) => cli::report::run(args),
        Command::Merge(args) => cli::merge::run(args),
        Command::Cache(args) => cli::cache::run(args),
        Command::Export(args) => cli::export::run(args),
        Command::Hint(args) => cli::hint::run(args),
    });
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            let msg = format!("{e:#}").replace('\n', " ");
            eprintln!("pathprof: error: {msg}");
            std::process::exit(1);
        }
    }
}

/// Ends the process for a command line clap refuses: its help or version as clap prints them, or
/// the error on one line in the style of every other error, with exit status 2.
fn usage_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.to_string();
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid command line");
    let msg = first.trim().strip_prefix("error: ").unwrap_or(first.trim());
    eprintln!("pathprof: error: {msg} (pathprof --help explains the command line)");
    std::process::exit(2);
}
