//! `olm.semver`: channels generated from bundle versions, as opm generates them.
//!
//! Contract (opm's algorithm, reproduced):
//! - strict input: only `schema`, `generateMajorChannels`, `generateMinorChannels`,
//!   `defaultChannelTypePreference`, `candidate`/`fast`/`stable` `{bundles: [{image}]}`
//!   (keys case-insensitive); neither generate flag means minor channels;
//! - channels `<archetype>-v<X>` and/or `<archetype>-v<X>.<Y>`, entries sorted by version;
//! - edges: entries are walked per archetype, stream kind and version; at each change of
//!   archetype, kind, major or minor the previous entry gets `replaces` = highest entry of the
//!   previous minor (same major) and `skips` = every earlier entry of the major not replaced;
//!   nothing links across majors or archetypes;
//! - default channel: the most stable archetype, then the highest version, then the preferred
//!   stream kind; the package's description and icon come from its head's CSV.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{BundleResolver, Rendered, TemplateError};
use crate::catalog::declcfg::{
    Channel, ChannelEntry, DeclarativeConfig, Package, SCHEMA_CHANNEL, SCHEMA_PACKAGE,
};
use crate::catalog::property::{self, Typed};
use olmpack_model::csv::{ClusterServiceVersion, Icon};
use olmpack_model::version::{Version, cmp_versions};

/// `schema` value of a semver catalog template.
pub const SCHEMA: &str = "olm.semver";

const ARCHETYPES: [&str; 3] = ["candidate", "fast", "stable"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    // Declaration order = opm's stream priority (default < major < minor).
    Major,
    Minor,
}

/// Expands an `olm.semver` template given as text.
pub fn expand(
    text: &str,
    resolver: &dyn BundleResolver,
) -> Result<DeclarativeConfig, TemplateError> {
    expand_value(&super::parse_doc(text)?, resolver)
}

fn field<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    crate::catalog::declcfg::lookup(map, key).filter(|v| !v.is_null())
}

fn err(message: String) -> TemplateError {
    TemplateError::Semver(message)
}

/// Expands an `olm.semver` template given as a parsed document.
pub fn expand_value(
    doc: &Value,
    resolver: &dyn BundleResolver,
) -> Result<DeclarativeConfig, TemplateError> {
    let map = doc
        .as_object()
        .ok_or_else(|| err("template is not a mapping".to_owned()))?;
    let settings = Settings::parse(map)?;
    let images = archetype_images(map);
    let rendered = resolve_images(&images, resolver)?;
    let (pkg_name, versions) = bundle_versions(&images, &rendered)?;
    let mut layout = ChannelLayout::build(&versions, &settings);
    layout.link_entries();
    let default_channel = layout.default_channel();
    let package = head_package(&pkg_name, &default_channel, &layout.channels, &rendered);
    let mut cfg = DeclarativeConfig {
        packages: vec![package],
        ..DeclarativeConfig::default()
    };
    for (name, entries) in layout.channels {
        cfg.channels.push(Channel {
            origin: None,
            schema: SCHEMA_CHANNEL.to_owned(),
            name,
            package: pkg_name.clone(),
            entries,
            properties: Vec::new(),
        });
    }
    cfg.bundles = rendered.into_values().map(|r| r.bundle).collect();
    Ok(cfg)
}

/// The template's channel-generation switches, checked against each other.
struct Settings {
    /// `generateMajorChannels`.
    major: bool,
    /// `generateMinorChannels` (also on when neither flag is set).
    minor: bool,
    /// `defaultChannelTypePreference`, defaulted from the flags.
    preference: Kind,
}

impl Settings {
    /// Checks the template's keys and schema and reads its flags, refusing the
    /// combinations opm refuses.
    fn parse(map: &serde_json::Map<String, Value>) -> Result<Self, TemplateError> {
        const KNOWN: [&str; 7] = [
            "schema",
            "generatemajorchannels",
            "generateminorchannels",
            "defaultchanneltypepreference",
            "candidate",
            "fast",
            "stable",
        ];
        for key in map.keys() {
            if !KNOWN.contains(&key.to_lowercase().as_str()) {
                return Err(TemplateError::UnknownField(key.clone()));
            }
        }
        let schema = field(map, "schema").and_then(Value::as_str).unwrap_or("");
        if schema != SCHEMA {
            return Err(TemplateError::Schema {
                found: schema.to_owned(),
                expected: SCHEMA,
            });
        }
        let flag = |k: &str| field(map, k).and_then(Value::as_bool).unwrap_or(false);
        let major = flag("generateMajorChannels");
        let mut minor = flag("generateMinorChannels");
        if !major && !minor {
            minor = true;
        }
        let preference = match field(map, "defaultChannelTypePreference").and_then(Value::as_str) {
            None | Some("") => {
                if minor {
                    Kind::Minor
                } else {
                    Kind::Major
                }
            }
            Some("minor") if minor => Kind::Minor,
            Some("major") if major => Kind::Major,
            Some("minor") => return Err(err("schema attribute mismatch: DefaultChannelTypePreference set to 'minor' doesn't make sense if not generating minor-version channels".to_owned())),
            Some("major") => return Err(err("schema attribute mismatch: DefaultChannelTypePreference set to 'major' doesn't make sense if not generating major-version channels".to_owned())),
            Some(other) => return Err(err(format!("unknown DefaultChannelTypePreference: {other:?}"))),
        };
        Ok(Self {
            major,
            minor,
            preference,
        })
    }
}

/// The bundle images listed per archetype, in template order.
fn archetype_images(map: &serde_json::Map<String, Value>) -> BTreeMap<&'static str, Vec<String>> {
    let mut images: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for arch in ARCHETYPES {
        let list = field(map, arch)
            .and_then(Value::as_object)
            .and_then(|c| field(c, "bundles"))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        for b in list {
            let image = b
                .as_object()
                .and_then(|o| field(o, "image"))
                .and_then(Value::as_str)
                .unwrap_or("");
            images.entry(arch).or_default().push(image.to_owned());
        }
    }
    images
}

/// Renders every distinct image once; an empty result is an error, as in opm.
fn resolve_images(
    images: &BTreeMap<&str, Vec<String>>,
    resolver: &dyn BundleResolver,
) -> Result<BTreeMap<String, Rendered>, TemplateError> {
    let mut rendered: BTreeMap<String, Rendered> = BTreeMap::new();
    for image in images.values().flatten() {
        if rendered.contains_key(image) {
            continue;
        }
        let r = resolver
            .resolve(image)
            .map_err(|source| TemplateError::Resolve {
                image: image.clone(),
                source,
            })?;
        rendered.insert(image.clone(), r);
    }
    if rendered.is_empty() {
        return Err(err(
            "render: no bundles specified or no bundles could be rendered".to_owned(),
        ));
    }
    Ok(rendered)
}

/// Bundle name → version, per archetype.
type ArchetypeVersions = BTreeMap<&'static str, BTreeMap<String, Version>>;

/// Reads each listed bundle's package and version: one package for all bundles, unique
/// names per archetype, and versions orderable once build metadata is ignored.
fn bundle_versions(
    images: &BTreeMap<&str, Vec<String>>,
    rendered: &BTreeMap<String, Rendered>,
) -> Result<(String, ArchetypeVersions), TemplateError> {
    let mut pkg_name = String::new();
    let mut versions: ArchetypeVersions = BTreeMap::new();
    for arch in ARCHETYPES {
        let mut entries: BTreeMap<String, Version> = BTreeMap::new();
        for image in images.get(arch).into_iter().flatten() {
            let b = &rendered[image].bundle;
            let (name, v) = package_version(b)?;
            if pkg_name.is_empty() {
                pkg_name = name.clone();
            } else if name != pkg_name {
                return Err(err(format!(
                    "bundle {name:?} does not belong to this package: {pkg_name:?}"
                )));
            }
            if entries.insert(b.name.clone(), v).is_some() {
                return Err(err(format!("duplicate bundle name {:?}", b.name)));
            }
        }
        check_build_metadata(&entries)?;
        versions.insert(arch, entries);
    }
    Ok((pkg_name, versions))
}

/// The bundle's single `olm.package` property: package name and parsed version.
fn package_version(
    b: &crate::catalog::declcfg::Bundle,
) -> Result<(String, Version), TemplateError> {
    let packages: Vec<(String, String)> = b
        .properties
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match property::parse(i, p) {
            Ok(Typed::Package {
                package_name,
                version,
                ..
            }) => Some((package_name, version)),
            _ => None,
        })
        .collect();
    let [(name, version)] = packages.as_slice() else {
        return Err(err(format!(
            "bundle {:?} has multiple \"olm.package\" properties, expected exactly 1",
            b.name
        )));
    };
    let v = Version::parse(version).map_err(|e| {
        err(format!(
            "bundle {:?} has invalid version {version:?}: {e}",
            b.name
        ))
    })?;
    Ok((name.clone(), v))
}

/// Refuses versions that differ only by build metadata (they cannot be ordered).
fn check_build_metadata(entries: &BTreeMap<String, Version>) -> Result<(), TemplateError> {
    let mut stripped = BTreeSet::new();
    for v in entries.values() {
        let mut s = v.clone();
        s.build = semver::BuildMetadata::EMPTY;
        if !stripped.insert(s.to_string()) {
            return Err(err(format!(
                "encountered bundle versions which differ only by build metadata, which cannot be ordered: bundle version {:?} cannot be compared to {:?}",
                v.to_string(),
                s.to_string()
            )));
        }
    }
    Ok(())
}

/// One bundle's place in one generated channel.
struct Tuple {
    /// Index into [`ARCHETYPES`].
    arch: usize,
    kind: Kind,
    channel: String,
    name: String,
    version: Version,
    /// Position of the bundle's entry in its channel.
    index: usize,
}

/// The default-channel high-water mark: archetype priority, version, kind, channel name.
type HighWater = (usize, Version, Kind, String);

/// The generated channels with their (not yet linked) entries.
struct ChannelLayout {
    channels: BTreeMap<String, Vec<ChannelEntry>>,
    /// Every entry, in the order the edges are computed (archetype, kind, version).
    tuples: Vec<Tuple>,
    high: Option<HighWater>,
}

impl ChannelLayout {
    /// Places every bundle in its major and/or minor channel, in version order, and
    /// tracks which channel becomes the default.
    fn build(versions: &ArchetypeVersions, settings: &Settings) -> Self {
        let mut layout = Self {
            channels: BTreeMap::new(),
            tuples: Vec::new(),
            high: None,
        };
        for (arch_index, arch) in ARCHETYPES.iter().enumerate() {
            let bundles = &versions[arch];
            let mut names: Vec<&String> = bundles.keys().collect();
            names.sort_by(|a, b| cmp_versions(&bundles[*a], &bundles[*b]));
            for name in names {
                let v = &bundles[name];
                let mut kinds = Vec::new();
                if settings.major {
                    kinds.push((Kind::Major, format!("{arch}-v{}", v.major)));
                }
                if settings.minor {
                    kinds.push((Kind::Minor, format!("{arch}-v{}.{}", v.major, v.minor)));
                }
                for (kind, channel) in kinds {
                    layout.place(arch_index, kind, channel, name, v, settings.preference);
                }
            }
        }
        layout.tuples.sort_by(|a, b| {
            a.arch
                .cmp(&b.arch)
                .then(a.kind.cmp(&b.kind))
                .then_with(|| cmp_versions(&a.version, &b.version))
        });
        layout
    }

    /// Appends one bundle to one channel; a new channel may become the default.
    fn place(
        &mut self,
        arch_index: usize,
        kind: Kind,
        channel: String,
        name: &str,
        v: &Version,
        preference: Kind,
    ) {
        let high = &mut self.high;
        let entries = self.channels.entry(channel.clone()).or_insert_with(|| {
            if beats_high_water(high.as_ref(), arch_index, v, kind, preference) {
                *high = Some((arch_index, v.clone(), kind, channel.clone()));
            }
            Vec::new()
        });
        entries.push(ChannelEntry {
            name: name.to_owned(),
            ..ChannelEntry::default()
        });
        self.tuples.push(Tuple {
            arch: arch_index,
            kind,
            channel,
            name: name.to_owned(),
            version: v.clone(),
            index: entries.len() - 1,
        });
    }

    /// Sets `replaces` and `skips`: at each change of archetype, kind, major or minor the
    /// previous entry replaces the highest entry of the previous minor and skips the
    /// rest of its major.
    fn link_entries(&mut self) {
        let tuples = &self.tuples;
        let mut prev_z_max = String::new();
        let mut cur_skips: BTreeSet<String> = BTreeSet::new();
        for i in 1..tuples.len() {
            let (prev, cur) = (&tuples[i - 1], &tuples[i]);
            let arch_change = cur.arch != prev.arch;
            let kind_change = cur.kind != prev.kind;
            let x_change = cur.version.major != prev.version.major;
            let y_change = x_change || cur.version.minor != prev.version.minor;
            if arch_change || kind_change || x_change || y_change {
                finalize(&mut self.channels, prev, &prev_z_max, &cur_skips);
            }
            if arch_change || kind_change || x_change {
                cur_skips.clear();
                prev_z_max.clear();
            } else {
                if y_change {
                    prev_z_max = prev.name.clone();
                }
                cur_skips.insert(prev.name.clone());
            }
        }
        if tuples.len() > 1 {
            let (prev, last) = (&tuples[tuples.len() - 2], &tuples[tuples.len() - 1]);
            if prev.arch == last.arch
                && prev.kind == last.kind
                && prev.version.major == last.version.major
            {
                finalize(&mut self.channels, last, &prev_z_max, &cur_skips);
            }
        }
    }

    /// The channel chosen as the package's default (empty if there is none).
    fn default_channel(&self) -> String {
        self.high.as_ref().map(|h| h.3.clone()).unwrap_or_default()
    }
}

/// Whether a new channel (archetype, version, kind) outranks the current default:
/// the more stable archetype, then the higher version, then the preferred kind.
fn beats_high_water(
    high: Option<&HighWater>,
    arch_index: usize,
    v: &Version,
    kind: Kind,
    preference: Kind,
) -> bool {
    match high {
        None => true,
        Some((ha, hv, hk, _)) => {
            if arch_index != *ha {
                arch_index > *ha
            } else if cmp_versions(v, hv) != std::cmp::Ordering::Equal {
                cmp_versions(v, hv) == std::cmp::Ordering::Greater
            } else if kind != *hk {
                kind == preference || (*hk != preference && kind > *hk)
            } else {
                false
            }
        }
    }
}

/// Writes one entry's `replaces` and `skips` (the replaced entry is not also skipped).
fn finalize(
    channels: &mut BTreeMap<String, Vec<ChannelEntry>>,
    t: &Tuple,
    replaces: &str,
    skips: &BTreeSet<String>,
) {
    if let Some(entry) = channels
        .get_mut(&t.channel)
        .and_then(|e| e.get_mut(t.index))
    {
        entry.replaces = replaces.to_owned();
        let list: Vec<String> = skips.iter().filter(|s| *s != replaces).cloned().collect();
        if !list.is_empty() {
            entry.skips = list;
        }
    }
}

/// The `olm.package` blob; description and icon come from the CSV of the default
/// channel's last entry.
fn head_package(
    pkg_name: &str,
    default_channel: &str,
    channels: &BTreeMap<String, Vec<ChannelEntry>>,
    rendered: &BTreeMap<String, Rendered>,
) -> Package {
    let mut package = Package {
        origin: None,
        schema: SCHEMA_PACKAGE.to_owned(),
        name: pkg_name.to_owned(),
        default_channel: default_channel.to_owned(),
        icon: None,
        description: String::new(),
        properties: Vec::new(),
    };
    if let Some(head) = channels.get(default_channel).and_then(|e| e.last())
        && let Some(csv) = rendered
            .values()
            .find(|r| r.bundle.name == head.name)
            .and_then(|r| r.csv.as_ref())
    {
        let spec = ClusterServiceVersion::read(csv).0.spec.unwrap_or_default();
        if let Some(d) = &spec.description {
            package.description = d.clone();
        }
        package.icon = spec
            .icon
            .as_ref()
            .and_then(|icons| icons.first())
            .map(|icon| {
                let text = |field: &Option<String>| field.clone().unwrap_or_default();
                Icon::new(text(&icon.base64data), text(&icon.mediatype))
            });
    }
    package
}
