//! The analyses of one function, on all cores: its body validated while its CFG is built, its paths
//! planned (numbering, increments, cuts) as the sink and the options ask, and what the sink needs
//! besides: loop and run counters, preferential numbering, events, branches.

use super::loops::{self, LoopPlan};
use super::options::InstrumentOptions;
use crate::branches::{function_branches, FuncBranches};
use crate::cfg::{self, FuncCfg};
use crate::events::{EventSet, FunctionEvents};
use crate::module::validator;
use crate::throws::Throws;
use pathprof_core::dag::LoopCut;
use pathprof_core::estimate;
use pathprof_core::ppp::PppPlan;
use pathprof_core::profile::Endpoint;
use pathprof_core::regen;
use pathprof_core::{FunctionPlan, PlanOptions, Succ};
use wasmparser::{BinaryReaderError, FuncToValidate, FunctionBody, ValidatorResources};

/// A function's plan, its loop and run counters should it count in an array, its preferential
/// plan when its sink counts interesting paths apart, its events when some are counted, and its
/// branches when its sink traces them.
pub(crate) struct Planned {
    pub plan: FunctionPlan,
    pub loops: Option<LoopPlan>,
    pub ppp: Option<PppPlan>,
    pub events: Option<FunctionEvents>,
    pub branches: Option<FuncBranches>,
}

/// A function's CFG and plan; the reason it is not instrumented, when it is not.
pub(crate) type Analysis = Result<(FuncCfg, Result<Planned, String>), String>;

/// Validates a function body while it builds its CFG (`Err` when the body is invalid), then plans its
/// probes.
pub(crate) fn analyse(
    (func, body): &(FuncToValidate<ValidatorResources>, FunctionBody<'_>),
    index: u32,
    options: &InstrumentOptions,
    throws: &Throws,
) -> Result<Analysis, BinaryReaderError> {
    let fcfg = match cfg::build(body, &mut validator(func), throws)? {
        Ok(fcfg) => fcfg,
        Err(unsupported) => return Ok(Err(unsupported.0)),
    };
    if let Some(only) = options.only.as_ref().filter(|o| !o.functions.contains(&index)) {
        return Ok(Ok((fcfg, Err(only.reason.clone()))));
    }
    let sink = options.sink;
    if let Some(reason) = sink.refuses(&fcfg) {
        return Ok(Ok((fcfg, Err(reason))));
    }
    let mut opts = options.plan.clone();
    // The probes end a path at the start of every header and cut block, whatever edge led there: only
    // right when every edge into a header ends a path.
    opts.loop_cut = LoopCut::Headers;
    if let Some(most) = sink.max_paths() {
        opts.max_paths = opts.max_paths.min(most);
    }
    if let Some(paths) = options.edge_profile.get(&index) {
        let paths = paths.iter().map(|p| {
            let end = match p.end {
                Endpoint::Block(b) => Succ::Block(b),
                Endpoint::Throw => Succ::Throw,
                Endpoint::Entry | Endpoint::Exit => Succ::Exit,
            };
            (p.blocks.as_slice(), end, p.count.0)
        });
        opts.cfg_edge_frequencies = Some(estimate::cfg_edge_frequencies_from_paths(&fcfg.cfg, paths));
    }
    // A limit below 2^64 is a budget: a function that no cut brings within it (its start points
    // alone exceed it) is planned without it.
    let built = FunctionPlan::build(&fcfg.cfg, &opts).or_else(|e| {
        if opts.max_paths < u64::MAX {
            FunctionPlan::build(&fcfg.cfg, &PlanOptions { max_paths: u64::MAX, ..opts.clone() })
        } else {
            Err(e)
        }
    });
    let planned = built.map_err(|e| e.to_string()).and_then(|plan| {
        let interesting = options.interesting.get(&index).map_or(&[][..], Vec::as_slice);
        let ppp = sink.preferential_plan(&plan, interesting, options.array_max_paths)?;
        let events = match &options.events {
            Some(set) => Some(plan_events(set, body, &fcfg, &plan, options).map_err(|e| e.to_string())?),
            None => None,
        };
        // Loop and run counters take slots next to the function's counter array, if it gets one.
        let array = sink.counts_in_array(&plan, ppp.as_ref()) && plan.num_paths() <= options.array_max_paths;
        // A handler's landing counts the path that threw at its start, which an edge-counted header
        // does not do: functions that catch count without loop and run counters.
        let loops =
            (options.loop_counters && array && fcfg.cfg.landings().is_empty()).then(|| loops::plan_loops(&fcfg, &plan));
        let branches = match sink.traces_branches() {
            true => Some(function_branches(body, &fcfg).map_err(|e| e.to_string())?),
            false => None,
        };
        Ok(Planned { plan, loops, ppp, events, branches })
    });
    Ok(Ok((fcfg, planned)))
}

/// The events of a function body under `set`, and its table of path vectors when its sink decodes
/// paths into events and its paths are few enough for a table.
fn plan_events(
    set: &EventSet,
    body: &FunctionBody,
    fcfg: &FuncCfg,
    plan: &FunctionPlan,
    options: &InstrumentOptions,
) -> Result<FunctionEvents, BinaryReaderError> {
    let body = set.body_events(body, fcfg)?;
    let mask = body.mask();
    let n = plan.num_paths();
    let rows = (options.sink.decodes_paths() && n <= options.array_max_paths).then(|| {
        let width = set.len();
        let mut rows = Vec::with_capacity(n as usize * mask.count_ones() as usize);
        for id in 0..n {
            let path = regen::regenerate(&plan.dag, &plan.numbering, id).expect("every ID below the count is a path");
            let v = pathprof_core::events::path_vector(&path.blocks, &body.blocks, width);
            rows.extend(crate::events::columns(&v, mask));
        }
        rows
    });
    Ok(FunctionEvents { body, mask, rows })
}
