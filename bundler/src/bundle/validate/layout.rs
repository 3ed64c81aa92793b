//! `bundle/` rules: directory layout, annotations, Dockerfile labels, object kinds, size.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{on, str_at};
use crate::bundle::files::{
    CHANNELS_KEY, DEFAULT_CHANNEL_KEY, MANIFESTS_KEY, MEDIATYPE_KEY, METADATA_KEY, PACKAGE_KEY,
};
use crate::bundle::load::{ANNOTATIONS_FILE, LoadedBundle, MANIFESTS_DIR, Object};
use crate::bundle::manifests::SUPPORTED_EXTRA_KINDS;
use olmpack_model::csv::{CsvSpec, StrategyDeployment};
use olmpack_model::names::{is_dns1123_label, is_dns1123_subdomain};
use olmpack_model::report::Finding;

/// OLM v0 stages bundles in ConfigMaps: gzip + base64 of all files must fit in 1 MiB.
pub const SIZE_LIMIT: u64 = 1024 * 1024;

/// `spec`: the bundle's CSV, as the validators read it.
pub(super) fn check(bundle: &LoadedBundle, spec: Option<&CsvSpec>, out: &mut Vec<Finding>) {
    for problem in &bundle.problems {
        out.push(
            Finding::error("bundle/unreadable-file", problem.message.clone())
                .file(problem.file.clone()),
        );
    }
    for note in &bundle.lenient {
        out.push(
            Finding::warning("bundle/lenient-yaml", note.message.clone()).file(note.file.clone()),
        );
    }
    manifests_dir(bundle, out);
    annotations(bundle, out);
    dockerfile(bundle, out);
    objects(bundle, spec, out);
    size(bundle, out);
    metadata_lists(bundle, out);
}

fn manifests_dir(bundle: &LoadedBundle, out: &mut Vec<Finding>) {
    let in_manifests: Vec<&PathBuf> = bundle
        .files
        .keys()
        .filter(|p| p.starts_with(MANIFESTS_DIR))
        .collect();
    if in_manifests.is_empty() {
        out.push(
            Finding::error(
                "bundle/no-manifests",
                "the bundle has no manifests/ directory or it is empty",
            )
            .file(MANIFESTS_DIR),
        );
        return;
    }
    let mut subdirs = BTreeSet::new();
    for path in in_manifests {
        let rest = path.strip_prefix(MANIFESTS_DIR).unwrap_or(path);
        let mut components = rest.components();
        let first = components.next();
        if components.next().is_some() {
            if let Some(dir) = first {
                subdirs.insert(Path::new(MANIFESTS_DIR).join(dir.as_os_str()));
            }
            continue;
        }
        let name = rest.to_string_lossy();
        if name.starts_with('.') {
            out.push(
                Finding::warning(
                    "bundle/hidden-file",
                    "hidden files in manifests/ are refused by operator-framework/api's bundle loader (operator-sdk bundle validate); opm render ignores them",
                )
                .file(path.clone()),
            );
        } else if !matches!(
            rest.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(
                Finding::warning(
                    "bundle/not-a-manifest",
                    "manifests/ should hold only .yaml, .yml or .json files; this file is ignored",
                )
                .file(path.clone()),
            );
        }
    }
    for dir in subdirs {
        out.push(Finding::warning("bundle/manifests-subdirectory", "manifests/ should be flat: operator-framework/api's bundle loader refuses a subdirectory; opm render ignores it").file(dir));
    }
    match bundle.csvs().count() {
        0 => out.push(
            Finding::error("bundle/no-csv", "the bundle has no ClusterServiceVersion")
                .file(MANIFESTS_DIR),
        ),
        1 => {}
        n => {
            for csv in bundle.csvs() {
                out.push(on(
                    csv,
                    Finding::error(
                        "bundle/multiple-csvs",
                        format!(
                            "the bundle has {n} ClusterServiceVersions; it must have exactly one"
                        ),
                    ),
                ));
            }
        }
    }
}

fn annotations(bundle: &LoadedBundle, out: &mut Vec<Finding>) {
    let file = PathBuf::from(ANNOTATIONS_FILE);
    let Some(annotations) = &bundle.annotations else {
        if !bundle.files.contains_key(&file) {
            out.push(
                Finding::error(
                    "bundle/missing-annotations",
                    "metadata/annotations.yaml is missing",
                )
                .file(file)
                .hint("every registry+v1 bundle needs it; `olmpack bundle generate` writes it"),
            );
        }
        return;
    };
    let at = |finding: Finding, key: &str| {
        finding
            .file(file.clone())
            .field(format!("annotations.{key}"))
    };
    format_annotations(annotations, &at, out);
    package_annotations(annotations, &at, out);
}

/// The annotations every registry+v1 bundle needs, with their fixed values.
fn format_annotations(
    annotations: &BTreeMap<String, String>,
    at: &dyn Fn(Finding, &str) -> Finding,
    out: &mut Vec<Finding>,
) {
    for key in [
        MEDIATYPE_KEY,
        MANIFESTS_KEY,
        METADATA_KEY,
        PACKAGE_KEY,
        CHANNELS_KEY,
    ] {
        if !annotations.contains_key(key) {
            out.push(at(
                Finding::error(
                    "bundle/annotation-missing",
                    format!("annotation {key} is required"),
                ),
                key,
            ));
        }
    }
    for (key, wanted) in [
        (MEDIATYPE_KEY, "registry+v1"),
        (MANIFESTS_KEY, "manifests/"),
        (METADATA_KEY, "metadata/"),
    ] {
        if let Some(value) = annotations.get(key)
            && value != wanted
        {
            out.push(at(
                Finding::error(
                    "bundle/annotation-value",
                    format!("{key} is {value:?}; registry+v1 bundles need {wanted:?}"),
                ),
                key,
            ));
        }
    }
}

/// The package name, the channel list and the default channel (one of the channels).
fn package_annotations(
    annotations: &BTreeMap<String, String>,
    at: &dyn Fn(Finding, &str) -> Finding,
    out: &mut Vec<Finding>,
) {
    if let Some(package) = annotations.get(PACKAGE_KEY)
        && !is_dns1123_label(package)
    {
        out.push(at(
            Finding::error(
                "bundle/package-name",
                format!("package name {package:?} is not a DNS-1123 label"),
            ),
            PACKAGE_KEY,
        ));
    }
    let channels: Vec<&str> = annotations
        .get(CHANNELS_KEY)
        .map(|c| c.split(',').map(str::trim).collect())
        .unwrap_or_default();
    if annotations.contains_key(CHANNELS_KEY) && channels.iter().any(|c| c.is_empty()) {
        out.push(at(
            Finding::error(
                "bundle/channels",
                "the channel list is empty or has an empty entry",
            ),
            CHANNELS_KEY,
        ));
    }
    if let Some(default) = annotations.get(DEFAULT_CHANNEL_KEY)
        && !channels.contains(&default.as_str())
    {
        out.push(at(
            Finding::error(
                "bundle/default-channel",
                format!(
                    "default channel {default:?} is not one of the bundle's channels ({})",
                    channels.join(", ")
                ),
            ),
            DEFAULT_CHANNEL_KEY,
        ));
    }
}

/// `bundle.Dockerfile`, when present, must label the image exactly as annotations.yaml says.
fn dockerfile(bundle: &LoadedBundle, out: &mut Vec<Finding>) {
    let Some(text) = bundle
        .files
        .get(Path::new("bundle.Dockerfile"))
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
    else {
        return;
    };
    let Some(annotations) = &bundle.annotations else {
        return;
    };
    let labels = dockerfile_labels(&text);
    for (key, value) in annotations {
        match labels.get(key) {
            None => out.push(Finding::warning("bundle/dockerfile-labels", format!("bundle.Dockerfile has no LABEL {key}; an image built from it would not match annotations.yaml")).file("bundle.Dockerfile").field(key.clone())),
            Some(found) if found != value => out.push(Finding::warning("bundle/dockerfile-labels", format!("LABEL {key} is {found:?} but annotations.yaml says {value:?}")).file("bundle.Dockerfile").field(key.clone())),
            Some(_) => {}
        }
    }
}

/// `LABEL k=v k2="v 2"` lines of a Dockerfile (continuations joined, quotes removed).
pub fn dockerfile_labels(text: &str) -> BTreeMap<String, String> {
    let joined = text.replace("\\\n", " ");
    let mut labels = BTreeMap::new();
    for line in joined.lines() {
        let line = line.trim();
        let Some(rest) = line
            .strip_prefix("LABEL ")
            .or_else(|| line.strip_prefix("label "))
        else {
            continue;
        };
        let mut chars = rest.chars().peekable();
        loop {
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
            if key.is_empty() {
                break;
            }
            let mut value = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some(n) = chars.next() {
                                value.push(if n == 'n' { '\n' } else { n });
                            }
                        }
                        '"' => break,
                        c => value.push(c),
                    }
                }
            } else {
                while let Some(c) = chars.peek() {
                    if c.is_whitespace() {
                        break;
                    }
                    value.push(*c);
                    chars.next();
                }
            }
            labels.insert(key.trim().to_owned(), value);
        }
    }
    labels
}

fn objects(bundle: &LoadedBundle, spec: Option<&CsvSpec>, out: &mut Vec<Finding>) {
    let mut seen: BTreeMap<(String, String), PathBuf> = BTreeMap::new();
    let strategy = spec.and_then(CsvSpec::strategy);
    let deployment_accounts: BTreeSet<&str> = (strategy.and_then(|s| s.deployments.as_ref()))
        .into_iter()
        .flatten()
        .map(StrategyDeployment::service_account)
        .collect();
    for object in &bundle.objects {
        if object.api_version().is_empty() || object.kind().is_empty() || object.name().is_empty() {
            let field = if object.api_version().is_empty() {
                "apiVersion"
            } else if object.kind().is_empty() {
                "kind"
            } else {
                "metadata.name"
            };
            out.push(
                Finding::error("bundle/object-metadata", format!("{field} is required"))
                    .file(object.file.clone())
                    .field(field),
            );
            continue;
        }
        metadata_types(object, out);
        object_name(object, out);
        if !SUPPORTED_EXTRA_KINDS.contains(&object.kind()) {
            out.push(on(
                object,
                Finding::error(
                    "bundle/unsupported-kind",
                    format!(
                        "kind {} is not among the kinds OLM v0 creates from a registry+v1 bundle: its install plan fails on that step",
                        object.kind()
                    ),
                )
                .field("kind"),
            ));
        }
        let key = (object.kind().to_owned(), object.name().to_owned());
        if let Some(first) = seen.insert(key, object.file.clone()) {
            out.push(on(
                object,
                Finding::error(
                    "bundle/duplicate-object",
                    format!(
                        "{} is also defined in {}",
                        object.display_name(),
                        first.display()
                    ),
                ),
            ));
        }
        if object.kind() == "ServiceAccount" && deployment_accounts.contains(object.name()) {
            out.push(on(object, Finding::error("bundle/service-account-conflict", format!("ServiceAccount {} is the service account of a CSV deployment; OLM creates it, so it must not be in the bundle", object.name()))));
        }
    }
}

/// `metadata.namespace` (and the other string fields) given as a number or mapping: Go
/// cannot decode the object's metadata.
fn metadata_types(object: &Object, out: &mut Vec<Finding>) {
    for key in ["name", "namespace", "generateName"] {
        match object.value.pointer(&format!("/metadata/{key}")) {
            None | Some(Value::Null | Value::String(_)) => {}
            Some(other) => out.push(on(
                object,
                Finding::error(
                    "bundle/object-metadata",
                    format!("metadata.{key} must be a string, found {other}"),
                )
                .field(format!("metadata.{key}")),
            )),
        }
    }
}

/// An object's name as kube-apiserver takes it: no object's name may be `.` or `..` or hold
/// `/` or `%` (it is a segment of the object's URL); a ConfigMap's, Secret's and
/// ServiceAccount's is a DNS-1123 subdomain. OLM creates the object as it is written, and the
/// API server refuses it: the install fails on that step.
fn object_name(object: &Object, out: &mut Vec<Finding>) {
    let name = object.name();
    let problem = if name == "." || name == ".." {
        Some(format!(
            "{name:?}: kube-apiserver refuses it as any object's name"
        ))
    } else if let Some(c) = name.chars().find(|c| matches!(c, '/' | '%')) {
        Some(format!(
            "{name:?} holds {c:?}, which kube-apiserver refuses in any object's name"
        ))
    } else if matches!(object.kind(), "ConfigMap" | "Secret" | "ServiceAccount")
        && !is_dns1123_subdomain(name)
    {
        Some(format!(
            "{name:?} is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.', at most 253 characters), which kube-apiserver requires of a {}'s name",
            object.kind()
        ))
    } else {
        None
    };
    if let Some(problem) = problem {
        out.push(on(
            object,
            Finding::error("bundle/object-name", problem).field("metadata.name"),
        ));
    }
}

/// gzip + base64 size of every file, as OLM v0 stages it.
fn size(bundle: &LoadedBundle, out: &mut Vec<Finding>) {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for contents in bundle.files.values() {
        let _ = encoder.write_all(contents);
    }
    let compressed = encoder.finish().map(|v| v.len() as u64).unwrap_or(0);
    let encoded = compressed.div_ceil(3) * 4;
    if encoded > SIZE_LIMIT {
        out.push(Finding::error("bundle/size", format!("the bundle is {encoded} bytes gzipped and base64-encoded; OLM's limit is {SIZE_LIMIT}")).hint("move large objects out of the bundle or shrink CRD schemas (descriptions)"));
    } else if encoded * 100 > SIZE_LIMIT * 85 {
        out.push(Finding::warning("bundle/size", format!("the bundle is {encoded} bytes gzipped and base64-encoded, over 85% of OLM's {SIZE_LIMIT}-byte limit")));
    }
}

const PROPERTY_TYPES: [&str; 7] = [
    "olm.package",
    "olm.gvk",
    "olm.maxOpenShiftVersion",
    "olm.label",
    "olm.constraint",
    "olm.deprecated",
    "olm.substitutesFor",
];
const DEPENDENCY_TYPES: [&str; 4] = ["olm.package", "olm.gvk", "olm.label", "olm.constraint"];

fn metadata_lists(bundle: &LoadedBundle, out: &mut Vec<Finding>) {
    for (items, file, rule, known) in [
        (
            &bundle.properties,
            "metadata/properties.yaml",
            "bundle/property",
            &PROPERTY_TYPES[..],
        ),
        (
            &bundle.dependencies,
            "metadata/dependencies.yaml",
            "bundle/dependency",
            &DEPENDENCY_TYPES[..],
        ),
    ] {
        let key = if rule == "bundle/property" {
            "properties"
        } else {
            "dependencies"
        };
        for (i, item) in items.iter().flatten().enumerate() {
            let kind = str_at(item, "/type");
            if kind.is_empty() || item.get("value").is_none() {
                out.push(
                    Finding::error(rule, "each entry needs `type` and `value`")
                        .file(file)
                        .field(format!("{key}[{i}]")),
                );
            } else if rule == "bundle/property" && !known.contains(&kind) && !kind.contains('.') {
                out.push(
                    Finding::warning(rule, format!("unknown type {kind:?}"))
                        .file(file)
                        .field(format!("{key}[{i}].type")),
                );
            }
        }
    }
}
