//! Dumps: what pathprof's JavaScript host (`js/pathprof-host.mjs`) recorded of a run of an
//! instrumented module under another engine (Node, a browser), and the profile decoded from it with
//! the module's map (`pathprof decode`) — the same profile `pathprof run` writes from the same counts.
//!
//! A dump is, all integers little-endian (docs/profile-format.md, "Dumps"):
//!
//! ```text
//! pathprof-dump 3\n          the format and its version
//! {...}\n                    the header: one line of JSON (DumpHeader)
//! memory                     the profiler's memory at the end, `memory_bytes` bytes
//! host counts                `host_counts` records of 24 + 8·n bytes: u32 function, u32 n, n u64
//!                            high keys (n = 0: the ID has one word), u64 path, u64 count
//! stream                     `stream_items` u64 items, as flush_stream took them
//! ```

use crate::inputs::Interesting;
use crate::modes::ippp::Ippp;
use crate::modes::ips::{Ips, TestedSegments};
use crate::modes::ModeKind;
use crate::modes::{Given, Mode, ModeFlags, Setting};
use crate::profiler::ProfileParts;
use crate::Registry;
use anyhow::{bail, ensure, Context, Result};
use pathprof_core::profile::{InterestingRule, Profile};
use pathprof_runtime::{HostRecord, Recorded, RecordedEnding};
use pathprof_wasm::events::EventSpec;
use pathprof_wasm::map::MapOrigin;
use pathprof_wasm::ProfileMap;
use serde::Deserialize;

/// The first line of a dump, without its version.
pub const DUMP_MAGIC: &str = "pathprof-dump";
/// Version of the dump format.
pub const DUMP_VERSION: u32 = 3;
/// Bytes of a host count record without high keys.
const COUNT_RECORD: usize = 24;

/// The header of a dump: the module it ran, how the run went, and the sizes of what follows.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DumpHeader {
    /// Version of the map the host read.
    pub map_version: u32,
    /// SHA-256 of the instrumented module that ran, in hex.
    pub module_sha256: String,
    /// The engine, as the host names it (`node 22.23.3`, a browser's user agent).
    #[serde(default)]
    pub engine: Option<String>,
    /// The program's arguments, its name first.
    #[serde(default)]
    pub args: Vec<String>,
    pub exit_code: i32,
    /// The trap's message, when the program trapped.
    #[serde(default)]
    pub trap: Option<String>,
    pub wall_seconds: f64,
    #[serde(default)]
    pub bench_region_seconds: Option<f64>,
    /// Functions of the frames still open when the program stopped, innermost first, as the
    /// instrumented module numbers them.
    #[serde(default)]
    pub open_frames: Vec<u32>,
    pub memory_bytes: u64,
    pub host_counts: u64,
    pub stream_items: u64,
}

/// A dump read: its header and the run it recorded.
#[derive(Clone, Debug)]
pub struct Dump {
    pub header: DumpHeader,
    pub recorded: Recorded,
}

impl Dump {
    /// Reads a dump, every size checked against what follows the header.
    pub fn read(bytes: &[u8]) -> Result<Dump> {
        let (magic, rest) = line(bytes).context("not a pathprof dump")?;
        let version =
            magic.strip_prefix(DUMP_MAGIC).and_then(|v| v.strip_prefix(' ')).context("not a pathprof dump")?;
        let version: u32 = version.parse().ok().context("not a pathprof dump")?;
        ensure!(version == DUMP_VERSION, "a dump of version {version}; pathprof reads version {DUMP_VERSION}");
        let (header, body) = line(rest).context("the dump is truncated: its header does not end")?;
        let header: DumpHeader = serde_json::from_str(header).map_err(|e| anyhow::anyhow!("the dump's header: {e}"))?;
        let (memory, counts, stream) = sections(&header, body)?;
        let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let (mut one, mut wide) = (Vec::new(), Vec::new());
        for r in counts {
            let function = u32::from_le_bytes(r[..4].try_into().expect("4 bytes"));
            let n = r.len() / 8 - 3;
            let (path, count) = (u64_at(r, 8 + 8 * n), u64_at(r, 16 + 8 * n));
            match n {
                0 => one.push((function, path, count)),
                _ => wide.push((function, (0..n).map(|w| u64_at(r, 8 + 8 * w)).collect(), path, count)),
            }
        }
        let stream = stream.chunks_exact(8).map(|c| u64_at(c, 0)).collect();
        let ending = RecordedEnding {
            exit_code: header.exit_code,
            trap: header.trap.clone(),
            wall_seconds: header.wall_seconds,
            bench_region_seconds: header.bench_region_seconds,
            frames: header.open_frames.clone(),
        };
        let recorded = Recorded { memory: memory.to_vec(), host: HostRecord { counts: one, wide, stream }, ending };
        Ok(Dump { header, recorded })
    }
}

/// A dump's profiler memory, host count records and stream items.
type Sections<'a> = (&'a [u8], Vec<&'a [u8]>, &'a [u8]);

/// The profiler's memory, the host count records and the stream items of the `body` of a dump
/// with `header`, each size checked against what follows the header.
fn sections<'a>(header: &DumpHeader, body: &'a [u8]) -> Result<Sections<'a>> {
    let got = body.len() as u64;
    let truncated = |expected: Option<u64>| match expected {
        Some(expected) => {
            anyhow::anyhow!("the dump is truncated: {got} bytes follow its header, which announces {expected} or more")
        }
        None => anyhow::anyhow!("the dump's header announces more bytes than a file holds"),
    };
    let memory = usize::try_from(header.memory_bytes).ok().filter(|&m| m <= body.len());
    let memory = memory.ok_or_else(|| truncated(Some(header.memory_bytes)))?;
    let (memory, mut rest) = body.split_at(memory);
    let mut counts = Vec::new();
    for _ in 0..header.host_counts {
        let at = body.len() - rest.len();
        let words = rest.get(4..8).map(|n| u32::from_le_bytes(n.try_into().expect("4 bytes")) as usize);
        let size = words.map(|n| COUNT_RECORD + 8 * n).filter(|&size| size <= rest.len());
        let size = size.ok_or_else(|| truncated((at as u64).checked_add(COUNT_RECORD as u64)))?;
        let (record, after) = rest.split_at(size);
        counts.push(record);
        rest = after;
    }
    let expected = header.stream_items.checked_mul(8).and_then(|s| s.checked_add((body.len() - rest.len()) as u64));
    let expected = expected.ok_or_else(|| truncated(None))?;
    if got < expected {
        return Err(truncated(Some(expected)));
    }
    ensure!(got == expected, "the dump has {} bytes after the {expected} its header announces", got - expected);
    Ok((memory, counts, rest))
}

/// The first line of `bytes` (as text) and what follows it.
fn line(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    Some((std::str::from_utf8(&bytes[..end]).ok()?, &bytes[end + 1..]))
}

/// The profile of the run `dump` recorded of the module `map` describes, its forests (mode `kbl`)
/// bounded by `max_nodes` when given; in a mode that counts segments with interesting ones, those
/// of the `tested` profiles, the ones the module was instrumented with.
pub fn decode(map: &ProfileMap, dump: Dump, max_nodes: Option<usize>, tested: &[(String, Profile)]) -> Result<Profile> {
    let Some(origin) = &map.origin else {
        bail!("the map does not say what its module was instrumented from: write it with `pathprof instrument`")
    };
    let header = &dump.header;
    ensure!(
        header.map_version == map.version,
        "the dump was recorded with a map of version {}, not {}",
        header.map_version,
        map.version
    );
    ensure!(
        header.module_sha256.eq_ignore_ascii_case(&origin.instrumented_sha256),
        "the dump is of another module (sha256 {}) than the one the map describes ({})",
        header.module_sha256,
        origin.instrumented_sha256
    );
    ensure!(
        header.memory_bytes == origin.memory_bytes,
        "the dump holds {} bytes of profiler memory; the module has {}",
        header.memory_bytes,
        origin.memory_bytes
    );
    ensure!(
        map.memory_extent().is_some_and(|e| e <= origin.memory_bytes),
        "the map places counters beyond its module's profiler memory ({} bytes)",
        origin.memory_bytes
    );
    let mode = mode_of(origin, max_nodes)?;
    let run = mode.replay(map, dump.recorded).with_context(|| format!("cannot decode a run of --mode {mode}"))?;
    let given = Given {
        interesting_from: origin.interesting_from.clone(),
        interesting_chosen: origin.interesting_chosen,
        tested_segments: tested_segments(origin, &mode, tested)?.map(std::sync::Arc::new),
        events: (!origin.alloc_functions.is_empty() || !origin.user_events.is_empty()).then(|| EventSpec {
            list: None,
            alloc_fns: origin.alloc_functions.clone(),
            user: origin.user_events.clone(),
        }),
    };
    let parts = ProfileParts {
        mode: &mode,
        map: Some(map),
        given: &given,
        module: origin.module.clone(),
        args: dump.header.args,
        instrumentation_seconds: None,
        random_seed: None,
        deterministic: false,
    };
    // The map's blocks carry their source lines.
    parts.profile(&run, || None)
}

/// The interesting segments of the `tested` profiles, chosen as the map's module's were, for a mode
/// that counts segments; the profiles must be those it was instrumented with.
fn tested_segments(origin: &MapOrigin, mode: &Mode, tested: &[(String, Profile)]) -> Result<Option<TestedSegments>> {
    let segments = [Ips.name(), Ippp.name()].contains(&mode.name());
    match (segments, origin.interesting_from.is_empty(), tested.is_empty()) {
        (_, true, true) => return Ok(None),
        (true, false, true) => bail!(
            "the module was instrumented with the interesting segments of {}: give them with --interesting",
            origin.interesting_from.join(", ")
        ),
        (false, _, false) => bail!("--interesting: the map's module was not instrumented with interesting segments"),
        (true, true, false) => bail!("--interesting: the map's module was instrumented without interesting segments"),
        (false, false, true) => return Ok(None),
        (true, false, false) => {}
    }
    let names: Vec<&str> = tested.iter().map(|(n, _)| n.as_str()).collect();
    ensure!(
        names.len() == origin.interesting_from.len(),
        "--interesting: the module was instrumented with {} profiles ({}), not {}",
        origin.interesting_from.len(),
        origin.interesting_from.join(", "),
        names.len()
    );
    for (name, p) in tested {
        ensure!(p.module.sha256 == origin.module.sha256, "{name} is a profile of another module ({})", p.module.path);
    }
    let rule = origin.interesting_chosen.map_or(InterestingRule::Executed, |(r, _)| r);
    let chosen = Interesting::choose(tested.iter().map(|(_, p)| &p.functions[..]), rule)?;
    TestedSegments::of(tested, rule, &chosen.paths)
}

/// The mode the map's module was instrumented for, with the bound on forests given.
fn mode_of(origin: &MapOrigin, max_nodes: Option<usize>) -> Result<Mode> {
    let mode = Registry::built_in().parse(&origin.mode).context("the map's mode")?;
    let Some(max_nodes) = max_nodes else { return Ok(mode) };
    mode.check(&[Setting::MaxNodes])?;
    mode.with_flags(&ModeFlags { max_nodes: Some(max_nodes), ..ModeFlags::default() })
}
