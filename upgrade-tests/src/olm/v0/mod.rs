//! [`OlmEnv`]: the real OLM v0 on a [`crate::control_plane::TestEnv`], installing and
//! upgrading operators by Subscription — without a cluster, a kubelet or a container runtime.
//! What both OLMs share (step types, examples, progress, the webhook host, the error) is in
//! [`crate::olm`]; this module is OLM v0's own.
//!
//! What runs (all real binaries, pinned in `tools.toml`): etcd, kube-apiserver (with
//! `--enable-aggregator-routing=true`, so webhook calls go to EndpointSlice addresses),
//! kube-controller-manager (Deployments, ReplicaSets, garbage collection), kube-scheduler,
//! kwok (one fake node; pods become Running and Ready), OLM's olm-operator and
//! catalog-operator with OLM's CRDs, and `opm serve` for each catalog (a CatalogSource with
//! `spec.address`, so no catalog pod is needed; bundles carry `olm.bundle.object`, so no
//! unpack Job is needed).
//!
//! Webhooks OLM wires must answer: pods are fake, so a [`crate::olm::WebhookCommand`] is started as the
//! process of every Deployment OLM created a webhook serving certificate for, with that
//! certificate, and an EndpointSlice of OLM's webhook Service points at it (see [`crate::olm::webhooks`]).
//! EndpointSlices may not hold loopback addresses (the apiserver refuses them), so the slice
//! names this machine's own non-loopback IPv4 address, where a forwarder relays to the
//! command on 127.0.0.1. Without such an address webhooks cannot be served, and
//! [`OlmEnv::webhooks_available`] says so.
//!
//! Guarantees: every process dies with the [`OlmEnv`] (and with the test process); every file
//! lives in the [`crate::control_plane::TestEnv`]'s directory, removed on drop.

mod env;
mod install;
pub mod kubelet;
pub mod operator_group;
mod progress;
mod reset;
pub mod resources;
mod settle;
pub mod transient;

pub use env::{Catalog, OlmEnv, OlmEnvOptions};

use super::OlmError;
