//! Routing entries: one small ConfigMap per WebApp in the operator's namespace, holding the
//! URL of the WebApp's Service — the external side effect that the finalizer cleans up.
//!
//! Earlier releases kept every entry in one shared ConfigMap (`webapp-operator-routes`) that
//! each reconcile read whole and each create and delete patched: a hot spot whose size grew
//! with the number of WebApps (the 1 MiB object limit arrives near 15–20k) and on which
//! every deletion waited. Now no object in the data path grows with the number of WebApps,
//! and a deletion waits only on its own entry. The entries are read from the controller's
//! reflector store ([`super::Stores`]), never from the API.
//!
//! Names: `route.<namespace>.<name>` when that fits in 253 characters (a ConfigMap name is
//! a DNS subdomain, and so are both parts), else `route.<digest>`; the annotation
//! [`WEBAPP_ANNOTATION`] names the WebApp either way (the watch maps it back).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use serde_json::json;

use super::apply::{self, FIELD_MANAGER, MANAGED_BY};
use crate::api::v1;

/// Label that marks routing entries (the routes watch selects on it and [`MANAGED_BY`]).
pub const ROUTE_LABEL: (&str, &str) = ("apps.olmpack.dev/component", "route");
/// Annotation with the `<namespace>/<name>` of the WebApp an entry belongs to.
pub const WEBAPP_ANNOTATION: &str = "apps.olmpack.dev/webapp";
/// The data key holding the URL.
pub const URL_KEY: &str = "url";
/// The shared routing ConfigMap of earlier releases (no longer written).
pub const LEGACY_ROUTES_CONFIGMAP: &str = "webapp-operator-routes";

/// The label selector of every routing entry.
pub fn selector() -> String {
    format!(
        "{}={},{}={}",
        MANAGED_BY.0, MANAGED_BY.1, ROUTE_LABEL.0, ROUTE_LABEL.1
    )
}

/// The name of the routing entry of WebApp `namespace/name`.
pub fn name(namespace: &str, name: &str) -> String {
    let plain = format!("route.{namespace}.{name}");
    if plain.len() <= 253 {
        return plain;
    }
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{namespace}/{name}").as_bytes());
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("route.{hex}")
}

/// The URL of `app`'s Service.
pub fn url(app: &v1::WebApp) -> String {
    format!(
        "http://{}.{}.svc:{}",
        app.name_any(),
        app.namespace().unwrap_or_default(),
        apply::SERVICE_PORT
    )
}

/// The routing entry of `app` as applied, in `operator_namespace`.
pub fn desired(app: &v1::WebApp, operator_namespace: &str) -> serde_json::Value {
    let ns = app.namespace().unwrap_or_default();
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name(&ns, &app.name_any()),
            "namespace": operator_namespace,
            "labels": BTreeMap::from([MANAGED_BY, ROUTE_LABEL]),
            "annotations": {WEBAPP_ANNOTATION: format!("{ns}/{}", app.name_any())},
        },
        "data": {URL_KEY: url(app)},
    })
}

/// Whether the store already holds `app`'s entry with its current URL.
pub fn is_current(store: &Store<ConfigMap>, app: &v1::WebApp, operator_namespace: &str) -> bool {
    let ns = app.namespace().unwrap_or_default();
    let key = ObjectRef::new(&name(&ns, &app.name_any())).within(operator_namespace);
    store.get(&key).is_some_and(|entry| {
        entry.data.as_ref().and_then(|d| d.get(URL_KEY)) == Some(&url(app))
            && entry.annotations().get(WEBAPP_ANNOTATION)
                == Some(&format!("{ns}/{}", app.name_any()))
    })
}

/// Server-side applies `app`'s entry.
pub async fn ensure(
    api: &Api<ConfigMap>,
    app: &v1::WebApp,
    operator_namespace: &str,
) -> Result<(), kube::Error> {
    let desired = desired(app, operator_namespace);
    let name = desired["metadata"]["name"].as_str().unwrap_or_default();
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&desired),
    )
    .await?;
    Ok(())
}

/// Deletes `app`'s entry; an entry already gone is fine (the cleanup may be repeated).
pub async fn remove(api: &Api<ConfigMap>, app: &v1::WebApp) -> Result<(), kube::Error> {
    let ns = app.namespace().unwrap_or_default();
    match api
        .delete(&name(&ns, &app.name_any()), &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(err) => Err(err),
    }
}

/// The WebApp a routing entry belongs to (from [`WEBAPP_ANNOTATION`]).
pub fn owner(entry: &ConfigMap) -> Option<ObjectRef<v1::WebApp>> {
    let (ns, name) = entry
        .annotations()
        .get(WEBAPP_ANNOTATION)?
        .split_once('/')?;
    Some(ObjectRef::new(name).within(ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_and_stay_distinct() {
        assert_eq!(name("apps", "shop"), "route.apps.shop");
        let long = "a".repeat(250);
        let hashed = name("apps", &long);
        assert!(
            hashed.starts_with("route.") && hashed.len() == 6 + 32,
            "{hashed}"
        );
        assert_ne!(hashed, name("apps2", &long));
    }

    #[test]
    fn owner_comes_from_the_annotation() {
        let app: v1::WebApp = serde_json::from_value(json!({
            "apiVersion": "apps.olmpack.dev/v1", "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": "apps", "uid": "u"},
            "spec": {"image": "shop:1"},
        }))
        .unwrap();
        let entry: ConfigMap = serde_json::from_value(desired(&app, "ops")).unwrap();
        assert_eq!(owner(&entry), Some(ObjectRef::new("shop").within("apps")));
        assert_eq!(
            entry.data.unwrap()[URL_KEY],
            "http://shop.apps.svc:80",
            "the URL of the Service"
        );
    }
}
