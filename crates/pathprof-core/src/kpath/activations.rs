//! Per-activation cursors over one k-slab forest [KBL13 §3].

use super::{Cursor, KSlabForest, Options};

/// The k-SF of a program's activations, one cursor per activation on a stack: a call suspends the
/// caller's cursor and the return resumes it, so a caller's k-iteration paths never run through its
/// callees' paths [KBL13 §3: per-activation state].
#[derive(Clone, Debug)]
pub struct Activations {
    forest: KSlabForest,
    stack: Vec<Cursor>,
    items: u64,
}

impl Activations {
    pub fn new(k: usize) -> Self {
        Self::with_options(k, Options::default())
    }

    pub fn with_options(k: usize, options: Options) -> Self {
        Activations { forest: KSlabForest::with_options(k, options), stack: Vec::new(), items: 0 }
    }

    /// An activation starts (the `*` marker).
    #[inline]
    pub fn enter(&mut self) {
        self.items += 1;
        self.stack.push(Cursor::default());
    }

    /// The current activation ended a path. A path outside any activation starts one.
    #[inline]
    pub fn path(&mut self, label: u64) {
        if self.stack.is_empty() {
            self.stack.push(Cursor::default());
        }
        self.items += 1;
        self.forest.tend(&mut self.stack, 2);
        let top = self.stack.last_mut().expect("an activation is open");
        self.forest.push_at(top, label);
    }

    /// The current activation ended `n` paths `label` in a row.
    pub fn path_run(&mut self, label: u64, n: u64) {
        if self.stack.is_empty() {
            self.stack.push(Cursor::default());
        }
        self.items += n;
        let adds = self.forest.run_adds(n);
        self.forest.tend(&mut self.stack, adds);
        let top = self.stack.last_mut().expect("an activation is open");
        self.forest.push_run(top, label, n);
    }

    /// The current activation returned.
    #[inline]
    pub fn exit(&mut self) {
        self.items += 1;
        self.stack.pop();
    }

    /// Items seen: path IDs, entries and exits.
    pub fn items(&self) -> u64 {
        self.items
    }

    pub fn forest(&self) -> &KSlabForest {
        &self.forest
    }
}
