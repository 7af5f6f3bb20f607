//! Branch hints: the custom section `metadata.code.branch_hint` of the Branch Hinting proposal,
//! which tells an engine which way each `br_if` and `if` of a function usually goes (Wasmtime's
//! Cranelift moves the code of the unlikely side out of line; V8's optimizing tier reads it too).
//!
//! [`branch_sites`] finds every two-way branch of a module's functions with the CFG edges it takes
//! (the blocks a profile counts its edges between); [`write_hints`] writes a module anew with a
//! section of hints in place of any it had, every other byte as it was; [`read_hints`] reads a
//! module's section back.
//!
//! A hint names its branch by the operator's offset from the start of the function's body (where
//! its locals are declared), and the function by its index in the function index space (imports
//! counted); each function's hints come in increasing order of offset, and the section precedes
//! the code section.

use crate::branches::each_cfg;
use crate::cfg::{self, OPCODE_IF};
use crate::module::{ModuleError, ModuleInfo};
use crate::sections::{sections, CUSTOM_SECTION};
use pathprof_core::Succ;
use std::collections::BTreeMap;
use wasm_encoder::{BranchHint, BranchHints, Section};
use wasmparser::{KnownCustom, Parser, Payload};

/// Name of the custom section of branch hints.
pub const BRANCH_HINT_SECTION: &str = "metadata.code.branch_hint";

/// Id of the code section.
const CODE_SECTION: u8 = 10;

/// Which operator a branch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BranchOp {
    BrIf,
    If,
    /// The typed-reference branches: reported with the others, never hinted.
    BrOnNull,
    BrOnNonNull,
    BrOnCast,
    BrOnCastFail,
}

impl BranchOp {
    /// The operator at the start of `bytes`, one of a two-way branch's.
    fn at(bytes: &[u8]) -> BranchOp {
        match bytes {
            [OPCODE_IF, ..] => BranchOp::If,
            [0xd5, ..] => BranchOp::BrOnNull,
            [0xd6, ..] => BranchOp::BrOnNonNull,
            [0xfb, 24, ..] => BranchOp::BrOnCast,
            [0xfb, 25, ..] => BranchOp::BrOnCastFail,
            _ => BranchOp::BrIf,
        }
    }

    /// The operator's name in the text format.
    pub fn name(self) -> &'static str {
        match self {
            BranchOp::BrIf => "br_if",
            BranchOp::If => "if",
            BranchOp::BrOnNull => "br_on_null",
            BranchOp::BrOnNonNull => "br_on_non_null",
            BranchOp::BrOnCast => "br_on_cast",
            BranchOp::BrOnCastFail => "br_on_cast_fail",
        }
    }

    /// Whether a branch hint may name it: the branch hinting proposal covers `br_if` and `if`.
    pub fn hintable(self) -> bool {
        matches!(self, BranchOp::BrIf | BranchOp::If)
    }
}

/// A two-way branch of a function body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchSite {
    /// The operator's offset from the start of the function's body, as hints name it.
    pub offset: u32,
    pub op: BranchOp,
    /// The block the branch ends.
    pub block: u32,
    /// Where the branch goes when its condition is non-zero (`br_if` branches, `if` enters its
    /// then-arm; a typed-reference branch goes to its label), and when it is zero.
    pub taken: Succ,
    pub not_taken: Succ,
}

/// The two-way branches of every defined function of `module` (`br_if`, `if` and the
/// typed-reference branches), by defined index, in order of offset (none for a function whose
/// body pathprof does not read into a CFG).
pub fn branch_sites(module: &[u8]) -> Result<Vec<Vec<BranchSite>>, ModuleError> {
    let (_, all) = each_cfg(module, |body, fcfg| {
        let bytes = body.as_bytes();
        let edges = fcfg.cfg.edges();
        let sites = fcfg.sites.iter().filter_map(|site| {
            let (cfg::SiteKind::Cond(taken, not_taken) | cfg::SiteKind::RefCond(taken, not_taken)) = site.kind else {
                return None;
            };
            let offset = fcfg.op_offsets[site.op];
            let op = BranchOp::at(&bytes[offset as usize..]);
            let (taken, not_taken) = (edges[taken as usize], edges[not_taken as usize]);
            Some(BranchSite { offset, op, block: taken.from, taken: taken.to, not_taken: not_taken.to })
        });
        Ok(sites.collect())
    })?;
    Ok(all.into_iter().map(Option::unwrap_or_default).collect())
}

/// Hints by function index, each by operator offset: `true` when the branch is likely taken.
pub type Hints = BTreeMap<u32, BTreeMap<u32, bool>>;

/// The hints of `module`'s branch hint section (none without one); a malformed section is an error.
pub fn read_hints(module: &[u8]) -> Result<Hints, ModuleError> {
    let err = |e: wasmparser::BinaryReaderError| ModuleError::Malformed(format!("branch hints: {e}"));
    let mut hints = Hints::new();
    for payload in Parser::new(0).parse_all(module) {
        let Payload::CustomSection(c) = payload.map_err(|e| ModuleError::Malformed(e.to_string()))? else { continue };
        let KnownCustom::BranchHints(reader) = c.as_known() else { continue };
        for func in reader {
            let func = func.map_err(err)?;
            let mine = hints.entry(func.func).or_default();
            for hint in func.hints {
                let hint = hint.map_err(err)?;
                mine.insert(hint.func_offset, hint.taken);
            }
        }
    }
    Ok(hints)
}

/// `module` with `hints` as its branch hint section, in place of any it had: the section goes right
/// before the code section, and every other byte is as it was. Hints of offsets that are not
/// branches of their function are refused, as an engine would ignore them.
pub fn write_hints(module: &[u8], hints: &Hints) -> Result<Vec<u8>, ModuleError> {
    let sites = branch_sites(module)?;
    let info = ModuleInfo::read(module)?;
    for (&func, offsets) in hints {
        let defined = func.checked_sub(info.num_imported_funcs).and_then(|k| sites.get(k as usize));
        let Some(defined) = defined else {
            return Err(ModuleError::Invalid(format!(
                "a branch hint names function {func}, which is not defined here"
            )));
        };
        if let Some(offset) = offsets.keys().find(|o| !defined.iter().any(|s| s.offset == **o && s.op.hintable())) {
            return Err(ModuleError::Invalid(format!(
                "a branch hint names offset {offset} of function {func}, where no br_if or if is"
            )));
        }
    }
    let mut section = Vec::new();
    let mut encoded = BranchHints::new();
    for (&func, offsets) in hints.iter().filter(|(_, o)| !o.is_empty()) {
        let of = offsets
            .iter()
            .map(|(&offset, &taken)| BranchHint { branch_func_offset: offset, branch_hint_value: u32::from(taken) });
        encoded.function_hints(func, of.collect::<Vec<_>>());
    }
    if !encoded.is_empty() {
        encoded.append_to(&mut section);
    }
    let mut out = Vec::with_capacity(module.len() + section.len());
    out.extend_from_slice(&module[..8]);
    let mut placed = false;
    for s in sections(module)? {
        if s.id == CODE_SECTION && !placed {
            out.extend_from_slice(&section);
            placed = true;
        }
        if s.id == CUSTOM_SECTION && s.name.as_deref() == Some(BRANCH_HINT_SECTION) {
            continue;
        }
        out.extend_from_slice(&module[s.range]);
    }
    if !placed && !section.is_empty() {
        return Err(ModuleError::Invalid("a module without code has no branches to hint".into()));
    }
    Ok(out)
}
