//! What a mode may be given besides its settings: a profile whose edge frequencies guide the
//! numbering, a profile whose hot functions are the only ones instrumented, the interesting paths
//! of preferential profiling, the events to count, and the core module of a component to profile.

use crate::files::sha256_hex;
use crate::modes::ips::TestedSegments;
use crate::modes::Setting;
use crate::profiled::core_module_of;
use anyhow::{bail, Context, Result};
use pathprof_core::profile::{Endpoint, FunctionProfile, InterestingRule, PathCount, Profile, U64};
use pathprof_wasm::component::CoreModulePath;
use pathprof_wasm::events::EventSpec;
use std::collections::HashMap;

/// What instrumenting may take besides the module and the mode.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inputs<'a> {
    /// A profile of the same module: its edge frequencies place the increments on cold edges.
    pub edge_profile: Option<&'a Profile>,
    /// The functions to instrument, hot in a guiding profile (`pep` and `bl`).
    pub hot: Option<&'a HotFunctions>,
    /// The paths that are interesting (mode `ppp`).
    pub interesting: Option<&'a Interesting>,
    /// The events to count (mode `events`; every built-in class when `None`).
    pub events: Option<&'a EventSpec>,
    /// For a component: the core module to profile, instead of the program's module found as
    /// `ComponentInfo::program` finds it.
    pub core_module: Option<&'a CoreModulePath>,
}

impl Inputs<'_> {
    /// The settings these inputs give, which the mode must take.
    pub fn given(&self) -> Vec<Setting> {
        Setting::given([
            (self.edge_profile.is_some(), Setting::EdgeProfile),
            (self.hot.is_some(), Setting::HotFrom),
            (self.interesting.is_some(), Setting::Interesting),
            (self.events.is_some(), Setting::Events),
        ])
    }
}

/// Why a function left alone by `--hot-from` has no probes.
pub const COLD_REASON: &str = "cold in the guiding profile";

/// The functions that carried a share of a guiding profile's branch flow (each path's count times
/// its branches, what PEP's accuracy weighs [PEP05 §6.3]; its path executions, or samples, where it
/// has no branch flow): the only ones instrumented, as an adaptive VM instruments only the methods
/// it optimizes [PEP05 §3.4]. A function whose paths take no branch, however often, adds nothing
/// an accuracy measures, and is left alone.
#[derive(Clone, Debug, PartialEq)]
pub struct HotFunctions {
    /// The share of the flow they carried: at least the share asked for.
    pub share: f64,
    /// Their indices: the hottest first, until their flow reaches the share asked for.
    pub functions: Vec<u32>,
    /// For a component: the core module the profile profiled.
    pub core_module: Option<CoreModulePath>,
}

impl HotFunctions {
    /// The functions of `profile` (named `name`, a profile of `module`) that carried `share` (in
    /// (0, 1]) of its branch flow: ranked by flow, as few as reach the share.
    pub fn of(module: &[u8], name: &str, profile: &Profile, share: f64) -> Result<HotFunctions> {
        check_share(share).with_context(|| format!("--hot-from {name}"))?;
        if profile.module.sha256 != sha256_hex(module) {
            bail!("{name} is a profile of another module ({})", profile.module.path);
        }
        let mut hot = HotFunctions::of_functions(&profile.functions, share)?;
        hot.core_module = core_module_of(&profile.module);
        Ok(hot)
    }

    /// The functions of `functions` that carried `share` (in (0, 1]) of their branch flow.
    pub fn of_functions(functions: &[FunctionProfile], share: f64) -> Result<HotFunctions> {
        check_share(share)?;
        let flow = |f: &FunctionProfile| f.paths().iter().map(|p| u128::from(p.count.0) * u128::from(p.branches)).sum();
        let executions = |f: &FunctionProfile| f.paths().iter().map(|p| u128::from(p.count.0)).sum();
        let weight: &dyn Fn(&FunctionProfile) -> u128 =
            if functions.iter().any(|f| flow(f) > 0) { &flow } else { &executions };
        let mut ranked: Vec<(u128, u32)> = functions.iter().map(|f| (weight(f), f.index)).collect();
        ranked.retain(|&(n, _)| n > 0);
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let total: u128 = ranked.iter().map(|r| r.0).sum();
        if total == 0 {
            bail!("the guiding profile counted no path: it cannot say which functions are hot");
        }
        let (mut functions, mut carried) = (Vec::new(), 0u128);
        for (n, index) in ranked {
            if carried as f64 >= share * total as f64 {
                break;
            }
            carried += n;
            functions.push(index);
        }
        Ok(HotFunctions { share: carried as f64 / total as f64, functions, core_module: None })
    }
}

/// Refuses a share of the hot functions outside (0, 1].
pub fn check_share(share: f64) -> Result<()> {
    if !(share > 0.0 && share <= 1.0) {
        bail!("the share must lie in (0, 1], not {share}");
    }
    Ok(())
}

/// The interesting paths of preferential profiling: those that ran in given profiles of the same
/// module (a test suite's runs, whose union they take), all of them or the hottest as a rule says
/// [PPP07 §3.1, §3.5].
#[derive(Clone, Debug)]
pub struct Interesting {
    /// The profiles, each with the name it was given by.
    pub names: Vec<String>,
    /// The chosen paths of every function, by index, each once, with its count summed over the
    /// profiles.
    pub paths: HashMap<u32, Vec<PathCount>>,
    /// For a component: the core module the profiles profiled.
    pub core_module: Option<CoreModulePath>,
    /// How they were chosen, and the share of the profiles' executions they carried.
    pub rule: InterestingRule,
    pub share: f64,
    /// When the profiles are `ips` profiles: their interesting path segments, chosen by the same
    /// rule (mode `ips`).
    pub segments: Option<TestedSegments>,
}

impl Default for Interesting {
    /// No interesting path yet: every executed path of the profiles [`Interesting::add`] adds.
    fn default() -> Interesting {
        Interesting {
            names: Vec::new(),
            paths: HashMap::new(),
            core_module: None,
            rule: InterestingRule::Executed,
            share: 1.0,
            segments: None,
        }
    }
}

impl Interesting {
    /// The paths chosen by `rule` among those that ran in `profiles` (`(name, profile)`), which
    /// must be profiles of the module `module`.
    pub fn of(module: &[u8], profiles: &[(String, Profile)], rule: InterestingRule) -> Result<Interesting> {
        let sha = sha256_hex(module);
        let mut names = Vec::new();
        let mut core_module = None;
        for (name, profile) in profiles {
            if profile.module.sha256 != sha {
                bail!("{name} is a profile of another module ({})", profile.module.path);
            }
            if !names.is_empty() && core_module_of(&profile.module) != core_module {
                bail!("{name} profiles another core module of the component than {}", names[0]);
            }
            core_module = core_module_of(&profile.module);
            names.push(name.clone());
        }
        let functions = profiles.iter().map(|(_, p)| &p.functions[..]);
        let mut out = Interesting::choose(functions, rule)?;
        (out.names, out.core_module) = (names, core_module);
        out.segments = TestedSegments::of(profiles, rule, &out.paths)?;
        Ok(out)
    }

    /// The paths chosen by `rule` among those that ran in the profiles of `functions`: a path that
    /// ran in several (the same function, endpoints and blocks) is one path, its counts added.
    pub fn choose<'a>(
        functions: impl IntoIterator<Item = &'a [FunctionProfile]>,
        rule: InterestingRule,
    ) -> Result<Interesting> {
        let mut ran: HashMap<(u32, Endpoint, Endpoint, Vec<u32>), PathCount> = HashMap::new();
        for f in functions.into_iter().flatten() {
            for p in f.paths().iter().filter(|p| p.count.0 > 0) {
                let key = (f.index, p.start, p.end, p.blocks.clone());
                match ran.get_mut(&key) {
                    Some(q) => {
                        q.count = U64(q
                            .count
                            .0
                            .checked_add(p.count.0)
                            .context("the interesting paths' counts add up past 2^64 - 1")?)
                    }
                    None => {
                        ran.insert(key, p.clone());
                    }
                }
            }
        }
        let mut ranked: Vec<(u32, PathCount)> = ran.into_iter().map(|((f, ..), p)| (f, p)).collect();
        // Ties by function and path, so that the choice is the same every time.
        ranked.sort_by(|(f, p), (g, q)| f.cmp(g).then(p.id.cmp(&q.id)));
        let (chosen, share) = pick(ranked, |p| p.count.0, rule)?;
        let mut paths: HashMap<u32, Vec<PathCount>> = HashMap::new();
        for (f, p) in chosen {
            paths.entry(f).or_default().push(p);
        }
        for list in paths.values_mut() {
            list.sort_by_key(|p| p.id);
        }
        Ok(Interesting { names: Vec::new(), paths, core_module: None, rule, share, segments: None })
    }

    /// Adds every executed path of `functions`, from a profile named `name`.
    pub fn add(&mut self, name: &str, functions: &[FunctionProfile]) {
        self.names.push(name.to_string());
        for f in functions {
            let executed = f.paths().iter().filter(|p| p.count.0 > 0).cloned();
            self.paths.entry(f.index).or_default().extend(executed);
        }
    }
}

/// The items of `ranked` (each with the function it is grouped by) that `rule` chooses by their
/// `count`, the hottest first (a stable sort: ties keep their order), and the share of all the
/// counts they carry.
pub(crate) fn pick<T>(
    mut ranked: Vec<(u32, T)>,
    count: impl Fn(&T) -> u64,
    rule: InterestingRule,
) -> Result<(Vec<(u32, T)>, f64)> {
    ranked.sort_by_key(|(_, x)| std::cmp::Reverse(count(x)));
    let total: u128 = ranked.iter().map(|(_, x)| u128::from(count(x))).sum();
    let chosen: Vec<(u32, T)> = match rule {
        InterestingRule::Executed => ranked,
        InterestingRule::Coverage { share } => {
            check_share(share).context("--interesting-coverage")?;
            let mut carried = 0u128;
            ranked
                .into_iter()
                .take_while(|(_, x)| {
                    let more = (carried as f64) < share * total as f64;
                    carried += u128::from(count(x));
                    more
                })
                .collect()
        }
        InterestingRule::Top { per_function } => {
            if per_function == 0 {
                bail!("--interesting-top must be at least 1");
            }
            let mut taken: HashMap<u32, u32> = HashMap::new();
            ranked
                .into_iter()
                .filter(|(f, _)| {
                    let n = taken.entry(*f).or_default();
                    *n += 1;
                    *n <= per_function
                })
                .collect()
        }
    };
    let carried: u128 = chosen.iter().map(|(_, x)| u128::from(count(x))).sum();
    Ok((chosen, if total == 0 { 1.0 } else { carried as f64 / total as f64 }))
}
