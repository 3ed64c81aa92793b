//! Images without a container engine: built byte-reproducibly into OCI image layouts, pushed
//! to registries, pulled, resolved to digests.
//!
//! Data flows one way: directories or file lists → deterministic layers ([`layer`]) → image
//! config and manifest ([`build`], [`operator`]) → an OCI image layout on disk ([`layout`]) →
//! a registry ([`push`]). [`resolve`] turns a tag into a digest; [`pull`] and [`unpack`] bring
//! an image's files back.
//!
//! Contract:
//! - **Reproducible.** The same files give the same manifest digest whenever and wherever they
//!   are built: tar entries sorted by path, every entry owned by uid/gid 0 with empty user and
//!   group names, mode 0644 (files) or 0755 (directories), mtime and the config's `created`
//!   taken from [`build::BuildOptions::source_date_epoch`] (the CLI reads `SOURCE_DATE_EPOCH`,
//!   default 0), no extended attributes, gzip with a fixed header (mtime 0, no file name,
//!   OS "unknown") and a fixed level. File permissions, owners and mtimes on disk, the path of
//!   the source directory and the wall clock do not reach the image. The compressed bytes
//!   depend on the compression library version pinned in `Cargo.lock`; the uncompressed
//!   layers (`diff_ids`) do not.
//! - **On a base image** ([`build::on_base`]) every base layer and setting is kept; the image's
//!   layer is appended and its labels, entrypoint and command set.
//! - **Outputs are whole or absent.** A layout is assembled in a sibling temp directory and
//!   renamed into place; a push uploads every blob (skipping those the registry already has),
//!   then manifests children first, each by digest, and moves the tag last, so a registry
//!   never serves a tag or manifest whose content is missing.
//! - **Credentials are never printed or logged**, at any level.
#![warn(missing_docs)]

pub mod auth;
pub mod base;
pub mod build;
pub mod digest;
pub mod fetch;
pub mod layer;
pub mod layout;
pub mod operator;
pub mod progress;
pub mod pull;
pub mod push;
pub mod realm;
pub mod reference;
pub mod registry;
pub mod resolve;
pub mod unpack;

/// OCI media types olmpack writes.
pub mod media_type {
    /// OCI image index (a list of per-platform manifests).
    pub const INDEX: &str = "application/vnd.oci.image.index.v1+json";
    /// OCI image manifest (one config plus its layers).
    pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
    /// OCI image config blob.
    pub const CONFIG: &str = "application/vnd.oci.image.config.v1+json";
    /// OCI layer: a gzip-compressed tar.
    pub const LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
    /// OCI layer: an uncompressed tar.
    pub const LAYER_TAR: &str = "application/vnd.oci.image.layer.v1.tar";
    /// Docker schema 2 image manifest, read like its OCI counterpart.
    pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
    /// Docker schema 2 manifest list, read like an OCI image index.
    pub const DOCKER_MANIFEST_LIST: &str =
        "application/vnd.docker.distribution.manifest.list.v2+json";
    /// Docker image config blob.
    pub const DOCKER_CONFIG: &str = "application/vnd.docker.container.image.v1+json";
    /// Docker layer: a gzip-compressed tar.
    pub const DOCKER_LAYER_GZIP: &str = "application/vnd.docker.image.rootfs.diff.tar.gzip";
    /// Docker layer: an uncompressed tar.
    pub const DOCKER_LAYER_TAR: &str = "application/vnd.docker.image.rootfs.diff.tar";

    /// True for image manifests (OCI or Docker schema 2).
    pub fn is_manifest(media_type: &str) -> bool {
        media_type == MANIFEST || media_type == DOCKER_MANIFEST
    }

    /// True for image indexes (OCI or Docker manifest lists).
    pub fn is_index(media_type: &str) -> bool {
        media_type == INDEX || media_type == DOCKER_MANIFEST_LIST
    }

    /// Every manifest media type olmpack reads.
    pub const ALL_MANIFESTS: &[&str] = &[MANIFEST, INDEX, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST];
}

/// The `index.json` annotation that names an image in an OCI layout (its tag).
pub const REF_NAME_ANNOTATION: &str = "org.opencontainers.image.ref.name";
