//! The reference operator as the process of its pods under OLM (v0 and v1 alike).

use olmpack_envtest::olm::WebhookCommand;

/// The operator binary as the process of its pods: the serving certificate OLM's wiring
/// gave, the port the harness picked, the ServiceAccount's kubeconfig from `$KUBECONFIG`.
pub fn operator_command() -> WebhookCommand {
    WebhookCommand::shell(&format!(
        "'{}' run --tls-cert-file \"$OLMPACK_WEBHOOK_CERT_FILE\" --tls-key-file \"$OLMPACK_WEBHOOK_KEY_FILE\" \
         --bind-address 127.0.0.1 --webhook-port \"$OLMPACK_WEBHOOK_PORT\" --metrics-port 0 \
         --leader-elect --cert-poll-seconds 1",
        env!("CARGO_BIN_EXE_webapp-operator")
    ))
}
