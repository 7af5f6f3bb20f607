//! The programs of a benchmark: the `.wasm` files under a folder laid out as Sightglass lays out its
//! corpus, and how each runs.
//!
//! A program of the corpus runs with its folder pre-opened as `.`, its file name as its only
//! argument, and must exit with status 0 — unless files beside it say otherwise: `<stem>.args` lists
//! more arguments and `<stem>.dirs` more directories (`HOST::GUEST`, the host path relative to the
//! folder), one per line, and `<stem>.exit.expected` holds another status. So programs prepared from
//! outside the corpus (a synthesis tool, a solver) run as they are meant to. `<stem>.small.args`,
//! like `.args`, gives the arguments of another input (as `small.input` beside `default.input`
//! does for programs that read their input), for what wants a run on other data than the timed one
//! (`bench --hints`).

use anyhow::{bail, Context, Result};
use pathprof_runtime::{RunConfig, RunOutcome, StopReason, Stopper};
use std::path::{Path, PathBuf};

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

/// Runs `one` on every program under `dir` (canonicalised) whose name, relative to `dir`, contains
/// `filter`, in order, handing each figures to `progress`, until `stopper` stops a run (or `one`
/// says it was stopped by returning `None`): the figures of the programs measured, and the name of
/// why the benchmark stopped, when it did.
pub(crate) fn each_program<F>(
    dir: &Path,
    filter: Option<&str>,
    stopper: Option<&Stopper>,
    mut one: impl FnMut(&Path, &str) -> Result<Option<F>>,
    mut progress: impl FnMut(&F),
) -> Result<(Vec<F>, Option<&'static str>)> {
    let dir = dir.canonicalize().with_context(|| format!("cannot read {}", dir.display()))?;
    let mut measured = Vec::new();
    for wasm in programs(&dir)? {
        let name = wasm.strip_prefix(&dir).unwrap_or(&wasm).display().to_string();
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let figures = one(&wasm, &name).with_context(|| name.clone())?;
        let stopped = stopper.and_then(Stopper::reason);
        match figures {
            Some(figures) if stopped.is_none() => {
                progress(&figures);
                measured.push(figures);
            }
            _ => return Ok((measured, Some(stopped.map_or("stopped", StopReason::name)))),
        }
    }
    Ok((measured, None))
}

/// A program of a corpus, made ready to run as the benchmark runs it: its bytes, what it sees, the
/// output it must give and its exit status.
pub(crate) struct Setup {
    pub bytes: Vec<u8>,
    pub config: RunConfig,
    /// The stdout and stderr it must write, when files give them.
    pub expected: Vec<Option<Vec<u8>>>,
    pub status: ExitStatus,
    /// The arguments of another input, from `<stem>.small.args`.
    pub other_args: Option<Vec<String>>,
}

impl Setup {
    /// The program `wasm` (named `name`), its folder pre-opened as `.` and the files beside it read
    /// (module docs); `stopper` may stop its runs.
    pub(crate) fn of(wasm: &Path, name: &str, stopper: Option<&Stopper>) -> Result<Setup> {
        let bytes = std::fs::read(wasm)?;
        let expected: Vec<Option<Vec<u8>>> = ["stdout", "stderr"]
            .iter()
            .map(|s| expected_output(wasm, s).map(std::fs::read).transpose())
            .collect::<Result<_, _>>()?;
        let folder = wasm.parent().unwrap().to_path_buf();
        let lines = |ext: &str| -> Result<Vec<String>> {
            let file = wasm.with_extension(ext);
            if !file.exists() {
                return Ok(Vec::new());
            }
            let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
            Ok(text.lines().filter(|l| !l.is_empty()).map(String::from).collect())
        };
        let mut args = vec![wasm.file_name().unwrap().to_string_lossy().into_owned()];
        let other_args = match wasm.with_extension("small.args").exists() {
            true => Some(args.iter().cloned().chain(lines("small.args")?).collect()),
            false => None,
        };
        args.extend(lines("args")?);
        let mut dirs = vec![(folder.clone(), ".".to_string())];
        for line in lines("dirs")? {
            let (host, guest) =
                line.split_once("::").with_context(|| format!("{name}: {line:?} is not HOST::GUEST"))?;
            dirs.push((folder.join(host), guest.to_string()));
        }
        let status = match expected_output(wasm, "exit") {
            Some(file) => {
                let text = std::fs::read_to_string(&file)?;
                let status = text.trim().parse().with_context(|| format!("{}: not an exit status", file.display()))?;
                ExitStatus(status)
            }
            None => ExitStatus(0),
        };
        let config = RunConfig { dirs, args, capture_output: true, stopper: stopper.cloned(), ..RunConfig::default() };
        Ok(Setup { bytes, config, expected, status, other_args })
    }

    /// Fails unless `out` (of a run of `label`) wrote what the program must write: the expected
    /// files, else what the first run wrote (`reference`, which the first run sets).
    pub(crate) fn check_output(
        &self,
        name: &str,
        label: &str,
        out: &RunOutcome,
        reference: &mut Option<(Vec<u8>, Vec<u8>)>,
    ) -> Result<()> {
        for (i, (stream, got)) in [("stdout", &out.stdout), ("stderr", &out.stderr)].into_iter().enumerate() {
            let want = match (&self.expected[i], &*reference) {
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
                bail!("{name} in {label}: {stream} differs from the expected output");
            }
        }
        if reference.is_none() {
            *reference = Some((out.stdout.clone(), out.stderr.clone()));
        }
        Ok(())
    }
}

/// The exit status a program of the corpus ends with.
#[derive(Clone, Copy)]
pub(crate) struct ExitStatus(pub i32);

impl ExitStatus {
    /// Fails unless the run (of `what`) exited with this status, without a trap.
    pub(crate) fn check(self, out: &RunOutcome, what: impl std::fmt::Display) -> Result<()> {
        if out.exit_code != self.0 || out.trap.is_some() {
            bail!("{what}: exit {} {}", out.exit_code, out.trap.as_deref().unwrap_or_default());
        }
        Ok(())
    }
}
