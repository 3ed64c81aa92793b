//! `olmpack release --push`: the supply chain — SPDX SBOMs attached to every bundle and
//! catalog image (the referrers API on olareg, the tag-schema fallback on Debian's
//! docker-registry 2.8), and cosign signatures verified by the real `cosign verify`.

mod release_support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use olmpack_envtest::binaries::Tool;
use olmpack_testkit::{olareg::ReferrersRegistry, registry::Registry, registry::RegistryAuth};
use release_support::{example_project, ok, olmpack, operator_binary, stderr};

/// The tool's path; without it the test is not run (loudly), and in CI that is a failure.
fn tool(tool: Tool) -> Option<PathBuf> {
    match tool.path() {
        Ok(path) => Some(path),
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{err} (CI=true: every tool must be installed)")
        }
        Err(err) => {
            eprintln!("NOT RUN: {err}");
            None
        }
    }
}

struct Project {
    _work: tempfile::TempDir,
    plan: PathBuf,
    binary: PathBuf,
    out: PathBuf,
}

fn project() -> Project {
    let work = tempfile::tempdir().unwrap();
    let plan = example_project(&work.path().join("project"));
    let binary = operator_binary(work.path());
    let out = work.path().join("out");
    Project {
        plan,
        binary,
        out,
        _work: work,
    }
}

fn release(project: &Project, registry: &str, extra: &[&str]) -> Command {
    let mut cmd = olmpack();
    cmd.args(["release", "--push", "--output", "json", "--attempts", "2"])
        .arg("--plan")
        .arg(&project.plan)
        .arg("--out")
        .arg(&project.out)
        .arg("--binary")
        .arg(&project.binary)
        .args(["--registry", registry])
        .args(extra);
    cmd
}

/// One plain HTTP/1.1 request to a loopback registry: status and body.
fn http(
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP response");
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut body = response[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&data[..line_end]).trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[line_end + 2..line_end + 2 + size]);
        data = &data[line_end + 4 + size..];
    }
}

const ACCEPT_ALL: &str =
    "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json";

/// `host/repo@digest` → (host, repo, digest).
fn split_pinned(pinned: &str) -> (String, String, String) {
    let (name, digest) = pinned.split_once('@').unwrap();
    let (host, repo) = name.split_once('/').unwrap();
    (host.to_owned(), repo.to_owned(), digest.to_owned())
}

fn get_json(host: &str, path: &str) -> (u16, serde_json::Value) {
    let (status, body) = http(host, "GET", path, &[("Accept", ACCEPT_ALL)], b"");
    let value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    (status, value)
}

/// The SBOM artifact `digest` in `repo`: checks its manifest points at `subject` and returns
/// the SPDX document.
fn sbom_of(host: &str, repo: &str, artifact: &str, subject: &str) -> serde_json::Value {
    let (status, manifest) = get_json(host, &format!("/v2/{repo}/manifests/{artifact}"));
    assert_eq!(status, 200, "{manifest}");
    assert_eq!(manifest["artifactType"], "application/spdx+json");
    assert_eq!(manifest["subject"]["digest"], subject, "{manifest}");
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.empty.v1+json"
    );
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    let (status, body) = http(host, "GET", &format!("/v2/{repo}/blobs/{layer}"), &[], b"");
    assert_eq!(status, 200);
    serde_json::from_slice(&body).unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    olmpack_oci::image::digest::sha256_digest(bytes)[7..].to_owned()
}

/// Checks the SBOMs of the summary's bundle and catalog images; returns (subject, artifact).
fn check_sboms(summary: &serde_json::Value, out: &Path, found_by: &str) -> Vec<(String, String)> {
    let supply = summary["supply"]
        .as_array()
        .expect("the summary lists the SBOMs");
    let sboms: Vec<&serde_json::Value> = supply.iter().filter(|a| a["kind"] == "sbom").collect();
    // Three bundle images and the catalog image.
    assert_eq!(sboms.len(), 4, "{supply:#?}");
    let operator = summary["operator"]["pinned"].as_str().unwrap();
    let mut pairs = Vec::new();
    for (image, version) in summary["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["1.0.0", "1.1.0", "1.1.1"])
    {
        let pinned = image["pinned"].as_str().unwrap();
        let sbom = sboms
            .iter()
            .find(|a| a["image"] == pinned)
            .expect("an SBOM per bundle image");
        assert_eq!(sbom["foundBy"], found_by);
        let (host, repo, digest) = split_pinned(pinned);
        let doc = sbom_of(&host, &repo, sbom["digest"].as_str().unwrap(), &digest);
        assert_eq!(doc["spdxVersion"], "SPDX-2.3");
        assert_eq!(doc["packages"][0]["versionInfo"], digest);
        assert!(
            doc["documentNamespace"]
                .as_str()
                .unwrap()
                .ends_with(&format!("sha256-{}", &digest[7..]))
        );
        // Every file of the bundle, with its checksum.
        let csv_path = "manifests/guestbook-operator.clusterserviceversion.yaml";
        let csv = std::fs::read(out.join("bundle").join(version).join(csv_path)).unwrap();
        let file = doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["fileName"] == format!("./{csv_path}"))
            .unwrap_or_else(|| panic!("the CSV in {doc:#}"));
        assert!(
            file["checksums"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["algorithm"] == "SHA256" && c["checksumValue"] == sha256_hex(&csv)),
            "{file}"
        );
        assert!(
            file["checksums"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["algorithm"] == "SHA1"),
            "{file}"
        );
        assert!(
            doc["files"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["fileName"] == "./metadata/annotations.yaml")
        );
        if version == "1.1.1" {
            // The newest CSV runs the pushed operator image by digest: a pkg:oci package.
            let (_, op_repo, op_digest) = split_pinned(operator);
            let purl = format!(
                "pkg:oci/guestbook-operator@sha256%3A{}?repository_url={}",
                &op_digest[7..],
                format!("{host}/{op_repo}").replace(':', "%3A")
            );
            assert!(doc.to_string().contains(&purl), "{purl} in {doc:#}");
        }
        pairs.push((
            pinned.to_owned(),
            sbom["digest"].as_str().unwrap().to_owned(),
        ));
    }
    let catalog = summary["catalog"]["pinned"].as_str().unwrap();
    let sbom = sboms
        .iter()
        .find(|a| a["image"] == catalog)
        .expect("the catalog's SBOM");
    let (host, repo, digest) = split_pinned(catalog);
    let doc = sbom_of(&host, &repo, sbom["digest"].as_str().unwrap(), &digest);
    assert!(
        doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["fileName"] == "./configs/guestbook-operator/catalog.json"),
        "{doc:#}"
    );
    for bundle in summary["bundles"].as_array().unwrap() {
        let (_, _, bundle_digest) = split_pinned(bundle["pinned"].as_str().unwrap());
        assert!(
            doc.to_string().contains(&format!(
                "pkg:oci/guestbook-operator-bundle@sha256%3A{}",
                &bundle_digest[7..]
            )),
            "{doc:#}"
        );
    }
    pairs.push((
        catalog.to_owned(),
        sbom["digest"].as_str().unwrap().to_owned(),
    ));
    pairs
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Pushes a foreign artifact about `subject` and the fallback index naming it, as another
/// tool would; returns the artifact's digest.
async fn push_foreign_referrer(pinned: &str, subject: &serde_json::Value) -> String {
    use olmpack_oci::supply::oci::Repo;
    olmpack::install_crypto_provider();
    let access = olmpack_oci::image::registry::RegistryAccess::default();
    let repo = Repo::connect(pinned, &access).await.unwrap();
    let config = repo
        .ensure_blob("application/vnd.oci.empty.v1+json", b"{}")
        .await
        .unwrap();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.example.foreign",
        "config": config,
        "layers": [config],
        "subject": subject,
    });
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let digest = olmpack_oci::image::digest::sha256_digest(&bytes);
    repo.put_manifest(
        &repo.at_digest(&digest),
        &bytes,
        "application/vnd.oci.image.manifest.v1+json",
    )
    .await
    .unwrap();
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest, "size": bytes.len(), "artifactType": "application/vnd.example.foreign"}],
    });
    let tag = format!("sha256-{}", &subject["digest"].as_str().unwrap()[7..]);
    repo.put_manifest(
        &repo.at_tag(&tag),
        &serde_json::to_vec(&index).unwrap(),
        "application/vnd.oci.image.index.v1+json",
    )
    .await
    .unwrap();
    digest
}

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_sbom_attached_by_the_tag_schema_where_the_registry_has_no_referrers_api()
{
    if tool(Tool::Registry).is_none() {
        return;
    }
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let project = project();
    let target = format!("{}/acme", registry.host());

    // The dry run names every step and the digests the push will have.
    let dry = ok(release(&project, &target, &["--dry-run"]).output().unwrap());
    assert!(
        stderr(&dry)
            .contains("sbom           [changes] 4 SPDX SBOM(s) to attach, 0 attached before"),
        "{}",
        stderr(&dry)
    );
    let planned = json(&dry);
    // Another tool already attached something to the first bundle image (through the same
    // fallback tag); olmpack must keep it.
    let first = &planned["bundles"][0];
    let (_, _, digest) = split_pinned(first["pinned"].as_str().unwrap());
    let layout = olmpack_oci::image::layout::Layout::open(&project.out.join("images/bundle-1.0.0"));
    assert!(layout.is_err(), "a dry run writes no layout");
    // The foreign referrer's subject need not exist yet in docker-registry 2.8.
    let subject = serde_json::json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest, "size": 1});
    let foreign = push_foreign_referrer(first["pinned"].as_str().unwrap(), &subject).await;

    let run = ok(release(&project, &target, &[]).output().unwrap());
    let summary = json(&run);
    assert_eq!(summary["bundles"][0]["digest"], first["digest"]);
    for (pinned, artifact) in check_sboms(&summary, &project.out, "tag-schema") {
        let (host, repo, digest) = split_pinned(&pinned);
        // docker-registry 2.8 has no referrers API ...
        let (status, _) = get_json(&host, &format!("/v2/{repo}/referrers/{digest}"));
        assert_eq!(status, 404);
        // ... so the index at the fallback tag lists the SBOM.
        let (status, index) = get_json(
            &host,
            &format!("/v2/{repo}/manifests/sha256-{}", &digest[7..]),
        );
        assert_eq!(status, 200);
        let listed: Vec<&str> = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["digest"].as_str().unwrap())
            .collect();
        assert!(listed.contains(&artifact.as_str()), "{index}");
        let sbom_entry = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["digest"] == artifact)
            .unwrap();
        assert_eq!(sbom_entry["artifactType"], "application/spdx+json");
        if digest == first["digest"] {
            assert!(
                listed.contains(&foreign.as_str()),
                "the foreign referrer was dropped: {index}"
            );
        }
    }

    // A re-run attaches nothing again.
    let again = ok(release(&project, &target, &[]).output().unwrap());
    assert!(
        stderr(&again)
            .contains("sbom           [unchanged] 0 SPDX SBOM(s) to attach, 4 attached before"),
        "{}",
        stderr(&again)
    );
    assert!(
        stderr(&again).contains("nothing to do: the release is complete"),
        "{}",
        stderr(&again)
    );
    assert_eq!(json(&again)["supply"], summary["supply"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_sbom_attached_by_the_referrers_api_where_the_registry_has_one() {
    if tool(Tool::Olareg).is_none() {
        return;
    }
    let registry = ReferrersRegistry::start().await.unwrap();
    let project = project();
    let target = format!("{}/acme", registry.host());
    let run = release(&project, &target, &[]).output().unwrap();
    assert!(
        run.status.success(),
        "{}\n{}",
        stderr(&run),
        registry.log_tail()
    );
    let summary = json(&run);
    for (pinned, artifact) in check_sboms(&summary, &project.out, "referrers-api") {
        let (host, repo, digest) = split_pinned(&pinned);
        let (status, index) = get_json(&host, &format!("/v2/{repo}/referrers/{digest}"));
        assert_eq!(status, 200);
        let entry = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["digest"] == artifact)
            .unwrap_or_else(|| panic!("{artifact} in {index}"));
        assert_eq!(entry["artifactType"], "application/spdx+json");
        // No fallback tag is written where the API exists.
        let (status, _) = get_json(
            &host,
            &format!("/v2/{repo}/manifests/sha256-{}", &digest[7..]),
        );
        assert_eq!(status, 404, "{pinned}");
    }
    let again = ok(release(&project, &target, &[]).output().unwrap());
    assert!(
        stderr(&again).contains("nothing to do: the release is complete"),
        "{}",
        stderr(&again)
    );
}

/// `cosign verify --key KEY IMAGE` against a plain-HTTP test registry, without a transparency
/// log: the output and whether it verified.
fn cosign_verify(cosign: &Path, key: &Path, image: &str, home: &Path) -> (bool, String) {
    let output = Command::new(cosign)
        .args([
            "verify",
            "--key",
            &key.display().to_string(),
            "--insecure-ignore-tlog=true",
            "--allow-http-registry=true",
            "--allow-insecure-registry=true",
            "--output",
            "json",
            image,
        ])
        .env("HOME", home)
        .env("TUF_ROOT", home.join("tuf"))
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// Every bundle and catalog image of `summary` verifies with `key`; the operator image (not
/// signed by olmpack) does not.
fn check_signatures(cosign: &Path, key: &Path, summary: &serde_json::Value, home: &Path) {
    let mut images: Vec<&str> = summary["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["pinned"].as_str().unwrap())
        .collect();
    images.push(summary["catalog"]["pinned"].as_str().unwrap());
    let signatures: Vec<&serde_json::Value> = summary["supply"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "signature")
        .collect();
    assert_eq!(signatures.len(), images.len(), "{:#}", summary["supply"]);
    for image in &images {
        let (verified, text) = cosign_verify(cosign, key, image, home);
        assert!(verified, "cosign verify {image}:\n{text}");
        let (_, _, digest) = split_pinned(image);
        assert!(text.contains(&digest), "{text}");
        assert!(signatures.iter().any(|s| s["image"] == *image));
    }
    let operator = summary["operator"]["pinned"].as_str().unwrap();
    let (verified, text) = cosign_verify(cosign, key, operator, home);
    assert!(!verified, "the unsigned operator image verified:\n{text}");
}

const PASSWORD: &str = "correct-horse-battery-staple-7";

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_signature_with_a_cosign_key_verifies_with_cosign() {
    let (Some(cosign), Some(_)) = (tool(Tool::Cosign), tool(Tool::Registry)) else {
        return;
    };
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let project = project();
    let keys = cosign_key_pair(&cosign);
    let key = keys.path().join("cosign.key");
    assert!(
        std::fs::read_to_string(&key)
            .unwrap()
            .contains("ENCRYPTED SIGSTORE PRIVATE KEY")
    );
    let target = format!("{}/acme", registry.host());
    let sign_key = key.display().to_string();

    let dry = ok(
        release(&project, &target, &["--dry-run", "--sign-key", &sign_key])
            .env("COSIGN_PASSWORD", PASSWORD)
            .output()
            .unwrap(),
    );
    assert!(
        stderr(&dry).contains("sign           [changes] 4 image(s) to sign with key "),
        "{}",
        stderr(&dry)
    );

    let run = ok(release(&project, &target, &["--sign-key", &sign_key])
        .env("COSIGN_PASSWORD", PASSWORD)
        .env("RUST_LOG", "trace")
        .output()
        .unwrap());
    let everything = format!("{}{}", String::from_utf8_lossy(&run.stdout), stderr(&run));
    assert!(!everything.contains(PASSWORD), "the password was printed");
    let summary = json(&run);
    check_signatures(
        &cosign,
        &keys.path().join("cosign.pub"),
        &summary,
        keys.path(),
    );

    // A re-run with the same key signs nothing again.
    let again = ok(release(&project, &target, &["--sign-key", &sign_key])
        .env("COSIGN_PASSWORD", PASSWORD)
        .output()
        .unwrap());
    assert!(
        stderr(&again).contains("sign           [unchanged] 0 image(s) to sign with key "),
        "{}",
        stderr(&again)
    );
    assert!(stderr(&again).contains("nothing to do: the release is complete"));
    assert_eq!(json(&again)["supply"], summary["supply"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_signature_with_a_pkcs8_key_verifies_with_cosign() {
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let (Some(cosign), Some(_)) = (tool(Tool::Cosign), tool(Tool::Olareg)) else {
        return;
    };
    let registry = ReferrersRegistry::start().await.unwrap();
    let project = project();
    let keys = tempfile::tempdir().unwrap();
    let secret = p256::SecretKey::from_slice(&[0x42; 32]).unwrap();
    let key = keys.path().join("key.pem");
    std::fs::write(
        &key,
        secret.to_pkcs8_pem(LineEnding::LF).unwrap().as_bytes(),
    )
    .unwrap();
    let public = keys.path().join("key.pub");
    std::fs::write(
        &public,
        secret
            .public_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap(),
    )
    .unwrap();
    let target = format!("{}/acme", registry.host());
    let run = ok(release(
        &project,
        &target,
        &["--sign-key", &key.display().to_string()],
    )
    .env_remove("COSIGN_PASSWORD")
    .output()
    .unwrap());
    check_signatures(&cosign, &public, &json(&run), keys.path());
}

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_signature_bad_key_or_wrong_password_names_the_step_and_tags_nothing() {
    let (Some(cosign), Some(_)) = (tool(Tool::Cosign), tool(Tool::Registry)) else {
        return;
    };
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let project = project();
    let keys = cosign_key_pair(&cosign);
    let key = keys.path().join("cosign.key").display().to_string();
    let garbage = keys.path().join("garbage.key");
    std::fs::write(
        &garbage,
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let target = format!("{}/acme", registry.host());
    let wrong = "wrong-password-1234";
    let cases = [
        (
            key.as_str(),
            Some(wrong),
            "the password does not open the key (wrong COSIGN_PASSWORD, or a damaged key)",
        ),
        (
            key.as_str(),
            None,
            "the key is encrypted; set its password in COSIGN_PASSWORD",
        ),
        (
            garbage.to_str().unwrap(),
            Some(wrong),
            "not an EC P-256 private key (cosign signs with ECDSA P-256)",
        ),
    ];
    for (path, password, message) in cases {
        let mut cmd = release(&project, &target, &["--sign-key", path]);
        cmd.env("RUST_LOG", "trace").env_remove("COSIGN_PASSWORD");
        if let Some(password) = password {
            cmd.env("COSIGN_PASSWORD", password);
        }
        let failed = cmd.output().unwrap();
        assert_eq!(failed.status.code(), Some(2), "{}", stderr(&failed));
        let text = stderr(&failed);
        assert!(text.contains("release step \"sign\" failed"), "{text}");
        assert!(text.contains(&format!("{path}: {message}")), "{text}");
        assert!(!text.contains(wrong) && !String::from_utf8_lossy(&failed.stdout).contains(wrong));
        assert!(
            !project.out.join("images").exists(),
            "nothing is built before the key is read"
        );
    }
    // Nothing reached the registry: no repository, no tag.
    let (status, catalog) = get_json(&registry.host(), "/v2/_catalog");
    assert_eq!(status, 200);
    assert_eq!(catalog["repositories"], serde_json::json!([]), "{catalog}");
}

/// The key id `olmpack release` names in its sign step (`… to sign with key ID, …`).
fn key_id(text: &str) -> String {
    let after = text
        .split("to sign with key ")
        .nth(1)
        .unwrap_or_else(|| panic!("no sign step in:\n{text}"));
    after.split(',').next().unwrap().to_owned()
}

/// Deletes the manifest `digest` of `repo` from the registry (which also drops its tags).
fn delete_manifest(host: &str, repo: &str, digest: &str) {
    let (status, body) = http(
        host,
        "DELETE",
        &format!("/v2/{repo}/manifests/{digest}"),
        &[],
        b"",
    );
    assert_eq!(status, 202, "{}", String::from_utf8_lossy(&body));
}

/// Deletes the blob of the signature payload of signature manifest `digest` of `repo`,
/// keeping the manifest (a registry that lost a blob, or garbage-collected it wrongly).
fn delete_signature_payload(host: &str, repo: &str, digest: &str) {
    let path = format!("/v2/{repo}/manifests/{digest}");
    let (status, body) = http(host, "GET", &path, &[("Accept", ACCEPT_ALL)], b"");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let manifest: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let layer = manifest["layers"][0]["digest"].as_str().unwrap();
    let blob = format!("/v2/{repo}/blobs/{layer}");
    let (status, body) = http(host, "DELETE", &blob, &[], b"");
    assert_eq!(status, 202, "{}", String::from_utf8_lossy(&body));
    let (status, _) = http(host, "HEAD", &blob, &[], b"");
    assert_eq!(status, 404, "the payload blob is gone");
    let (status, _) = http(host, "HEAD", &path, &[("Accept", ACCEPT_ALL)], b"");
    assert_eq!(status, 200, "the signature manifest is kept");
}

/// What the registry lost, from a summary: the repository and digest to delete, and the lines
/// (after the key id) the next release must print.
type Loss = fn(&serde_json::Value, &str) -> (String, String, String);

/// How the registry loses it: host, repository, digest.
type Delete = fn(&str, &str, &str);

/// `release --push --sign-key` checks what `release-state.json` claims against the registry
/// before saying `unchanged` (issue 44): a deleted signature image, a signature image whose
/// payload blob was deleted (the manifest kept), and a deleted catalog manifest are each
/// published again, and cosign verifies every signature afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_release_republishes_what_the_registry_lost_and_signs_it_again() {
    let (Some(cosign), Some(_)) = (tool(Tool::Cosign), tool(Tool::Registry)) else {
        return;
    };
    let signature_deleted: Loss = |summary, key| {
        let catalog = summary["catalog"]["pinned"].as_str().unwrap();
        let signature = summary["supply"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["kind"] == "signature" && a["image"] == catalog)
            .unwrap();
        let (_, repo, _) = split_pinned(catalog);
        let lines = format!(
            "  9. push           [unchanged] 0 image(s) to push, 5 already at their digest\n  10. sbom           [unchanged] 0 SPDX SBOM(s) to attach, 4 attached before\n  11. sign           [republish] 1 image(s) to sign with key {key}, 3 signed before\n    {catalog} (signed before, missing from the registry)\n"
        );
        (
            repo,
            signature["digest"].as_str().unwrap().to_owned(),
            lines,
        )
    };
    let catalog_deleted: Loss = |summary, key| {
        let catalog = &summary["catalog"];
        let (_, repo, digest) = split_pinned(catalog["pinned"].as_str().unwrap());
        let lines = format!(
            "  9. push           [republish] 1 image(s) to push, 4 already at their digest\n    {} (pushed before as {digest}, missing from the registry)\n  10. sbom           [unchanged] 0 SPDX SBOM(s) to attach, 4 attached before\n  11. sign           [unchanged] 0 image(s) to sign with key {key}, 4 signed before\n",
            catalog["reference"].as_str().unwrap()
        );
        (repo, digest, lines)
    };
    let keys = cosign_key_pair(&cosign);
    let sign_key = keys.path().join("cosign.key").display().to_string();
    let public = keys.path().join("cosign.pub");
    let rows: [(&str, Loss, Delete); 3] = [
        ("signature deleted", signature_deleted, delete_manifest),
        (
            "signature payload blob deleted, manifest kept",
            signature_deleted,
            delete_signature_payload,
        ),
        ("catalog manifest deleted", catalog_deleted, delete_manifest),
    ];
    for (what, loss, delete) in rows {
        let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
        let project = project();
        let target = format!("{}/acme", registry.host());
        let run = || {
            release(&project, &target, &["--sign-key", &sign_key])
                .env("COSIGN_PASSWORD", PASSWORD)
                .output()
                .unwrap()
        };
        let first = ok(run());
        let summary = json(&first);
        let key = key_id(&stderr(&first));
        let (repo, digest, lines) = loss(&summary, &key);
        delete(&registry.host(), &repo, &digest);
        let catalog = summary["catalog"]["pinned"].as_str().unwrap();
        let (host, repo, digest) = split_pinned(catalog);
        let reference = summary["catalog"]["reference"].as_str().unwrap();
        let tag = reference.rsplit(':').next().unwrap();
        let tag_status = || {
            let path = format!("/v2/{repo}/manifests/{tag}");
            http(&host, "HEAD", &path, &[("Accept", ACCEPT_ALL)], b"").0
        };
        let (verified, _) = cosign_verify(&cosign, &public, catalog, keys.path());
        assert!(
            !verified || tag_status() == 404,
            "{what}: the loss is not visible"
        );

        let again = run();
        assert_eq!(again.status.code(), Some(0), "{what}: {}", stderr(&again));
        assert!(
            stderr(&again).contains(&lines),
            "{what}: {}",
            stderr(&again)
        );
        assert!(
            stderr(&again).contains("and pushed it"),
            "{what}: {}",
            stderr(&again)
        );
        check_signatures(&cosign, &public, &json(&again), keys.path());
        assert_eq!(
            tag_status(),
            200,
            "{what}: the catalog's tag is back ({digest})"
        );
        let third = ok(run());
        assert!(
            stderr(&third).contains("nothing to do: the release is complete"),
            "{what}: {}",
            stderr(&third)
        );
    }
}

/// A directory holding a fresh `cosign generate-key-pair` (`cosign.key` under [`PASSWORD`],
/// `cosign.pub`).
fn cosign_key_pair(cosign: &std::path::Path) -> tempfile::TempDir {
    let keys = tempfile::tempdir().unwrap();
    let generated = Command::new(cosign)
        .args(["generate-key-pair"])
        .current_dir(keys.path())
        .env("COSIGN_PASSWORD", PASSWORD)
        .env("HOME", keys.path())
        .output()
        .unwrap();
    assert!(generated.status.success(), "{}", stderr(&generated));
    keys
}
