//! The layout of the profiler's memory as the instrumenter fills it: the sink's words, then counter
//! arrays, tables and the slots of loop and run counters, then the preferential slots, then the
//! `br_table` increment tables — within the budget the options set.

/// The profiler's memory so far, and its budget.
pub(crate) struct Layout {
    /// Bytes taken by the sink's words and the counters so far.
    pub counters: u64,
    pub tables: Vec<u8>,
    /// The preferential slots, with their Ball–Larus IDs: after the arrays and loop slots, so that
    /// these lie where they lie in exact counting (the same code at the same addresses).
    pub slots: Vec<u8>,
    /// Functions with at most this many paths may get a dense counter array.
    pub array_max_paths: u64,
    /// Most bytes of counters, slots and tables.
    pub max_bytes: u64,
}

impl Layout {
    /// An empty layout after the sink's `header_bytes`, with the budget of `array_max_paths` paths
    /// per array and `max_bytes` in all.
    pub fn new(header_bytes: u64, array_max_paths: u64, max_bytes: u64) -> Layout {
        Layout { counters: header_bytes, tables: Vec::new(), slots: Vec::new(), array_max_paths, max_bytes }
    }

    /// Takes `bytes` bytes after the counters so far; their offset.
    pub fn take(&mut self, bytes: u64) -> u32 {
        let offset = self.counters as u32;
        self.counters += bytes;
        offset
    }

    /// Whether a dense array of `n` counters fits in the budget.
    pub fn fits_array(&self, n: u64) -> bool {
        n <= self.array_max_paths && self.fits(8 * n)
    }

    /// Whether `bytes` more bytes of counters fit in the budget.
    pub fn fits(&self, bytes: u64) -> bool {
        self.counters + bytes <= self.max_bytes
    }

    /// Appends a table of increments of `bits` each (aligned to their width); its offset from the
    /// tables' base.
    pub fn table(&mut self, bits: u32, values: impl Iterator<Item = u64>) -> u32 {
        let width = (bits / 8) as usize;
        while !self.tables.len().is_multiple_of(width) {
            self.tables.push(0);
        }
        let offset = self.tables.len() as u32;
        for v in values {
            if bits == 32 {
                self.tables.extend_from_slice(&(v as u32).to_le_bytes());
            } else {
                self.tables.extend_from_slice(&v.to_le_bytes());
            }
        }
        offset
    }
}
