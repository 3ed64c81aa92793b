//! Leader election across a change of the operator's process, on the real test control plane:
//! the Leases a stopped process still holds are found, and the wait for the next process ends
//! when another holder takes one, when it is given back, or 5 s after it expired untaken.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use olmpack_envtest::binaries::Tool;
use olmpack_envtest::control_plane::TestEnv;
use olmpack_envtest::live::lease::{self, Takeover};
use serde_json::json;

const NAMESPACE: &str = "default";

/// A Lease held by `holder`, renewed `ago` seconds ago, for `duration` seconds.
fn held_lease(name: &str, holder: &str, ago: i64, duration: i32) -> Lease {
    Lease {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.to_owned()),
            lease_duration_seconds: Some(duration),
            renew_time: Some(MicroTime(Timestamp::now() - SignedDuration::from_secs(ago))),
            ..LeaseSpec::default()
        }),
    }
}

#[tokio::test]
async fn the_wait_for_a_stopped_process_lease_ends_with_what_became_of_it() {
    if !olmpack_testkit::tools::require(
        &[Tool::Etcd, Tool::KubeApiserver],
        "the test control plane",
    ) {
        return;
    }
    let env = TestEnv::start()
        .await
        .expect("the test control plane starts");
    let leases: Api<Lease> = Api::namespaced(env.client(), NAMESPACE);
    for lease in [
        held_lease("taken", "old-manager", 0, 15),
        held_lease("given-back", "old-manager", 0, 15),
        held_lease("unused", "old-manager", 0, 2),
        held_lease("expired", "old-manager", 60, 15),
    ] {
        leases.create(&PostParams::default(), &lease).await.unwrap();
    }
    let held = lease::held(&env.client(), NAMESPACE).await;
    let names: Vec<&str> = held.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["given-back", "taken", "unused"], "{held:?}");
    assert!(held.iter().all(|h| h.holder == "old-manager"), "{held:?}");

    // The next process takes one Lease after 1 s; another is deleted.
    let writer = leases.clone();
    let next = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let take = json!({"spec": {"holderIdentity": "new-manager"}});
        writer
            .patch("taken", &PatchParams::default(), &Patch::Merge(&take))
            .await
            .unwrap();
        writer
            .delete("given-back", &DeleteParams::default())
            .await
            .unwrap();
    });
    let outcomes = lease::await_takeover(&env.client(), NAMESPACE, &held).await;
    next.await.unwrap();
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert_eq!(
        outcomes[0],
        Takeover::Released {
            lease: "given-back".into()
        }
    );
    match &outcomes[1] {
        Takeover::Taken { lease, after } => {
            assert_eq!(lease, "taken");
            assert!(*after >= Duration::from_secs(1), "{after:?}");
        }
        other => panic!("the taken Lease: {other:?}"),
    }
    match &outcomes[2] {
        Takeover::NotTaken { lease, waited } => {
            assert_eq!(lease, "unused");
            // Expired after at most 2 s, then 5 s of grace.
            assert!(*waited >= lease::GRACE, "{waited:?}");
        }
        other => panic!("the unused Lease: {other:?}"),
    }
}
