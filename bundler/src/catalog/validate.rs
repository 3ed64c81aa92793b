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

use super::cover::ByVersion;
use super::declcfg::ChannelEntry;
use super::load::{LoadError, LoadOptions, LoadedCatalog, load_dir_with};
use super::model::{Bundle, Channel, Package, for_each_package};
use super::upgrade;
use olmpack_model::report::{Finding, Report, Severity};
use olmpack_model::version::{Range, Version, cmp_versions};

/// How strictly a catalog is validated and what extra information is reported.
#[derive(Clone, Copy, Debug, Default)]
pub struct ValidateOptions {
    /// Warnings fail validation too.
    pub strict: bool,
    /// Add `catalog/upgrade-path-differs` infos.
    pub upgrade_paths: bool,
    /// How much is read at most (the command line's `--max-*` flags).
    pub limits: olmpack_oci::input::Limits,
}

/// Loads and validates a catalog directory, lean ([`LoadOptions::lean`]) and one package at a
/// time ([`super::model::for_each_package`]): memory is the objects read plus the largest
/// package's model.
pub fn validate_dir(dir: &Path, options: ValidateOptions) -> Result<Report, LoadError> {
    let load = LoadOptions {
        lean: true,
        limits: options.limits,
    };
    let loaded = load_dir_with(dir, load)?;
    Ok(validate_loaded(&dir.display().to_string(), loaded, options))
}

/// Validates an already loaded catalog, one package at a time.
pub fn validate_loaded(subject: &str, loaded: LoadedCatalog, options: ValidateOptions) -> Report {
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
    for_each_package(loaded.config, |pkg, findings| {
        report.extend(findings);
        if let Some(pkg) = pkg {
            report.extend(graph_findings(&pkg, options));
        }
    });
    if options.strict {
        for f in &mut report.findings {
            if f.severity == Severity::Warning {
                f.severity = Severity::Error;
            }
        }
    }
    report.normalize();
    report
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

/// The checks opm does not make (module docs). n·log n in the package's bundles plus what
/// the findings list: versions are sorted once and every range query is a binary search
/// ([`ByVersion`]).
pub fn graph_findings(pkg: &Package, options: ValidateOptions) -> Vec<Finding> {
    let mut out = Vec::new();
    let bundles = ByVersion::new(
        pkg.bundles_by_version()
            .into_iter()
            .filter_map(|b| Some((b.version.as_ref()?, b))),
    );
    for ch in pkg.channels.values() {
        let entries = ByVersion::new(
            ch.entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| Some((version_of(pkg, &e.name)?, i))),
        );
        let live = live_before(pkg, ch, &entries);
        let ctx = ChannelContext {
            pkg,
            ch,
            bundles: &bundles,
            entries: &entries,
            live: &live,
        };
        let head = ch.head().map(|h| h.name.clone());
        for e in &ch.entries {
            ctx.entry_findings(head.as_deref(), e, &mut out);
        }
        ctx.unreachable_entries(&mut out);
    }
    if options.upgrade_paths {
        upgrade_path_infos(pkg, &mut out);
    }
    out
}

/// `live[i]`: how many of the first `i` entries (in version order) are of a bundle that is not
/// deprecated; `live[j] - live[i]` counts the live entries at positions `i..j`.
fn live_before(pkg: &Package, ch: &Channel, entries: &ByVersion<'_, usize>) -> Vec<usize> {
    let mut live = Vec::with_capacity(entries.items().len() + 1);
    live.push(0);
    for (_, i) in entries.items() {
        let alive = is_live(pkg, &ch.entries[*i].name);
        live.push(live.last().copied().unwrap_or(0) + usize::from(alive));
    }
    live
}

/// Whether the package has bundle `name` and it is not deprecated.
fn is_live(pkg: &Package, name: &str) -> bool {
    pkg.bundles
        .get(name)
        .is_some_and(|b| b.deprecation.is_none())
}

/// The version of bundle `name`, when the package has it and it parsed.
fn version_of<'p>(pkg: &'p Package, name: &str) -> Option<&'p Version> {
    pkg.bundles.get(name).and_then(|b| b.version.as_ref())
}

/// At most [`LISTED`] names, then how many more there are.
fn listed(names: &[&str]) -> String {
    listed_of(names, names.len())
}

/// The first [`LISTED`] of `names`, then how many of `total` are left.
fn listed_of(names: &[&str], total: usize) -> String {
    let shown = &names[..names.len().min(LISTED)];
    match total.saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// How many names a finding lists before it counts the rest.
const LISTED: usize = 20;

/// One channel of a package, with its bundles and entries sorted by version.
struct ChannelContext<'a> {
    pkg: &'a Package,
    ch: &'a Channel,
    /// Every bundle of the package with a version.
    bundles: &'a ByVersion<'a, &'a Bundle>,
    /// The channel's entries with a version (positions in `ch.entries`).
    entries: &'a ByVersion<'a, usize>,
    /// Live entries before each position of `entries` ([`live_before`]).
    live: &'a [usize],
}

impl ChannelContext<'_> {
    /// One channel entry's edges: `replaces` pointing at an older version, and its skipRange.
    fn entry_findings(&self, head: Option<&str>, e: &ChannelEntry, out: &mut Vec<Finding>) {
        let (pkg, ch) = (self.pkg, self.ch);
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
            self.skip_range_findings(e, &range, own, &obj, out);
        }
    }

    /// What an entry's skipRange covers: something older, nothing newer, and (without
    /// `replaces`) no live version OLM v0 would prune.
    fn skip_range_findings(
        &self,
        e: &ChannelEntry,
        range: &Range,
        own: &Version,
        obj: &str,
        out: &mut Vec<Finding>,
    ) {
        let pkg = self.pkg;
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
        let newer: Vec<String> = self
            .bundles
            .covered(range, &Some((own.clone(), true)), &None)
            .into_iter()
            .map(|i| self.bundles.get(i).1)
            .filter(|b| b.name != e.name)
            .map(|b| format!("{} ({})", b.name, b.version_string()))
            .collect();
        if !newer.is_empty() {
            let newer: Vec<&str> = newer.iter().map(String::as_str).collect();
            out.push(warn(pkg, "skiprange-covers-newer", obj.to_owned(), &e.name, format!(
                "skipRange {:?} of bundle {:?} ({own}) covers newer or equal versions: {}; OLM would offer a downgrade to them",
                e.skip_range, e.name, listed(&newer)
            )).field("skipRange"));
        }
        if !e.replaces.is_empty() {
            return;
        }
        self.pruned_versions(e, range, own, obj, out);
    }

    /// Without `replaces`, OLM v0 prunes what the skipRange covers: a warning when that
    /// includes versions that are not deprecated, listed in version order.
    fn pruned_versions(
        &self,
        e: &ChannelEntry,
        range: &Range,
        own: &Version,
        obj: &str,
        out: &mut Vec<Finding>,
    ) {
        let (pkg, ch) = (self.pkg, self.ch);
        let (pruned, total) = self.live_covered_below(range, own, &e.name);
        if total > 0 {
            out.push(warn(pkg, "skiprange-prunes-live-version", obj.to_owned(), &e.name, format!(
                "bundle {:?} has skipRange {:?} but no `replaces`: OLM v0 prunes {} from channel {:?} (no longer installable, no replaces chain through them) although they are not deprecated",
                e.name, e.skip_range, listed_of(&pruned, total), ch.name
            )).field("skipRange").hint("add `replaces` to the previous version, or deprecate the pruned bundles"));
        }
    }

    /// The live entries other than `own_name` that `range` covers below `own`: the first
    /// [`LISTED`] names in version order, and how many there are. A range that is one
    /// interval is counted from [`ChannelContext::live`] (log n plus what it lists), so
    /// every entry of a long channel covering all older ones stays n·log n in all.
    fn live_covered_below(
        &self,
        range: &Range,
        own: &Version,
        own_name: &str,
    ) -> (Vec<&str>, usize) {
        let (pkg, ch) = (self.pkg, self.ch);
        let cap = Some((own.clone(), false));
        let name = |i: usize| ch.entries[self.entries.get(i).1].name.as_str();
        let live = |n: &&str| *n != own_name && is_live(pkg, n);
        let Some((lo, hi)) = range.as_interval() else {
            let all: Vec<&str> = self
                .entries
                .covered(range, &None, &cap)
                .into_iter()
                .map(name)
                .filter(live)
                .collect();
            let total = all.len();
            return (all, total);
        };
        let span = self.entries.span(&lo, &hi, &cap);
        // The cap is below `own`, so the entry itself is never in the span.
        let total = self.live[span.end] - self.live[span.start];
        let first: Vec<&str> = span.map(name).filter(live).take(LISTED).collect();
        (first, total)
    }

    /// Bundles no older version of the channel can upgrade to.
    fn unreachable_entries(&self, out: &mut Vec<Finding>) {
        let (pkg, ch) = (self.pkg, self.ch);
        let Some(&(lowest, _)) = self.entries.items().first() else {
            return;
        };
        let older = |a: &str, own: &Version| {
            version_of(pkg, a).is_some_and(|v| cmp_versions(v, own) == std::cmp::Ordering::Less)
        };
        for e in &ch.entries {
            let Some(own) = version_of(pkg, &e.name) else {
                continue;
            };
            if own == lowest {
                continue;
            }
            let reachable = (older(&e.replaces, own) && ch.entry(&e.replaces).is_some())
                || e.skips
                    .iter()
                    .any(|s| older(s, own) && ch.entry(s).is_some())
                || Range::parse(&e.skip_range)
                    .is_ok_and(|r| self.entries.covers_any_below(&r, own));
            if !reachable {
                let below = self
                    .entries
                    .items()
                    .partition_point(|(v, _)| cmp_versions(v, own) == std::cmp::Ordering::Less);
                let mut positions: Vec<usize> = self.entries.items()[..below]
                    .iter()
                    .map(|(_, i)| *i)
                    .collect();
                positions.sort_unstable();
                let older_names: Vec<&str> = positions
                    .into_iter()
                    .map(|i| ch.entries[i].name.as_str())
                    .collect();
                out.push(warn(pkg, "no-upgrade-into", format!("{}/{}/{}", pkg.name, ch.name, e.name), &e.name, format!(
                    "no older version in channel {:?} can upgrade to bundle {:?} ({own}): it has no replaces, skips or skipRange edge from {}",
                    ch.name, e.name, listed(&older_names)
                )));
            }
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
