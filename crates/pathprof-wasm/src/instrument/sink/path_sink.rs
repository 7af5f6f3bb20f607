//! What one function's path ends do: the trait every sink implements.

use super::supergraph::Digit;
use crate::instrument::emit::Emitter;
use wasm_encoder::ValType;

/// Which path end a sink records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathEnd {
    /// At a loop header or cut block, inside the activation.
    Header,
    /// At the function's exit (a return, the end of the body, a tail call): the last path of the
    /// activation.
    Exit,
}

/// What one function's path ends do.
pub(crate) trait PathSink {
    /// Locals the sink's code uses (the emitter declares them; [`Emitter::sink_local`] names them).
    fn locals(&self) -> &'static [ValType] {
        &[]
    }
    /// Code at the function's entry.
    fn enter(&self, _e: &mut Emitter) {}
    /// Code that records the path whose ID is in the register.
    fn record(&self, e: &mut Emitter, end: PathEnd);
    /// Code on the way into a loop whose header ends paths: the fall-through into its `loop`
    /// operator, the only way in (a branch to a loop's label comes from inside it).
    fn enter_loop(&self, _e: &mut Emitter) {}
    /// Code that records the path ending at such a loop's header, after [`enter_loop`](Self::enter_loop)
    /// ran on the way in or a back edge came round: as at any header, unless the sink does less here.
    fn record_loop_header(&self, e: &mut Emitter) {
        self.record(e, PathEnd::Header)
    }
    /// Code where a stretch of straight-line code with the events `vector` starts (for a sink that
    /// counts events where they occur).
    fn stretch(&self, _e: &mut Emitter, _vector: &[u64]) {}
    /// Code just before a call (`call`, `call_indirect`, `call_ref`), which adds `digit` to the
    /// supergraph path (mode `ippp`).
    fn call(&self, _e: &mut Emitter, _digit: Option<Digit>) {}
    /// Code just after a call has returned.
    fn returned(&self, _e: &mut Emitter, _digit: Option<Digit>) {}
}
