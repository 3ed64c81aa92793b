//! The images OLM v1 pulls, served from a [`LocalRegistry`]: OLM v1 installs a bundle only
//! from its image, so each bundle of the catalog is built into a registry+v1 bundle image from
//! its `olm.bundle.object` manifests (the same manifests OLM v0 installs inline), pushed, and
//! named by digest in the catalog, which is built into a catalog image and pushed too. All
//! daemonless (olmpack's own image builder and registry client), all on 127.0.0.1.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use olmpack_envtest::olm::v1::LocalRegistry;
use olmpack_model::file_name::FileName;
use serde_json::Value;

use super::super::OlmRunError;
use crate::catalog::declcfg::{Bundle, DeclarativeConfig};
use crate::catalog::load::{LoadOptions, load_dir_with};
use crate::catalog::property::{self, Typed};
use crate::image::build::{build_bundle_image, build_catalog_image};
use olmpack_oci::image::auth::Credentials;
use olmpack_oci::image::build::BuildOptions;
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::push::push_layout;
use olmpack_oci::image::registry::RegistryAccess;

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
    limits: &olmpack_oci::input::Limits,
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
        let in_channels = channels.get(&bundle.name).cloned().unwrap_or_default();
        let (root, served) = stage_bundle(dir.path(), bundle, &in_channels)?;
        let layout = dir.path().join("layouts").join(bundle_path(bundle));
        build_bundle_image(&root, &layout, &build).map_err(|source| OlmRunError::BuildImage {
            what: format!("the bundle image of {}", bundle.name),
            source: Box::new(source),
        })?;
        let target = bundle_target(&registry.host(), bundle);
        bundle.image = push(&layout, &target).await?;
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

/// `<package>/<bundle>`, each a [`FileName`]: opm accepts any text as a package or bundle
/// name, so a name that is not one plain path component is written under its hash.
fn bundle_path(bundle: &Bundle) -> PathBuf {
    Path::new(FileName::or_hash(&bundle.package).as_str()).join(FileName::or_hash(&bundle.name))
}

/// Writes the registry+v1 bundle directory of `bundle` under `dir/bundles/` (see
/// [`bundle_path`]); the directory and the bundle as served.
fn stage_bundle(
    dir: &Path,
    bundle: &Bundle,
    channels: &[String],
) -> Result<(PathBuf, ServedBundle), OlmRunError> {
    let served = served_bundle(bundle)?;
    let root = dir.join("bundles").join(bundle_path(bundle));
    write_bundle_dir(&root, &bundle.package, channels, &served.objects)?;
    Ok((root, served))
}

/// A registry+v1 bundle directory of `objects`: `manifests/` (one JSON file per object, named
/// by its position and kind) and `metadata/annotations.yaml`.
fn write_bundle_dir(
    root: &Path,
    package: &str,
    channels: &[String],
    objects: &[Value],
) -> Result<(), OlmRunError> {
    for (i, object) in objects.iter().enumerate() {
        let kind = object["kind"].as_str().unwrap_or("object").to_lowercase();
        let file = format!("{i:03}-{}.json", FileName::or_hash(&kind));
        let path = root.join("manifests").join(file);
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

/// Where the bundle image of `bundle` is pushed on `host`: `olmpack/<package>-bundle:<tag>`,
/// or `olmpack/bundle:<tag>` when the package name cannot be a repository path component.
fn bundle_target(host: &str, bundle: &Bundle) -> String {
    let tag = tag(&bundle.name);
    let named = format!("{host}/{NAMESPACE}/{}-bundle:{tag}", bundle.package);
    match olmpack_model::pullspec::check(&named) {
        Ok(()) => named,
        Err(_) => format!("{host}/{NAMESPACE}/bundle:{tag}"),
    }
}

/// A tag made of the bundle name: characters a tag may not hold become `-`, one that may not
/// start a tag is preceded by `_`, at most 128.
fn tag(name: &str) -> String {
    let mapped = name.chars().map(|c| match c {
        'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '.' | '-' => c,
        _ => '-',
    });
    let start = match name.chars().next() {
        Some('a'..='z' | 'A'..='Z' | '0'..='9' | '_') => None,
        _ => Some('_'),
    };
    start.into_iter().chain(mapped).take(128).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    #[test]
    fn a_tag_keeps_what_a_tag_may_hold() {
        assert_eq!(tag("demo.v1.0.0+build/1"), "demo.v1.0.0-build-1");
        assert_eq!(tag(&"x".repeat(200)).len(), 128);
        assert_eq!(tag("../../x"), "_..-..-x");
        assert_eq!(tag("-x"), "_-x");
    }

    /// A catalog of one bundle named `name` in package `package`, one object of `kind`.
    fn catalog(package: &str, name: &str, kind: &str) -> String {
        let object =
            serde_json::json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}});
        let data = base64::engine::general_purpose::STANDARD.encode(object.to_string());
        let blobs = [
            serde_json::json!({"schema": "olm.package", "name": package}),
            serde_json::json!({"schema": "olm.channel", "package": package, "name": "stable",
                "entries": [{"name": name}]}),
            serde_json::json!({"schema": "olm.bundle", "package": package, "name": name,
            "image": "example.com/b:1", "properties": [
                {"type": "olm.package", "value": {"packageName": package, "version": "1.0.0"}},
                {"type": "olm.bundle.object", "value": {"data": data}},
            ]}),
        ];
        blobs.iter().map(|b| format!("{b}\n")).collect()
    }

    /// Every file under `dir`, relative to it.
    fn files_under(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in walk(dir) {
            out.push(entry.strip_prefix(dir).unwrap().to_owned());
        }
        out.sort();
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() && !path.is_symlink() {
                true => out.extend(walk(&path)),
                false => out.push(path),
            }
        }
        out
    }

    /// Hostile package, bundle and kind names from a catalog opm accepts: every file OLM v1's
    /// images are built from lands under the staging directory, named by the hash of a name
    /// that is not one plain path component; nothing is written beside it.
    #[test]
    fn hostile_catalog_names_stay_inside_the_staging_directory() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        let abs = outside.join("abs").display().to_string();
        let long = "n".repeat(300);
        let table: [(&str, &str, &str, &[&str]); 9] = [
            (
                "demo",
                "demo.v1.0.0",
                "ConfigMap",
                &["demo/demo.v1.0.0/manifests/000-configmap.json"],
            ),
            (
                "demo",
                &abs,
                "ConfigMap",
                &["demo/_*/manifests/000-configmap.json"],
            ),
            (
                "demo",
                "../../../outside/x",
                "../../../../outside/y",
                &["demo/_*/manifests/000-_*.json"],
            ),
            (
                "../../outside",
                "a/b",
                "ConfigMap",
                &["_*/_*/manifests/000-configmap.json"],
            ),
            (
                "demo",
                "nul\0name",
                "Config\0Map",
                &["demo/_*/manifests/000-_*.json"],
            ),
            (
                "demo",
                "new\nline",
                "new\nline",
                &["demo/_*/manifests/000-_*.json"],
            ),
            ("demo", &long, &long, &["demo/_*/manifests/000-_*.json"]),
            (
                "demo",
                "\u{ff0e}\u{ff0e}",
                "a\u{2215}b",
                &["demo/_*/manifests/000-_*.json"],
            ),
            ("demo", "..", ".", &["demo/_*/manifests/000-_*.json"]),
        ];
        for (package, name, kind, wanted) in table {
            let work = root.path().join("work");
            let catalog_dir = root.path().join("catalog");
            std::fs::create_dir_all(&catalog_dir).unwrap();
            std::fs::write(
                catalog_dir.join("catalog.json"),
                catalog(package, name, kind),
            )
            .unwrap();
            let config = load_dir_with(&catalog_dir, LoadOptions::default())
                .unwrap_or_else(|e| panic!("{name:?}: {e}"))
                .config;
            stage_bundle(&work, &config.bundles[0], &["stable".to_owned()])
                .unwrap_or_else(|e| panic!("{name:?}: {e}"));
            assert!(
                !outside.exists(),
                "{name:?}: wrote outside the staging directory"
            );
            let mut written: Vec<String> = files_under(&work.join("bundles"))
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            written.retain(|p| !p.ends_with("metadata/annotations.yaml"));
            assert_eq!(written.len(), wanted.len(), "{name:?}: {written:?}");
            for (got, want) in written.iter().zip(wanted) {
                let pattern = want.replace("_*", "_[0-9a-f]{32}").replace('.', "\\.");
                let matches = regex::Regex::new(&format!("^{pattern}$"))
                    .unwrap()
                    .is_match(got);
                assert!(matches, "{name:?}: wrote {got}, wanted {want}");
            }
            let beside: Vec<_> = std::fs::read_dir(root.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(beside.len(), 2, "{name:?}: {beside:?}");
            std::fs::remove_dir_all(&work).unwrap();
            std::fs::remove_dir_all(&catalog_dir).unwrap();
        }
    }
}
