//! The k-IPF equals brute-force n-gram counting; seed 000's running example.

use pathprof_core::kpath::{kipf, Item};
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
    // Σ = ⟨*, 6, 2, 0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 3⟩ (seed 000 §2.2, Figs. 3–5).
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
    ) {
        let events: Vec<Event> = raw
            .iter()
            .map(|&x| match x {
                0 => Event::Enter,
                1 => Event::Exit,
                x => Event::Path(u64::from(x) % 4),
            })
            .collect();
        let mut a = pathprof_core::kpath::Activations::new(k);
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
