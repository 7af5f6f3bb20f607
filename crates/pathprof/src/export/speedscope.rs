//! A profile in speedscope's JSON file format (`https://www.speedscope.app/file-format-schema.json`).
//!
//! Two sampled profiles of the same stacks: the operators executed (count × operators on the path,
//! shown first) and the path executions. Every path that ran is one stack of two frames, its
//! function and the path (named as in folded stacks, with the file and line of its first block).
//! Weights are JSON numbers, exact up to 2^53.

use super::path_name;
use crate::view::{function_label, matches, path_cost};
use anyhow::{bail, Result};
use pathprof_core::profile::Profile;
use serde::Serialize;
use std::collections::HashMap;

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    exporter: String,
    name: &'a str,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    shared: Shared,
    profiles: Vec<Sampled>,
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<Frame>,
}

#[derive(Serialize)]
struct Frame {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u64>,
}

#[derive(Serialize)]
struct Sampled {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: f64,
    #[serde(rename = "endValue")]
    end_value: f64,
    samples: Vec<[usize; 2]>,
    weights: Vec<f64>,
}

/// The profile `p` (only `function`'s paths when given) as a speedscope file.
pub fn write(p: &Profile, function: Option<&str>) -> Result<Vec<u8>> {
    let mut frames: Vec<Frame> = Vec::new();
    let mut function_frames: HashMap<u32, usize> = HashMap::new();
    let mut samples = Vec::new();
    let (mut costs, mut counts) = (Vec::new(), Vec::new());
    for f in p.functions.iter().filter(|f| function.is_none_or(|sel| matches(f, sel))) {
        for path in f.paths().iter().filter(|path| path.count.0 > 0) {
            let first_line = path.blocks.iter().find_map(|&b| f.blocks.get(b as usize)?.line.as_deref());
            let (file, line) = first_line.map(crate::source::split_line).unzip();
            let function_frame = *function_frames.entry(f.index).or_insert_with(|| {
                frames.push(Frame { name: function_label(f), file: file.map(str::to_string), line: None });
                frames.len() - 1
            });
            frames.push(Frame { name: path_name(f, path), file: file.map(str::to_string), line: line.flatten() });
            samples.push([function_frame, frames.len() - 1]);
            costs.push(path_cost(f, path) as f64);
            counts.push(path.count.0 as f64);
        }
    }
    if samples.is_empty() {
        bail!("nothing to export: no path ran");
    }
    let sampled = |name: String, weights: Vec<f64>| Sampled {
        kind: "sampled",
        name,
        unit: "none",
        start_value: 0.0,
        end_value: weights.iter().sum(),
        samples: samples.clone(),
        weights,
    };
    let file = File {
        schema: "https://www.speedscope.app/file-format-schema.json",
        exporter: format!("pathprof {}", env!("CARGO_PKG_VERSION")),
        name: &p.module.path,
        active_profile_index: 0,
        shared: Shared { frames },
        profiles: vec![
            sampled(format!("operators executed ({} profile)", p.mode), costs),
            sampled(format!("path executions ({} profile)", p.mode), counts),
        ],
    };
    Ok(serde_json::to_vec(&file)?)
}
