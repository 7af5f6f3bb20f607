//! Frontend-agnostic path profiling algorithms.
//!
//! The data flows one way through these modules:
//!
//! * [`cfg`] — a control-flow graph of basic blocks, as any frontend builds it;
//! * [`graph`] — flat adjacency lists, through which the graphs' edges are walked;
//! * [`dag`] — the Ball–Larus DAG: paths start at the entry and at cut blocks (loop headers, and merge
//!   blocks cut to keep path IDs within 64 bits) and end at exits and cut blocks;
//! * [`events`] — event counts from path counts, and the most a lost path can hide [EVT23 §4.2];
//! * [`estimate`] — static edge-frequency estimates from loop depth, used until a profile exists;
//! * [`numbering`] — Ball–Larus path numbering [PEP05 Fig. 2] and smart numbering [PEP05 Fig. 4];
//! * [`placement`] — increments on the chords of a maximum spanning tree (Ball & Larus 1996);
//! * [`regen`] — path regeneration, from a path ID back to its edges and blocks;
//! * [`plan`] — the whole pipeline for one function, with selective path cutting when the path count
//!   would not fit in 64 bits;
//! * [`ppp`] — preferential path numbering: compact IDs for a set of interesting paths [PPP07 §3.3];
//! * [`ips`] — interprocedural path segments: subpaths that end at calls, followed into callees
//!   [PPP07 §3.4.1];
//! * [`supergraph`] — depth-1 IPSs numbered as paths of a supergraph: each call adds the callee's
//!   first path as one more choice on the caller's path [PPP07 §3.4.3–3.4.5];
//! * [`kpath`] — multi-iteration paths: k-slab forest and k-iteration path forest [KBL13];
//! * [`accuracy`] — accuracy metrics of sampled profiles [PEP05 §6.3–6.4];
//! * [`hash`] — a fast hasher for the integer keys of the forests and the simulator's tables;
//! * [`hpp`] — the hardware path profiler as a simulator: path stack, Hot Path Table, branch queue
//!   [PPP07 ch. 5];
//! * [`profile`] — the profile data model and its JSON form (docs/profile-format.md).
//!
//! Nothing here knows about WebAssembly: the tests run on the papers' own figures.

pub mod accuracy;
pub mod cfg;
pub mod dag;
pub mod estimate;
pub mod events;
pub mod graph;
pub mod hash;
pub mod hpp;
pub mod ips;
pub mod kpath;
pub mod numbering;
pub mod placement;
pub mod plan;
pub mod ppp;
pub mod profile;
pub mod regen;
pub mod supergraph;

pub use cfg::{BlockId, Cfg, CfgEdge, CfgEdgeId, Succ};
pub use dag::{Dag, DagEdge, DagEdgeId, DagEdgeKind, LoopCut, NodeId};
pub use numbering::Numbering;
pub use placement::Placement;
pub use plan::{ExtraCuts, FunctionPlan, PlanOptions};
