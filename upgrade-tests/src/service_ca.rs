//! OpenShift's service-ca operator, as far as the operators it serves can tell: a loop that
//! plays its part on the test control plane (for `--platform openshift`), and a certificate
//! provider any environment can start.
//!
//! What it does, as service-ca does on OpenShift:
//! - a Service annotated [`SERVING_CERT_SECRET`] (beta or alpha) gets a `kubernetes.io/tls`
//!   Secret of that name in its namespace, for `<service>.<namespace>.svc` and
//!   `<service>.<namespace>.svc.cluster.local`, signed by the environment's service CA;
//! - an object annotated [`INJECT_CABUNDLE`] `"true"` gets that CA: a ConfigMap in
//!   `data["service-ca.crt"]`, a validating or mutating webhook configuration in every
//!   webhook's `clientConfig.caBundle`, a CRD in its conversion webhook's
//!   `clientConfig.caBundle`, an APIService in `spec.caBundle`.
//!
//! Not emulated: certificate rotation and expiry (one CA per environment, valid for ten
//! years), the `serving-cert-signed-by` annotations on the Service, and headless
//! StatefulSet Services' wildcard names.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams, ResourceExt};
use serde_json::Value;

use crate::pki::{CertificateAuthority, PkiError};

/// The Service annotations naming the Secret service-ca writes the serving certificate to.
pub const SERVING_CERT_SECRET: [&str; 2] = [
    "service.beta.openshift.io/serving-cert-secret-name",
    "service.alpha.openshift.io/serving-cert-secret-name",
];
/// The annotations asking service-ca to inject its CA bundle (value `"true"`).
pub const INJECT_CABUNDLE: [&str; 2] = [
    "service.beta.openshift.io/inject-cabundle",
    "service.alpha.openshift.io/inject-cabundle",
];
/// The Secret annotation naming the Service a serving certificate is for.
const ORIGINATING_SERVICE: &str = "service.beta.openshift.io/originating-service-name";
const POLL: Duration = Duration::from_millis(250);

/// The service CA of one environment.
pub struct ServiceCa {
    ca: CertificateAuthority,
}

impl std::fmt::Debug for ServiceCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceCa").finish_non_exhaustive()
    }
}

/// A running [`ServiceCa`]; it stops when this is dropped.
#[derive(Debug)]
pub struct ServiceCaTask {
    task: tokio::task::JoinHandle<()>,
    /// The CA it injects.
    cert_pem: String,
}

impl Drop for ServiceCaTask {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ServiceCaTask {
    /// Every object on `client`'s cluster that asks for the CA bundle and does not hold it
    /// yet, as `Kind name` (a kind that cannot be listed is named too): service-ca injects a
    /// moment after an object is written, and a webhook called before then fails with
    /// "certificate signed by unknown authority".
    pub async fn uninjected(&self, client: &Client) -> Vec<String> {
        let mut out = Vec::new();
        for target in &TARGETS {
            let all: Api<DynamicObject> = Api::all_with(client.clone(), &target.resource());
            match all.list(&ListParams::default()).await {
                Ok(list) => out.extend(
                    list.items
                        .iter()
                        .filter(|o| lacks_ca(target, o, &self.cert_pem))
                        .map(|o| format!("{} {}", target.kind.2, o.name_any())),
                ),
                Err(e) => out.push(format!("{} ({e})", target.kind.3)),
            }
        }
        out
    }
}

/// A kind whose objects may ask for the CA bundle, and where it goes.
struct Target {
    /// `(group, version, kind, plural)` of the kind.
    kind: (&'static str, &'static str, &'static str, &'static str),
    inject: fn(&mut Value, &str) -> bool,
}

const ADMISSION: &str = "admissionregistration.k8s.io";

const TARGETS: [Target; 5] = [
    Target {
        kind: ("", "v1", "ConfigMap", "configmaps"),
        inject: inject_config_map,
    },
    Target {
        kind: (
            ADMISSION,
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
        inject: inject_webhooks,
    },
    Target {
        kind: (
            ADMISSION,
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        ),
        inject: inject_webhooks,
    },
    Target {
        kind: (
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
        inject: inject_conversion,
    },
    Target {
        kind: ("apiregistration.k8s.io", "v1", "APIService", "apiservices"),
        inject: inject_api_service,
    },
];

impl Target {
    fn resource(&self) -> ApiResource {
        let (group, version, kind, plural) = self.kind;
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        ApiResource::from_gvk_with_plural(&gvk, plural)
    }
}

impl ServiceCa {
    /// A new service CA.
    pub fn new() -> Result<Self, PkiError> {
        Ok(Self {
            ca: CertificateAuthority::new("openshift-service-serving-signer")?,
        })
    }

    /// The CA certificate (PEM): what service-ca injects.
    pub fn cert_pem(&self) -> &str {
        self.ca.cert_pem()
    }

    /// Plays service-ca's part on `client`'s cluster in a task of its own, until the returned
    /// handle is dropped.
    pub fn spawn(self, client: Client) -> ServiceCaTask {
        let cert_pem = self.cert_pem().to_owned();
        ServiceCaTask {
            task: tokio::spawn(self.run(client)),
            cert_pem,
        }
    }

    /// Plays service-ca's part until the task is aborted; a failed pass is retried.
    async fn run(self, client: Client) {
        loop {
            let _ = self.serve_secrets(&client).await;
            for target in &TARGETS {
                let _ = self.inject(&client, target).await;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Creates the serving-certificate Secret of every annotated Service that lacks it.
    async fn serve_secrets(&self, client: &Client) -> Result<(), kube::Error> {
        let services: Api<Service> = Api::all(client.clone());
        for service in services.list(&ListParams::default()).await? {
            let Some(ServingSecret {
                secret: secret_name,
                hosts,
                ..
            }) = serving_secret_of(&service.metadata)
            else {
                continue;
            };
            let namespace = service.metadata.namespace.clone().unwrap_or_default();
            let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
            if secrets.get_opt(&secret_name).await?.is_some() {
                continue;
            }
            let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
            let Ok(issued) = self.ca.issue_server(&hosts) else {
                continue;
            };
            let service_name = service.metadata.name.clone().unwrap_or_default();
            // Owned by its Service, as service-ca does: it goes when the Service goes.
            let owner = OwnerReference {
                api_version: "v1".to_owned(),
                kind: "Service".to_owned(),
                name: service_name.clone(),
                uid: service.metadata.uid.clone().unwrap_or_default(),
                ..OwnerReference::default()
            };
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(secret_name),
                    namespace: Some(namespace),
                    owner_references: Some(vec![owner]),
                    annotations: Some(BTreeMap::from([(
                        ORIGINATING_SERVICE.to_owned(),
                        service_name,
                    )])),
                    ..ObjectMeta::default()
                },
                type_: Some("kubernetes.io/tls".to_owned()),
                data: Some(BTreeMap::from([
                    (
                        "tls.crt".to_owned(),
                        ByteString(format!("{}{}", issued.cert_pem, self.cert_pem()).into_bytes()),
                    ),
                    (
                        "tls.key".to_owned(),
                        ByteString(issued.key_pem.into_bytes()),
                    ),
                ])),
                ..Secret::default()
            };
            secrets.create(&PostParams::default(), &secret).await?;
        }
        Ok(())
    }

    /// Writes the CA into every annotated object of `target`'s kind that lacks it.
    async fn inject(&self, client: &Client, target: &Target) -> Result<(), kube::Error> {
        let resource = target.resource();
        let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        for object in all.list(&ListParams::default()).await? {
            let Some(value) = injected(target, &object, self.cert_pem()) else {
                continue;
            };
            let updated: DynamicObject =
                serde_json::from_value(value).map_err(kube::Error::SerdeError)?;
            let api: Api<DynamicObject> = match &object.metadata.namespace {
                Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
                None => all.clone(),
            };
            let name = object.metadata.name.clone().unwrap_or_default();
            // A conflict (someone wrote it meanwhile) is retried by the next pass.
            api.replace(&name, &PostParams::default(), &updated).await?;
        }
        Ok(())
    }
}

/// The serving certificate a Service's annotation asks service-ca for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingSecret {
    /// The annotation that asks (one of [`SERVING_CERT_SECRET`]).
    pub annotation: &'static str,
    /// The Secret's name.
    pub secret: String,
    /// The names its certificate serves.
    pub hosts: Vec<String>,
}

/// The serving certificate a Service's annotation asks for, if any.
pub fn serving_secret_of(service: &ObjectMeta) -> Option<ServingSecret> {
    let annotations = service.annotations.as_ref()?;
    let (annotation, secret) = SERVING_CERT_SECRET
        .iter()
        .find_map(|key| annotations.get(*key).map(|v| (*key, v)))
        .filter(|(_, name)| !name.is_empty())?;
    let name = service.name.as_deref()?;
    let namespace = service.namespace.as_deref()?;
    let host = format!("{name}.{namespace}.svc");
    Some(ServingSecret {
        annotation,
        secret: secret.clone(),
        hosts: vec![host.clone(), format!("{host}.cluster.local")],
    })
}

/// `object` with the CA injected, when it asks for it and does not hold it yet.
fn injected(target: &Target, object: &DynamicObject, cert_pem: &str) -> Option<Value> {
    if !asks_for_ca_bundle(&object.metadata) {
        return None;
    }
    let mut value = serde_json::to_value(object).ok()?;
    (target.inject)(&mut value, cert_pem).then_some(value)
}

/// Whether `object` asks for the CA bundle and does not hold `cert_pem` yet.
fn lacks_ca(target: &Target, object: &DynamicObject, cert_pem: &str) -> bool {
    injected(target, object, cert_pem).is_some()
}

fn asks_for_ca_bundle(meta: &kube::api::ObjectMeta) -> bool {
    meta.annotations.as_ref().is_some_and(|a| {
        INJECT_CABUNDLE
            .iter()
            .any(|key| a.get(*key).is_some_and(|v| v == "true"))
    })
}

/// Sets `value` at `field` of `object` (an object); whether it changed.
fn set(object: &mut Value, field: &str, value: Value) -> bool {
    let Some(map) = object.as_object_mut() else {
        return false;
    };
    if map.get(field) == Some(&value) {
        return false;
    }
    map.insert(field.to_owned(), value);
    true
}

fn encoded(ca_pem: &str) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(ca_pem))
}

fn inject_config_map(object: &mut Value, ca_pem: &str) -> bool {
    if object.get("data").is_none_or(Value::is_null) {
        object["data"] = Value::Object(serde_json::Map::new());
    }
    set(
        &mut object["data"],
        "service-ca.crt",
        Value::String(ca_pem.to_owned()),
    )
}

fn inject_webhooks(object: &mut Value, ca_pem: &str) -> bool {
    let Some(webhooks) = object.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return false;
    };
    let mut changed = false;
    for webhook in webhooks {
        if let Some(config) = webhook.get_mut("clientConfig") {
            changed |= set(config, "caBundle", encoded(ca_pem));
        }
    }
    changed
}

fn inject_conversion(object: &mut Value, ca_pem: &str) -> bool {
    let conversion = &mut object["spec"]["conversion"];
    if conversion["strategy"] != "Webhook" {
        return false;
    }
    match conversion.pointer_mut("/webhook/clientConfig") {
        Some(config) => set(config, "caBundle", encoded(ca_pem)),
        None => false,
    }
}

fn inject_api_service(object: &mut Value, ca_pem: &str) -> bool {
    match object.get_mut("spec") {
        Some(spec) => set(spec, "caBundle", encoded(ca_pem)),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_lacks_the_ca_only_while_it_asks_for_it_and_does_not_hold_it() {
        let target = &TARGETS[1];
        assert_eq!(target.kind.2, "ValidatingWebhookConfiguration");
        let object = |annotated: bool, ca: &str| -> DynamicObject {
            let annotations = if annotated {
                json!({INJECT_CABUNDLE[0]: "true"})
            } else {
                json!({})
            };
            serde_json::from_value(json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "w", "annotations": annotations},
                "webhooks": [{"name": "v.example.com", "clientConfig": {
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(ca),
                    "service": {"name": "s", "namespace": "ops"},
                }}],
            }))
            .expect("a webhook configuration")
        };
        let ca = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n";
        assert!(lacks_ca(target, &object(true, ""), ca), "asks, empty");
        assert!(
            lacks_ca(target, &object(true, "another CA"), ca),
            "asks, another CA"
        );
        assert!(!lacks_ca(target, &object(true, ca), ca), "asks, holds it");
        assert!(!lacks_ca(target, &object(false, ""), ca), "does not ask");
        let injected = injected(target, &object(true, ""), ca).expect("injects");
        let back: DynamicObject = serde_json::from_value(injected).expect("an object");
        assert!(!lacks_ca(target, &back, ca), "injected, it holds the CA");
    }

    #[test]
    fn an_annotated_service_asks_for_its_secret_with_its_cluster_names() {
        let meta = |annotations: &[(&str, &str)]| ObjectMeta {
            name: Some("metrics".into()),
            namespace: Some("ops".into()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        };
        let hosts = vec![
            "metrics.ops.svc".to_owned(),
            "metrics.ops.svc.cluster.local".to_owned(),
        ];
        for key in SERVING_CERT_SECRET {
            assert_eq!(
                serving_secret_of(&meta(&[(key, "certs")])),
                Some(ServingSecret {
                    annotation: key,
                    secret: "certs".to_owned(),
                    hosts: hosts.clone()
                })
            );
        }
        assert_eq!(serving_secret_of(&meta(&[])), None);
        assert_eq!(
            serving_secret_of(&meta(&[(SERVING_CERT_SECRET[0], "")])),
            None
        );
    }

    /// Puts the CA into one kind of object; says whether anything changed.
    type Inject = fn(&mut Value, &str) -> bool;

    #[test]
    fn the_ca_goes_where_each_kind_keeps_it_once() {
        let pem = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n";
        let b64 = base64::engine::general_purpose::STANDARD.encode(pem);
        let cases: [(Inject, Value, Value); 5] = [
            (
                inject_config_map,
                json!({"metadata": {}}),
                json!({"metadata": {}, "data": {"service-ca.crt": pem}}),
            ),
            (
                inject_webhooks,
                json!({"webhooks": [{"clientConfig": {"service": {}}}, {"clientConfig": {}}]}),
                json!({"webhooks": [
                    {"clientConfig": {"service": {}, "caBundle": b64}},
                    {"clientConfig": {"caBundle": b64}}
                ]}),
            ),
            (
                inject_conversion,
                json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {}}}}}),
                json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"caBundle": b64}}}}}),
            ),
            (
                inject_conversion,
                json!({"spec": {"conversion": {"strategy": "None"}}}),
                json!({"spec": {"conversion": {"strategy": "None"}}}),
            ),
            (
                inject_api_service,
                json!({"spec": {"service": {}}}),
                json!({"spec": {"service": {}, "caBundle": b64}}),
            ),
        ];
        for (inject, mut object, want) in cases {
            let changes = object != want;
            assert_eq!(inject(&mut object, pem), changes, "{want}");
            assert_eq!(object, want);
            assert!(
                !inject(&mut object, pem),
                "a second pass changes nothing: {want}"
            );
        }
    }
}
