//! The steps after the examples exist: upgrade, read back, round trips, migration and the
//! successor, the webhook outage, the rollback.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use futures::{StreamExt, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, PostParams};
use olmpack_model::report::{Consumer, Finding, Severity};
use olmpack_model::upgrade::EXISTING_OBJECT_INVALID;
use serde_json::{Value, json};

use super::{CHANGE_TIMEOUT, CONCURRENCY, Run, Snapshot};
use crate::live::api::{self, apiserver_message, crd_name, served, status_code};
use crate::live::{LiveError, ReleaseUnderTest, Rollback, refused, rules};

/// Round trips through one version tried before a controller's concurrent writes are
/// reported as keeping it from being judged.
const TRIP_ATTEMPTS: usize = 3;

/// What writing every object back produced.
enum WriteBack {
    /// Every write was made (or failed and was reported): the count, and the newest
    /// `resourceVersion` when all succeeded.
    Done {
        writes: usize,
        revision: Option<String>,
    },
    /// A controller changed an object between its read and its write.
    Raced,
}

impl Run<'_> {
    /// OLM v0's checks, then `to`'s CRDs; false (with findings) when the upgrade is refused.
    pub(super) async fn upgrade(&mut self, to: &ReleaseUnderTest) -> bool {
        for crd in &to.crds {
            let name = crd_name(crd);
            let stored = match api::get_crd(self.client, &name).await {
                Ok(live) => crd_migrate::stored_versions(&live),
                Err(_) => Vec::new(),
            };
            let listed: Vec<&str> = crd.spec.versions.iter().map(|v| v.name.as_str()).collect();
            let missing: Vec<&String> = stored
                .iter()
                .filter(|v| !listed.contains(&v.as_str()))
                .collect();
            let result = api::apply_crd(self.client, &self.prepared(crd)).await;
            if !missing.is_empty() {
                let apiserver = match &result {
                    Err(err) => format!("the apiserver refuses it too: {}", apiserver_message(err)),
                    Ok(()) => "the apiserver accepted it".to_owned(),
                };
                let finding = refused(
                    rules::STORED_VERSION_REMOVED,
                    Consumer::OlmV0,
                    format!(
                        "status.storedVersions lists {}, which {} no longer lists in spec.versions \
                         (OLM v0's SafeStorageVersionUpgrade check refuses the upgrade); {apiserver}",
                        join(&missing),
                        to.name
                    ),
                )
                .object(format!("CustomResourceDefinition/{name}"))
                .field("spec.versions");
                self.find(finding);
                return false;
            }
            if let Err(err) = result {
                let finding = refused(
                    rules::CRD_REFUSED,
                    Consumer::KubeApiserver,
                    apiserver_message(&err),
                )
                .object(format!("CustomResourceDefinition/{name}"));
                self.find(finding);
                return false;
            }
        }
        let valid = self.existing_objects_valid(to).await;
        if valid {
            self.step(
                "upgrade",
                format!(
                    "{}: CRD(s) applied; every existing object valid under the new schema",
                    to.name
                ),
            );
        }
        valid
    }

    /// OLM v0's second check: every existing object, at every served version of `to`, passes
    /// `to`'s validation (a server-side dry-run create of a copy).
    async fn existing_objects_valid(&mut self, to: &ReleaseUnderTest) -> bool {
        let mut valid = true;
        for crd in &to.crds {
            for version in served(crd) {
                let api = self.objects(crd, &version);
                let list = match api.list(&Default::default()).await {
                    Ok(list) => list.items,
                    Err(err) => {
                        self.read_failed(
                            crd,
                            &version,
                            &err,
                            "list (for OLM v0's validation of existing objects)",
                        );
                        continue;
                    }
                };
                let checks: Vec<(String, Result<(), kube::Error>)> = stream::iter(list)
                    .map(|object| {
                        let api = api.clone();
                        async move {
                            let name = object.metadata.name.clone().unwrap_or_default();
                            (name, dry_run_copy(&api, object).await)
                        }
                    })
                    .buffer_unordered(CONCURRENCY)
                    .collect()
                    .await;
                for (name, result) in checks {
                    let Err(err) = result else { continue };
                    let finding = existing_object_invalid(&to.name, crd, &err)
                        .object(self.display(&crd_name(crd), &name))
                        .version(version.clone());
                    valid &= finding.severity != Severity::Error;
                    self.find(finding);
                }
            }
        }
        valid
    }

    /// Reads every object at every version `to` serves and compares with `before`, except
    /// the objects in `rewritten` (CRD, name): the operator's controllers wrote them during
    /// the upgrade, so a difference is theirs (the round trip still checks them).
    pub(super) async fn read_back(
        &mut self,
        from: &ReleaseUnderTest,
        to: &ReleaseUnderTest,
        before: &Snapshot,
        rewritten: &BTreeSet<(String, String)>,
    ) -> Snapshot {
        let after = self.snapshot(&to.crds).await;
        for ((crd, version), objects) in before {
            let mut objects = objects.clone();
            objects.retain(|name, _| !rewritten.contains(&(crd.clone(), name.clone())));
            match after.get(&(crd.clone(), version.clone())) {
                Some(now) => self.compare(
                    rules::DATA_LOST,
                    crd,
                    version,
                    &objects,
                    now,
                    "read after the upgrade",
                ),
                None => self.no_longer_served(from, to, crd, version),
            }
        }
        let versions: usize = to.crds.iter().map(|c| served(c).len()).sum();
        let mut outcome = format!(
            "{} object(s) read at {versions} served version(s)",
            self.created.len()
        );
        if !rewritten.is_empty() {
            outcome.push_str(&format!(
                "; {} object(s) rewritten by the operator during the upgrade, not compared with before it",
                rewritten.len()
            ));
        }
        self.step("read", outcome);
        after
    }

    /// A version `from` served and `to` does not: clients of it get 404. An error unless
    /// `from` already marked it deprecated.
    fn no_longer_served(
        &mut self,
        from: &ReleaseUnderTest,
        to: &ReleaseUnderTest,
        crd: &str,
        version: &str,
    ) {
        let served_now = to
            .crds
            .iter()
            .any(|c| crd_name(c) == *crd && served(c).iter().any(|v| v == version));
        let written = self.written_at(crd, version).len();
        if served_now || written == 0 {
            return;
        }
        let deprecated = from
            .crds
            .iter()
            .filter(|c| crd_name(c) == *crd)
            .flat_map(|c| &c.spec.versions)
            .any(|v| v.name == version && v.deprecated == Some(true));
        let message = format!(
            "{written} object(s) were written at {version}; {} no longer serves it, so the apiserver answers its clients with 404 (the objects stay readable at the served versions){}",
            to.name,
            if deprecated {
                format!("; {} had deprecated it", from.name)
            } else {
                format!("; {} served it without a deprecation", from.name)
            }
        );
        let finding = if deprecated {
            Finding::new(rules::VERSION_NOT_SERVED, Severity::Warning, message)
        } else {
            refused(rules::VERSION_NOT_SERVED, Consumer::KubeApiserver, message)
        };
        self.find(
            finding
                .object(format!("CustomResourceDefinition/{crd}"))
                .version(version.to_owned()),
        );
    }

    /// Writes every object back unchanged at each served version, then reads all at every
    /// served version: a round trip through any version must change nothing. Each write is
    /// compared with a read of every version just before it, and the reads after it are of
    /// the etcd revision the writes produced: while an operator process runs, its
    /// controllers may change objects right after (re-adding what a write lost, a CronJob's
    /// schedule firing), and those changes must neither hide a loss nor count as one.
    pub(super) async fn round_trip(&mut self, to: &ReleaseUnderTest, baseline: &Snapshot) {
        let mut writes = 0;
        for crd in &to.crds {
            let versions = served(crd);
            if versions.len() < 2 {
                continue;
            }
            for via in &versions {
                writes += self.trip(to, crd, via, baseline).await;
            }
        }
        self.step("round-trip", format!("{writes} write(s) through every served version, each followed by reads at every served version"));
    }

    /// One round trip through `via` (see [`Self::round_trip`]); returns the writes. A write
    /// that lost a race with a controller (409 Conflict: the object changed between the read
    /// and the write) says nothing about the conversion, so the trip starts over from a fresh
    /// snapshot, at most [`TRIP_ATTEMPTS`] times.
    async fn trip(
        &mut self,
        to: &ReleaseUnderTest,
        crd: &CustomResourceDefinition,
        via: &str,
        baseline: &Snapshot,
    ) -> usize {
        for attempt in 1..=TRIP_ATTEMPTS {
            let fresh = if self.operator_runs() {
                self.quiet(&to.crds).await;
                self.snapshot(std::slice::from_ref(crd)).await
            } else {
                baseline.clone()
            };
            let last = attempt == TRIP_ATTEMPTS;
            match self.write_back(crd, via, last).await {
                WriteBack::Raced if !last => continue,
                WriteBack::Raced => return 0,
                WriteBack::Done { writes, revision } => {
                    self.read_after(crd, via, &fresh, revision.as_deref()).await;
                    return writes;
                }
            }
        }
        0
    }

    /// Reads every object of `crd` at every served version, at `revision` when the writes
    /// produced one, and compares each with `fresh`.
    async fn read_after(
        &mut self,
        crd: &CustomResourceDefinition,
        via: &str,
        fresh: &Snapshot,
        revision: Option<&str>,
    ) {
        for read in served(crd) {
            let key = (crd_name(crd), read.clone());
            let Some(expected) = fresh.get(&key) else {
                continue;
            };
            let objects = self.objects(crd, &read);
            let now = match revision {
                Some(revision) => api::list_at(&objects, revision).await,
                None => api::list(&objects).await,
            };
            match now {
                Ok(now) => self.compare(
                    rules::LOSSY_CONVERSION,
                    &key.0,
                    &read,
                    expected,
                    &now,
                    &format!("read at {read} after a write at {via}"),
                ),
                Err(err) => self.read_failed(crd, &read, &err, "read"),
            }
        }
    }

    /// Replaces every object of `crd` at `version` with itself as read. A conflict (a
    /// controller wrote the object in between) is [`WriteBack::Raced`]; on the `last` attempt
    /// it is reported as a warning that the round trip could not be judged.
    async fn write_back(
        &mut self,
        crd: &CustomResourceDefinition,
        version: &str,
        last: bool,
    ) -> WriteBack {
        let api = self.objects(crd, version);
        let list = match api.list(&Default::default()).await {
            Ok(list) => list.items,
            Err(err) => {
                self.read_failed(crd, version, &err, "read");
                return WriteBack::Done {
                    writes: 0,
                    revision: None,
                };
            }
        };
        let results: Vec<(String, Result<String, kube::Error>)> = stream::iter(list)
            .map(|object| {
                let api = api.clone();
                async move {
                    let name = object.metadata.name.clone().unwrap_or_default();
                    let result = api
                        .replace(&name, &PostParams::default(), &object)
                        .await
                        .map(|o| o.metadata.resource_version.unwrap_or_default());
                    (name, result)
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        let raced = results
            .iter()
            .any(|(_, r)| r.as_ref().is_err_and(|e| status_code(e) == Some(409)));
        if raced && !last {
            return WriteBack::Raced;
        }
        let writes = results.len();
        let revision = self.written(crd, version, results);
        if raced {
            return WriteBack::Raced;
        }
        WriteBack::Done { writes, revision }
    }

    /// Reports the writes that failed; the newest `resourceVersion` the writes produced, none
    /// when a write failed.
    fn written(
        &mut self,
        crd: &CustomResourceDefinition,
        version: &str,
        results: Vec<(String, Result<String, kube::Error>)>,
    ) -> Option<String> {
        let mut newest: Option<(u64, String)> = None;
        let mut failed = false;
        for (name, result) in results {
            let err = match result {
                Ok(rv) => {
                    if let Ok(n) = rv.parse::<u64>()
                        && newest.as_ref().is_none_or(|(m, _)| n > *m)
                    {
                        newest = Some((n, rv));
                    }
                    continue;
                }
                Err(err) => err,
            };
            failed = true;
            let finding = if status_code(&err) == Some(409) {
                Finding::new(
                    rules::LOSSY_CONVERSION,
                    Severity::Warning,
                    format!(
                        "not judged: a controller changed the object between each read at {version} and the write back ({TRIP_ATTEMPTS} attempts)"
                    ),
                )
            } else {
                Finding::new(
                    rules::LOSSY_CONVERSION,
                    Severity::Error,
                    format!(
                        "writing the object back unchanged, as read at {version}, was refused: {}",
                        apiserver_message(&err)
                    ),
                )
            };
            self.find(
                finding
                    .object(self.display(&crd_name(crd), &name))
                    .version(version.to_owned()),
            );
        }
        if failed {
            None
        } else {
            newest.map(|(_, rv)| rv)
        }
    }

    /// Tries `to`'s successor that drops every version but the storage version (refused
    /// while an old version is stored), migrates storage, tries again, restores `to`.
    pub(super) async fn migrate_and_drop(&mut self, to: &ReleaseUnderTest) {
        for crd in &to.crds {
            if crd.spec.versions.len() < 2 {
                continue;
            }
            let name = crd_name(crd);
            let Some(storage) = crd_migrate::storage_version(crd).map(str::to_owned) else {
                continue;
            };
            let mut successor = self.prepared(crd);
            successor.spec.versions.retain(|v| v.storage);
            let stored = match api::get_crd(self.client, &name).await {
                Ok(live) => crd_migrate::stored_versions(&live),
                Err(_) => Vec::new(),
            };
            if stored.iter().any(|v| *v != storage) {
                let before = match api::apply_crd(self.client, &successor).await {
                    Err(err) => format!("refused by kube-apiserver: {}", apiserver_message(&err)),
                    Ok(()) => {
                        self.find(Finding::new(rules::MIGRATION_FAILED, Severity::Error, format!("the apiserver accepted dropping {} while status.storedVersions was [{}]", join_except(&stored, &storage), stored.join(", "))).object(format!("CustomResourceDefinition/{name}")));
                        "accepted".to_owned()
                    }
                };
                self.step(
                    "successor-before-migration",
                    format!("{name} with only {storage}: {before}"),
                );
            }
            match crd_migrate::migrate(self.client, &name).await {
                Ok(done) => self.step(
                    "migrate",
                    format!(
                        "{name}: {} object(s) rewritten; status.storedVersions [{}] → [{}]",
                        done.rewritten,
                        done.stored_before.join(", "),
                        done.storage_version
                    ),
                ),
                Err(err) => {
                    let finding = Finding::new(
                        rules::MIGRATION_FAILED,
                        Severity::Error,
                        olmpack_model::report::error_chain(&err),
                    )
                    .object(format!("CustomResourceDefinition/{name}"));
                    self.find(finding);
                    continue;
                }
            }
            match api::apply_crd(self.client, &successor).await {
                Ok(()) => self.step(
                    "successor-after-migration",
                    format!("{name} with only {storage}: installs"),
                ),
                Err(err) => {
                    let finding = refused(rules::SUCCESSOR_REFUSED, Consumer::KubeApiserver, format!("after the storage migration the successor with only {storage} is still refused: {}", apiserver_message(&err)))
                        .object(format!("CustomResourceDefinition/{name}"));
                    self.find(finding);
                }
            }
            if let Err(err) = api::apply_crd(self.client, &self.prepared(crd)).await {
                let finding = refused(
                    rules::CRD_REFUSED,
                    Consumer::KubeApiserver,
                    format!(
                        "re-applying {} after its successor: {}",
                        to.name,
                        apiserver_message(&err)
                    ),
                )
                .object(format!("CustomResourceDefinition/{name}"));
                self.find(finding);
            }
        }
    }

    /// Stops the webhook: reads at a non-storage version must fail and reads at the storage
    /// version must not; after a restart every object reads back as before.
    ///
    /// Reads are GETs by name, which the apiserver serves from etcd (through conversion);
    /// lists may be served from a watch cache that was filled while the webhook was up. The
    /// caches are made ready first: one that starts while the webhook is down backs off for
    /// minutes after it returns.
    pub(super) async fn outage(
        &mut self,
        to: &ReleaseUnderTest,
        baseline: &Snapshot,
    ) -> Result<(), LiveError> {
        let Some((crd, other, storage)) = outage_target(to) else {
            return Ok(());
        };
        let name = crd_name(&crd);
        self.warm_caches(&crd).await;
        // What a restarted webhook must read back: the objects at this revision (a
        // controller may change them meanwhile; the revision does not change).
        let (expected, revision) = match api::list_with_revision(&self.objects(&crd, &other)).await
        {
            Ok((objects, revision)) => (objects, Some(revision)),
            Err(_) => (
                baseline
                    .get(&(name.clone(), other.clone()))
                    .cloned()
                    .unwrap_or_default(),
                None,
            ),
        };
        let Some(probe) = expected.keys().next().cloned() else {
            return Ok(());
        };
        self.stop_webhook().await;
        let down = self.wait_get(&crd, &other, &probe, false).await;
        let storage_ok = self.count_readable(&crd, &storage, &expected).await;
        self.serve(to).await?;
        let up = self.wait_get(&crd, &other, &probe, true).await;
        let mut outcome = Vec::new();
        match down {
            Some(Err(err)) => outcome.push(format!(
                "reads at {other} failed: {}",
                apiserver_message(&err)
            )),
            _ => self.find(outage(
                &name,
                &other,
                format!(
                    "reads at {other} still succeeded {CHANGE_TIMEOUT:?} after the webhook stopped"
                ),
            )),
        }
        if storage_ok == expected.len() {
            outcome.push(format!(
                "reads at {storage} kept working ({storage_ok} objects)"
            ));
        } else {
            self.find(outage(
                &name,
                &storage,
                format!(
                    "only {storage_ok} of {} objects could be read at the storage version while the webhook was down",
                    expected.len()
                ),
            ));
        }
        if up.is_some_and(|r| r.is_ok()) {
            outcome.push(
                self.read_back_after_restart(&crd, &other, &expected, revision.as_deref())
                    .await,
            );
        } else {
            self.find(outage(
                &name,
                &other,
                format!(
                    "reads at {other} still failed {CHANGE_TIMEOUT:?} after the webhook came back"
                ),
            ));
        }
        self.step("outage", outcome.join("; "));
        Ok(())
    }

    /// Lists every served version once, so the watch caches are ready before the webhook
    /// stops.
    async fn warm_caches(&mut self, crd: &CustomResourceDefinition) {
        for version in served(crd) {
            if let Err(err) = api::list(&self.objects(crd, &version)).await {
                self.read_failed(crd, &version, &err, "read (before the outage)");
            }
        }
    }

    /// How many of the `expected` objects a single GET at `version` reads.
    async fn count_readable(
        &self,
        crd: &CustomResourceDefinition,
        version: &str,
        expected: &BTreeMap<String, Value>,
    ) -> usize {
        let objects = self.objects(crd, version);
        let mut ok = 0;
        for object in expected.keys() {
            if api::get_once(&objects, object).await.is_ok() {
                ok += 1;
            }
        }
        ok
    }

    /// Reads every object at `version` after the webhook restarted and compares it with the
    /// baseline (data loss is a finding); returns the step's outcome line. With `revision`,
    /// the objects are read as stored at that revision (the baseline's), else as they are.
    async fn read_back_after_restart(
        &mut self,
        crd: &CustomResourceDefinition,
        version: &str,
        expected: &BTreeMap<String, Value>,
        revision: Option<&str>,
    ) -> String {
        let objects = self.objects(crd, version);
        let mut now = BTreeMap::new();
        match revision {
            Some(revision) => {
                if let Ok(listed) = api::list_at(&objects, revision).await {
                    now = listed;
                }
            }
            None => {
                for object in expected.keys() {
                    if let Ok(value) = api::get_once(&objects, object).await {
                        now.insert(object.clone(), value);
                    }
                }
            }
        }
        self.compare(
            rules::DATA_LOST,
            &crd_name(crd),
            version,
            expected,
            &now,
            "read after the webhook came back",
        );
        format!(
            "after the restart all {} objects read back at {version}",
            now.len()
        )
    }

    /// Polls a GET of `name` at `version` until it succeeds (`want_ok`) or fails; `None` on
    /// timeout.
    async fn wait_get(
        &self,
        crd: &CustomResourceDefinition,
        version: &str,
        name: &str,
        want_ok: bool,
    ) -> Option<Result<serde_json::Value, kube::Error>> {
        let api = self.objects(crd, version);
        let started = Instant::now();
        while started.elapsed() < CHANGE_TIMEOUT {
            let result = api::get_once(&api, name).await;
            if result.is_ok() == want_ok {
                return Some(result);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        None
    }

    /// Applies `from`'s CRDs again with `from`'s webhook; records the refusal, or compares
    /// every object at every version `from` serves with `before`.
    pub(super) async fn rollback(
        &mut self,
        from: &ReleaseUnderTest,
        before: &Snapshot,
    ) -> Result<(), LiveError> {
        self.serve(from).await?;
        for crd in &from.crds {
            if let Err(err) = api::apply_crd(self.client, &self.prepared(crd)).await {
                let message = apiserver_message(&err);
                let finding = Finding::new(
                    rules::ROLLBACK_REFUSED,
                    Severity::Info,
                    format!("rolling back to {} is refused: {message}", from.name),
                )
                .consumer(Consumer::KubeApiserver)
                .object(format!("CustomResourceDefinition/{}", crd_name(crd)));
                self.find(finding);
                self.step("rollback", format!("refused by kube-apiserver: {message}"));
                self.report.rollback = Rollback::Refused(message);
                return Ok(());
            }
        }
        let findings = self.report.findings.len();
        let losses = self.losses.groups.len();
        let now = self.snapshot(&from.crds).await;
        for ((crd, version), objects) in before {
            let current = now
                .get(&(crd.clone(), version.clone()))
                .cloned()
                .unwrap_or_default();
            self.compare(
                rules::ROLLBACK_DATA_LOST,
                crd,
                version,
                objects,
                &current,
                "read after the rollback",
            );
        }
        let intact = self.report.findings.len() == findings && self.losses.groups.len() == losses;
        self.report.rollback = if intact {
            Rollback::Intact
        } else {
            Rollback::DataLost
        };
        self.step(
            "rollback",
            if intact {
                "accepted; every object intact at every version"
            } else {
                "accepted; objects lost data (see findings)"
            },
        );
        Ok(())
    }
}

/// The first CRD of `to` with a conversion webhook and a served version besides its storage
/// version: the CRD, that other version, and the storage version.
fn outage_target(to: &ReleaseUnderTest) -> Option<(CustomResourceDefinition, String, String)> {
    to.crds.iter().find_map(|c| {
        let storage = crd_migrate::storage_version(c)?.to_owned();
        let other = served(c).into_iter().find(|v| *v != storage)?;
        (api::has_webhook(c)).then(|| (c.clone(), other, storage))
    })
}

/// An existing object of `crd` invalid under release `to`'s schema, judged by the rule
/// `upgrade check` applies too ([`EXISTING_OBJECT_INVALID`]): OLM v0 fails the InstallPlan —
/// unless the new CRD converts through a webhook, when it only warns and kube-apiserver
/// refuses every later update of the object.
fn existing_object_invalid(to: &str, crd: &CustomResourceDefinition, err: &kube::Error) -> Finding {
    let judged = (EXISTING_OBJECT_INVALID.judge)(api::has_webhook(crd));
    let message = format!(
        "this existing object is invalid under {to}'s schema; {}; the apiserver says: {}",
        judged.consequence,
        apiserver_message(err)
    );
    Finding::new(rules::EXISTING_OBJECT_INVALID, judged.severity, message)
        .consumer(judged.refused_by)
}

/// A server-side dry-run create of a copy of `object` (generated name, same content).
async fn dry_run_copy(
    api: &kube::Api<DynamicObject>,
    object: DynamicObject,
) -> Result<(), kube::Error> {
    let mut value = serde_json::to_value(&object).map_err(kube::Error::SerdeError)?;
    let meta = &object.metadata;
    value["metadata"] = json!({
        "generateName": "olmpack-check-",
        "namespace": meta.namespace,
        "labels": meta.labels,
        "annotations": meta.annotations,
    });
    let copy: DynamicObject = serde_json::from_value(value).map_err(kube::Error::SerdeError)?;
    let params = PostParams {
        dry_run: true,
        ..Default::default()
    };
    match api.create(&params, &copy).await {
        Ok(_) => Ok(()),
        // Only validation failures count; anything else is not about the schema.
        Err(err) if matches!(status_code(&err), Some(400 | 422)) => Err(err),
        Err(_) => Ok(()),
    }
}

fn outage(crd: &str, version: &str, message: String) -> Finding {
    Finding::new(rules::OUTAGE, Severity::Error, message)
        .object(format!("CustomResourceDefinition/{crd}"))
        .version(version.to_owned())
}

fn join(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn join_except(items: &[String], except: &str) -> String {
    items
        .iter()
        .filter(|v| *v != except)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ")
}
