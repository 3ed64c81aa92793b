//! The HTTPS webhook server: conversion (`/convert`), validation (`/validate`) and
//! defaulting (`/mutate`), with a serving certificate reloaded from files.
//!
//! The handlers are pure functions from request bytes to response bytes: every input gets a
//! well-formed review back (never a panic, never an empty body).

pub mod admission;
pub mod convert;
pub mod server;
pub mod tls_reload;
