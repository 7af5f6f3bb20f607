//! Stopping a run before the program ends, without losing its profile, and looking at it while it
//! runs. On a signal or when a time limit passes, the guest is interrupted at its next function
//! entry or loop header, and the run ends as a trap ends it — what the probes recorded is read, the
//! activations still open are counted — with the reason recorded. Two mechanisms reach a guest
//! that never calls the host:
//!
//! * **Polls** (core modules on an engine without epoch interruption, the default of `pathprof run`
//!   and `bench`): the module loads from its poll page at every function entry and loop header
//!   (`pathprof_wasm::polls`); to stop it, the stopper takes the page's permissions away, and the
//!   guest's next poll traps ([`PollGuard`]).
//! * **Epochs** (components, and runs that take snapshots): Wasmtime's epoch interruption, which
//!   the stopper advances. Snapshots use the same interruption: at each, the guest pauses while its
//!   collector reads what the probes recorded so far, then goes on.
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
    /// The poll pages of the runs going on, and the number of the next one.
    polls: Mutex<(Vec<PollPage>, u64)>,
}

/// A run's poll page: `len` bytes at `addr`, and whether the stopper has closed it.
struct PollPage {
    id: u64,
    addr: usize,
    len: usize,
    closed: bool,
}

impl PollPage {
    /// Takes the page's permissions away (`open == false`) or gives them back.
    fn set(&mut self, open: bool) {
        #[cfg(unix)]
        {
            let prot = if open { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_NONE };
            // SAFETY: the page is the whole of a memory that the run's store keeps mapped until its
            // guard, which removes it under the same lock, is gone; nothing but the guest's polls
            // reads it while it is closed.
            let done = unsafe { libc::mprotect(self.addr as *mut libc::c_void, self.len, prot) } == 0;
            if done {
                self.closed = !open;
            }
        }
        #[cfg(not(unix))]
        let _ = open;
    }
}

/// A run's poll page, registered with its stopper while the guest runs; [`PollGuard::release`]
/// (or dropping it) gives the page its permissions back and tells whether the stopper had closed it
/// — then the trap the guest ended with is the stop.
pub(crate) struct PollGuard {
    stopper: Stopper,
    id: u64,
}

impl PollGuard {
    /// Ends the registration; whether the page had been closed.
    pub(crate) fn release(self) -> bool {
        self.remove()
    }

    fn remove(&self) -> bool {
        let mut polls = self.stopper.0.polls.lock().expect("the stopper's lock");
        let Some(i) = polls.0.iter().position(|p| p.id == self.id) else { return false };
        let mut page = polls.0.swap_remove(i);
        let closed = page.closed;
        if closed {
            page.set(true);
        }
        closed
    }
}

impl Drop for PollGuard {
    fn drop(&mut self) {
        self.remove();
    }
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
        for page in self.0.polls.lock().expect("the stopper's lock").0.iter_mut() {
            page.set(false);
        }
    }

    /// Registers a run's poll `page` (a poll memory's bytes), closed at once if a stop was already
    /// asked for; `None` where pages cannot be closed (not a Unix host, or a page not aligned to
    /// the host's pages).
    pub(crate) fn poll(&self, page: &mut [u8]) -> Option<PollGuard> {
        #[cfg(unix)]
        {
            // SAFETY: sysconf has no preconditions.
            let host_page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
            let (addr, len) = (page.as_mut_ptr() as usize, page.len());
            if host_page == 0 || len == 0 || !addr.is_multiple_of(host_page) || !len.is_multiple_of(host_page) {
                return None;
            }
            let mut polls = self.0.polls.lock().expect("the stopper's lock");
            let id = polls.1;
            polls.1 += 1;
            let mut page = PollPage { id, addr, len, closed: false };
            if self.reason().is_some() {
                page.set(false);
            }
            polls.0.push(page);
            Some(PollGuard { stopper: self.clone(), id })
        }
        #[cfg(not(unix))]
        {
            let _ = page;
            None
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
