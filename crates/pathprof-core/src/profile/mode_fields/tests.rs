use super::super::testing::{events_info, instrumented, profile, skipped, with_events};
use crate::profile::*;

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
        fold_threads: 2,
        bursts: None,
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
        chosen_by: InterestingRule::Coverage { share: 0.5 },
        chosen_share: Some(0.75),
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
