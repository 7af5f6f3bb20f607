//! The one list of modes, and the one parser of their grammar that every subcommand, the library and
//! the help text use.

use super::mode::{Mode, ModeKind};
use super::setting::{ModeFlags, Setting};
use super::{bl, events, ippp, ips, kbl, none, pep, ppp};
use anyhow::{bail, Result};

/// The modes pathprof defines, in the order the grammar lists them. A mode is added here, once.
pub const BUILT_IN: [&dyn ModeKind; 8] =
    [&none::Uninstrumented, &bl::Bl, &pep::Pep, &kbl::Kbl, &ppp::Ppp, &events::Events, &ips::Ips, &ippp::Ippp];

/// The modes a program knows: pathprof's own ([`Registry::built_in`]), and those a program using
/// pathprof as a library adds ([`Registry::with`]).
#[derive(Clone)]
pub struct Registry {
    kinds: Vec<&'static dyn ModeKind>,
}

impl Registry {
    /// pathprof's own modes.
    pub fn built_in() -> Registry {
        Registry { kinds: BUILT_IN.to_vec() }
    }

    /// The registry with `kind` added after the others; its name must be new.
    pub fn with(mut self, kind: &'static dyn ModeKind) -> Result<Registry> {
        if self.kind(kind.name()).is_some() {
            bail!("a mode named {} is registered already", kind.name());
        }
        self.kinds.push(kind);
        Ok(self)
    }

    pub fn kinds(&self) -> &[&'static dyn ModeKind] {
        &self.kinds
    }

    /// The kind named `name` (a profile's `mode`).
    pub fn kind(&self, name: &str) -> Option<&'static dyn ModeKind> {
        self.kinds.iter().find(|k| k.name() == name).copied()
    }

    /// Every form of the grammar, comma-separated: `none, bl, pep[:S[:T]][:dup], ...`.
    pub fn grammar(&self) -> String {
        self.kinds.iter().flat_map(|k| k.forms()).copied().collect::<Vec<_>>().join(", ")
    }

    /// Reads a mode in the grammar of its kind.
    pub fn parse(&self, spec: &str) -> Result<Mode> {
        let (name, settings) = match spec.split_once(':') {
            Some((name, settings)) => (name, Some(settings)),
            None => (spec, None),
        };
        match self.kind(name).and_then(|kind| kind.parse(spec, settings)) {
            Some(mode) => mode,
            None => bail!("unknown mode {spec:?} (valid modes: {})", self.grammar()),
        }
    }

    /// The modes of a comma-separated list, each once.
    pub fn parse_list(&self, specs: &[String]) -> Result<Vec<Mode>> {
        let mut out: Vec<Mode> = Vec::new();
        for spec in specs {
            let mode = self.parse(spec.trim())?;
            if out.iter().any(|m| m.to_string() == mode.to_string()) {
                bail!("mode {mode} is given twice");
            }
            out.push(mode);
        }
        Ok(out)
    }

    /// The mode `spec` with the settings of `flags` and the inputs `inputs`, each refused unless the
    /// mode takes it, and a setting of the grammar unless `spec` leaves it out.
    pub fn with_flags(&self, spec: &str, flags: &ModeFlags, inputs: &[Setting]) -> Result<Mode> {
        let mode = self.parse(spec)?;
        let given = flags.given();
        mode.check(&given)?;
        mode.check(inputs)?;
        if given.is_empty() {
            return Ok(mode);
        }
        let in_spec = spec
            .split_once(':')
            .is_some_and(|(name, settings)| self.kind(name).is_none_or(|k| k.gives_grammar_settings(settings)));
        if in_spec && given.iter().any(|s| s.in_grammar()) {
            bail!("--mode {spec} gives its settings already: give them either in the mode or as flags, not both");
        }
        mode.with_flags(flags)
    }
}

impl Mode {
    /// Reads one of pathprof's own modes.
    pub fn parse(spec: &str) -> Result<Mode> {
        Registry::built_in().parse(spec)
    }
}
