//! Work spread over the machine's cores: the per-function analyses of the instrumenter and the
//! validation of function bodies are independent of one another.

/// `f` applied to every item, on as many threads as the machine has cores, results in order.
pub fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    /// Items a thread takes at a time.
    const BATCH: usize = 16;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len().div_ceil(BATCH));
    if threads <= 1 {
        return items.iter().enumerate().map(|(i, x)| f(i, x)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let start = next.fetch_add(BATCH, std::sync::atomic::Ordering::Relaxed);
                        if start >= items.len() {
                            return out;
                        }
                        for (i, x) in items.iter().enumerate().skip(start).take(BATCH) {
                            out.push((i, f(i, x)));
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("analysis threads do not panic")).collect()
    });
    done.sort_unstable_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// [`parallel_map`] over items it owns: `f` takes each item, which is dropped on the thread that
/// used it.
pub fn parallel_map_owned<T: Send, R: Send>(items: Vec<T>, f: impl Fn(usize, T) -> R + Sync) -> Vec<R> {
    let cells: Vec<std::sync::Mutex<Option<T>>> = items.into_iter().map(|x| std::sync::Mutex::new(Some(x))).collect();
    parallel_map(&cells, |i, cell| {
        let item = cell.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        f(i, item.expect("parallel_map visits every item once"))
    })
}
