//! The `alm-examples` objects of an installed bundle under OLM v1, created and read back as
//! `upgrade olm` does under OLM v0 (a user's `kubectl create -n NS`), and what OLM v1
//! installed. OLM v1 runs no operator process here (no kubelet), so, as under OLM v0 on kwok
//! nodes, the objects are checked against the CRDs alone.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::Scope;
use serde_json::Value;

use super::{OlmError, OlmV1Env};
use crate::live::api::apiserver_message;
use crate::olm::examples::{WEBHOOK_SETTLES, create_example};
use crate::olm::{Example, Installed, read_back_resource};

/// How long example creation waits for the CRDs OLM v1 installed to be served.
const CRDS_SERVED: std::time::Duration = std::time::Duration::from_secs(60);

/// OLM v1's own API group (its CRDs are not the operator's).
const OLM_V1_GROUP: &str = "olm.operatorframework.io";

impl OlmV1Env {
    /// Creates each of `objects` (a CSV's `alm-examples`): namespaced kinds in `namespace`,
    /// cluster-scoped ones without; each named `<name>-<version>`. A refusal is recorded
    /// with the apiserver's words, not returned as an error.
    ///
    /// OLM v1 reports a bundle installed once it applied it, not once its CRDs are served (on
    /// a loaded machine the apiserver answered 404 for a kind just installed), so this first
    /// waits up to [`CRDS_SERVED`] until every CRD OLM v1 installed is `Established`, as
    /// `kubectl wait --for condition=established` would.
    pub async fn create_examples(&self, objects: Vec<Value>, namespace: &str) -> Vec<Example> {
        self.wait_crds_established().await;
        let mut out = Vec::new();
        let settled = std::time::Instant::now() + WEBHOOK_SETTLES;
        let (client, retried) = (self.client(), |_: &str, _: &str| {});
        for object in objects {
            let created = create_example(&client, object, namespace, settled, &retried);
            let example = match created.await {
                Ok(example) => example,
                Err((mut example, e)) => {
                    example.refused = Some(format!("not a Kubernetes object: {e}"));
                    example
                }
            };
            out.push(example);
        }
        out
    }

    /// Reads every created example back at the apiVersion it was written at, or at a served
    /// version of its kind when that one is no longer served; `Err` per unreadable example.
    pub async fn read_examples(
        &self,
        examples: &[Example],
        namespace: &str,
    ) -> Vec<Result<(), String>> {
        let mut out = Vec::new();
        for example in examples.iter().filter(|e| e.refused.is_none()) {
            let read = match read_back_resource(&self.client(), &example.api_version, &example.kind)
                .await
            {
                Ok((resource, scope)) => {
                    let api: Api<DynamicObject> = match scope {
                        Scope::Namespaced => {
                            Api::namespaced_with(self.client(), namespace, &resource)
                        }
                        Scope::Cluster => Api::all_with(self.client(), &resource),
                    };
                    api.get(&example.name).await.map(drop).map_err(|e| {
                        format!(
                            "{} {} ({}): {}",
                            example.kind,
                            example.name,
                            resource.api_version,
                            apiserver_message(&e)
                        )
                    })
                }
                Err(message) => Err(message),
            };
            out.push(read);
        }
        out
    }

    /// The served versions of the CRDs OLM v1 installed (all but its own) and the
    /// Deployments in `namespace`.
    pub async fn installed(&self, namespace: &str) -> Result<Installed, OlmError> {
        let all = ListParams::default();
        let crds: Api<CustomResourceDefinition> = Api::all(self.client());
        let listed = crds.list(&all).await.map_err(|source| OlmError::Api {
            action: "list CustomResourceDefinitions".to_owned(),
            source,
        })?;
        let mut installed = Installed::default();
        for crd in listed.items.iter().filter(|c| c.spec.group != OLM_V1_GROUP) {
            installed.add_crd(crd);
        }
        let deployments: Api<Deployment> = Api::namespaced(self.client(), namespace);
        let listed = deployments
            .list(&all)
            .await
            .map_err(|source| OlmError::Api {
                action: format!("list Deployments of {namespace}"),
                source,
            })?;
        installed.deployments = listed
            .items
            .into_iter()
            .filter_map(|d| d.metadata.name)
            .collect();
        installed.crds.sort();
        installed.deployments.sort();
        Ok(installed)
    }

    /// Waits (up to [`CRDS_SERVED`]) until every CRD OLM v1 installed is `Established`; what
    /// is still not then shows in the examples' refusals.
    async fn wait_crds_established(&self) {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client());
        let started = std::time::Instant::now();
        while started.elapsed() < CRDS_SERVED {
            let Ok(names) = self.operator_crds().await else {
                return;
            };
            let mut waiting = false;
            for name in &names {
                let established = crds.get_opt(name).await.ok().flatten().is_some_and(|crd| {
                    let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
                    conditions
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                });
                waiting |= !established;
            }
            if !waiting {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }

    /// The names of the CRDs OLM v1 installed (all but its own and the cluster's).
    pub async fn operator_crds(&self) -> Result<Vec<String>, OlmError> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client());
        let listed = crds
            .list(&ListParams::default())
            .await
            .map_err(|source| OlmError::Api {
                action: "list CustomResourceDefinitions".to_owned(),
                source,
            })?;
        Ok(listed
            .items
            .into_iter()
            .filter(|c| c.spec.group != OLM_V1_GROUP)
            .filter_map(|c| c.metadata.name)
            .filter(|name| !self.cluster_crds().contains(name))
            .collect())
    }
}
