//! The papers' worked examples, with the values stated in [PPP07 Figs. 3.4–3.6],
//! [EVT23 Fig. 19] and [KBL13 Fig. 3, §2].
//!
//! The thesis' `s` is modelled either as the CFG entry block (the DAG then adds its own virtual entry
//! whose only real out-edge, to the entry block, gets `Val = 0`) or directly as the DAG's virtual entry;
//! the thesis' `t` is the DAG's virtual exit, reached by `Succ::Exit` edges.

mod common;

use common::{enumerate_paths, fig_3_6, path_sum, priorities, simulate_trace, Named};
use pathprof_core::dag::DagEdgeKind;
use pathprof_core::estimate;
use pathprof_core::numbering::Overflow;
use pathprof_core::plan::TooManyPaths;
use pathprof_core::regen::{regenerate, BadPathId, PathPoint};
use pathprof_core::{Dag, FunctionPlan, LoopCut, Numbering, Placement, PlanOptions};

/// Increments with the static frequency estimate as spanning-tree weights.
fn placement(g: &Named, dag: &Dag, numbering: &Numbering) -> Placement {
    let freq = estimate::dag_edge_frequencies(&g.cfg, dag, &estimate::cfg_edge_frequencies(&g.cfg));
    Placement::compute(dag, numbering, &freq)
}

/// Checks an acyclic entry-to-exit path: its ID by `Val`, by `Inc`, and by regeneration.
fn check_path(g: &Named, dag: &Dag, numbering: &Numbering, inc: &Placement, blocks: &[&str], id: u64) {
    let path = g.entry_to_exit_path(dag, blocks);
    assert_eq!(path_sum(&numbering.val, &path), id, "Val sum of {blocks:?}");
    assert_eq!(path_sum(&inc.inc, &path), id, "Inc sum of {blocks:?}");
    let p = regenerate(dag, numbering, id).unwrap();
    assert_eq!(p.edges, path, "edges of path {id}");
    assert_eq!(p.blocks, g.blocks(blocks), "blocks of path {id}");
    assert_eq!((p.start, p.end), (PathPoint::Boundary, PathPoint::Boundary));
}

/// Every DAG edge not listed has `Val = 0`.
fn assert_vals(dag: &Dag, numbering: &Numbering, nonzero: &[(u32, u64)]) {
    for e in 0..dag.edges.len() as u32 {
        let want = nonzero.iter().find(|&&(x, _)| x == e).map_or(0, |&(_, v)| v);
        assert_eq!(numbering.val[e as usize], want, "Val of DAG edge {e} ({:?})", dag.edges[e as usize]);
    }
}

const FIG_3_4_PATHS: [(&[&str], u64); 6] = [
    (&["s", "a", "c", "d"], 0),
    (&["s", "a", "c"], 1),
    (&["s", "a", "b", "c", "d"], 2),
    (&["s", "a", "b", "c"], 3),
    (&["s", "b", "c", "d"], 4),
    (&["s", "b", "c"], 5),
];

/// [PPP07 Fig. 3.4], out-edge order s:[a,b], a:[c,b], c:[d,t] given by priorities.
#[test]
fn fig_3_4_ball_larus_with_priorities() {
    let g = common::fig_3_4();
    let dag = Dag::build(&g.cfg, LoopCut::BackEdges, &[]);
    assert_eq!(dag.edges.len(), 9, "virtual entry edge plus the 8 edges");
    let order = vec![
        vec![g.dag_edge(&dag, "s", "a"), g.dag_edge(&dag, "s", "b")],
        vec![g.dag_edge(&dag, "a", "c"), g.dag_edge(&dag, "a", "b")],
        vec![g.dag_edge(&dag, "c", "d"), g.dag_edge(&dag, "c", "t")],
    ];
    let numbering = Numbering::with_priority(&dag, &priorities(&dag, &order), u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 6);
    assert_vals(
        &dag,
        &numbering,
        &[(g.dag_edge(&dag, "s", "b"), 4), (g.dag_edge(&dag, "a", "b"), 2), (g.dag_edge(&dag, "c", "t"), 1)],
    );
    let inc = placement(&g, &dag, &numbering);
    for (blocks, id) in FIG_3_4_PATHS {
        check_path(&g, &dag, &numbering, &inc, blocks, id);
    }
    assert_eq!(regenerate(&dag, &numbering, 6), Err(BadPathId(6)));
}

/// The same figure with the edges added in the stated order and plain Ball–Larus numbering.
#[test]
fn fig_3_4_ball_larus_in_edge_order() {
    let edges = [("s", "a"), ("s", "b"), ("a", "c"), ("a", "b"), ("b", "c"), ("c", "d"), ("c", "t"), ("d", "t")];
    let g = Named::new("s", &edges);
    let dag = Dag::build(&g.cfg, LoopCut::Headers, &[]);
    let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 6);
    assert_vals(
        &dag,
        &numbering,
        &[(g.dag_edge(&dag, "s", "b"), 4), (g.dag_edge(&dag, "a", "b"), 2), (g.dag_edge(&dag, "c", "t"), 1)],
    );
    let inc = placement(&g, &dag, &numbering);
    for (blocks, id) in FIG_3_4_PATHS {
        check_path(&g, &dag, &numbering, &inc, blocks, id);
    }
}

/// [PPP07 Fig. 3.5], order s:[a,b], c:[d,e].
#[test]
fn fig_3_5_ball_larus() {
    let g = common::fig_3_5();
    let dag = Dag::build(&g.cfg, LoopCut::BackEdges, &[]);
    let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 4);
    assert_vals(&dag, &numbering, &[(g.dag_edge(&dag, "s", "b"), 2), (g.dag_edge(&dag, "c", "e"), 1)]);
    let inc = placement(&g, &dag, &numbering);
    for (blocks, id) in
        [(&["s", "a", "c", "d"], 0), (&["s", "a", "c", "e"], 1), (&["s", "b", "c", "d"], 2), (&["s", "b", "c", "e"], 3)]
    {
        check_path(&g, &dag, &numbering, &inc, blocks, id);
    }
}

/// [PPP07 Fig. 3.6], order s:[a,b,c], d:[e,f,g].
#[test]
fn fig_3_6_ball_larus() {
    let g = fig_3_6();
    let dag = Dag::build(&g.cfg, LoopCut::BackEdges, &[]);
    let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 9);
    assert_vals(
        &dag,
        &numbering,
        &[
            (g.dag_edge(&dag, "s", "b"), 3),
            (g.dag_edge(&dag, "s", "c"), 6),
            (g.dag_edge(&dag, "d", "f"), 1),
            (g.dag_edge(&dag, "d", "g"), 2),
        ],
    );
    // Implied by the stated weights: ID = 3·index(first branch) + index(second branch).
    let inc = placement(&g, &dag, &numbering);
    for (i, x) in ["a", "b", "c"].into_iter().enumerate() {
        for (j, y) in ["e", "f", "g"].into_iter().enumerate() {
            check_path(&g, &dag, &numbering, &inc, &["s", x, "d", y], 3 * i as u64 + j as u64);
        }
    }
}

fn loop_edges() -> Vec<(&'static str, &'static str)> {
    vec![("s", "A"), ("A", "B"), ("A", "C"), ("B", "D"), ("C", "D"), ("D", "A"), ("D", "t")]
}

/// [PPP07 §3.2], with `s` as the CFG entry block: the dummy `s→A` leaves the DAG's virtual
/// entry. Order [real, dummy] at s and at D, A:[B, C].
#[test]
fn thesis_loop_back_edge_truncation() {
    let g = Named::new("s", &loop_edges());
    let dag = Dag::build(&g.cfg, LoopCut::BackEdges, &[]);
    let back = g.dag_edge(&dag, "D", "A");
    assert_eq!(dag.edges[back as usize].kind, DagEdgeKind::End(g.cfg_edge("D", "A"), g.block("A")));
    assert_eq!(dag.edges[back as usize].to, dag.exit());
    let start = g.start(&dag, "A");
    assert_eq!(dag.edges[start as usize].from, dag.entry());
    // Virtual entry: [→s, dummy s→A] is already the edge order; D: [real D→t, dummy D→t].
    let order = vec![vec![g.dag_edge(&dag, "D", "t"), back]];
    let numbering = Numbering::with_priority(&dag, &priorities(&dag, &order), u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 8);
    assert_vals(&dag, &numbering, &[(start, 4), (g.dag_edge(&dag, "A", "C"), 2), (back, 1)]);
    assert_eq!(numbering.val[g.dag_edge(&dag, "s", "A") as usize], 0, "real s→A");

    let inc = placement(&g, &dag, &numbering);
    let trace = g.blocks(&["s", "A", "B", "D", "A", "C", "D", "A", "C", "D"]);
    assert_eq!(simulate_trace(&g.cfg, &dag, &inc.inc, &trace), vec![1, 7, 6]);
    // The same with the Val weights themselves as increments.
    assert_eq!(simulate_trace(&g.cfg, &dag, &numbering.val, &trace), vec![1, 7, 6]);

    let p = regenerate(&dag, &numbering, 1).unwrap();
    assert_eq!(p.blocks, g.blocks(&["s", "A", "B", "D"]));
    assert_eq!((p.start, p.end), (PathPoint::Boundary, PathPoint::Block(g.block("A"))));
    let p = regenerate(&dag, &numbering, 7).unwrap();
    assert_eq!(p.blocks, g.blocks(&["A", "C", "D"]));
    assert_eq!((p.start, p.end), (PathPoint::Block(g.block("A")), PathPoint::Block(g.block("A"))));
    let p = regenerate(&dag, &numbering, 6).unwrap();
    assert_eq!(p.blocks, g.blocks(&["A", "C", "D"]));
    assert_eq!((p.start, p.end), (PathPoint::Block(g.block("A")), PathPoint::Boundary));
}

/// The same loop with the thesis' `s` as the DAG's virtual entry and A as the CFG entry block: the back
/// edge D→A leads into the entry block, which both loop-cut modes truncate the classic way.
#[test]
fn thesis_loop_with_header_as_entry_block() {
    let g = Named::new("A", &loop_edges()[1..]);
    let dag = Dag::build(&g.cfg, LoopCut::BackEdges, &[]);
    assert_eq!(Dag::build(&g.cfg, LoopCut::Headers, &[]), dag, "edges into the entry block are truncated classically");
    let back = g.dag_edge(&dag, "D", "A");
    let start = g.start(&dag, "A");
    let order = vec![vec![g.dag_edge(&dag, "D", "t"), back]];
    let numbering = Numbering::with_priority(&dag, &priorities(&dag, &order), u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 8);
    // The real s→A is the DAG's first edge.
    assert_vals(&dag, &numbering, &[(start, 4), (g.dag_edge(&dag, "A", "C"), 2), (back, 1)]);
    let inc = placement(&g, &dag, &numbering);
    let trace = g.blocks(&["A", "B", "D", "A", "C", "D", "A", "C", "D"]);
    assert_eq!(simulate_trace(&g.cfg, &dag, &inc.inc, &trace), vec![1, 7, 6]);
    let p = regenerate(&dag, &numbering, 1).unwrap();
    assert_eq!((p.start, p.end), (PathPoint::Boundary, PathPoint::Block(g.block("A"))));
    let p = regenerate(&dag, &numbering, 7).unwrap();
    assert_eq!(p.blocks, g.blocks(&["A", "C", "D"]));
    assert_eq!((p.start, p.end), (PathPoint::Block(g.block("A")), PathPoint::Block(g.block("A"))));
}

fn fig_19() -> Named {
    let mut edges = Vec::new();
    for x in ["2", "3", "4", "5"] {
        edges.push(("1", x));
    }
    for x in ["2", "3", "4", "5"] {
        edges.push((x, "6"));
    }
    for x in ["7", "8", "9", "10"] {
        edges.push(("6", x));
    }
    for x in ["7", "8", "9", "10"] {
        edges.push((x, "11"));
    }
    edges.push(("11", "t"));
    Named::new("1", &edges)
}

/// [EVT23 Fig. 19], uncut.
#[test]
fn figure_19_uncut() {
    let g = fig_19();
    let dag = Dag::build(&g.cfg, LoopCut::Headers, &[]);
    let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 16);
    assert_vals(
        &dag,
        &numbering,
        &[
            (g.dag_edge(&dag, "1", "3"), 4),
            (g.dag_edge(&dag, "1", "4"), 8),
            (g.dag_edge(&dag, "1", "5"), 12),
            (g.dag_edge(&dag, "6", "8"), 1),
            (g.dag_edge(&dag, "6", "9"), 2),
            (g.dag_edge(&dag, "6", "10"), 3),
        ],
    );
    let inc = placement(&g, &dag, &numbering);
    check_path(&g, &dag, &numbering, &inc, &["1", "2", "6", "7", "11"], 0);
    check_path(&g, &dag, &numbering, &inc, &["1", "3", "6", "8", "11"], 5);
    check_path(&g, &dag, &numbering, &inc, &["1", "5", "6", "10", "11"], 15);
    // The limit is the largest allowed count.
    assert!(Numbering::ball_larus(&dag, 16).is_ok());
    assert_eq!(Numbering::ball_larus(&dag, 15).unwrap_err(), Overflow { node: g.block("1"), limit: 15 });
}

/// [EVT23 Fig. 19], cut at 6 and 11: 9 paths, Val(S→6) = 4, Val(S→11) = 8.
#[test]
fn figure_19_cut_at_merges() {
    let g = fig_19();
    let mut extra = vec![false; g.cfg.num_blocks() as usize];
    extra[g.block("6") as usize] = true;
    extra[g.block("11") as usize] = true;
    let dag = Dag::build(&g.cfg, LoopCut::Headers, &extra);
    // The virtual entry's out-edges are [→1, S→6, S→11] in edge order, as in [EVT23 Fig. 19].
    let out = dag.out_edges();
    assert_eq!(out[dag.entry() as usize], vec![0, g.start(&dag, "6"), g.start(&dag, "11")]);
    let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 9);
    assert_eq!(numbering.val[g.start(&dag, "6") as usize], 4);
    assert_eq!(numbering.val[g.start(&dag, "11") as usize], 8);
    // Brute force: 9 distinct paths with IDs exactly 0..9.
    let paths = enumerate_paths(&dag, 100).unwrap();
    let mut ids: Vec<u64> = paths.iter().map(|p| path_sum(&numbering.val, p)).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..9).collect::<Vec<_>>());
    let inc = placement(&g, &dag, &numbering);
    for p in &paths {
        let id = path_sum(&numbering.val, p);
        assert_eq!(path_sum(&inc.inc, p), id);
        assert_eq!(&regenerate(&dag, &numbering, id).unwrap().edges, p);
    }
    // Every path between two cut points: 1→x→(6), (6)→y→(11), (11)→exit.
    for (i, x) in ["2", "3", "4", "5"].into_iter().enumerate() {
        let p = regenerate(&dag, &numbering, i as u64).unwrap();
        assert_eq!(p.blocks, g.blocks(&["1", x]));
        assert_eq!((p.start, p.end), (PathPoint::Boundary, PathPoint::Block(g.block("6"))));
    }
    for (i, y) in ["7", "8", "9", "10"].into_iter().enumerate() {
        let p = regenerate(&dag, &numbering, 4 + i as u64).unwrap();
        assert_eq!(p.blocks, g.blocks(&["6", y]));
        assert_eq!((p.start, p.end), (PathPoint::Block(g.block("6")), PathPoint::Block(g.block("11"))));
    }
    let p = regenerate(&dag, &numbering, 8).unwrap();
    assert_eq!(p.blocks, g.blocks(&["11"]));
    assert_eq!((p.start, p.end), (PathPoint::Block(g.block("11")), PathPoint::Boundary));
    // ⟨1,2,6,7,11⟩ runs as three cut paths (three updates cut against one uncut [EVT23 §4.3]).
    let trace = g.blocks(&["1", "2", "6", "7", "11"]);
    assert_eq!(simulate_trace(&g.cfg, &dag, &inc.inc, &trace), vec![0, 4, 8]);
}

/// Selective cutting (plan.rs) on Figure 19: cutting the merge 6 alone gives 4 + 4 = 8 paths, so any
/// limit from 8 up to 15 must be met.
#[test]
fn figure_19_selective_cutting() {
    let g = fig_19();
    for max_paths in 8..=15 {
        for smart in [false, true] {
            let options = PlanOptions { max_paths, smart, ..PlanOptions::default() };
            let plan = FunctionPlan::build(&g.cfg, &options)
                .unwrap_or_else(|e| panic!("max_paths {max_paths}, smart {smart}: {e}"));
            assert!(plan.num_paths() <= max_paths, "max_paths {max_paths}: {} paths", plan.num_paths());
            assert_eq!(plan.overflow_cuts, vec![g.block("6")], "max_paths {max_paths}");
            assert_eq!(plan.num_paths(), 8);
        }
    }
    let plan = FunctionPlan::build(&g.cfg, &PlanOptions { max_paths: 16, ..PlanOptions::default() }).unwrap();
    assert_eq!((plan.num_paths(), plan.overflow_cuts.len()), (16, 0));
    // Every path must start at 1 or end at an exit or cut; 1 has 4 successors and 6 has 4: 8 is the least.
    let err = FunctionPlan::build(&g.cfg, &PlanOptions { max_paths: 7, ..PlanOptions::default() });
    assert!(matches!(err, Err(TooManyPaths(_))), "{err:?}");
    // A block with more exits than the limit cannot be helped.
    let g = Named::new("a", &[("a", "t"), ("a", "t"), ("a", "t")]);
    let err = FunctionPlan::build(&g.cfg, &PlanOptions { max_paths: 2, ..PlanOptions::default() });
    assert_eq!(err.unwrap_err(), TooManyPaths(g.block("a")));
}

fn seed_000_fig_3() -> Named {
    Named::new("A", &[("A", "B"), ("B", "C"), ("B", "D"), ("C", "E"), ("D", "E"), ("E", "B"), ("E", "F"), ("F", "t")])
}

/// [KBL13 Fig. 3] with classic back-edge truncation: 8 paths; with the out-edge orders
/// s:[dummy s→B, real s→A], B:[D, C], E:[dummy E→t, E→F] the IDs of the figure.
#[test]
fn seed_000_figure_3_numbering_and_stream() {
    let g = seed_000_fig_3();
    let dag = Dag::build(&g.cfg, LoopCut::BackEdges, &[]);
    let order = vec![
        vec![g.start(&dag, "B"), 0],
        vec![g.dag_edge(&dag, "B", "D"), g.dag_edge(&dag, "B", "C")],
        vec![g.dag_edge(&dag, "E", "B"), g.dag_edge(&dag, "E", "F")],
    ];
    assert!(matches!(dag.edges[g.dag_edge(&dag, "E", "B") as usize].kind, DagEdgeKind::End(..)));
    let numbering = Numbering::with_priority(&dag, &priorities(&dag, &order), u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 8);
    let b = g.block("B");
    for (blocks, end_at_b, id) in [
        (&["B", "D", "E"][..], true, 0),
        (&["B", "D", "E", "F"], false, 1),
        (&["B", "C", "E"], true, 2),
        (&["B", "C", "E", "F"], false, 3),
        (&["A", "B", "C", "E"], true, 6),
    ] {
        let p = regenerate(&dag, &numbering, id).unwrap();
        assert_eq!(p.blocks, g.blocks(blocks), "path {id}");
        let start = if blocks[0] == "A" { PathPoint::Boundary } else { PathPoint::Block(b) };
        let end = if end_at_b { PathPoint::Block(b) } else { PathPoint::Boundary };
        assert_eq!((p.start, p.end), (start, end), "path {id}");
    }

    // The 44-block trace of §2 Example 1.
    let mut trace = vec!["A", "B", "C", "E"];
    for _ in 0..3 {
        trace.extend(["B", "C", "E", "B", "D", "E", "B", "D", "E", "B", "C", "E"]);
    }
    trace.extend(["B", "C", "E", "F"]);
    assert_eq!(trace.len(), 44);
    let trace = g.blocks(&trace);
    let want = vec![6, 2, 0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 3];
    let inc = placement(&g, &dag, &numbering);
    assert!(inc.num_increments() < dag.edges.len());
    assert_eq!(simulate_trace(&g.cfg, &dag, &inc.inc, &trace), want);
    assert_eq!(simulate_trace(&g.cfg, &dag, &numbering.val, &trace), want);
    // Uniform weights give another spanning tree; the stream must not change.
    let uniform = Placement::compute(&dag, &numbering, &vec![1.0; dag.edges.len()]);
    assert_eq!(simulate_trace(&g.cfg, &dag, &uniform.inc, &trace), want);
}

/// [KBL13 Fig. 3] with loop-header truncation (PEP): both A→B and E→B end a path at B, so the paths
/// are A alone and the four from B.
#[test]
fn seed_000_figure_3_header_truncation() {
    let g = seed_000_fig_3();
    let dag = Dag::build(&g.cfg, LoopCut::Headers, &[]);
    let b = g.block("B");
    assert_eq!(dag.edges[g.dag_edge(&dag, "A", "B") as usize].kind, DagEdgeKind::End(g.cfg_edge("A", "B"), b));
    assert_eq!(dag.edges[g.dag_edge(&dag, "E", "B") as usize].kind, DagEdgeKind::End(g.cfg_edge("E", "B"), b));
    assert_eq!(dag.cut.iter().filter(|&&c| c).count(), 1);
    assert!(dag.cut[b as usize]);
    let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
    assert_eq!(numbering.total(&dag), 5);
    let mut seen = Vec::new();
    for id in 0..5 {
        let p = regenerate(&dag, &numbering, id).unwrap();
        let names: Vec<&str> = p.blocks.iter().map(|&x| g.name(x)).collect();
        seen.push((names, p.start, p.end));
    }
    seen.sort();
    let bb = PathPoint::Block(b);
    let mut want = vec![
        (vec!["A"], PathPoint::Boundary, bb),
        (vec!["B", "C", "E"], bb, bb),
        (vec!["B", "C", "E", "F"], bb, PathPoint::Boundary),
        (vec!["B", "D", "E"], bb, bb),
        (vec!["B", "D", "E", "F"], bb, PathPoint::Boundary),
    ];
    want.sort();
    assert_eq!(seen, want);
    assert_eq!(regenerate(&dag, &numbering, 5), Err(BadPathId(5)));

    // The trace of §2 now ends a path on entering B from A as well: 1 + 13 paths.
    let inc = placement(&g, &dag, &numbering);
    let mut trace = vec!["A", "B", "C", "E"];
    for _ in 0..3 {
        trace.extend(["B", "C", "E", "B", "D", "E", "B", "D", "E", "B", "C", "E"]);
    }
    trace.extend(["B", "C", "E", "F"]);
    let ids = simulate_trace(&g.cfg, &dag, &inc.inc, &g.blocks(&trace));
    assert_eq!(ids.len(), 15);
    let blocks: Vec<Vec<&str>> = ids
        .iter()
        .map(|&id| regenerate(&dag, &numbering, id).unwrap().blocks.iter().map(|&x| g.name(x)).collect())
        .collect();
    assert_eq!(blocks[0], vec!["A"]);
    assert_eq!(blocks[1], vec!["B", "C", "E"]);
    assert_eq!(blocks[2], vec!["B", "C", "E"]);
    assert_eq!(blocks[3], vec!["B", "D", "E"]);
    assert_eq!(blocks[14], vec!["B", "C", "E", "F"]);
    let concatenated: Vec<&str> = blocks.concat();
    assert_eq!(concatenated, trace);
}
