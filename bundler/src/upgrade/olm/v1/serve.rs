//! The images OLM v1 pulls, served from a [`LocalRegistry`]: OLM v1 installs a bundle only
//! from its image, so each bundle of the catalog is built into a registry+v1 bundle image from
//! its `olm.bundle.object` manifests (the same manifests OLM v0 installs inline), pushed, and
//! named by digest in the catalog, which is built into a catalog image and pushed too. All
//! daemonless (olmpack's own image builder and registry client), all on 127.0.0.1.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use olmpack_envtest::olmv1::LocalRegistry;
use serde_json::Value;

use super::super::OlmRunError;
use crate::catalog::declcfg::{Bundle, DeclarativeConfig};
use crate::catalog::load::{LoadOptions, load_dir_with};
use crate::catalog::property::{self, Typed};
use crate::image::auth::Credentials;
use crate::image::build::{BuildOptions, build_bundle_image, build_catalog_image};
use crate::image::progress::Progress;
use crate::image::push::push_layout;
use crate::image::registry::RegistryAccess;

/// The repository path under the registry of every image pushed.
const NAMESPACE: &str = "olmpack";

/// A bundle of the catalog as OLM v1 is served it.
#[derive(Clone, Debug)]
pub struct ServedBundle {
    /// Its version (`olm.package`), the version a ClusterExtension is pinned to.
    pub version: String,
    /// Its manifests (`olm.bundle.object`), the CSV among them.
    pub objects: Vec<Value>,
}

/// The pushed images; the files they were built from are removed on drop.
#[derive(Debug)]
pub struct Served {
    /// The catalog image, by digest.
    pub catalog: String,
    /// Each bundle by name.
    pub bundles: BTreeMap<String, ServedBundle>,
    _dir: tempfile::TempDir,
}

/// Builds and pushes every bundle image and the catalog image of `catalog_dir` to `registry`.
pub async fn serve(
    catalog_dir: &Path,
    registry: &LocalRegistry,
    limits: &crate::input::Limits,
) -> Result<Served, OlmRunError> {
    let options = LoadOptions {
        limits: *limits,
        ..LoadOptions::default()
    };
    let mut config = load_dir_with(catalog_dir, options)
        .map_err(|source| OlmRunError::Load {
            dir: catalog_dir.to_owned(),
            source,
        })?
        .config;
    let dir = tempfile::Builder::new()
        .prefix("olmpack-olmv1-images-")
        .tempdir()
        .map_err(|source| OlmRunError::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let build = BuildOptions {
        limits: *limits,
        ..BuildOptions::default()
    };
    let mut bundles = BTreeMap::new();
    let channels = channels_of(&config);
    for bundle in &mut config.bundles {
        let served = served_bundle(bundle)?;
        let root = dir.path().join("bundles").join(&bundle.name);
        let in_channels = channels.get(&bundle.name).cloned().unwrap_or_default();
        write_bundle_dir(&root, &bundle.package, &in_channels, &served.objects)?;
        let layout = dir.path().join("layouts").join(&bundle.name);
        build_bundle_image(&root, &layout, &build).map_err(|source| OlmRunError::BuildImage {
            what: format!("the bundle image of {}", bundle.name),
            source: Box::new(source),
        })?;
        let repo = format!("{}/{NAMESPACE}/{}-bundle", registry.host(), bundle.package);
        bundle.image = push(&layout, &format!("{repo}:{}", tag(&bundle.name))).await?;
        bundles.insert(bundle.name.clone(), served);
    }
    let catalog = write_catalog(&config, &dir.path().join("catalog"))?;
    let layout = dir.path().join("layouts/catalog");
    build_catalog_image(&catalog, &layout, &build, None, &Progress::Quiet)
        .await
        .map_err(|source| OlmRunError::BuildImage {
            what: "the catalog image".to_owned(),
            source: Box::new(source),
        })?;
    let target = format!("{}/{NAMESPACE}/catalog:latest", registry.host());
    let catalog = push(&layout, &target).await?;
    Ok(Served {
        catalog,
        bundles,
        _dir: dir,
    })
}

/// The bundle's version and decoded manifests.
fn served_bundle(bundle: &Bundle) -> Result<ServedBundle, OlmRunError> {
    let mut version = None;
    let mut objects = Vec::new();
    for (i, p) in bundle.properties.iter().enumerate() {
        match property::parse(i, p) {
            Ok(Typed::Package { version: v, .. }) => version = Some(v),
            Ok(Typed::BundleObject(bytes)) => {
                let object = serde_json::from_slice(&bytes).map_err(|e| OlmRunError::Bundle {
                    bundle: bundle.name.clone(),
                    problem: format!("olm.bundle.object #{i} is not a JSON object: {e}"),
                })?;
                objects.push(object);
            }
            _ => {}
        }
    }
    if objects.is_empty() {
        return Err(OlmRunError::NoObjects {
            bundle: bundle.name.clone(),
        });
    }
    let version = version.ok_or_else(|| OlmRunError::Bundle {
        bundle: bundle.name.clone(),
        problem: "no olm.package property with its version".to_owned(),
    })?;
    Ok(ServedBundle { version, objects })
}

/// The channels each bundle is an entry of, by bundle name.
fn channels_of(config: &DeclarativeConfig) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for channel in &config.channels {
        for entry in &channel.entries {
            out.entry(entry.name.clone())
                .or_default()
                .push(channel.name.clone());
        }
    }
    out
}

/// A registry+v1 bundle directory of `objects`: `manifests/` (one JSON file per object) and
/// `metadata/annotations.yaml`.
fn write_bundle_dir(
    root: &Path,
    package: &str,
    channels: &[String],
    objects: &[Value],
) -> Result<(), OlmRunError> {
    for (i, object) in objects.iter().enumerate() {
        let kind = object["kind"].as_str().unwrap_or("object").to_lowercase();
        let path = root.join("manifests").join(format!("{i:03}-{kind}.json"));
        write(
            &path,
            &serde_json::to_string_pretty(object).unwrap_or_default(),
        )?;
    }
    let annotations = serde_json::json!({"annotations": {
        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": package,
        "operators.operatorframework.io.bundle.channels.v1": channels.join(","),
    }});
    let path = root.join("metadata/annotations.yaml");
    write(
        &path,
        &serde_json::to_string_pretty(&annotations).unwrap_or_default(),
    )
}

/// The catalog with every bundle naming its pushed image, as one `catalog.json` in `dir`.
fn write_catalog(config: &DeclarativeConfig, dir: &Path) -> Result<PathBuf, OlmRunError> {
    let text =
        crate::catalog::serialize::to_string(config, crate::catalog::serialize::Format::Json)?;
    write(&dir.join("catalog.json"), &text)?;
    Ok(dir.to_owned())
}

fn write(path: &Path, text: &str) -> Result<(), OlmRunError> {
    let made = match path.parent() {
        Some(parent) => std::fs::create_dir_all(parent),
        None => Ok(()),
    };
    made.and_then(|()| std::fs::write(path, text))
        .map_err(|source| OlmRunError::Write {
            path: path.to_owned(),
            source,
        })
}

/// Pushes the layout to `target`; the pushed image by digest.
async fn push(layout: &Path, target: &str) -> Result<String, OlmRunError> {
    let access = RegistryAccess {
        credentials: Credentials::Anonymous,
        ..RegistryAccess::default()
    };
    let source = layout.display().to_string();
    let report = push_layout(&source, target, &access, &Progress::Quiet)
        .await
        .map_err(|source| OlmRunError::PushImage {
            target: target.to_owned(),
            source: Box::new(source),
        })?;
    Ok(report.pinned)
}

/// A tag made of the bundle name: characters a tag may not hold become `-`, at most 128.
fn tag(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '.' | '-' => c,
            _ => '-',
        })
        .take(128)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_keeps_what_a_tag_may_hold() {
        assert_eq!(tag("demo.v1.0.0+build/1"), "demo.v1.0.0-build-1");
        assert_eq!(tag(&"x".repeat(200)).len(), 128);
    }
}
