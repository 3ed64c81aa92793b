//! The ClusterServiceVersion (`operators.coreos.com/v1alpha1`), typed: every field OLM v0
//! defines for its metadata and spec, each optional, and every other field kept as read.
//!
//! Nothing is lost between a value and this model: [`ClusterServiceVersion::from_value`] then
//! [`ClusterServiceVersion::to_value`] gives the value back (JSON equality). Fields OLM does
//! not define land in each object's `extra` map; a field OLM defines but given as `null`
//! (which Go's decoder reads as the zero value) is kept there too, as `null`, so absent stays
//! absent and `null` stays `null`.
//!
//! Decoding is as strict about types as OLM's Go decoder (`encoding/json` into the
//! `v1alpha1.ClusterServiceVersion` type): a string where OLM reads a boolean, a number where it
//! reads a string, fails with the field's path. Two differences, both lenient: Go matches field
//! names case-insensitively (a `DisplayName` key fills `displayName` there; here it stays in
//! `extra`), and semantic versions (`version`, `release`) are kept as text here and checked by
//! the validators. A deployment's spec is read as far as [`crate::objects`] models it; other
//! nested Kubernetes objects (policy rules, webhook rules, label selectors, descriptor values,
//! `status`) are kept as [`Value`]s.
//!
//! Each type's declaration is also its field table (`FIELDS`, a [`Fields`]): the JSON keys in
//! Go's struct order, each with Go's `omitempty` (marked after the key, as OLM's JSON tags
//! say) and the [`Kind`] of its value. What reads CSV fields by name elsewhere (Go's
//! case-insensitive matching, opm's projections) reads these tables.

use serde_json::{Map, Value};

use crate::decode::{DecodeError, StringMap, decode, passthrough_struct, read};
#[cfg(doc)]
use crate::decode::{Fields, Kind};
use crate::objects::ObjectMeta;

pub mod examples;

passthrough_struct! {
    /// A ClusterServiceVersion: `apiVersion`, `kind`, `metadata`, `spec` and `status`.
    pub struct ClusterServiceVersion {
        /// `apiVersion` (`operators.coreos.com/v1alpha1`).
        api_version: String = "apiVersion" omitempty,
        /// `kind` (`ClusterServiceVersion`).
        kind: String = "kind" omitempty,
        /// `metadata`.
        metadata: ObjectMeta = "metadata",
        /// `spec`.
        spec: CsvSpec = "spec",
        /// `status`, which OLM writes on the cluster; kept as read.
        status: Value = "status",
    }
}

passthrough_struct! {
    /// `spec`: what the operator is, installs, owns and needs.
    pub struct CsvSpec {
        /// `install`: the install strategy.
        install: InstallStrategy = "install",
        /// `version`: the operator's semantic version.
        version: String = "version" omitempty,
        /// `release`: a release suffix (dot-separated pre-release identifiers).
        release: String = "release" omitempty,
        /// `maturity` (`alpha`, `stable`, ...).
        maturity: String = "maturity" omitempty,
        /// `customresourcedefinitions`: the CRDs the operator owns and requires.
        customresourcedefinitions: CrdDefinitions = "customresourcedefinitions" omitempty,
        /// `apiservicedefinitions`: the aggregated API services it owns and requires.
        apiservicedefinitions: ApiServiceDefinitions = "apiservicedefinitions" omitempty,
        /// `webhookdefinitions`: the admission and conversion webhooks OLM installs for it.
        webhookdefinitions: Vec<WebhookDescription> = "webhookdefinitions" omitempty,
        /// `nativeAPIs`: built-in APIs the operator needs.
        native_apis: Vec<GroupVersionKind> = "nativeAPIs" omitempty,
        /// `minKubeVersion`: the oldest Kubernetes version it supports.
        min_kube_version: String = "minKubeVersion" omitempty,
        /// `displayName`.
        display_name: String = "displayName",
        /// `description` (Markdown).
        description: String = "description" omitempty,
        /// `keywords`.
        keywords: Vec<String> = "keywords" omitempty,
        /// `maintainers`.
        maintainers: Vec<Maintainer> = "maintainers" omitempty,
        /// `provider`.
        provider: AppLink = "provider" omitempty,
        /// `links`.
        links: Vec<AppLink> = "links" omitempty,
        /// `icon`.
        icon: Vec<Icon> = "icon" omitempty,
        /// `installModes`: the operator group shapes it supports.
        install_modes: Vec<InstallMode> = "installModes" omitempty,
        /// `replaces`: the CSV this one upgrades from.
        replaces: String = "replaces" omitempty,
        /// `labels`: labels OLM puts on the CSV's objects.
        labels: StringMap = "labels" omitempty,
        /// `annotations`.
        annotations: StringMap = "annotations" omitempty,
        /// `selector`: a label selector (kept as read).
        selector: Value = "selector" omitempty,
        /// `cleanup`: whether OLM cleans up the operator's objects on removal.
        cleanup: CleanupSpec = "cleanup" omitempty,
        /// `skips`: CSVs this one replaces as well.
        skips: Vec<String> = "skips" omitempty,
        /// `relatedImages`: every image the operator uses.
        related_images: Vec<RelatedImage> = "relatedImages" omitempty,
    }
}

passthrough_struct! {
    /// `spec.install`: a named install strategy (OLM knows `deployment`).
    pub struct InstallStrategy {
        /// `strategy`: the strategy's name.
        strategy: String = "strategy",
        /// `spec`: the deployment strategy's details.
        spec: StrategyDetails = "spec" omitempty,
    }
}

passthrough_struct! {
    /// `spec.install.spec`: the deployments and the RBAC of their service accounts.
    pub struct StrategyDetails {
        /// `deployments`.
        deployments: Vec<StrategyDeployment> = "deployments",
        /// `permissions`: namespaced rules per service account.
        permissions: Vec<StrategyPermissions> = "permissions" omitempty,
        /// `clusterPermissions`: cluster-wide rules per service account.
        cluster_permissions: Vec<StrategyPermissions> = "clusterPermissions" omitempty,
    }
}

passthrough_struct! {
    /// One deployment of the install strategy.
    pub struct StrategyDeployment {
        /// `name`: the Deployment's name.
        name: String = "name",
        /// `spec`: an apps/v1 DeploymentSpec.
        spec: crate::objects::DeploymentSpec = "spec",
        /// `label`: labels for the Deployment.
        label: StringMap = "label" omitempty,
    }
}

impl StrategyDeployment {
    /// The service account the deployment's pods run as: `spec.template.spec.serviceAccountName`,
    /// or `default` when it names none (as Kubernetes defaults it).
    pub fn service_account(&self) -> &str {
        let spec = self.spec.as_ref();
        spec.map_or("default", crate::objects::DeploymentSpec::service_account)
    }
}

passthrough_struct! {
    /// RBAC rules for one service account.
    pub struct StrategyPermissions {
        /// `serviceAccountName`.
        service_account_name: String = "serviceAccountName",
        /// `rules`: rbac/v1 PolicyRules (kept as read).
        rules: Vec<Value> = "rules",
    }
}

impl StrategyPermissions {
    /// The service account's name, `default` when it is absent or empty (as OLM creates it).
    pub fn service_account(&self) -> &str {
        match self.service_account_name.as_deref() {
            None | Some("") => "default",
            Some(name) => name,
        }
    }
}

passthrough_struct! {
    /// A UI descriptor of a spec field, status field or action (`specDescriptors`,
    /// `statusDescriptors`, `actionDescriptors`).
    pub struct Descriptor {
        /// `path`: the field's path in the object.
        path: String = "path",
        /// `displayName`.
        display_name: String = "displayName" omitempty,
        /// `description`.
        description: String = "description" omitempty,
        /// `x-descriptors`: the UI widgets (`urn:alm:descriptor:...`).
        x_descriptors: Vec<String> = "x-descriptors" omitempty,
        /// `value`: any JSON value.
        value: Value = "value" omitempty,
    }
}

passthrough_struct! {
    /// A reference to a resource an API creates (`resources` of a CRD or API service description).
    pub struct ApiResourceReference {
        /// `name`.
        name: String = "name",
        /// `kind`.
        kind: String = "kind",
        /// `version`.
        version: String = "version",
    }
}

passthrough_struct! {
    /// A CRD the operator owns or requires.
    pub struct CrdDescription {
        /// `name`: the CRD's name (`<plural>.<group>`).
        name: String = "name",
        /// `version`: the served version described.
        version: String = "version",
        /// `kind`.
        kind: String = "kind",
        /// `displayName`.
        display_name: String = "displayName" omitempty,
        /// `description`.
        description: String = "description" omitempty,
        /// `resources`: what the operator creates for this kind.
        resources: Vec<ApiResourceReference> = "resources" omitempty,
        /// `statusDescriptors`.
        status_descriptors: Vec<Descriptor> = "statusDescriptors" omitempty,
        /// `specDescriptors`.
        spec_descriptors: Vec<Descriptor> = "specDescriptors" omitempty,
        /// `actionDescriptors`.
        action_descriptors: Vec<Descriptor> = "actionDescriptors" omitempty,
    }
}

passthrough_struct! {
    /// `spec.customresourcedefinitions`.
    pub struct CrdDefinitions {
        /// `owned`: CRDs the bundle ships.
        owned: Vec<CrdDescription> = "owned" omitempty,
        /// `required`: CRDs another operator must provide.
        required: Vec<CrdDescription> = "required" omitempty,
    }
}

passthrough_struct! {
    /// An aggregated API service the operator owns or requires.
    pub struct ApiServiceDescription {
        /// `name`.
        name: String = "name",
        /// `group`.
        group: String = "group",
        /// `version`.
        version: String = "version",
        /// `kind`.
        kind: String = "kind",
        /// `deploymentName`: the deployment serving it.
        deployment_name: String = "deploymentName" omitempty,
        /// `containerPort`.
        container_port: i32 = "containerPort" omitempty,
        /// `displayName`.
        display_name: String = "displayName" omitempty,
        /// `description`.
        description: String = "description" omitempty,
        /// `resources`.
        resources: Vec<ApiResourceReference> = "resources" omitempty,
        /// `statusDescriptors`.
        status_descriptors: Vec<Descriptor> = "statusDescriptors" omitempty,
        /// `specDescriptors`.
        spec_descriptors: Vec<Descriptor> = "specDescriptors" omitempty,
        /// `actionDescriptors`.
        action_descriptors: Vec<Descriptor> = "actionDescriptors" omitempty,
    }
}

passthrough_struct! {
    /// `spec.apiservicedefinitions`.
    pub struct ApiServiceDefinitions {
        /// `owned`.
        owned: Vec<ApiServiceDescription> = "owned" omitempty,
        /// `required`.
        required: Vec<ApiServiceDescription> = "required" omitempty,
    }
}

/// The fields a `webhookdefinitions` entry shares, by name and meaning, with a webhook of an
/// admission webhook configuration (OLM copies them from one to the other).
pub const SHARED_ADMISSION_FIELDS: [&str; 5] = [
    "failurePolicy",
    "matchPolicy",
    "objectSelector",
    "rules",
    "timeoutSeconds",
];

passthrough_struct! {
    /// A webhook OLM installs for the operator.
    pub struct WebhookDescription {
        /// `generateName`: the webhook's name.
        generate_name: String = "generateName",
        /// `type`: `ValidatingAdmissionWebhook`, `MutatingAdmissionWebhook` or `ConversionWebhook`.
        type_: String = "type",
        /// `deploymentName`: the deployment serving it.
        deployment_name: String = "deploymentName" omitempty,
        /// `containerPort`: the service port.
        container_port: i32 = "containerPort" omitempty,
        /// `targetPort`: the container port (a number or a port name).
        target_port: Value = "targetPort" omitempty,
        /// `rules`: admissionregistration/v1 RuleWithOperations (kept as read).
        rules: Vec<Value> = "rules" omitempty,
        /// `failurePolicy`.
        failure_policy: String = "failurePolicy" omitempty,
        /// `matchPolicy`.
        match_policy: String = "matchPolicy" omitempty,
        /// `objectSelector`: a label selector (kept as read).
        object_selector: Value = "objectSelector" omitempty,
        /// `sideEffects`.
        side_effects: String = "sideEffects",
        /// `timeoutSeconds`.
        timeout_seconds: i32 = "timeoutSeconds" omitempty,
        /// `admissionReviewVersions`.
        admission_review_versions: Vec<String> = "admissionReviewVersions",
        /// `reinvocationPolicy`.
        reinvocation_policy: String = "reinvocationPolicy" omitempty,
        /// `webhookPath`.
        webhook_path: String = "webhookPath" omitempty,
        /// `conversionCRDs`: the CRDs a conversion webhook converts.
        conversion_crds: Vec<String> = "conversionCRDs" omitempty,
    }
}

passthrough_struct! {
    /// A group, version and kind (`nativeAPIs`).
    pub struct GroupVersionKind {
        /// `group`.
        group: String = "group",
        /// `version`.
        version: String = "version",
        /// `kind`.
        kind: String = "kind",
    }
}

passthrough_struct! {
    /// A maintainer.
    pub struct Maintainer {
        /// `name`.
        name: String = "name" omitempty,
        /// `email`.
        email: String = "email" omitempty,
    }
}

passthrough_struct! {
    /// A named link (`provider`, `links`).
    pub struct AppLink {
        /// `name`.
        name: String = "name" omitempty,
        /// `url`.
        url: String = "url" omitempty,
    }
}

passthrough_struct! {
    /// An icon: the CSV's (`spec.icon`), and the package's in a File-Based Catalog.
    pub struct Icon {
        /// `base64data`: the image, base64-encoded.
        base64data: String = "base64data",
        /// `mediatype` (`image/png`, `image/svg+xml`, ...).
        mediatype: String = "mediatype",
    }
}

passthrough_struct! {
    /// An install mode and whether the operator supports it.
    pub struct InstallMode {
        /// `type`: `OwnNamespace`, `SingleNamespace`, `MultiNamespace` or `AllNamespaces`.
        type_: String = "type",
        /// `supported`.
        supported: bool = "supported",
    }
}

passthrough_struct! {
    /// `spec.cleanup`.
    pub struct CleanupSpec {
        /// `enabled`.
        enabled: bool = "enabled",
    }
}

passthrough_struct! {
    /// An image the operator uses.
    pub struct RelatedImage {
        /// `name`.
        name: String = "name",
        /// `image`: its pull spec.
        image: String = "image",
    }
}

impl CsvSpec {
    /// `customresourcedefinitions.owned` (empty when absent).
    pub fn owned_crds(&self) -> &[CrdDescription] {
        (self.customresourcedefinitions.as_ref())
            .and_then(|c| c.owned.as_deref())
            .unwrap_or_default()
    }

    /// `customresourcedefinitions.owned` and `.required`, each by its field name (empty when
    /// absent).
    pub fn crd_lists(&self) -> [(&'static str, &[CrdDescription]); 2] {
        let crds = self.customresourcedefinitions.as_ref();
        let required = crds.and_then(|c| c.required.as_deref());
        [
            ("owned", self.owned_crds()),
            ("required", required.unwrap_or_default()),
        ]
    }

    /// The install strategy's details (`install.spec`), when given.
    pub fn strategy(&self) -> Option<&StrategyDetails> {
        self.install.as_ref()?.spec.as_ref()
    }

    /// The strategy's `permissions` and `clusterPermissions`, each by its field name (empty
    /// when absent).
    pub fn permissions(&self) -> [(&'static str, &[StrategyPermissions]); 2] {
        let strategy = self.strategy();
        let permissions = strategy.and_then(|s| s.permissions.as_deref());
        let cluster = strategy.and_then(|s| s.cluster_permissions.as_deref());
        [
            ("permissions", permissions.unwrap_or_default()),
            ("clusterPermissions", cluster.unwrap_or_default()),
        ]
    }
}

impl Icon {
    /// An icon of `base64data` and `mediatype`, nothing else.
    pub fn new(base64data: impl Into<String>, mediatype: impl Into<String>) -> Self {
        Self {
            base64data: Some(base64data.into()),
            mediatype: Some(mediatype.into()),
            extra: Map::new(),
        }
    }

    /// The CSV's first icon, when it has image data: its data and media type (`""` when
    /// absent), nothing else of it.
    pub fn first_of(spec: &CsvSpec) -> Option<Self> {
        let first = spec.icon.as_ref()?.first()?;
        let data = first.base64data.as_deref().filter(|d| !d.is_empty())?;
        Some(Self::new(data, first.mediatype.as_deref().unwrap_or("")))
    }
}

impl ClusterServiceVersion {
    /// Reads a CSV from its JSON value, as strictly about types as OLM's Go decoder.
    pub fn from_value(value: &Value) -> Result<Self, DecodeError> {
        decode(value)
    }

    /// Reads a CSV the way olmpack's validators and importers look at it: every field of the
    /// type OLM reads lands in its typed place, and a field of another type stays in its
    /// object's `extra` as read (so it counts as absent and still prints back). The first such
    /// field, as [`ClusterServiceVersion::from_value`] reports it, comes with the CSV; a value
    /// that is not an object reads as an empty CSV.
    pub fn read(value: &Value) -> (Self, Option<DecodeError>) {
        read(value)
    }

    /// The CSV as a JSON value: the value it was read from, with any changes made since.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a map of JSON values always serializes")
    }

    /// `metadata.name`, or `""`.
    pub fn name(&self) -> &str {
        self.metadata
            .as_ref()
            .and_then(|m| m.name.as_deref())
            .unwrap_or("")
    }

    /// `metadata.annotations[key]`, when present and not empty.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        let annotations = self.metadata.as_ref()?.annotations.as_ref()?;
        annotations
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// The install strategy's details (`spec.install.spec`), when given.
    pub fn strategy(&self) -> Option<&StrategyDetails> {
        self.spec.as_ref()?.strategy()
    }

    /// The example objects of `metadata.annotations.alm-examples` (none when it is absent),
    /// or why it is not a JSON array of objects ([`examples`] says how it is read).
    pub fn alm_examples(&self) -> Result<Vec<Value>, examples::ExamplesError> {
        self.examples_in(examples::ALM_EXAMPLES)
    }

    /// The example objects of annotation `key` ([`examples::ALM_EXAMPLES`] or
    /// [`examples::OLM_EXAMPLES`]), read as [`ClusterServiceVersion::alm_examples`] reads them.
    pub fn examples_in(&self, key: &str) -> Result<Vec<Value>, examples::ExamplesError> {
        let annotations = self.metadata.as_ref().and_then(|m| m.annotations.as_ref());
        let text = annotations
            .filter(|a| !a.was_null(key))
            .and_then(|a| a.get(key))
            .map(String::as_str);
        examples::read(self.name(), key, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Kind;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {
                "name": "webapp.v1.0.0",
                "annotations": {"capabilities": "Basic Install", "olm.skipRange": "", "createdAt": null},
                "creationTimestamp": null,
                "generation": 3,
            },
            "spec": {
                "displayName": "WebApp",
                "description": null,
                "version": "1.0.0",
                "install": {
                    "strategy": "deployment",
                    "spec": {
                        "deployments": [{
                            "name": "webapp",
                            "spec": {"template": {"spec": {"serviceAccountName": "webapp-sa"}}},
                        }],
                        "permissions": [{"serviceAccountName": "", "rules": [{"verbs": ["get"]}]}],
                    },
                },
                "installModes": [
                    {"type": "OwnNamespace", "supported": true},
                    {"type": "AllNamespaces", "supported": false, "note": "kept"},
                ],
                "customresourcedefinitions": {"owned": [{
                    "name": "webapps.example.com",
                    "kind": "WebApp",
                    "version": "v1",
                    "specDescriptors": [{"path": "size", "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:podCount"], "value": null}],
                }]},
                "webhookdefinitions": [{"type": "ConversionWebhook", "generateName": "cwebapp.example.com", "containerPort": 443, "targetPort": "https"}],
                "unknownSpecField": {"x": [1, 2]},
            },
        })
    }

    #[test]
    fn round_trips_known_unknown_and_null_fields() {
        let value = sample();
        let csv = ClusterServiceVersion::from_value(&value).unwrap();
        assert_eq!(csv.to_value(), value);
        assert_eq!(csv.name(), "webapp.v1.0.0");
        assert_eq!(csv.annotation("capabilities"), Some("Basic Install"));
        assert_eq!(csv.annotation("olm.skipRange"), None);
        let annotations = csv.metadata.as_ref().unwrap().annotations.as_ref().unwrap();
        assert_eq!(annotations.get("createdAt").map(String::as_str), Some(""));
        let spec = csv.spec.as_ref().unwrap();
        assert_eq!(spec.description, None);
        assert_eq!(spec.extra.get("description"), Some(&Value::Null));
        assert!(spec.extra.contains_key("unknownSpecField"));
        let modes = spec.install_modes.as_ref().unwrap();
        assert_eq!(modes[1].extra.get("note"), Some(&json!("kept")));
        let strategy = csv.strategy().unwrap();
        let deployments = strategy.deployments.as_ref().unwrap();
        assert_eq!(deployments[0].service_account(), "webapp-sa");
        assert_eq!(
            strategy.permissions.as_ref().unwrap()[0].service_account(),
            "default"
        );
        let webhook = &spec.webhookdefinitions.as_ref().unwrap()[0];
        assert_eq!(webhook.container_port, Some(443));
        assert_eq!(webhook.target_port, Some(json!("https")));
    }

    #[test]
    fn edits_show_in_the_value() {
        let mut csv = ClusterServiceVersion::from_value(&sample()).unwrap();
        let spec = csv.spec.as_mut().unwrap();
        spec.replaces = Some("webapp.v0.9.0".into());
        spec.display_name = None;
        let value = csv.to_value();
        assert_eq!(value["spec"]["replaces"], "webapp.v0.9.0");
        assert!(value["spec"].get("displayName").is_none());
    }

    #[test]
    fn a_lenient_read_keeps_mistyped_fields_aside_and_the_rest_typed() {
        let value = json!({
            "metadata": {"name": "demo.v1.0.0"},
            "spec": {
                "version": 1.0,
                "displayName": "Demo",
                "installModes": [
                    {"type": "OwnNamespace", "supported": "yes"},
                    {"type": "AllNamespaces", "supported": true},
                ],
            },
        });
        let (csv, refused) = ClusterServiceVersion::read(&value);
        assert_eq!(
            refused.unwrap().to_string(),
            "field spec.installModes[0].supported: OLM reads a boolean here, found string \"yes\" (OLM v0's decoder refuses it too)"
        );
        assert_eq!(csv.to_value(), value);
        let spec = csv.spec.as_ref().unwrap();
        assert_eq!(spec.version, None);
        assert_eq!(spec.extra.get("version"), Some(&json!(1.0)));
        assert_eq!(spec.display_name.as_deref(), Some("Demo"));
        let modes = spec.install_modes.as_ref().unwrap();
        assert_eq!(modes[0].supported, None);
        assert_eq!(modes[1].supported, Some(true));
        assert_eq!(csv.name(), "demo.v1.0.0");
        // The strict read is unaffected afterwards, and a non-object reads as empty.
        assert!(ClusterServiceVersion::from_value(&value).is_err());
        let (empty, refused) = ClusterServiceVersion::read(&json!([1]));
        assert_eq!(empty, ClusterServiceVersion::default());
        assert!(refused.is_some());
    }

    /// A value with every field of `kind` given, each of the type its kind reads.
    fn full(kind: Kind) -> Value {
        match kind {
            Kind::String => json!("text"),
            Kind::Bool => json!(true),
            Kind::Int32 | Kind::Int64 => json!(7),
            Kind::StringMap => json!({"key": "value"}),
            Kind::Any => json!({"kept": ["as", "read"]}),
            Kind::List(item) => json!([full(*item)]),
            Kind::Struct(fields) => {
                let entries = fields
                    .fields
                    .iter()
                    .map(|f| (f.key.to_owned(), full(f.kind)));
                Value::Object(entries.collect())
            }
        }
    }

    /// Every field below `kind` in [`full`]'s value: its JSON pointer, its path as decoding
    /// errors name it, and its kind.
    fn fields_below(kind: Kind, at: (&str, &str), out: &mut Vec<(String, String, Kind)>) {
        match kind {
            Kind::Struct(fields) => {
                for f in fields.fields {
                    let pointer = format!("{}/{}", at.0, f.key);
                    let path = if at.1.is_empty() {
                        f.key.to_owned()
                    } else {
                        format!("{}.{}", at.1, f.key)
                    };
                    fields_below(f.kind, (&pointer, &path), out);
                    out.push((pointer, path, f.kind));
                }
            }
            Kind::List(item) => {
                fields_below(
                    *item,
                    (&format!("{}/0", at.0), &format!("{}[0]", at.1)),
                    out,
                );
            }
            _ => {}
        }
    }

    #[test]
    fn the_field_tables_are_the_typed_fields() {
        // Every key of every table reads typed, and prints back as given.
        let value = full(<ClusterServiceVersion as crate::decode::GoKind>::KIND);
        let csv = ClusterServiceVersion::from_value(&value).unwrap();
        assert_eq!(csv.to_value(), value);
        assert!(csv.spec.as_ref().unwrap().extra.is_empty());
        // Every key is a typed field of its kind: a value no kind reads fails there.
        let mut fields = Vec::new();
        let root = <ClusterServiceVersion as crate::decode::GoKind>::KIND;
        fields_below(root, ("", ""), &mut fields);
        assert_eq!(fields.len(), 257);
        for (pointer, path, kind) in fields.into_iter().filter(|f| f.2 != Kind::Any) {
            let mut wrong = value.clone();
            *wrong.pointer_mut(&pointer).unwrap() = json!(1.5);
            let err = ClusterServiceVersion::from_value(&wrong).unwrap_err();
            assert_eq!(err.path, path, "{kind:?}");
        }
    }

    #[test]
    fn the_tables_say_go_s_omitempty() {
        let table = [
            (CsvSpec::FIELDS, "displayName", false),
            (CsvSpec::FIELDS, "description", true),
            (CrdDescription::FIELDS, "name", false),
            (CrdDescription::FIELDS, "resources", true),
            (InstallMode::FIELDS, "supported", false),
            (AppLink::FIELDS, "url", true),
            (WebhookDescription::FIELDS, "sideEffects", false),
        ];
        for (fields, key, omitempty) in table {
            let field = fields.get(key).unwrap();
            assert_eq!(field.omitempty, omitempty, "{}.{key}", fields.name);
        }
        let keys: Vec<_> = InstallMode::FIELDS.keys().collect();
        assert_eq!(keys, ["type", "supported"]);
        let supported = InstallMode::FIELDS.get("supported").unwrap();
        assert_eq!(supported.kind, Kind::Bool);
        let owned = CrdDefinitions::FIELDS.get("owned").unwrap();
        assert_eq!(
            owned.kind,
            Kind::List(&Kind::Struct(&CrdDescription::FIELDS))
        );
    }

    #[test]
    fn wrong_types_name_the_field_as_olm_would_refuse_them() {
        let cases = [
            (
                json!({"spec": {"installModes": [{"type": "OwnNamespace", "supported": "true"}]}}),
                "field spec.installModes[0].supported: OLM reads a boolean here, found string \"true\" (OLM v0's decoder refuses it too)",
            ),
            (
                json!({"metadata": {"annotations": {"certified": false}}}),
                "field metadata.annotations.certified: OLM reads a string here, found boolean `false` (OLM v0's decoder refuses it too)",
            ),
            (
                json!({"spec": {"webhookdefinitions": [{"containerPort": "443"}]}}),
                "field spec.webhookdefinitions[0].containerPort: OLM reads a 32-bit integer here, found string \"443\" (OLM v0's decoder refuses it too)",
            ),
            (
                json!({"spec": {"webhookdefinitions": [{"containerPort": 4_294_967_296_u64}]}}),
                "field spec.webhookdefinitions[0].containerPort: OLM reads a 32-bit integer here, found integer `4294967296` (OLM v0's decoder refuses it too)",
            ),
            (
                json!({"spec": {"keywords": "operator"}}),
                "field spec.keywords: OLM reads a list here, found string \"operator\" (OLM v0's decoder refuses it too)",
            ),
            (
                json!({"spec": {"provider": "Example"}}),
                "field spec.provider: OLM reads an object here, found string \"Example\" (OLM v0's decoder refuses it too)",
            ),
            (
                json!({"spec": {"version": 1.0}}),
                "field spec.version: OLM reads a string here, found floating point `1.0` (OLM v0's decoder refuses it too)",
            ),
            (
                json!({"spec": {"keywords": [null]}}),
                "field spec.keywords[0]: OLM reads a string here, found null (Go's decoder reads it as empty; olmpack does not)",
            ),
            (
                json!([1]),
                "field .: OLM reads an object here, found sequence (OLM v0's decoder refuses it too)",
            ),
        ];
        for (value, want) in cases {
            let err = ClusterServiceVersion::from_value(&value).unwrap_err();
            assert_eq!(err.to_string(), want, "{value}");
        }
    }
}
