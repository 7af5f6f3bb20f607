//! A profile's records: the fields of the top level as written and as read.

use super::{FORMAT, VERSION};
use crate::profile::mode_fields::{in_order, ModeFieldsIn, ModeFieldsOut};
use crate::profile::{
    EventCounts, FunctionProfile, KblInfo, ModuleInfo, PppInfo, Profile, SamplingInfo, SnapshotInfo, U64,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The fields of a profile, as written.
#[derive(Serialize)]
struct ProfileOut<'a> {
    format: &'static str,
    version: u32,
    module: &'a ModuleInfo,
    mode: &'a str,
    args: &'a [String],
    wall_seconds: f64,
    bench_region_seconds: Option<f64>,
    instrumentation_seconds: Option<f64>,
    exit_code: i32,
    trap: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    random_seed: Option<U64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    deterministic: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot: Option<&'a SnapshotInfo>,
    open_activations_at_exit: u64,
    runs: u64,
    path_executions: U64,
    #[serde(flatten)]
    mode_fields: ModeFieldsOut<'a>,
    functions: &'a [FunctionProfile],
}

impl Serialize for Profile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (mode, mode_fields) = self.mode.fields();
        ProfileOut {
            format: FORMAT,
            version: VERSION,
            module: &self.module,
            mode,
            args: &self.args,
            wall_seconds: self.wall_seconds,
            bench_region_seconds: self.bench_region_seconds,
            instrumentation_seconds: self.instrumentation_seconds,
            exit_code: self.exit_code,
            trap: self.trap.as_deref(),
            stopped: self.stopped.as_deref(),
            random_seed: self.random_seed.map(U64),
            deterministic: self.deterministic,
            run_id: self.run_id.as_deref(),
            snapshot: self.snapshot.as_ref(),
            open_activations_at_exit: self.open_activations_at_exit,
            runs: self.runs,
            path_executions: self.path_executions,
            mode_fields,
            functions: &self.functions,
        }
        .serialize(s)
    }
}

/// Profiles written before `runs` are of one run.
fn one_run() -> u64 {
    1
}

/// The fields of a profile, as read (`format` and `version` are checked before).
#[derive(Deserialize)]
struct ProfileIn {
    module: ModuleInfo,
    mode: String,
    args: Vec<String>,
    wall_seconds: f64,
    bench_region_seconds: Option<f64>,
    instrumentation_seconds: Option<f64>,
    exit_code: i32,
    trap: Option<String>,
    #[serde(default)]
    stopped: Option<String>,
    #[serde(default)]
    random_seed: Option<U64>,
    #[serde(default)]
    deterministic: bool,
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default)]
    snapshot: Option<SnapshotInfo>,
    open_activations_at_exit: u64,
    #[serde(default = "one_run")]
    runs: u64,
    path_executions: U64,
    #[serde(default)]
    sampling: Option<SamplingInfo>,
    #[serde(default)]
    kbl: Option<KblInfo>,
    #[serde(default)]
    ppp: Option<PppInfo>,
    #[serde(default)]
    event_counting: Option<crate::profile::mode_fields::EventCounting>,
    #[serde(default)]
    events: Option<EventCounts>,
    #[serde(default)]
    mode_facts: Option<serde_json::Value>,
    functions: Vec<FunctionProfile>,
}

impl<'de> Deserialize<'de> for Profile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let p = ProfileIn::deserialize(d)?;
        let fields = ModeFieldsIn {
            sampling: p.sampling,
            kbl: p.kbl,
            ppp: p.ppp,
            event_counting: p.event_counting,
            events: p.events,
            mode_facts: p.mode_facts,
        };
        let mode = fields.into_mode(&p.mode).map_err(serde::de::Error::custom)?;
        let mut functions = p.functions;
        for f in &mut functions {
            let Some(profile) = f.profiled_mut() else { continue };
            let foreign = match (&profile.kipf, &profile.ppp) {
                (Some(_), _) if mode.kbl().is_none() => Some("a k-iteration path forest"),
                (_, Some(_)) if mode.ppp().is_none() => Some("preferential paths"),
                _ => None,
            };
            if let Some(what) = foreign {
                return Err(serde::de::Error::custom(format!("function {} has {what} in a {mode} profile", f.index)));
            }
            let Some(counts) = profile.events.take() else { continue };
            let Some(e) = mode.events() else {
                return Err(serde::de::Error::custom(format!("function {} has events in a {mode} profile", f.index)));
            };
            profile.events = Some(in_order(&e.names, counts).map_err(serde::de::Error::custom)?);
        }
        let executions = functions.iter().flat_map(|f| f.paths()).try_fold(0u64, |sum, p| sum.checked_add(p.count.0));
        if executions != Some(p.path_executions.0) {
            return Err(serde::de::Error::custom(format!(
                "`path_executions` is {}, but the paths' counts add up to {}",
                p.path_executions,
                executions.map_or_else(|| "more than 2^64 - 1".to_string(), |n| n.to_string())
            )));
        }
        if mode.kbl().is_some_and(|k| k.k == 0) {
            return Err(serde::de::Error::custom("a kbl profile of k = 0"));
        }
        Ok(Profile {
            module: p.module,
            mode,
            args: p.args,
            wall_seconds: p.wall_seconds,
            bench_region_seconds: p.bench_region_seconds,
            instrumentation_seconds: p.instrumentation_seconds,
            exit_code: p.exit_code,
            trap: p.trap,
            stopped: p.stopped,
            random_seed: p.random_seed.map(|s| s.0),
            deterministic: p.deterministic,
            run_id: p.run_id,
            snapshot: p.snapshot,
            open_activations_at_exit: p.open_activations_at_exit,
            runs: p.runs,
            path_executions: p.path_executions,
            functions,
        })
    }
}
