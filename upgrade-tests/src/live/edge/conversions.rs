//! Each release's own conversions: a stub or lossy conversion is found in the release it
//! appears in, whether or not an edge carries an older object through it.
//!
//! For every CRD of the release that serves two versions or more, each of its examples
//! (`alm-examples`, the plan's samples) is created at the version it is written in, and again
//! at every other served version as the release's own conversion returns it there. Each of
//! these objects is then, for every other served version in turn, read there, written back
//! there unchanged and read at the version it was created at: a field lost or changed is
//! [`rules::RELEASE_CONVERSION_LOSSY`], compared as [`crate::live::compare`] compares; a
//! conversion whose object the release's own CRD refuses is a refusal by kube-apiserver. The
//! release's own process serves the conversion (it is the webhook running when this runs).
//! The objects are deleted again before the edge goes on.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use olmpack_model::report::{Consumer, Finding, Severity};
use serde_json::{Value, json};

use super::examples::{create, instance};
use super::{CHANGE_TIMEOUT, Created, Run};
use crate::live::api::{self, apiserver_message, crd_name, served, status_code};
use crate::live::{ReleaseUnderTest, refused, rules};

/// Writes back tried before a controller's concurrent writes are reported as keeping a
/// round trip from being judged.
const WRITE_ATTEMPTS: usize = 3;

/// The object names this phase gives: `<example>-conv-<version>`, so that they never meet the
/// edge's own objects (`<example>-<version>`).
const NAME_INFIX: &str = "conv";

impl Run<'_> {
    /// Checks `release`'s own conversions (module docs); a step line says what was done.
    pub(super) async fn own_conversions(&mut self, release: &ReleaseUnderTest) {
        let (mut made, mut trips, mut refused_examples) = (Vec::new(), 0, 0);
        let mut names = BTreeSet::new();
        for crd in &release.crds {
            let versions = served(crd);
            if versions.len() < 2 {
                continue;
            }
            for (example, written_at) in examples_of(release, crd, &versions) {
                let Some(objects) = self
                    .at_every_version(release, crd, example, &written_at, &mut names)
                    .await
                else {
                    refused_examples += 1;
                    continue;
                };
                for object in &objects {
                    trips += self.through_others(release, crd, object, &versions).await;
                }
                made.extend(objects);
            }
        }
        if made.is_empty() && refused_examples == 0 {
            return;
        }
        self.remove(release, &made).await;
        let mut outcome = format!(
            "{}: {} object(s) made from its examples at every version its multi-version CRD(s) serve; {trips} round trip(s) through every other served version",
            release.name,
            made.len()
        );
        if refused_examples > 0 {
            outcome.push_str(&format!(
                "; {refused_examples} example(s) refused at their own version, not converted"
            ));
        }
        self.step("own-conversions", outcome);
    }

    /// `example` created at `written_at`, then at every other version `crd` serves as the
    /// release's conversion returns it there; the objects created (each also in
    /// `self.created` until [`Self::remove`]). `None` when `written_at` refuses the example.
    async fn at_every_version(
        &mut self,
        release: &ReleaseUnderTest,
        crd: &CustomResourceDefinition,
        example: &Value,
        written_at: &str,
        names: &mut BTreeSet<String>,
    ) -> Option<Vec<Created>> {
        let base = example["metadata"]["name"].as_str().unwrap_or("example");
        let seed = self.created_as(crd, unique(names, base, written_at), written_at);
        let object = instance(example, &seed.name, crd, &self.options.namespace);
        create(&self.objects(crd, written_at), &object).await.ok()?;
        let mut out = vec![seed.clone()];
        for version in served(crd).into_iter().filter(|v| v != written_at) {
            let read = match api::get_once(&self.objects(crd, &version), &seed.name).await {
                Ok(read) => read,
                Err(err) => {
                    self.read_failed(crd, &version, &err, "read (the release's own conversion)");
                    continue;
                }
            };
            let copy = self.created_as(crd, unique(names, base, &version), &version);
            let object = as_object(crd, &version, &copy.name, &self.options.namespace, read);
            match create(&self.objects(crd, &version), &object).await {
                Ok(()) => out.push(copy),
                Err(err) => {
                    let finding = refused(
                        rules::RELEASE_CONVERSION_LOSSY,
                        Consumer::KubeApiserver,
                        format!(
                            "{}'s own conversion of its example from {written_at} to {version} returns an object its own CRD refuses at {version}: {}",
                            release.name,
                            apiserver_message(&err)
                        ),
                    )
                    .object(seed.display())
                    .version(version.clone());
                    self.find(finding);
                }
            }
        }
        self.created.extend(out.iter().cloned());
        Some(out)
    }

    /// One round trip of `object` through every other version `crd` serves: read there,
    /// written back there unchanged, read at the version it was created at and compared
    /// with how it read there before. Returns the trips made.
    async fn through_others(
        &mut self,
        release: &ReleaseUnderTest,
        crd: &CustomResourceDefinition,
        object: &Created,
        versions: &[String],
    ) -> usize {
        let home = self.objects(crd, &object.written_at);
        let mut trips = 0;
        for via in versions.iter().filter(|v| **v != object.written_at) {
            if self.operator_runs() {
                // What its controllers write is theirs, not the conversion's.
                self.quiet(&release.crds).await;
            }
            let before = match api::get_once(&home, &object.name).await {
                Ok(before) => before,
                Err(err) => {
                    self.read_failed(crd, &object.written_at, &err, "read");
                    return trips;
                }
            };
            if !self.write_back_one(release, crd, object, via).await {
                continue;
            }
            let after = match api::get_once(&home, &object.name).await {
                Ok(after) => after,
                Err(err) => {
                    self.read_failed(crd, &object.written_at, &err, "read");
                    return trips;
                }
            };
            let how = format!(
                "{}'s own conversion: created at {}, read and written back unchanged at {via}, read at {}",
                release.name, object.written_at, object.written_at
            );
            let one = |value| BTreeMap::from([(object.name.clone(), value)]);
            self.compare(
                rules::RELEASE_CONVERSION_LOSSY,
                &object.crd,
                &object.written_at,
                &one(before),
                &one(after),
                &how,
            );
            trips += 1;
        }
        trips
    }

    /// Replaces `object` at `via` with itself as read there; false (with a finding) when no
    /// write was made.
    async fn write_back_one(
        &mut self,
        release: &ReleaseUnderTest,
        crd: &CustomResourceDefinition,
        object: &Created,
        via: &str,
    ) -> bool {
        let api = self.objects(crd, via);
        let mut last = None;
        for _ in 0..WRITE_ATTEMPTS {
            let written = match api.get(&object.name).await {
                Ok(read) => {
                    api.replace(&object.name, &PostParams::default(), &read)
                        .await
                }
                Err(err) => Err(err),
            };
            match written {
                Ok(_) => return true,
                Err(err) if status_code(&err) == Some(409) => last = Some(err),
                Err(err) => {
                    last = Some(err);
                    break;
                }
            }
        }
        let Some(err) = last else { return false };
        let finding = if status_code(&err) == Some(409) {
            Finding::new(
                rules::RELEASE_CONVERSION_LOSSY,
                Severity::Warning,
                format!(
                    "{}'s own conversion not judged through {via}: a controller changed the object between each read and the write back ({WRITE_ATTEMPTS} attempts)",
                    release.name
                ),
            )
        } else {
            Finding::new(
                rules::RELEASE_CONVERSION_LOSSY,
                Severity::Error,
                format!(
                    "{}: writing the object back unchanged, as read at {via}, was refused: {}",
                    release.name,
                    apiserver_message(&err)
                ),
            )
        };
        self.find(
            finding
                .object(object.display())
                .version(object.written_at.clone()),
        );
        false
    }

    /// Deletes the objects `made` and waits (at most [`CHANGE_TIMEOUT`]) until they are gone,
    /// so that the edge's own steps never see them.
    async fn remove(&mut self, release: &ReleaseUnderTest, made: &[Created]) {
        let apis: Vec<(kube::Api<DynamicObject>, &Created)> = made
            .iter()
            .filter_map(|m| {
                let crd = release.crds.iter().find(|c| crd_name(c) == m.crd)?;
                Some((self.objects(crd, &m.written_at), m))
            })
            .collect();
        for (api, m) in &apis {
            let _ = api.delete(&m.name, &DeleteParams::default()).await;
        }
        let started = Instant::now();
        for (api, m) in &apis {
            while started.elapsed() < CHANGE_TIMEOUT
                && api.get_opt(&m.name).await.is_ok_and(|o| o.is_some())
            {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
        self.created
            .retain(|c| !made.iter().any(|m| m.crd == c.crd && m.name == c.name));
    }

    fn created_as(&self, crd: &CustomResourceDefinition, name: String, version: &str) -> Created {
        Created {
            crd: crd_name(crd),
            kind: crd.spec.names.kind.clone(),
            name,
            written_at: version.to_owned(),
        }
    }
}

/// The examples of `release` of `crd`'s kind written at a version in `versions`, each once,
/// with that version.
fn examples_of<'a>(
    release: &'a ReleaseUnderTest,
    crd: &CustomResourceDefinition,
    versions: &[String],
) -> Vec<(&'a Value, String)> {
    let mut out: Vec<(&Value, String)> = Vec::new();
    for example in &release.examples {
        let api_version = example["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let ours = group == crd.spec.group
            && example["kind"].as_str() == Some(crd.spec.names.kind.as_str())
            && versions.iter().any(|v| v == version);
        if ours && !out.iter().any(|(seen, _)| *seen == example) {
            out.push((example, version.to_owned()));
        }
    }
    out
}

/// `<base>-conv-<version>`, made unique with a counter when two examples share a name.
fn unique(names: &mut BTreeSet<String>, base: &str, version: &str) -> String {
    let stem = format!("{base}-{NAME_INFIX}-{version}");
    let mut name = stem.clone();
    let mut n = 2;
    while !names.insert(name.clone()) {
        name = format!("{stem}-{n}");
        n += 1;
    }
    name
}

/// The object to create at `version` from `read` (an object's user data as read there):
/// named `name`, in `namespace` when `crd` is namespaced.
fn as_object(
    crd: &CustomResourceDefinition,
    version: &str,
    name: &str,
    namespace: &str,
    read: Value,
) -> Value {
    let mut object = read;
    let mut metadata = object["metadata"].take();
    if !metadata.is_object() {
        metadata = json!({});
    }
    metadata["name"] = json!(name);
    if crd.spec.scope == "Namespaced" {
        metadata["namespace"] = json!(namespace);
    }
    object["metadata"] = metadata;
    object["apiVersion"] = json!(format!("{}/{version}", crd.spec.group));
    object["kind"] = json!(crd.spec.names.kind);
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(scope: &str) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "metadata": {"name": "ships.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"kind": "Ship", "plural": "ships"},
                "scope": scope,
                "versions": [
                    {"name": "v1", "served": true, "storage": true},
                    {"name": "v2", "served": true, "storage": false},
                ],
            },
        }))
        .unwrap()
    }

    #[test]
    fn an_object_read_at_one_version_is_created_there_under_a_name_of_its_own() {
        let read = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"size": 1}});
        let cases = [
            (
                "Namespaced",
                json!({
                    "apiVersion": "example.com/v2", "kind": "Ship",
                    "metadata": {"labels": {"a": "b"}, "name": "s-conv-v2", "namespace": "ns"},
                    "spec": {"size": 1},
                }),
            ),
            (
                "Cluster",
                json!({
                    "apiVersion": "example.com/v2", "kind": "Ship",
                    "metadata": {"labels": {"a": "b"}, "name": "s-conv-v2"},
                    "spec": {"size": 1},
                }),
            ),
        ];
        for (scope, want) in cases {
            assert_eq!(
                as_object(&crd(scope), "v2", "s-conv-v2", "ns", read.clone()),
                want,
                "{scope}"
            );
        }
    }

    #[test]
    fn examples_of_a_crd_are_its_kind_at_a_served_version_each_once() {
        let ship = |v: &str| json!({"apiVersion": format!("example.com/{v}"), "kind": "Ship", "metadata": {"name": "s"}});
        let release = ReleaseUnderTest {
            name: "r".into(),
            crds: vec![crd("Namespaced")],
            examples: vec![
                ship("v1"),
                ship("v1"),
                ship("v2"),
                ship("v3"),
                json!({"apiVersion": "other.com/v1", "kind": "Ship"}),
                json!({"apiVersion": "example.com/v1", "kind": "Boat"}),
            ],
            webhook: None,
            operator: None,
            admission: Vec::new(),
        };
        let versions = ["v1".to_owned(), "v2".to_owned()];
        let found: Vec<String> = examples_of(&release, &release.crds[0], &versions)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(found, ["v1", "v2"]);
    }

    #[test]
    fn names_are_unique_and_never_an_edge_objects_name() {
        let mut names = BTreeSet::new();
        assert_eq!(unique(&mut names, "s", "v1"), "s-conv-v1");
        assert_eq!(unique(&mut names, "s", "v1"), "s-conv-v1-2");
        assert_eq!(unique(&mut names, "s", "v2"), "s-conv-v2");
    }
}
