//! Hostile input, round three (issue 44): nothing a plan or a catalog holds becomes an
//! instruction in `bundle.Dockerfile` or a forged line of output; secret and key files read as
//! bounded regular files.

mod hostile_support;

use hostile_support::*;

// --- 1. injection: bundleLabels and untrusted names in findings ---

#[test]
fn hostile_bundle_label_that_would_inject_a_dockerfile_line_is_a_plan_error() {
    let cases = [
        (
            "a newline in a key",
            "  \"a\\nRUN id\": v\n",
            "olmpack.yaml: bundleLabels: key \"a\\nRUN id\" is not a label key (letters, digits, '.', '-', '_' and '/', starting and ending with a letter or digit, at most 253 characters)",
        ),
        (
            "a key with '=' and a space",
            "  \"k=v RUN\": v\n",
            "olmpack.yaml: bundleLabels: key \"k=v RUN\" is not a label key",
        ),
        (
            "a newline in a value",
            "  com.example.note: \"v\\nRUN id\"\n",
            "olmpack.yaml: bundleLabels.com.example.note: \"v\\nRUN id\" holds a control character, which a bundle.Dockerfile LABEL cannot carry",
        ),
    ];
    for (what, label, message) in cases {
        let (dir, plan) = example();
        let d = dir.path();
        let text = std::fs::read_to_string(&plan).unwrap();
        let text = text.replace("bundleLabels:\n", &format!("bundleLabels:\n{label}"));
        write(&plan, text);
        let before = snapshot(d);
        for args in [&["generate"][..], &["bundle", "generate", "--out", "b"]] {
            run(d, args).expect(1, what).says(message).in_our_words();
            assert_eq!(snapshot(d), before, "{what}: {args:?} wrote files");
        }
    }
}

#[test]
fn hostile_catalog_name_with_a_newline_cannot_forge_a_line_or_a_workflow_command() {
    let dir = temp();
    let d = dir.path();
    let catalog = CATALOG.replace(
        "name: demo.v1.0.0\nimage",
        "name: \"demo.v1.0.0\\n::error::forged\"\nimage",
    );
    write(&d.join("c/catalog.yaml"), catalog);
    let text = run(d, &["catalog", "validate", "c"]);
    text.expect(1, "an entry naming no bundle").in_our_words();
    assert!(
        text.all()
            .lines()
            .all(|l| !l.trim_start().starts_with("::")),
        "a line starts a workflow command:\n{}",
        text.all()
    );
    text.says("demo.v1.0.0<U+000A>::error::forged");
    let md = run(d, &["catalog", "validate", "c", "--output", "markdown"]);
    md.expect(1, "markdown");
    assert!(
        md.all().lines().all(|l| !l.trim_start().starts_with("::")),
        "{}",
        md.all()
    );
    md.says("demo.v1.0.0<br>::error::forged");
}

// --- 2. credentials only over HTTPS or to loopback ---

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

// --- 3. key files: bounded regular files ---

#[test]
fn hostile_sign_key_that_is_a_fifo_a_device_or_huge_is_refused_naming_it() {
    let (dir, _) = example();
    let d = dir.path();
    mkfifo(&d.join("key.fifo"));
    sparse(&d.join("huge.pem"), 3 << 30);
    let rows = [
        (
            "key.fifo",
            1,
            "key.fifo: is a FIFO (named pipe), not a regular file; olmpack reads only regular files",
        ),
        (
            "/dev/zero",
            1,
            "/dev/zero: is a device, not a regular file; olmpack reads only regular files",
        ),
        (
            "huge.pem",
            1,
            "huge.pem: is 3221225472 bytes, more than the 1048576 bytes a key or credentials file may have",
        ),
        ("missing.pem", 2, "missing.pem: does not exist"),
    ];
    for (key, code, message) in rows {
        let before = snapshot(d);
        run_with(
            d,
            &["release", "--sign-key", key, "--out", "out"],
            std::time::Duration::from_secs(20),
        )
        .expect(code, key)
        .says("cannot read the signing key")
        .says(message)
        .in_our_words();
        assert_eq!(snapshot(d), before, "{key}: files were written");
    }
}
