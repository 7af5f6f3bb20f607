//! Property tests on random CFGs (reducible or not, with parallel edges, unreachable blocks and dead
//! ends), checked against brute-force enumeration of the DAG's paths.

mod common;

use common::{arb_cfg, arb_cfg_with_exceptions, enumerate_paths, path_sum};
use pathprof_core::dag::DagEdgeKind;
use pathprof_core::estimate;
use pathprof_core::regen::{regenerate, PathPoint};
use pathprof_core::{Cfg, Dag, FunctionPlan, LoopCut, Numbering, Placement, PlanOptions, Succ};
use proptest::prelude::*;

/// Largest number of paths enumerated by brute force; bigger DAGs skip the brute-force checks.
const CAP: usize = 3000;

fn arb_mode() -> impl Strategy<Value = LoopCut> {
    prop_oneof![Just(LoopCut::BackEdges), Just(LoopCut::Headers)]
}

/// Small numbers (many ties) to derive weights and priorities from, cycled over the edges.
fn arb_weights() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(0u8..6, 1..40)
}

fn cycle(w: &[u8], len: usize) -> Vec<f64> {
    (0..len).map(|i| w[i % w.len()] as f64).collect()
}

/// (a)–(c): dense, unique IDs; chord increments sum to the ID; regeneration inverts the numbering.
/// Returns `Err` on a failed check, `Ok(false)` when the DAG was too big to enumerate.
fn check_numbering(dag: &Dag, numbering: &Numbering, placement: &Placement) -> Result<bool, TestCaseError> {
    let n = numbering.total(dag);
    let Some(paths) = enumerate_paths(dag, CAP) else {
        prop_assert!(n > 1000, "enumeration gave up with only {n} paths numbered");
        return Ok(false);
    };
    prop_assert_eq!(paths.len() as u64, n, "number of s→t paths");
    let mut ids: Vec<u64> = paths.iter().map(|p| path_sum(&numbering.val, p)).collect();
    ids.sort_unstable();
    prop_assert!(ids.iter().copied().eq(0..n), "IDs are not exactly 0..{}: {:?}", n, ids);
    for p in &paths {
        let id = path_sum(&numbering.val, p);
        prop_assert_eq!(path_sum(&placement.inc, p), id, "Σ Inc along {:?}", p);
        let r = regenerate(dag, numbering, id).unwrap();
        prop_assert_eq!(&r.edges, p, "regenerate({})", id);
        let blocks: Vec<u32> = p[1..].iter().map(|&e| dag.edges[e as usize].from).collect();
        prop_assert_eq!(&r.blocks, &blocks);
        let start = match dag.edges[p[0] as usize].kind {
            DagEdgeKind::Start(b) => PathPoint::Block(b),
            DagEdgeKind::Real(_) => PathPoint::Boundary,
            k => panic!("path starts with {k:?}"),
        };
        let end = match dag.edges[*p.last().unwrap() as usize].kind {
            DagEdgeKind::End(_, b) => PathPoint::Block(b),
            DagEdgeKind::Real(_) => PathPoint::Boundary,
            DagEdgeKind::Throw(_) => PathPoint::Throw,
            k => panic!("path ends with {k:?}"),
        };
        prop_assert_eq!((r.start, r.end), (start, end));
    }
    prop_assert!(regenerate(dag, numbering, n).is_err());
    Ok(true)
}

/// (d): the spanning tree. Tree edges carry no increment; together with the virtual `t→s` edge they
/// form a tree over every node touched by an edge (plus `s` and `t`), so there are `touched − 2` DAG
/// tree edges; and it is a *maximum* spanning tree: on the tree path between the ends of any chord, no
/// edge is lighter than the chord.
fn check_tree(dag: &Dag, placement: &Placement, weight: &[f64]) -> Result<(), TestCaseError> {
    let nn = dag.num_nodes() as usize;
    let mut touched = vec![false; nn];
    touched[dag.entry() as usize] = true;
    touched[dag.exit() as usize] = true;
    for e in &dag.edges {
        touched[e.from as usize] = true;
        touched[e.to as usize] = true;
    }
    let touched = touched.iter().filter(|&&x| x).count();
    let tree: Vec<usize> = (0..dag.edges.len()).filter(|&i| placement.in_tree[i]).collect();
    prop_assert_eq!(tree.len() + 2, touched, "tree edges + t→s = touched nodes − 1");
    // Tree adjacency, t–s included with infinite weight; no cycles (checked while building).
    let mut comp: Vec<usize> = (0..nn).collect();
    fn find(c: &mut [usize], mut x: usize) -> usize {
        while c[x] != x {
            x = c[x];
        }
        x
    }
    let mut adj: Vec<Vec<(usize, f64)>> = vec![Vec::new(); nn];
    let (s, t) = (dag.entry() as usize, dag.exit() as usize);
    adj[s].push((t, f64::INFINITY));
    adj[t].push((s, f64::INFINITY));
    comp[s] = t;
    for &i in &tree {
        prop_assert_eq!(placement.inc[i], 0, "tree edge {} has an increment", i);
        let e = dag.edges[i];
        let (a, b) = (find(&mut comp, e.from as usize), find(&mut comp, e.to as usize));
        prop_assert_ne!(a, b, "tree edges close a cycle");
        comp[a] = b;
        adj[e.from as usize].push((e.to as usize, weight[i]));
        adj[e.to as usize].push((e.from as usize, weight[i]));
    }
    for (i, e) in dag.edges.iter().enumerate() {
        if placement.in_tree[i] {
            continue;
        }
        // Lightest edge on the tree path from e.from to e.to (depth-first search in the tree).
        let mut stack = vec![(e.from as usize, usize::MAX, f64::INFINITY)];
        let mut lightest = None;
        while let Some((v, parent, min)) = stack.pop() {
            if v == e.to as usize {
                lightest = Some(min);
                break;
            }
            for &(w, wt) in &adj[v] {
                if w != parent {
                    stack.push((w, v, min.min(wt)));
                }
            }
        }
        let lightest = lightest.expect("chord ends are connected in the tree");
        prop_assert!(
            lightest >= weight[i],
            "chord {} (weight {}) is heavier than a tree edge on its cycle",
            i,
            weight[i]
        );
    }
    Ok(())
}

/// Structural checks of the DAG against the CFG.
fn check_dag(cfg: &Cfg, dag: &Dag, mode: LoopCut, extra: &[bool]) -> Result<(), TestCaseError> {
    let reachable = cfg.reachable();
    let headers = cfg.loop_headers();
    let (s, t) = (dag.entry(), dag.exit());
    prop_assert_eq!(dag.edges[0].from, s);
    prop_assert_eq!(dag.edges[0].to, cfg.entry());
    let back = cfg.back_edges();
    // Blocks where every incoming edge ends a path: extra cuts, landings and (PEP mode) loop headers,
    // except the entry block. Elsewhere only back edges end paths.
    let ends_all = |w: u32| {
        w != cfg.entry()
            && (extra.get(w as usize).copied().unwrap_or(false)
                || cfg.landings().contains(&w)
                || (mode == LoopCut::Headers && headers[w as usize]))
    };
    // Every CFG edge from a reachable block appears exactly once, as Real or End.
    for (c, ce) in cfg.edges().iter().enumerate() {
        let reps: Vec<_> = dag
            .edges
            .iter()
            .filter(|d| {
                matches!(d.kind, DagEdgeKind::Real(x) | DagEdgeKind::End(x, _) | DagEdgeKind::Throw(x) if x as usize == c)
            })
            .collect();
        if !reachable[ce.from as usize] {
            prop_assert!(reps.is_empty());
            continue;
        }
        prop_assert_eq!(reps.len(), 1);
        let d = reps[0];
        prop_assert_eq!(d.from, ce.from);
        match (d.kind, ce.to) {
            (DagEdgeKind::Real(_), Succ::Exit) | (DagEdgeKind::Throw(_), Succ::Throw) => prop_assert_eq!(d.to, t),
            (DagEdgeKind::Real(_), Succ::Block(w)) => {
                prop_assert_eq!(d.to, w);
                prop_assert!(!ends_all(w) && !back.contains(&(c as u32)), "CFG edge {} should end a path", c);
            }
            (DagEdgeKind::End(_, b), Succ::Block(w)) => {
                prop_assert_eq!((d.to, b), (t, w));
                prop_assert!(dag.cut[w as usize]);
                prop_assert!(ends_all(w) || back.contains(&(c as u32)), "CFG edge {} should not end a path", c);
            }
            (k, to) => prop_assert!(false, "{:?} for a CFG edge to {:?}", k, to),
        }
    }
    // Start(b) exactly for the cut blocks, which are the reachable extra cuts, headers (by mode) and
    // targets of back edges.
    for b in 0..cfg.num_blocks() {
        let starts = dag.edges.iter().filter(|d| d.kind == DagEdgeKind::Start(b)).count();
        prop_assert_eq!(starts, usize::from(dag.cut[b as usize]), "Start({})", b);
        let is_target = back.iter().any(|&e| cfg.edges()[e as usize].to == Succ::Block(b));
        let landing = cfg.landings().contains(&b);
        let expected = reachable[b as usize] && (is_target || ends_all(b) || landing);
        prop_assert_eq!(dag.cut[b as usize], expected, "cut[{}]", b);
    }
    prop_assert!(dag.edges.iter().all(|d| d.from != t && d.to != s));
    // Acyclic: every edge goes forward in the topological order.
    let order = dag.topological_order();
    let mut pos = vec![usize::MAX; dag.num_nodes() as usize];
    for (i, &v) in order.iter().enumerate() {
        prop_assert_eq!(pos[v as usize], usize::MAX, "node {} twice in the order", v);
        pos[v as usize] = i;
    }
    for d in &dag.edges {
        prop_assert!(pos[d.from as usize] < pos[d.to as usize], "edge {:?} goes backwards", d);
    }
    Ok(())
}

fn max_out_degree(dag: &Dag) -> u64 {
    dag.out_edges().iter().map(|o| o.len() as u64).max().unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// (a)–(d) with plain Ball–Larus numbering, for both loop-cut modes and random extra cuts; weights
    /// for the spanning tree from the static estimate and random.
    #[test]
    fn ball_larus_numbering(cfg in arb_cfg(), mode in arb_mode(), extra in prop::collection::vec(prop::bool::weighted(0.2), 0..10), w in arb_weights()) {
        let dag = Dag::build(&cfg, mode, &extra);
        check_dag(&cfg, &dag, mode, &extra)?;
        let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
        let est = estimate::dag_edge_frequencies(&cfg, &dag, &estimate::cfg_edge_frequencies(&cfg));
        let random = cycle(&w, dag.edges.len());
        for weight in [est, random] {
            let placement = Placement::compute(&dag, &numbering, &weight);
            check_tree(&dag, &placement, &weight)?;
            check_numbering(&dag, &numbering, &placement)?;
        }
        // Plain order: `order` lists every node's out-edges in edge order.
        prop_assert_eq!(&numbering.order, dag.out_edges());
    }

    /// (a)–(d) with exceptions: throw edges end paths with no increment (they are in the spanning
    /// tree whatever their weight), landings are cut, and the blocks reached only from a landing are
    /// in the DAG.
    #[test]
    fn exceptions(cfg in arb_cfg_with_exceptions(), mode in arb_mode(), w in arb_weights()) {
        let dag = Dag::build(&cfg, mode, &[]);
        check_dag(&cfg, &dag, mode, &[])?;
        let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
        let est = estimate::dag_edge_frequencies(&cfg, &dag, &estimate::cfg_edge_frequencies(&cfg));
        let throws: Vec<bool> = dag.edges.iter().map(|e| matches!(e.kind, DagEdgeKind::Throw(_))).collect();
        for weight in [est, cycle(&w, dag.edges.len())] {
            let placement = Placement::compute(&dag, &numbering, &weight);
            for (e, &throw) in throws.iter().enumerate() {
                prop_assert!(!throw || (placement.in_tree[e] && placement.inc[e] == 0), "throw edge {} has code", e);
            }
            // A maximum spanning tree once the throw edges weigh more than any other.
            let forced: Vec<f64> = weight.iter().zip(&throws).map(|(&x, &t)| if t { f64::INFINITY } else { x }).collect();
            check_tree(&dag, &placement, &forced)?;
            check_numbering(&dag, &numbering, &placement)?;
        }
        for &b in cfg.landings() {
            prop_assert!(dag.cut[b as usize], "landing {} is not cut", b);
        }
    }

    /// (e) smart numbering with random priorities (many ties).
    #[test]
    fn smart_numbering(cfg in arb_cfg(), mode in arb_mode(), p in arb_weights(), w in arb_weights()) {
        let dag = Dag::build(&cfg, mode, &[]);
        let priority = cycle(&p, dag.edges.len());
        let numbering = Numbering::with_priority(&dag, &priority, u64::MAX).unwrap();
        let weight = cycle(&w, dag.edges.len());
        let placement = Placement::compute(&dag, &numbering, &weight);
        check_tree(&dag, &placement, &weight)?;
        check_numbering(&dag, &numbering, &placement)?;
        let plain = Numbering::ball_larus(&dag, u64::MAX).unwrap();
        prop_assert_eq!(&numbering.num_paths, &plain.num_paths, "the order does not change path counts");
        for (v, out) in dag.out_edges().iter().enumerate() {
            // The first edge of highest priority (ties in edge order) gets Val 0.
            let Some(&top) = out.iter().fold(None, |best: Option<&u32>, e| match best {
                Some(b) if priority[*b as usize] >= priority[*e as usize] => Some(b),
                _ => Some(e),
            }) else { continue };
            prop_assert_eq!(numbering.val[top as usize], 0, "node {}: top edge {}", v, top);
            prop_assert_eq!(numbering.order[v][0], top);
            let mut sorted = out.to_vec();
            sorted.sort_by(|&a, &b| priority[b as usize].total_cmp(&priority[a as usize]).then(a.cmp(&b)));
            prop_assert_eq!(&numbering.order[v], &sorted);
            // Val ascends along the numbering order.
            prop_assert!(numbering.order[v].windows(2).all(|x| numbering.val[x[0] as usize] <= numbering.val[x[1] as usize]));
        }
    }

    /// (f) selective cutting under a small path limit.
    #[test]
    fn plan_with_small_limit(cfg in arb_cfg(), mode in arb_mode(), smart in any::<bool>(), limit in 6u64..40, measured in prop::option::of(arb_weights())) {
        let probe = Dag::build(&cfg, mode, &[]);
        let max_paths = limit.max(max_out_degree(&probe) + 1);
        let cfg_edge_frequencies = measured.map(|w| cycle(&w, cfg.edges().len()));
        let options = PlanOptions { loop_cut: mode, max_paths, cfg_edge_frequencies: cfg_edge_frequencies.clone(), smart, cuts: Default::default() };
        let unlimited = FunctionPlan::build(&cfg, &PlanOptions { max_paths: u64::MAX, ..options.clone() }).unwrap();
        prop_assert!(unlimited.overflow_cuts.is_empty());
        prop_assert_eq!(unlimited.num_paths(), Numbering::ball_larus(&probe, u64::MAX).unwrap().total(&probe));
        let plan = match FunctionPlan::build(&cfg, &options) {
            Ok(plan) => plan,
            Err(e) => {
                // With the limit above every out-degree, no block can stay over it: only the sum over
                // all path starts (the virtual entry) may be beyond reach.
                prop_assert_eq!(e.0, probe.entry(), "{}", e);
                return Ok(());
            }
        };
        prop_assert!(plan.num_paths() <= max_paths);
        if unlimited.num_paths() <= max_paths {
            prop_assert!(plan.overflow_cuts.is_empty());
        }
        // The plan's DAG is the DAG with its overflow cuts.
        let mut extra = vec![false; cfg.num_blocks() as usize];
        for &b in &plan.overflow_cuts {
            extra[b as usize] = true;
        }
        prop_assert_eq!(&plan.dag, &Dag::build(&cfg, mode, &extra));
        check_dag(&cfg, &plan.dag, mode, &extra)?;
        prop_assert!(plan.overflow_cuts.windows(2).all(|w| w[0] < w[1]));
        for &b in &plan.overflow_cuts {
            prop_assert_ne!(b, cfg.entry());
            // A real edge led into b before it was cut, and none does after.
            let real_into = |dag: &Dag| dag.edges.iter().any(|e| e.to == b && matches!(e.kind, DagEdgeKind::Real(_)));
            prop_assert!(real_into(&probe), "overflow cut {} was already cut", b);
            prop_assert!(!real_into(&plan.dag), "overflow cut {} still has a real in-edge", b);
            prop_assert_eq!(plan.dag.edges.iter().filter(|e| e.kind == DagEdgeKind::Start(b)).count(), 1, "Start({})", b);
        }
        let freq = estimate::dag_edge_frequencies(&cfg, &plan.dag, &cfg_edge_frequencies.unwrap_or_else(|| estimate::cfg_edge_frequencies(&cfg)));
        check_tree(&plan.dag, &plan.placement, &freq)?;
        let enumerated = check_numbering(&plan.dag, &plan.numbering, &plan.placement)?;
        prop_assert!(enumerated, "a DAG within the limit is small enough to enumerate");
        if smart {
            for out in plan.numbering.order.iter().filter(|o| !o.is_empty()) {
                let top = out.iter().map(|&e| freq[e as usize]).fold(f64::NEG_INFINITY, f64::max);
                prop_assert_eq!(freq[out[0] as usize], top);
                prop_assert_eq!(plan.numbering.val[out[0] as usize], 0);
            }
        }
    }
}

/// Numbering counts in u128 and reports overflow instead of wrapping; the plan cuts such functions.
#[test]
fn chain_of_diamonds_beyond_64_bits() {
    // 70 two-way diamonds in a row: 2^70 paths.
    let k = 70;
    let mut cfg = Cfg::new(3 * k + 1, 0);
    for i in 0..k {
        let (top, l, r, bottom) = (3 * i, 3 * i + 1, 3 * i + 2, 3 * i + 3);
        cfg.add_edge(top, Succ::Block(l));
        cfg.add_edge(top, Succ::Block(r));
        cfg.add_edge(l, Succ::Block(bottom));
        cfg.add_edge(r, Succ::Block(bottom));
    }
    cfg.add_edge(3 * k, Succ::Exit);
    let dag = Dag::build(&cfg, LoopCut::Headers, &[]);
    let err = Numbering::ball_larus(&dag, u64::MAX).unwrap_err();
    assert_eq!(err.limit, u64::MAX);
    // Cut at the top of the 11th diamond: 2^10 paths end there and 2^60 start there, which fits.
    let mut extra = vec![false; cfg.num_blocks() as usize];
    extra[30] = true;
    let dag = Dag::build(&cfg, LoopCut::Headers, &extra);
    assert_eq!(Numbering::ball_larus(&dag, u64::MAX).unwrap().total(&dag), (1 << 10) + (1 << 60));

    for max_paths in [u64::MAX, 1 << 32, 1000] {
        let plan = FunctionPlan::build(&cfg, &PlanOptions { max_paths, ..PlanOptions::default() }).unwrap();
        let n = plan.num_paths();
        assert!(n <= max_paths && n > 0);
        if max_paths == u64::MAX {
            // One cut at the middle merge (block 105) suffices: 2^35 paths on each side.
            assert_eq!((plan.overflow_cuts.clone(), n), (vec![105], 1 << 36));
        }
        assert!(!plan.overflow_cuts.is_empty());
        // Walk a few paths (always the first out-edge, always the last, alternating) and check them
        // against regeneration.
        let (dag, num, inc) = (&plan.dag, &plan.numbering, &plan.placement.inc);
        let out = dag.out_edges();
        for pick in 0..3usize {
            let mut v = dag.entry();
            let mut path = Vec::new();
            while v != dag.exit() {
                let choices = &out[v as usize];
                let i = match pick {
                    0 => 0,
                    1 => choices.len() - 1,
                    _ => path.len() % choices.len(),
                };
                path.push(choices[i]);
                v = dag.edges[choices[i] as usize].to;
            }
            let id = path_sum(&num.val, &path);
            assert!(id < n);
            assert_eq!(path_sum(inc, &path), id);
            assert_eq!(regenerate(dag, num, id).unwrap().edges, path);
        }
        assert_eq!(
            regenerate(&plan.dag, &plan.numbering, n - 1).unwrap().edges.last().map(|&e| plan.dag.edges[e as usize].to),
            Some(plan.dag.exit())
        );
    }
}
