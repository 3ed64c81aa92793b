//! File-Based Catalogs: the FBC model, opm's render of bundles, templates, validation, upgrade
//! graphs and catalog generation.
//!
//! Data flows one way:
//! - [`load`] reads a catalog tree or stream into the serialisation layer [`declcfg`];
//! - [`model`] builds the semantic catalog (package → channels → bundles) with opm's rules;
//! - [`validate`] adds what opm does not check; [`upgrade`] computes OLM v0 and v1 upgrade
//!   paths; [`graph`] draws channels as mermaid or Graphviz;
//! - [`render`] turns a bundle directory into the `olm.bundle` opm produces; [`template`]
//!   expands `olm.template.basic` and `olm.semver`;
//! - [`generate`] writes the catalog of a release plan, its channels read from the plan's
//!   [`olmpack_model::upgrade_graph`];
//! - [`serialize`] prints a catalog as the JSON or YAML stream opm prints.
//!
//! Everything but [`load`] and [`render`]'s directory reader is pure. Versions and image
//! references are the model crate's ([`olmpack_model::version`], [`olmpack_model::pullspec`]).
#![warn(missing_docs)]

pub mod cover;
pub mod declcfg;
pub mod generate;
pub mod gojson;
pub mod gonum;
pub mod gosort;
pub mod goyaml;
pub mod graph;
pub mod ignore;
pub mod load;
pub mod model;
pub mod property;
pub mod render;
pub mod serialize;
pub mod split;
pub mod stream;
pub mod template;
pub mod upgrade;
pub mod validate;
