//! The reference operator for olmpack: the `WebApp` API at three versions, its lossless
//! conversion webhook, admission webhooks, a production-grade controller, and the deploy
//! manifests of every release, built from code.
//!
//! Data flows one way: [`api`] types → pure [`conversion`] and reconcile planning → I/O at
//! the edges ([`webhook::server`], [`controller`]).

#![forbid(unsafe_code)]

pub mod api;
pub mod controller;
pub mod conversion;
pub mod manifests;
pub mod metrics;
pub mod releases;
pub mod run;
pub mod webhook;
