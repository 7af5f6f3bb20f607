use super::{nesting_depth, ReadError, MAX_DEPTH};
use crate::profile::testing::{bl, instrumented, profile};
use crate::profile::*;

#[test]
fn profiles_are_written_a_field_per_line_and_compact_below() {
    let p = bl();
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

#[test]
fn versions_1_to_3_read() {
    let p = bl();
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
    let text = bl().to_json();
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
