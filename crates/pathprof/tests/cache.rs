//! Compiled programs kept between runs: `pathprof run` keeps the instrumented module's code in the
//! cache directory and gives the same profile when it takes it from there; `--no-cache` neither
//! takes nor keeps; `pathprof cache` says what is kept and clears it, refusing a directory that
//! holds what the cache does not write.

mod common;

use common::{pathprof, KBL_LOOP};
use pathprof_core::profile::Profile;
use std::path::Path;

/// Files under `dir` (none when it does not exist).
fn files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.map(|e| e.unwrap().path()).map(|p| if p.is_dir() { files(&p) } else { 1 }).sum()
}

fn profile(cache: &Path, app: &Path, extra: &[&str]) -> Profile {
    let out = cache.parent().unwrap().join("p.json");
    let status = pathprof()
        .env("PATHPROF_CACHE_DIR", cache)
        .args(["run", "--quiet", "-o"])
        .arg(&out)
        .args(extra)
        .arg(app)
        .status()
        .unwrap();
    assert!(status.success());
    Profile::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

#[test]
fn runs_keep_and_take_compiled_code() {
    let tmp = tempfile::tempdir().unwrap();
    let app = tmp.path().join("loop.wasm");
    std::fs::write(&app, wat::parse_str(KBL_LOOP).unwrap()).unwrap();
    let cache = tmp.path().join("cache");

    let uncached = profile(&cache, &app, &["--no-cache"]);
    assert_eq!(files(&cache), 0, "--no-cache keeps nothing");
    let first = profile(&cache, &app, &[]);
    let kept = files(&cache);
    assert!(kept > 0, "the instrumented module's code is kept");
    let second = profile(&cache, &app, &[]);
    assert_eq!(files(&cache), kept, "the second run takes what the first kept");
    for p in [&first, &second] {
        assert_eq!(p.functions, uncached.functions);
        assert_eq!(p.path_executions, uncached.path_executions);
    }
    // Another mode is another instrumented module: compiled and kept apart.
    profile(&cache, &app, &["--mode", "kbl"]);
    assert!(files(&cache) > kept);

    let say = |args: &[&str]| {
        let out = pathprof().env("PATHPROF_CACHE_DIR", &cache).args(args).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let said = say(&["cache"]);
    assert!(said.starts_with(&format!("{}: {} files", cache.display(), files(&cache))), "{said}");
    let cleared = say(&["cache", "--clear"]);
    assert!(cleared.contains("removed"), "{cleared}");
    assert!(!cache.exists());
    assert!(say(&["cache"]).contains(": 0 files"));
}

#[test]
fn a_directory_the_cache_did_not_write_is_not_cleared() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("notes");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("thesis.tex"), "keep me").unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = pathprof().env("PATHPROF_CACHE_DIR", &dir).current_dir(work.path()).args(["cache", "--clear"]).output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("pathprof: error: ") && stderr.contains("which the cache does not write"), "{stderr}");
    assert!(dir.join("thesis.tex").exists());
}
