//! Hostile registries (issue 44): a registry of the test's own on 127.0.0.1 that sends endless,
//! oversized, dripping or lying answers. Every command that reads a registry stops with a clear
//! message naming the registry, exit 2, in bounded time and memory.

mod hostile_support;

use std::io::{BufRead as _, Write as _};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hostile_support::*;
use sha2::Digest as _;

/// What the test registry sends after the status line and headers.
#[derive(Clone)]
enum Body {
    Bytes(Vec<u8>),
    /// Zeros until the client goes away.
    Endless,
    /// These bytes, one at a time, with a pause before each.
    Drip(Vec<u8>, Duration),
}

#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    /// The Content-Length announced (none: the connection's end ends the body).
    length: Option<u64>,
    body: Body,
}

impl Reply {
    fn ok(body: impl Into<Vec<u8>>, media: &str) -> Self {
        let body = body.into();
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), media.into())],
            length: Some(body.len() as u64),
            body: Body::Bytes(body),
        }
    }

    fn status(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            length: Some(0),
            body: Body::Bytes(Vec::new()),
        }
    }

    fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

type Handler = dyn Fn(usize, &str) -> Reply + Send + Sync;

/// Serves `handler(request number, path)` on 127.0.0.1, one request per connection; returns
/// the host.
fn registry(handler: impl Fn(usize, &str) -> Reply + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let handler: Arc<Handler> = Arc::new(handler);
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let (handler, count) = (handler.clone(), count.clone());
            std::thread::spawn(move || {
                let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                serve(stream, n, &*handler);
            });
        }
    });
    host
}

fn serve(mut stream: std::net::TcpStream, n: usize, handler: &Handler) {
    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    let reply = handler(n, &path);
    let mut head = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(length) = reply.length {
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    head.push_str("\r\n");
    if stream.write_all(head.as_bytes()).is_err() || method == "HEAD" {
        return;
    }
    let _ = match reply.body {
        Body::Bytes(bytes) => stream.write_all(&bytes),
        Body::Endless => {
            let zeros = vec![0u8; 64 * 1024];
            while stream.write_all(&zeros).is_ok() {}
            Ok(())
        }
        Body::Drip(bytes, pause) => bytes.iter().try_for_each(|b| {
            std::thread::sleep(pause);
            stream.write_all(&[*b]).and_then(|()| stream.flush())
        }),
    };
}

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

fn digest(bytes: &[u8]) -> String {
    let hex: String = sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// A manifest of one config and one gzip layer, and the config.
fn image(layer: &[u8], declared_layer_size: u64) -> (String, Vec<u8>) {
    let config = br#"{"architecture":"amd64","os":"linux","config":{},"rootfs":{"type":"layers","diff_ids":[]}}"#.to_vec();
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"{MANIFEST}","config":{{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"{}","size":{}}},"layers":[{{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"{}","size":{declared_layer_size}}}]}}"#,
        digest(&config),
        config.len(),
        digest(layer),
    );
    (manifest, config)
}

/// A registry serving `manifest` at any tag, `config` and `layer` (as `layer_reply`).
fn image_registry(layer: Vec<u8>, declared: u64, layer_reply: Option<Reply>) -> String {
    let (manifest, config) = image(&layer, declared);
    let config_digest = digest(&config);
    registry(move |_, path| {
        if path.contains("/manifests/") {
            Reply::ok(manifest.clone(), MANIFEST)
        } else if path.ends_with(&config_digest) {
            Reply::ok(config.clone(), "application/octet-stream")
        } else if let Some(reply) = &layer_reply {
            reply.clone()
        } else {
            Reply::ok(layer.clone(), "application/octet-stream")
        }
    })
}

/// Runs olmpack as a direct child and returns its outcome and peak RSS in MiB (the child's
/// own `ru_maxrss`, from `wait4`).
#[allow(clippy::zombie_processes)] // reaped by `wait4` in `wait_with_usage`
fn run_measured(dir: &std::path::Path, args: &[&str], limit: Duration) -> (Outcome, u64, Duration) {
    let start = Instant::now();
    let child = olmpack()
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let (mut stdout, mut stderr) = (child.stdout, child.stderr);
    let out = std::thread::spawn(move || read_to_string(stdout.as_mut()));
    let err = std::thread::spawn(move || read_to_string(stderr.as_mut()));
    let (status, rss_kib) = wait_with_usage(pid, limit, args);
    let outcome = Outcome {
        code: status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (outcome, rss_kib / 1024, start.elapsed())
}

fn read_to_string(r: Option<&mut impl std::io::Read>) -> String {
    let mut bytes = Vec::new();
    if let Some(r) = r {
        let _ = r.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Waits for `pid` (killing it after `limit`) and returns its exit code and peak RSS in KiB.
#[allow(unsafe_code)]
fn wait_with_usage(pid: libc::pid_t, limit: Duration, args: &[&str]) -> (i32, u64) {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data the kernel fills in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waiting for our own child with valid pointers.
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if done == pid {
            assert!(
                libc::WIFEXITED(status),
                "olmpack {args:?} was killed (status {status})"
            );
            return (libc::WEXITSTATUS(status), usage.ru_maxrss as u64);
        }
        if start.elapsed() > limit {
            // SAFETY: killing our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("olmpack {args:?} ran for more than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn measured(args: &[&str]) -> (Outcome, u64, Duration) {
    let dir = temp();
    run_measured(dir.path(), args, Duration::from_secs(90))
}

#[test]
fn hostile_registry_endless_and_oversized_manifests_are_refused_in_bounded_memory() {
    let endless = registry(|_, _| Reply {
        length: None,
        body: Body::Endless,
        ..Reply::ok(Vec::new(), MANIFEST)
    });
    let declared = registry(|_, _| Reply {
        length: Some(300 * 1024 * 1024),
        body: Body::Endless,
        ..Reply::ok(Vec::new(), MANIFEST)
    });
    for (what, host) in [
        ("an endless manifest", endless),
        ("a 300 MB manifest", declared),
    ] {
        let image = format!("{host}/demo/bundle:v1");
        for args in [
            vec!["catalog", "render", image.as_str()],
            vec!["image", "resolve", image.as_str()],
        ] {
            let (outcome, rss, took) = measured(&args);
            let verb = if args[0] == "image" {
                "resolving"
            } else {
                "pulling manifest"
            };
            outcome
                .expect(2, what)
                .says(&format!(
                    "{verb} {image}: http://{host} sends more than 4194304 bytes, the most olmpack reads for it"
                ))
                .in_our_words();
            assert!(rss < 150, "{what}: {args:?} peaked at {rss} MiB");
            assert!(took < Duration::from_secs(30), "{what}: took {took:?}");
        }
    }
}

#[test]
fn hostile_registry_slow_drip_ends_at_the_timeout_and_the_deadline() {
    let manifest = vec![b' '; 556];
    let host = registry(move |_, _| Reply {
        body: Body::Drip(manifest.clone(), Duration::from_millis(500)),
        ..Reply::ok(vec![b' '; 556], MANIFEST)
    });
    let image = format!("{host}/demo/bundle:v1");
    let rows: [(&[&str], &str); 3] = [
        (
            &["--timeout", "2", "--attempts", "2"],
            &format!(
                "pulling manifest {image} failed after 2 attempt(s): http://{host} did not send its whole answer within 2 s (--timeout)"
            ),
        ),
        (
            &["--timeout", "60", "--deadline", "3"],
            &format!(
                "pulling manifest {image}: http://{host} did not finish within the deadline of 3 s (--deadline)"
            ),
        ),
        (
            &["--timeout", "1", "--attempts", "1"],
            &format!(
                "pulling manifest {image} failed after 1 attempt(s): http://{host} did not send its whole answer within 1 s (--timeout)"
            ),
        ),
    ];
    for (flags, message) in rows {
        let mut args = vec!["catalog", "render", image.as_str()];
        args.extend_from_slice(flags);
        let (outcome, _, took) = measured(&args);
        outcome.expect(2, message).says(message).in_our_words();
        assert!(took < Duration::from_secs(20), "{flags:?} took {took:?}");
    }
}

#[test]
fn hostile_registry_error_body_is_read_only_for_its_first_message() {
    let host = registry(|_, _| Reply {
        status: 500,
        length: Some(100 * 1024 * 1024),
        body: Body::Endless,
        headers: Vec::new(),
    });
    let json = registry(|_, _| {
        let body = r#"{"errors":[{"code":"UNKNOWN","message":"disk\nfull"}]}"#;
        Reply {
            status: 500,
            ..Reply::ok(body, "application/json")
        }
    });
    let rows = [
        (
            host.clone(),
            format!(
                "resolving {host}/demo/bundle:v1: http://{host}/v2/demo/bundle/manifests/v1 answered HTTP 500\n"
            ),
        ),
        (
            json.clone(),
            format!(
                "resolving {json}/demo/bundle:v1: http://{json}/v2/demo/bundle/manifests/v1 answered HTTP 500: disk\\nfull\n"
            ),
        ),
    ];
    for (host, message) in rows {
        let image = format!("{host}/demo/bundle:v1");
        let (outcome, rss, _) = measured(&["image", "resolve", &image, "--attempts", "1"]);
        outcome.expect(2, &message).says(&message).in_our_words();
        assert!(outcome.all().len() < 1024, "{}", outcome.all());
        assert!(rss < 150, "peaked at {rss} MiB");
    }
}

#[test]
fn hostile_registry_layer_longer_than_declared_is_cut_off() {
    let layer = vec![7u8; 2100];
    let host = image_registry(
        layer.clone(),
        2100,
        Some(Reply {
            length: None,
            body: Body::Endless,
            ..Reply::ok(Vec::new(), "application/octet-stream")
        }),
    );
    let image = format!("{host}/demo/bundle:v1");
    let dir = temp();
    let (outcome, rss, took) = run_measured(
        dir.path(),
        &["catalog", "render", &image],
        Duration::from_secs(60),
    );
    outcome
        .expect(2, "a layer longer than declared")
        .says(&format!(
            "pulling blob {}: http://{host} answered with something else: it sends more than the 2100 bytes its descriptor declares",
            digest(&layer)
        ))
        .in_our_words();
    assert!(rss < 150, "peaked at {rss} MiB");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let left = du(dir.path());
    assert!(left < 1024 * 1024, "{left} bytes left in the temp dir");
}

/// Bytes of the regular files under `dir`.
fn du(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).into_iter().flatten().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

/// A gzip tar holding one file of `size` zeros at `path`.
fn zero_layer(path: &str, size: u64) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    {
        let mut tar = tar::Builder::new(&mut gz);
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, path, std::io::repeat(0).take(size))
            .unwrap();
        tar.finish().unwrap();
    }
    gz.finish().unwrap()
}

use std::io::Read as _;

#[test]
fn hostile_registry_layers_unpack_under_the_input_limits() {
    let rows = [
        (
            "a gzip bomb",
            zero_layer("manifests/bomb.yaml", 200 * 1024 * 1024),
            vec![],
            "it inflates more than 200 times its compressed size (a compression bomb); refused",
        ),
        (
            "a file over --max-file-size",
            zero_layer("manifests/big.yaml", 2 * 1024 * 1024),
            vec!["--max-file-size", "1"],
            "manifests/big.yaml is 2097152 bytes, more than the limit of 1048576 bytes; raise it with --max-file-size",
        ),
    ];
    for (what, layer, flags, message) in rows {
        let host = image_registry(layer.clone(), layer.len() as u64, None);
        let image = format!("{host}/demo/bundle:v1");
        let mut args = flags.clone();
        args.extend(["catalog", "render", image.as_str()]);
        let (outcome, rss, _) = measured(&args);
        outcome
            .expect(2, what)
            .says(&format!(
                "failed to read layer {} of {image}",
                digest(&layer)
            ))
            .says(message)
            .in_our_words();
        assert!(rss < 250, "{what}: peaked at {rss} MiB");
    }
}

#[test]
fn hostile_registry_by_tag_resolve_hashes_the_manifest_not_the_header() {
    let manifest = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:44","size":2},"layers":[]}"#;
    let lie = format!("sha256:{}", "0".repeat(64));
    let lying = lie.clone();
    let host =
        registry(move |_, _| Reply::ok(manifest, MANIFEST).header("Docker-Content-Digest", &lying));
    let (outcome, _, _) = measured(&["image", "resolve", &format!("{host}/demo/bundle:v1")]);
    outcome.expect(0, "a lying Docker-Content-Digest header");
    assert_eq!(outcome.stdout.trim(), digest(manifest.as_bytes()));
    assert!(!outcome.all().contains(&lie));
}

#[test]
fn hostile_registry_retry_after_is_honoured_within_the_deadline() {
    let manifest = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:44","size":2},"layers":[]}"#;
    let polite = registry(move |n, _| {
        if n == 0 {
            Reply::status(429).header("Retry-After", "2")
        } else {
            Reply::ok(manifest, MANIFEST)
        }
    });
    let (outcome, _, took) = measured(&["image", "resolve", &format!("{polite}/demo/b:v1")]);
    outcome.expect(0, "429 with Retry-After: 2");
    assert_eq!(outcome.stdout.trim(), digest(manifest.as_bytes()));
    assert!(took >= Duration::from_secs(2), "did not wait: {took:?}");

    let greedy = registry(|_, _| Reply::status(503).header("Retry-After", "3600"));
    let image = format!("{greedy}/demo/b:v1");
    let (outcome, _, took) = measured(&["image", "resolve", &image, "--deadline", "30"]);
    outcome
        .expect(2, "Retry-After past the deadline")
        .says(&format!(
            "resolving {image}: http://{greedy} asks to retry after 3600 s (Retry-After), past the deadline (--deadline)"
        ))
        .in_our_words();
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn hostile_registry_token_service_answers_are_bounded_and_checked() {
    let rows = [
        (
            Reply::ok("<html>not a token</html>", "text/html"),
            "the token service http://{host}/token answered with something other than a token (JSON with \"token\" or \"access_token\")",
        ),
        (
            Reply {
                length: None,
                body: Body::Endless,
                ..Reply::ok(Vec::new(), "application/json")
            },
            "getting a token from http://{host}/token: http://{host} sends more than 1048576 bytes, the most olmpack reads for it",
        ),
    ];
    for (token, message) in rows {
        let slot = Arc::new(std::sync::Mutex::new(String::new()));
        let realm_host = slot.clone();
        let host = registry(move |_, path| {
            if path.starts_with("/token") {
                return token.clone();
            }
            let realm = format!("http://{}/token", realm_host.lock().unwrap());
            Reply::status(401).header(
                "WWW-Authenticate",
                &format!("Bearer realm=\"{realm}\",service=\"r\""),
            )
        });
        *slot.lock().unwrap() = host.clone();
        let image = format!("{host}/demo/bundle:v1");
        let message = message.replace("{host}", &host);
        let (outcome, rss, _) = measured(&["image", "resolve", &image]);
        outcome
            .expect(2, &message)
            .says(&message)
            .says(&format!("resolving {image}"))
            .in_our_words();
        assert!(rss < 150, "peaked at {rss} MiB");
    }
}

#[test]
fn hostile_registry_pin_digests_on_a_failing_registry_exits_2_naming_it() {
    let failing = registry(|_, _| Reply::status(500));
    let missing = registry(|_, _| Reply::status(404));
    let rows = [
        (
            failing,
            2,
            "cannot pin {host}/olmpack/guestbook-operator:v1.0.0 to a digest",
            "resolving {host}/olmpack/guestbook-operator:v1.0.0 failed after 2 attempt(s): http://{host}/v2/olmpack/guestbook-operator/manifests/v1.0.0 answered HTTP 500",
        ),
        (
            missing,
            1,
            "releases[0].manifests: cannot pin {host}/olmpack/guestbook-operator:v1.0.0 to a digest",
            "http://{host}/v2/olmpack/guestbook-operator/manifests/v1.0.0 answered HTTP 404",
        ),
    ];
    for (host, code, first, second) in rows {
        let (dir, _) = example();
        let d = dir.path();
        for version in ["1.0.0", "1.1.0", "1.1.1"] {
            let path = d.join(format!("deploy/{version}/manifests.yaml"));
            let text = std::fs::read_to_string(&path).unwrap();
            write(&path, text.replace("quay.io/", &format!("{host}/")));
        }
        let before = snapshot(d);
        for args in [
            &["generate", "--pin-digests", "--attempts", "2"][..],
            &[
                "bundle",
                "generate",
                "--pin-digests",
                "--attempts",
                "2",
                "--out",
                "b",
            ],
        ] {
            let start = Instant::now();
            run(d, args)
                .expect(code, first)
                .says(&first.replace("{host}", &host))
                .says(&second.replace("{host}", &host))
                .in_our_words();
            assert!(start.elapsed() < Duration::from_secs(20), "{args:?}");
            assert_eq!(snapshot(d), before, "{args:?} wrote files");
        }
    }
}

/// A server that accepts the connection and never answers (a real listener on 127.0.0.1 that
/// holds every connection open and sends nothing) is said to be there and silent, not
/// unreachable, and the wait ends at the per-request timeout — for reads through olmpack's
/// bounded client (`catalog render`, `image resolve`) and for a push through the registry
/// client library alike.
#[test]
fn hostile_registry_that_accepts_and_never_answers_is_said_so() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            held.push(stream);
        }
    });
    let dir = temp();
    let d = dir.path();
    write(&d.join("c/catalog.yaml"), CATALOG);
    run(d, &["image", "build", "catalog", "c", "--layout", "l"]).expect(0, "build");
    let image = format!("{host}/demo/catalog:v1");
    let said =
        format!("http://{host} accepted the connection, then sent nothing for 1 s (--timeout)");
    for command in [
        vec!["catalog", "render", image.as_str()],
        vec!["image", "resolve", image.as_str()],
        vec!["image", "push", "l", image.as_str()],
    ] {
        let mut args = command.clone();
        args.extend(["--timeout", "1", "--attempts", "1"]);
        let (outcome, took) = {
            let start = Instant::now();
            (run_with(d, &args, Duration::from_secs(60)), start.elapsed())
        };
        outcome.expect(2, &said).says(&said).in_our_words();
        assert!(
            !outcome.all().contains("cannot connect"),
            "{command:?}\n{}",
            outcome.all()
        );
        assert!(took < Duration::from_secs(15), "{command:?} took {took:?}");
    }
}

// --- credentials only over HTTPS or to loopback ---

/// A registry on 127.0.0.1 that answers every request with 401 and a Bearer challenge naming
/// `realm`; returns its host and whether any request carried an `Authorization` header.
fn challenging_registry(
    realm: &'static str,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::io::{BufRead as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = sent.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                if line.to_ascii_lowercase().starts_with("authorization:") {
                    seen.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm=\"{realm}\",service=\"r\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (host, sent)
}

#[test]
fn hostile_registry_token_realm_on_plain_http_gets_no_credentials() {
    let dir = temp();
    let d = dir.path();
    let (host, sent) = challenging_registry("http://token.invalid:8080/token");
    let auth = format!(r#"{{"auths": {{"{host}": {{"auth": "cm9ib3Q6c2VjcmV0"}}}}}}"#);
    write(&d.join("auth.json"), auth);
    let image = format!("{host}/demo/catalog:v1");
    run_env(
        d,
        &["catalog", "render", &image],
        &[("REGISTRY_AUTH_FILE", "auth.json")],
        std::time::Duration::from_secs(60),
    )
    .expect(2, "a token realm on plain HTTP")
    .says(&format!("{host}: refusing to send credentials to the token service http://token.invalid:8080/token the registry names: it is plain HTTP to token.invalid:8080, which is not a loopback address; credentials go only over HTTPS or to loopback"))
    .in_our_words();
    assert!(
        !sent.load(std::sync::atomic::Ordering::SeqCst),
        "credentials were sent"
    );
}
