//! How many rounds a benchmark runs a program: at least `min_runs`, then until every variant's
//! median is stable (relative median absolute deviation at most `spread`), `max_runs` rounds, or
//! `budget_seconds` of runs, whichever comes first.

use std::time::Instant;

/// When a benchmark stops repeating a program's runs.
#[derive(Clone, Copy, Debug)]
pub struct Rounds {
    pub min_runs: usize,
    pub max_runs: usize,
    /// Stop once every variant's relative median absolute deviation is within this.
    pub spread: f64,
    /// No round starts after this many seconds of runs of one program.
    pub budget_seconds: f64,
}

impl Rounds {
    /// Whether `round` rounds, begun at `start`, of variants timed `times` are enough.
    pub(crate) fn enough<'a>(&self, round: usize, start: Instant, mut times: impl Iterator<Item = &'a [f64]>) -> bool {
        round >= self.min_runs
            && (round >= self.max_runs
                || start.elapsed().as_secs_f64() > self.budget_seconds
                || times.all(|t| spread(t) <= self.spread))
    }
}

/// The median of `v`.
pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The relative median absolute deviation of `v` (0 when its median is 0).
pub(crate) fn spread(v: &[f64]) -> f64 {
    let m = median(v);
    let dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    if m > 0.0 {
        median(&dev) / m
    } else {
        0.0
    }
}
