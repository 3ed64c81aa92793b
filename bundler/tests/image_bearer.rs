//! A bearer-token registry: a small token service and an auth gate in front of the real
//! registry, speaking the Docker token protocol (401 + `WWW-Authenticate: Bearer realm=…`,
//! the client fetches a token from the realm with its basic credentials, then sends
//! `Authorization: Bearer <token>`).

mod image_support;

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use image_support::{Inspector, access, fixture, options};
use oci_client::secrets::RegistryAuth as OciAuth;
use olmpack::image::build::build_bundle_image;
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::{
    auth::Credentials, auth::Secret, push::push_layout, resolve::resolve_digest,
};
use olmpack_testkit::{registry::Registry, registry::RegistryAuth};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const USER: &str = "robot";
const PASSWORD: &str = "t0ken-Pa55";
const TOKEN: &str = "issued-token-5e5e5e";

/// The token gate: serves `/token` and checks bearer tokens on `/v2/…`.
struct TokenGate {
    port: u16,
    /// The `scope` of every token request that got a token.
    scopes: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TokenGate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TokenGate {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let scopes = Arc::new(Mutex::new(Vec::new()));
        let task_scopes = scopes.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let (upstream, scopes) = (upstream.clone(), task_scopes.clone());
                tokio::spawn(async move {
                    let _ = serve(client, port, &upstream, &scopes).await;
                });
            }
        });
        Self { port, scopes, task }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

async fn respond(
    client: &mut TcpStream,
    status: &str,
    extra: &str,
    body: &str,
) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await
}

async fn serve(
    mut client: TcpStream,
    port: u16,
    upstream: &str,
    scopes: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let target = text
        .lines()
        .next()
        .unwrap_or_default()
        .split(' ')
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let authorization = text
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("authorization")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();

    if let Some(query) = target.strip_prefix("/token?") {
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"))
        );
        if authorization != expected {
            return respond(
                &mut client,
                "401 Unauthorized",
                "",
                r#"{"details":"bad credentials"}"#,
            )
            .await;
        }
        let scope = query
            .split('&')
            .find_map(|kv| kv.strip_prefix("scope="))
            .unwrap_or_default()
            .replace("%3A", ":")
            .replace("%2F", "/")
            .replace("%2C", ",");
        scopes.lock().unwrap().push(scope);
        let body = format!(r#"{{"token":"{TOKEN}","access_token":"{TOKEN}","expires_in":300}}"#);
        return respond(&mut client, "200 OK", "", &body).await;
    }
    if authorization != format!("Bearer {TOKEN}") {
        let challenge = format!(
            "WWW-Authenticate: Bearer realm=\"http://127.0.0.1:{port}/token\",service=\"olmpack-test\"\r\n"
        );
        return respond(
            &mut client,
            "401 Unauthorized",
            &challenge,
            r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
        )
        .await;
    }
    // Authorized: forward without the token, one request per connection.
    let mut rewritten = String::new();
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        let lower = line.to_ascii_lowercase();
        if !lower.starts_with("connection:") && !lower.starts_with("authorization:") {
            rewritten.push_str(line);
            rewritten.push_str("\r\n");
        }
    }
    rewritten.push_str("Connection: close\r\n\r\n");
    let mut server = TcpStream::connect(upstream).await?;
    server.write_all(rewritten.as_bytes()).await?;
    tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    Ok(())
}

#[tokio::test]
async fn push_and_resolve_against_a_bearer_token_registry() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let gate = TokenGate::start(registry.host()).await;
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("bundle");
    let root = build_bundle_image(&fixture("bundle"), &layout, &options("v1")).unwrap();
    let credentials = Credentials::Basic {
        username: USER.into(),
        password: Secret::new(PASSWORD),
    };
    let target = format!("{}/bearer/bundle:v1", gate.host());
    let report = push_layout(
        &format!("{}:v1", layout.display()),
        &target,
        &access(credentials.clone()),
        &Progress::Quiet,
    )
    .await
    .unwrap();
    assert_eq!(report.digest, root.digest);
    assert!(
        gate.scopes
            .lock()
            .unwrap()
            .iter()
            .any(|s| s == "repository:bearer/bundle:pull,push"),
        "a push token was requested: {:?}",
        gate.scopes.lock().unwrap()
    );
    assert_eq!(
        resolve_digest(&target, &access(credentials)).await.unwrap(),
        root.digest
    );
    Inspector::new(OciAuth::Anonymous)
        .assert_same_as_layout(
            &format!("{}/bearer/bundle:v1", registry.host()),
            &layout,
            "v1",
        )
        .await;

    // Without credentials the gate refuses, and the error says so.
    let err = resolve_digest(&target, &access(Credentials::Anonymous))
        .await
        .unwrap_err();
    let mut chain = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        chain.push_str(" | ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    assert!(chain.contains("denied access (HTTP 401)"), "{chain}");
}

#[tokio::test]
async fn trace_logs_of_a_bearer_push_hold_no_password_and_no_token() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let gate = TokenGate::start(registry.host()).await;
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("bundle");
    build_bundle_image(&fixture("bundle"), &layout, &options("v1")).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["-vvv", "image", "push"])
        .arg(format!("{}:v1", layout.display()))
        .arg(format!("{}/bearer/logs:v1", gate.host()))
        .args(["--username", USER, "--password-stdin"])
        .env("OLMPACK_LOG", "trace")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{PASSWORD}\n").as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("TRACE"), "trace logging was on");
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    for secret in [PASSWORD, basic.as_str(), TOKEN] {
        assert!(!stderr.contains(secret), "{secret} appears in the logs");
        assert!(!String::from_utf8_lossy(&output.stdout).contains(secret));
    }
}
