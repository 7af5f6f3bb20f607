use super::{nesting_depth, ReadError, MAX_DEPTH};
use crate::profile::*;

#[test]
fn profiles_are_written_a_field_per_line_and_compact_below() {
    let p = profile(ProfileMode::Bl, vec![instrumented(2, CounterKind::Array)]);
    let text = p.to_json();
    let compact = serde_json::to_string(&p).unwrap();
    let layered: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(layered, serde_json::from_str::<serde_json::Value>(&compact).unwrap());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "{");
    assert!(lines.contains(&"  \"version\": 4,"), "{text}");
    assert!(lines.contains(&"  \"functions\": ["), "{text}");
    assert!(lines.contains(&"    {"), "{text}");
    // A function's blocks, paths and edges take a line each.
    for field in ["blocks", "paths", "edges"] {
        let line = lines.iter().find(|l| l.starts_with(&format!("      \"{field}\": ["))).unwrap();
        assert!(line.ends_with("],") || line.ends_with(']'), "{line}");
    }
    assert!(text.ends_with("}\n"));
    assert!(text.len() < compact.len() + 40 * lines.len(), "as small as compact JSON but for the indents");
}

#[test]
fn nesting_depth_skips_strings() {
    assert_eq!(nesting_depth(r#"{"a": [1, {"b": "]]}}[[\"["}]}"#), 3);
    assert_eq!(nesting_depth("[]"), 1);
    let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert!(matches!(Profile::from_json(&deep), Err(ReadError::TooDeep)));
}

fn profile(mode: ProfileMode, functions: Vec<FunctionProfile>) -> Profile {
    Profile {
        module: ModuleInfo {
            path: "m.wasm".into(),
            sha256: "00".into(),
            size: 8,
            code_section_size: 0,
            core_module: None,
        },
        mode,
        args: vec!["m.wasm".into()],
        wall_seconds: 0.5,
        bench_region_seconds: None,
        instrumentation_seconds: Some(0.1),
        exit_code: 0,
        trap: None,
        open_activations_at_exit: 0,
        runs: 1,
        path_executions: U64(3),
        functions,
    }
}

fn instrumented(index: u32, counters: CounterKind) -> FunctionProfile {
    FunctionProfile {
        index,
        name: Some("f".into()),
        blocks: vec![BlockInfo {
            id: 0,
            offset: 10,
            end: 12,
            line: None,
            loop_header: false,
            landing: false,
            ops: 3,
            events: vec![],
        }],
        state: FunctionState::Instrumented(PathProfile {
            num_paths: U64(1),
            counters,
            cut_blocks: vec![],
            paths: vec![PathCount {
                id: U64(0),
                count: U64(3),
                start: Endpoint::Entry,
                end: Endpoint::Exit,
                blocks: vec![0],
                branches: 0,
                interesting: None,
            }],
            edges: vec![EdgeCount { from: 0, to: Endpoint::Exit, count: U64(3) }],
            increments: 0,
            increments_executed: U64(0),
            kipf: None,
            ppp: None,
            events: None,
        }),
    }
}

fn skipped(index: u32) -> FunctionProfile {
    FunctionProfile {
        index,
        name: None,
        blocks: vec![],
        state: FunctionState::Skipped { reason: "uses exception handling".into() },
    }
}

#[test]
fn every_mode_and_function_state_reads_back() {
    let sampling = SamplingInfo {
        samples: 64,
        stride: 17,
        every: None,
        tick_ms: 0.25,
        ticks: 9,
        samples_taken: 3,
        function_copies: true,
    };
    let kbl = KblInfo {
        k: 4,
        stream_items: U64(5),
        ksf_nodes: U64(2),
        ksf_node_bytes: 16,
        sibling_scans: U64(1),
        max_nodes: None,
        dropped: U64(0),
        stream_handovers: U64(3),
        stream_wait_seconds: 0.5,
    };
    for (mode, counters) in [
        (ProfileMode::Bl, CounterKind::Array),
        (ProfileMode::Bl, CounterKind::Hash),
        (ProfileMode::Pep(sampling), CounterKind::Sampled),
        (ProfileMode::Kbl(kbl), CounterKind::Stream),
    ] {
        let p = profile(mode, vec![skipped(1), instrumented(2, counters)]);
        let text = p.to_json();
        assert_eq!(Profile::from_json(&text).unwrap(), p, "{text}");
    }
    let none = profile(ProfileMode::None, vec![]);
    assert_eq!(Profile::from_json(&none.to_json()).unwrap(), none);
    let info = PppInfo {
        interesting_from: vec!["test.json".into()],
        interesting: U64(1),
        residual_paths: U64(1),
        residual_executions: U64(4),
    };
    let mut f = instrumented(2, CounterKind::Ppp);
    if let FunctionState::Instrumented(p) = &mut f.state {
        p.paths[0].interesting = Some(false);
        p.ppp = Some(Box::new(PppFunction {
            interesting: 1,
            range: 1,
            delta: Some(1.0),
            residual_paths: 1,
            residual_executions: U64(3),
            untested_edges: 1,
            untested: vec![EdgeKey { from: 0, to: Endpoint::Exit }],
        }));
    }
    let ppp = profile(ProfileMode::Ppp(info), vec![f]);
    assert_eq!(Profile::from_json(&ppp.to_json()).unwrap(), ppp);
    let events = profile(ProfileMode::Events(events_info()), vec![skipped(1), with_events(2)]);
    let text = events.to_json();
    assert_eq!(Profile::from_json(&text).unwrap(), events, "{text}");
    // Event counts are objects in the order of the events.
    assert!(text.contains("\"events\": {\n    \"load\": 5,\n    \"alloc\": 1\n  }"), "{text}");
}

fn events_info() -> EventsInfo {
    let names = vec!["load".to_string(), "alloc".to_string()];
    EventsInfo {
        strategy: EventStrategy::Pd,
        cut: PathCut::Merges,
        totals: EventCounts::new(&names, &[5, 1]),
        undercount_bound: Some(EventCounts::new(&names, &[2, 0])),
        overcount_bound: None,
        names,
        alloc_functions: vec!["malloc".into()],
        user_events: vec![("adds".into(), vec!["i32.add".into()])],
    }
}

fn with_events(index: u32) -> FunctionProfile {
    let mut f = instrumented(index, CounterKind::Events);
    f.blocks[0].events = vec![5, 1];
    if let FunctionState::Instrumented(p) = &mut f.state {
        p.paths.clear();
        p.edges.clear();
        p.events = Some(EventCounts::new(&["load".into(), "alloc".into()], &[5, 1]));
    }
    f
}

#[test]
fn events_profiles_name_their_events_in_order() {
    let text = profile(ProfileMode::Events(events_info()), vec![with_events(2)]).to_json();
    let edit = |from: &str, to: &str| {
        assert!(text.contains(from), "{from} in {text}");
        Profile::from_json(&text.replacen(from, to, 1)).unwrap_err().to_string()
    };
    // Totals that lack an event, or name one the profile does not count.
    assert!(edit("\"load\": 5,\n    \"alloc\"", "\"lode\": 5,\n    \"alloc\"").contains("not a pathprof"));
    assert!(edit("\"alloc\": 1\n  }", "\"alloc\": 1, \"x\": 2\n  }").contains("not a pathprof"));
    // Read in any order, they come back in the order of the events.
    let swapped = text.replacen("\"load\": 5,\n    \"alloc\": 1", "\"alloc\": 1,\n    \"load\": 5", 1);
    assert_ne!(swapped, text);
    assert_eq!(Profile::from_json(&swapped).unwrap().to_json(), text);
    // An events profile without its facts, or another mode with them.
    assert!(edit("\"mode\": \"events\"", "\"mode\": \"bl\"").contains("not a pathprof"));
    assert!(edit("\"event_counting\"", "\"event_countin\"").contains("not a pathprof"));
}

#[test]
fn versions_1_to_3_read() {
    let p = profile(ProfileMode::Bl, vec![instrumented(2, CounterKind::Array)]);
    for old in [1, 2, 3] {
        let text = p.to_json().replacen("\"version\": 4", &format!("\"version\": {old}"), 1);
        assert!(text.contains(&format!("\"version\": {old}")));
        assert_eq!(Profile::from_json(&text).unwrap(), p);
    }
    let v5 = p.to_json().replacen("\"version\": 4", "\"version\": 5", 1);
    assert!(matches!(Profile::from_json(&v5), Err(ReadError::Version(5))));
}

#[test]
fn contradictory_profiles_are_refused() {
    let text = profile(ProfileMode::Bl, vec![instrumented(2, CounterKind::Array)]).to_json();
    let edit = |from: &str, to: &str| {
        assert!(text.contains(from), "{from} in {text}");
        Profile::from_json(&text.replacen(from, to, 1)).unwrap_err().to_string()
    };
    assert!(edit("\"mode\": \"bl\"", "\"mode\": \"pep\"").contains("not a pathprof profile"));
    assert!(edit("\"mode\": \"bl\"", "\"mode\": \"fast\"").contains("not a pathprof profile"));
    assert!(edit("\"instrumented\": true", "\"instrumented\": false").contains("not a pathprof profile"));
    assert!(edit("\"counters\": \"array\"", "\"counters\": null").contains("not a pathprof profile"));
    assert!(edit("\"counters\": \"array\"", "\"counters\": \"tally\"").contains("not a pathprof profile"));
    // The counter kinds are spelt as documented.
    for kind in CounterKind::ALL {
        let json = serde_json::to_string(&kind).unwrap();
        assert_eq!(json, format!("\"{}\"", kind.name()));
        assert!(include_str!("../../../../../docs/profile-format.md").contains(&format!("`{json}`")), "{json}");
    }
}

#[test]
fn extension_modes_read_back_with_their_facts() {
    let facts = serde_json::json!({"entries": 7, "note": "counted"});
    let mode = ProfileMode::Extension(Extension { name: "entries".into(), facts });
    let p = profile(mode, vec![instrumented(2, CounterKind::Array)]);
    let text = p.to_json();
    assert!(text.contains("\"mode\": \"entries\""), "{text}");
    assert!(text.contains("\"mode_facts\": {"), "{text}");
    assert_eq!(Profile::from_json(&text).unwrap(), p);
    // A built-in mode's name is never an extension's, and an unknown mode needs its facts.
    let as_bl = text.replacen("\"mode\": \"entries\"", "\"mode\": \"bl\"", 1);
    assert!(Profile::from_json(&as_bl).unwrap_err().to_string().contains("not a pathprof profile"));
    let without = profile(ProfileMode::Bl, vec![]).to_json().replacen("\"mode\": \"bl\"", "\"mode\": \"entries\"", 1);
    assert!(Profile::from_json(&without).is_err());
}
