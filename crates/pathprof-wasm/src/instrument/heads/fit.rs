//! Fitting a function's call digits into words of 64 bits [PPP07 §3.4.3]: the key beside the
//! paths ([`Fitter::fit`], dropping one call at a time, interesting calls last), each high key
//! ([`Fitter::fill`], one pass per word), and shallower heads for the calls that fit in none
//! ([`Fitter::shallower`]).

use super::{Level, Sites};
use crate::instrument::sink::Read;
use crate::module::ModuleInfo;
use pathprof_core::supergraph::{heaviest_path, CallDigit};
use pathprof_core::FunctionPlan;
use std::collections::HashSet;

/// How many IDs a function's digits may make: `per_key` per key, one key more for a function that
/// `throws`, at most `limit` in all.
#[derive(Clone, Copy)]
pub(super) struct Bound {
    pub(super) per_key: u64,
    pub(super) throws: bool,
    pub(super) limit: u128,
}

/// The calls that may fail to fit in a high key before [`Fitter::fill`] closes it.
const MAX_MISSES: usize = 16;

/// Fits the digits of the calls `sites` of a function planned as `plan` into one word within
/// `bound`, each call read in the space of `levels` at the depth it is given.
pub(super) struct Fitter<'a> {
    pub(super) info: &'a ModuleInfo,
    pub(super) sites: &'a Sites,
    pub(super) levels: &'a [Level],
    pub(super) plan: &'a FunctionPlan,
    pub(super) bound: Bound,
}

/// What [`Fitter::fit`] gives for a function's calls: how each is read, the depth of the head each
/// reads (`None`: none), the largest product of their radices along a path, and the calls dropped
/// (that wanted a head and read none), in the order they were dropped.
pub(super) struct Fitted {
    pub(super) read: Vec<(Read, CallDigit)>,
    pub(super) depths: Vec<Option<u8>>,
    pub(super) product: u64,
    pub(super) dropped: Vec<usize>,
}

impl Fitter<'_> {
    /// Call `c` read at `depth` (none: no digit).
    fn read_at(&self, c: usize, depth: Option<u8>) -> (Read, CallDigit) {
        let (_, _, callee, signature) = self.sites.sites[c];
        match depth {
            Some(d) => self.levels[usize::from(d)].read(self.info, callee, signature),
            None => (Read::NONE, CallDigit { radix: 1, callee: None, base: 0, dropped: false, word: 0 }),
        }
    }

    /// Every call read at the depth `wanted` gives it.
    fn read_all(&self, wanted: &[Option<u8>]) -> Vec<(Read, CallDigit)> {
        (0..wanted.len()).map(|c| self.read_at(c, wanted[c])).collect()
    }

    /// The largest product of radices along a path of calls read as `read` (a radix of 0 counted
    /// as 1: such a call is dropped), the IDs that makes within the bound (saturating), and that path.
    fn heaviest(&self, read: &[(Read, CallDigit)]) -> (u128, u128, Vec<u32>) {
        let mut weight = vec![1u128; self.plan.dag.num_nodes() as usize];
        for (&(_, block, _, _), r) in self.sites.sites.iter().zip(read) {
            weight[block] = weight[block].saturating_mul(u128::from(r.1.radix.max(1)));
        }
        let (product, path) = heaviest_path(&self.plan.dag, &weight);
        let keys = if self.bound.throws { product.saturating_add(1) } else { product };
        (product, u128::from(self.bound.per_key).saturating_mul(keys), path)
    }

    /// The largest product of radices along a path of calls read as `read`, or, when the IDs
    /// would not fit, that path.
    fn product(&self, read: &[(Read, CallDigit)]) -> Result<u64, Vec<u32>> {
        let (product, ids, path) = self.heaviest(read);
        match ids <= self.bound.limit {
            true => Ok(product as u64),
            false => Err(path),
        }
    }

    /// The IDs the calls would make, each reading the head `wanted` gives it, were none dropped
    /// (saturating): the limit with which [`Fitter::fit`] drops none.
    pub(super) fn need(&self, wanted: &[Option<u8>]) -> u128 {
        self.heaviest(&self.read_all(wanted)).1
    }

    /// The digits of the calls, each reading the head of the depth `wanted` gives it (none: it
    /// reads no head), whose IDs stay within the bound. Where they would not fit, calls are dropped
    /// (they add no digit) until they do, each the call of the largest radix on the path whose
    /// radices have the largest product — of those not in `taken`, while there are some [PPP07
    /// §3.4.3: the numbering truncates no edge an interesting segment takes].
    pub(super) fn fit(&self, wanted: &[Option<u8>], taken: &HashSet<usize>) -> Fitted {
        let mut depths = wanted.to_vec();
        let mut read = self.read_all(wanted);
        let mut dropped = Vec::new();
        let mut drop = |c: usize, read: &mut [(Read, CallDigit)], depths: &mut [Option<u8>]| {
            read[c] = (Read::NONE, CallDigit { radix: 1, dropped: true, ..read[c].1 });
            depths[c] = None;
            dropped.push(c);
        };
        // A call whose space is too large to read it in is dropped.
        for c in 0..read.len() {
            if read[c].1.radix == 0 {
                drop(c, &mut read, &mut depths);
            }
        }
        let product = loop {
            let path = match self.product(&read) {
                Ok(product) => break product,
                Err(path) => path,
            };
            let on_path: HashSet<usize> = path.iter().map(|&b| b as usize).collect();
            let victim = (read.iter().zip(&self.sites.sites).enumerate())
                .filter(|(_, (r, s))| r.1.radix > 1 && on_path.contains(&s.1))
                .max_by_key(|(c, (r, s))| (!taken.contains(c), r.1.radix, std::cmp::Reverse(s.0)))
                .map(|(c, _)| c);
            match victim {
                Some(c) => drop(c, &mut read, &mut depths),
                // The paths alone are too many for the bound (a plan never has so many).
                None => return Fitted { read, depths, product: 1, dropped },
            }
        };
        Fitted { read, depths, product, dropped }
    }

    /// One more word for the calls `left` that the words before dropped (in the order they were
    /// dropped), each reading the head `wanted` gives it: from the last dropped back, each that
    /// fits, until [`MAX_MISSES`] have not. A word tries the calls it takes and at most
    /// [`MAX_MISSES`] more, where [`Fitter::fit`] drops one call at a time: the words of a
    /// function of thousands of calls are filled in time about linear in its calls.
    pub(super) fn fill(&self, left: &[usize], wanted: &[Option<u8>]) -> Fitted {
        let mut read: Vec<(Read, CallDigit)> = (0..wanted.len()).map(|c| self.read_at(c, None)).collect();
        let mut depths = vec![None; wanted.len()];
        let (mut product, mut misses) = (1, 0);
        for &c in left.iter().rev() {
            let r = self.read_at(c, wanted[c]);
            if r.1.radix == 0 {
                continue;
            }
            let was = std::mem::replace(&mut read[c], r);
            match self.product(&read) {
                Ok(p) => (depths[c], product) = (wanted[c], p),
                Err(_) => {
                    read[c] = was;
                    misses += 1;
                    if misses == MAX_MISSES {
                        break;
                    }
                }
            }
        }
        let dropped: Vec<usize> = left.iter().copied().filter(|&c| depths[c].is_none()).collect();
        for &c in &dropped {
            read[c].1.dropped = true;
        }
        Fitted { read, depths, product, dropped }
    }

    /// Lets each of the calls `calls` that `fitted` dropped read, in that order, the deepest head
    /// no deeper than `wanted` gives it with which the IDs still fit, if one does: a shallower head
    /// still names every walk that goes no deeper into the callee, and no other call reads less
    /// than it would have.
    pub(super) fn shallower(&self, fitted: &mut Fitted, calls: &[usize], wanted: &[Option<u8>]) {
        for &c in calls {
            let Some(deepest) = wanted[c] else { continue };
            for d in (0..=deepest).rev() {
                let r = self.read_at(c, Some(d));
                if r.1.radix == 0 {
                    continue;
                }
                let was = std::mem::replace(&mut fitted.read[c], r);
                match self.product(&fitted.read) {
                    Ok(product) => {
                        (fitted.depths[c], fitted.product) = (Some(d), product);
                        fitted.dropped.retain(|&x| x != c);
                        break;
                    }
                    Err(_) => fitted.read[c] = was,
                }
            }
        }
    }
}

/// Shares of `total` for the `needs` of functions, fair by max-min: taken from the smallest need
/// up, each need gets all it asks when that is no more than an equal share of what is left, and
/// otherwise that equal share. The shares add up to at most `total` (to `total` when some need is
/// not met), none exceeds its need, none is below an equal share of `total` unless its need is,
/// and the needs not met get shares that differ by at most one.
pub(super) fn fair_shares(needs: &[u128], total: u128) -> Vec<u128> {
    let mut order: Vec<usize> = (0..needs.len()).collect();
    order.sort_unstable_by_key(|&i| needs[i]);
    let mut shares = vec![0; needs.len()];
    let mut left = total;
    for (given, &i) in order.iter().enumerate() {
        let equal = left / (needs.len() - given) as u128;
        shares[i] = needs[i].min(equal);
        left -= shares[i];
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::fair_shares;

    /// Every way of sharing `total` among small needs: the shares are the max-min fair ones, found
    /// by brute force as the largest cap `c` with which `min(need, c)` fits in `total`, what is
    /// left over (less than one per need not met) going to needs not met, one each.
    #[test]
    fn shares_are_max_min_fair() {
        for total in 0..=24u128 {
            for code in 0..6u32.pow(4) {
                let n = 1 + (code % 4) as usize;
                let needs: Vec<u128> = (0..n).map(|i| u128::from(code / 4 / 6u32.pow(i as u32) % 6) * 3).collect();
                let shares = fair_shares(&needs, total);
                let sum: u128 = shares.iter().sum();
                let cap = (0..=total).rev().find(|&c| needs.iter().map(|&x| x.min(c)).sum::<u128>() <= total).unwrap();
                let unmet: Vec<usize> = (0..n).filter(|&i| shares[i] < needs[i]).collect();
                for i in 0..n {
                    assert!(shares[i] <= needs[i], "{needs:?} of {total}: {shares:?}");
                    assert!(shares[i] >= needs[i].min(cap), "{needs:?} of {total}: {shares:?}, cap {cap}");
                    assert!(shares[i] <= needs[i].min(cap + 1), "{needs:?} of {total}: {shares:?}, cap {cap}");
                    assert!(shares[i] >= needs[i].min(total / n as u128), "{needs:?} of {total}: {shares:?}");
                }
                if unmet.is_empty() {
                    assert!(sum <= total);
                } else {
                    assert_eq!(sum, total, "{needs:?}: {shares:?}");
                }
            }
        }
        let needs = [u128::MAX, 5, u128::MAX];
        let half = u128::from(u64::MAX / 2 - 2);
        assert_eq!(fair_shares(&needs, u128::from(u64::MAX)), vec![half, 5, half]);
    }
}
