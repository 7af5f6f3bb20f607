//! Programs profiled under another engine with pathprof's JavaScript host: instrumented with
//! `pathprof instrument`, run elsewhere (Node, a browser) into a dump, decoded with `pathprof
//! decode`, and compared with the profile `pathprof run` writes of the same program.

use super::{expected, pathprof};
use pathprof_core::profile::{FunctionProfile, Profile, U64};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `command`, which must exit with `status`, and gives its standard output.
pub fn exits(command: &mut Command, what: &str, status: i32) -> Vec<u8> {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(out.status.code(), Some(status), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

pub fn read_profile(path: &Path) -> Profile {
    Profile::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A file of the repository's `js` folder.
pub fn js(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../js").join(file).canonicalize().unwrap()
}

/// A profile of interesting paths for `wasm` (mode `ppp`), written in `dir`: every other path of
/// each function of its `bl` profile, by ID, so that the others are residual.
pub fn half_interesting(wasm: &Path, dir: &Path) -> PathBuf {
    let bl = dir.join("bl.json");
    let mut run = pathprof();
    run.current_dir(wasm.parent().unwrap()).args(["run", "--quiet", "--mode", "bl", "--dir", ".", "-o"]).arg(&bl);
    exits(run.arg(wasm.file_name().unwrap()), "run --mode bl", 0);
    let mut profile = read_profile(&bl);
    for f in &mut profile.functions {
        if let Some(p) = f.profiled_mut() {
            p.paths.sort_by_key(|x| x.id);
            p.paths = p.paths.iter().step_by(2).cloned().collect();
        }
    }
    profile.path_executions = U64(profile.functions.iter().flat_map(|f| f.paths()).map(|p| p.count.0).sum());
    let half = dir.join("half.json");
    std::fs::write(&half, profile.to_json()).unwrap();
    half
}

/// One program instrumented for one mode, to run elsewhere.
pub struct Case {
    pub tmp: tempfile::TempDir,
    pub wasm: PathBuf,
    pub name: String,
    pub mode: String,
    pub interesting: Option<PathBuf>,
    /// The exit status the program ends with (134: a trap).
    pub status: i32,
    pub instrumented: PathBuf,
    pub map: PathBuf,
}

impl Case {
    /// `wasm` instrumented for `mode` (with the interesting paths of the profile `interesting`).
    pub fn new(wasm: &Path, mode: &str, interesting: Option<&Path>, status: i32) -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let name = wasm.file_name().unwrap().to_string_lossy().into_owned();
        let instrumented = tmp.path().join("program.wasm");
        let map = tmp.path().join("program.wasm.map.json");
        let mut c = Case {
            tmp,
            wasm: wasm.to_path_buf(),
            name,
            mode: mode.to_string(),
            interesting: interesting.map(Path::to_path_buf),
            status,
            instrumented,
            map,
        };
        let mut instrument = pathprof();
        instrument.args(["instrument", "--mode", mode, "-o"]).arg(&c.instrumented).arg(wasm);
        c.interesting_args(&mut instrument);
        exits(&mut instrument, &format!("instrument {} --mode {mode}", c.name), 0);
        c.name = format!("{} ({mode})", c.name);
        c
    }

    fn interesting_args(&self, command: &mut Command) {
        if let Some(p) = &self.interesting {
            command.arg("--interesting").arg(p);
        }
    }

    /// Where the dump of the run elsewhere goes.
    pub fn dump(&self) -> PathBuf {
        self.tmp.path().join("run.dump")
    }

    /// The dump decoded, and the program's `stdout` elsewhere, must be what `pathprof run` gives
    /// (in the program's folder, which it is granted as `.`); gives `pathprof run`'s profile.
    pub fn same_as_run(&self, stdout: &[u8]) -> Profile {
        let name = &self.name;
        if let Some(file) = expected(&self.wasm, "stdout") {
            assert!(stdout == std::fs::read(&file).unwrap(), "{name}: stdout differs from {}", file.display());
        }
        let decoded = self.tmp.path().join("decoded.json");
        let mut decode = pathprof();
        decode.arg("decode").arg(&self.map).arg(self.dump()).arg("-o").arg(&decoded);
        // Segments' residual marks come from the interesting profiles themselves.
        if self.mode.starts_with("ips") || self.mode.starts_with("ippp") {
            self.interesting_args(&mut decode);
        }
        exits(&mut decode, &format!("decode {name}"), 0);

        let ran = self.tmp.path().join("run.json");
        let mut run = pathprof();
        run.current_dir(self.wasm.parent().unwrap())
            .args(["run", "--quiet", "--mode", &self.mode, "--dir", ".", "-o"])
            .arg(&ran);
        self.interesting_args(&mut run);
        exits(run.arg(self.wasm.file_name().unwrap()), &format!("run {name}"), self.status);

        let (ran, mut decoded) = (read_profile(&ran), read_profile(&decoded));
        if self.status == 134 {
            // Each engine words its traps its own way.
            assert!(ran.trap.is_some() && decoded.trap.is_some(), "{name} trapped");
            decoded.trap = ran.trap.clone();
        }
        assert_eq!(decoded.module.sha256, ran.module.sha256, "{name}");
        let (ran_functions, ran_rest) = comparable(&ran);
        let (decoded_functions, decoded_rest) = comparable(&decoded);
        assert_eq!(decoded_rest, ran_rest, "{name}: the profiles' facts differ");
        assert_eq!(decoded_functions.len(), ran_functions.len(), "{name}");
        for (x, y) in decoded_functions.iter().zip(&ran_functions) {
            assert!(x == y, "{name}: function {} differs from pathprof run's", y.index);
        }
        let counted_events = ran.functions.iter().any(|f| f.events().is_some_and(|e| e.values().any(|n| n > 0)));
        assert!(ran.path_executions.0 > 0 || counted_events, "{name} counted something");
        ran
    }
}

/// What must agree between two profiles of one run: everything but times, paths of files and
/// the facts of how the host worked (the stream's hand-overs and waits).
fn comparable(p: &Profile) -> (Vec<FunctionProfile>, Value) {
    let mut json: Value = serde_json::from_str(&p.to_json()).unwrap();
    let object = json.as_object_mut().unwrap();
    for key in ["functions", "module", "args", "wall_seconds", "bench_region_seconds", "instrumentation_seconds"] {
        object.remove(key);
    }
    if let Some(kbl) = object.get_mut("kbl").and_then(Value::as_object_mut) {
        kbl.remove("stream_handovers");
        kbl.remove("stream_wait_seconds");
    }
    if let Some(facts) = object.get_mut("mode_facts").and_then(Value::as_object_mut) {
        facts.remove("stream_wait_seconds");
    }
    (p.functions.clone(), json)
}
