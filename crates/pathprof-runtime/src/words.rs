//! Words of an instance's profiler memory that a host thread uses while the program runs.
//!
//! The profiler's memory never grows (its minimum is its maximum, and no instruction grows it), so
//! its words keep their addresses for the life of the instance, as Wasmtime's own epoch counter
//! does for compiled code.

use anyhow::{ensure, Result};
use std::sync::atomic::{AtomicU32, Ordering};

/// A word of the profiler's memory, at a fixed address.
pub(crate) struct Word<T> {
    at: *const T,
}

impl<T> Clone for Word<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Word<T> {}

// SAFETY: the word lives in the instance's profiler memory, which outlives every holder of the word:
// the store owns the memory and the collector, and the collector's threads are joined as soon as the
// call into the instance returns, before the store can be dropped.
unsafe impl<T> Send for Word<T> {}

impl<T> Word<T> {
    /// The word at byte `offset` of `memory`.
    pub fn new(memory: &[u8], offset: u32) -> Result<Word<T>> {
        let (offset, size) = (offset as usize, std::mem::size_of::<T>());
        ensure!(
            offset.is_multiple_of(size) && offset + size <= memory.len(),
            "a word of the profiler's ABI lies outside the profiler's memory"
        );
        Ok(Word { at: memory[offset..].as_ptr() as *const T })
    }

    pub fn get(&self) -> &T {
        // SAFETY: the word is aligned and inside the memory (checked in `new`; the memory is
        // page-aligned), and the memory neither moves nor is freed while the word is in use (see
        // `Send`). Compiled code reads and writes it while this thread accesses it atomically, which
        // is how Wasmtime itself publishes its epoch counter to compiled code.
        unsafe { &*self.at }
    }

    /// The word `i` words after this one, which must lie inside the memory (checked by the caller).
    ///
    /// # Safety
    ///
    /// `i` words after this one must still be inside the memory.
    pub unsafe fn add(&self, i: usize) -> Word<T> {
        // SAFETY: as the caller promises.
        Word { at: unsafe { self.at.add(i) } }
    }
}

/// The sampling flag: the number of samples still to take (a path end samples while it is not 0).
pub(crate) type Flag = Word<AtomicU32>;

impl Flag {
    pub fn set(&self, samples: u32) {
        self.get().store(samples, Ordering::Relaxed);
    }
}
