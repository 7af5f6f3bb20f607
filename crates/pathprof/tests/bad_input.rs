//! Bad input: a clear one-line error, a non-zero exit, no panic, and no partial profile file.

mod common;

use common::{fails_as_usage, fails_cleanly};
use std::path::Path;

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[test]
fn missing_file() {
    let dir = tempfile::tempdir().unwrap();
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "nope.wasm"], "cannot read nope.wasm");
}

#[test]
fn malformed_binary() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = wat::parse_str("(module (func (export \"_start\")))").unwrap();
    bytes.truncate(bytes.len() - 3);
    write(dir.path(), "m.wasm", &bytes);
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "m.wasm"], "m.wasm");
    write(dir.path(), "junk.wasm", b"\0asm\x01\0\0\0\xff\xff\xff");
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "junk.wasm"], "junk.wasm");
    write(dir.path(), "text.wasm", b"hello, not wasm");
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "text.wasm"], "not a WebAssembly module");
}

#[test]
fn invalid_module() {
    let dir = tempfile::tempdir().unwrap();
    // Type error: i32.add of an i64.
    let bytes = wat::parse_str("(module (func (result i32) (i32.add (i32.const 1) (i64.const 2))))").unwrap();
    write(dir.path(), "bad.wasm", &bytes);
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "bad.wasm"], "invalid WebAssembly module");
    fails_cleanly(dir.path(), &["instrument", "bad.wasm", "-o", "out.wasm"], "invalid WebAssembly module");
    assert!(!dir.path().join("out.wasm").exists());
}

#[test]
fn component_instead_of_module() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = wat::parse_str("(component)").unwrap();
    write(dir.path(), "c.wasm", &bytes);
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "c.wasm"], "component");
}

#[test]
fn unknown_import() {
    let dir = tempfile::tempdir().unwrap();
    let bytes =
        wat::parse_str(r#"(module (import "env" "mystery" (func)) (func (export "_start") (call 0)))"#).unwrap();
    write(dir.path(), "m.wasm", &bytes);
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "m.wasm"], "unknown import: env::mystery");
}

#[test]
fn no_entry_point() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = wat::parse_str(r#"(module (func (export "f")))"#).unwrap();
    write(dir.path(), "m.wasm", &bytes);
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "m.wasm"], "_start");
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "--invoke", "g", "m.wasm"], "no function `g`");
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "--invoke", "f", "m.wasm", "1"], "takes 0 arguments");
}

#[test]
fn corrupt_profile() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "p.txt", b"{\"format\": \"pathprof-profile\", \"version\": 1, \"functions\": 3");
    fails_cleanly(dir.path(), &["report", "p.txt"], "cannot read p.txt");
    write(dir.path(), "q.txt", b"{\"format\": \"something-else\"}");
    fails_cleanly(dir.path(), &["report", "q.txt"], "not a pathprof profile");
    write(dir.path(), "r.txt", b"{\"format\": \"pathprof-profile\", \"version\": 99}");
    fails_cleanly(dir.path(), &["report", "r.txt"], "version 99");
    fails_cleanly(dir.path(), &["report", "missing.txt"], "cannot read missing.txt");
}

#[test]
fn bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = wat::parse_str(r#"(module (func (export "_start")))"#).unwrap();
    write(dir.path(), "m.wasm", &bytes);
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "--dir", "no/such/dir", "m.wasm"], "not a directory");
    fails_cleanly(dir.path(), &["run", "-o", "p.json", "--env", "NOEQUALS", "m.wasm"], "NAME=VALUE");
}

/// A mode's flags apply to that mode only, and a setting is given once: in the mode or as a flag.
#[test]
fn flags_of_another_mode() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = wat::parse_str(r#"(module (func (export "_start")))"#).unwrap();
    write(dir.path(), "m.wasm", &bytes);
    for (args, expect) in [
        (&["-k", "3"][..], "-k does not apply to --mode bl"),
        (&["--mode", "pep", "-k", "3"], "-k does not apply to --mode pep"),
        (&["--mode", "kbl", "--samples", "8"], "--samples does not apply to --mode kbl"),
        (&["--mode", "bl", "--every", "2"], "--every does not apply to --mode bl"),
        (&["--mode", "none", "--max-nodes", "9"], "--max-nodes does not apply to --mode none"),
        (&["--mode", "bl", "--fold-threads", "2"], "--fold-threads does not apply to --mode bl"),
        (&["--mode", "kbl", "--tick-ms", "1"], "--tick-ms does not apply to --mode kbl"),
        (&["--mode", "pep:8", "--samples", "4"], "--mode pep:8 gives its settings already"),
        (&["--mode", "kbl:3", "-k", "4"], "--mode kbl:3 gives its settings already"),
        (&["--mode", "pep", "--every", "4", "--stride", "2"], "--every samples without a timer"),
        (&["--mode", "pep:every:0"], "N must be a whole number from 1"),
        (&["--mode", "kbl:65"], "K must be a whole number from 1 to 64"),
        (&["--mode", "fast"], "unknown mode \"fast\""),
        (&["--mode", "none", "--edge-profile", "p.json"], "--edge-profile does not apply to --mode none"),
    ] {
        let mut all = vec!["run", "-o", "p.json"];
        all.extend(args);
        all.push("m.wasm");
        fails_cleanly(dir.path(), &all, expect);
    }
    fails_cleanly(dir.path(), &["instrument", "--mode", "none", "m.wasm", "-o", "out.wasm"], "no probes to write");
    fails_cleanly(dir.path(), &["instrument", "--mode", "pep:0", "m.wasm", "-o", "out.wasm"], "S must be");
    assert!(!dir.path().join("out.wasm").exists());
}

#[test]
fn unwritable_profile_path_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = wat::parse_str(r#"(module (func (export "_start")))"#).unwrap();
    write(dir.path(), "m.wasm", &bytes);
    fails_cleanly(dir.path(), &["run", "-o", "no/such/dir/p.json", "m.wasm"], "cannot write");
}

/// Settings out of range are refused with the range, not a panic or a spinning timer; clap's own
/// refusals read like every other error.
#[test]
fn settings_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "m.wasm", &wat::parse_str(r#"(module (func (export "_start")))"#).unwrap());
    for tick in ["1e300", "1e-9", "-1", "0", "NaN", "inf"] {
        let args = ["run", "-o", "p.json", "--mode", "pep", "--tick-ms", tick, "m.wasm"];
        fails_cleanly(dir.path(), &args, "--tick-ms must be a number of milliseconds from 0.01 to 3600000");
    }
    fails_cleanly(dir.path(), &["bench", "--runs", "0", "."], "--runs must be at least 1");
    for (args, expect) in [
        (&["-k", "0"][..], "invalid value '0' for '-k <K>'"),
        (&["--mode", "pep", "--every", "0"], "invalid value '0' for '--every <N>'"),
        (&["--mode", "kbl", "--fold-threads", "0"], "invalid value '0' for '--fold-threads <N>'"),
        (&["--random-seed", "abc"], "invalid value 'abc' for '--random-seed <N>'"),
        (&["--frobnicate"], "unexpected argument '--frobnicate'"),
    ] {
        let mut all = vec!["run", "-o", "p.json"];
        all.extend(args);
        all.push("m.wasm");
        fails_as_usage(dir.path(), &all, expect);
    }
    fails_as_usage(dir.path(), &["hpp", "--entries", "0", "m.wasm"], "--entries");
    fails_as_usage(dir.path(), &["rnu", "m.wasm"], "unrecognized subcommand 'rnu'");
}

/// What the program may see is given once and named: no directory without a name, no variable
/// without a name, no variable given twice.
#[test]
fn grants_are_named_once() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "m.wasm", &wat::parse_str(r#"(module (func (export "_start")))"#).unwrap());
    for (args, expect) in [
        (&["--dir", ".::"][..], "--dir .::: give a host directory"),
        (&["--dir", "::x"], "give a host directory"),
        (&["--dir", ".::a", "--dir", ".::a"], "--dir .::a: the program sees another directory at a already"),
        (&["--env", "=bar"], "--env =bar: the variable's name is empty"),
        (&["--env", "A=1", "--env", "A=2"], "--env A: the variable is given twice"),
    ] {
        let mut all = vec!["run", "-o", "p.json"];
        all.extend(args);
        all.push("m.wasm");
        fails_cleanly(dir.path(), &all, expect);
    }
}

/// An output is never one of the inputs, two outputs are never one file, and an output that cannot
/// be written is found before the run.
#[test]
fn outputs_are_not_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "m.wasm", &wat::parse_str(r#"(module (func (export "_start")))"#).unwrap());
    let profile = common::pathprof().current_dir(d).args(["run", "--quiet", "-o", "p.json", "m.wasm"]).output();
    assert!(profile.unwrap().status.success());
    let original = std::fs::read(d.join("p.json")).unwrap();
    std::fs::rename(d.join("p.json"), d.join("p.prof")).unwrap();
    for (args, expect) in [
        (&["run", "-o", "m.wasm", "m.wasm"][..], "cannot write m.wasm: it is the input m.wasm"),
        (&["run", "-o", "./m.wasm", "m.wasm"], "cannot write ./m.wasm: it is the input m.wasm"),
        (&["instrument", "m.wasm", "-o", "m.wasm"], "it is the input m.wasm"),
        (&["instrument", "m.wasm", "-o", "out.wasm", "--map", "m.wasm"], "it is the input m.wasm"),
        (&["instrument", "m.wasm", "-o", "x.wasm", "--map", "x.wasm"], "x.wasm and x.wasm are one file"),
        (&["export", "p.prof", "--speedscope", "p.prof"], "it is the input p.prof"),
        (&["export", "p.prof", "--folded", "a.txt", "--svg", "a.txt"], "are one file"),
        (&["report", "p.prof", "--html", "p.prof"], "it is the input p.prof"),
        (&["merge", "p.prof", "p.prof", "-o", "p.prof"], "it is the input p.prof"),
        (&["run", "-o", "/proc/p.json", "m.wasm"], "cannot write /proc/p.json"),
        (&["run", "-o", "no/such/dir/p.json", "m.wasm"], "directory no/such/dir does not exist"),
    ] {
        fails_cleanly(d, args, expect);
    }
    assert_eq!(std::fs::read(d.join("p.prof")).unwrap(), original, "the input is untouched");
    assert!(!d.join("out.wasm").exists() && !d.join("x.wasm").exists() && !d.join("a.txt").exists());
}

/// A device or a pipe given as an output is written in place, never replaced by a file.
#[cfg(unix)]
#[test]
fn devices_and_pipes_are_written_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "m.wasm", &wat::parse_str(r#"(module (func (export "_start")))"#).unwrap());
    let fifo = d.join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = common::pathprof().current_dir(d).args(["run", "--quiet", "-o", "fifo", "m.wasm"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = reader.join().unwrap();
    assert!(pathprof_core::profile::Profile::from_json(&text).is_ok(), "{text}");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "the pipe is still a pipe");
    // A full device: the write fails with one line, and the device stays a device.
    if std::path::Path::new("/dev/full").exists() {
        fails_cleanly(d, &["run", "-o", "/dev/full", "m.wasm"], "cannot write /dev/full");
        assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device());
    }
}

/// A profile is checked for what it claims: paths given once and within the function's paths,
/// through blocks it lists; forests no deeper than their k; a total that is the sum of the counts.
#[test]
fn profiles_that_claim_nonsense_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wat = r#"(module (func (export "_start") (local i32)
        (loop $l (br_if $l (i32.lt_u (local.tee 0 (i32.add (local.get 0) (i32.const 1))) (i32.const 3))))))"#;
    write(d, "m.wasm", &wat::parse_str(wat).unwrap());
    for (mode, file) in [("bl", "bl.prof"), ("kbl:2", "kbl.prof")] {
        let args = ["run", "--quiet", "--mode", mode, "-o", file, "m.wasm"];
        assert!(common::pathprof().current_dir(d).args(args).output().unwrap().status.success());
    }
    let edit = |file: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join(file)).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(d.join("bad.prof"), v.to_string()).unwrap();
    };
    let twice = |v: &mut serde_json::Value| {
        let first = v["functions"][0]["paths"][0].clone();
        v["functions"][0]["paths"].as_array_mut().unwrap().push(first);
    };
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        ("bl.prof", Box::new(twice), "is given twice"),
        ("bl.prof", Box::new(|v| v["functions"][0]["paths"][0]["id"] = 99.into()), "is beyond its"),
        ("bl.prof", Box::new(|v| v["functions"][0]["paths"][0]["blocks"][0] = 99.into()), "a block the function"),
        ("bl.prof", Box::new(|v| v["functions"][0]["paths"][0]["end"] = 99.into()), "a block the function"),
        ("bl.prof", Box::new(|v| v["functions"][0]["edges"][0]["from"] = 99.into()), "joins a block"),
        ("bl.prof", Box::new(|v| v["path_executions"] = 12345.into()), "add up to"),
        ("kbl.prof", Box::new(|v| v["functions"][0]["kipf"]["k"] = 0.into()), "k = 0"),
        ("kbl.prof", Box::new(|v| v["functions"][0]["kipf"]["k"] = 1.into()), "deeper than k = 1"),
        ("kbl.prof", Box::new(|v| v["kbl"]["k"] = 0.into()), "k = 0"),
        ("bl.prof", Box::new(|v| v["version"] = 9.into()), "reads versions 1 to 4"),
        ("bl.prof", Box::new(|v| *v = serde_json::json!([1, 2, 3])), "not a JSON object"),
    ];
    for (file, change, expect) in cases {
        edit(file, &*change);
        fails_cleanly(d, &["report", "bad.prof"], expect);
    }
}

/// Modules the instrumenter used to get wrong: one without a type section in every mode, and one
/// whose name section is damaged, which runs without its names.
#[test]
fn odd_modules_instrument() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "empty.wasm", b"\0asm\x01\0\0\0");
    write(d, "memory.wasm", &wat::parse_str("(module (memory 1))").unwrap());
    for file in ["empty.wasm", "memory.wasm"] {
        for mode in ["bl", "pep", "pep:every:3", "kbl", "events", "events:pd", "events:dec"] {
            let out = common::pathprof()
                .current_dir(d)
                .args(["instrument", "--mode", mode, file, "-o", "out.wasm"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{file} {mode}: {}", String::from_utf8_lossy(&out.stderr));
            let bytes = std::fs::read(d.join("out.wasm")).unwrap();
            wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
                .validate_all(&bytes)
                .unwrap_or_else(|e| panic!("{file} in {mode} does not validate: {e}"));
        }
    }
    // A name section whose subsection runs past its end.
    let named = wat::parse_str(r#"(module (func $main (export "_start") (local i32) (local.set 0 (i32.const 1))))"#);
    let mut bytes = named.unwrap();
    let at = bytes.windows(4).position(|w| w == b"name").expect("wat writes names") + 4;
    bytes[at + 1] = 0x7f;
    write(d, "damaged.wasm", &bytes);
    let out = common::pathprof().current_dir(d).args(["run", "-o", "p.json", "damaged.wasm"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("pathprof: warning: damaged.wasm: the module's name section is malformed"), "{stderr}");
}

/// A trap deep in a recursion leaves every activation open, however deep, and says so.
#[test]
fn every_open_activation_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let wat = r#"(module (func $down (param i32)
        (if (i32.eqz (local.get 0)) (then unreachable))
        (call $down (i32.sub (local.get 0) (i32.const 1))))
      (func (export "_start") (call $down (i32.const 29))))"#;
    write(dir.path(), "m.wasm", &wat::parse_str(wat).unwrap());
    let out = common::pathprof().current_dir(dir.path()).args(["run", "--quiet", "-o", "p.json", "m.wasm"]).output();
    assert_eq!(out.unwrap().status.code(), Some(134));
    let text = std::fs::read_to_string(dir.path().join("p.json")).unwrap();
    let p = pathprof_core::profile::Profile::from_json(&text).unwrap();
    assert_eq!(p.open_activations_at_exit, 31, "30 activations of $down and _start's");
}
