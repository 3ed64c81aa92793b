//! Install manifests for users of a released catalog: what a cluster administrator applies to
//! install the operator with OLM v0 or OLM v1.
//!
//! Contract:
//! - **Pure.** [`build`] takes the package, its default channel, the catalog image by digest
//!   and the install facts of every release ([`facts`]), and returns the files; it reads and
//!   writes nothing. The same input always gives the same bytes (sorted keys, sorted rules).
//! - **Files** (under `install/` next to the catalog):
//!   - [`OLM_V0_FILE`]: the Namespace, a CatalogSource serving the catalog image by digest, an
//!     OperatorGroup (all namespaces when the newest CSV supports AllNamespaces, else its own
//!     namespace) and a Subscription to the package's default channel.
//!   - [`OLM_V1_FILE`]: the Namespace, a ClusterCatalog of the catalog image by digest, the
//!     installer ServiceAccount with least-privilege RBAC derived from the bundles
//!     ([`rbac::installer_rbac`]), and a ClusterExtension of the package's default channel,
//!     resolved from that ClusterCatalog only.
//! - **Install notes**: when the newest release's pod needs Secrets or ConfigMaps that neither
//!   the bundle nor OLM creates ([`facts::BundleFacts::prerequisites`]), each file starts with
//!   comment lines naming them.
//! - **Install namespace**: the newest CSV's `operatorframework.io/suggested-namespace`, else
//!   `<package>-system` (OLM v1's own default).
//! - A CSV that supports neither AllNamespaces nor OwnNamespace cannot be installed by these
//!   manifests (its target namespaces are the administrator's choice): [`InstallError`].
#![warn(missing_docs)]

pub mod facts;
pub mod rbac;

use serde::Serialize;
use serde_json::{Value, json};

use facts::{BundleFacts, InstallMode};
use olmpack_oci::output::FileTree;
use rbac::{InstallerNames, installer_rbac};

/// The OLM v0 manifests' file name under `install/`.
pub const OLM_V0_FILE: &str = "olm-v0.yaml";
/// The OLM v1 manifests' file name under `install/`.
pub const OLM_V1_FILE: &str = "olm-v1.yaml";

/// Why no install manifests can be written.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The package has no release to install.
    #[error("the package {package} has no release")]
    NoRelease {
        /// The package.
        package: String,
    },
    /// The newest CSV supports only install modes whose target namespaces olmpack cannot choose, so no install manifests are written.
    #[error(
        "ClusterServiceVersion/{csv} supports neither the AllNamespaces nor the OwnNamespace install mode; its target namespaces are the cluster administrator's choice, so no install manifests are written"
    )]
    NoInstallMode {
        /// The CSV's name.
        csv: String,
    },
    /// Printing an install manifest as YAML failed.
    #[error("failed to print the install manifest {file}: {message}")]
    Print {
        /// The manifest file name.
        file: String,
        /// The printer's complaint.
        message: String,
    },
    /// Placing the manifests into the output tree failed.
    #[error(transparent)]
    Output(#[from] olmpack_oci::output::OutputError),
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::refusal::Refusal for InstallError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// What the install manifests are built from.
#[derive(Clone, Debug)]
pub struct InstallInput<'a> {
    /// The package name.
    pub package: &'a str,
    /// The channel to subscribe to.
    pub default_channel: &'a str,
    /// The catalog image, `repository@sha256:…`.
    pub catalog_image: &'a str,
    /// The install facts of every release, oldest first (the last is the newest).
    pub releases: &'a [BundleFacts],
}

/// The install manifests and what they decided.
#[derive(Clone, Debug, PartialEq)]
pub struct InstallManifests {
    /// The namespace the operator is installed into.
    pub namespace: String,
    /// The install mode used: AllNamespaces when the CSV supports it, else OwnNamespace.
    pub mode: InstallMode,
    /// [`OLM_V0_FILE`] and [`OLM_V1_FILE`].
    pub files: FileTree,
}

/// Builds the OLM v0 and OLM v1 install manifests.
pub fn build(input: &InstallInput<'_>) -> Result<InstallManifests, InstallError> {
    let newest = input
        .releases
        .last()
        .ok_or_else(|| InstallError::NoRelease {
            package: input.package.to_owned(),
        })?;
    let mode = if newest.install_modes.contains(&InstallMode::AllNamespaces) {
        InstallMode::AllNamespaces
    } else if newest.install_modes.contains(&InstallMode::OwnNamespace) {
        InstallMode::OwnNamespace
    } else {
        return Err(InstallError::NoInstallMode {
            csv: newest.csv_name.clone(),
        });
    };
    let namespace = newest
        .suggested_namespace
        .clone()
        .unwrap_or_else(|| format!("{}-system", input.package));
    let notes = prerequisite_notes(newest, &namespace);
    let mut files = FileTree::new();
    let mut v0 = notes.clone().into_bytes();
    v0.extend(stream(OLM_V0_FILE, &olm_v0(input, &namespace, mode))?);
    files.insert(OLM_V0_FILE, v0)?;
    let mut v1 = notes.into_bytes();
    v1.extend(stream(OLM_V1_FILE, &olm_v1(input, &namespace, mode))?);
    files.insert(OLM_V1_FILE, v1)?;
    Ok(InstallManifests {
        namespace,
        mode,
        files,
    })
}

/// Comment lines naming what the user creates before the operator's pod can start (empty
/// when nothing): the install notes at the top of each file.
fn prerequisite_notes(newest: &BundleFacts, namespace: &str) -> String {
    if newest.prerequisites.is_empty() {
        return String::new();
    }
    let mut notes = format!(
        "# Prerequisites: the operator's pod starts only once these exist in namespace {namespace}\n\
         # (neither the bundle nor OLM creates them); create them before or after applying this file:\n"
    );
    for (kind, name) in &newest.prerequisites {
        notes.push_str(&format!("# - {kind} {name}\n"));
    }
    notes
}

/// The name of the catalog's CatalogSource and ClusterCatalog.
fn catalog_name(package: &str) -> String {
    format!("{package}-catalog")
}

fn namespace_object(namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
}

fn olm_v0(input: &InstallInput<'_>, namespace: &str, mode: InstallMode) -> Vec<Value> {
    let catalog = catalog_name(input.package);
    let group_spec = match mode {
        InstallMode::AllNamespaces => json!({}),
        _ => json!({"targetNamespaces": [namespace]}),
    };
    vec![
        namespace_object(namespace),
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": catalog, "namespace": namespace},
            "spec": {
                "sourceType": "grpc",
                "image": input.catalog_image,
                "displayName": input.package,
            },
        }),
        json!({
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {"name": input.package, "namespace": namespace},
            "spec": group_spec,
        }),
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": input.package, "namespace": namespace},
            "spec": {
                "name": input.package,
                "channel": input.default_channel,
                "source": catalog,
                "sourceNamespace": namespace,
                "installPlanApproval": "Automatic",
            },
        }),
    ]
}

fn olm_v1(input: &InstallInput<'_>, namespace: &str, mode: InstallMode) -> Vec<Value> {
    let catalog = catalog_name(input.package);
    let names = InstallerNames {
        extension: input.package.to_owned(),
        namespace: namespace.to_owned(),
        account: format!("{}-installer", input.package),
    };
    let rbac = installer_rbac(input.releases, mode, &names);
    vec![
        namespace_object(namespace),
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": catalog},
            "spec": {"source": {"type": "Image", "image": {"ref": input.catalog_image}}},
        }),
        to_value(&rbac.service_account),
        to_value(&rbac.cluster_role),
        to_value(&rbac.cluster_role_binding),
        to_value(&rbac.role),
        to_value(&rbac.role_binding),
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": names.extension},
            "spec": {
                "namespace": namespace,
                "serviceAccount": {"name": names.account},
                "source": {
                    "sourceType": "Catalog",
                    "catalog": {
                        "packageName": input.package,
                        "channels": [input.default_channel],
                        "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": catalog}},
                    },
                },
            },
        }),
    ]
}

fn to_value<T: Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// Objects as one YAML stream, `---` between documents.
fn stream(file: &str, objects: &[Value]) -> Result<Vec<u8>, InstallError> {
    let mut text = String::new();
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            text.push_str("---\n");
        }
        text.push_str(&olmpack_model::yaml::to_string(object).map_err(|err| {
            InstallError::Print {
                file: file.to_owned(),
                message: err.to_string(),
            }
        })?);
    }
    Ok(text.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(modes: &[InstallMode]) -> BundleFacts {
        BundleFacts {
            csv_name: "demo.v1.0.0".into(),
            install_modes: modes.iter().copied().collect(),
            crds: ["widgets.demo.io".to_owned()].into(),
            deployments: ["demo-controller".to_owned()].into(),
            service_accounts: ["demo-controller".to_owned()].into(),
            ..BundleFacts::default()
        }
    }

    fn input(releases: &[BundleFacts]) -> InstallInput<'_> {
        InstallInput {
            package: "demo",
            default_channel: "stable",
            catalog_image: "registry.example/demo-catalog@sha256:0123",
            releases,
        }
    }

    #[test]
    fn own_namespace_only_targets_the_install_namespace_and_a_suggestion_wins() {
        let mut only_own = release(&[InstallMode::OwnNamespace]);
        only_own.suggested_namespace = Some("demo-ns".into());
        let releases = [only_own];
        let built = build(&input(&releases)).unwrap();
        assert_eq!(built.namespace, "demo-ns");
        assert_eq!(built.mode, InstallMode::OwnNamespace);
        let v0 = String::from_utf8(
            built
                .files
                .get(std::path::Path::new(OLM_V0_FILE))
                .unwrap()
                .to_vec(),
        )
        .unwrap();
        assert!(v0.contains("targetNamespaces:\n  - demo-ns\n"), "{v0}");
    }

    #[test]
    fn single_namespace_only_is_refused_by_name() {
        let releases = [release(&[InstallMode::SingleNamespace])];
        let err = build(&input(&releases)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ClusterServiceVersion/demo.v1.0.0 supports neither the AllNamespaces nor the OwnNamespace install mode; its target namespaces are the cluster administrator's choice, so no install manifests are written"
        );
    }

    #[test]
    fn install_manifests_of_a_bundle_with_webhooks_and_two_releases() {
        let mut older = release(&[InstallMode::AllNamespaces]);
        older.crds.insert("gadgets.demo.io".into());
        let mut newer = release(&[InstallMode::OwnNamespace, InstallMode::AllNamespaces]);
        newer.csv_name = "demo.v1.1.0".into();
        newer.cluster_permissions = vec![k8s_openapi::api::rbac::v1::PolicyRule {
            api_groups: Some(vec!["demo.io".into()]),
            resources: Some(vec!["widgets".into()]),
            verbs: vec!["get".into(), "list".into(), "watch".into()],
            ..Default::default()
        }];
        newer.webhooks = [facts::Webhook {
            kind: "MutatingAdmissionWebhook".into(),
            name: "mwidget.demo.io".into(),
        }]
        .into();
        let releases = [older, newer];
        let built = build(&input(&releases)).unwrap();
        for (file, bytes) in built.files.iter() {
            if file.to_string_lossy().starts_with('.') {
                continue;
            }
            insta::assert_snapshot!(
                file.to_string_lossy().into_owned(),
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn the_same_input_gives_the_same_bytes() {
        let releases = [release(&[InstallMode::AllNamespaces])];
        assert_eq!(
            build(&input(&releases)).unwrap(),
            build(&input(&releases)).unwrap()
        );
    }

    #[test]
    fn prerequisites_are_install_notes_at_the_top_of_each_file() {
        let mut newest = release(&[InstallMode::AllNamespaces]);
        newest.prerequisites = [
            ("Secret".to_owned(), "api-token".to_owned()),
            ("ConfigMap".to_owned(), "user-config".to_owned()),
        ]
        .into();
        let releases = [newest];
        let built = build(&input(&releases)).unwrap();
        for file in [OLM_V0_FILE, OLM_V1_FILE] {
            let text = String::from_utf8(
                built
                    .files
                    .get(std::path::Path::new(file))
                    .unwrap()
                    .to_vec(),
            )
            .unwrap();
            assert!(
                text.starts_with(
                    "# Prerequisites: the operator's pod starts only once these exist in namespace demo-system\n\
                     # (neither the bundle nor OLM creates them); create them before or after applying this file:\n\
                     # - ConfigMap user-config\n\
                     # - Secret api-token\n\
                     apiVersion: v1\n"
                ),
                "{text}"
            );
        }
        let without = [release(&[InstallMode::AllNamespaces])];
        let plain = build(&input(&without)).unwrap();
        assert!(
            plain
                .files
                .get(std::path::Path::new(OLM_V0_FILE))
                .unwrap()
                .starts_with(b"apiVersion")
        );
    }
}
