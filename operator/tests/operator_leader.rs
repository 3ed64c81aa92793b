//! Leader election: of two instances only the Lease holder reconciles; stopping it hands
//! over to the other within the lease duration.

mod common;

use std::time::{Duration, Instant};

use common::harness::{self, APPS_NS, eventually};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use webapp_operator::api::Version;
use webapp_operator::releases::OperatorRelease;

const WAIT: Duration = Duration::from_secs(60);
/// The lease duration the harness configures.
const LEASE: Duration = Duration::from_secs(4);

fn is_leader(running: &webapp_operator::run::Running) -> bool {
    running.metrics.is_leader()
}

#[tokio::test]
async fn operator_two_instances_only_leader_reconciles() {
    let cluster = harness::cluster(OperatorRelease::latest(), false).await;
    let first = harness::start_operator(&cluster, Some("instance-a")).await;
    eventually("instance-a leads", WAIT, || async { is_leader(&first) }).await;
    let second = harness::start_operator(&cluster, Some("instance-b")).await;

    harness::create_webapp(&cluster, Version::V1, "one", json!({"image": "shop:1"})).await;
    let deployments: Api<Deployment> = Api::namespaced(cluster.env.client(), APPS_NS);
    eventually("the leader deploys", WAIT, || {
        let deployments = deployments.clone();
        async move { deployments.get_opt("one").await.unwrap().is_some() }
    })
    .await;
    // Give the follower every chance to (wrongly) act.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(first.metrics.reconciles() > 0);
    assert!(!is_leader(&second));
    assert_eq!(
        second.metrics.reconciles(),
        0,
        "the follower reconciles nothing"
    );
    assert_eq!(
        second.metrics.api_writes(),
        0,
        "the follower writes nothing"
    );

    // Stop the leader; the follower takes over within the lease duration.
    first.stop().await.unwrap();
    let stopped = Instant::now();
    eventually("instance-b leads", WAIT, || async { is_leader(&second) }).await;
    let handover = stopped.elapsed();
    eprintln!("handover after a graceful stop: {handover:?}");
    // The follower wakes at the latest when the released lease would have expired: within
    // the lease duration (plus 1 s of slack for a loaded machine).
    assert!(
        handover <= LEASE + Duration::from_secs(1),
        "handover took {handover:?}, lease is {LEASE:?}"
    );

    // The new leader reconciles a change.
    let apps = cluster.webapps(Version::V1);
    apps.patch(
        "one",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"image": "shop:2"}})),
    )
    .await
    .unwrap();
    eventually("the new leader rolls out the change", WAIT, || {
        let deployments = deployments.clone();
        async move {
            let d = deployments.get("one").await.unwrap();
            d.spec.template.spec.unwrap().containers[0].image.as_deref() == Some("shop:2")
        }
    })
    .await;
    assert!(second.metrics.reconciles() > 0);
    assert_eq!(second.metrics.api_responses(403), 0);
    second.stop().await.unwrap();
}

#[tokio::test]
async fn operator_killed_leader_hands_over_within_lease_duration() {
    use common::harness::OperatorProcess;
    use k8s_openapi::api::coordination::v1::Lease;
    use webapp_operator::controller::LEASE_NAME;

    let cluster = harness::cluster(OperatorRelease::latest(), false).await;
    let leases: Api<Lease> = Api::namespaced(cluster.env.client(), harness::OPERATOR_NS);
    let holder = || {
        let leases = leases.clone();
        async move {
            leases
                .get_opt(LEASE_NAME)
                .await
                .unwrap()
                .and_then(|l| l.spec.and_then(|s| s.holder_identity))
        }
    };
    let mut leader = OperatorProcess::start(
        &cluster,
        "leader",
        &[
            "--leader-elect",
            "--identity=process-a",
            "--lease-duration-seconds=4",
            "--lease-grace-seconds=1",
        ],
        &[],
    );
    eventually("process-a holds the Lease", WAIT, || async {
        holder().await.as_deref() == Some("process-a")
    })
    .await;
    let follower = harness::start_operator(&cluster, Some("instance-b")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!follower.metrics.is_leader());

    // SIGKILL: no release; the follower must wait for the Lease to expire.
    leader.child.start_kill().unwrap();
    let _ = leader.child.wait().await;
    let killed = Instant::now();
    eventually("instance-b leads", WAIT, || async {
        follower.metrics.is_leader()
    })
    .await;
    let handover = killed.elapsed();
    // Expiry is at most one lease duration after the last renewal, plus one retry period.
    assert!(
        handover <= LEASE + Duration::from_secs(2),
        "handover took {handover:?}"
    );
    eprintln!("handover after SIGKILL: {handover:?}");
    assert_eq!(holder().await.as_deref(), Some("instance-b"));
    follower.stop().await.unwrap();
}
