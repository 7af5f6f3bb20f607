//! Parallel folding checked against one thread's fold, on random streams.

use super::*;
use proptest::prelude::*;

/// A stream as an instrumented module writes it, from `ops` on a stack of activations: a path of
/// the innermost activation (`0..5`, which starts one when none is open), a call (`5`), a return
/// (`6`); a path or an exit like the item before it becomes a repetition.
fn stream(ops: &[(u8, u8, u8)]) -> Vec<u64> {
    let mut raw = Vec::new();
    let mut stack: Vec<u64> = Vec::new();
    for &(op, f, id) in ops {
        let f = u64::from(f % 5);
        match op % 7 {
            5 => {
                raw.push(StreamItem::Enter { function: f as u32 });
                stack.push(f);
            }
            6 => {
                if let Some(f) = stack.pop() {
                    raw.push(StreamItem::ExitPath { label: f << 32 | u64::from(id % 3) });
                }
            }
            _ => {
                if stack.is_empty() {
                    stack.push(f);
                }
                let f = stack[stack.len() - 1];
                raw.push(StreamItem::Path { label: f << 32 | u64::from(id % 3) });
            }
        }
    }
    let mut items: Vec<u64> = Vec::new();
    let (mut last, mut run) = (None, 0);
    for item in raw {
        if last == Some(item) && !matches!(item, StreamItem::Enter { .. }) {
            run += 1;
            continue;
        }
        if run > 0 {
            items.push(StreamItem::Repeat(run).encode());
            run = 0;
        }
        items.push(item.encode());
        last = Some(item);
    }
    if run > 0 {
        items.push(StreamItem::Repeat(run).encode());
    }
    items
}

proptest! {
    /// Folding by shards of the trees, on any number of threads, builds the forest one thread
    /// builds: the same k-IPF, nodes and items.
    #[test]
    fn shards_fold_the_forest_of_one_thread(
        ops in proptest::collection::vec((0u8..7, any::<u8>(), any::<u8>()), 0..400),
        k in 2usize..6,
        threads in 2usize..6,
    ) {
        let items = stream(&ops);
        let settings = |n| ForestSettings { k, max_nodes: None, fold_threads: Some(n) };
        let one = fold_stream(&items, settings(1)).unwrap();
        let many = fold_stream(&items, settings(threads)).unwrap();
        prop_assert_eq!(&many.kipf, &one.kipf);
        prop_assert_eq!(many.counts, one.counts);
        prop_assert_eq!(many.ksf.nodes, one.ksf.nodes);
        prop_assert_eq!(many.ksf.stream_items, one.ksf.stream_items);
        prop_assert_eq!(many.ksf.fold_threads, threads);
    }
}
