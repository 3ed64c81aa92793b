use super::*;
use serde_json::json;

fn ctx() -> PodContext {
    let bytes = |pairs: &[(&str, &str)]| -> BTreeMap<String, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec()))
            .collect()
    };
    PodContext {
        name: "op-7d9-olmpack".into(),
        namespace: "operators".into(),
        uid: "u-1".into(),
        labels: BTreeMap::from([("app".into(), "op".into())]),
        annotations: BTreeMap::from([("olm.targetNamespaces".into(), "a,b".into())]),
        node_name: "node-1".into(),
        host_ip: "10.0.0.1".into(),
        pod_ip: "10.0.0.2".into(),
        node_cpu_millis: 2000,
        node_memory_bytes: 4 << 30,
        token: "TOKEN".into(),
        ca_pem: "CA".into(),
        secrets: BTreeMap::from([(
            "op-service-cert".into(),
            bytes(&[("tls.crt", "CERT"), ("tls.key", "KEY")]),
        )]),
        config_maps: BTreeMap::from([(
            "settings".into(),
            bytes(&[("LEVEL", "debug"), ("bad=name", "x"), ("mode", "fast")]),
        )]),
    }
}

fn spec_of(container: Value, volumes: Value) -> Value {
    json!({"serviceAccountName": "op-sa", "containers": [container], "volumes": volumes})
}

fn env_of(container: Value) -> Result<Vec<String>, String> {
    process_spec(&spec_of(container, json!([])), "manager", &ctx())
        .map(|p| p.env.iter().map(|(k, v)| format!("{k}={v}")).collect())
        .map_err(|e| e.to_string())
}

/// The variables `NAME=value` in order, or the kubelet's refusal.
type Expected = Result<Vec<&'static str>, &'static str>;

#[test]
fn the_environment_is_resolved_as_the_kubelet_resolves_it() {
    let field = |path: &str| json!({"fieldRef": {"fieldPath": path}});
    let cases: Vec<(&str, Value, Expected)> = vec![
        (
            "fieldRefs OLM and operator-sdk rely on",
            json!([
                {"name": "WATCH_NAMESPACE", "valueFrom": field("metadata.annotations['olm.targetNamespaces']")},
                {"name": "POD_NAMESPACE", "valueFrom": field("metadata.namespace")},
                {"name": "POD_NAME", "valueFrom": field("metadata.name")},
                {"name": "SA", "valueFrom": field("spec.serviceAccountName")},
                {"name": "APP", "valueFrom": field("metadata.labels['app']")},
                {"name": "NONE", "valueFrom": field("metadata.labels['absent']")},
            ]),
            Ok(vec![
                "WATCH_NAMESPACE=a,b",
                "POD_NAMESPACE=operators",
                "POD_NAME=op-7d9-olmpack",
                "SA=op-sa",
                "APP=op",
                "NONE=",
            ]),
        ),
        (
            "literal values expand earlier variables; $$ is a dollar; unknown stays",
            json!([
                {"name": "A", "value": "x"},
                {"name": "B", "value": "$(A)-$(Z)-$$(A)"},
                {"name": "A", "value": "y"},
            ]),
            Ok(vec!["A=y", "B=x-$(Z)-$(A)"]),
        ),
        (
            "key references: found, optional and missing",
            json!([
                {"name": "L", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "LEVEL"}}},
                {"name": "O", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k", "optional": true}}},
                {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "nokey", "optional": true}}},
            ]),
            Ok(vec!["L=debug"]),
        ),
        (
            "a missing Secret refuses the start",
            json!([{"name": "P", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}]),
            Err("CreateContainerConfigError: secret \"creds\" not found"),
        ),
        (
            "a missing key refuses the start",
            json!([{"name": "P", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "nokey"}}}]),
            Err(
                "CreateContainerConfigError: couldn't find key nokey in ConfigMap operators/settings",
            ),
        ),
        (
            "resourceFieldRef: a set limit with a divisor, an unset limit is the node's",
            json!([
                {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                {"name": "REQ", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
            ]),
            Ok(vec!["MEM=128", "CPU=2", "REQ=10"]),
        ),
    ];
    for (what, env, expected) in cases {
        let container = json!({"name": "manager", "env": env,
            "resources": {"limits": {"memory": "128Mi"}, "requests": {"cpu": "10m"}}});
        let expected = expected
            .map(|v| v.iter().map(|s| (*s).to_owned()).collect())
            .map_err(str::to_owned);
        assert_eq!(env_of(container), expected, "{what}");
    }
}

#[test]
fn env_from_comes_first_with_its_prefix_and_skips_invalid_names() {
    let container = json!({"name": "manager",
        "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"},
                    {"secretRef": {"name": "gone", "optional": true}}],
        "env": [{"name": "CFG_mode", "value": "slow"}]});
    assert_eq!(
        env_of(container).unwrap(),
        ["CFG_LEVEL=debug", "CFG_mode=slow"]
    );
    let missing =
        json!({"name": "manager", "envFrom": [{"configMapRef": {"name": "user-config"}}]});
    assert_eq!(
        env_of(missing).unwrap_err(),
        "CreateContainerConfigError: configmap \"user-config\" not found"
    );
}

#[test]
fn command_and_args_are_expanded_from_the_environment() {
    let cases = [
        (
            "command and args",
            json!({"command": ["/manager", "--x=$(NS)"], "args": ["--leader-elect", "--ns=$(NS)", "$(UNSET)"]}),
            (
                Some("/manager"),
                vec![
                    "--x=operators",
                    "--leader-elect",
                    "--ns=operators",
                    "$(UNSET)",
                ],
            ),
        ),
        (
            "args only: the image's entrypoint runs",
            json!({"args": ["--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs"]}),
            (
                None,
                vec!["--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs"],
            ),
        ),
    ];
    for (what, mut container, (program, args)) in cases {
        container["name"] = json!("manager");
        container["env"] =
            json!([{"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]);
        let spec = process_spec(&spec_of(container, json!([])), "manager", &ctx()).unwrap();
        assert_eq!(spec.program.as_deref(), program, "{what}");
        assert_eq!(spec.args, args, "{what}");
    }
}

fn files(pairs: &[(&str, &str)]) -> Volume {
    Volume::Files(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec()))
            .collect(),
    )
}

#[test]
fn mounted_volumes_hold_what_the_kubelet_puts_there() {
    let container = json!({"name": "manager", "workingDir": "/work", "volumeMounts": [
        {"name": "apiservice-cert", "mountPath": "/apiserver.local.config/certificates"},
        {"name": "webhook-cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs", "readOnly": true},
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "info", "mountPath": "/etc/podinfo"},
        {"name": "conf", "mountPath": "/etc/mode", "subPath": "mode"},
    ]});
    let volumes = json!([
        {"name": "apiservice-cert", "secret": {"secretName": "op-service-cert", "items": [
            {"key": "tls.crt", "path": "apiserver.crt"}, {"key": "tls.key", "path": "apiserver.key"}]}},
        {"name": "webhook-cert", "secret": {"secretName": "op-service-cert"}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "info", "downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
        {"name": "conf", "configMap": {"name": "settings"}},
        {"name": "unmounted", "secret": {"secretName": "nobody"}},
    ]);
    let spec = process_spec(&spec_of(container, volumes), "manager", &ctx()).unwrap();
    assert_eq!(spec.working_dir.as_deref(), Some("/work"));
    let mounts: Vec<(&str, &str, &str, bool)> = spec
        .mounts
        .iter()
        .map(|m| {
            (
                m.volume.as_str(),
                m.path.as_str(),
                m.sub_path.as_str(),
                m.read_only,
            )
        })
        .collect();
    assert_eq!(
        mounts,
        [
            (
                "apiservice-cert",
                "/apiserver.local.config/certificates",
                "",
                false
            ),
            (
                "webhook-cert",
                "/tmp/k8s-webhook-server/serving-certs",
                "",
                true
            ),
            ("scratch", "/scratch", "", false),
            ("info", "/etc/podinfo", "", false),
            ("conf", "/etc/mode", "mode", false),
            ("kube-api-access", SERVICE_ACCOUNT_PATH, "", true),
        ]
    );
    let expected = BTreeMap::from([
        (
            "apiservice-cert".to_owned(),
            files(&[("apiserver.crt", "CERT"), ("apiserver.key", "KEY")]),
        ),
        (
            "webhook-cert".to_owned(),
            files(&[("tls.crt", "CERT"), ("tls.key", "KEY")]),
        ),
        ("scratch".to_owned(), Volume::EmptyDir),
        ("info".to_owned(), files(&[("namespace", "operators")])),
        (
            "conf".to_owned(),
            files(&[("LEVEL", "debug"), ("bad=name", "x"), ("mode", "fast")]),
        ),
        (
            "kube-api-access".to_owned(),
            files(&[
                ("ca.crt", "CA"),
                ("namespace", "operators"),
                ("token", "TOKEN"),
            ]),
        ),
    ]);
    assert_eq!(spec.volumes, expected);
}

#[test]
fn a_volume_that_cannot_be_set_up_refuses_the_start_in_the_kubelets_words() {
    let cases = [
        (
            json!({"name": "v", "secret": {"secretName": "webhook-server-cert"}}),
            "FailedMount: MountVolume.SetUp failed for volume \"v\" : secret \"webhook-server-cert\" not found",
        ),
        (
            json!({"name": "v", "configMap": {"name": "settings", "items": [{"key": "nokey", "path": "p"}]}}),
            "FailedMount: MountVolume.SetUp failed for volume \"v\" : configmap references non-existent config key: nokey",
        ),
        (
            json!({"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}, {"configMap": {"name": "ca"}}]}}),
            "FailedMount: MountVolume.SetUp failed for volume \"v\" : configmap \"ca\" not found",
        ),
    ];
    for (volume, expected) in cases {
        let container =
            json!({"name": "manager", "volumeMounts": [{"name": "v", "mountPath": "/v"}]});
        let err =
            process_spec(&spec_of(container, json!([volume])), "manager", &ctx()).unwrap_err();
        assert_eq!(err.to_string(), expected);
    }
    let optional = json!({"name": "v", "secret": {"secretName": "gone", "optional": true}});
    let container = json!({"name": "manager", "volumeMounts": [{"name": "v", "mountPath": "/v"}]});
    let spec = process_spec(&spec_of(container, json!([optional])), "manager", &ctx()).unwrap();
    assert_eq!(spec.volumes["v"], files(&[]));
}

#[test]
fn no_token_volume_when_the_pod_turns_it_off() {
    let mut pod = spec_of(json!({"name": "manager"}), json!([]));
    pod["automountServiceAccountToken"] = json!(false);
    let spec = process_spec(&pod, "manager", &ctx()).unwrap();
    assert!(spec.mounts.is_empty());
    assert_eq!(
        process_spec(&pod, "proxy", &ctx()).unwrap_err().to_string(),
        "the pod has no container \"proxy\""
    );
}

#[test]
fn quantities_read_in_thousandths() {
    let cases = [
        ("100m", Some(100)),
        ("1", Some(1000)),
        ("1.5", Some(1500)),
        ("1Ki", Some(1_024_000)),
        ("128Mi", Some(134_217_728_000)),
        ("2G", Some(2_000_000_000_000)),
        ("1x", None),
    ];
    for (text, expected) in cases {
        assert_eq!(parse_quantity(text), expected, "{text}");
    }
}
