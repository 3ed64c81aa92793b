//! olmpack's model: the pure middle of the pipeline **plan → model → validate → build →
//! lay out → write/push**. Everything here turns values into values; nothing reads or writes
//! files, talks to a network or parses command lines (the `olmpack` crate does, at the edges).
//!
//! - [`plan`]: the release plan (`olmpack.yaml`) types, parsed from text, and its JSON Schema.
//! - [`csv`]: the ClusterServiceVersion, typed, with every unknown field kept.
//! - [`upgrade_graph`]: the plan's upgrade graph, the one source of CSV and channel edges.
//! - [`version`]: semantic versions and OLM's version ranges (`skipRange`, dependencies).
//! - [`pullspec`]: container image references as OLM and the container runtimes accept them.
//! - [`report`]: validation findings, who refuses them, and their text/JSON/JUnit/Markdown form.
//! - [`upgrade`]: the one verdict of `upgrade check`, `upgrade test` and `upgrade olm` on an upgrade,
//!   and the one outcome (edge, verdict, findings) each gives, with its one JUnit mapping.
//! - [`yaml`]: YAML text to values and back, read the way Go's decoders read it.
//! - [`decode`]: values into typed views, strictly (as Go) or leniently, in OLM's words.
//! - [`objects`]: the parts of Deployments, Services and CRDs the builders and validators read, typed.
//! - [`names`]: Kubernetes name rules (DNS-1123).
//! - [`openshift`]: OpenShift's own version gates on a bundle (which releases' catalogs carry it,
//!   which cluster upgrades it blocks).
//! - [`file_name`]: one plain path component made of input text, the only way input names a file.
//! - [`pod`]: what a pod needs before it starts (the kubelet's view), and OLM's certificate mounts.
//! - [`container`]: one container of a pod as the process the kubelet starts (argv, env, volumes).
//! - [`choice`]: closed sets of values a user picks by name (output formats, levels).
//!
//! `cargo xtask lint` keeps this crate pure: it fails when an I/O or command-line crate enters
//! its dependency tree.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod choice;
pub mod container;
pub mod csv;
pub mod decode;
pub mod file_name;
pub mod names;
pub mod objects;
pub mod openshift;
pub mod plan;
pub mod pod;
pub mod pullspec;
pub mod report;
pub mod upgrade;
pub mod upgrade_graph;
pub mod version;
pub mod yaml;
