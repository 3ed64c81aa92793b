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

/// Expands an `olm.semver` template given as text, read as opm reads it ([`read`]).
pub fn expand(
    text: &str,
    resolver: &dyn BundleResolver,
) -> Result<DeclarativeConfig, TemplateError> {
    expand_template(&read(text)?, resolver)
}

fn err(message: String) -> TemplateError {
    TemplateError::Semver(message)
}

/// A refusal of the template's content, at a field.
fn refuse(at: &str, problem: String) -> TemplateError {
    TemplateError::SemverRefused {
        at: at.to_owned(),
        problem,
    }
}

/// Expands an `olm.semver` template given as a parsed document ([`decode`]: a key given twice
/// can no longer be seen; [`expand`] refuses it).
pub fn expand_value(
    doc: &Value,
    resolver: &dyn BundleResolver,
) -> Result<DeclarativeConfig, TemplateError> {
    expand_template(&decode(doc)?, resolver)
}

/// Expands a template that has been read.
fn expand_template(
    template: &Template,
    resolver: &dyn BundleResolver,
) -> Result<DeclarativeConfig, TemplateError> {
    let settings = Settings::new(template)?;
    let images = template.images();
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

/// An `olm.semver` template as opm reads it (its Go struct, field for field): absent and
/// `null` fields are empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Template {
    /// `schema`.
    pub schema: String,
    /// `generateMajorChannels`.
    pub generate_major_channels: bool,
    /// `generateMinorChannels`.
    pub generate_minor_channels: bool,
    /// `defaultChannelTypePreference`.
    pub default_channel_type_preference: String,
    /// `candidate.bundles[].image`, in template order.
    pub candidate: Vec<String>,
    /// `fast.bundles[].image`, in template order.
    pub fast: Vec<String>,
    /// `stable.bundles[].image`, in template order.
    pub stable: Vec<String>,
}

impl Template {
    /// The bundle images listed per archetype (archetypes without bundles left out).
    fn images(&self) -> BTreeMap<&'static str, Vec<String>> {
        [
            ("candidate", &self.candidate),
            ("fast", &self.fast),
            ("stable", &self.stable),
        ]
        .into_iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(arch, list)| (arch, list.clone()))
        .collect()
    }
}

/// The template's top-level fields, as opm's struct names them.
const TOP_FIELDS: [&str; 7] = [
    "schema",
    "generateMajorChannels",
    "generateMinorChannels",
    "defaultChannelTypePreference",
    "candidate",
    "fast",
    "stable",
];

/// Reads an `olm.semver` template the way opm does (`sigs.k8s.io/yaml`'s `UnmarshalStrict`
/// into its Go struct), refusing what opm refuses while it reads, before any bundle is
/// rendered:
/// - only the first YAML document is read; what follows it is not even parsed (a JSON
///   template ends where its first value closes, at the end of that line);
/// - a key given twice in one mapping, at any level, is refused (even in JSON);
/// - `\/` and half a surrogate pair in a double-quoted string are refused (YAML escapes);
/// - unknown fields are refused at the top level, in an archetype and in a bundle entry;
/// - a value of the wrong type is refused (`generateMajorChannels: "true"`, `bundles: x`).
///
/// Where Go is lenient, olmpack is too:
/// - field names match ignoring case (Go's `encoding/json`): `GenerateMajorChannels`,
///   `Schema`, `ſtable` (long s folds to s); when a field is given under two spellings the
///   keys are taken in byte order and the later one wins (Go re-encodes the YAML as JSON with
///   sorted keys), an archetype given twice merging into one;
/// - `null` leaves a field as it was (false, empty), except `bundles: null`, which empties
///   the list; a `null` bundle entry has an empty image;
/// - a number or boolean where a string is wanted is read as its text (`image: 123`);
/// - YAML 1.1 booleans (`yes`, `on`, `y`) are booleans.
pub fn read(text: &str) -> Result<Template, TemplateError> {
    let first = first_document(text);
    if let Some((line, escape)) = crate::catalog::load::refused_escape(first) {
        return Err(TemplateError::SemverYaml(format!(
            "line {line}: {escape} is a JSON escape that YAML, as Go reads it, does not know"
        )));
    }
    let docs = olmpack_model::yaml::from_multi_str(first).map_err(|e| {
        TemplateError::SemverYaml(match e {
            olmpack_model::yaml::YamlError::Parse(m) | olmpack_model::yaml::YamlError::Print(m) => {
                m
            }
        })
    })?;
    decode(&docs.into_iter().next().unwrap_or(Value::Null))
}

/// The template's first YAML document (a leading byte-order mark dropped): up to the
/// second document marker (`---`), or through a document end marker (`...`), or, when the
/// document is a flow collection (JSON), through the line where it closes. Go's YAML
/// decoder reads no further, so nothing after it can make the template fail.
pub(super) fn first_document(text: &str) -> &str {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let is_marker = |line: &str, marker: &str| {
        line.strip_prefix(marker)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
    };
    let mut open = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let mut content = line;
        if is_marker(line, "---") {
            if open {
                return &text[..start];
            }
            open = true;
            content = &line[3..];
        } else if is_marker(line, "...") {
            if open {
                return &text[..at];
            }
            continue;
        }
        let trimmed = content.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || (!open && trimmed.starts_with('%')) {
            continue;
        }
        open = true;
        if trimmed.starts_with(['{', '[']) {
            let offset = start + (line.len() - trimmed.len());
            return match flow_end(&text[offset..]) {
                Some(end) => {
                    let close = offset + end;
                    let eol = text[close..]
                        .find('\n')
                        .map_or(text.len(), |i| close + i + 1);
                    &text[..eol]
                }
                None => text,
            };
        }
        // A block document: it ends at the next marker.
    }
    text
}

/// Where the flow collection `text` starts with closes (the byte after its bracket), or
/// `None` when it does not close. Quoted scalars and comments are skipped.
fn flow_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' => {
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == b'\'' {
                        if bytes.get(i + 1) == Some(&b'\'') {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    i += 1;
                }
            }
            b'#' if i == 0 || bytes[i - 1].is_ascii_whitespace() => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A key as Go's `encoding/json` compares it with a field name: ASCII letters fold case, and
/// so do the two other letters whose case folding reaches an ASCII one (`ſ` is `s`, the
/// Kelvin sign `K` is `k`); any other letter matches no field name here (all are ASCII).
pub(super) fn go_fold(key: &str) -> String {
    key.chars()
        .map(|c| match c {
            '\u{17f}' => 'S',
            '\u{212a}' => 'K',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}

/// The field of `fields` that `key` fills, as Go's decoder matches it.
fn match_field(key: &str, fields: &[&'static str]) -> Option<&'static str> {
    let folded = go_fold(key);
    fields
        .iter()
        .find(|f| f.to_ascii_uppercase() == folded)
        .copied()
}

/// A mapping's entries in the order Go's decoder sees them: by key, byte-wise (it decodes
/// JSON that Go printed from a map, with sorted keys), so of two spellings of one field the
/// later in this order wins.
pub(super) fn sorted(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    entries
}

/// A value named for a message.
pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "a mapping".to_owned(),
    }
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    }
}

/// Decodes a parsed template into opm's struct, with Go's decoder's rules (see [`read`]).
/// Go keeps decoding after a field it refuses and reports the first; this stops there.
pub fn decode(doc: &Value) -> Result<Template, TemplateError> {
    let mut t = Template::default();
    let map = match doc {
        // An empty document decodes to the empty struct (and then has no schema).
        Value::Null => return Ok(t),
        Value::Object(map) => map,
        other => {
            return Err(refuse(
                "top level",
                format!("must be a mapping, not {}", describe(other)),
            ));
        }
    };
    for (key, value) in sorted(map) {
        let Some(field) = match_field(key, &TOP_FIELDS) else {
            return Err(refuse(
                key,
                format!(
                    "unknown field: a semver template has only {}",
                    TOP_FIELDS.join(", ")
                ),
            ));
        };
        match field {
            "schema" => set_string(&mut t.schema, value, key)?,
            "generateMajorChannels" => set_bool(&mut t.generate_major_channels, value, key)?,
            "generateMinorChannels" => set_bool(&mut t.generate_minor_channels, value, key)?,
            "defaultChannelTypePreference" => {
                set_string(&mut t.default_channel_type_preference, value, key)?;
            }
            "candidate" => decode_archetype(&mut t.candidate, value, key)?,
            "fast" => decode_archetype(&mut t.fast, value, key)?,
            _ => decode_archetype(&mut t.stable, value, key)?,
        }
    }
    Ok(t)
}

/// A string field; `null` leaves it as it was, and a number or boolean is read as its text
/// (`sigs.k8s.io/yaml` turns it into a string for a string field).
fn set_string(target: &mut String, value: &Value, at: &str) -> Result<(), TemplateError> {
    match value {
        Value::Null => {}
        Value::String(s) => s.clone_into(target),
        Value::Bool(b) => *target = b.to_string(),
        Value::Number(n) => *target = n.to_string(),
        other => {
            return Err(refuse(
                at,
                format!("must be a string, not {}", describe(other)),
            ));
        }
    }
    Ok(())
}

/// A boolean field; `null` leaves it as it was, and nothing else but `true` or `false` is
/// one (not the string `"true"`, not `1`).
fn set_bool(target: &mut bool, value: &Value, at: &str) -> Result<(), TemplateError> {
    match value {
        Value::Null => {}
        Value::Bool(b) => *target = *b,
        other => {
            return Err(refuse(
                at,
                format!("must be true or false, not {}", describe(other)),
            ));
        }
    }
    Ok(())
}

/// An archetype (`candidate`, `fast`, `stable`): a mapping with only `bundles`, decoded
/// into what an earlier spelling of it left (`null` leaves that as it was).
fn decode_archetype(
    images: &mut Vec<String>,
    value: &Value,
    at: &str,
) -> Result<(), TemplateError> {
    let map = match value {
        Value::Null => return Ok(()),
        Value::Object(map) => map,
        other => {
            return Err(refuse(
                at,
                format!(
                    "must be a mapping with a bundles list, not {}",
                    describe(other)
                ),
            ));
        }
    };
    for (key, value) in sorted(map) {
        let path = join(at, key);
        if match_field(key, &["bundles"]).is_none() {
            return Err(refuse(
                &path,
                "unknown field: an archetype has only bundles".to_owned(),
            ));
        }
        match value {
            Value::Null => images.clear(),
            Value::Array(entries) => {
                images.clear();
                for (i, entry) in entries.iter().enumerate() {
                    images.push(decode_entry(entry, &format!("{path}[{i}]"))?);
                }
            }
            other => {
                return Err(refuse(
                    &path,
                    format!(
                        "must be a list of bundle entries (- image: ...), not {}",
                        describe(other)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A bundle entry: a mapping with only `image` (`null` is an entry without one).
fn decode_entry(value: &Value, at: &str) -> Result<String, TemplateError> {
    let mut image = String::new();
    let map = match value {
        Value::Null => return Ok(image),
        Value::Object(map) => map,
        other => {
            return Err(refuse(
                at,
                format!("must be a mapping with an image, not {}", describe(other)),
            ));
        }
    };
    for (key, value) in sorted(map) {
        let path = join(at, key);
        if match_field(key, &["image"]).is_none() {
            return Err(refuse(
                &path,
                "unknown field: a bundle entry has only image".to_owned(),
            ));
        }
        set_string(&mut image, value, &path)?;
    }
    Ok(image)
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
    /// Checks the template's schema and flags, refusing the combinations opm refuses.
    fn new(t: &Template) -> Result<Self, TemplateError> {
        if t.schema != SCHEMA {
            return Err(TemplateError::Schema {
                found: t.schema.clone(),
                expected: SCHEMA,
            });
        }
        let major = t.generate_major_channels;
        let minor = t.generate_minor_channels || !major;
        const AT: &str = "defaultChannelTypePreference";
        let unwanted = |kind: &str, flag: &str| {
            refuse(
                AT,
                format!(
                    "is {kind:?}, but {kind}-version channels are not generated ({flag} is not true)"
                ),
            )
        };
        let preference = match t.default_channel_type_preference.as_str() {
            "" if minor => Kind::Minor,
            "" => Kind::Major,
            "minor" if minor => Kind::Minor,
            "major" if major => Kind::Major,
            "minor" => return Err(unwanted("minor", "generateMinorChannels")),
            "major" => return Err(unwanted("major", "generateMajorChannels")),
            other => {
                return Err(refuse(
                    AT,
                    format!("must be \"major\" or \"minor\", not {other:?}"),
                ));
            }
        };
        Ok(Self {
            major,
            minor,
            preference,
        })
    }
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
                source: Box::new(source),
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

#[cfg(test)]
mod tests {
    use super::*;

    const IMG: &str = "r.io/b:v1";

    fn stable(image: &str) -> Template {
        Template {
            schema: SCHEMA.to_owned(),
            stable: vec![image.to_owned()],
            ..Template::default()
        }
    }

    /// What opm reads from templates it accepts, field for field.
    #[test]
    fn reads_what_opm_accepts_with_its_meaning() {
        let major = Template {
            generate_major_channels: true,
            default_channel_type_preference: "major".to_owned(),
            ..stable(IMG)
        };
        let cases: Vec<(&str, String, Template)> = vec![
            (
                "null flag is false",
                format!(
                    "schema: olm.semver\ngenerateMajorChannels: null\nstable: {{bundles: [{{image: {IMG}}}]}}\n"
                ),
                stable(IMG),
            ),
            (
                "capitalised keys",
                format!(
                    "Schema: olm.semver\nGenerateMajorChannels: true\nDEFAULTCHANNELTYPEPREFERENCE: major\nStable:\n  Bundles:\n  - Image: {IMG}\n"
                ),
                major.clone(),
            ),
            (
                "YAML 1.1 boolean",
                format!(
                    "schema: olm.semver\ngenerateMajorChannels: yes\ndefaultChannelTypePreference: major\nstable: {{bundles: [{{image: {IMG}}}]}}\n"
                ),
                major,
            ),
            (
                "long s folds to s",
                format!("schema: olm.semver\n\u{17f}table: {{bundles: [{{image: {IMG}}}]}}\n"),
                stable(IMG),
            ),
            (
                "of two spellings the later in byte order wins",
                format!(
                    "schema: olm.semver\nSchema: other\nstable: {{bundles: [{{image: {IMG}}}]}}\n"
                ),
                stable(IMG),
            ),
            (
                "null leaves what another spelling set",
                format!(
                    "Schema: olm.semver\nschema: null\nstable: {{bundles: [{{image: {IMG}}}]}}\n"
                ),
                stable(IMG),
            ),
            (
                "an archetype given twice merges",
                format!(
                    "schema: olm.semver\nStable: {{bundles: [{{image: {IMG}}}]}}\nstable: {{}}\n"
                ),
                stable(IMG),
            ),
            (
                "bundles: null empties the list",
                format!(
                    "schema: olm.semver\nStable: {{bundles: [{{image: {IMG}}}]}}\nstable: {{bundles: null}}\n"
                ),
                Template {
                    schema: SCHEMA.to_owned(),
                    ..Template::default()
                },
            ),
            (
                "a number is read as its text",
                "schema: olm.semver\nstable: {bundles: [{image: 123}, null]}\n".to_owned(),
                Template {
                    stable: vec!["123".to_owned(), String::new()],
                    ..stable("")
                },
            ),
            (
                "only the first document is read",
                format!(
                    "schema: olm.semver\nstable: {{bundles: [{{image: {IMG}}}]}}\n---\nfoo: [\n"
                ),
                stable(IMG),
            ),
            (
                "a document end marker ends it",
                format!(
                    "---\nschema: olm.semver\nstable: {{bundles: [{{image: {IMG}}}]}}\n...\nfoo: [\n"
                ),
                stable(IMG),
            ),
            (
                "a JSON template ends with its first value's line",
                format!(
                    "{{\"schema\": \"olm.semver\", \"stable\": {{\"bundles\": [{{\"image\": \"{IMG}\"}}]}}}}\n{{\"a\": 1}}\n"
                ),
                stable(IMG),
            ),
            (
                "an empty first document has no schema",
                format!("---\n---\nschema: olm.semver\nstable: {{bundles: [{{image: {IMG}}}]}}\n"),
                Template::default(),
            ),
        ];
        for (name, text, want) in cases {
            assert_eq!(read(&text).unwrap(), want, "{name}");
        }
    }

    #[test]
    fn first_document_cuts_where_go_stops_reading() {
        assert_eq!(first_document("a: 1\n---\nb: [\n"), "a: 1\n");
        assert_eq!(first_document("# c\n---\na: 1\n---\n"), "# c\n---\na: 1\n");
        assert_eq!(first_document("--- {a: '}'}\n--- [\n"), "--- {a: '}'}\n");
        assert_eq!(
            first_document("{\"a\": \"}\"} x\n{}\n"),
            "{\"a\": \"}\"} x\n"
        );
        assert_eq!(first_document("[1, # ]\n 2]\nb"), "[1, # ]\n 2]\n");
        assert_eq!(first_document("a: |\n  ---x\n"), "a: |\n  ---x\n");
        assert_eq!(first_document("\u{feff}a: 1\n...\nb\n"), "a: 1\n...\n");
    }

    /// A template decoded from a value whose spelling of a field opm would refuse.
    #[test]
    fn decode_refuses_wrong_types_at_the_field() {
        let e = decode(
            &serde_json::json!({"schema": "olm.semver", "fast": {"bundles": [{"image": ["x"]}]}}),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "olm.semver template: fast.bundles[0].image: must be a string, not a list; opm refuses it"
        );
        let e = decode(&serde_json::json!(["olm.semver"])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "olm.semver template: top level: must be a mapping, not a list; opm refuses it"
        );
    }
}
