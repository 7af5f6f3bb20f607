//! Profiles for the tests of the profile's JSON form: one of each mode, with a function in each
//! state.

use super::*;

/// A profile of `functions`, whose `path_executions` is the sum of their paths' counts.
pub(crate) fn profile(mode: ProfileMode, functions: Vec<FunctionProfile>) -> Profile {
    let path_executions = U64(functions.iter().flat_map(|f| f.paths()).map(|p| p.count.0).sum());
    Profile {
        module: ModuleInfo {
            path: "m.wasm".into(),
            sha256: "00".into(),
            size: 8,
            code_section_size: 0,
            core_module: None,
            core_module_within: Vec::new(),
        },
        mode,
        args: vec!["m.wasm".into()],
        wall_seconds: 0.5,
        bench_region_seconds: None,
        instrumentation_seconds: Some(0.1),
        exit_code: 0,
        trap: None,
        stopped: None,
        random_seed: None,
        deterministic: false,
        run_id: None,
        snapshot: None,
        open_activations_at_exit: 0,
        runs: 1,
        path_executions,
        functions,
    }
}

pub(crate) fn instrumented(index: u32, counters: CounterKind) -> FunctionProfile {
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
            calls: 0,
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

pub(crate) fn skipped(index: u32) -> FunctionProfile {
    FunctionProfile {
        index,
        name: None,
        blocks: vec![],
        state: FunctionState::Skipped { reason: "uses exception handling".into() },
    }
}

pub(crate) fn events_info() -> EventsInfo {
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

pub(crate) fn with_events(index: u32) -> FunctionProfile {
    let mut f = instrumented(index, CounterKind::Events);
    f.blocks[0].events = vec![5, 1];
    if let FunctionState::Instrumented(p) = &mut f.state {
        p.paths.clear();
        p.edges.clear();
        p.events = Some(EventCounts::new(&["load".into(), "alloc".into()], &[5, 1]));
    }
    f
}

/// A `bl` profile of one function counted in an array.
pub(crate) fn bl() -> Profile {
    profile(ProfileMode::Bl, vec![instrumented(2, CounterKind::Array)])
}
