//! What the test saw, summed over the cases and printed at the end.

use std::collections::BTreeMap;

#[derive(Default)]
pub struct Stats {
    /// `ppp`: functions counting interesting paths in slots; paths compared with `bl`'s, and the
    /// residual ones among them.
    pub ppp_slot_functions: u64,
    pub ppp_paths: u64,
    pub ppp_residual: u64,
    pub cases: u64,
    pub variants: BTreeMap<&'static str, u64>,
    pub exception_cases: u64,
    pub import_cases: u64,
    pub instrumented_functions: u64,
    pub skipped_functions: u64,
    pub skip_reasons: BTreeMap<String, u64>,
    pub hash_functions: u64,
    pub overflow_cut_functions: u64,
    pub loop_counters: u64,
    pub run_counters: u64,
    pub wide_registers: u64,
    pub loops: u64,
    pub br_tables: u64,
    pub ref_branches: u64,
    pub calls_compared: u64,
    pub results_matched: u64,
    pub traps_matched: u64,
    pub out_of_fuel: u64,
    pub stack_overflows: u64,
    pub other_errors: u64,
    pub uncallable: u64,
    pub instantiation_traps: u64,
    pub sessions: u64,
    pub paths_counted: u64,
    pub header_paths: u64,
    pub flow_functions: u64,
    pub trap_codes: BTreeMap<String, u64>,
    pub flow_blocks: u64,
    pub flow_paths: u64,
    /// Paths ended by an exception, in every flow checked.
    pub flow_throws: u64,
    /// Functions instrumented in `pep` or `kbl` mode whose plan equals `bl`'s, and the others.
    pub plans_identical: u64,
    pub plans_differ: u64,
    /// `kbl` functions counted through the stream and in arrays; `bl` functions `kbl` skips.
    pub stream_functions: u64,
    pub stream_singles: u64,
    pub stream_array_functions: u64,
    /// Functions whose `bl` IDs exceed 32 bits, cut further for the stream, and the blocks whose
    /// frequencies their streamed paths were compared on.
    pub stream_cut: u64,
    /// Samples of `pep-buffer` passed to the host by functions with 64-bit path IDs.
    pub host_samples: u64,
    pub stream_cut_blocks: u64,
    /// Sets of instances whose `pep` and `kbl` counts were compared with `bl`'s, and how many of
    /// them at a trap (with the open activations of the backtrace).
    pub mode_sessions: u64,
    pub trap_sessions: u64,
    pub open_activations: u64,
    /// Paths (distinct per set of instances) and path ends compared.
    pub sampled_paths: u64,
    pub sampled_ends: u64,
    pub buffered_samples: u64,
    pub stream_paths: u64,
    pub stream_ends: u64,
    /// Stream items decoded, run items among them, activations entered, and host drains of a full
    /// buffer.
    pub stream_items: u64,
    pub stream_runs: u64,
    pub stream_entries: u64,
    pub stream_flushes: u64,
    /// Traps whose backtrace may be cut, so that their open activations are not checked, and traps
    /// of a tail call after its function's exit item.
    pub deep_traps: u64,
    pub tail_call_traps: u64,
    /// Activations on the stack at a trap that had not streamed a path yet.
    pub unentered_activations: u64,
    /// Calls out of fuel whose samples and stream were compared, and the path ends compared.
    pub fuel_checks: u64,
    pub fuel_ends: u64,
    pub fuel_flushes: u64,
    /// `kbl-burst`: functions instrumented for bursts, those of them with loop or run counters,
    /// counted in an array (one path per activation), streamed always (too large for an array), and
    /// cut further for 32-bit IDs.
    pub burst_functions: u64,
    pub burst_counted: u64,
    pub burst_array_functions: u64,
    pub burst_streamed: u64,
    pub burst_cut: u64,
    /// `kbl-burst`: sets of instances with the burst flag set and the stream items compared with
    /// `kbl`'s; sets with the flag clear and their items (of functions streamed always); paths and
    /// path ends compared with `bl`'s, and the path ends in the arrays of functions instrumented
    /// for bursts.
    pub burst_sessions: u64,
    pub burst_items: u64,
    pub burst_quiet_sessions: u64,
    pub burst_quiet_items: u64,
    pub burst_paths: u64,
    pub burst_ends: u64,
    pub burst_array_ends: u64,
    /// `kbl-burst`: functions counted in a table, and the path ends their tables could not hold,
    /// which the stream counted.
    pub burst_table_functions: u64,
    pub burst_counted_ends: u64,
    /// `kbl-burst`: calls out of fuel whose stream was compared with `kbl`'s (the flag set).
    pub burst_fuel_checks: u64,
    /// `ips`: functions streamed, and those cut further for 32-bit IDs (and the blocks whose
    /// frequencies their paths were compared on); paths and path ends compared with `bl`'s; items
    /// decoded, call markers among them, host drains of a full buffer.
    pub segment_functions: u64,
    /// `ips`: cases by the depth of their IPSs.
    pub segment_depths: BTreeMap<usize, u64>,
    pub segment_cut: u64,
    pub segment_cut_blocks: u64,
    pub segment_paths: u64,
    pub segment_ends: u64,
    pub segment_items: u64,
    pub segment_markers: u64,
    pub segment_flushes: u64,
    /// `ips`: IPSs (distinct per set of instances) and their executions; paths whose calls start
    /// them all as often as the path ran; calls of IPSs matched with a call site that can reach the
    /// callee, and with one that can call a function that streams nothing; collectors whose own
    /// consumer folded the same IPSs; path ends left uncounted after a caught exception.
    pub segments: u64,
    pub segment_executions: u64,
    pub segment_roots: u64,
    pub segment_callees: u64,
    pub segment_silent_calls: u64,
    pub segment_outputs: u64,
    pub segment_mismatched: u64,
    /// `ips`: calls out of fuel whose stream was compared with `pep`'s samples.
    pub segment_fuel_checks: u64,
    /// Event modes: functions whose path ends add event vectors; functions and sets of instances
    /// whose events were compared with those of `bl`'s paths, and the events compared; merge-cut
    /// blocks whose frequencies were compared.
    pub decoded_functions: u64,
    pub event_functions: u64,
    pub event_sessions: u64,
    pub events_compared: u64,
    pub merge_blocks: u64,
}
