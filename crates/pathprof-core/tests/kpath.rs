//! The k-IPF equals brute-force n-gram counting; the running example of [KBL13].

use pathprof_core::kpath::{kipf, Activations, Item, KSlabForest, Options, NODE_BYTES};
use proptest::prelude::*;
use std::collections::HashMap;

/// Every contiguous run of up to `k` path IDs without a marker, counted.
fn ngrams(k: usize, stream: &[Item]) -> HashMap<Vec<u64>, u64> {
    let mut out = HashMap::new();
    let mut segment: Vec<u64> = Vec::new();
    let flush = |seg: &Vec<u64>, out: &mut HashMap<Vec<u64>, u64>| {
        for i in 0..seg.len() {
            for n in 1..=k.min(seg.len() - i) {
                *out.entry(seg[i..i + n].to_vec()).or_insert(0) += 1;
            }
        }
    };
    for item in stream {
        match item {
            Item::Enter => {
                flush(&segment, &mut out);
                segment.clear();
            }
            Item::Path(p) => segment.push(*p),
        }
    }
    flush(&segment, &mut out);
    out
}

fn stream(text: &str) -> Vec<Item> {
    text.split_whitespace().map(|t| if t == "*" { Item::Enter } else { Item::Path(t.parse().unwrap()) }).collect()
}

#[test]
fn seed_000_example() {
    // Σ = ⟨*, 6, 2, 0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 3⟩ [KBL13 §2.2, Figs. 3–5].
    let s = stream("* 6 2 0 0 2 2 0 0 2 2 0 0 2 3");
    let f = kipf(4, s.iter().copied());
    // "⟨2,0,0,2⟩ … is a 4-gram that occurs 3 times in Σ".
    assert_eq!(f.count(&[2, 0, 0, 2]), 3);
    // One tree per distinct path ID (0, 2, 3, 6), with the BL counts at the first level.
    assert_eq!(f.roots.iter().map(|r| (r.path, r.count)).collect::<Vec<_>>(), vec![(0, 6), (2, 6), (3, 1), (6, 1)]);
    assert_eq!(f.sequences(), ngrams(4, &s));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn kipf_equals_ngram_counting(
        k in 2usize..7,
        raw in proptest::collection::vec(0u8..6, 0..120),
    ) {
        // 0 is a marker, 1..6 path IDs: small alphabets make repetitions (and deep trees) likely.
        let s: Vec<Item> = raw.iter().map(|&x| if x == 0 { Item::Enter } else { Item::Path(x as u64) }).collect();
        let f = kipf(k, s.iter().copied());
        prop_assert_eq!(f.sequences(), ngrams(k, &s));
    }
}

/// One event of a program with calls: enter an activation, end a path in the current one, return.
#[derive(Clone, Copy, Debug)]
enum Event {
    Enter,
    Path(u64),
    Exit,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// With nested activations, the k-IPF is the n-gram count of each activation's own paths, a
    /// callee's paths excluded from its caller's.
    #[test]
    fn activations_keep_their_own_sequences(
        k in 2usize..6,
        raw in proptest::collection::vec(0u8..8, 0..150),
        relayout_from in proptest::option::of(1usize..40),
    ) {
        let events: Vec<Event> = raw
            .iter()
            .map(|&x| match x {
                0 => Event::Enter,
                1 => Event::Exit,
                x => Event::Path(u64::from(x) % 4),
            })
            .collect();
        // Laid out anew from a few nodes on, so that the suspended callers' cursors move too.
        let mut a = Activations::with_options(k, Options { relayout_from, ..Options::default() });
        // Oracle: the paths of every activation, in order, as a stream with one marker each.
        let mut open: Vec<Vec<u64>> = Vec::new();
        let mut done: Vec<Vec<u64>> = Vec::new();
        for e in &events {
            match *e {
                Event::Enter => {
                    a.enter();
                    open.push(Vec::new());
                }
                Event::Path(p) => {
                    a.path(p);
                    if open.is_empty() {
                        open.push(Vec::new());
                    }
                    open.last_mut().unwrap().push(p);
                }
                Event::Exit => {
                    a.exit();
                    if let Some(seq) = open.pop() {
                        done.push(seq);
                    }
                }
            }
        }
        done.extend(open);
        let stream: Vec<Item> =
            done.iter().flat_map(|seq| std::iter::once(Item::Enter).chain(seq.iter().map(|&p| Item::Path(p)))).collect();
        prop_assert_eq!(a.forest().to_kipf().sequences(), ngrams(k, &stream));
    }
}

/// The forest built from `stream` with `options`.
fn forest(k: usize, options: Options, stream: &[Item]) -> KSlabForest {
    let mut f = KSlabForest::with_options(k, options);
    for &item in stream {
        f.push(item);
    }
    f
}

/// A bound reached by cold sequences first keeps the hot ones that come after: pruning makes room
/// for them where a forest frozen when full would drop them.
#[test]
fn a_full_forest_makes_room_for_hot_sequences() {
    let k = 4;
    let mut stream: Vec<Item> =
        (0..300).flat_map(|i| [Item::Enter, Item::Path(1000 + i), Item::Path(2000 + i)]).collect();
    stream.push(Item::Enter);
    stream.extend((0..3000).map(|i| Item::Path(1 + i % 3)));
    let truth = ngrams(k, &stream);
    let f = forest(k, Options { max_nodes: Some(200), ..Options::default() }, &stream);
    assert!(f.prunes() > 0 && f.len() <= 200, "{} prunes, {} nodes", f.prunes(), f.len());
    let got = f.to_kipf();
    for seq in [vec![1, 2, 3, 1], vec![2, 3, 1], vec![3, 1]] {
        let (n, r) = (truth[&seq], got.count(&seq));
        assert!(r <= n && n - r <= f.dropped(), "{seq:?}: {r} of {n}, {} dropped", f.dropped());
        // The cold sequences filled the forest before the hot ones came; they are the ones pruned.
        assert_eq!(r, n, "{seq:?}: the hot sequence was not kept whole ({} dropped)", f.dropped());
    }
}

#[test]
fn nodes_take_16_bytes() {
    assert_eq!(NODE_BYTES, 16);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Under a node bound, the forest keeps to it, the roots stay exact, no count exceeds the truth,
    /// and none falls short of it by more than the dropped counts, so that every sequence that occurred
    /// more often is kept; a bound that an item never comes within two nodes of changes nothing.
    #[test]
    fn bounded_forest_keeps_its_promises(
        k in 2usize..7,
        raw in proptest::collection::vec(0u8..7, 0..160),
        bound in 0usize..60,
    ) {
        let s: Vec<Item> = raw.iter().map(|&x| if x == 0 { Item::Enter } else { Item::Path(x as u64) }).collect();
        let truth = ngrams(k, &s);
        let unbounded = forest(k, Options::default(), &s);
        prop_assert_eq!(unbounded.dropped(), 0);
        let f = forest(k, Options { max_nodes: Some(bound), ..Options::default() }, &s);
        prop_assert!(f.len() <= bound);
        let got = f.to_kipf();
        for r in &got.roots {
            prop_assert_eq!(Some(&r.count), truth.get(&vec![r.path]));
        }
        prop_assert_eq!(got.roots.len(), truth.keys().filter(|seq| seq.len() == 1).count());
        let reported = got.sequences();
        for (seq, &n) in &truth {
            let r = reported.get(seq).copied().unwrap_or(0);
            prop_assert!(r <= n && n - r <= f.dropped(), "{:?}: {} of {}, {} dropped", seq, r, n, f.dropped());
        }
        for seq in reported.keys() {
            prop_assert!(truth.contains_key(seq));
        }
        if bound >= unbounded.len() + 2 {
            prop_assert_eq!(f.dropped(), 0);
            prop_assert_eq!(reported, truth);
        }
    }

    /// Moving found children to the front of their sibling lists changes the order of the scans, not
    /// the forest's counts.
    #[test]
    fn move_to_front_changes_no_count(
        k in 2usize..7,
        raw in proptest::collection::vec(0u8..9, 0..200),
    ) {
        let s: Vec<Item> = raw.iter().map(|&x| if x == 0 { Item::Enter } else { Item::Path(x as u64) }).collect();
        let plain = forest(k, Options { move_to_front: false, ..Options::default() }, &s);
        let mtf = forest(k, Options { move_to_front: true, ..Options::default() }, &s);
        prop_assert_eq!(plain.len(), mtf.len());
        prop_assert_eq!(plain.to_kipf(), mtf.to_kipf());
    }

    /// Laying the forest out anew (as it grows, and after each pruning) changes where nodes lie, not
    /// what the forest holds: the same nodes, counts and dropped counts as without, bound or not.
    #[test]
    fn relayout_changes_no_count(
        k in 2usize..7,
        raw in proptest::collection::vec(0u8..9, 0..300),
        bound in proptest::option::of(0usize..80),
        from in 1usize..50,
    ) {
        let s: Vec<Item> = raw.iter().map(|&x| if x == 0 { Item::Enter } else { Item::Path(x as u64) }).collect();
        let options = Options { max_nodes: bound, ..Options::default() };
        let plain = forest(k, Options { relayout_from: None, ..options }, &s);
        let laid = forest(k, Options { relayout_from: Some(from), ..options }, &s);
        prop_assert_eq!(plain.relayouts(), 0);
        prop_assert!(laid.relayouts() > 0 || laid.len() < from + 2, "{} nodes", laid.len());
        prop_assert_eq!(plain.len(), laid.len());
        prop_assert_eq!(plain.dropped(), laid.dropped());
        prop_assert_eq!(plain.node_sequences(), laid.node_sequences());
        prop_assert_eq!(plain.to_kipf(), laid.to_kipf());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The child cache changes how children are found, not the forest: on streams whose forests
    /// outgrow the cache (so that its entries collide and are replaced), with and without a bound.
    #[test]
    fn child_cache_changes_no_count(
        k in 2usize..9,
        raw in proptest::collection::vec(0u16..600, 20_000..40_000),
        bound in proptest::option::of(500usize..20_000),
    ) {
        let s: Vec<Item> = raw.iter().map(|&x| if x == 0 { Item::Enter } else { Item::Path(u64::from(x % 97 + x / 300)) }).collect();
        let options = Options { max_nodes: bound, ..Options::default() };
        let cached = forest(k, Options { child_cache: true, ..options }, &s);
        let plain = forest(k, Options { child_cache: false, ..options }, &s);
        prop_assert!(bound.is_some() || cached.len() > 8192, "the forest outgrows the cache: {} nodes", cached.len());
        prop_assert_eq!(cached.len(), plain.len());
        prop_assert_eq!(cached.dropped(), plain.dropped());
        prop_assert_eq!(cached.to_kipf(), plain.to_kipf());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// A run of `n` equal paths added at once builds the same forest as adding them one by one; under
    /// a node bound, which both prune at other times, both keep their promises against it.
    #[test]
    fn runs_equal_repeated_paths(
        k in 2usize..7,
        raw in proptest::collection::vec((0u8..5, 1u64..40), 0..40),
        bound in proptest::option::of(0usize..80),
    ) {
        let options = Options { max_nodes: bound, ..Options::default() };
        let mut one = Activations::with_options(k, options);
        let mut runs = Activations::with_options(k, options);
        let mut unbounded = Activations::new(k);
        for &(x, n) in &raw {
            match x {
                0 => {
                    one.enter();
                    runs.enter();
                    unbounded.enter();
                }
                1 => {
                    one.exit();
                    runs.exit();
                    unbounded.exit();
                }
                p => {
                    for _ in 0..n {
                        one.path(u64::from(p));
                    }
                    runs.path_run(u64::from(p), n);
                    unbounded.path_run(u64::from(p), n);
                }
            }
        }
        prop_assert_eq!(one.items(), runs.items());
        if bound.is_none() {
            prop_assert_eq!(one.forest().len(), runs.forest().len());
            prop_assert_eq!(one.forest().to_kipf(), runs.forest().to_kipf());
            return Ok(());
        }
        let truth = unbounded.forest().to_kipf().sequences();
        for f in [one.forest(), runs.forest()] {
            let got = f.to_kipf().sequences();
            for (seq, &n) in &truth {
                let r = got.get(seq).copied().unwrap_or(0);
                prop_assert!(r <= n && n - r <= f.dropped(), "{:?}: {} of {}, {} dropped", seq, r, n, f.dropped());
                if seq.len() == 1 {
                    prop_assert_eq!(r, n);
                }
            }
            prop_assert!(got.keys().all(|seq| truth.contains_key(seq)));
        }
    }
}

/// [KBL13 Example 3]: the 4-SF of the stream of Fig. 3 is the prefix forest of its list L (Fig. 5):
/// one tree for the slab ⟨6,2,0⟩ with the next slab below it, and so on.
#[test]
fn seed_000_four_slab_forest() {
    let mut f = KSlabForest::new(4);
    for item in stream("* 6 2 0 0 2 2 0 0 2 2 0 0 2 3") {
        f.push(item);
    }
    // L = ⟨6,2,0,0,2,2⟩ ⟨0,2,2,0,0,2⟩ ⟨0,0,2,2,0,0⟩ ⟨2,0,0,2,3⟩ and their prefixes; the last slab ⟨2,3⟩
    // is also a tree's upper part, with nothing below it.
    let lists: [&[u64]; 5] = [&[6, 2, 0, 0, 2, 2], &[0, 2, 2, 0, 0, 2], &[0, 0, 2, 2, 0, 0], &[2, 0, 0, 2, 3], &[2, 3]];
    // Each path ID is counted once: those of the first slab in its own nodes, those of every later slab
    // in the nodes below the slab before it.
    let counted: [&[u64]; 14] = [
        &[6],
        &[6, 2],
        &[6, 2, 0],
        &[6, 2, 0, 0],
        &[6, 2, 0, 0, 2],
        &[6, 2, 0, 0, 2, 2],
        &[0, 2, 2, 0],
        &[0, 2, 2, 0, 0],
        &[0, 2, 2, 0, 0, 2],
        &[0, 0, 2, 2],
        &[0, 0, 2, 2, 0],
        &[0, 0, 2, 2, 0, 0],
        &[2, 0, 0, 2],
        &[2, 0, 0, 2, 3],
    ];
    let mut want: Vec<(Vec<u64>, u64)> = Vec::new();
    for l in lists {
        for n in 1..=l.len() {
            let seq = l[..n].to_vec();
            if !want.iter().any(|(s, _)| *s == seq) {
                let count = u64::from(counted.contains(&&seq[..]));
                want.push((seq, count));
            }
        }
    }
    want.sort();
    assert_eq!(f.node_sequences(), want);
    assert_eq!(f.node_sequences().iter().map(|(_, c)| c).sum::<u64>(), 14);
}
