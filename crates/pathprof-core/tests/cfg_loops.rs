//! Loop analysis of the CFG: back edges, loop headers and loop nesting depths.

use pathprof_core::{estimate, Cfg, Dag, DagEdgeKind, LoopCut, Succ};

/// Nested loops, a self loop and an unreachable loop:
///
/// ```text
/// 0 → 1 (outer header) → 2 (inner header) → 3 → 2 (inner back edge)
///                                            3 → 4 → 1 (outer back edge)
///     1 → 5 → 5 (self loop) ; 5 → exit ; 6 → 6 (unreachable)
/// ```
fn nested() -> Cfg {
    let mut cfg = Cfg::new(7, 0);
    for (from, to) in [
        (0, Succ::Block(1)), // 0
        (1, Succ::Block(2)), // 1
        (2, Succ::Block(3)), // 2
        (3, Succ::Block(2)), // 3: inner back edge
        (3, Succ::Block(4)), // 4
        (4, Succ::Block(1)), // 5: outer back edge
        (1, Succ::Block(5)), // 6
        (5, Succ::Block(5)), // 7: self loop
        (5, Succ::Exit),     // 8
        (6, Succ::Block(6)), // 9: unreachable self loop
    ] {
        cfg.add_edge(from, to);
    }
    cfg
}

#[test]
fn nested_loops() {
    let cfg = nested();
    assert_eq!(cfg.reachable(), vec![true, true, true, true, true, true, false]);
    assert_eq!(cfg.back_edges(), vec![3, 5, 7]);
    assert_eq!(cfg.loop_headers(), vec![false, true, true, false, false, true, false]);
    assert_eq!(cfg.loop_depths(), vec![0, 1, 2, 2, 1, 1, 0]);
    let out = cfg.out_edges();
    assert_eq!(out[1], vec![1, 6]);
    assert_eq!(out[3], vec![3, 4]);
    assert_eq!(out[6], vec![9]);
}

/// Two back edges to one header (a `continue` and the loop's end) make one loop, not two.
#[test]
fn two_back_edges_one_loop() {
    let mut cfg = Cfg::new(4, 0);
    cfg.add_edge(0, Succ::Block(1));
    cfg.add_edge(1, Succ::Block(2));
    cfg.add_edge(2, Succ::Block(1)); // back edge (continue)
    cfg.add_edge(2, Succ::Block(3));
    cfg.add_edge(3, Succ::Block(1)); // back edge
    cfg.add_edge(3, Succ::Exit);
    assert_eq!(cfg.back_edges(), vec![2, 4]);
    assert_eq!(cfg.loop_headers(), vec![false, true, false, false]);
    assert_eq!(cfg.loop_depths(), vec![0, 1, 1, 1]);
    // Back-edge truncation: one dummy s→1 for both back edges.
    let dag = Dag::build(&cfg, LoopCut::BackEdges, &[]);
    assert_eq!(dag.edges.iter().filter(|e| e.kind == DagEdgeKind::Start(1)).count(), 1);
    assert_eq!(dag.edges.iter().filter(|e| matches!(e.kind, DagEdgeKind::End(_, 1))).count(), 2);
}

/// A loop whose header is the entry block: every edge into the entry is a back edge.
#[test]
fn loop_at_the_entry() {
    let mut cfg = Cfg::new(2, 0);
    cfg.add_edge(0, Succ::Block(1));
    cfg.add_edge(1, Succ::Block(0));
    cfg.add_edge(1, Succ::Block(0)); // a parallel back edge
    cfg.add_edge(1, Succ::Exit);
    assert_eq!(cfg.back_edges(), vec![1, 2]);
    assert_eq!(cfg.loop_headers(), vec![true, false]);
    assert_eq!(cfg.loop_depths(), vec![1, 1]);
}

/// In an irreducible region the retreating edges depend on the depth-first search, which follows edge
/// order: here 0→1 is explored first, so 2→1 is the retreating edge.
#[test]
fn irreducible_region() {
    let mut cfg = Cfg::new(3, 0);
    cfg.add_edge(0, Succ::Block(1));
    cfg.add_edge(0, Succ::Block(2));
    cfg.add_edge(1, Succ::Block(2));
    cfg.add_edge(2, Succ::Block(1));
    cfg.add_edge(2, Succ::Exit);
    assert_eq!(cfg.back_edges(), vec![3]);
    assert_eq!(cfg.loop_headers(), vec![false, true, false]);
    // (Loop depths assume reducible graphs, where a header dominates its loop; not checked here.)
}

/// The static estimate: 8^depth per block, split evenly among its out-edges.
#[test]
fn static_estimate() {
    let cfg = nested();
    let f = estimate::cfg_edge_frequencies(&cfg);
    assert_eq!(f, vec![1.0, 4.0, 64.0, 32.0, 32.0, 8.0, 4.0, 4.0, 4.0, 1.0]);
}
