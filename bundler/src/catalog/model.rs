//! The semantic catalog: packages → channels → bundles, built from a [`DeclarativeConfig`]
//! with every check `opm validate` makes (conversion and model validation).
//!
//! Contract:
//! - [`Model::build`] never stops at the first problem (opm does): it returns the best model it
//!   can build plus one [`Finding`] per problem. A catalog has an error here exactly when
//!   `opm validate` fails on it; the messages follow opm's wording, naming package, channel and
//!   bundle.
//! - Maps are ordered (`BTreeMap`), so everything derived from a model is deterministic.
#![warn(missing_docs)]

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use super::declcfg::{
    self, ChannelEntry, DeclarativeConfig, Origin, Property, RelatedImage, SCHEMA_BUNDLE,
    SCHEMA_CHANNEL, SCHEMA_PACKAGE,
};
use super::property::{self, Typed};
use olmpack_model::csv::Icon;
use olmpack_model::names::dns1123_label_problem;
use olmpack_model::report::Finding;
use olmpack_model::version::{Range, Version, cmp_versions, parse_version};

/// A whole catalog.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// The packages, by name.
    pub packages: BTreeMap<String, Package>,
}

/// One package of the model, with its channels and bundles joined up.
#[derive(Clone, Debug, Default)]
pub struct Package {
    /// The package name.
    pub name: String,
    /// As written (may name a channel that does not exist).
    pub default_channel: String,
    /// Package description from `olm.package`.
    pub description: String,
    /// Package icon from `olm.package`, if any.
    pub icon: Option<Icon>,
    /// The package's channels, by name.
    pub channels: BTreeMap<String, Channel>,
    /// The package's bundles, by name.
    pub bundles: BTreeMap<String, Bundle>,
    /// Deprecation message, when the package is deprecated.
    pub deprecation: Option<String>,
    /// Where the `olm.package` blob was read from (none for a catalog built in memory).
    pub origin: Option<Origin>,
}

/// One channel of a package in the model.
#[derive(Clone, Debug, Default)]
pub struct Channel {
    /// The channel name.
    pub name: String,
    /// The channel's entries in file order.
    pub entries: Vec<ChannelEntry>,
    /// Position of each entry by name, so lookups do not scan the channel (kept by
    /// [`Channel::new`]; [`Channel::entry`] falls back to a scan if `entries` changed since).
    index: HashMap<String, usize>,
    /// Deprecation message, when the channel is deprecated.
    pub deprecation: Option<String>,
    /// Where the `olm.channel` blob was read from.
    pub origin: Option<Origin>,
}

/// One bundle of a package in the model, with its version decoded.
#[derive(Clone, Debug, Default)]
pub struct Bundle {
    /// The bundle name (a CSV name).
    pub name: String,
    /// `None` when the `olm.package` property is missing or its version does not parse.
    pub version: Option<Version>,
    /// Release suffix from the `olm.package` property (empty for none).
    pub release: String,
    /// Pull spec of the bundle image.
    pub image: String,
    /// All properties of the bundle (large values may have been dropped by a lean load).
    pub properties: Vec<Property>,
    /// Images the bundle uses.
    pub related_images: Vec<RelatedImage>,
    /// Deprecation message, when the bundle is deprecated.
    pub deprecation: Option<String>,
    /// Whether any `olm.bundle.object` property is present.
    pub has_objects: bool,
    /// Where the `olm.bundle` blob was read from.
    pub origin: Option<Origin>,
}

impl Bundle {
    /// `version` or `version-release`, as opm compares bundles.
    pub fn version_string(&self) -> String {
        match (&self.version, self.release.is_empty()) {
            (Some(v), true) => v.to_string(),
            (Some(v), false) => format!("{v}-{}", self.release),
            (None, _) => String::new(),
        }
    }
}

/// Where a finding points: file and `package/channel/bundle`.
fn at(origin: &Option<Origin>) -> Option<PathBuf> {
    origin.as_ref().map(|o| o.file.to_path_buf())
}

fn finding(rule: &str, message: String, origin: &Option<Origin>, object: String) -> Finding {
    let mut f = Finding::error(format!("catalog/{rule}"), message).object(object);
    if let Some(file) = at(origin) {
        f = f.file(file);
    }
    f
}

impl Channel {
    /// A channel with these entries (names unique) and no deprecation.
    pub fn new(name: String, entries: Vec<ChannelEntry>, origin: Option<Origin>) -> Self {
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        Channel {
            name,
            entries,
            index,
            deprecation: None,
            origin,
        }
    }

    /// Entries no other entry `replaces` or `skips` (opm's head rule); sorted.
    pub fn heads(&self) -> Vec<&ChannelEntry> {
        let mut incoming = BTreeSet::new();
        for e in &self.entries {
            if !e.replaces.is_empty() {
                incoming.insert(e.replaces.as_str());
            }
            incoming.extend(e.skips.iter().map(String::as_str));
        }
        let mut heads: Vec<&ChannelEntry> = self
            .entries
            .iter()
            .filter(|e| !incoming.contains(e.name.as_str()))
            .collect();
        heads.sort_by(|a, b| a.name.cmp(&b.name));
        heads.dedup_by(|a, b| a.name == b.name);
        heads
    }

    /// The single head, if there is exactly one.
    pub fn head(&self) -> Option<&ChannelEntry> {
        match self.heads().as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The entry for bundle `name` in this channel, if it has one.
    pub fn entry(&self, name: &str) -> Option<&ChannelEntry> {
        self.position(name).map(|i| &self.entries[i])
    }

    /// Where the entry for bundle `name` is in [`Channel::entries`].
    pub fn position(&self, name: &str) -> Option<usize> {
        match self.index.get(name) {
            Some(&i) if self.entries.get(i).is_some_and(|e| e.name == name) => Some(i),
            None if self.index.len() == self.entries.len() => None,
            // `entries` changed after the channel was built: scan.
            _ => self.entries.iter().position(|e| e.name == name),
        }
    }

    /// Names skipped by any entry's `skips`.
    pub fn skipped(&self) -> BTreeSet<&str> {
        self.entries
            .iter()
            .flat_map(|e| e.skips.iter().map(String::as_str))
            .collect()
    }

    /// opm's replaces-chain rules: one head, no cycle, nothing stranded.
    pub fn replaces_chain_problem(&self) -> Option<(&'static str, String)> {
        let heads = self.heads();
        let head = match heads.as_slice() {
            [] => {
                return Some((
                    "no-channel-head",
                    "no channel head found in graph".to_owned(),
                ));
            }
            [one] => *one,
            many => {
                let names: Vec<&str> = many.iter().map(|e| e.name.as_str()).collect();
                return Some((
                    "multiple-channel-heads",
                    format!(
                        "multiple channel heads found in graph: {}",
                        names.join(", ")
                    ),
                ));
            }
        };
        let skipped = self.skipped();
        let mut chain: Vec<&str> = vec![head.name.as_str()];
        let mut on_chain: BTreeSet<&str> = BTreeSet::from([head.name.as_str()]);
        let mut cur = Some(head);
        while let Some(e) = cur {
            if skipped.contains(e.replaces.as_str()) {
                break;
            }
            if on_chain.contains(e.replaces.as_str()) {
                let start = chain
                    .iter()
                    .position(|n| *n == e.replaces)
                    .unwrap_or_default();
                let mut cycle: Vec<&str> = chain[start..].to_vec();
                cycle.push(e.replaces.as_str());
                return Some((
                    "replaces-cycle",
                    format!(
                        "detected cycle in replaces chain of upgrade graph: {}",
                        cycle.join(" -> ")
                    ),
                ));
            }
            chain.push(e.replaces.as_str());
            on_chain.insert(e.replaces.as_str());
            cur = self.entry(&e.replaces);
        }
        let stranded: BTreeSet<&str> = self
            .entries
            .iter()
            .map(|e| e.name.as_str())
            .filter(|n| !on_chain.contains(n) && !skipped.contains(n))
            .collect();
        if stranded.is_empty() {
            None
        } else {
            Some((
                "stranded-bundles",
                format!(
                    "channel contains one or more stranded bundles: {}",
                    stranded.into_iter().collect::<Vec<_>>().join(", ")
                ),
            ))
        }
    }
}

impl Package {
    /// Channels a bundle is listed in, sorted.
    pub fn channels_of(&self, bundle: &str) -> Vec<&Channel> {
        self.channels
            .values()
            .filter(|c| c.entry(bundle).is_some())
            .collect()
    }

    /// Bundles sorted by version (then name); bundles without a version last.
    pub fn bundles_by_version(&self) -> Vec<&Bundle> {
        let mut out: Vec<&Bundle> = self.bundles.values().collect();
        out.sort_by(|a, b| match (&a.version, &b.version) {
            (Some(x), Some(y)) => cmp_versions(x, y)
                .then_with(|| a.release.cmp(&b.release))
                .then_with(|| a.name.cmp(&b.name)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.name.cmp(&b.name),
        });
        out
    }
}
impl Model {
    /// Builds the model and returns every problem `opm validate` would find (module contract).
    pub fn build(cfg: &DeclarativeConfig) -> (Model, Vec<Finding>) {
        Self::from_config(cfg.clone())
    }

    /// [`Model::build`], consuming the config (property values move instead of being copied).
    /// The findings come package by package ([`for_each_package`]).
    pub fn from_config(cfg: DeclarativeConfig) -> (Model, Vec<Finding>) {
        let mut model = Model::default();
        let mut out = Vec::new();
        for_each_package(cfg, |pkg, findings| {
            if let Some(pkg) = pkg {
                model.packages.insert(pkg.name.clone(), pkg);
            }
            out.extend(findings);
        });
        (model, out)
    }

    /// Adds one `olm.package` blob, unless it has no name or repeats a package.
    fn add_package(&mut self, p: &declcfg::Package, out: &mut Vec<Finding>) {
        let obj = format!("{SCHEMA_PACKAGE}/{}", p.name);
        if p.name.is_empty() {
            out.push(finding(
                "package-no-name",
                "config contains package with no name".to_owned(),
                &p.origin,
                obj,
            ));
            return;
        }
        if self.packages.contains_key(&p.name) {
            out.push(finding(
                "duplicate-package",
                format!("duplicate package {:?}", p.name),
                &p.origin,
                p.name.clone(),
            ));
            return;
        }
        if let Some(why) = dns1123_label_problem(&p.name) {
            out.push(finding(
                "invalid-package-name",
                format!("invalid package name {:?}: {why}", p.name),
                &p.origin,
                p.name.clone(),
            ));
        }
        self.packages.insert(
            p.name.clone(),
            Package {
                name: p.name.clone(),
                default_channel: p.default_channel.clone(),
                description: p.description.clone(),
                icon: p.icon.clone(),
                origin: p.origin.clone(),
                ..Package::default()
            },
        );
    }

    /// Adds one `olm.channel` blob to its package, dropping repeated entries.
    fn add_channel(&mut self, c: &declcfg::Channel, out: &mut Vec<Finding>) {
        let obj = format!("{}/{}", c.package, c.name);
        let Some(pkg) = self.packages.get_mut(&c.package) else {
            out.push(finding(
                "unknown-package",
                format!("unknown package {:?} for channel {:?}", c.package, c.name),
                &c.origin,
                obj,
            ));
            return;
        };
        if c.name.is_empty() {
            out.push(finding(
                "channel-no-name",
                format!("package {:?} contains channel with no name", c.package),
                &c.origin,
                obj,
            ));
            return;
        }
        if pkg.channels.contains_key(&c.name) {
            out.push(finding(
                "duplicate-channel",
                format!("package {:?} has duplicate channel {:?}", c.package, c.name),
                &c.origin,
                obj,
            ));
            return;
        }
        let mut entries: Vec<ChannelEntry> = Vec::new();
        let mut names: HashSet<&str> = HashSet::new();
        for e in &c.entries {
            if !names.insert(e.name.as_str()) {
                out.push(finding(
                    "duplicate-entry",
                    format!(
                        "invalid package {:?}, channel {:?}: duplicate entry {:?}",
                        c.package, c.name, e.name
                    ),
                    &c.origin,
                    format!("{obj}/{}", e.name),
                ));
                continue;
            }
            entries.push(e.clone());
        }
        pkg.channels.insert(
            c.name.clone(),
            Channel::new(c.name.clone(), entries, c.origin.clone()),
        );
    }

    /// Adds one `olm.bundle` blob to its package, checking its properties, images and
    /// channel membership.
    fn add_bundle(&mut self, mut b: declcfg::Bundle, out: &mut Vec<Finding>) {
        let obj = if b.package.is_empty() {
            b.name.clone()
        } else {
            format!("{}/{}", b.package, b.name)
        };
        if b.package.is_empty() {
            out.push(finding(
                "bundle-no-package",
                format!("package name must be set for bundle {:?}", b.name),
                &b.origin,
                obj,
            ));
            return;
        }
        let Some(pkg) = self.packages.get_mut(&b.package) else {
            out.push(finding(
                "unknown-package",
                format!("unknown package {:?} for bundle {:?}", b.package, b.name),
                &b.origin,
                obj,
            ));
            return;
        };
        if pkg.bundles.contains_key(&b.name) {
            out.push(finding(
                "duplicate-bundle",
                format!("package {:?} has duplicate bundle {:?}", b.package, b.name),
                &b.origin,
                obj,
            ));
            return;
        }
        let props = BundleProperties::parse(&b, &obj, out);
        let mut bundle = Bundle {
            name: b.name.clone(),
            version: None,
            release: String::new(),
            image: b.image.clone(),
            properties: std::mem::take(&mut b.properties),
            related_images: b.related_images.clone(),
            deprecation: None,
            has_objects: props.has_objects,
            origin: b.origin.clone(),
        };
        if !props.bad_property {
            props.apply_package(&b, &obj, &mut bundle, out);
        }
        check_bundle_images(&b, &obj, out);
        if pkg.channels.values().all(|c| c.entry(&b.name).is_none()) {
            out.push(finding(
                "bundle-not-in-channel",
                format!(
                    "package {:?}, bundle {:?} not found in any channel entries",
                    b.package, b.name
                ),
                &b.origin,
                obj.clone(),
            ));
        }
        pkg.bundles.insert(b.name.clone(), bundle);
    }

    /// One finding per package whose channels name bundles it does not have.
    fn entries_without_bundles(&self, out: &mut Vec<Finding>) {
        for pkg in self.packages.values() {
            let missing: BTreeSet<&str> = pkg
                .channels
                .values()
                .flat_map(|c| c.entries.iter().map(|e| e.name.as_str()))
                .filter(|n| !pkg.bundles.contains_key(*n))
                .collect();
            if !missing.is_empty() {
                out.push(finding(
                    "entry-without-bundle",
                    format!(
                        "no olm.bundle blobs found in package {:?} for olm.channel entries [{}]",
                        pkg.name,
                        missing.into_iter().collect::<Vec<_>>().join(" ")
                    ),
                    &pkg.origin,
                    pkg.name.clone(),
                ));
            }
        }
    }
}

/// The objects of one package name, in the order read: what its model is built from alone
/// (every rule of the model is within one package).
#[derive(Debug, Default)]
pub struct PackageConfig {
    /// The `olm.package` blobs of this name (more than one is a finding).
    pub packages: Vec<declcfg::Package>,
    /// The `olm.channel` blobs naming this package.
    pub channels: Vec<declcfg::Channel>,
    /// The `olm.bundle` blobs naming this package.
    pub bundles: Vec<declcfg::Bundle>,
    /// The `olm.deprecations` blobs naming this package, each with its position among all
    /// the catalog's (the findings name it).
    pub deprecations: Vec<(usize, declcfg::Deprecation)>,
}

impl PackageConfig {
    /// The model of these objects (one package at most) and every problem in them.
    pub fn build(self) -> (Option<Package>, Vec<Finding>) {
        let mut model = Model::default();
        let mut out = Vec::new();
        for p in &self.packages {
            model.add_package(p, &mut out);
        }
        for c in &self.channels {
            model.add_channel(c, &mut out);
        }
        for b in self.bundles {
            model.add_bundle(b, &mut out);
        }
        model.entries_without_bundles(&mut out);
        deprecations(&self.deprecations, &mut model, &mut out);
        for pkg in model.packages.values() {
            validate_package(pkg, &mut out);
        }
        (model.packages.into_values().next(), out)
    }
}

/// Builds the model one package at a time, in package-name order (objects naming no package
/// first): `each` gets a package's model (`None` when its objects make no package, e.g. a
/// channel of an unknown package) and its findings, which are then dropped. Memory is the
/// objects read plus the largest package's model, not the whole catalog's model; the
/// findings are exactly [`Model::build`]'s. Blobs of other schemas are ignored (as opm does).
pub fn for_each_package(
    cfg: DeclarativeConfig,
    mut each: impl FnMut(Option<Package>, Vec<Finding>),
) {
    let DeclarativeConfig {
        mut packages,
        mut channels,
        mut bundles,
        deprecations,
        others: _,
    } = cfg;
    // Stable sorts: each package's objects stay in the order read.
    packages.sort_by(|a, b| a.name.cmp(&b.name));
    channels.sort_by(|a, b| a.package.cmp(&b.package));
    bundles.sort_by(|a, b| a.package.cmp(&b.package));
    let mut deprecations: Vec<(usize, declcfg::Deprecation)> =
        deprecations.into_iter().enumerate().collect();
    deprecations.sort_by(|a, b| a.1.package.cmp(&b.1.package));
    let mut packages = packages.into_iter().peekable();
    let mut channels = channels.into_iter().peekable();
    let mut bundles = bundles.into_iter().peekable();
    let mut deprecations = deprecations.into_iter().peekable();
    loop {
        let next = [
            packages.peek().map(|p| p.name.clone()),
            channels.peek().map(|c| c.package.clone()),
            bundles.peek().map(|b| b.package.clone()),
            deprecations.peek().map(|d| d.1.package.clone()),
        ];
        let Some(name) = next.into_iter().flatten().min() else {
            return;
        };
        let group = PackageConfig {
            packages: take_while_named(&mut packages, &name, |p| &p.name),
            channels: take_while_named(&mut channels, &name, |c| &c.package),
            bundles: take_while_named(&mut bundles, &name, |b| &b.package),
            deprecations: take_while_named(&mut deprecations, &name, |d| &d.1.package),
        };
        let (pkg, findings) = group.build();
        each(pkg, findings);
    }
}

/// The next items of a sorted iterator whose package name is `name`.
fn take_while_named<T>(
    items: &mut std::iter::Peekable<impl Iterator<Item = T>>,
    name: &str,
    package: impl Fn(&T) -> &String,
) -> Vec<T> {
    let mut out = Vec::new();
    while let Some(item) = items.next_if(|item| package(item) == name) {
        out.push(item);
    }
    out
}

/// What a bundle's properties say about the model: its `olm.package` properties and
/// whether it carries objects.
struct BundleProperties {
    /// Every `olm.package` property: package name, version, release.
    packages: Vec<(String, String, String)>,
    has_objects: bool,
    /// Whether any property failed to parse (then the package checks are skipped).
    bad_property: bool,
}

impl BundleProperties {
    /// Parses every property, reporting the ones that do not parse.
    fn parse(b: &declcfg::Bundle, obj: &str, out: &mut Vec<Finding>) -> Self {
        let mut props = Self {
            packages: Vec::new(),
            has_objects: false,
            bad_property: false,
        };
        for (i, p) in b.properties.iter().enumerate() {
            match property::parse(i, p) {
                Ok(Typed::Package {
                    package_name,
                    version,
                    release,
                }) => props.packages.push((package_name, version, release)),
                Ok(Typed::BundleObject(_)) => props.has_objects = true,
                Ok(_) => {}
                Err(err) => {
                    props.bad_property = true;
                    out.push(
                        finding(
                            "invalid-property",
                            format!("parse properties for bundle {:?}: {err}", b.name),
                            &b.origin,
                            obj.to_owned(),
                        )
                        .field(format!("properties[{i}]")),
                    );
                }
            }
        }
        props
    }

    /// Checks the single `olm.package` property against the bundle's package and sets the
    /// bundle's version and release from it.
    fn apply_package(
        &self,
        b: &declcfg::Bundle,
        obj: &str,
        bundle: &mut Bundle,
        out: &mut Vec<Finding>,
    ) {
        let [(name, version, release)] = self.packages.as_slice() else {
            out.push(finding(
                "package-property-count",
                format!(
                    "package {:?} bundle {:?} must have exactly 1 \"olm.package\" property, found {}",
                    b.package,
                    b.name,
                    self.packages.len()
                ),
                &b.origin,
                obj.to_owned(),
            ));
            return;
        };
        if name != &b.package {
            out.push(finding(
                "package-property-mismatch",
                format!(
                    "package {:?} does not match \"olm.package\" property {:?}",
                    b.package, name
                ),
                &b.origin,
                obj.to_owned(),
            ));
        }
        match parse_version(version) {
            Ok(v) => bundle.version = Some(v),
            Err(e) => out.push(finding(
                "invalid-version",
                format!("error parsing bundle {:?} version {version:?}: {e}", b.name),
                &b.origin,
                obj.to_owned(),
            )),
        }
        if !release.is_empty() {
            if let Err(e) = check_release(release) {
                out.push(finding(
                    "invalid-release",
                    format!(
                        "error parsing bundle {:?} release version {release:?}: {e}",
                        b.name
                    ),
                    &b.origin,
                    obj.to_owned(),
                ));
            }
            bundle.release = release.clone();
        }
    }
}

/// Checks the bundle's image and related images are valid pull specs.
fn check_bundle_images(b: &declcfg::Bundle, obj: &str, out: &mut Vec<Finding>) {
    if let Err(e) = olmpack_model::pullspec::check(&b.image) {
        out.push(
            finding(
                "invalid-image",
                format!(
                    "package {:?} bundle {:?} image: invalid image pull spec {:?}: {e}",
                    b.package, b.name, b.image
                ),
                &b.origin,
                obj.to_owned(),
            )
            .field("image"),
        );
    }
    for (i, r) in b.related_images.iter().enumerate() {
        if let Err(e) = olmpack_model::pullspec::check(&r.image) {
            out.push(
                finding(
                    "invalid-image",
                    format!(
                        "package {:?} bundle {:?} relatedImages[{i}].image: invalid image pull spec {:?}: {e}",
                        b.package, b.name, r.image
                    ),
                    &b.origin,
                    obj.to_owned(),
                )
                .field(format!("relatedImages[{i}].image")),
            );
        }
    }
}

fn check_release(release: &str) -> Result<(), String> {
    if release.len() > 20 {
        return Err(format!(
            "invalid release {release:?}: exceeds maximum length of 20 characters"
        ));
    }
    let problems: Vec<String> = release
        .split('.')
        .enumerate()
        .filter_map(|(i, seg)| {
            olmpack_model::version::check_prerelease_identifier(seg)
                .err()
                .map(|e| format!("segment {i}: {e}"))
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid release {release:?}: {}",
            problems.join(", ")
        ))
    }
}

/// Applies the `olm.deprecations` blobs (each with its position among the catalog's): at
/// most one per known package, each entry naming an existing bundle, channel or the package
/// itself.
fn deprecations(
    blobs: &[(usize, declcfg::Deprecation)],
    model: &mut Model,
    out: &mut Vec<Finding>,
) {
    let mut seen_packages = BTreeSet::new();
    for (i, d) in blobs {
        let obj = format!("olm.deprecations/{}", d.package);
        if d.package.is_empty() {
            out.push(finding(
                "deprecation-no-package",
                format!("package name must be set for deprecation item {i}"),
                &d.origin,
                obj,
            ));
            continue;
        }
        let Some(pkg) = model.packages.get_mut(&d.package) else {
            out.push(finding(
                "deprecation-unknown-package",
                format!(
                    "cannot apply deprecations to an unknown package {:?}",
                    d.package
                ),
                &d.origin,
                obj,
            ));
            continue;
        };
        if !seen_packages.insert(d.package.clone()) {
            out.push(finding(
                "duplicate-deprecations",
                format!(
                    "expected a maximum of one deprecation per package: {:?}",
                    d.package
                ),
                &d.origin,
                obj,
            ));
            continue;
        }
        let mut refs = BTreeSet::new();
        for (j, e) in d.entries.iter().enumerate() {
            let err = |rule: &str, msg: String| {
                finding(rule, msg, &d.origin, obj.clone()).field(format!("entries[{j}]"))
            };
            let r = &e.reference;
            if r.schema.is_empty() {
                out.push(err(
                    "deprecation-no-schema",
                    format!(
                        "schema must be set for deprecation entry [{j}] for package {:?}",
                        d.package
                    ),
                ));
                continue;
            }
            if !refs.insert(r.clone()) {
                out.push(err(
                    "duplicate-deprecation-entry",
                    format!(
                        "duplicate deprecation entry {{schema: {:?}, name: {:?}}} for package {:?}",
                        r.schema, r.name, d.package
                    ),
                ));
                continue;
            }
            if let Err((rule, msg)) = deprecate(pkg, j, e) {
                out.push(err(rule, msg));
            }
        }
    }
}

/// Marks the object one deprecation entry (number `j`) names; `Err` is the rule and
/// message when it names nothing the package has.
fn deprecate(
    pkg: &mut Package,
    j: usize,
    e: &declcfg::DeprecationEntry,
) -> Result<(), (&'static str, String)> {
    let r = &e.reference;
    let message = Some(e.message.clone());
    match r.schema.as_str() {
        SCHEMA_BUNDLE => match pkg.bundles.get_mut(&r.name) {
            Some(b) => b.deprecation = message,
            None => {
                return Err((
                    "deprecation-unknown-bundle",
                    format!(
                        "cannot deprecate bundle {:?} for package {:?}: bundle not found",
                        r.name, pkg.name
                    ),
                ));
            }
        },
        SCHEMA_CHANNEL => match pkg.channels.get_mut(&r.name) {
            Some(c) => c.deprecation = message,
            None => {
                return Err((
                    "deprecation-unknown-channel",
                    format!(
                        "cannot deprecate channel {:?} for package {:?}: channel not found",
                        r.name, pkg.name
                    ),
                ));
            }
        },
        SCHEMA_PACKAGE => {
            if !r.name.is_empty() {
                return Err((
                    "deprecation-package-name",
                    format!(
                        "package name must be empty for deprecated package {:?} (specified {:?})",
                        pkg.name, r.name
                    ),
                ));
            }
            pkg.deprecation = message;
        }
        other => {
            return Err((
                "deprecation-unknown-schema",
                format!(
                    "cannot deprecate object {{schema: {other:?}, name: {:?}}} referenced by entry {j} for package {:?}: object schema unknown",
                    r.name, pkg.name
                ),
            ));
        }
    }
    Ok(())
}

/// Checks one package the way opm's model validation does: default channel, versions,
/// deprecation message, then every channel.
fn validate_package(pkg: &Package, out: &mut Vec<Finding>) {
    let pkg_err = |rule: &str, msg: String| {
        finding(
            rule,
            format!("invalid package {:?}: {msg}", pkg.name),
            &pkg.origin,
            pkg.name.clone(),
        )
    };
    if pkg.default_channel.is_empty() {
        out.push(pkg_err(
            "default-channel-unset",
            "default channel must be set".to_owned(),
        ));
    } else if !pkg.channels.contains_key(&pkg.default_channel) {
        out.push(
            pkg_err(
                "default-channel-missing",
                format!(
                    "default channel {:?} not found in channels list",
                    pkg.default_channel
                ),
            )
            .field("defaultChannel"),
        );
    }
    if pkg.channels.is_empty() && pkg.default_channel.is_empty() {
        out.push(pkg_err(
            "no-channels",
            "package must contain at least one channel".to_owned(),
        ));
    }
    if let Some(dups) = duplicate_versions(pkg) {
        out.push(pkg_err(
            "duplicate-versions",
            format!("duplicate versions found in bundles: [{dups}]"),
        ));
    }
    if pkg.deprecation.as_deref() == Some("") {
        out.push(pkg_err(
            "deprecation-message",
            "invalid deprecation: message must be set".to_owned(),
        ));
    }
    for ch in pkg.channels.values() {
        validate_channel(pkg, ch, out);
    }
}

/// The channel members that share a version (`{version: [names]}` groups, space-separated),
/// or `None` when every version is unique.
fn duplicate_versions(pkg: &Package) -> Option<String> {
    let mut by_version: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for b in pkg.bundles.values() {
        if pkg.channels.values().any(|c| c.entry(&b.name).is_some()) {
            by_version
                .entry(b.version_string())
                .or_default()
                .insert(b.name.as_str());
        }
    }
    let dups: Vec<String> = by_version
        .iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|(v, names)| {
            format!(
                "{{{v}: [{}]}}",
                names.iter().copied().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    (!dups.is_empty()).then(|| dups.join(" "))
}

/// Checks one channel: not empty, a sound replaces chain, a deprecation message, then
/// every entry whose bundle exists.
fn validate_channel(pkg: &Package, ch: &Channel, out: &mut Vec<Finding>) {
    let ch_err = |rule: &str, msg: String| {
        finding(
            rule,
            format!(
                "invalid package {:?}: invalid channel {:?}: {msg}",
                pkg.name, ch.name
            ),
            &ch.origin,
            format!("{}/{}", pkg.name, ch.name),
        )
    };
    if ch.entries.is_empty() {
        out.push(ch_err(
            "empty-channel",
            "channel must contain at least one bundle".to_owned(),
        ));
    } else if let Some((rule, msg)) = ch.replaces_chain_problem() {
        out.push(ch_err(rule, msg));
    }
    if ch.deprecation.as_deref() == Some("") {
        out.push(ch_err(
            "deprecation-message",
            "invalid deprecation: message must be set".to_owned(),
        ));
    }
    for e in &ch.entries {
        if let Some(b) = pkg.bundles.get(&e.name) {
            validate_entry(pkg, ch, e, b, out);
        }
    }
}

/// Checks one channel entry and its bundle: name, release normalisation, skips,
/// skipRange, image and deprecation message.
fn validate_entry(
    pkg: &Package,
    ch: &Channel,
    e: &ChannelEntry,
    b: &Bundle,
    out: &mut Vec<Finding>,
) {
    let b_err = |rule: &str, msg: String| {
        finding(
            rule,
            format!(
                "invalid package {:?}: invalid channel {:?}: invalid bundle {:?}: {msg}",
                pkg.name, ch.name, b.name
            ),
            &b.origin,
            format!("{}/{}/{}", pkg.name, ch.name, b.name),
        )
    };
    if b.name.is_empty() {
        out.push(b_err("bundle-no-name", "name must be set".to_owned()));
    }
    if !b.release.is_empty() {
        let normalized = format!("{}-v{}", pkg.name, b.version_string());
        if b.name != normalized {
            out.push(b_err(
                "bundle-name-not-normalized",
                format!(
                    "name {:?} does not match normalized name {normalized:?}",
                    b.name
                ),
            ));
        }
        if b.version.as_ref().is_some_and(|v| !v.build.is_empty()) {
            out.push(b_err(
                "build-metadata-with-release",
                "cannot use build metadata in version with a release version".to_owned(),
            ));
        }
    }
    for (i, s) in e.skips.iter().enumerate() {
        if s.is_empty() {
            out.push(b_err("empty-skip", format!("skip[{i}] is empty")));
        }
    }
    if !e.skip_range.is_empty()
        && let Err(why) = Range::parse(&e.skip_range)
    {
        out.push(b_err(
            "invalid-skip-range",
            format!("invalid skipRange {:?}: {why}", e.skip_range),
        ));
    }
    if b.image.is_empty() && !b.has_objects {
        out.push(b_err(
            "bundle-image-unset",
            "bundle image must be set".to_owned(),
        ));
    }
    if b.deprecation.as_deref() == Some("") {
        out.push(b_err(
            "deprecation-message",
            "invalid deprecation: message must be set".to_owned(),
        ));
    }
}
