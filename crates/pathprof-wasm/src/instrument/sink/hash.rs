//! The hash sink: every path end calls the host ([`HostImport::CountPath`](crate::abi::HostImport)),
//! which counts it exactly in a hash table keyed by function and path ID. For functions whose paths
//! are too many for an array in the profiler's memory.

use super::path_sink::{PathEnd, PathSink};
use crate::instrument::emit::Emitter;

/// A function whose paths the host counts.
pub(crate) struct HashSink;

impl PathSink for HashSink {
    fn record(&self, e: &mut Emitter, _: PathEnd) {
        e.call_with_path();
    }
}
