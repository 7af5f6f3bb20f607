//! Preferential path numbering: the worked examples of [PPP07 Figs. 3.4–3.6] (weights, IDs, holes,
//! δ, aliasing caught by the Ball–Larus check), and properties on random DAGs with random interesting
//! sets, against brute-force enumeration of their paths.

mod common;

use common::{arb_cfg, enumerate_paths, fig_3_6, path_sum, priorities, Named};
use pathprof_core::ppp::{PppError, PppNumbering};
use pathprof_core::{Dag, FunctionPlan, LoopCut, Numbering, Placement, PlanOptions};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Every DAG edge not listed has weight 0; the listed ones have theirs (as signed numbers).
fn assert_weights(g: &Named, dag: &Dag, ppp: &PppNumbering, nonzero: &[((&str, &str), i64)]) {
    for e in 0..dag.edges.len() as u32 {
        let want = nonzero.iter().find(|((a, b), _)| g.dag_edge(dag, a, b) == e).map_or(0, |&(_, w)| w);
        assert_eq!(ppp.val[e as usize] as i64, want, "weight of DAG edge {e} ({:?})", dag.edges[e as usize]);
    }
}

/// The (PPP ID, Ball–Larus ID) of the entry-to-exit path through `blocks`.
fn ids(g: &Named, dag: &Dag, numbering: &Numbering, ppp: &PppNumbering, blocks: &[&str]) -> (i64, u64) {
    let path = g.entry_to_exit_path(dag, blocks);
    (ppp.id_of(&path) as i64, path_sum(&numbering.val, &path))
}

fn fig_3_4() -> (Named, Dag, Numbering) {
    let g = common::fig_3_4();
    let dag = Dag::build(&g.cfg, LoopCut::Headers, &[]);
    let order = vec![
        vec![g.dag_edge(&dag, "s", "a"), g.dag_edge(&dag, "s", "b")],
        vec![g.dag_edge(&dag, "a", "c"), g.dag_edge(&dag, "a", "b")],
        vec![g.dag_edge(&dag, "c", "d"), g.dag_edge(&dag, "c", "t")],
    ];
    let numbering = Numbering::with_priority(&dag, &priorities(&dag, &order), u64::MAX).unwrap();
    (g, dag, numbering)
}

/// [PPP07 Fig. 3.4] with I = {sacdt, sact, sbct}: W(c,t) = 1, W(b,c) = −1, W(s,b) = 2; the path array
/// holds the Ball–Larus IDs [0, 1, 5]; sabct aliases sacdt (PPP 0, BL 3), sabcdt underflows (−1),
/// sbct is counted in slot 2.
#[test]
fn fig_3_4_preferential() {
    let (g, dag, numbering) = fig_3_4();
    let ppp = PppNumbering::build(&dag, &numbering, &[0, 1, 5], 1 << 20).unwrap();
    assert_weights(&g, &dag, &ppp, &[(("c", "t"), 1), (("b", "c"), -1), (("s", "b"), 2)]);
    assert_eq!(ppp.slots, [Some(0), Some(1), Some(5)]);
    assert_eq!(ppp.delta(), Some(1.0));
    let table = [
        (&["s", "a", "c", "d"][..], (0, 0), true),
        (&["s", "a", "c"], (1, 1), true),
        (&["s", "b", "c"], (2, 5), true),
        (&["s", "a", "b", "c", "d"], (-1, 2), false),
        (&["s", "a", "b", "c"], (0, 3), false),
        (&["s", "b", "c", "d"], (1, 4), false),
    ];
    for (blocks, want, interesting) in table {
        let got = ids(&g, &dag, &numbering, &ppp, blocks);
        assert_eq!(got, want, "{blocks:?}");
        assert_eq!(ppp.is_interesting(got.0 as u64, got.1), interesting, "{blocks:?}");
    }
}

/// [PPP07 Fig. 3.5] with I = {sacet, sbcdt}: W(s,b) = 1, all others 0, so the interesting IDs are 0
/// and 1 (δ = 1), and the uninteresting sacdt and sbcet alias them: only the Ball–Larus check tells.
#[test]
fn fig_3_5_aliasing() {
    let g = common::fig_3_5();
    let dag = Dag::build(&g.cfg, LoopCut::Headers, &[]);
    let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
    // Ball–Larus IDs: sacdt 0, sacet 1, sbcdt 2, sbcet 3.
    let ppp = PppNumbering::build(&dag, &numbering, &[1, 2], 1 << 20).unwrap();
    assert_weights(&g, &dag, &ppp, &[(("s", "b"), 1)]);
    assert_eq!((ppp.slots.as_slice(), ppp.delta()), (&[Some(1), Some(2)][..], Some(1.0)));
    for (blocks, want, interesting) in [
        (&["s", "a", "c", "e"][..], (0, 1), true),
        (&["s", "b", "c", "d"], (1, 2), true),
        (&["s", "a", "c", "d"], (0, 0), false),
        (&["s", "b", "c", "e"], (1, 3), false),
    ] {
        let got = ids(&g, &dag, &numbering, &ppp, blocks);
        assert_eq!(got, want, "{blocks:?}");
        assert_eq!(ppp.is_interesting(got.0 as u64, got.1), interesting, "{blocks:?}");
    }
}

/// [PPP07 Fig. 3.6] (s→{a,b,c}→d→{e,f,g}→t) with six interesting paths: a hole at 3 and δ = 7/6,
/// optimal by parity.
#[test]
fn fig_3_6_hole() {
    let g = fig_3_6();
    let dag = Dag::build(&g.cfg, LoopCut::Headers, &[]);
    let numbering = Numbering::ball_larus(&dag, u64::MAX).unwrap();
    // Ball–Larus ID = 3·index(first branch) + index(second branch).
    let bl = |x: &str, y: &str| {
        3 * ["a", "b", "c"].iter().position(|&n| n == x).unwrap() as u64
            + ["e", "f", "g"].iter().position(|&n| n == y).unwrap() as u64
    };
    let interesting: Vec<u64> = [("a", "f"), ("a", "g"), ("b", "e"), ("b", "g"), ("c", "e"), ("c", "f")]
        .iter()
        .map(|&(x, y)| bl(x, y))
        .collect();
    let ppp = PppNumbering::build(&dag, &numbering, &interesting, 1 << 20).unwrap();
    assert_weights(
        &g,
        &dag,
        &ppp,
        &[(("s", "b"), 2), (("s", "c"), 5), (("a", "d"), -1), (("d", "f"), 1), (("d", "g"), 2)],
    );
    let expected = [("a", "f", 0), ("a", "g", 1), ("b", "e", 2), ("b", "g", 4), ("c", "e", 5), ("c", "f", 6)];
    for (x, y, id) in expected {
        assert_eq!(ids(&g, &dag, &numbering, &ppp, &["s", x, "d", y]), (id, bl(x, y)), "s{x}d{y}");
    }
    assert_eq!(ppp.slots[3], None, "a hole at 3");
    assert_eq!(ppp.slots.len(), 7);
    assert_eq!(ppp.delta(), Some(7.0 / 6.0));
    assert_eq!(ids(&g, &dag, &numbering, &ppp, &["s", "a", "d", "e"]).0, -1);
    assert_eq!(ids(&g, &dag, &numbering, &ppp, &["s", "c", "d", "g"]).0, 7);
    assert!(!ppp.is_interesting(3, bl("b", "f")), "the hole holds no path");
}

#[test]
fn too_wide_a_range_is_refused() {
    let (_, dag, numbering) = fig_3_4();
    assert_eq!(PppNumbering::build(&dag, &numbering, &[0, 1, 5], 2), Err(PppError::TooWide(2)));
    assert!(matches!(PppNumbering::build(&dag, &numbering, &[6], 10), Err(PppError::BadPathId(_))));
    let empty = PppNumbering::build(&dag, &numbering, &[], 10).unwrap();
    assert_eq!((empty.slots.len(), empty.delta()), (0, None));
}

/// Largest number of paths enumerated.
const CAP: usize = 2000;

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// On random DAGs with random interesting sets (a bit per Ball–Larus ID): the interesting paths get
    /// unique IDs from 0, dense up to the holes the algorithm leaves; with every path interesting the
    /// weights are the Ball–Larus weights; chord increments on the Ball–Larus spanning tree give every
    /// path its PPP ID; and a path is found interesting by the runtime's check (its PPP ID is a slot
    /// that holds its Ball–Larus ID) exactly when it is in the set.
    #[test]
    fn preferential_numbering(cfg in arb_cfg(), mode in prop_oneof![Just(LoopCut::Headers), Just(LoopCut::BackEdges)], bits in prop::collection::vec(any::<bool>(), 1..64)) {
        let plan = FunctionPlan::build(&cfg, &PlanOptions { loop_cut: mode, ..PlanOptions::default() }).unwrap();
        let (dag, numbering) = (&plan.dag, &plan.numbering);
        let Some(paths) = enumerate_paths(dag, CAP) else { return Ok(()) };
        let n = numbering.total(dag);
        let interesting: Vec<u64> = (0..n).filter(|&id| bits[id as usize % bits.len()]).collect();
        let ppp = PppNumbering::build(dag, numbering, &interesting, u64::MAX).unwrap();
        let mut seen: BTreeMap<i64, u64> = BTreeMap::new();
        // Chord increments on the Ball–Larus tree.
        let inc = Placement::with_tree(dag, &plan.placement.in_tree, &ppp.val);
        for p in &paths {
            let bl = path_sum(&numbering.val, p);
            let id = ppp.id_of(p);
            let wanted = interesting.contains(&bl);
            prop_assert_eq!(ppp.is_interesting(id, bl), wanted, "path {} (PPP {})", bl, id as i64);
            if wanted {
                prop_assert!(seen.insert(id as i64, bl).is_none(), "two interesting paths with PPP ID {}", id as i64);
            }
            prop_assert_eq!(path_sum(&inc.inc, p), id, "Σ Inc of path {}", bl);
        }
        prop_assert_eq!(seen.len(), interesting.len());
        prop_assert_eq!(ppp.slots.len(), seen.keys().last().map_or(0, |&k| k as usize + 1));
        if let Some((&first, _)) = seen.iter().next() {
            prop_assert_eq!(first, 0, "the smallest interesting ID is 0");
        }
        if interesting.len() as u64 == n {
            // On the edges that paths take (an edge into a dead end has a Ball–Larus value but no path).
            for e in paths.iter().flatten() {
                prop_assert_eq!(ppp.val[*e as usize], numbering.val[*e as usize], "with every path interesting, PPP is Ball–Larus");
            }
            prop_assert_eq!(ppp.delta(), if n > 0 { Some(1.0) } else { None });
        }
    }
}
