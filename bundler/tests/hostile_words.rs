//! Hostile input, issue 44's exit codes and words: each case a row with the command, the exit
//! code README documents (1: the input or plan is refused; 2: the environment failed) and the
//! exact message, which names the file or plan field and says who refuses, in olmpack's words.

mod hostile_support;
#[path = "image_support/proxy.rs"]
mod proxy;
mod release_support;

use std::path::Path;

use hostile_support::*;

/// One row: what is set up in a temp dir, the command, its exit code and exact message.
struct Row {
    name: &'static str,
    setup: fn(&Path),
    args: &'static [&'static str],
    code: i32,
    message: &'static str,
}

/// The example plan with release 1.0.0 replacing 1.1.1, which (through the computed chain)
/// replaces 1.1.0, which replaces 1.0.0.
fn replaces_cycle(d: &Path) {
    example_into(d);
    let plan = d.join("olmpack.yaml");
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "    manifests: deploy/1.0.0\n",
        "    manifests: deploy/1.0.0\n    replaces: guestbook-operator.v1.1.1\n",
    );
    write(&plan, text);
}

/// A catalog directory holding a FIFO next to a valid catalog file.
fn catalog_with_a_fifo(d: &Path) {
    write(&d.join("c/catalog.yaml"), CATALOG);
    mkfifo(&d.join("c/pipe.json"));
}

/// A catalog with a number beyond a 64-bit float's range.
fn catalog_with_1e400(d: &Path) {
    write(
        &d.join("c/catalog.yaml"),
        format!("{CATALOG}extra: 1e400\n"),
    );
}

/// A catalog with a key given twice (which opm reads, the last value winning) and, after it,
/// a number beyond a 64-bit float's range (the real refusal).
fn catalog_with_a_duplicate_key_then_1e400(d: &Path) {
    let text = CATALOG.replace("name: demo\n", "name: demo\nname: demo\nextra: 1e400\n");
    write(&d.join("c/catalog.yaml"), text);
}

/// A JSON catalog with bytes that are not UTF-8 in a string.
fn json_catalog_with_invalid_utf8(d: &Path) {
    write(
        &d.join("c/catalog.json"),
        b"{\"schema\":\"olm.package\",\"name\":\"demo\xff\"}\n",
    );
}

/// A basic catalog template in JSON behind a UTF-8 byte-order mark, with a `\/` escape.
fn bom_template_with_an_escaped_slash(d: &Path) {
    write(
        &d.join("t.json"),
        "\u{feff}{\"schema\":\"olm.template.basic\",\"entries\":[{\"schema\":\"olm.package\",\"name\":\"a\\/b\"}]}\n",
    );
}

/// A semver catalog template in JSON behind a UTF-8 byte-order mark, with a `\/` escape.
fn bom_semver_template_with_an_escaped_slash(d: &Path) {
    write(
        &d.join("t.json"),
        "\u{feff}{\"schema\":\"olm.semver\",\"stable\":{\"bundles\":[{\"image\":\"r.io\\/b:v1\"}]}}\n",
    );
}

/// A basic catalog template in JSON behind a UTF-8 byte-order mark that YAML reads as JSON does.
fn bom_template(d: &Path) {
    write(
        &d.join("t.json"),
        "\u{feff}{\"schema\":\"olm.template.basic\",\"entries\":[{\"schema\":\"olm.package\",\"name\":\"demo\"}]}\n",
    );
}

const BOM_TEMPLATE: &str = "error: t.json: the template begins with a UTF-8 byte-order mark, so opm reads it as YAML, and refuses it: line 1: \\/ is a JSON escape that Go's YAML decoder does not know\n";

const CYCLE: &str = "error[plan/replaces-cycle] olmpack.yaml: releases[0].replaces: guestbook-operator.v1.0.0 replaces guestbook-operator.v1.1.1, which is not older: the replaces chain guestbook-operator.v1.0.0 -> guestbook-operator.v1.1.1 -> guestbook-operator.v1.1.0 -> guestbook-operator.v1.0.0 is a cycle in channels candidate, stable, so no entry is the channel's head (the one nothing replaces, which OLM installs)\n";

const ROWS: &[Row] = &[
    Row {
        name: "a replaces cycle in the plan: generate",
        setup: replaces_cycle,
        args: &["generate"],
        code: 1,
        message: CYCLE,
    },
    Row {
        name: "a replaces cycle in the plan: release",
        setup: replaces_cycle,
        args: &["release", "--out", "out"],
        code: 1,
        message: CYCLE,
    },
    Row {
        name: "a replaces cycle in the plan: catalog generate",
        setup: replaces_cycle,
        args: &["catalog", "generate", "--out", "catalog"],
        code: 1,
        message: CYCLE,
    },
    Row {
        name: "a replaces cycle in the plan: upgrade check",
        setup: replaces_cycle,
        args: &["upgrade", "check"],
        code: 1,
        message: CYCLE,
    },
    Row {
        name: "a replaces cycle in the plan: upgrade test",
        setup: replaces_cycle,
        args: &["upgrade", "test"],
        code: 1,
        message: CYCLE,
    },
    Row {
        name: "a replaces cycle in the plan: upgrade olm",
        setup: replaces_cycle,
        args: &["upgrade", "olm"],
        code: 1,
        message: CYCLE,
    },
    Row {
        name: "image build --as-is on a catalog holding a FIFO",
        setup: catalog_with_a_fifo,
        args: &["image", "build", "catalog", "c", "--layout", "l", "--as-is"],
        code: 1,
        message: "error: failed to build the layer for /configs\n  caused by: c/pipe.json is a FIFO (named pipe); image layers hold only regular files and directories\n",
    },
    Row {
        name: "a YAML number beyond a float's range",
        setup: catalog_with_1e400,
        args: &["catalog", "validate", "c"],
        code: 1,
        message: "error[catalog/load] catalog.yaml: invalid YAML: line 19 column 8: the number `1e400` is beyond a 64-bit float's range (it would read as infinity, which JSON cannot hold)\n",
    },
    Row {
        name: "a duplicate key, then 1e400: the number is the refusal",
        setup: catalog_with_a_duplicate_key_then_1e400,
        args: &["catalog", "validate", "c"],
        code: 1,
        message: "error[catalog/load] catalog.yaml: invalid YAML: line 5 column 8: the number `1e400` is beyond a 64-bit float's range (it would read as infinity, which JSON cannot hold)\n",
    },
    Row {
        name: "bytes that are not UTF-8 in a JSON string",
        setup: json_catalog_with_invalid_utf8,
        args: &["catalog", "validate", "c"],
        code: 1,
        message: "error[catalog/load] catalog.json: invalid JSON: line 1 column 37: a string holds bytes that are not UTF-8 text\n",
    },
    Row {
        name: "a basic template behind a byte-order mark, read as YAML as opm reads it",
        setup: bom_template_with_an_escaped_slash,
        args: &["catalog", "template", "t.json"],
        code: 1,
        message: BOM_TEMPLATE,
    },
    Row {
        name: "a semver template behind a byte-order mark, read as YAML as opm reads it",
        setup: bom_semver_template_with_an_escaped_slash,
        args: &["catalog", "template", "t.json"],
        code: 1,
        message: "error: t.json: olm.semver template: line 1: \\/ is a JSON escape that YAML, as Go reads it, does not know; opm refuses it\n",
    },
    Row {
        name: "a basic template behind a byte-order mark that YAML reads as JSON does",
        setup: bom_template,
        args: &["catalog", "template", "t.json"],
        code: 0,
        message: "\"name\": \"demo\",\n    \"schema\": \"olm.package\"\n",
    },
];

#[test]
fn hostile_exit_codes_and_words_of_issue_44() {
    for row in ROWS {
        let dir = temp();
        let d = dir.path();
        (row.setup)(d);
        let before = snapshot(d);
        let out = run(d, row.args);
        out.expect(row.code, row.name).in_our_words();
        assert!(
            out.all().contains(row.message),
            "{}: output lacks {:?}:\n{}",
            row.name,
            row.message,
            out.all()
        );
        assert_eq!(snapshot(d), before, "{}: files were written", row.name);
    }
}

/// A registry on 127.0.0.1 that reads each request (one per connection) and writes
/// `reply(host, method, path)` as the raw answer, or closes the connection without one
/// (`None`); returns its host.
fn registry(reply: fn(&str, &str, &str) -> Option<String>) -> String {
    use std::io::{BufRead as _, Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let me = host.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let me = me.clone();
            std::thread::spawn(move || {
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let mut words = head.split_whitespace();
                let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
                if let Some(answer) = reply(&me, method, path) {
                    let _ = stream.write_all(answer.as_bytes());
                }
                let _ = stream.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    host
}

fn answer(status: &str, headers: &str, body: &str) -> Option<String> {
    Some(format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ))
}

fn closes(_: &str, _: &str, _: &str) -> Option<String> {
    None
}

fn relative_realm(_: &str, _: &str, _: &str) -> Option<String> {
    answer(
        "401 Unauthorized",
        "WWW-Authenticate: Bearer realm=\"/token\",service=\"r\"\r\n",
        "",
    )
}

fn unresolvable_realm(_: &str, _: &str, _: &str) -> Option<String> {
    answer(
        "401 Unauthorized",
        "WWW-Authenticate: Bearer realm=\"https://no-such-host.invalid/token\",service=\"r\"\r\n",
        "",
    )
}

fn refuses_uploads(_: &str, method: &str, path: &str) -> Option<String> {
    match (method, path) {
        (_, "/v2/") => answer("200 OK", "", ""),
        ("HEAD", _) => answer("404 Not Found", "", ""),
        _ => answer(
            "400 Bad Request",
            "Content-Type: application/json\r\n",
            r#"{"errors":[{"code":"BLOB_UPLOAD_INVALID","message":"no"}]}"#,
        ),
    }
}

/// Answers an upload with a redirect that names no Location to go to.
fn redirects_uploads_nowhere(_: &str, method: &str, path: &str) -> Option<String> {
    match (method, path) {
        (_, "/v2/") => answer("200 OK", "", ""),
        ("HEAD", _) => answer("404 Not Found", "", ""),
        _ => answer("307 Temporary Redirect", "", ""),
    }
}

/// Names a token service on its own host and port over HTTPS, where only plain HTTP answers.
fn tls_realm_on_a_plain_port(host: &str, _: &str, _: &str) -> Option<String> {
    answer(
        "401 Unauthorized",
        &format!("WWW-Authenticate: Bearer realm=\"https://{host}/token\",service=\"r\"\r\n"),
        "",
    )
}

/// One row against a misbehaving registry: `{host}` in the arguments and the message is the
/// registry's host; a push pushes a catalog image built from a valid catalog.
struct RegistryRow {
    name: &'static str,
    reply: fn(&str, &str, &str) -> Option<String>,
    args: &'static [&'static str],
    message: &'static str,
}

const REGISTRY_ROWS: &[RegistryRow] = &[
    RegistryRow {
        name: "the registry closes the connection without answering: resolve",
        reply: closes,
        args: &["image", "resolve", "{host}/demo/x:v1", "--attempts", "2"],
        message: "resolving {host}/demo/x:v1 failed after 2 attempt(s): http://{host}: it closed the connection before answering",
    },
    RegistryRow {
        name: "the registry closes the connection without answering: push",
        reply: closes,
        args: &["image", "push", "l", "{host}/demo/x:v1", "--attempts", "2"],
        message: "authenticating to {host} failed after 2 attempt(s): http://{host}: it closed the connection before answering",
    },
    RegistryRow {
        name: "a token service named by a relative URL",
        reply: relative_realm,
        args: &["image", "resolve", "{host}/demo/x:v1", "--attempts", "2"],
        message: "resolving {host}/demo/x:v1: getting a token from /token failed after 1 attempt(s): http://{host} names the token service \"/token\", which is not a full http(s) URL (WWW-Authenticate realm)",
    },
    RegistryRow {
        name: "a token service whose host does not resolve is named, not the registry",
        reply: unresolvable_realm,
        args: &["image", "resolve", "{host}/demo/x:v1", "--attempts", "2"],
        message: "resolving {host}/demo/x:v1: getting a token from https://no-such-host.invalid/token: cannot connect to https://no-such-host.invalid: no such host (its name does not resolve) (after 2 attempt(s))",
    },
    RegistryRow {
        name: "an upload refused with a registry error",
        reply: refuses_uploads,
        args: &["image", "push", "l", "{host}/demo/x:v1", "--attempts", "2"],
        message: " failed after 1 attempt(s): http://{host}/v2/demo/x/blobs/uploads/ answered HTTP 400: {\"errors\":[{\"code\":\"BLOB_UPLOAD_INVALID\",\"message\":\"no\"}]}",
    },
    RegistryRow {
        name: "an upload answered with a redirect that names no Location",
        reply: redirects_uploads_nowhere,
        args: &["image", "push", "l", "{host}/demo/x:v1", "--attempts", "2"],
        message: " failed after 1 attempt(s): http://{host}/v2/demo/x/blobs/uploads/ answered HTTP 307 (a redirect without a Location olmpack can follow)\n",
    },
    RegistryRow {
        name: "TLS to a token service that speaks plain HTTP",
        reply: tls_realm_on_a_plain_port,
        args: &["image", "resolve", "{host}/demo/x:v1", "--attempts", "2"],
        message: "resolving {host}/demo/x:v1: getting a token from https://{host}/token: cannot connect to https://{host}: it does not speak TLS there (an https URL on a port that answers plain HTTP or another protocol) (after 2 attempt(s))\n",
    },
];

#[test]
fn hostile_registry_failures_in_our_words_naming_the_server() {
    for row in REGISTRY_ROWS {
        let dir = temp();
        let d = dir.path();
        write(&d.join("c/catalog.yaml"), CATALOG);
        run(d, &["image", "build", "catalog", "c", "--layout", "l"]).expect(0, "build");
        let host = registry(row.reply);
        let args: Vec<String> = row
            .args
            .iter()
            .map(|a| a.replace("{host}", &host))
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let message = row.message.replace("{host}", &host);
        let out = run(d, &args);
        out.expect(2, row.name).says(&message).in_our_words();
        for leak in [
            "SendRequest",
            "builder error",
            "Server error",
            "Digest error",
            "lookup address",
            "InvalidContentType",
            "corrupt message",
        ] {
            assert!(
                !out.all().contains(leak),
                "{}: {leak}:\n{}",
                row.name,
                out.all()
            );
        }
    }
}

/// Log lines written to a file or a pipe (stderr not a terminal) carry no colour codes.
#[test]
fn hostile_log_lines_into_a_file_carry_no_colour_codes() {
    let dir = temp();
    let host = registry(closes);
    let image = format!("{host}/demo/x:v1");
    let out = run(
        dir.path(),
        &["image", "resolve", &image, "--attempts", "2", "-v"],
    );
    out.expect(2, "a registry that closes the connection")
        .says("registry request failed; retrying");
    assert!(
        !out.stderr.contains('\u{1b}'),
        "colour codes:\n{}",
        out.stderr
    );
}

/// `release --push`'s SBOM step against a registry whose referrers index (the tag-schema
/// fallback, `sha256-<hex>`) comes with a `Docker-Content-Digest` that is not its digest: the
/// failure is in our words (never the library's "Digest error"), names the image whose
/// referrers were read and both digests, and exits 2 (the registry failed).
#[tokio::test(flavor = "multi_thread")]
async fn hostile_registry_digest_lie_in_release_sbom_step_names_the_image() {
    use olmpack_envtest::binaries::Tool;
    use olmpack_testkit::registry::{Registry, RegistryAuth};
    use proxy::{EMPTY_INDEX, Fault, FaultProxy, LYING_DIGEST, Rule};
    if let Err(err) = Tool::Registry.path() {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "{err}");
        eprintln!("NOT RUN: {err}");
        return;
    }
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let rule: std::sync::Arc<Rule> = std::sync::Arc::new(|_, method, path| {
        match method == "GET" && path.contains("/manifests/sha256-") {
            true => Fault::LyingIndex,
            false => Fault::Pass,
        }
    });
    let proxy = FaultProxy::start(registry.host(), rule).await;
    let host = proxy.host();
    let work = temp();
    let d = work.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let plan = release_support::example_project(&d.join("project"));
        let binary = release_support::operator_binary(&d);
        let (plan, binary) = (plan.display().to_string(), binary.display().to_string());
        let target = format!("{host}/acme");
        let args = [
            "release",
            "--push",
            "--attempts",
            "2",
            "--plan",
            &plan,
            "--out",
            "out",
            "--binary",
            &binary,
            "--registry",
            &target,
        ];
        run_with(&d, &args, std::time::Duration::from_secs(300))
    })
    .await
    .unwrap();
    out.expect(2, "a lying referrers index").in_our_words();
    // The last request lied to is the one the SBOM step failed on.
    let lied = (proxy.log.lock().unwrap().iter())
        .rfind(|(_, _, f)| *f == Fault::LyingIndex)
        .map(|(_, p, _)| p.clone());
    let lied = lied.expect("the SBOM step read the referrers index");
    let (repo, tag) = lied
        .trim_start_matches("/v2/")
        .split_once("/manifests/")
        .unwrap();
    let subject = tag.replacen("sha256-", "sha256:", 1);
    let actual = olmpack_oci::image::digest::sha256_digest(EMPTY_INDEX.as_bytes());
    let host = proxy.host();
    out.says(&format!(
        "error: release step \"sbom\" failed\n  caused by: listing the referrers of {host}/{repo}@{subject} failed after 1 attempt(s): http://{host}: what it sent has the digest {actual}, not {LYING_DIGEST}\n"
    ));
    assert!(!out.all().contains("Digest error"), "{}", out.all());
}

// --- messages in our words ---

#[test]
fn hostile_messages_name_the_problem_in_our_words() {
    let dir = temp();
    let d = dir.path();
    let catalog_cases: [(&str, &str, &str); 3] = [
        (
            "c1/catalog.yaml",
            "schema: olm.package\nname: *nowhere\n",
            "alias *nowhere is used before an anchor &nowhere defines it",
        ),
        (
            "c2/catalog.yaml",
            "schema: olm.package\nname: &loop [*loop]\n",
            "alias *loop refers to the value that contains it",
        ),
        (
            "c3/catalog.json",
            "{\"schema\":\"olm.package\",\"name\":\"\\ud800\",\"defaultChannel\":\"x\"}\n",
            "\\ud800 is half of a UTF-16 surrogate pair, without its other half",
        ),
    ];
    for (file, text, says) in catalog_cases {
        write(&d.join(file), text);
        let (dir_arg, name) = file.split_once('/').unwrap();
        let out = run(d, &["catalog", "validate", dir_arg]);
        out.expect(1, file)
            .says(&format!("error[catalog/load] {name}: invalid "))
            .says(says)
            .in_our_words();
        for leak in ["alias bomb", "weak recursion", "hex escape"] {
            assert!(!out.all().contains(leak), "{file}: {leak}\n{}", out.all());
        }
    }
    // The plan.
    let (plan_dir, plan) = example();
    write(&plan, "- package: x\n- releases: []\n");
    run(plan_dir.path(), &["plan", "edges"])
        .expect(1, "a list as the plan")
        .says("olmpack.yaml: (top level): wrong type: a list, expected a mapping (package:, releases:, …)")
        .in_our_words();
    let (plan_dir, plan) = example();
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("package: guestbook-operator", "package: 0777");
    write(&plan, text);
    let out = run(plan_dir.path(), &["plan", "edges"]);
    out.expect(1, "package: 0777")
        .says(
            "package: wrong type: a number, expected a string (quote the value to keep it as text)",
        )
        .in_our_words();
    assert!(!out.all().contains("floating point"), "{}", out.all());
    // A CRD file holding a string.
    write(&d.join("s.yaml"), "just a string\n");
    write(&d.join("n.yaml"), "42\n");
    let out = run(d, &["upgrade", "check", "--crd", "s.yaml", "n.yaml"]);
    out.expect(1, "a string as a CRD")
        .says("s.yaml: a string is not an apiextensions.k8s.io/v1 CustomResourceDefinition")
        .in_our_words();
    assert!(!out.all().contains("  is not"), "{}", out.all());
    // A registry that is not there: the connection, in our words.
    write(&d.join("c/catalog.yaml"), CATALOG);
    run(d, &["image", "build", "catalog", "c", "--layout", "l"]).expect(0, "build");
    let out = run(d, &["image", "push", "l", "127.0.0.1:9/demo/catalog:v1"]);
    out.expect(2, "no registry")
        .says("cannot connect to http://127.0.0.1:9")
        .in_our_words();
    for leak in [
        "error sending request",
        "client error",
        "tcp connect error",
        "hyper",
    ] {
        assert!(!out.all().contains(leak), "{leak}\n{}", out.all());
    }
}
