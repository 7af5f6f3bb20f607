//! `pathprof decode` on dumps written here byte by byte, as docs/profile-format.md ("Dumps")
//! describes them: the counters a dump's memory holds become the profile's paths, and a dump of
//! another module, a truncated one, one of another version or with bytes to spare, or a map that
//! cannot be decoded, each get a one-line error and leave no profile behind.

mod common;

use common::{fails_cleanly, pathprof};
use pathprof_core::profile::Profile;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// `$f` has two paths (then, else); `_start` calls it three times with 1 and once with 0.
const TWO_PATHS: &str = r#"
(module
  (func $f (param $x i32) (result i32)
    (if (result i32) (local.get $x) (then (i32.const 7)) (else (i32.const 9))))
  (func (export "_start")
    (drop (call $f (i32.const 1))) (drop (call $f (i32.const 1)))
    (drop (call $f (i32.const 1))) (drop (call $f (i32.const 0)))))
"#;

struct Instrumented {
    dir: tempfile::TempDir,
    map: PathBuf,
    map_json: Value,
}

impl Instrumented {
    fn new(wat: &str, mode: &str) -> Instrumented {
        Instrumented::with(wat, mode, None)
    }

    /// `wat` instrumented for `mode`, with the interesting segments of its run in `ips` mode
    /// `interesting` when given (`ips.json` beside it).
    fn with(wat: &str, mode: &str, interesting: Option<&str>) -> Instrumented {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("m.wasm");
        std::fs::write(&wasm, wat::parse_str(wat).unwrap()).unwrap();
        let out = dir.path().join("m.inst.wasm");
        let mut instrument = pathprof();
        instrument.args(["instrument", "--mode", mode, "-o"]).arg(&out).arg(&wasm);
        if let Some(ips) = interesting {
            let test = dir.path().join("ips.json");
            let mut run = pathprof();
            run.args(["run", "--quiet", "--mode", ips, "-o"]).arg(&test).arg(&wasm);
            assert!(run.status().unwrap().success());
            instrument.arg("--interesting").arg(&test);
        }
        assert!(instrument.status().unwrap().success());
        let map = dir.path().join("m.inst.wasm.map.json");
        let map_json = serde_json::from_str(&std::fs::read_to_string(&map).unwrap()).unwrap();
        Instrumented { dir, map, map_json }
    }

    fn origin(&self, key: &str) -> &Value {
        &self.map_json["origin"][key]
    }

    /// A dump of a run whose profiler memory is `memory`, with `header`'s fields over the right ones.
    fn dump(&self, memory: &[u8], header: Value) -> Vec<u8> {
        let mut h = json!({
            "map_version": self.map_json["version"],
            "module_sha256": self.origin("instrumented_sha256"),
            "engine": "a test",
            "args": ["m.wasm"],
            "exit_code": 0,
            "trap": null,
            "wall_seconds": 0.5,
            "bench_region_seconds": null,
            "open_frames": [],
            "memory_bytes": memory.len(),
            "host_counts": 0,
            "stream_items": 0,
        });
        for (k, v) in header.as_object().unwrap() {
            h[k] = v.clone();
        }
        let mut out = format!("pathprof-dump 3\n{h}\n").into_bytes();
        out.extend_from_slice(memory);
        out
    }

    /// [`Instrumented::dump`] with `counts` passed to the host and `stream` flushed by it.
    fn dump_with(&self, memory: &[u8], counts: &[(u32, &[u64], u64, u64)], stream: &[u64]) -> Vec<u8> {
        let sizes = json!({"host_counts": counts.len(), "stream_items": stream.len()});
        let mut out = self.dump(memory, sizes);
        for &(function, high, path, n) in counts {
            out.extend(function.to_le_bytes().iter().chain(&(high.len() as u32).to_le_bytes()));
            out.extend(high.iter().chain([path, n].iter()).flat_map(|k| k.to_le_bytes()));
        }
        out.extend(stream.iter().flat_map(|i| i.to_le_bytes()));
        out
    }

    /// Writes `bytes` as a dump in the map's folder.
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

fn decode_fails(map: &Path, dump: &Path, expect: &str) {
    let out = tempfile::tempdir().unwrap();
    let args = ["decode", map.to_str().unwrap(), dump.to_str().unwrap(), "-o", "p.json"];
    fails_cleanly(out.path(), &args, expect);
}

#[test]
fn a_dump_decodes_to_the_counts_its_memory_holds() {
    let m = Instrumented::new(TWO_PATHS, "bl");
    // The profile `pathprof run` writes, its counts written into the arrays of a dump's memory.
    let ran = m.dir.path().join("ran.json");
    let mut run = pathprof();
    run.args(["run", "--quiet", "--mode", "bl", "-o"]).arg(&ran).arg(m.dir.path().join("m.wasm"));
    assert!(run.status().unwrap().success());
    let ran = Profile::from_json(&std::fs::read_to_string(&ran).unwrap()).unwrap();
    let mut memory = vec![0u8; m.origin("memory_bytes").as_u64().unwrap() as usize];
    for f in m.map_json["functions"].as_array().unwrap() {
        let counters = &f["state"]["counters"];
        assert_eq!(counters["kind"], "array", "{f}");
        let offset = counters["offset"].as_u64().unwrap() as usize;
        let profiled = ran.functions.iter().find(|p| p.index == f["index"].as_u64().unwrap() as u32).unwrap();
        for path in profiled.paths() {
            let at = offset + 8 * path.id.0 as usize;
            memory[at..at + 8].copy_from_slice(&path.count.0.to_le_bytes());
        }
    }
    let dump = m.write("run.dump", &m.dump(&memory, json!({"exit_code": 0, "wall_seconds": 1.25})));
    let out = m.dir.path().join("p.json");
    let status = pathprof().arg("decode").arg(&m.map).arg(&dump).arg("-o").arg(&out).status().unwrap();
    assert!(status.success());
    let p = Profile::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!((p.path_executions.0, p.wall_seconds), (5, 1.25));
    assert_eq!(p.args, ["m.wasm"]);
    assert_eq!(p.module.sha256, ran.module.sha256);
    assert_eq!(p.functions, ran.functions);
    let f = p.functions.iter().find(|f| f.index == 0).unwrap();
    let mut counts: Vec<u64> = f.paths().iter().map(|x| x.count.0).collect();
    counts.sort();
    assert_eq!(counts, [1, 3]);
}

#[test]
fn bad_dumps_are_refused_in_one_line() {
    let m = Instrumented::new(TWO_PATHS, "bl");
    let memory = vec![0u8; m.origin("memory_bytes").as_u64().unwrap() as usize];
    let good = m.dump(&memory, json!({}));

    let other = m.write("other.dump", &m.dump(&memory, json!({"module_sha256": "00".repeat(32)})));
    decode_fails(&m.map, &other, "the dump is of another module");
    let truncated = m.write("truncated.dump", &good[..good.len() - 1]);
    decode_fails(&m.map, &truncated, "the dump is truncated");
    let headless = m.write("headless.dump", &good[..20]);
    decode_fails(&m.map, &headless, "the dump is truncated: its header does not end");
    let mut longer = good.clone();
    longer.push(0);
    let longer = m.write("longer.dump", &longer);
    decode_fails(&m.map, &longer, "1 bytes after the");
    let mut version = good.clone();
    version["pathprof-dump ".len()] = b'1';
    let version = m.write("version.dump", &version);
    decode_fails(&m.map, &version, "a dump of version 1; pathprof reads version 3");
    let map_version = m.write("map-version.dump", &m.dump(&memory, json!({"map_version": 6})));
    decode_fails(&m.map, &map_version, "recorded with a map of version 6");
    let small = m.write("small.dump", &m.dump(&memory[..memory.len() - 8], json!({})));
    decode_fails(&m.map, &small, "bytes of profiler memory");
    let not_a_dump = m.write("not.dump", b"\0asm\x01\0\0\0");
    decode_fails(&m.map, &not_a_dump, "not a pathprof dump");
    let header = m.write("header.dump", b"pathprof-dump 3\n{\"map_version\": 8}\n");
    decode_fails(&m.map, &header, "the dump's header");
    // A host count record that announces more high keys than follow it.
    let mut short = m.dump_with(&memory, &[(0, &[7], 1, 1)], &[]);
    let at = short.len() - 28;
    short[at..at + 4].copy_from_slice(&1000u32.to_le_bytes());
    let short = m.write("short.dump", &short);
    decode_fails(&m.map, &short, "the dump is truncated");

    // A map of another version, and a map `pathprof run` would keep to itself (no origin).
    let good = m.write("good.dump", &good);
    let mut old = m.map_json.clone();
    old["version"] = json!(6);
    let old_map = m.write("old.map.json", old.to_string().as_bytes());
    decode_fails(&old_map, &good, "a pathprof map of version 6");
    let mut bare = m.map_json.clone();
    bare.as_object_mut().unwrap().remove("origin");
    let bare_map = m.write("bare.map.json", bare.to_string().as_bytes());
    decode_fails(&bare_map, &good, "the map does not say what its module was instrumented from");
}

/// A module instrumented with interesting segments decodes with the same profiles, which mark the
/// residual ones; without them, or with them for a module that counts no segments, it does not.
#[test]
fn interesting_segments_are_given_to_decode_as_to_instrument() {
    let m = Instrumented::with(TWO_PATHS, "ippp:slots", Some("ips:1"));
    let memory = vec![0u8; m.origin("memory_bytes").as_u64().unwrap() as usize];
    let dump = m.write("run.dump", &m.dump(&memory, json!({})));
    decode_fails(&m.map, &dump, "was instrumented with the interesting segments of");
    let test = m.dir.path().join("ips.json");
    let out = m.dir.path().join("p.json");
    let mut decode = pathprof();
    decode.arg("decode").arg(&m.map).arg(&dump).arg("--interesting").arg(&test).arg("-o").arg(&out);
    assert!(decode.status().unwrap().success());
    let p = Profile::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let facts = pathprof::modes::ips::facts(&p.mode).unwrap();
    assert_eq!(facts.residual.map(|r| r.interesting.0), Some(4), "the run's four segments");
    let b = Instrumented::new(TWO_PATHS, "bl");
    let memory = vec![0u8; b.origin("memory_bytes").as_u64().unwrap() as usize];
    let dump = b.write("run.dump", &b.dump(&memory, json!({})));
    let args = ["decode", b.map.to_str().unwrap(), dump.to_str().unwrap(), "--interesting", test.to_str().unwrap()];
    let out = tempfile::tempdir().unwrap();
    fails_cleanly(
        out.path(),
        &[&args[..], &["-o", "p.json"]].concat(),
        "was not instrumented with interesting segments",
    );
}

#[test]
fn timer_sampling_cannot_be_decoded() {
    let m = Instrumented::new(TWO_PATHS, "pep");
    let memory = vec![0u8; m.origin("memory_bytes").as_u64().unwrap() as usize];
    let dump = m.write("pep.dump", &m.dump(&memory, json!({})));
    decode_fails(&m.map, &dump, "a run recorded elsewhere samples every N path ends");
}

#[test]
fn records_no_run_writes_are_refused_in_one_line() {
    let m = Instrumented::new(TWO_PATHS, "bl");
    let memory = vec![0u8; m.origin("memory_bytes").as_u64().unwrap() as usize];
    // $f has paths 0 and 1 only.
    let bad_path = m.write("bad-path.dump", &m.dump_with(&memory, &[(0, &[], 99, 1)], &[]));
    decode_fails(&m.map, &bad_path, "corrupt counters");
    // A high key for a function whose IDs have one word.
    let wide = m.write("wide.dump", &m.dump_with(&memory, &[(0, &[7], 1, 1)], &[]));
    decode_fails(&m.map, &wide, "an ID of 2 words for function 0, whose IDs have 1");
    let stream = m.write("stream.dump", &m.dump_with(&memory, &[], &[1 << 62]));
    decode_fails(&m.map, &stream, "the host recorded a stream");
    // A map whose counters lie past its memory.
    let mut far = m.map_json.clone();
    far["functions"][0]["state"]["counters"]["offset"] = json!(u32::MAX - 8);
    let far_map = m.write("far.map.json", far.to_string().as_bytes());
    let good = m.write("good.dump", &m.dump(&memory, json!({})));
    decode_fails(&far_map, &good, "the map places counters beyond its module's profiler memory");

    // Streams: an entry (1 << 62) repeated (3 << 62 | n) — which no module writes, and which would
    // fold for ever —, more exits in a row than a stack holds, more path ends than 2^63.
    let k = Instrumented::new(TWO_PATHS, "kbl");
    let memory = vec![0u8; k.origin("memory_bytes").as_u64().unwrap() as usize];
    let repeat = |n: u64| 3 << 62 | n;
    let cases: [(&[u64], &str); 4] = [
        (&[1 << 62, repeat(1 << 40)], "repeats an item that no module repeats"),
        (&[repeat(5)], "repeats an item that no module repeats"),
        (&[1 << 62, 2 << 62, repeat(1 << 40)], "more activations in a row than a stack holds"),
        (&[1 << 62, 0, repeat((1 << 62) - 1), repeat((1 << 62) - 1), repeat((1 << 62) - 1)], "longer than any run"),
    ];
    for (i, (items, expect)) in cases.into_iter().enumerate() {
        let dump = k.write(&format!("stream{i}.dump"), &k.dump_with(&memory, &[], items));
        decode_fails(&k.map, &dump, expect);
    }
}
