//! Helpers shared by the integration tests: named CFGs, DAG edge look-ups, brute-force path enumeration
//! and a simulator that runs a block trace through the chord increments.

#![allow(dead_code)]

use pathprof_core::{BlockId, Cfg, CfgEdgeId, Dag, DagEdgeId, DagEdgeKind, Succ};
use proptest::prelude::*;

/// A CFG whose blocks have names. The name `"t"` stands for the function exit ([`Succ::Exit`]).
pub struct Named {
    pub cfg: Cfg,
    pub names: Vec<String>,
}

impl Named {
    /// Builds a CFG from `(from, to)` pairs; blocks are numbered in order of first appearance, with
    /// `entry` first. Edges keep the order of the list.
    pub fn new(entry: &str, edges: &[(&str, &str)]) -> Named {
        let mut names: Vec<String> = vec![entry.to_string()];
        for &(a, b) in edges {
            for x in [a, b] {
                if x != "t" && !names.iter().any(|n| n == x) {
                    names.push(x.to_string());
                }
            }
        }
        let mut cfg = Cfg::new(names.len() as u32, 0);
        let id = |x: &str| names.iter().position(|n| n == x).unwrap() as BlockId;
        for &(a, b) in edges {
            let to = if b == "t" { Succ::Exit } else { Succ::Block(id(b)) };
            cfg.add_edge(id(a), to);
        }
        Named { cfg, names }
    }

    pub fn block(&self, name: &str) -> BlockId {
        self.names.iter().position(|n| n == name).unwrap_or_else(|| panic!("no block {name}")) as BlockId
    }

    pub fn blocks(&self, names: &[&str]) -> Vec<BlockId> {
        names.iter().map(|n| self.block(n)).collect()
    }

    pub fn name(&self, b: BlockId) -> &str {
        &self.names[b as usize]
    }

    /// The first CFG edge `from → to` (`to == "t"` for an exit edge).
    pub fn cfg_edge(&self, from: &str, to: &str) -> CfgEdgeId {
        let f = self.block(from);
        let t = if to == "t" { Succ::Exit } else { Succ::Block(self.block(to)) };
        self.cfg.edges().iter().position(|e| e.from == f && e.to == t).unwrap_or_else(|| panic!("no edge {from}->{to}"))
            as CfgEdgeId
    }

    /// The DAG edge that stands for the CFG edge `from → to`: `Real` or `End`.
    pub fn dag_edge(&self, dag: &Dag, from: &str, to: &str) -> DagEdgeId {
        dag_edge_of(dag, self.cfg_edge(from, to))
    }

    /// The dummy `s → b` edge.
    pub fn start(&self, dag: &Dag, b: &str) -> DagEdgeId {
        start_edge(dag, self.block(b))
    }

    /// The DAG edges of an acyclic path from the function entry to an exit, given by block names.
    pub fn entry_to_exit_path(&self, dag: &Dag, blocks: &[&str]) -> Vec<DagEdgeId> {
        assert_eq!(self.block(blocks[0]), dag.entry_block());
        let mut edges = vec![0];
        for w in blocks.windows(2) {
            edges.push(self.dag_edge(dag, w[0], w[1]));
        }
        edges.push(self.dag_edge(dag, blocks[blocks.len() - 1], "t"));
        edges
    }
}

/// The DAG edge that stands for a CFG edge.
pub fn dag_edge_of(dag: &Dag, cfg_edge: CfgEdgeId) -> DagEdgeId {
    dag.edges
        .iter()
        .position(|e| matches!(e.kind, DagEdgeKind::Real(c) | DagEdgeKind::End(c, _) if c == cfg_edge))
        .unwrap_or_else(|| panic!("CFG edge {cfg_edge} is not in the DAG")) as DagEdgeId
}

/// The dummy `s → b` edge.
pub fn start_edge(dag: &Dag, b: BlockId) -> DagEdgeId {
    dag.edges.iter().position(|e| e.kind == DagEdgeKind::Start(b)).unwrap_or_else(|| panic!("no Start({b})"))
        as DagEdgeId
}

/// Priorities that visit the listed out-edges first, in the listed order; unlisted edges keep priority 0
/// (after the listed ones, in edge order).
pub fn priorities(dag: &Dag, orders: &[Vec<DagEdgeId>]) -> Vec<f64> {
    let mut p = vec![0.0; dag.edges.len()];
    for list in orders {
        for (i, &e) in list.iter().enumerate() {
            p[e as usize] = (list.len() - i) as f64;
        }
    }
    p
}

/// Sum of `values` along `path`, modulo 2^64.
pub fn path_sum(values: &[u64], path: &[DagEdgeId]) -> u64 {
    path.iter().fold(0u64, |acc, &e| acc.wrapping_add(values[e as usize]))
}

/// All `s → t` paths of the DAG as edge sequences, by depth-first search in edge order. `None` when
/// there are more than `cap` paths or the search takes more than `100 * cap` steps.
pub fn enumerate_paths(dag: &Dag, cap: usize) -> Option<Vec<Vec<DagEdgeId>>> {
    let out = dag.out_edges();
    let mut paths = Vec::new();
    let mut steps = 0usize;
    // Stack of (node, index of the next out-edge to try); `cur` holds the edges taken so far.
    let mut stack: Vec<(u32, usize)> = vec![(dag.entry(), 0)];
    let mut cur: Vec<DagEdgeId> = Vec::new();
    while let Some(&mut (v, ref mut next)) = stack.last_mut() {
        steps += 1;
        if steps > 100 * cap {
            return None;
        }
        if v == dag.exit() {
            paths.push(cur.clone());
            if paths.len() > cap {
                return None;
            }
            stack.pop();
            cur.pop();
            continue;
        }
        if let Some(&e) = out[v as usize].get(*next) {
            *next += 1;
            cur.push(e);
            stack.push((dag.edges[e as usize].to, 0));
        } else {
            stack.pop();
            cur.pop();
        }
    }
    Some(paths)
}

/// Runs a block trace (one activation: starts at the entry block, leaves through an exit edge after the
/// last block) through the increments `inc`, as instrumented code would: `r = Inc(s→entry)` on entry,
/// `r += Inc(e)` on every edge, and on an edge that ends a path (`End` dummy or exit) the ID `r` is
/// emitted and the next path starts with `r = Inc(s→b)`. Parallel edges are taken as the first one.
pub fn simulate_trace(cfg: &Cfg, dag: &Dag, inc: &[u64], trace: &[BlockId]) -> Vec<u64> {
    assert_eq!(trace[0], cfg.entry());
    let edge = |from: BlockId, to: Succ| {
        cfg.edges()
            .iter()
            .position(|e| e.from == from && e.to == to)
            .unwrap_or_else(|| panic!("no edge {from}->{to:?}")) as CfgEdgeId
    };
    let mut emitted = Vec::new();
    let mut r = inc[0];
    for w in trace.windows(2) {
        let d = dag_edge_of(dag, edge(w[0], Succ::Block(w[1])));
        r = r.wrapping_add(inc[d as usize]);
        if let DagEdgeKind::End(_, b) = dag.edges[d as usize].kind {
            assert_eq!(b, w[1]);
            emitted.push(r);
            r = inc[start_edge(dag, b) as usize];
        }
    }
    let last = *trace.last().unwrap();
    r = r.wrapping_add(inc[dag_edge_of(dag, edge(last, Succ::Exit)) as usize]);
    emitted.push(r);
    emitted
}

/// A random CFG of 1..=12 blocks: random edges (parallel edges, self loops and exits included) in random
/// order, most of them forward (`to > from`, which makes many acyclic paths) and the rest anywhere
/// (loops, irreducible regions); optionally on top of a spine `0→1→…→n-1→exit` from the entry so that
/// most blocks are reachable.
pub fn arb_cfg() -> impl Strategy<Value = Cfg> {
    (1u32..=12)
        .prop_flat_map(|n| {
            let edge = (0..n, prop::option::weighted(0.85, 0..n), prop::bool::weighted(0.7));
            (Just(n), any::<bool>(), prop::collection::vec(edge, 0..=(3 * n as usize)))
        })
        .prop_map(|(n, spine, random)| {
            let mut cfg = Cfg::new(n, 0);
            if spine {
                for b in 0..n {
                    cfg.add_edge(b, if b + 1 < n { Succ::Block(b + 1) } else { Succ::Exit });
                }
            }
            for (from, to, forward) in random {
                let to = match to {
                    Some(w) if forward && from + 1 < n => Succ::Block(from + 1 + w % (n - from - 1)),
                    Some(w) => Succ::Block(w),
                    None => Succ::Exit,
                };
                cfg.add_edge(from, to);
            }
            cfg
        })
}

/// A random CFG ([`arb_cfg`]) with exceptions: some blocks get a throw edge, and some blocks other
/// than the entry are landings.
pub fn arb_cfg_with_exceptions() -> impl Strategy<Value = Cfg> {
    (
        arb_cfg(),
        prop::collection::vec(prop::bool::weighted(0.4), 12),
        prop::collection::vec(prop::bool::weighted(0.2), 12),
    )
        .prop_map(|(mut cfg, throws, landings)| {
            let n = cfg.num_blocks();
            for b in (0..n).filter(|&b| throws[b as usize]) {
                cfg.add_edge(b, Succ::Throw);
            }
            let landings = (0..n).filter(|&b| b != cfg.entry() && landings[b as usize]).collect();
            cfg.with_landings(landings)
        })
}

/// [PPP07 Fig. 3.4], edges in the thesis' order.
pub fn fig_3_4() -> Named {
    Named::new("s", &[("s", "a"), ("s", "b"), ("a", "b"), ("a", "c"), ("b", "c"), ("c", "d"), ("c", "t"), ("d", "t")])
}

/// [PPP07 Fig. 3.5]: `s→{a,b}→c→{d,e}→t`.
pub fn fig_3_5() -> Named {
    Named::new("s", &[("s", "a"), ("s", "b"), ("a", "c"), ("b", "c"), ("c", "d"), ("c", "e"), ("d", "t"), ("e", "t")])
}

/// [PPP07 Fig. 3.6]: `s→{a,b,c}→d→{e,f,g}→t`, edges in that order.
pub fn fig_3_6() -> Named {
    let mut edges = Vec::new();
    for x in ["a", "b", "c"] {
        edges.push(("s", x));
    }
    for x in ["a", "b", "c"] {
        edges.push((x, "d"));
    }
    for x in ["e", "f", "g"] {
        edges.push(("d", x));
    }
    for x in ["e", "f", "g"] {
        edges.push((x, "t"));
    }
    Named::new("s", &edges)
}
