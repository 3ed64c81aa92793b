//! Storage-version migration of one CustomResourceDefinition, so that a later release may
//! drop a version.
//!
//! The apiserver refuses a CRD update that removes a version still listed in
//! `status.storedVersions`, and it never removes a version from that list by itself: objects
//! written while an older version was the storage version stay encoded at that version in
//! etcd until something rewrites them. [`migrate`] does that: it rewrites every object (a
//! no-change update, which the apiserver stores re-encoded at the current storage version),
//! then sets `status.storedVersions` to the storage version alone.
//!
//! Guarantees:
//! - Objects are read at the storage version and written back unchanged; an object that
//!   changed or disappeared in between is read again (or skipped when gone), so no concurrent
//!   write is lost.
//! - `status.storedVersions` is pruned only after every object was rewritten, and only if the
//!   storage version did not change meanwhile (the status patch carries the CRD's
//!   `resourceVersion`, so a concurrent CRD update makes it fail instead of lying).
//! - Reading at the storage version goes through the CRD's conversion webhook for objects
//!   stored at another version, so the webhook must be reachable; otherwise the migration
//!   fails with the apiserver's message and changes nothing in `status`.
//!
//! Permissions: `get` and `patch` on `customresourcedefinitions/status` (and `get` on
//! `customresourcedefinitions`) for the CRD, `list` and `update` on its resource.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::json;

/// How many objects one list page holds.
const PAGE: u32 = 250;
/// How often one object's rewrite is retried after a conflict.
const CONFLICT_RETRIES: usize = 5;

/// Failure of a migration; every variant names the CRD.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("failed to read CustomResourceDefinition {crd}")]
    ReadCrd {
        crd: String,
        #[source]
        source: kube::Error,
    },
    #[error("CustomResourceDefinition {crd} has no storage version")]
    NoStorageVersion { crd: String },
    #[error("failed to list the objects of {crd} at its storage version {version}")]
    List {
        crd: String,
        version: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to rewrite {object} of {crd} at its storage version")]
    Rewrite {
        crd: String,
        object: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "the storage version of {crd} changed from {before} to {after} during the migration; \
         status.storedVersions was left as it was"
    )]
    StorageChanged {
        crd: String,
        before: String,
        after: String,
    },
    #[error("failed to set status.storedVersions of {crd} to [{version}]")]
    Prune {
        crd: String,
        version: String,
        #[source]
        source: kube::Error,
    },
}

/// What a migration did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Migration {
    /// The CRD's name.
    pub crd: String,
    /// The storage version every object is now stored at.
    pub storage_version: String,
    /// How many objects were rewritten.
    pub rewritten: usize,
    /// `status.storedVersions` before the migration.
    pub stored_before: Vec<String>,
}

/// The storage version of `crd`, if it has one.
pub fn storage_version(crd: &CustomResourceDefinition) -> Option<&str> {
    crd.spec
        .versions
        .iter()
        .find(|v| v.storage)
        .map(|v| v.name.as_str())
}

/// `status.storedVersions` of `crd` (empty when the apiserver has not set it yet).
pub fn stored_versions(crd: &CustomResourceDefinition) -> Vec<String> {
    crd.status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default()
}

/// Whether `crd` lists any stored version besides its storage version.
pub fn needs_migration(crd: &CustomResourceDefinition) -> bool {
    let storage = storage_version(crd);
    stored_versions(crd)
        .iter()
        .any(|v| Some(v.as_str()) != storage)
}

/// The resource of `crd` at `version`.
pub fn api_resource(crd: &CustomResourceDefinition, version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&crd.spec.group, version, &crd.spec.names.kind),
        &crd.spec.names.plural,
    )
}

async fn read_crd(client: &Client, name: &str) -> Result<CustomResourceDefinition, MigrateError> {
    Api::<CustomResourceDefinition>::all(client.clone())
        .get(name)
        .await
        .map_err(|source| MigrateError::ReadCrd {
            crd: name.to_owned(),
            source,
        })
}

/// Migrates `crd_name` when its `status.storedVersions` lists more than its storage version
/// and that storage version is `expected_storage` (the version the caller's release stores;
/// an older CRD still installed is left alone). `Ok(None)` when there is nothing to do.
pub async fn migrate_if_needed(
    client: &Client,
    crd_name: &str,
    expected_storage: &str,
) -> Result<Option<Migration>, MigrateError> {
    let crd = read_crd(client, crd_name).await?;
    if storage_version(&crd) != Some(expected_storage) || !needs_migration(&crd) {
        return Ok(None);
    }
    migrate(client, crd_name).await.map(Some)
}

/// Rewrites every object of `crd_name` at its storage version, then prunes
/// `status.storedVersions` to that version (see the module docs).
pub async fn migrate(client: &Client, crd_name: &str) -> Result<Migration, MigrateError> {
    let crd = read_crd(client, crd_name).await?;
    let storage = storage_version(&crd)
        .ok_or_else(|| MigrateError::NoStorageVersion {
            crd: crd_name.to_owned(),
        })?
        .to_owned();
    let stored_before = stored_versions(&crd);
    let resource = api_resource(&crd, &storage);
    let rewritten = rewrite_all(client, &resource, crd_name).await?;

    let current = read_crd(client, crd_name).await?;
    let after = storage_version(&current).unwrap_or_default();
    if after != storage {
        return Err(MigrateError::StorageChanged {
            crd: crd_name.to_owned(),
            before: storage,
            after: after.to_owned(),
        });
    }
    let patch = json!({
        "metadata": {"resourceVersion": current.metadata.resource_version},
        "status": {"storedVersions": [storage]},
    });
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch_status(crd_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| MigrateError::Prune {
            crd: crd_name.to_owned(),
            version: storage.clone(),
            source,
        })?;
    tracing::info!(crd = crd_name, storage = %storage, rewritten, "storage migration done");
    Ok(Migration {
        crd: crd_name.to_owned(),
        storage_version: storage,
        rewritten,
        stored_before,
    })
}

/// Rewrites every object of `resource`, page by page; returns how many were rewritten.
async fn rewrite_all(
    client: &Client,
    resource: &ApiResource,
    crd: &str,
) -> Result<usize, MigrateError> {
    let all: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let mut params = ListParams::default().limit(PAGE);
    let mut rewritten = 0;
    loop {
        let page = all
            .list(&params)
            .await
            .map_err(|source| MigrateError::List {
                crd: crd.to_owned(),
                version: resource.version.clone(),
                source,
            })?;
        for object in page.items {
            let api = match &object.metadata.namespace {
                Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
                None => all.clone(),
            };
            if rewrite(&api, crd, object).await? {
                rewritten += 1;
            }
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(rewritten),
        }
    }
}

/// Writes `object` back unchanged through `api` (scoped to its namespace); false when it
/// was deleted meanwhile. A conflict reads the object again and retries.
async fn rewrite(
    api: &Api<DynamicObject>,
    crd: &str,
    mut object: DynamicObject,
) -> Result<bool, MigrateError> {
    let name = object.metadata.name.clone().unwrap_or_default();
    let display = match &object.metadata.namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.clone(),
    };
    let err = |source| MigrateError::Rewrite {
        crd: crd.to_owned(),
        object: display.clone(),
        source,
    };
    let mut conflicts = 0;
    loop {
        match api.replace(&name, &PostParams::default(), &object).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(false),
            Err(kube::Error::Api(status)) if status.code == 409 && conflicts < CONFLICT_RETRIES => {
                conflicts += 1;
                match api.get_opt(&name).await.map_err(err)? {
                    Some(fresh) => object = fresh,
                    None => return Ok(false),
                }
            }
            Err(source) => return Err(err(source)),
        }
    }
}
