//! Signals: the first `SIGINT` or `SIGTERM` asks the run to stop (its profile is written, as after
//! a trap), a second one ends pathprof at once.

use anyhow::{Context, Result};
use pathprof_runtime::{StopReason, Stopper};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// A stopper that the process's `SIGINT` and `SIGTERM` ask to stop.
pub fn stopper() -> Result<Stopper> {
    let stopper = Stopper::new();
    let mut signals = Signals::new([SIGINT, SIGTERM]).context("cannot handle signals")?;
    let asked = stopper.clone();
    std::thread::spawn(move || {
        for signal in signals.forever() {
            let reason = if signal == SIGINT { StopReason::Interrupt } else { StopReason::Terminate };
            if asked.reason().is_some() {
                std::process::exit(reason.exit_code());
            }
            asked.stop(reason);
        }
    });
    Ok(stopper)
}
