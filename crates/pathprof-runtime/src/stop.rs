//! Stopping a run before the program ends, without losing its profile, and looking at it while it
//! runs. On a signal or when a time limit passes, the guest is interrupted at its next function
//! entry or loop header (Wasmtime's epoch interruption), and the run ends as a trap ends it — what
//! the probes recorded is read, the activations still open are counted — with the reason recorded.
//! Snapshots use the same interruption: at each, the guest pauses while its collector reads what
//! the probes recorded so far, then goes on.
//!
//! A [`Stopper`] is shared by whatever may ask for the stop (a signal handler's thread, a time
//! limit's) and the runs it stops. Every run arms its store with [`arm`]: the store checks the
//! stopper (and whether a snapshot is due) whenever the engine's epoch advances, which the stopper
//! advances when asked to stop, and a watch thread when the time limit passes or a snapshot is due.
//! A guest blocked in a host call (reading its standard input, sleeping) stops, or is looked at,
//! once the call returns.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wasmtime::{Engine, Store, StoreContextMut, UpdateDeadline};

/// Why a run was stopped before the program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// `SIGINT` (Ctrl-C).
    Interrupt,
    /// `SIGTERM`.
    Terminate,
    /// The run's time limit passed.
    TimeLimit,
}

impl StopReason {
    /// The name profiles give it.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Interrupt => "SIGINT",
            StopReason::Terminate => "SIGTERM",
            StopReason::TimeLimit => "time limit",
        }
    }

    /// The exit status a stopped `pathprof` ends with: 128 plus the signal's number, as shells
    /// expect, or 124 for a time limit, as `timeout` has it.
    pub fn exit_code(self) -> i32 {
        match self {
            StopReason::Interrupt => 130,
            StopReason::Terminate => 143,
            StopReason::TimeLimit => 124,
        }
    }
}

/// A request to stop runs, shared by whatever may make it and the runs it stops.
#[derive(Clone, Default)]
pub struct Stopper(Arc<Inner>);

#[derive(Default)]
struct Inner {
    reason: Mutex<Option<StopReason>>,
    /// The engines of the runs to interrupt.
    engines: Mutex<Vec<Engine>>,
}

impl std::fmt::Debug for Stopper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Stopper").field(&self.reason()).finish()
    }
}

impl Stopper {
    pub fn new() -> Stopper {
        Stopper::default()
    }

    /// Asks every run to stop, for `reason`; the first reason asked for is the one kept.
    pub fn stop(&self, reason: StopReason) {
        self.0.reason.lock().expect("the stopper's lock").get_or_insert(reason);
        for engine in self.0.engines.lock().expect("the stopper's lock").iter() {
            engine.increment_epoch();
        }
    }

    /// The reason the runs were asked to stop, once they were.
    pub fn reason(&self) -> Option<StopReason> {
        *self.0.reason.lock().expect("the stopper's lock")
    }

    /// Runs on `engine` are stopped by this stopper.
    fn watch(&self, engine: &Engine) {
        let mut engines = self.0.engines.lock().expect("the stopper's lock");
        if !engines.iter().any(|e| Engine::same(e, engine)) {
            engines.push(engine.clone());
        }
    }
}

/// A run's watch over its time limit: a thread that stops the run when the limit passes, ended when
/// the run ends (dropped).
pub(crate) struct Watch {
    done: Option<Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Snapshots of a run: every `every`, what the collector has read so far is handed to `sink`.
pub struct Snapshots<O> {
    pub every: Duration,
    pub sink: Box<dyn FnMut(O, SnapshotTaken) + Send + Sync>,
}

/// When a snapshot was taken, and what it cost the program.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SnapshotTaken {
    /// The snapshot's number, from 1.
    pub index: u64,
    /// How long the program had run.
    pub seconds: f64,
    /// How long the program was paused while the collector read what the probes recorded.
    pub pause_seconds: f64,
}

/// Arms `store` (of `engine`) to stop when `stopper` asks, or `time_limit` after now, and to call
/// `snapshot` every `every`; the returned watch must live as long as the run.
pub(crate) fn arm<T: 'static>(
    store: &mut Store<T>,
    engine: &Engine,
    stopper: &Stopper,
    time_limit: Option<Duration>,
    every: Option<Duration>,
    mut snapshot: impl FnMut(StoreContextMut<'_, T>, f64) + Send + Sync + 'static,
) -> Watch {
    stopper.watch(engine);
    let start = Instant::now();
    let deadline = time_limit.map(|limit| start + limit);
    let asked = stopper.clone();
    let mut next_snapshot = every.map(|e| start + e);
    store.epoch_deadline_callback(move |ctx| {
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            asked.stop(StopReason::TimeLimit);
        }
        if asked.reason().is_some() {
            return Ok(UpdateDeadline::Interrupt);
        }
        if let (Some(due), Some(every)) = (next_snapshot, every) {
            if now >= due {
                snapshot(ctx, now.duration_since(start).as_secs_f64());
                next_snapshot = Some(now + every);
            }
        }
        Ok(UpdateDeadline::Continue(1))
    });
    store.set_epoch_deadline(1);
    // A stop asked for before the deadline was set.
    if stopper.reason().is_some() {
        engine.increment_epoch();
    }
    if deadline.is_none() && every.is_none() {
        return Watch { done: None, thread: None };
    }
    let (done, ended) = mpsc::channel::<()>();
    let (stopper, engine) = (stopper.clone(), engine.clone());
    let thread = std::thread::spawn(move || {
        let mut next_snapshot = every.map(|e| start + e);
        loop {
            let wake = [deadline, next_snapshot].into_iter().flatten().min().expect("a deadline or a snapshot");
            match ended.recv_timeout(wake.saturating_duration_since(Instant::now())) {
                Err(RecvTimeoutError::Timeout) if deadline.is_some_and(|d| Instant::now() >= d) => {
                    stopper.stop(StopReason::TimeLimit);
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {
                    // The guest takes the snapshot at its next check.
                    engine.increment_epoch();
                    next_snapshot = every.map(|e| Instant::now() + e);
                }
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    });
    Watch { done: Some(done), thread: Some(thread) }
}
