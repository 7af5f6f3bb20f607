//! The weights of a call's digits in a function's preferential numbering [PPP07 §3.4.5 with §3.3]:
//! a table read when the call returns, by the digit the call added.
//!
//! Where the digits that interesting paths take are dense, the table is indexed by the digit
//! itself, up to the largest of them ([`DigitWeights::Direct`]). Where they are sparse — heads of
//! depth 1 and more, or heads read in the module's head space, name digits in the millions and
//! beyond — it is a cuckoo hash table of two halves ([`DigitWeights::Hashed`]): a digit's weight
//! is in the first half at its first hash, when the key stored there is the digit, and otherwise
//! in the second half at its second hash. Reading it takes two multiplications and three loads, no
//! loop. A digit that no interesting path takes reads some weight, as it reads 0 in a direct table:
//! the slot its preferential ID then indexes holds another supergraph ID, so the path is residual.

/// The multipliers tried for the two hashes, in pairs: odd constants of mixed bits.
fn multipliers(attempt: u64) -> [u64; 2] {
    let mix = |x: u64| {
        let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) | 1
    };
    [mix(2 * attempt), mix(2 * attempt + 1)]
}

/// A cuckoo hash table of digits and their weights: `2^bits` entries in each half.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashedWeights {
    pub bits: u32,
    pub multipliers: [u64; 2],
    /// The digit held at each entry of the first half ([`HashedWeights::EMPTY`] for none).
    pub keys: Vec<u64>,
    /// The weights of the two halves.
    pub weights: [Vec<u64>; 2],
}

impl HashedWeights {
    /// The key of an empty entry: no digit is `u64::MAX` (digits are below a radix of 64 bits).
    pub const EMPTY: u64 = u64::MAX;

    /// Entry of digit `d` in half `h`.
    pub fn index(&self, h: usize, d: u64) -> usize {
        index(self.multipliers[h], self.bits, d)
    }

    /// The weight digit `d` reads.
    pub fn weight(&self, d: u64) -> u64 {
        let first = self.index(0, d);
        if self.keys[first] == d {
            self.weights[0][first]
        } else {
            self.weights[1][self.index(1, d)]
        }
    }

    /// The table of the weights `of` digits (distinct, none `u64::MAX`), `None` when no pair of
    /// multipliers places them all within a table of `2^max_bits` entries a half.
    fn build(of: &[(u64, u64)], max_bits: u32) -> Option<HashedWeights> {
        // Halves of at least twice the digits: a load of at most 1/4 over both.
        let mut bits = (2 * of.len()).next_power_of_two().trailing_zeros().max(1);
        while bits <= max_bits {
            for attempt in 0..32 {
                if let Some(t) = place(of, bits, multipliers(attempt)) {
                    return Some(t);
                }
            }
            bits += 1;
        }
        None
    }

    /// Entries in both halves.
    pub fn entries(&self) -> usize {
        2 << self.bits
    }
}

fn index(multiplier: u64, bits: u32, d: u64) -> usize {
    (d.wrapping_mul(multiplier) >> (64 - bits)) as usize
}

/// Cuckoo insertion of every digit with its weight, `None` when one cannot be placed.
fn place(of: &[(u64, u64)], bits: u32, multipliers: [u64; 2]) -> Option<HashedWeights> {
    let size = 1usize << bits;
    let mut halves: [Vec<Option<(u64, u64)>>; 2] = [vec![None; size], vec![None; size]];
    for &entry in of {
        let mut moving = entry;
        let mut h = 0;
        let mut placed = false;
        for _ in 0..4 * bits + 8 {
            let i = index(multipliers[h], bits, moving.0);
            match halves[h][i].replace(moving) {
                None => {
                    placed = true;
                    break;
                }
                Some(evicted) => {
                    moving = evicted;
                    h ^= 1;
                }
            }
        }
        if !placed {
            return None;
        }
    }
    let keys = halves[0].iter().map(|e| e.map_or(HashedWeights::EMPTY, |(d, _)| d)).collect();
    let weights = halves.map(|half| half.iter().map(|e| e.map_or(0, |(_, w)| w)).collect());
    Some(HashedWeights { bits, multipliers, keys, weights })
}

/// The weights of one call's digits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DigitWeights {
    /// By digit, up to the largest an interesting path takes; every larger digit weighs 0.
    Direct(Vec<u64>),
    Hashed(HashedWeights),
}

impl DigitWeights {
    /// The table of the weights `of` digits (in increasing order): direct unless a hashed table
    /// would take less than half as many entries.
    pub fn new(of: &[(u64, u64)]) -> DigitWeights {
        let direct = of.last().map_or(0, |&(d, _)| d.saturating_add(1));
        if of.last().is_some_and(|&(d, _)| hashed_len(of.len(), d).is_some()) {
            if let Some(t) = HashedWeights::build(of, 40) {
                return DigitWeights::Hashed(t);
            }
        }
        let mut table = vec![0; direct as usize];
        for &(d, w) in of {
            table[d as usize] = w;
        }
        DigitWeights::Direct(table)
    }

    /// The weight digit `d` reads.
    pub fn weight(&self, d: u64) -> u64 {
        match self {
            DigitWeights::Direct(table) => usize::try_from(d).ok().and_then(|d| table.get(d)).copied().unwrap_or(0),
            DigitWeights::Hashed(t) => t.weight(d),
        }
    }

    /// The entries the table takes (a direct one's with its last 0, which every larger digit reads).
    pub fn len(&self) -> u64 {
        match self {
            DigitWeights::Direct(table) if table.is_empty() => 0,
            DigitWeights::Direct(table) => table.len() as u64 + 1,
            DigitWeights::Hashed(t) => t.entries() as u64,
        }
    }

    /// Whether the call has no weights (no interesting path takes it).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries of a table for `n` digits up to `largest`, as [`DigitWeights::new`] would make
    /// it (a hashed table may need more when its first sizes place no pair of multipliers).
    pub fn expected_len(n: usize, largest: u64) -> u64 {
        hashed_len(n, largest).unwrap_or(largest.saturating_add(2))
    }
}

/// The entries of a hashed table for `n` digits up to `largest` (about four a digit), when it is
/// the one to make: it takes less than half the entries of a table by digit, and that one would
/// take more than 64.
fn hashed_len(n: usize, largest: u64) -> Option<u64> {
    let direct = largest.saturating_add(1);
    let hashed = 4 * n.next_power_of_two() as u64;
    (direct > 2 * hashed && direct > 64).then_some(hashed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small generator (xorshift64*).
    fn next(state: &mut u64) -> u64 {
        *state ^= *state >> 12;
        *state ^= *state << 25;
        *state ^= *state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Whether a hashed table took the first size it tried.
    fn t_len_fits(table: &DigitWeights, n: usize) -> bool {
        table.len() == 4 * n.next_power_of_two() as u64
    }

    #[test]
    fn every_digit_reads_its_weight_direct_or_hashed() {
        let mut state = 0x1234_5678_9abc_def1u64;
        let mut hashed = 0;
        for case in 0..400u64 {
            let n = 1 + (next(&mut state) % 300) as usize;
            // Dense digits in some cases, sparse in a range up to 2^63 in others.
            let range = match case % 3 {
                0 => n as u64 * 2,
                1 => 1 << 20,
                _ => 1 << 63,
            };
            let mut digits: Vec<u64> = (0..n).map(|_| next(&mut state) % range).collect();
            digits.sort_unstable();
            digits.dedup();
            let of: Vec<(u64, u64)> = digits.iter().map(|&d| (d, next(&mut state) % 1000)).collect();
            let table = DigitWeights::new(&of);
            for &(d, w) in &of {
                assert_eq!(table.weight(d), w, "case {case}: digit {d}");
            }
            let largest = of.last().unwrap().0;
            if let DigitWeights::Hashed(t) = &table {
                hashed += 1;
                assert!(
                    t.entries() as u64 <= 8 * of.len().next_power_of_two() as u64,
                    "case {case}: {} entries",
                    t.entries()
                );
                assert!(t.keys.iter().filter(|&&k| k != HashedWeights::EMPTY).count() <= of.len());
            } else {
                assert_eq!(table.len(), largest + 2, "case {case}");
                // Past the largest digit, 0.
                assert_eq!(table.weight(largest + 1), 0);
            }
            if matches!(table, DigitWeights::Direct(_)) || t_len_fits(&table, of.len()) {
                assert_eq!(table.len(), DigitWeights::expected_len(of.len(), largest), "case {case}");
            }
        }
        assert!(hashed > 200, "sparse digits are hashed: {hashed} of 400");
    }

    #[test]
    fn a_dense_or_short_range_stays_direct() {
        let of: Vec<(u64, u64)> = (0..50).map(|d| (d, d * 3)).collect();
        assert!(matches!(DigitWeights::new(&of), DigitWeights::Direct(_)));
        let of = [(3, 1), (60, 2)];
        assert!(matches!(DigitWeights::new(&of), DigitWeights::Direct(_)));
        let of = [(3, 1), (1 << 40, 2)];
        let t = DigitWeights::new(&of);
        assert!(matches!(t, DigitWeights::Hashed(_)));
        assert_eq!((t.weight(3), t.weight(1 << 40), t.len()), (1, 2, 8));
        assert_eq!(DigitWeights::new(&[]).len(), 0);
    }
}
