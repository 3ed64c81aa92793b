//! Files a container is told about that no volume provides: an argument or environment
//! value naming a certificate or key under a path none of the container's volumes is
//! mounted at. The image may hold the file, but a scaffold's certificate paths are where a
//! volume is meant to be (operator-sdk's `--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs`
//! without one: the manager exits, `open …/tls.crt: no such file or directory`).

use serde_json::Value;

use super::{items, text};

/// An argument or variable naming a file no volume mounts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmountedPath {
    /// The container's name.
    pub container: String,
    /// Where, under the container (`args[2]`, `env[0].value`).
    pub field: String,
    /// The flag or variable name (`--metrics-cert-path`, `TLS_CERT_FILE`).
    pub name: String,
    /// The path it names.
    pub path: String,
}

/// Words in a flag or variable name that say it names a certificate or key file.
const CERT_WORDS: [&str; 3] = ["cert", "key", "tls"];

fn names_a_cert(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    CERT_WORDS.iter().any(|w| lower.contains(w))
}

/// Every argument (`--flag=/path` or `--flag /path`) and literal environment value of the
/// pod's containers whose name speaks of a certificate or key and whose value is an absolute
/// path under none of the container's mount paths, in container and field order.
pub fn unmounted_paths(pod_spec: &Value) -> Vec<UnmountedPath> {
    let mut out = Vec::new();
    for container in items(pod_spec, "containers") {
        let mounts: Vec<&str> = items(container, "volumeMounts")
            .iter()
            .map(|m| text(m, "mountPath").trim_end_matches('/'))
            .collect();
        let mounted = |path: &str| {
            mounts
                .iter()
                .any(|m| path == *m || path.strip_prefix(m).is_some_and(|r| r.starts_with('/')))
        };
        let name = text(container, "name");
        let mut push = |field: String, flag: &str, path: &str| {
            if path.starts_with('/') && names_a_cert(flag) && !mounted(path) {
                out.push(UnmountedPath {
                    container: name.to_owned(),
                    field,
                    name: flag.to_owned(),
                    path: path.to_owned(),
                });
            }
        };
        for list in ["command", "args"] {
            let argv = items(container, list);
            for (i, arg) in argv.iter().enumerate() {
                let arg = arg.as_str().unwrap_or_default();
                if !arg.starts_with('-') {
                    continue;
                }
                match arg.split_once('=') {
                    Some((flag, path)) => push(format!("{list}[{i}]"), flag, path),
                    None => {
                        let next = argv.get(i + 1).and_then(Value::as_str).unwrap_or_default();
                        push(format!("{list}[{}]", i + 1), arg, next);
                    }
                }
            }
        }
        for (i, var) in items(container, "env").iter().enumerate() {
            push(
                format!("env[{i}].value"),
                text(var, "name"),
                text(var, "value"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn certificate_paths_without_a_volume_are_found() {
        let pod = json!({"containers": [{
            "name": "manager",
            "args": [
                "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs",
                "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
                "--tls-key-file", "/etc/tls/tls.key",
                "--config=/etc/config/manager.yaml",
                "--leader-elect",
                "--cert-dir=relative/dir",
            ],
            "env": [
                {"name": "TLS_CERT_FILE", "value": "/etc/tls-other/tls.crt"},
                {"name": "CA_CERT", "value": "/tmp/k8s-webhook-server/serving-certs/ca.crt"},
            ],
            "volumeMounts": [{"name": "webhook-cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs/"},
                             {"name": "tls", "mountPath": "/etc/tls"}],
        }]});
        let found: Vec<(String, String, String)> = unmounted_paths(&pod)
            .into_iter()
            .map(|u| (u.field, u.name, u.path))
            .collect();
        let own = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
        assert_eq!(
            found,
            [
                own(
                    "args[0]",
                    "--metrics-cert-path",
                    "/tmp/k8s-metrics-server/metrics-certs"
                ),
                own("env[0].value", "TLS_CERT_FILE", "/etc/tls-other/tls.crt"),
            ]
        );
    }
}
