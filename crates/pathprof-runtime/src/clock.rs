//! Virtual clocks for deterministic runs: WASI's wall clock and monotonic clock as the program sees
//! them when every run must repeat exactly. Each starts at a fixed instant and advances by a fixed
//! step at every reading, so that a program that times itself, seeds from the time or waits for it
//! to pass sees the same values in every run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock};

/// The wall clock's first reading: 2000-01-01T00:00:00Z, in seconds since the Unix epoch.
pub const VIRTUAL_EPOCH_SECONDS: u64 = 946_684_800;

/// How far a virtual clock advances at each reading: one millisecond.
pub const VIRTUAL_STEP: Duration = Duration::from_millis(1);

/// A clock that reads [`VIRTUAL_STEP`] later at every reading.
#[derive(Debug, Default)]
pub struct VirtualClock {
    readings: AtomicU64,
}

impl VirtualClock {
    /// The time since the clock's start at this reading, in nanoseconds.
    fn next(&self) -> u64 {
        self.readings.fetch_add(1, Ordering::Relaxed).saturating_mul(VIRTUAL_STEP.as_nanos() as u64)
    }
}

impl HostWallClock for VirtualClock {
    fn resolution(&self) -> Duration {
        VIRTUAL_STEP
    }

    fn now(&self) -> Duration {
        Duration::from_secs(VIRTUAL_EPOCH_SECONDS) + Duration::from_nanos(self.next())
    }
}

impl HostMonotonicClock for VirtualClock {
    fn resolution(&self) -> u64 {
        VIRTUAL_STEP.as_nanos() as u64
    }

    fn now(&self) -> u64 {
        self.next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reading_is_one_step_later() {
        let wall = VirtualClock::default();
        assert_eq!(HostWallClock::now(&wall), Duration::from_secs(VIRTUAL_EPOCH_SECONDS));
        assert_eq!(HostWallClock::now(&wall), Duration::from_secs(VIRTUAL_EPOCH_SECONDS) + VIRTUAL_STEP);
        let monotonic = VirtualClock::default();
        let readings: Vec<u64> = (0..3).map(|_| HostMonotonicClock::now(&monotonic)).collect();
        assert_eq!(readings, [0, 1_000_000, 2_000_000]);
    }
}
