//! Creating the example objects and reading everything back.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, PostParams};
use olmpack_model::report::{Finding, Severity};
use serde_json::Value;

use super::{CONCURRENCY, Created, Run, Snapshot};
use crate::live::api::{self, apiserver_message, crd_name, served, status_code};
use crate::live::compare::lost_fields;
use crate::live::{ReleaseUnderTest, rules};

/// How long a create is retried while a fresh CRD's endpoint settles.
const CREATE_RETRY: Duration = Duration::from_secs(15);

/// One object to create.
struct ToCreate {
    /// Index into the release's CRDs.
    crd: usize,
    version: String,
    object: Value,
    created: Created,
}

impl Run<'_> {
    /// Creates every example (times `copies`) at the version it is written in, when `from`
    /// serves that version.
    pub(super) async fn create_examples(&mut self, from: &ReleaseUnderTest) {
        let (to_create, skipped) = self.examples_to_create(from);
        let client = self.client.clone();
        let namespace = self.options.namespace.clone();
        let results: Vec<(Created, Result<(), kube::Error>)> = stream::iter(to_create)
            .map(|p| {
                let api = api::objects_api(&client, &from.crds[p.crd], &p.version, &namespace);
                async move {
                    let result = create(&api, &p.object).await;
                    (p.created, result)
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        let mut refused = 0;
        for (created, result) in results {
            match result {
                Ok(()) => self.created.push(created),
                Err(err) => {
                    refused += 1;
                    let finding = Finding::new(
                        rules::EXAMPLE_REFUSED,
                        Severity::Warning,
                        format!(
                            "{} refuses this example: {}",
                            from.name,
                            apiserver_message(&err)
                        ),
                    )
                    .object(created.display())
                    .version(created.written_at.clone());
                    self.find(finding);
                }
            }
        }
        self.created.sort_by(|a, b| a.name.cmp(&b.name));
        self.report.objects = self.created.len();
        let mut outcome = format!("{} object(s) created", self.created.len());
        if !skipped.is_empty() {
            let list: Vec<String> = skipped.into_iter().collect();
            outcome.push_str(&format!(
                "; examples at {} not created ({} does not serve them)",
                list.join(", "),
                from.name
            ));
        }
        if refused > 0 {
            outcome.push_str(&format!("; {refused} refused"));
        }
        self.step("create", outcome);
    }

    /// The objects to create, with unique names, and the versions skipped.
    fn examples_to_create(&self, from: &ReleaseUnderTest) -> (Vec<ToCreate>, BTreeSet<String>) {
        let mut to_create = Vec::new();
        let mut skipped = BTreeSet::new();
        let mut names = BTreeSet::new();
        let mut seen = Vec::new();
        for example in &from.examples {
            if seen.contains(&example) {
                continue;
            }
            seen.push(example);
            let api_version = example["apiVersion"].as_str().unwrap_or_default();
            let kind = example["kind"].as_str().unwrap_or_default();
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let Some(index) = from
                .crds
                .iter()
                .position(|c| c.spec.group == group && c.spec.names.kind == kind)
            else {
                continue;
            };
            let crd = &from.crds[index];
            if !served(crd).iter().any(|v| v == version) {
                skipped.insert(api_version.to_owned());
                continue;
            }
            let base = example["metadata"]["name"]
                .as_str()
                .unwrap_or("example")
                .to_owned();
            for copy in 0..self.options.copies.max(1) {
                let name = unique_name(&mut names, &base, version, copy, self.options.copies);
                let object = instance(example, &name, crd, &self.options.namespace);
                to_create.push(ToCreate {
                    crd: index,
                    version: version.to_owned(),
                    object,
                    created: Created {
                        crd: crd_name(crd),
                        kind: kind.to_owned(),
                        name,
                        written_at: version.to_owned(),
                    },
                });
            }
        }
        (to_create, skipped)
    }

    /// Every object of `crds` at every served version; a failed read is a finding.
    pub(super) async fn snapshot(&mut self, crds: &[CustomResourceDefinition]) -> Snapshot {
        let mut out = Snapshot::new();
        for crd in crds {
            for version in served(crd) {
                match api::list(&self.objects(crd, &version)).await {
                    Ok(objects) => {
                        out.insert((crd_name(crd), version), objects);
                    }
                    Err(err) => self.read_failed(crd, &version, &err, "read"),
                }
            }
        }
        out
    }

    pub(super) fn read_failed(
        &mut self,
        crd: &CustomResourceDefinition,
        version: &str,
        err: &kube::Error,
        what: &str,
    ) {
        let finding = Finding::new(
            rules::READ_FAILED,
            Severity::Error,
            format!(
                "the apiserver failed to {what} the objects: {}",
                apiserver_message(err)
            ),
        )
        .object(format!("CustomResourceDefinition/{}", crd_name(crd)))
        .version(version.to_owned());
        self.find(finding);
    }

    /// The created objects written at `version` of `crd`.
    pub(super) fn written_at(&self, crd: &str, version: &str) -> Vec<&Created> {
        self.created
            .iter()
            .filter(|c| c.crd == crd && c.written_at == version)
            .collect()
    }

    /// The created object `name` of `crd`.
    pub(super) fn display(&self, crd: &str, name: &str) -> String {
        self.created
            .iter()
            .find(|c| c.crd == crd && c.name == name)
            .map(Created::display)
            .unwrap_or_else(|| name.to_owned())
    }

    /// Records every field `after` lost relative to `before` (both: name → user data).
    pub(super) fn compare(
        &mut self,
        rule: &'static str,
        crd: &str,
        version: &str,
        before: &BTreeMap<String, Value>,
        after: &BTreeMap<String, Value>,
        how: &str,
    ) {
        for (name, old) in before {
            let object = self.display(crd, name);
            match after.get(name) {
                None => {
                    let severity = if rule == rules::ROLLBACK_DATA_LOST {
                        Severity::Warning
                    } else {
                        Severity::Error
                    };
                    let rule = if severity == Severity::Error {
                        rules::OBJECT_LOST
                    } else {
                        rule
                    };
                    let finding =
                        Finding::new(rule, severity, format!("{how}: the object is gone"))
                            .object(object)
                            .version(version.to_owned());
                    self.find(finding);
                }
                Some(new) => {
                    for change in lost_fields(old, new) {
                        self.losses.add(rule, &object, version, change, how);
                    }
                }
            }
        }
    }
}

/// `<base>-<version>[-<copy>]`, made unique with a counter when two examples share a name.
fn unique_name(
    names: &mut BTreeSet<String>,
    base: &str,
    version: &str,
    copy: usize,
    copies: usize,
) -> String {
    let mut name = if copies > 1 {
        format!("{base}-{version}-{copy}")
    } else {
        format!("{base}-{version}")
    };
    let stem = name.clone();
    let mut n = 2;
    while !names.insert(name.clone()) {
        name = format!("{stem}-{n}");
        n += 1;
    }
    name
}

/// `example` named `name` (in `namespace` when the CRD is namespaced), without any
/// server-set metadata.
pub(super) fn instance(
    example: &Value,
    name: &str,
    crd: &CustomResourceDefinition,
    namespace: &str,
) -> Value {
    let mut object = example.clone();
    let mut meta = serde_json::Map::new();
    meta.insert("name".to_owned(), Value::String(name.to_owned()));
    if crd.spec.scope == "Namespaced" {
        meta.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
    }
    for key in ["labels", "annotations"] {
        if let Some(value) = example["metadata"].get(key) {
            meta.insert(key.to_owned(), value.clone());
        }
    }
    object["metadata"] = Value::Object(meta);
    object
}

/// Creates `object`, retrying while the CRD's endpoint settles (404, 429, 5xx).
pub(super) async fn create(
    api: &kube::Api<DynamicObject>,
    object: &Value,
) -> Result<(), kube::Error> {
    let object: DynamicObject =
        serde_json::from_value(object.clone()).map_err(kube::Error::SerdeError)?;
    let started = Instant::now();
    loop {
        match api.create(&PostParams::default(), &object).await {
            Ok(_) => return Ok(()),
            Err(err)
                if started.elapsed() < CREATE_RETRY
                    && matches!(status_code(&err), Some(404 | 429 | 500..=599) | None) =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => return Err(err),
        }
    }
}
