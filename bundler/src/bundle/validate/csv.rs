//! `csv/` rules: the ClusterServiceVersion's own fields, examples, edges, images, install modes,
//! and its agreement with the bundle's CRDs and annotations.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::Context;
use crate::bundle::files::PACKAGE_KEY;
use olmpack_model::csv::examples::{ALM_EXAMPLES, OLM_EXAMPLES, read as read_examples};
use olmpack_model::decode::text;
use olmpack_model::names::is_dns1123_subdomain;
use olmpack_model::objects::{self, DeploymentSpec, Identity, PolicyRule};
use olmpack_model::report::Finding;

pub(super) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    required_fields(ctx, out);
    name_and_version(ctx, out);
    edges(ctx, out);
    install(ctx, out);
    install_modes(ctx, out);
    min_kube_version(ctx, out);
    annotations(ctx, out);
    owned_crds(ctx, out);
    examples(ctx, out);
    related_images(ctx, out);
}

fn required_fields(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    if ctx.csv.api_version() != "operators.coreos.com/v1alpha1" {
        out.push(ctx.at(
            Finding::error(
                "csv/api-version",
                format!(
                    "apiVersion is {:?}; it must be operators.coreos.com/v1alpha1",
                    ctx.csv.api_version()
                ),
            ),
            "apiVersion",
        ));
    }
    let spec = &ctx.spec;
    let install = spec.install.as_ref();
    let given_spec = ctx.raw_spec().is_object();
    for (given, field) in [
        (given_spec, "spec"),
        (
            text_given(&spec.display_name, &spec.extra, "displayName"),
            "spec.displayName",
        ),
        (
            install.is_some() || non_null(&spec.extra, "install"),
            "spec.install",
        ),
        (
            install.is_some_and(|i| text_given(&i.strategy, &i.extra, "strategy")),
            "spec.install.strategy",
        ),
        (
            text_given(&spec.version, &spec.extra, "version"),
            "spec.version",
        ),
    ] {
        if !given {
            out.push(ctx.at(
                Finding::error("csv/missing-field", format!("{field} is required")),
                field,
            ));
        }
    }
}

/// Whether an object's field `key` is given: a non-blank string in its typed place, or a
/// value of another type (kept in `extra`; other checks judge its type).
fn text_given(typed: &Option<String>, extra: &Map<String, Value>, key: &str) -> bool {
    match typed {
        Some(text) => !text.trim().is_empty(),
        None => non_null(extra, key),
    }
}

/// Whether `extra` holds `key` with a value other than `null`.
pub(super) fn non_null(extra: &Map<String, Value>, key: &str) -> bool {
    extra.get(key).is_some_and(|v| !v.is_null())
}

fn name_and_version(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let name = ctx.csv.name();
    if !is_dns1123_subdomain(name) || name.len() > 63 {
        out.push(ctx.at(Finding::error("csv/name", format!("{name:?} must be a DNS-1123 subdomain of at most 63 characters (it is also used as a label value)")), "metadata.name"));
    }
    let version = text(&ctx.spec.version);
    if !version.is_empty() {
        match semver::Version::parse(version) {
            Err(e) => out.push(ctx.at(
                Finding::error(
                    "csv/version",
                    format!("{version:?} is not a semantic version: {e}"),
                ),
                "spec.version",
            )),
            Ok(_) => {
                let package = ctx.bundle.annotation(PACKAGE_KEY).unwrap_or("");
                let expected = format!("{package}.v{version}");
                if !package.is_empty() && name != expected {
                    out.push(ctx.at(
                        Finding::warning(
                            "csv/name-format",
                            format!(
                                "name {name:?} does not follow <package>.v<version> ({expected:?})"
                            ),
                        ),
                        "metadata.name",
                    ));
                }
            }
        }
    }
}

fn edges(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let name = ctx.csv.name();
    let replaces = text(&ctx.spec.replaces);
    if ctx.raw_spec().get("replaces").is_some() {
        if !is_dns1123_subdomain(replaces) || replaces.len() > 63 {
            out.push(ctx.at(
                Finding::warning(
                    "csv/replaces-name",
                    format!("replaces {replaces:?} is not a valid bundle name"),
                ),
                "spec.replaces",
            ));
        } else if replaces == name {
            out.push(ctx.at(
                Finding::error("csv/replaces", "a bundle cannot replace itself"),
                "spec.replaces",
            ));
        }
    }
    for (i, skip) in ctx.spec.skips.iter().flatten().enumerate() {
        if skip.is_empty() || !is_dns1123_subdomain(skip) {
            out.push(ctx.at(
                Finding::error(
                    "csv/skips",
                    format!("skips entry {skip:?} is not a valid bundle name"),
                ),
                format!("spec.skips[{i}]"),
            ));
        } else if skip == name {
            out.push(ctx.at(
                Finding::error("csv/skips", "a bundle cannot skip itself"),
                format!("spec.skips[{i}]"),
            ));
        }
    }
    if let Some(range) = ctx.annotation("olm.skipRange") {
        match olmpack_model::version::Range::parse(range) {
            Err(e) => out.push(ctx.at(
                Finding::error(
                    "csv/skip-range",
                    format!("olm.skipRange {range:?} is not a valid range: {e}"),
                ),
                "metadata.annotations.olm.skipRange",
            )),
            Ok(parsed) => {
                if let Ok(own) = semver::Version::parse(text(&ctx.spec.version))
                    && parsed.contains(&own)
                {
                    out.push(ctx.at(
                        Finding::warning(
                            "csv/skip-range-self",
                            format!(
                                "olm.skipRange {range:?} includes the bundle's own version {own}"
                            ),
                        ),
                        "metadata.annotations.olm.skipRange",
                    ));
                }
                if ctx.raw_spec().get("replaces").is_none() {
                    out.push(ctx.at(
                        Finding::warning("csv/skip-range-without-replaces", "olm.skipRange without replaces: in an OLM v0 channel the versions in the range drop out of the update graph")
                            .hint("also set replaces to the previous release"),
                        "metadata.annotations.olm.skipRange",
                    ));
                }
            }
        }
    }
}

fn install(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let strategy = text(ctx.spec.install.as_ref().map_or(&None, |i| &i.strategy));
    if !strategy.is_empty() && strategy != "deployment" {
        out.push(ctx.at(
            Finding::error(
                "csv/install-strategy",
                format!(
                    "install strategy {strategy:?} is not supported; it must be \"deployment\""
                ),
            ),
            "spec.install.strategy",
        ));
    }
    let deployments = ctx.deployments();
    if deployments.is_empty() {
        out.push(ctx.at(
            Finding::error(
                "csv/no-deployments",
                "the install strategy has no deployments",
            ),
            "spec.install.spec.deployments",
        ));
    }
    let mut names = BTreeSet::new();
    for (i, d) in deployments.iter().enumerate() {
        let name = text(&d.name);
        let field = format!("spec.install.spec.deployments[{i}].name");
        if !is_dns1123_subdomain(name) {
            out.push(ctx.at(
                Finding::error(
                    "csv/deployment-name",
                    format!("deployment name {name:?} is not a DNS-1123 subdomain"),
                ),
                field,
            ));
        } else if !names.insert(name) {
            out.push(ctx.at(
                Finding::error(
                    "csv/duplicate-deployment",
                    format!("deployment {name} is listed twice"),
                ),
                field,
            ));
        }
        if d.spec.is_none() {
            out.push(ctx.at(
                Finding::error("csv/missing-field", "deployment spec is required"),
                format!("spec.install.spec.deployments[{i}].spec"),
            ));
        }
    }
    for (list, given) in ctx.permissions() {
        for (i, p) in given.iter().enumerate() {
            if text(&p.service_account_name).is_empty() {
                out.push(ctx.at(
                    Finding::error("csv/permissions", "serviceAccountName is required"),
                    format!("spec.install.spec.{list}[{i}].serviceAccountName"),
                ));
            }
            for (j, rule) in p.rules.iter().flatten().enumerate() {
                let rule: PolicyRule = objects::view(rule);
                if rule.verbs.is_none_or(|verbs| verbs.is_empty()) {
                    out.push(ctx.at(
                        Finding::error("csv/permissions", "a policy rule needs at least one verb"),
                        format!("spec.install.spec.{list}[{i}].rules[{j}].verbs"),
                    ));
                }
            }
        }
    }
}

const MODES: [&str; 4] = [
    "OwnNamespace",
    "SingleNamespace",
    "MultiNamespace",
    "AllNamespaces",
];

fn install_modes(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let modes = ctx.spec.install_modes.as_deref().unwrap_or_default();
    if modes.is_empty() {
        out.push(ctx.at(
            Finding::error("csv/install-modes", "install modes not found"),
            "spec.installModes",
        ));
        return;
    }
    let mut seen = BTreeSet::new();
    let mut any_supported = false;
    for (i, mode) in modes.iter().enumerate() {
        let kind = text(&mode.type_);
        let field = format!("spec.installModes[{i}]");
        if !MODES.contains(&kind) {
            out.push(ctx.at(
                Finding::error(
                    "csv/install-modes",
                    format!("unknown install mode {kind:?}"),
                ),
                format!("{field}.type"),
            ));
        }
        if !seen.insert(kind) {
            out.push(ctx.at(
                Finding::error(
                    "csv/install-modes",
                    format!("install mode {kind} is listed twice"),
                ),
                format!("{field}.type"),
            ));
        }
        any_supported |= mode.supported == Some(true);
    }
    if !any_supported {
        out.push(ctx.at(
            Finding::error("csv/install-modes", "no install mode is supported"),
            "spec.installModes",
        ));
    }
}

fn min_kube_version(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    if let Some(number) = ctx
        .spec
        .extra
        .get("minKubeVersion")
        .filter(|v| v.is_number())
    {
        out.push(ctx.at(
            Finding::error(
                "csv/field-type",
                format!("minKubeVersion is the number {number}, not a string: Go cannot decode the CSV"),
            )
            .hint(format!("quote it: minKubeVersion: \"{number}.0\"")),
            "spec.minKubeVersion",
        ));
        return;
    }
    let min = text(&ctx.spec.min_kube_version);
    if min.is_empty() {
        out.push(ctx.at(
            Finding::warning(
                "csv/min-kube-version",
                "minKubeVersion is not set; OLM will offer the operator on any Kubernetes version",
            ),
            "spec.minKubeVersion",
        ));
    } else if semver::Version::parse(min.trim_start_matches('v')).is_err() {
        out.push(ctx.at(
            Finding::error(
                "csv/min-kube-version",
                format!("minKubeVersion {min:?} is not a semantic version like 1.28.0"),
            ),
            "spec.minKubeVersion",
        ));
    }
}

const CASED_ANNOTATIONS: [&str; 5] = [
    "olm.operatorGroup",
    "olm.operatorNamespace",
    "olm.targetNamespaces",
    "olm.providedAPIs",
    "olm.skipRange",
];

fn annotations(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    // As read, not typed: this checks the types the typed model refuses.
    let Some(annotations) = ctx
        .csv
        .value
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    else {
        return;
    };
    for key in annotations.keys() {
        if let Some(proper) = CASED_ANNOTATIONS
            .iter()
            .find(|p| p.eq_ignore_ascii_case(key) && *p != key)
        {
            out.push(ctx.at(
                Finding::error(
                    "csv/annotation-case",
                    format!("annotation {key} uses the wrong case; OLM reads {proper}"),
                ),
                format!("metadata.annotations.{key}"),
            ));
        }
        if key == "olm.properties" {
            out.push(ctx.at(Finding::warning("csv/properties-annotation", "the olm.properties annotation is deprecated; declare properties in metadata/properties.yaml"), "metadata.annotations.olm.properties"));
        }
        if !annotations[key].is_string() {
            out.push(ctx.at(
                Finding::error("csv/annotation-type", "annotation values must be strings"),
                format!("metadata.annotations.{key}"),
            ));
        }
    }
}

/// `(group, version, kind)` of the bundle's CRD versions.
fn bundle_crd_versions(ctx: &Context<'_>) -> BTreeMap<(String, String, String), String> {
    let mut out = BTreeMap::new();
    for crd in ctx.bundle.crds() {
        let typed = crd.typed();
        for v in typed.versions() {
            let (group, kind) = (typed.group().to_owned(), typed.kind().to_owned());
            out.insert((group, v.name().to_owned(), kind), crd.name().to_owned());
        }
    }
    out
}

fn owned_crds(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let in_bundle = bundle_crd_versions(ctx);
    let mut owned_kinds = BTreeSet::new();
    for (i, entry) in ctx.spec.owned_crds().iter().enumerate() {
        let name = text(&entry.name);
        let field = format!("spec.customresourcedefinitions.owned[{i}]");
        let Some((_, group)) = name.split_once('.') else {
            out.push(ctx.at(
                Finding::error(
                    "csv/owned-crd",
                    format!("owned CRD name {name:?} must be <plural>.<group>"),
                ),
                format!("{field}.name"),
            ));
            continue;
        };
        let key = (
            group.to_owned(),
            text(&entry.version).to_owned(),
            text(&entry.kind).to_owned(),
        );
        owned_kinds.insert((key.0.clone(), key.2.clone()));
        match in_bundle.get(&key) {
            Some(crd_name) if crd_name == name => {}
            _ => out.push(ctx.at(
                Finding::error(
                    "csv/owned-crd-not-in-bundle",
                    format!("owned CRD {name} {}/{} is not in the bundle", key.1, key.2),
                ),
                field.clone(),
            )),
        }
        if text(&entry.display_name).is_empty() {
            out.push(ctx.at(
                Finding::warning("csv/owned-crd", "owned CRD has no displayName"),
                format!("{field}.displayName"),
            ));
        }
    }
    for ((group, version, kind), crd) in &in_bundle {
        if !owned_kinds.contains(&(group.clone(), kind.clone())) {
            out.push(
                Finding::error("csv/crd-not-owned", format!("CRD {crd} ({group}/{version} {kind}) is in the bundle but the CSV does not own it"))
                    .file(ctx.csv.file.clone())
                    .object(ctx.csv.display_name())
                    .field("spec.customresourcedefinitions.owned"),
            );
        }
    }
}

fn examples(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let owned: BTreeSet<(String, String)> = ctx
        .spec
        .owned_crds()
        .iter()
        .filter_map(|o| {
            let (_, group) = text(&o.name).split_once('.')?;
            Some((
                format!("{group}/{}", text(&o.version)),
                text(&o.kind).to_owned(),
            ))
        })
        .collect();
    let field = "metadata.annotations.alm-examples";
    // operator-sdk's validator reads olm.examples when alm-examples is absent.
    let key = [ALM_EXAMPLES, OLM_EXAMPLES]
        .into_iter()
        .find(|key| ctx.annotation(key).is_some());
    let Some(key) = key else {
        if !owned.is_empty() {
            out.push(ctx.at(
                Finding::warning(
                    "csv/examples",
                    "no alm-examples: consoles cannot offer a sample to start from",
                ),
                field,
            ));
        }
        return;
    };
    let examples = match read_examples(ctx.csv.name(), key, ctx.annotation(key)) {
        Ok(examples) => examples,
        Err(e) => {
            out.push(ctx.at(Finding::error("csv/examples", e.problem()), e.field()));
            return;
        }
    };
    let mut covered = BTreeSet::new();
    for (i, example) in examples.iter().enumerate() {
        let example = Identity::of(example);
        let gvk = (example.api_version.to_owned(), example.kind.to_owned());
        if !owned.contains(&gvk) {
            out.push(ctx.at(
                Finding::error(
                    "csv/example-not-owned",
                    format!(
                        "example {i} is a {} {}, which no owned CRD provides",
                        gvk.0, gvk.1
                    ),
                ),
                format!("{field}[{i}]"),
            ));
        }
        covered.insert(gvk.1);
    }
    super::examples::check(ctx, &examples, out);
    for (_, kind) in &owned {
        if !covered.contains(kind) {
            out.push(ctx.at(
                Finding::warning("csv/examples", format!("owned kind {kind} has no example")),
                field,
            ));
        }
    }
}

fn related_images(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let mut names = BTreeSet::new();
    for (i, image) in ctx.spec.related_images.iter().flatten().enumerate() {
        let reference = text(&image.image);
        let field = format!("spec.relatedImages[{i}]");
        if let Err(message) = check_image_reference(reference) {
            out.push(ctx.at(
                Finding::error(
                    "csv/related-image",
                    format!("image {reference:?} {message}"),
                ),
                format!("{field}.image"),
            ));
        }
        let name = text(&image.name);
        if !name.is_empty() && !names.insert(name) {
            out.push(ctx.at(
                Finding::warning(
                    "csv/related-image",
                    format!("two related images are named {name:?}"),
                ),
                format!("{field}.name"),
            ));
        }
    }
    for (i, d) in ctx.deployments().iter().enumerate() {
        let Some(pod) = d.spec.as_ref().and_then(DeploymentSpec::pod) else {
            continue;
        };
        for (list, containers) in pod.container_lists() {
            for (j, c) in containers.iter().enumerate() {
                let reference = text(&c.image);
                if let Err(message) = check_image_reference(reference) {
                    out.push(ctx.at(Finding::error("csv/container-image", format!("image {reference:?} {message}")), format!("spec.install.spec.deployments[{i}].spec.template.spec.{list}[{j}].image")));
                }
            }
        }
    }
}

/// Checks an image reference with opm's pull-spec grammar; unlike opm, empty is an error
/// (OLM cannot pull an empty image).
fn check_image_reference(reference: &str) -> Result<(), String> {
    if reference.is_empty() {
        return Err("is empty".into());
    }
    olmpack_model::pullspec::check(reference).map_err(|e| format!("is not a valid pull spec: {e}"))
}
