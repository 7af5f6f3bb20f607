//! The bursts of bursty k-BLPP (`kbl:K:burst`) [KBL13 §6]: a timer thread that opens a burst every
//! [`Bursts::every`] and closes it [`Bursts::length`] later, by setting and clearing the first word of
//! the profiler's memory ([`SAMPLE_FLAG`], the word PEP's timer sets). While a burst is open, the
//! module's activations stream their paths (`pathprof_wasm`'s burst sink); the stream's collector
//! ([`StreamCollector`](super::stream::StreamCollector)) folds them as it folds any stream.

use crate::words::Flag;
use anyhow::{ensure, Result};
use pathprof_wasm::abi::SAMPLE_FLAG;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// When bursts are open: `length` out of every `every`, the first opened `every - length` after
/// the program starts. A `length` of `every` or more keeps one burst open for the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bursts {
    pub length: Duration,
    pub every: Duration,
}

impl Bursts {
    /// Whether one burst lasts the whole run.
    pub fn always(&self) -> bool {
        self.length >= self.every
    }
}

/// The thread that opens and closes the bursts, and how many it opened.
pub(crate) struct BurstTimer {
    /// Dropped to stop the thread, which wakes at once.
    stop: Option<Sender<()>>,
    opened: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl BurstTimer {
    /// Starts the bursts on the profiler's memory `memory`.
    pub fn start(memory: &mut [u8], bursts: Bursts) -> Result<BurstTimer> {
        ensure!(!bursts.length.is_zero(), "a burst must last some time");
        let flag = Flag::new(memory, SAMPLE_FLAG)?;
        let opened = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = channel();
        if bursts.always() {
            flag.set(1);
            opened.store(1, Ordering::Relaxed);
            return Ok(BurstTimer { stop: Some(stop), opened, thread: None });
        }
        let count = opened.clone();
        let thread = std::thread::spawn(move || {
            let gap = bursts.every - bursts.length;
            // Deadlines from the start, so that late wake-ups do not add up.
            let mut at = Instant::now();
            loop {
                at += gap;
                if !wait_until(&stopped, at) {
                    break;
                }
                flag.set(1);
                count.fetch_add(1, Ordering::Relaxed);
                at += bursts.length;
                let go_on = wait_until(&stopped, at);
                flag.set(0);
                if !go_on {
                    break;
                }
            }
        });
        Ok(BurstTimer { stop: Some(stop), opened, thread: Some(thread) })
    }

    /// Stops the bursts (the program has stopped); how many were opened.
    pub fn finish(mut self) -> u64 {
        self.halt();
        self.opened.load(Ordering::Relaxed)
    }

    fn halt(&mut self) {
        self.stop = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for BurstTimer {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Waits until `at`; whether the timer goes on (it was not stopped meanwhile).
fn wait_until(stopped: &Receiver<()>, at: Instant) -> bool {
    let left = at.saturating_duration_since(Instant::now());
    matches!(stopped.recv_timeout(left), Err(RecvTimeoutError::Timeout))
}
