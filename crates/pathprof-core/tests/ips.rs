//! Interprocedural path segments: [PPP07 §3.4.2]'s example, and the folder against a brute-force
//! walk of the whole program path on generated runs.

use pathprof_core::ips::{depth_one, walk_tree, Callee, FirstPath, HeadTree, SegmentFolder, Segments, Step};
use proptest::prelude::*;
use std::collections::HashMap;

/// What a generated program's paths are: calls on each, and whether it ends at the exit.
#[derive(Clone, Debug)]
struct Shapes {
    /// `(calls, exit)` by label.
    paths: HashMap<u64, (u32, bool)>,
}

impl Shapes {
    fn calls(&self, label: u64) -> u32 {
        self.paths[&label].0
    }

    fn exit(&self, label: u64) -> bool {
        self.paths[&label].1
    }
}

/// One item of the stream as the profiled program writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    Enter,
    Call,
    /// A path end, repeated `n` times.
    End {
        label: u64,
        exit: bool,
        n: u64,
    },
}

/// One token of the whole program path, in the order the program runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Sub { label: u64, part: u32 },
    Open,
    Close,
}

fn fold(items: &[Item], k: usize, shapes: &Shapes) -> Segments {
    let mut folder = SegmentFolder::new(k);
    let mut calls = |label: u64| shapes.paths.get(&label).map(|p| p.0);
    for &item in items {
        match item {
            Item::Enter => folder.enter(),
            Item::Call => folder.call(),
            Item::End { label, exit, n } => folder.path(label, exit, n, &mut calls),
        }
    }
    folder.finish()
}

/// The depth-`k` IPSs of a whole program path, by the definition: from every subpath that ends at
/// a call, the tokens that follow, into callees and back, until a subpath ends at a loop header,
/// at the exit of the function the walk started in, or at a call past the `k`-th.
fn brute_force(wpp: &[Token], k: usize, shapes: &Shapes) -> HashMap<Vec<Step>, u64> {
    let mut out: HashMap<Vec<Step>, u64> = HashMap::new();
    for (i, t) in wpp.iter().enumerate() {
        let Token::Sub { label, part } = *t else { continue };
        if part >= shapes.calls(label) {
            continue;
        }
        let (mut steps, mut used, mut level, mut pos) = (vec![Step::Sub { label, part }], 0, 0, i);
        loop {
            let Token::Sub { label, part } = wpp[pos] else { panic!("a subpath expected at {pos}") };
            if part < shapes.calls(label) {
                if used == k {
                    break;
                }
                used += 1;
                steps.push(Step::Call);
                assert_eq!(wpp[pos + 1], Token::Open);
                pos += 2;
                match wpp[pos] {
                    Token::Close => {
                        steps.push(Step::Return);
                        pos += 1;
                    }
                    Token::Sub { .. } => level += 1,
                    Token::Open => panic!("a call with no subpath before it"),
                }
            } else if shapes.exit(label) && level > 0 {
                assert_eq!(wpp[pos + 1], Token::Close);
                steps.push(Step::Return);
                level -= 1;
                pos += 2;
            } else {
                break;
            }
            let Token::Sub { label, part } = wpp[pos] else { panic!("a subpath expected at {pos}") };
            steps.push(Step::Sub { label, part });
        }
        *out.entry(steps).or_default() += 1;
    }
    out
}

/// [PPP07 §3.4.2]'s whole program path: `f3` takes one path with two calls (parts `p3`, `p7`,
/// `p9`), `f2` one with one call (`p2`, `p10`), `f4` three paths (`p4` and `p5` end at its loop
/// header, `p6` at its exit), `f5` one (`p8`), and `f1` one with one call (`p1`, then what it does
/// after `f2` returns, which the example leaves out).
fn thesis_example() -> (Vec<Item>, Shapes) {
    let label = |f: u64, p: u64| f << 32 | p;
    let (f1, f2, f3, f5) = (label(1, 0), label(2, 0), label(3, 0), label(5, 0));
    let (p4, p5, p6) = (label(4, 0), label(4, 1), label(4, 2));
    let paths = HashMap::from([
        (f1, (1, true)),
        (f2, (1, true)),
        (f3, (2, true)),
        (p4, (0, false)),
        (p5, (0, false)),
        (p6, (0, true)),
        (f5, (0, true)),
    ]);
    let end = |label, exit| Item::End { label, exit, n: 1 };
    let items = vec![
        Item::Enter,
        Item::Call,
        Item::Enter,
        Item::Call,
        Item::Enter,
        Item::Call,
        Item::Enter,
        end(p4, false),
        end(p5, false),
        end(p6, true),
        Item::Call,
        Item::Enter,
        end(f5, true),
        end(f3, true),
        end(f2, true),
        end(f1, true),
    ];
    (items, Shapes { paths })
}

fn sub(f: u64, part: u32) -> Step {
    Step::Sub { label: f << 32, part }
}

#[test]
fn the_thesis_example_at_depth_1() {
    let (items, shapes) = thesis_example();
    let got = fold(&items, 1, &shapes);
    let (call, ret) = (Step::Call, Step::Return);
    let p4 = Step::Sub { label: 4 << 32, part: 0 };
    let want = HashMap::from([
        (vec![sub(1, 0), call, sub(2, 0)], 1),
        (vec![sub(2, 0), call, sub(3, 0)], 1),
        (vec![sub(3, 0), call, p4], 1),
        (vec![sub(3, 1), call, sub(5, 0), ret, sub(3, 2)], 1),
    ]);
    assert_eq!(got.segments, want);
    assert_eq!((got.mismatched, got.stray, got.open), (0, 0, 0));
    assert_eq!(got.paths.values().sum::<u64>(), 7);
}

#[test]
fn the_thesis_example_at_depth_2() {
    let (items, shapes) = thesis_example();
    let got = fold(&items, 2, &shapes);
    let (call, ret) = (Step::Call, Step::Return);
    let p4 = Step::Sub { label: 4 << 32, part: 0 };
    let want = HashMap::from([
        (vec![sub(1, 0), call, sub(2, 0), call, sub(3, 0)], 1),
        (vec![sub(2, 0), call, sub(3, 0), call, p4], 1),
        (vec![sub(3, 0), call, p4], 1),
        (vec![sub(3, 1), call, sub(5, 0), ret, sub(3, 2)], 1),
    ]);
    assert_eq!(got.segments, want);
}

/// A generated run: every activation takes paths that end at its loop header, then one that ends
/// at its exit; every call enters a generated activation or none (a host function).
struct Generator {
    state: u64,
    shapes: Shapes,
    items: Vec<Item>,
    wpp: Vec<Token>,
    /// Every path end with the activations its calls entered, by their first paths.
    ends: Vec<(u64, Vec<Callee>)>,
}

impl Generator {
    fn next(&mut self, below: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % below
    }

    /// Generates an activation of `function`; its first path, with what its calls entered.
    fn activation(&mut self, function: u64, depth: u32) -> HeadTree {
        self.items.push(Item::Enter);
        let loops = self.next(4);
        let mut first = None;
        for i in 0..=loops {
            let exit = i == loops;
            // Paths 0 to 2 end at the loop header, 3 and 4 at the exit.
            let path = if exit { 3 + self.next(2) } else { self.next(3) };
            let label = function << 32 | path;
            let mut heads = Vec::new();
            for part in 0..self.shapes.calls(label) {
                self.wpp.push(Token::Sub { label, part });
                self.wpp.push(Token::Open);
                self.items.push(Item::Call);
                let mut head = Callee::None;
                if depth < 6 && self.next(4) != 0 {
                    let callee = self.next(4);
                    head = Callee::Entered(Box::new(self.activation(callee, depth + 1)));
                }
                heads.push(head);
                self.wpp.push(Token::Close);
            }
            first.get_or_insert_with(|| HeadTree { label, exit: Some(exit), calls: heads.clone() });
            self.ends.push((label, heads));
            self.wpp.push(Token::Sub { label, part: self.shapes.calls(label) });
            match self.items.last_mut() {
                Some(Item::End { label: l, exit: e, n }) if (*l, *e) == (label, exit) => *n += 1,
                _ => self.items.push(Item::End { label, exit, n: 1 }),
            }
        }
        first.expect("an activation ends at least one path")
    }
}

fn generate(seed: u64, calls: &[u32]) -> Generator {
    let mut paths = HashMap::new();
    for f in 0..4u64 {
        for p in 0..5u64 {
            paths.insert(f << 32 | p, (calls[(f * 5 + p) as usize], p >= 3));
        }
    }
    let mut g =
        Generator { state: seed | 1, shapes: Shapes { paths }, items: Vec::new(), wpp: Vec::new(), ends: Vec::new() };
    for _ in 0..3 {
        let f = g.next(4);
        g.activation(f, 0);
    }
    g
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_folder_counts_what_the_whole_program_path_holds(
        seed in any::<u64>(),
        calls in proptest::collection::vec(0u32..3, 20),
        k in 1usize..=4,
    ) {
        let g = generate(seed, &calls);
        let got = fold(&g.items, k, &g.shapes);
        prop_assert_eq!(&got.segments, &brute_force(&g.wpp, k, &g.shapes));
        prop_assert_eq!((got.mismatched, got.stray, got.open), (0, 0, 0));
        let mut paths: HashMap<u64, u64> = HashMap::new();
        for t in &g.wpp {
            if let Token::Sub { label, part } = *t {
                if part == g.shapes.calls(label) {
                    *paths.entry(label).or_default() += 1;
                }
            }
        }
        prop_assert_eq!(got.paths, paths);
    }

    /// The supergraph's IPSs: each path end's own, from the first paths of the activations its
    /// calls entered, are the depth-1 IPSs of the whole program path.
    #[test]
    fn each_path_end_with_its_callees_first_paths_gives_the_depth_one_segments(
        seed in any::<u64>(),
        calls in proptest::collection::vec(0u32..3, 20),
    ) {
        let g = generate(seed, &calls);
        let mut got: HashMap<Vec<Step>, u64> = HashMap::new();
        for (label, calls) in &g.ends {
            let heads: Vec<FirstPath> = calls
                .iter()
                .map(|c| match c {
                    Callee::Entered(t) => Some((t.label, t.calls.is_empty() && t.exit == Some(true))),
                    _ => None,
                })
                .collect();
            for steps in depth_one(*label, &heads) {
                *got.entry(steps).or_default() += 1;
            }
        }
        prop_assert_eq!(got, brute_force(&g.wpp, 1, &g.shapes));
    }

    /// Mode `ippp:K`'s IPSs: each path end's own, from the heads of depth `k − 1` of the
    /// activations its calls entered (what they tell cut there), are the depth-`k` IPSs of the whole
    /// program path; with heads of depth `k − 2` only, a segment is either the same or unknown, and
    /// some are unknown exactly when a segment nests `k` calls.
    #[test]
    fn each_path_end_with_its_callees_heads_gives_the_segments_of_its_depth(
        seed in any::<u64>(),
        calls in proptest::collection::vec(0u32..3, 20),
        k in 1usize..=4,
    ) {
        let g = generate(seed, &calls);
        let want = brute_force(&g.wpp, k, &g.shapes);
        let mut got: HashMap<Vec<Step>, u64> = HashMap::new();
        let mut unknown = 0;
        for (label, calls) in &g.ends {
            let deep: Vec<Callee> = calls.iter().map(|c| cut(c, k - 1)).collect();
            let shallow: Vec<Callee> = calls.iter().map(|c| cut(c, k.saturating_sub(2))).collect();
            let walked = walk_tree(*label, &deep, k);
            for (steps, short) in walked.iter().zip(walk_tree(*label, &shallow, k)) {
                let steps = steps.clone().expect("heads of depth k − 1 tell every segment");
                match short {
                    Some(s) => prop_assert_eq!(&s, &steps),
                    None => unknown += 1,
                }
                *got.entry(steps).or_default() += 1;
            }
        }
        let nesting = |s: &Vec<Step>| {
            s.iter().scan(0i32, |open, t| {
                *open += match t { Step::Call => 1, Step::Return => -1, Step::Sub { .. } => 0 };
                Some(*open)
            }).max().unwrap_or(0)
        };
        let deepest = want.keys().any(|s| nesting(s) == k as i32);
        prop_assert_eq!(unknown > 0, k > 1 && deepest);
        prop_assert_eq!(got, want);
    }
}

/// What a head of depth `d` tells of the activation `c` entered: its first path, and its calls'
/// heads of depth `d − 1`; at depth 0 none of them.
fn cut(c: &Callee, d: usize) -> Callee {
    match c {
        Callee::Entered(t) => Callee::Entered(Box::new(HeadTree {
            label: t.label,
            exit: t.exit,
            calls: t.calls.iter().map(|c| if d == 0 { Callee::Unknown } else { cut(c, d - 1) }).collect(),
        })),
        other => other.clone(),
    }
}

#[test]
fn a_path_whose_calls_the_stream_does_not_mark_is_not_counted_into_segments() {
    let (mut items, shapes) = thesis_example();
    // f3's path ends with one of its two calls unmarked.
    items.remove(10);
    let got = fold(&items, 1, &shapes);
    assert_eq!(got.mismatched, 1);
    assert!(got.segments.keys().all(|s| s[0] != sub(3, 0) && s[0] != sub(3, 1)));
}
