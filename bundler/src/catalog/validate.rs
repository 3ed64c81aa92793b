//! `olmpack catalog validate`: opm's checks plus the upgrade-graph checks opm does not make.
//!
//! Contract:
//! - Errors are exactly the problems `opm validate` rejects (load rules and the model rules in
//!   [`super::model`]); so a catalog passes here (exit 0) exactly when it passes `opm validate`.
//!   Unlike opm, every problem is reported, not the first.
//! - Warnings are upgrade-graph defects opm accepts and OLM then mishandles (rule ids below);
//!   `--strict` ([`ValidateOptions::strict`]) turns them into failures.
//! - Infos explain, per bundle, where OLM v0 and OLM v1 would take an installed copy when the
//!   two differ.
//!
//! - YAML read leniently as opm reads it (a key given twice keeps its last value) is a warning,
//!   `catalog/lenient-yaml`, never a load error: opm validates such a catalog.
//!
//! Extra rules (warnings): `catalog/skiprange-not-on-head`, `catalog/skiprange-covers-nothing`,
//! `catalog/skiprange-covers-newer`, `catalog/skiprange-prunes-live-version`,
//! `catalog/no-upgrade-into`, `catalog/replaces-newer-version`; info:
//! `catalog/upgrade-path-differs`.
#![warn(missing_docs)]

use std::path::Path;

use super::declcfg::ChannelEntry;
use super::load::{LoadError, LoadOptions, LoadedCatalog, load_dir_with};
use super::model::{Channel, Model, Package};
use super::upgrade;
use super::version::{Range, Version, cmp_versions};
use crate::report::{Finding, Report, Severity};

/// How strictly a catalog is validated and what extra information is reported.
#[derive(Clone, Copy, Debug, Default)]
pub struct ValidateOptions {
    /// Warnings fail validation too.
    pub strict: bool,
    /// Add `catalog/upgrade-path-differs` infos.
    pub upgrade_paths: bool,
}

/// Loads and validates a catalog directory. The returned model is lean (large property values
/// replaced, see [`LoadOptions::lean`]): enough for graphs and upgrade paths.
pub fn validate_dir(dir: &Path, options: ValidateOptions) -> Result<(Report, Model), LoadError> {
    let loaded = load_dir_with(dir, LoadOptions { lean: true })?;
    Ok(validate_loaded(&dir.display().to_string(), loaded, options))
}

/// Validates an already loaded catalog.
pub fn validate_loaded(
    subject: &str,
    loaded: LoadedCatalog,
    options: ValidateOptions,
) -> (Report, Model) {
    let mut report = Report::new(subject);
    for p in &loaded.problems {
        let mut f = Finding::error("catalog/load", p.message.clone()).file(&p.file);
        if let Some(i) = p.index {
            f = f.object(format!("document {i}"));
        }
        report.push(f);
    }
    for note in &loaded.lenient {
        let mut f = Finding::warning("catalog/lenient-yaml", note.message.clone()).file(&note.file);
        if let Some(i) = note.index {
            f = f.object(format!("document {i}"));
        }
        report.push(f);
    }
    let (model, findings) = Model::from_config(loaded.config);
    report.extend(findings);
    for pkg in model.packages.values() {
        report.extend(graph_findings(pkg, options));
    }
    if options.strict {
        for f in &mut report.findings {
            if f.severity == Severity::Warning {
                f.severity = Severity::Error;
            }
        }
    }
    report.normalize();
    (report, model)
}

fn warn(pkg: &Package, rule: &str, object: String, file_of: &str, message: String) -> Finding {
    let origin = pkg
        .bundles
        .get(file_of)
        .and_then(|b| b.origin.as_ref())
        .or(pkg.origin.as_ref());
    let mut f = Finding::warning(format!("catalog/{rule}"), message).object(object);
    if let Some(o) = origin {
        f = f.file(o.file.to_path_buf());
    }
    f
}

/// The checks opm does not make (module docs).
pub fn graph_findings(pkg: &Package, options: ValidateOptions) -> Vec<Finding> {
    let mut out = Vec::new();
    for ch in pkg.channels.values() {
        let head = ch.head().map(|h| h.name.clone());
        for e in &ch.entries {
            entry_findings(pkg, ch, head.as_deref(), e, &mut out);
        }
        unreachable_entries(pkg, ch, &mut out);
    }
    if options.upgrade_paths {
        upgrade_path_infos(pkg, &mut out);
    }
    out
}

/// The version of bundle `name`, when the package has it and it parsed.
fn version_of<'p>(pkg: &'p Package, name: &str) -> Option<&'p Version> {
    pkg.bundles.get(name).and_then(|b| b.version.as_ref())
}

/// One channel entry's edges: `replaces` pointing at an older version, and its skipRange.
fn entry_findings(
    pkg: &Package,
    ch: &Channel,
    head: Option<&str>,
    e: &ChannelEntry,
    out: &mut Vec<Finding>,
) {
    let obj = format!("{}/{}/{}", pkg.name, ch.name, e.name);
    let own = version_of(pkg, &e.name);
    if let (Some(own), Some(replaced)) = (own, version_of(pkg, &e.replaces))
        && cmp_versions(replaced, own) != std::cmp::Ordering::Less
    {
        out.push(warn(pkg, "replaces-newer-version", obj.clone(), &e.name, format!(
            "bundle {:?} ({own}) replaces {:?} ({replaced}), which is not older: OLM would offer a downgrade",
            e.name, e.replaces
        )).field("replaces"));
    }
    if e.skip_range.is_empty() {
        return;
    }
    let Ok(range) = Range::parse(&e.skip_range) else {
        return;
    };
    if head.is_some_and(|h| h != e.name) {
        out.push(warn(pkg, "skiprange-not-on-head", obj.clone(), &e.name, format!(
            "skipRange {:?} of bundle {:?} in channel {:?} is not on the channel head: OLM v0 ignores it, OLM v1 honours it, so the two upgrade differently",
            e.skip_range, e.name, ch.name
        )).field("skipRange").hint("keep skipRange on the newest entry only, or add explicit `skips`"));
    }
    if let Some(own) = own {
        skip_range_findings(pkg, ch, e, &range, own, &obj, out);
    }
}

/// What an entry's skipRange covers: something older, nothing newer, and (without
/// `replaces`) no live version OLM v0 would prune.
fn skip_range_findings(
    pkg: &Package,
    ch: &Channel,
    e: &ChannelEntry,
    range: &Range,
    own: &Version,
    obj: &str,
    out: &mut Vec<Finding>,
) {
    if !range.covers_any_below(own) {
        out.push(
            warn(
                pkg,
                "skiprange-covers-nothing",
                obj.to_owned(),
                &e.name,
                format!(
                    "skipRange {:?} of bundle {:?} ({own}) covers no version older than the bundle",
                    e.skip_range, e.name
                ),
            )
            .field("skipRange"),
        );
    }
    let newer: Vec<String> = pkg
        .bundles_by_version()
        .into_iter()
        .filter(|b| b.name != e.name)
        .filter(|b| {
            b.version.as_ref().is_some_and(|v| {
                cmp_versions(v, own) != std::cmp::Ordering::Less && range.contains(v)
            })
        })
        .map(|b| format!("{} ({})", b.name, b.version_string()))
        .collect();
    if !newer.is_empty() {
        out.push(warn(pkg, "skiprange-covers-newer", obj.to_owned(), &e.name, format!(
            "skipRange {:?} of bundle {:?} ({own}) covers newer or equal versions: {}; OLM would offer a downgrade to them",
            e.skip_range, e.name, newer.join(", ")
        )).field("skipRange"));
    }
    if !e.replaces.is_empty() {
        return;
    }
    let pruned: Vec<String> = ch
        .entries
        .iter()
        .filter(|x| x.name != e.name)
        .filter(|x| {
            version_of(pkg, &x.name).is_some_and(|v| {
                range.contains(v) && cmp_versions(v, own) == std::cmp::Ordering::Less
            })
        })
        .filter(|x| {
            pkg.bundles
                .get(&x.name)
                .is_some_and(|b| b.deprecation.is_none())
        })
        .map(|x| x.name.clone())
        .collect();
    if !pruned.is_empty() {
        out.push(warn(pkg, "skiprange-prunes-live-version", obj.to_owned(), &e.name, format!(
            "bundle {:?} has skipRange {:?} but no `replaces`: OLM v0 prunes {} from channel {:?} (no longer installable, no replaces chain through them) although they are not deprecated",
            e.name, e.skip_range, pruned.join(", "), ch.name
        )).field("skipRange").hint("add `replaces` to the previous version, or deprecate the pruned bundles"));
    }
}

/// Bundles no older version of the channel can upgrade to.
fn unreachable_entries(pkg: &Package, ch: &Channel, out: &mut Vec<Finding>) {
    let lowest = ch
        .entries
        .iter()
        .filter_map(|e| version_of(pkg, &e.name))
        .min_by(|a, b| cmp_versions(a, b));
    for e in &ch.entries {
        let Some(own) = version_of(pkg, &e.name) else {
            continue;
        };
        if Some(own) == lowest {
            continue;
        }
        let older_names: Vec<&str> = ch
            .entries
            .iter()
            .filter(|x| {
                version_of(pkg, &x.name)
                    .is_some_and(|v| cmp_versions(v, own) == std::cmp::Ordering::Less)
            })
            .map(|x| x.name.as_str())
            .collect();
        let range = Range::parse(&e.skip_range).ok();
        let reachable = older_names.iter().any(|older| {
            e.replaces == *older
                || e.skips.iter().any(|s| s == older)
                || range
                    .as_ref()
                    .is_some_and(|r| version_of(pkg, older).is_some_and(|v| r.contains(v)))
        });
        if !reachable {
            out.push(warn(pkg, "no-upgrade-into", format!("{}/{}/{}", pkg.name, ch.name, e.name), &e.name, format!(
                "no older version in channel {:?} can upgrade to bundle {:?} ({own}): it has no replaces, skips or skipRange edge from {}",
                ch.name, e.name, older_names.join(", ")
            )));
        }
    }
}

/// One info per installed bundle whose OLM v0 and OLM v1 upgrade paths differ.
fn upgrade_path_infos(pkg: &Package, out: &mut Vec<Finding>) {
    for p in upgrade::package_paths(pkg) {
        if p.differs() {
            let mut f = Finding::info(
                "catalog/upgrade-path-differs",
                format!(
                    "installed {} in channel {:?}: OLM v0 path {}; OLM v1 path {}",
                    p.bundle,
                    p.channel,
                    upgrade::describe(&p.bundle, &p.v0),
                    upgrade::describe(&p.bundle, &p.v1)
                ),
            )
            .object(format!("{}/{}/{}", p.package, p.channel, p.bundle));
            if let Some(o) = pkg.bundles.get(&p.bundle).and_then(|b| b.origin.as_ref()) {
                f = f.file(o.file.to_path_buf());
            }
            out.push(f);
        }
    }
}
