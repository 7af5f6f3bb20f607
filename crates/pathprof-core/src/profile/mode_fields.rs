//! The JSON fields that carry a profile's mode and what it measured (docs/profile-format.md):
//! `mode`, and `sampling` (`pep`), `kbl`, `ppp`, `event_counting` and `events` (`events`), or
//! `mode_facts` for a mode defined outside pathprof. A profile whose fields contradict its mode is
//! refused.

use super::{
    EventCounts, EventStrategy, EventsInfo, Extension, KblInfo, PathCut, PppInfo, ProfileMode, SamplingInfo, U64,
};
use serde::{Deserialize, Serialize};

/// The fields of a profile's mode, as written (`sampling` always, null but in `pep` profiles).
#[derive(Serialize)]
pub(super) struct ModeFieldsOut<'a> {
    pub sampling: Option<&'a SamplingInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kbl: Option<&'a KblInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ppp: Option<&'a PppInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_counting: Option<EventCounting>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<&'a EventCounts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode_facts: Option<&'a serde_json::Value>,
}

/// The fields of a profile's mode, as read.
pub(super) struct ModeFieldsIn {
    pub sampling: Option<SamplingInfo>,
    pub kbl: Option<KblInfo>,
    pub ppp: Option<PppInfo>,
    pub event_counting: Option<EventCounting>,
    pub events: Option<EventCounts>,
    pub mode_facts: Option<serde_json::Value>,
}

impl ProfileMode {
    /// The mode's name and its fields, as written.
    pub(super) fn fields(&self) -> (&str, ModeFieldsOut<'_>) {
        let mut out = ModeFieldsOut {
            sampling: None,
            kbl: None,
            ppp: None,
            event_counting: None,
            events: None,
            mode_facts: None,
        };
        match self {
            ProfileMode::None | ProfileMode::Bl => {}
            ProfileMode::Pep(s) => out.sampling = Some(s),
            ProfileMode::Kbl(k) => out.kbl = Some(k),
            ProfileMode::Ppp(p) => out.ppp = Some(p),
            ProfileMode::Events(e) => {
                out.event_counting = Some(EventCounting::of(e));
                out.events = Some(&e.totals);
            }
            ProfileMode::Extension(x) => out.mode_facts = Some(&x.facts),
        }
        (self.name(), out)
    }
}

impl ModeFieldsIn {
    /// The mode named `name` with these fields, or why they do not describe one.
    pub(super) fn into_mode(self, name: &str) -> Result<ProfileMode, String> {
        let events = match (self.event_counting, self.events) {
            (Some(counting), Some(totals)) => Some(counting.into_info(totals)?),
            (None, None) => None,
            _ => return Err("an events profile needs both `event_counting` and `events`".to_string()),
        };
        Ok(match (name, self.sampling, self.kbl, self.ppp, events, self.mode_facts) {
            ("none", None, None, None, None, None) => ProfileMode::None,
            ("bl", None, None, None, None, None) => ProfileMode::Bl,
            ("pep", Some(s), None, None, None, None) => ProfileMode::Pep(s),
            ("kbl", None, Some(k), None, None, None) => ProfileMode::Kbl(k),
            ("ppp", None, None, Some(i), None, None) => ProfileMode::Ppp(i),
            ("events", None, None, None, Some(e), None) => ProfileMode::Events(e),
            ("pep", None, ..) => return Err("a pep profile needs its `sampling` object".to_string()),
            ("kbl", _, None, ..) => return Err("a kbl profile needs its `kbl` object".to_string()),
            ("ppp", _, _, None, ..) => return Err("a ppp profile needs its `ppp` object".to_string()),
            ("events", _, _, _, None, _) => {
                return Err("an events profile needs its `event_counting` and `events`".to_string())
            }
            (m, ..) if ProfileMode::BUILT_IN.contains(&m) => {
                return Err(format!(
                    "a {m} profile has another mode's `sampling`, `kbl`, `ppp`, `event_counting` or `mode_facts`"
                ))
            }
            (m, None, None, None, None, Some(facts)) => {
                ProfileMode::Extension(Extension { name: m.to_string(), facts })
            }
            (other, ..) => return Err(format!("unknown mode {other:?}")),
        })
    }
}

/// Event counts, which JSON leaves unordered, in the order of the events `names`: each named once.
pub(super) fn in_order(names: &[String], counts: EventCounts) -> Result<EventCounts, String> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let value = counts.get(name).ok_or_else(|| format!("event counts lack event {name:?}"))?;
        out.push((name.clone(), U64(value)));
    }
    if counts.0.len() != out.len() {
        return Err("event counts name events the profile does not count".to_string());
    }
    Ok(EventCounts(out))
}

/// How the events of an `events` profile were counted: the `event_counting` object.
#[derive(Serialize, Deserialize)]
pub(super) struct EventCounting {
    strategy: EventStrategy,
    cut: PathCut,
    names: Vec<String>,
    alloc_functions: Vec<String>,
    user_events: Vec<UserEvent>,
    undercount_bound: Option<EventCounts>,
    overcount_bound: Option<EventCounts>,
}

#[derive(Serialize, Deserialize)]
struct UserEvent {
    name: String,
    operators: Vec<String>,
}

impl EventCounting {
    fn of(e: &EventsInfo) -> EventCounting {
        EventCounting {
            strategy: e.strategy,
            cut: e.cut,
            names: e.names.clone(),
            alloc_functions: e.alloc_functions.clone(),
            user_events: e
                .user_events
                .iter()
                .map(|(name, ops)| UserEvent { name: name.clone(), operators: ops.clone() })
                .collect(),
            undercount_bound: e.undercount_bound.clone(),
            overcount_bound: e.overcount_bound.clone(),
        }
    }

    /// The mode's facts, with its totals, every set of counts in the order of the events.
    fn into_info(mut self, totals: EventCounts) -> Result<EventsInfo, String> {
        let totals = in_order(&self.names, totals)?;
        self.undercount_bound = self.undercount_bound.take().map(|c| in_order(&self.names, c)).transpose()?;
        self.overcount_bound = self.overcount_bound.take().map(|c| in_order(&self.names, c)).transpose()?;
        Ok(EventsInfo {
            strategy: self.strategy,
            cut: self.cut,
            names: self.names,
            alloc_functions: self.alloc_functions,
            user_events: self.user_events.into_iter().map(|u| (u.name, u.operators)).collect(),
            totals,
            undercount_bound: self.undercount_bound,
            overcount_bound: self.overcount_bound,
        })
    }
}

#[cfg(test)]
mod tests;
