//! proptest strategies for `WebApp` objects at every version.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::ObjectMeta;
use proptest::prelude::*;
use webapp_operator::api::{ResourceRequests, WebAppStatus, v1, v1alpha1, v1beta1};

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9.-]{0,12}", ".{0,8}"]
}

fn opt_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(text())
}

/// Metadata with a name, namespace, uid and maybe labels and annotations (never the
/// conversion annotation, which only conversion writes).
pub fn metadata() -> impl Strategy<Value = ObjectMeta> {
    let map = || {
        proptest::option::of(proptest::collection::btree_map(
            "[a-z]{1,5}(/[a-z]{1,5})?",
            text(),
            1..4,
        ))
    };
    (
        "[a-z]{1,10}",
        "[a-z]{1,10}",
        map(),
        map(),
        proptest::option::of(1i64..100),
    )
        .prop_map(
            |(name, namespace, labels, annotations, generation)| ObjectMeta {
                name: Some(name),
                namespace: Some(namespace),
                uid: Some("0b6f6c1e-1111-2222-3333-444455556666".to_owned()),
                labels,
                annotations,
                generation,
                ..Default::default()
            },
        )
}

fn resources() -> impl Strategy<Value = Option<ResourceRequests>> {
    proptest::option::of(
        (opt_text(), opt_text()).prop_map(|(cpu, memory)| ResourceRequests { cpu, memory }),
    )
}

fn condition() -> impl Strategy<Value = Condition> {
    (
        prop_oneof!["Ready", "Progressing", "Degraded"],
        prop_oneof!["True", "False", "Unknown"],
        "[A-Za-z]{1,12}",
        text(),
        0i64..4_000_000_000,
        proptest::option::of(0i64..100),
    )
        .prop_map(
            |(type_, status, reason, message, secs, observed_generation)| Condition {
                type_,
                status,
                reason,
                message,
                observed_generation,
                last_transition_time: Time(
                    k8s_openapi::jiff::Timestamp::from_second(secs).expect("in range"),
                ),
            },
        )
}

/// Any status, including none.
pub fn status() -> impl Strategy<Value = Option<WebAppStatus>> {
    proptest::option::of(
        (
            proptest::option::of(any::<i64>()),
            proptest::option::of(any::<i32>()),
            proptest::option::of(any::<i32>()),
            opt_text(),
            proptest::collection::vec(condition(), 0..3),
        )
            .prop_map(
                |(observed_generation, replicas, ready_replicas, selector, conditions)| {
                    WebAppStatus {
                        observed_generation,
                        replicas,
                        ready_replicas,
                        selector,
                        conditions,
                    }
                },
            ),
    )
}

fn log_level() -> impl Strategy<Value = Option<v1::LogLevel>> {
    proptest::option::of(prop_oneof![
        Just(v1::LogLevel::Error),
        Just(v1::LogLevel::Warn),
        Just(v1::LogLevel::Info),
        Just(v1::LogLevel::Debug),
    ])
}

/// Any v1 (hub) object.
pub fn hub() -> impl Strategy<Value = v1::WebApp> {
    let spec = (
        text(),
        proptest::option::of(any::<i32>()),
        proptest::option::of(any::<i32>()),
        proptest::option::of(
            (text(), opt_text())
                .prop_map(|(secret_name, key)| v1::DatabaseRef { secret_name, key }),
        ),
        resources(),
        proptest::option::of(any::<bool>()),
        log_level(),
    )
        .prop_map(
            |(image, replicas, container_port, database, resources, debug, log_level)| {
                v1::WebAppSpec {
                    image,
                    replicas,
                    container_port,
                    database,
                    resources,
                    debug,
                    log_level,
                }
            },
        );
    (metadata(), spec, status()).prop_map(|(metadata, spec, status)| v1::WebApp {
        metadata,
        spec,
        status,
    })
}

/// Any v1beta1 object.
pub fn v1beta1() -> impl Strategy<Value = v1beta1::WebApp> {
    let spec = (
        text(),
        proptest::option::of(any::<i32>()),
        proptest::option::of(any::<i32>()),
        proptest::option::of(
            (text(), opt_text())
                .prop_map(|(secret_name, key)| v1beta1::DatabaseRef { secret_name, key }),
        ),
        resources(),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(
            |(image, replicas, container_port, database, resources, debug)| v1beta1::WebAppSpec {
                image,
                replicas,
                container_port,
                database,
                resources,
                debug,
            },
        );
    (metadata(), spec, status()).prop_map(|(metadata, spec, status)| v1beta1::WebApp {
        metadata,
        spec,
        status,
    })
}

/// Any v1alpha1 object.
pub fn v1alpha1() -> impl Strategy<Value = v1alpha1::WebApp> {
    let spec = (
        text(),
        proptest::option::of(any::<i32>()),
        proptest::option::of(any::<i32>()),
        opt_text(),
        resources(),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(
            |(image, replicas, port, database_secret, resources, debug)| v1alpha1::WebAppSpec {
                image,
                replicas,
                port,
                database_secret,
                resources,
                debug,
            },
        );
    (metadata(), spec, status()).prop_map(|(metadata, spec, status)| v1alpha1::WebApp {
        metadata,
        spec,
        status,
    })
}
