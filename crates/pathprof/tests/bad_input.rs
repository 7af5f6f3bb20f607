//! Bad input: a clear one-line error, a non-zero exit, no panic, and no partial profile file.

mod common;

use common::fails_cleanly;
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
