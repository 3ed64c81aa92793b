//! The parts of an operator's Kubernetes objects that olmpack's builders and validators read:
//! a Deployment's pod template, a Service's selector and ports, a CRD's versions and
//! conversion, and any object's kind and metadata. Typed like the CSV ([`crate::csv`]): every
//! field optional, every field not modelled here kept in `extra`, so a value read into these
//! types prints back as it was.
//!
//! [`view`] reads leniently: a field given with a type the API server does not read there
//! (a string `port`, a list for `selector`) is kept in `extra` and reads as absent. The API
//! server refuses such an object; olmpack says so where it validates the object and reads the
//! rest, as the JSON lookups these types replace did. Ports are read as 64-bit integers
//! (Kubernetes reads 32-bit ones), so an out-of-range port is reported, not dropped.
//!
//! These are views, not the API's full types: the upgrade check, which compares whole
//! schemas, decodes CRDs strictly into the API server's own types (k8s-openapi) instead.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::decode::{ReadLenient, StringMap, as_read, lenient, passthrough_struct, text};

/// What names an object of any kind (custom resources included), borrowed from its value
/// without a copy: `apiVersion`, `kind` and `metadata.name`, each "" when absent or not a
/// string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Identity<'a> {
    /// `apiVersion`.
    pub api_version: &'a str,
    /// `kind`.
    pub kind: &'a str,
    /// `metadata.name`.
    pub name: &'a str,
}

impl<'a> Identity<'a> {
    /// The identity of `value` (the one place olmpack reads these fields from any object).
    pub fn of(value: &'a Value) -> Self {
        let text = |v: Option<&'a Value>| v.and_then(Value::as_str).unwrap_or("");
        Self {
            api_version: text(value.get("apiVersion")),
            kind: text(value.get("kind")),
            name: text(value.pointer("/metadata/name")),
        }
    }
}

/// An admission webhook's `clientConfig.service` (an entry of a webhook configuration's
/// `webhooks`), or an empty one.
pub fn webhook_service(hook: &Value) -> ServiceReference {
    let config = hook.get("clientConfig").unwrap_or(&Value::Null);
    let config: ClientConfig = view(config);
    config.service.unwrap_or_default()
}

/// Reads `value` as `T` leniently (see the module).
pub fn view<T: ReadLenient + Default>(value: &Value) -> T {
    lenient(value)
}

passthrough_struct! {
    /// The object metadata fields olmpack reads.
    pub struct ObjectMeta {
        /// `metadata.name`: the CSV's name (`<package>.v<version>` by convention).
        name: String = "name",
        /// `metadata.namespace`.
        namespace: String = "namespace",
        /// `metadata.annotations` (`olm.skipRange`, `alm-examples`, `capabilities`, ...).
        annotations: StringMap = "annotations",
        /// `metadata.labels`.
        labels: StringMap = "labels",
    }
}

passthrough_struct! {
    /// Any Kubernetes object: its type and metadata.
    pub struct Object {
        /// `apiVersion`.
        api_version: String = "apiVersion",
        /// `kind`.
        kind: String = "kind",
        /// `metadata`.
        metadata: ObjectMeta = "metadata",
    }
}

impl Object {
    /// `metadata.name`, or "".
    pub fn name(&self) -> &str {
        self.metadata.as_ref().map_or("", |m| text(&m.name))
    }

    /// `metadata.annotations[key]`, when given (and not as `null`).
    pub fn annotation(&self, key: &str) -> Option<&str> {
        let annotations = self.metadata.as_ref()?.annotations.as_ref()?;
        let value = annotations.get(key).filter(|_| !annotations.was_null(key));
        value.map(String::as_str)
    }
}

passthrough_struct! {
    /// An apps/v1 Deployment.
    pub struct Deployment {
        /// `metadata`.
        metadata: ObjectMeta = "metadata",
        /// `spec`.
        spec: DeploymentSpec = "spec",
    }
}

impl Deployment {
    /// `spec.template.spec`, when given.
    pub fn pod(&self) -> Option<&PodSpec> {
        self.spec.as_ref()?.pod()
    }

    /// The service account its pods run as (see [`DeploymentSpec::service_account`]).
    pub fn service_account(&self) -> &str {
        self.spec
            .as_ref()
            .map_or("default", DeploymentSpec::service_account)
    }

    /// `spec.template.metadata.labels`, when given.
    pub fn pod_labels(&self) -> Option<&StringMap> {
        self.spec
            .as_ref()?
            .template
            .as_ref()?
            .metadata
            .as_ref()?
            .labels
            .as_ref()
    }
}

passthrough_struct! {
    /// A Deployment's `spec` (also the `spec` of a CSV's install strategy deployment).
    pub struct DeploymentSpec {
        /// `selector`: the label selector of the Deployment's pods (kept as read).
        selector: Value = "selector",
        /// `template`: the pod template.
        template: PodTemplateSpec = "template",
    }
}

impl DeploymentSpec {
    /// `template.spec`, when given.
    pub fn pod(&self) -> Option<&PodSpec> {
        self.template.as_ref()?.spec.as_ref()
    }

    /// The service account the pods run as: `template.spec.serviceAccountName`, or `default`
    /// when it names none (as Kubernetes defaults it).
    pub fn service_account(&self) -> &str {
        let name = self.pod().and_then(|p| p.service_account_name.as_deref());
        name.filter(|n| !n.is_empty()).unwrap_or("default")
    }
}

passthrough_struct! {
    /// A pod template: `metadata` and `spec`.
    pub struct PodTemplateSpec {
        /// `metadata` (the pods' labels and annotations).
        metadata: ObjectMeta = "metadata",
        /// `spec`.
        spec: PodSpec = "spec",
    }
}

passthrough_struct! {
    /// A pod's `spec`, as far as olmpack reads it.
    pub struct PodSpec {
        /// `serviceAccountName`.
        service_account_name: String = "serviceAccountName",
        /// `containers`.
        containers: Vec<Container> = "containers",
        /// `initContainers`.
        init_containers: Vec<Container> = "initContainers",
        /// `securityContext`: the pod-wide security settings.
        security_context: PodSecurityContext = "securityContext",
        /// `hostNetwork`.
        host_network: bool = "hostNetwork",
        /// `hostPID`.
        host_pid: bool = "hostPID",
        /// `volumes`.
        volumes: Vec<Volume> = "volumes",
    }
}

impl PodSpec {
    /// Each container list by its field name (`containers`, then `initContainers`).
    pub fn container_lists(&self) -> [(&'static str, &[Container]); 2] {
        [
            ("containers", self.containers.as_deref().unwrap_or(&[])),
            (
                "initContainers",
                self.init_containers.as_deref().unwrap_or(&[]),
            ),
        ]
    }

    /// Every container and init container.
    pub fn all_containers(&self) -> impl Iterator<Item = &Container> {
        let [(_, containers), (_, init)] = self.container_lists();
        containers.iter().chain(init)
    }

    /// The names of the volumes that hold Secret `secret`.
    pub fn secret_volumes(&self, secret: &str) -> BTreeSet<&str> {
        let volumes = self.volumes.iter().flatten();
        let of_secret = volumes.filter(|v| {
            let source = v.secret.as_ref();
            source.is_some_and(|s| text(&s.secret_name) == secret)
        });
        of_secret.map(|v| text(&v.name)).collect()
    }

    /// Where the init containers, then the containers, mount any of `volumes`.
    pub fn mount_paths(&self, volumes: &BTreeSet<&str>) -> Vec<String> {
        let [(_, containers), (_, init)] = self.container_lists();
        let mounts = init
            .iter()
            .chain(containers)
            .flat_map(|c| c.volume_mounts.iter().flatten());
        mounts
            .filter(|m| volumes.contains(text(&m.name)))
            .map(|m| text(&m.mount_path).to_owned())
            .collect()
    }
}

passthrough_struct! {
    /// A pod's volume, as far as olmpack reads it.
    pub struct Volume {
        /// `name`.
        name: String = "name",
        /// `secret`: a Secret's keys as files.
        secret: SecretVolumeSource = "secret",
    }
}

passthrough_struct! {
    /// A volume's `secret` source.
    pub struct SecretVolumeSource {
        /// `secretName`.
        secret_name: String = "secretName",
    }
}

passthrough_struct! {
    /// A container, as far as olmpack reads it.
    pub struct Container {
        /// `name`.
        name: String = "name",
        /// `image`.
        image: String = "image",
        /// `env`.
        env: Vec<EnvVar> = "env",
        /// `volumeMounts`.
        volume_mounts: Vec<VolumeMount> = "volumeMounts",
        /// `resources`.
        resources: Resources = "resources",
        /// `securityContext`.
        security_context: SecurityContext = "securityContext",
    }
}

impl Container {
    /// `name`, or "".
    pub fn name(&self) -> &str {
        text(&self.name)
    }
}

passthrough_struct! {
    /// An environment variable of a container.
    pub struct EnvVar {
        /// `name`.
        name: String = "name",
        /// `value`.
        value: String = "value",
        /// `valueFrom`: where the value comes from (kept as read).
        value_from: Value = "valueFrom",
    }
}

impl EnvVar {
    /// Whether this is the variable `name` set to a literal value (no `valueFrom`).
    pub fn is_literal(&self, name: &str) -> bool {
        self.name.as_deref() == Some(name) && self.value_from.is_none()
    }
}

passthrough_struct! {
    /// A container's volume mount.
    pub struct VolumeMount {
        /// `name`: the volume's name.
        name: String = "name",
        /// `mountPath`.
        mount_path: String = "mountPath",
    }
}

passthrough_struct! {
    /// A container's `resources`.
    pub struct Resources {
        /// `requests`, by resource name (quantities kept as read).
        requests: Map<String, Value> = "requests",
        /// `limits`, by resource name.
        limits: Map<String, Value> = "limits",
    }
}

passthrough_struct! {
    /// A pod's `securityContext`, as far as the restricted profile reads it.
    pub struct PodSecurityContext {
        /// `runAsNonRoot`.
        run_as_non_root: bool = "runAsNonRoot",
        /// `seccompProfile`.
        seccomp_profile: SeccompProfile = "seccompProfile",
    }
}

passthrough_struct! {
    /// A container's `securityContext`, as far as the restricted profile reads it.
    pub struct SecurityContext {
        /// `runAsNonRoot`.
        run_as_non_root: bool = "runAsNonRoot",
        /// `allowPrivilegeEscalation`.
        allow_privilege_escalation: bool = "allowPrivilegeEscalation",
        /// `privileged`.
        privileged: bool = "privileged",
        /// `capabilities`.
        capabilities: Capabilities = "capabilities",
        /// `seccompProfile`.
        seccomp_profile: SeccompProfile = "seccompProfile",
    }
}

passthrough_struct! {
    /// A container's `securityContext.capabilities`.
    pub struct Capabilities {
        /// `add`.
        add: Vec<String> = "add",
        /// `drop`.
        drop: Vec<String> = "drop",
    }
}

passthrough_struct! {
    /// A `seccompProfile`.
    pub struct SeccompProfile {
        /// `type` (`RuntimeDefault`, `Localhost`, `Unconfined`).
        type_: String = "type",
    }
}

impl SeccompProfile {
    /// Whether the profile is one the restricted Pod Security Standard allows
    /// (`RuntimeDefault` or `Localhost`).
    pub fn is_restricted(profile: Option<&Self>) -> bool {
        let kind = profile.and_then(|p| p.type_.as_deref());
        matches!(kind, Some("RuntimeDefault" | "Localhost"))
    }
}

passthrough_struct! {
    /// A v1 Service.
    pub struct Service {
        /// `metadata`.
        metadata: ObjectMeta = "metadata",
        /// `spec`.
        spec: ServiceSpec = "spec",
    }
}

impl Service {
    /// `spec.selector`, when given.
    pub fn selector(&self) -> Option<&StringMap> {
        self.spec.as_ref()?.selector.as_ref()
    }

    /// Whether the Service's selector is given, not empty, and matches every one of `labels`.
    pub fn selects(&self, labels: Option<&StringMap>) -> bool {
        self.selector()
            .is_some_and(|sel| !sel.is_empty() && labels.is_some_and(|labels| labels.includes(sel)))
    }

    /// The `targetPort` of the Service's port numbered `port`, as read.
    pub fn target_port(&self, port: i64) -> Option<&Value> {
        let ports = self.spec.as_ref()?.ports.as_deref()?;
        let entry = ports.iter().find(|p| p.port == Some(port))?;
        entry.target_port.as_ref()
    }
}

passthrough_struct! {
    /// A Service's `spec`.
    pub struct ServiceSpec {
        /// `selector`: the labels of the pods it sends traffic to.
        selector: StringMap = "selector",
        /// `ports`.
        ports: Vec<ServicePort> = "ports",
    }
}

passthrough_struct! {
    /// One of a Service's ports.
    pub struct ServicePort {
        /// `name`.
        name: String = "name",
        /// `port`: the port the Service listens on.
        port: i64 = "port",
        /// `targetPort`: the pods' port, a number or a name (kept as read).
        target_port: Value = "targetPort",
    }
}

passthrough_struct! {
    /// A cert-manager Certificate (`cert-manager.io/v1`), as far as olmpack reads it.
    pub struct Certificate {
        /// `spec`.
        spec: CertificateSpec = "spec",
    }
}

passthrough_struct! {
    /// A Certificate's `spec`.
    pub struct CertificateSpec {
        /// `secretName`: the Secret cert-manager writes the certificate to.
        secret_name: String = "secretName",
        /// `dnsNames`.
        dns_names: Vec<String> = "dnsNames",
    }
}

impl Certificate {
    /// `spec.secretName`, or "".
    pub fn secret_name(&self) -> &str {
        self.spec.as_ref().map_or("", |s| text(&s.secret_name))
    }
}

passthrough_struct! {
    /// An rbac/v1 RoleBinding or ClusterRoleBinding.
    pub struct RoleBinding {
        /// `metadata`.
        metadata: ObjectMeta = "metadata",
        /// `roleRef`: the (Cluster)Role it grants.
        role_ref: RoleRef = "roleRef",
        /// `subjects`: who it grants the role to.
        subjects: Vec<Subject> = "subjects",
    }
}

passthrough_struct! {
    /// A binding's `roleRef`.
    pub struct RoleRef {
        /// `kind` (`Role` or `ClusterRole`).
        kind: String = "kind",
        /// `name`.
        name: String = "name",
    }
}

passthrough_struct! {
    /// One of a binding's `subjects`.
    pub struct Subject {
        /// `kind` (`ServiceAccount`, `User`, `Group`).
        kind: String = "kind",
        /// `name`.
        name: String = "name",
        /// `namespace`.
        namespace: String = "namespace",
    }
}

passthrough_struct! {
    /// An rbac/v1 PolicyRule (of a Role, a ClusterRole or a CSV's permissions).
    pub struct PolicyRule {
        /// `apiGroups`.
        api_groups: Vec<String> = "apiGroups",
        /// `resources`.
        resources: Vec<String> = "resources",
        /// `verbs`.
        verbs: Vec<String> = "verbs",
        /// `resourceNames`.
        resource_names: Vec<String> = "resourceNames",
    }
}

impl PolicyRule {
    /// Whether `list` names any of `wanted` (`"*"` only when wanted names it).
    pub fn names_any(list: &Option<Vec<String>>, wanted: &[&str]) -> bool {
        list.iter().flatten().any(|v| wanted.contains(&v.as_str()))
    }

    /// Whether the rule covers one of `groups` and one of `resources`.
    pub fn covers(&self, groups: &[&str], resources: &[&str]) -> bool {
        Self::names_any(&self.api_groups, groups) && Self::names_any(&self.resources, resources)
    }

    /// Whether the rule grants one of `verbs` on one of `groups`' `resources`.
    pub fn allows(&self, groups: &[&str], resources: &[&str], verbs: &[&str]) -> bool {
        self.covers(groups, resources) && Self::names_any(&self.verbs, verbs)
    }
}

passthrough_struct! {
    /// An apiextensions.k8s.io/v1 CustomResourceDefinition (read a v1beta1 one through its
    /// conversion to v1 first).
    pub struct CustomResourceDefinition {
        /// `metadata`.
        metadata: ObjectMeta = "metadata",
        /// `spec`.
        spec: CrdSpec = "spec",
    }
}

impl CustomResourceDefinition {
    /// `spec.versions`, or none.
    pub fn versions(&self) -> &[CrdVersion] {
        self.spec
            .as_ref()
            .and_then(|s| s.versions.as_deref())
            .unwrap_or(&[])
    }

    /// The versions the API server serves (`served` not `false`).
    pub fn served_versions(&self) -> impl Iterator<Item = &CrdVersion> {
        self.versions().iter().filter(|v| v.served != Some(false))
    }

    /// `spec.names.kind`, or "".
    pub fn kind(&self) -> &str {
        let names = self.spec.as_ref().and_then(|s| s.names.as_ref());
        names.map_or("", |n| text(&n.kind))
    }

    /// `spec.group`, or "".
    pub fn group(&self) -> &str {
        self.spec.as_ref().map_or("", |s| text(&s.group))
    }

    /// The Service `spec.conversion.webhook.clientConfig.service` names, whatever the
    /// strategy; "" when none.
    pub fn conversion_service_name(&self) -> &str {
        let conversion = self.spec.as_ref().and_then(|s| s.conversion.as_ref());
        let service = conversion.and_then(CrdConversion::service);
        service.map_or("", |s| text(&s.name))
    }

    /// `spec.conversion`, when its strategy is `Webhook`.
    pub fn webhook_conversion(&self) -> Option<&CrdConversion> {
        let conversion = self.spec.as_ref()?.conversion.as_ref()?;
        (conversion.strategy.as_deref() == Some("Webhook")).then_some(conversion)
    }
}

passthrough_struct! {
    /// A CRD's `spec`, as far as olmpack reads it.
    pub struct CrdSpec {
        /// `group`.
        group: String = "group",
        /// `names`.
        names: CrdNames = "names",
        /// `scope` (`Namespaced` or `Cluster`).
        scope: String = "scope",
        /// `versions`.
        versions: Vec<CrdVersion> = "versions",
        /// `conversion`.
        conversion: CrdConversion = "conversion",
        /// `preserveUnknownFields`.
        preserve_unknown_fields: bool = "preserveUnknownFields",
    }
}

passthrough_struct! {
    /// A CRD's `spec.names`.
    pub struct CrdNames {
        /// `kind`.
        kind: String = "kind",
        /// `plural`.
        plural: String = "plural",
        /// `singular`.
        singular: String = "singular",
    }
}

passthrough_struct! {
    /// One of a CRD's `spec.versions`.
    pub struct CrdVersion {
        /// `name` (`v1alpha1`, ...).
        name: String = "name",
        /// `served`.
        served: bool = "served",
        /// `storage`.
        storage: bool = "storage",
        /// `schema`.
        schema: CrdSchema = "schema",
        /// `subresources`.
        subresources: CrdSubresources = "subresources",
        /// `additionalPrinterColumns`.
        additional_printer_columns: Vec<PrinterColumn> = "additionalPrinterColumns",
    }
}

passthrough_struct! {
    /// One of a CRD version's `additionalPrinterColumns`.
    pub struct PrinterColumn {
        /// `name`.
        name: String = "name",
        /// `type` (`integer`, `number`, `string`, `boolean`, `date`).
        type_: String = "type",
        /// `jsonPath`.
        json_path: String = "jsonPath",
    }
}

impl CrdVersion {
    /// `name`, or "".
    pub fn name(&self) -> &str {
        text(&self.name)
    }

    /// `schema.openAPIV3Schema`, when given.
    pub fn open_api_schema(&self) -> Option<&Value> {
        self.schema.as_ref()?.open_api_v3_schema.as_ref()
    }
}

passthrough_struct! {
    /// A CRD version's `schema`.
    pub struct CrdSchema {
        /// `openAPIV3Schema` (kept as read: schemas are walked as values).
        open_api_v3_schema: Value = "openAPIV3Schema",
    }
}

passthrough_struct! {
    /// A CRD version's `subresources`.
    pub struct CrdSubresources {
        /// `status`.
        status: Value = "status",
        /// `scale`.
        scale: ScaleSubresource = "scale",
    }
}

passthrough_struct! {
    /// A CRD version's `subresources.scale`.
    pub struct ScaleSubresource {
        /// `specReplicasPath`.
        spec_replicas_path: String = "specReplicasPath",
        /// `statusReplicasPath`.
        status_replicas_path: String = "statusReplicasPath",
        /// `labelSelectorPath`.
        label_selector_path: String = "labelSelectorPath",
    }
}

passthrough_struct! {
    /// A CRD's `spec.conversion`.
    pub struct CrdConversion {
        /// `strategy` (`None` or `Webhook`).
        strategy: String = "strategy",
        /// `webhook`.
        webhook: ConversionWebhook = "webhook",
    }
}

impl CrdConversion {
    /// `webhook.clientConfig.service`, when given.
    pub fn service(&self) -> Option<&ServiceReference> {
        self.webhook
            .as_ref()?
            .client_config
            .as_ref()?
            .service
            .as_ref()
    }

    /// `webhook.conversionReviewVersions`, as read.
    pub fn review_versions(&self) -> Option<Value> {
        let webhook = self.webhook.as_ref()?;
        as_read(
            &webhook.conversion_review_versions,
            &webhook.extra,
            "conversionReviewVersions",
        )
    }
}

passthrough_struct! {
    /// A CRD's `spec.conversion.webhook`.
    pub struct ConversionWebhook {
        /// `clientConfig`.
        client_config: ClientConfig = "clientConfig",
        /// `conversionReviewVersions`.
        conversion_review_versions: Vec<String> = "conversionReviewVersions",
    }
}

passthrough_struct! {
    /// A webhook's `clientConfig` (CRD conversion and admission webhooks alike).
    pub struct ClientConfig {
        /// `service`.
        service: ServiceReference = "service",
        /// `url`.
        url: String = "url",
    }
}

passthrough_struct! {
    /// A webhook's `clientConfig.service`.
    pub struct ServiceReference {
        /// `name`.
        name: String = "name",
        /// `namespace`.
        namespace: String = "namespace",
        /// `path`.
        path: String = "path",
        /// `port` (Kubernetes defaults it to 443).
        port: i64 = "port",
    }
}

impl ServiceReference {
    /// `port`, or 443 as Kubernetes defaults it.
    pub fn port(&self) -> i64 {
        self.port.unwrap_or(443)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_deployment_reads_typed_and_prints_back_as_given() {
        let value = json!({
            "metadata": {"name": "op", "labels": {"app": "op"}},
            "spec": {"replicas": 2, "template": {
                "metadata": {"labels": {"app": "op"}},
                "spec": {"containers": [{"name": "manager", "image": "q/op:1", "args": ["--x"],
                    "resources": {"requests": {"cpu": 1, "memory": "64Mi"}}}]}}},
        });
        let deployment: Deployment = view(&value);
        let pod = deployment.pod().expect("pod spec");
        let container = pod.all_containers().next().expect("a container");
        assert_eq!(container.image.as_deref(), Some("q/op:1"));
        let requests = container
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref());
        assert_eq!(requests.and_then(|r| r.get("cpu")), Some(&json!(1)));
        assert_eq!(serde_json::to_value(&deployment).unwrap(), value);
    }

    #[test]
    fn a_field_of_another_type_reads_as_absent_and_is_kept() {
        let value =
            json!({"spec": {"selector": ["app"], "ports": [{"port": "443", "targetPort": 9443}]}});
        let service: Service = view(&value);
        assert_eq!(service.selector(), None);
        assert!(!service.selects(None));
        assert_eq!(service.target_port(443), None);
        assert_eq!(serde_json::to_value(&service).unwrap(), value);
    }

    #[test]
    fn a_service_selects_pods_whose_labels_include_its_selector() {
        let service: Service = view(&json!({"spec": {"selector": {"app": "op"},
            "ports": [{"port": 443, "targetPort": "https"}]}}));
        let labels: StringMap = view(&json!({"app": "op", "tier": "web"}));
        let other: StringMap = view(&json!({"app": "other"}));
        assert!(service.selects(Some(&labels)));
        assert!(!service.selects(Some(&other)));
        assert_eq!(service.target_port(443), Some(&json!("https")));
    }

    #[test]
    fn a_crd_gives_its_served_versions_and_webhook_conversion() {
        let crd: CustomResourceDefinition = view(&json!({"spec": {
            "names": {"kind": "WebApp"},
            "versions": [{"name": "v1", "served": true}, {"name": "v0", "served": false}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"service": {"name": "svc", "path": "/convert"}}}}}}));
        let served: Vec<&str> = crd.served_versions().map(CrdVersion::name).collect();
        assert_eq!(served, ["v1"]);
        assert_eq!(crd.kind(), "WebApp");
        let service = crd
            .webhook_conversion()
            .and_then(CrdConversion::service)
            .expect("service");
        assert_eq!(
            (service.name.as_deref(), service.port()),
            (Some("svc"), 443)
        );
    }
}
