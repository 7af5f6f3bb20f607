//! Helpers shared by the CLI integration tests.
#![allow(dead_code)]

pub mod elsewhere;

use pathprof::modes::ips::{IpsFacts, IpsStep, Mark};
use pathprof_core::profile::{Endpoint, FunctionProfile, Profile};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A loop whose `br_if` back goes round 999 times of 1000, an `if` taken a third of the time, and an
/// `if` never taken.
pub const BRANCHY: &str = r#"
(module
  (func $f (export "f") (param $n i32) (result i32) (local $i i32) (local $acc i32)
    (loop $l
      (if (i32.eqz (i32.rem_u (local.get $i) (i32.const 3)))
        (then (local.set $acc (i32.add (local.get $acc) (i32.const 7))))
        (else (local.set $acc (i32.sub (local.get $acc) (i32.const 1)))))
      (if (i32.gt_u (local.get $acc) (i32.const 100000))
        (then (local.set $acc (i32.const 0))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $acc)))
"#;

/// The `pathprof` command, keeping compiled code in a cache of the tests' own.
pub fn pathprof() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pathprof"));
    command.env("PATHPROF_CACHE_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("pathprof-cache"));
    command
}

/// Result of one `pathprof run`.
pub struct Run {
    pub output: Output,
    pub profile: Profile,
}

/// Runs `pathprof run --quiet -o <tmp>/profile.json EXTRA... APP ARGS...` in `cwd`.
pub fn run_in(cwd: &Path, extra: &[&str], app: &Path, args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("profile.json");
    let output = pathprof()
        .current_dir(cwd)
        .args(["run", "--quiet", "-o"])
        .arg(&out)
        .args(extra)
        .arg(app)
        .args(args)
        .output()
        .expect("pathprof runs");
    let text = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| panic!("no profile ({e}); stderr: {}", String::from_utf8_lossy(&output.stderr)));
    let profile = Profile::from_json(&text).expect("the profile parses");
    Run { output, profile }
}

/// A temporary folder holding `wat` as the module `m.wasm`, and that module's path.
/// `many` calls `bar`, which tests `bits` bits of its argument (2^`bits` paths from its entry),
/// `calls` times on one path: with one bit, each 63 calls take a word of 64 bits of supergraph IDs;
/// with 32, each call takes a word, and more than 256 pass the 256 words a function of 257 calls
/// may have. `run` calls
/// `many` with 1 and with 0 and `few` (two calls of `bar`) twice, so that each call of `bar` takes
/// one of two paths; `_start` calls `run` (and a WASI host finds the memory it needs).
pub fn many_calls_module(calls: usize, bits: u32) -> String {
    let calls = "(call $bar (local.get $x))\n".repeat(calls);
    let tests: String = (0..bits)
        .map(|i| {
            format!(
                "(if (i32.and (local.get $x) (i32.const {})) (then (global.set $acc (i32.add (global.get $acc) (i32.const {}))))\n  (else (global.set $acc (i32.mul (global.get $acc) (i32.const 3)))))\n",
                1u32 << i,
                i + 1
            )
        })
        .collect();
    format!(
        r#"(module
          (memory (export "memory") 1)
          (global $acc (mut i32) (i32.const 0))
          (func $bar (param $x i32)
            {tests})
          (func $many (param $x i32) {calls})
          (func $few (param $x i32) (call $bar (local.get $x)) (call $bar (i32.eqz (local.get $x))))
          (func $run (export "run") (result i32)
            (call $many (i32.const 1)) (call $few (i32.const 0)) (call $few (i32.const 1))
            (call $many (i32.const 0))
            (global.get $acc))
          (func (export "_start") (drop (call $run))))"#
    )
}

pub fn wat_module(wat: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.wasm");
    std::fs::write(&path, wat::parse_str(wat).expect("test wat parses")).unwrap();
    (dir, path)
}

/// Writes `wat` to a temporary file and profiles it.
pub fn run_wat(wat: &str, extra: &[&str], args: &[&str]) -> Run {
    let (dir, path) = wat_module(wat);
    run_in(dir.path(), extra, &path, args)
}

pub fn function<'a>(p: &'a Profile, name: &str) -> &'a FunctionProfile {
    p.functions.iter().find(|f| f.name.as_deref() == Some(name)).unwrap_or_else(|| panic!("no function {name}"))
}

/// Sum of the counts of `f`'s paths that satisfy `pred`.
pub fn total(f: &FunctionProfile, pred: impl Fn(&pathprof_core::profile::PathCount) -> bool) -> u64 {
    f.paths().iter().filter(|p| pred(p)).map(|p| p.count.0).sum()
}

/// Path counts balance: at every loop header or cut block as many paths end as start, and as many
/// paths leave by an exit as start at the entry — up to the activations still open at exit, whose
/// current paths were never counted.
pub fn check_balance(p: &Profile) {
    let open = p.open_activations_at_exit;
    for f in p.functions.iter().filter(|f| f.is_instrumented()) {
        let starts_entry = total(f, |x| x.start == Endpoint::Entry);
        let ends_exit = total(f, |x| x.end == Endpoint::Exit);
        let throws = total(f, |x| x.end == Endpoint::Throw);
        let mut points: Vec<u32> = f
            .paths()
            .iter()
            .flat_map(|x| [x.start, x.end])
            .filter_map(|e| match e {
                Endpoint::Block(b) => Some(b),
                _ => None,
            })
            .collect();
        points.sort_unstable();
        points.dedup();
        // Exceptions caught at a landing start paths there that no path ending there accounts for.
        let mut caught = 0;
        for b in points {
            let ends = total(f, |x| x.end == Endpoint::Block(b));
            let starts = total(f, |x| x.start == Endpoint::Block(b));
            let info = &f.blocks[b as usize];
            if info.landing && starts >= ends {
                caught += starts - ends;
            } else {
                assert!(
                    ends >= starts && ends - starts <= open,
                    "{:?} block {b}: {ends} paths end there, {starts} start there, {open} open activations",
                    f.name
                );
            }
            assert!(
                info.loop_header || info.landing || f.cut_blocks().contains(&b),
                "paths end only at headers, landings and cut blocks"
            );
        }
        assert!(caught <= throws, "{:?}: {caught} exceptions caught, {throws} thrown", f.name);
        let left = ends_exit + (throws - caught);
        assert!(
            starts_entry >= left && starts_entry - left <= open,
            "{:?}: {starts_entry} paths from the entry, {ends_exit} to an exit, {} by an exception that left, \
             {open} open activations",
            f.name,
            throws - caught
        );
        // Every path is made of the function's blocks, and IDs are below the path count.
        for x in f.paths() {
            assert!(x.id.0 < f.num_paths());
            assert!(x.blocks.iter().all(|&b| (b as usize) < f.blocks.len()));
        }
    }
    let sum: u64 = p.functions.iter().flat_map(|f| f.paths()).map(|x| x.count.0).sum();
    assert_eq!(sum, p.path_executions.0);
}

/// Runs pathprof with `args` in `dir` and checks the failure is clean.
pub fn fails_cleanly(dir: &Path, args: &[&str], expect: &str) {
    fails_with(dir, args, expect, 1);
}

/// [`fails_cleanly`] for a command line that clap refuses: exit status 2.
pub fn fails_as_usage(dir: &Path, args: &[&str], expect: &str) {
    fails_with(dir, args, expect, 2);
}

/// The command fails with exit status `code`, one line of error that mentions `expect`, and no
/// profile left behind.
pub fn fails_with(dir: &Path, args: &[&str], expect: &str, code: i32) {
    let out = pathprof().current_dir(dir).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "args {args:?}: stderr {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("pathprof: error: "), "{stderr}");
    assert!(stderr.contains(expect), "{stderr:?} should mention {expect:?}");
    assert!(!stderr.contains("panicked"));
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") || n.starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no profile is left behind: {leftovers:?}");
}

pub fn corpus_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    dir.is_dir().then(|| dir.canonicalize().unwrap())
}

/// `work(10)` runs, in order: the entry path E, then the even round V and the odd round O alternately,
/// five of each, then the exit path X. `$odd`, called in odd rounds, runs its entry path, two rounds
/// and its exit path each time.
pub const KBL_LOOP: &str = r#"
(module
  (func $work (export "work") (param $n i32) (result i32)
    (local $i i32) (local $acc i32)
    (block $done
      (loop $top
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.and (local.get $i) (i32.const 1))
          (then (local.set $acc (i32.add (local.get $acc) (call $odd))))
          (else (local.set $acc (i32.add (local.get $acc) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $top)))
    (local.get $acc))
  (func $odd (result i32)
    (local $j i32)
    (loop $l
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $j) (i32.const 3))))
    (local.get $j))
  (func (export "_start") (drop (call $work (i32.const 10)))))
"#;

/// The expected output files of `wasm`: `<stem>.{stdout,stderr}.expected`, else `default.*`.
pub fn expected(wasm: &Path, stream: &str) -> Option<PathBuf> {
    let dir = wasm.parent().unwrap();
    let stem = wasm.file_stem().unwrap().to_string_lossy();
    [format!("{stem}.{stream}.expected"), format!("default.{stream}.expected")]
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// The one path of `f` that satisfies `pred`.
pub fn path_id(f: &FunctionProfile, pred: impl Fn(&pathprof_core::profile::PathCount) -> bool) -> u64 {
    let ids: Vec<u64> = f.paths().iter().filter(|p| pred(p)).map(|p| p.id.0).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0]
}

/// The paths of `work` in [`KBL_LOOP`]'s kbl profile: entry, even round, odd round, exit. `i = 0` is
/// even, so the even round is the one that follows the entry path.
pub fn kbl_loop_work_paths(work: &FunctionProfile) -> [u64; 4] {
    let header = work.blocks.iter().find(|b| b.loop_header).unwrap().id;
    let entry = path_id(work, |p| p.start == Endpoint::Entry);
    let exit = path_id(work, |p| p.end == Endpoint::Exit);
    let rounds: Vec<u64> = work
        .paths()
        .iter()
        .filter(|p| p.start == Endpoint::Block(header) && p.end == Endpoint::Block(header))
        .map(|p| p.id.0)
        .collect();
    assert_eq!(rounds.len(), 2);
    let kipf = work.kipf().unwrap();
    let after_entry = kipf.roots.iter().find(|r| r.path.0 == entry).unwrap().children[0].path.0;
    let even = *rounds.iter().find(|&&r| r == after_entry).expect("entry then even");
    let odd = *rounds.iter().find(|&&r| r != even).unwrap();
    [entry, even, odd, exit]
}

/// Programs whose path profile is the same in every run (checked over repeated runs; none of them
/// imports `random_get` or a clock), short enough to run once per depth of [`KS`] and once in `bl`
/// mode in the debug build, where kbl mode consumes a few million path ends per second.
pub const DETERMINISTIC: &[&str] = &[
    "blake3-scalar/benchmark.wasm",
    "bz2/benchmark.wasm",
    "shootout/shootout-ackermann.wasm",
    "shootout/shootout-gimli.wasm",
    "shootout/shootout-keccak.wasm",
    "shootout/shootout-memmove.wasm",
    "shootout/shootout-nestedloop.wasm",
    "shootout/shootout-random.wasm",
    "shootout/shootout-ratelimit.wasm",
    "shootout/shootout-xblabla20.wasm",
    "shootout/shootout-xchacha20.wasm",
];

/// Programs whose paths depend on `random_get` (or may, through the clock): every run is checked
/// on its own.
pub const NONDETERMINISTIC: &[&str] = &[
    "libsodium/libsodium-auth5.wasm",
    "libsodium/libsodium-stream.wasm",
    "quicksort/benchmark.wasm",
    "richards/benchmark.wasm",
    "rust-json/benchmark.wasm",
];

/// How a corpus program runs: its own folder granted as `.`, its output captured.
pub fn corpus_config(wasm: &Path) -> pathprof::RunConfig {
    pathprof::RunConfig {
        dirs: vec![(wasm.parent().unwrap().to_path_buf(), ".".into())],
        args: vec![wasm.file_name().unwrap().to_string_lossy().into_owned()],
        capture_output: true,
        ..pathprof::RunConfig::default()
    }
}

/// Profiles `wasm` in `mode`, run in its own folder with its output captured, and checks its exit
/// status and its output against the expected files.
pub fn profile_checked(
    engine: &pathprof_runtime::Engine,
    wasm: &Path,
    name: &str,
    mode: &str,
    inputs: &pathprof::Inputs,
) -> Profile {
    profile_bytes_checked(engine, wasm, &std::fs::read(wasm).unwrap(), name, mode, inputs)
}

/// [`profile_checked`] for `bytes` standing in for the program at `wasm` (its component, say).
pub fn profile_bytes_checked(
    engine: &pathprof_runtime::Engine,
    wasm: &Path,
    bytes: &[u8],
    name: &str,
    mode: &str,
    inputs: &pathprof::Inputs,
) -> Profile {
    let config = corpus_config(wasm);
    let prepared = pathprof::Prepared::new(bytes, name, &pathprof::Mode::parse(mode).unwrap(), inputs).unwrap();
    let run = prepared.run(engine, &config).unwrap_or_else(|e| panic!("{name} ({mode}): {e:#}"));
    let out = &run.outcome;
    assert_eq!((out.exit_code, out.trap.as_deref()), (0, None), "{name} ({mode})");
    for (stream, got) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if let Some(file) = expected(wasm, stream) {
            let want = std::fs::read(&file).unwrap();
            assert!(*got == want, "{name} ({mode}): {stream} differs from {}", file.display());
        }
    }
    prepared.profile(&run, &config).unwrap()
}

/// The component of a preview-1 command module: the module and the preview-1 adapter that Wasmtime
/// publishes. A module that imports the Sightglass functions `bench.start` and `bench.end` makes a
/// component that imports an instance `bench` of the two, as Sightglass's components do.
pub fn component_of(module: &[u8]) -> Vec<u8> {
    let imports_bench = wasmparser::Parser::new(0).parse_all(module).any(|p| match p {
        Ok(wasmparser::Payload::ImportSection(r)) => r.into_imports().flatten().any(|i| i.module == "bench"),
        _ => false,
    });
    let wit = "package pathprof:bench;\nworld program {\n  import bench: interface {\n    start: func();\n    end: func();\n  }\n}\n";
    component_with(module, imports_bench.then_some((wit, "program")), true)
}

/// `module` made a component of `world` in the WIT package `wit` (none: the module's imports are
/// WASI's alone), with the preview-1 adapter when `adapter`.
fn component_with(module: &[u8], wit: Option<(&str, &str)>, adapter: bool) -> Vec<u8> {
    use wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER;
    let mut module = module.to_vec();
    if let Some((wit, world)) = wit {
        let mut resolve = wit_parser::Resolve::default();
        let package = resolve.push_str("world.wit", wit).unwrap();
        let world = resolve.select_world(&[package], Some(world)).unwrap();
        wit_component::embed_component_metadata(&mut module, &resolve, world, wit_component::StringEncoding::UTF8)
            .unwrap();
    }
    let mut encoder = wit_component::ComponentEncoder::default().validate(true).module(&module).unwrap();
    if adapter {
        encoder = encoder.adapter("wasi_snapshot_preview1", WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER).unwrap();
    }
    encoder.encode().unwrap()
}

/// A composed component, as wasm-compose makes one: a program component (a preview-1 command,
/// with its adapter) that imports `pathprof:test/lib` and calls it in a loop, and a library
/// component that exports it, both nested in the composition (tests/fixtures/composed). The
/// program prints the sum of the library's results and the largest.
pub fn composed_component() -> Vec<u8> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/composed");
    let wit = std::fs::read_to_string(fixtures.join("lib.wit")).unwrap();
    let module = |name: &str| wat::parse_file(fixtures.join(name)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (program, library) = (dir.path().join("program.wasm"), dir.path().join("library.wasm"));
    std::fs::write(&program, component_with(&module("main.wat"), Some((&wit, "program")), true)).unwrap();
    std::fs::write(&library, component_with(&module("lib.wat"), Some((&wit, "library")), false)).unwrap();
    let mut config = wasm_compose::config::Config { dir: dir.path().to_path_buf(), ..Default::default() };
    config.dependencies.insert("pathprof:test/lib".into(), wasm_compose::config::Dependency { path: library });
    wasm_compose::composer::ComponentComposer::new(&program, &config).compose().unwrap()
}

/// `chromium` headless, quiet, with a profile of its own in `profile_dir`: what every test that
/// loads a page starts from.
pub fn headless(chromium: &Path, profile_dir: &Path) -> Command {
    let mut command = Command::new(chromium);
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.display()));
    command
}

/// Chromium, when installed (`PATHPROF_BROWSER` names another binary); required when
/// `PATHPROF_REQUIRE_BROWSER` is set, as CI sets it.
pub fn browser() -> Option<PathBuf> {
    let candidates = [std::env::var_os("PATHPROF_BROWSER").map(PathBuf::from), Some("/usr/bin/chromium".into())];
    let found = candidates.into_iter().flatten().find(|p| p.is_file());
    if found.is_none() && std::env::var_os("PATHPROF_REQUIRE_BROWSER").is_some() {
        panic!("no headless browser: install Debian's chromium");
    }
    found
}

/// The calls on each of `f`'s paths that ran, by path ID.
pub fn path_calls(f: &FunctionProfile) -> HashMap<u64, u32> {
    f.paths().iter().map(|p| (p.id.0, p.blocks.iter().map(|&b| f.blocks[b as usize].calls).sum())).collect()
}

/// Every path that ran roots one segment at each of its calls: the segments starting with part `j`
/// of a path ran as often as the path, for every `j` below its calls — those counted, with those the
/// profile names as not counted.
pub fn check_segment_roots(p: &Profile, facts: &IpsFacts) {
    let mut roots: HashMap<(u32, u64, u32), u64> = HashMap::new();
    for s in &facts.ips {
        let IpsStep::Sub(first) = &s.steps[0] else { panic!("a segment starts with a subpath") };
        assert_eq!(s.steps[1], IpsStep::Mark(Mark::Call), "a segment starts with a subpath that ends at a call");
        *roots.entry((first.function, first.path.0, first.part)).or_default() += s.count.0;
    }
    for r in facts.not_counted.iter().flat_map(|n| &n.roots) {
        *roots.entry((r.function, r.path.0, r.part)).or_default() += r.count.0;
    }
    let mut want = HashMap::new();
    for f in &p.functions {
        let calls = path_calls(f);
        for path in f.paths() {
            for j in 0..calls[&path.id.0] {
                want.insert((f.index, path.id.0, j), path.count.0);
            }
        }
    }
    assert_eq!(roots, want, "segments rooted at each part of each path");
}

/// `want`, the segments of an oracle (`ips:K`), with those rooted at the subpaths `facts` (of an
/// `ippp:K` run of the same program) names as not counted replaced by the ones it counted there:
/// at each such subpath, the oracle's segments ran exactly as often as those counted and those
/// not counted together, and each counted one ran at most as often as the oracle's of the same
/// steps (at `K = 1` a dropped call leaves every segment rooted there out; deeper, whether a walk
/// reaches a dropped digit depends on the heads it meets). Returns how many of the oracle's
/// segments are missing from the result.
pub fn without_not_counted(
    mut want: HashMap<Vec<IpsStep>, u64>,
    facts: &IpsFacts,
) -> (HashMap<Vec<IpsStep>, u64>, usize) {
    let Some(n) = &facts.not_counted else { return (want, 0) };
    let roots: HashMap<(u32, u64, u32), u64> =
        n.roots.iter().map(|r| ((r.function, r.path.0, r.part), r.count.0)).collect();
    let root_of = |steps: &[IpsStep]| match &steps[0] {
        IpsStep::Sub(root) => Some((root.function, root.path.0, root.part)).filter(|r| roots.contains_key(r)),
        _ => None,
    };
    // The oracle's segments at each such subpath, and what the run counted there.
    let mut oracle: HashMap<Vec<IpsStep>, u64> = HashMap::new();
    want.retain(|steps, count| match root_of(steps) {
        Some(_) => {
            oracle.insert(steps.clone(), *count);
            false
        }
        None => true,
    });
    let mut at_roots: HashMap<(u32, u64, u32), u64> = roots.clone();
    for s in facts.ips.iter().filter(|s| root_of(&s.steps).is_some()) {
        assert!(facts.k > 1, "a segment of one call counted at a dropped call: {:?}", s.steps);
        let ran = oracle.get(&s.steps).copied().unwrap_or(0);
        assert!(s.count.0 <= ran, "{:?} counted {} times, ran {ran}", s.steps, s.count.0);
        *at_roots.get_mut(&root_of(&s.steps).unwrap()).unwrap() += s.count.0;
        want.insert(s.steps.clone(), s.count.0);
    }
    let mut ran: HashMap<(u32, u64, u32), u64> = HashMap::new();
    for (steps, count) in &oracle {
        *ran.entry(root_of(steps).unwrap()).or_default() += count;
    }
    ran.retain(|_, c| *c > 0);
    at_roots.retain(|_, c| *c > 0);
    assert_eq!(ran, at_roots, "the segments at each subpath named ran as often as those counted and not counted");
    assert_eq!(n.executions.0, roots.values().sum::<u64>());
    let mut functions: Vec<u32> = roots.keys().map(|r| r.0).collect();
    functions.sort_unstable();
    functions.dedup();
    assert_eq!(n.functions, functions);
    (want, oracle.keys().filter(|steps| !facts.ips.iter().any(|s| &s.steps == *steps)).count())
}
