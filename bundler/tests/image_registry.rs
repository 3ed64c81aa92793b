//! Pushing, pulling and resolving against a real registry (CNCF distribution), with real
//! clients on the other side: opm, skopeo and a plain oci-client.

mod image_support;

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use image_support::{Inspector, access, fixture, options, run};
use oci_client::secrets::RegistryAuth as OciAuth;
use olmpack::image::{build::build_bundle_image, build::build_catalog_image};
use olmpack_envtest::binaries::Tool;
use olmpack_oci::image::layer::{self, LayerOptions, LayerSource};
use olmpack_oci::image::layout::{
    Descriptor, ImageIndex, ImageManifest, Layout, LayoutWriter, Platform,
};
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::{
    auth::Credentials, auth::Secret, media_type, push::push_layout, resolve::resolve_digest,
};
use olmpack_testkit::{registry::Registry, registry::RegistryAuth};
use serde_json::{Value, json};

const USER: &str = "pusher";
const PASSWORD: &str = "s3cret-Pa55";

fn private_registry_auth() -> RegistryAuth {
    RegistryAuth::Htpasswd {
        username: USER.into(),
        password: PASSWORD.into(),
    }
}

fn basic() -> Credentials {
    Credentials::Basic {
        username: USER.into(),
        password: Secret::new(PASSWORD),
    }
}

/// Builds the fixture bundle and catalog images under `dir`.
async fn build_fixtures(dir: &Path) -> (String, String) {
    let bundle =
        build_bundle_image(&fixture("bundle"), &dir.join("bundle"), &options("v1")).unwrap();
    let catalog = build_catalog_image(
        &fixture("catalog"),
        &dir.join("catalog"),
        &options("v1"),
        None,
        &Progress::Quiet,
    )
    .await
    .unwrap();
    (bundle.digest, catalog.digest)
}

#[tokio::test]
async fn push_anonymous_and_with_auth_then_pull_back_the_same_bytes() {
    olmpack::install_crypto_provider();
    let anonymous = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let private = Registry::start(private_registry_auth()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (bundle_digest, catalog_digest) = build_fixtures(dir.path()).await;

    for (registry, credentials, inspector_auth) in [
        (&anonymous, Credentials::Anonymous, OciAuth::Anonymous),
        (
            &private,
            basic(),
            OciAuth::Basic(USER.into(), PASSWORD.into()),
        ),
    ] {
        let inspector = Inspector::new(inspector_auth);
        let access = access(credentials);
        for (layout, digest) in [("bundle", &bundle_digest), ("catalog", &catalog_digest)] {
            let target = format!("{}/olmpack/{layout}:v1", registry.host());
            let source = format!("{}:v1", dir.path().join(layout).display());
            let report = push_layout(&source, &target, &access, &Progress::Quiet)
                .await
                .unwrap_or_else(|e| panic!("push {target}: {e:?}\n{}", registry.log_tail()));
            assert_eq!(&report.digest, digest);
            assert_eq!(
                report.pinned,
                format!("{}/olmpack/{layout}@{digest}", registry.host())
            );
            assert!(report.blobs_pushed > 0);
            inspector
                .assert_same_as_layout(&target, &dir.path().join(layout), "v1")
                .await;
            assert_eq!(&resolve_digest(&target, &access).await.unwrap(), digest);
            assert_eq!(
                &resolve_digest(&report.pinned, &access).await.unwrap(),
                digest,
                "a digest reference resolves to itself"
            );

            // Pushing again sends no blob: the registry has them all.
            let again = push_layout(&source, &target, &access, &Progress::Quiet)
                .await
                .unwrap();
            assert_eq!(again.blobs_pushed, 0);
            assert_eq!(
                again.blobs_present,
                report.blobs_pushed + report.blobs_present
            );
        }
    }

    // Without credentials the private registry refuses, and says so without retrying forever.
    let err = push_layout(
        &format!("{}:v1", dir.path().join("bundle").display()),
        &format!("{}/olmpack/denied:v1", private.host()),
        &access(Credentials::Basic {
            username: USER.into(),
            password: Secret::new("wrong"),
        }),
        &Progress::Quiet,
    )
    .await
    .unwrap_err();
    let chain = error_chain(&err);
    assert!(
        chain.starts_with("checking blob sha256:")
            && chain.contains(&format!(
                ": {} denied access (HTTP 401); check the registry credentials",
                private.host()
            )),
        "{chain}"
    );
    assert!(!chain.contains("wrong"), "{chain}");
    let missing = resolve_digest(
        &format!("{}/olmpack/nothing:v1", anonymous.host()),
        &access(Credentials::Anonymous),
    )
    .await
    .unwrap_err();
    assert!(error_chain(&missing).starts_with(&format!(
        "failed to resolve {}/olmpack/nothing:v1",
        anonymous.host()
    )));
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(" | ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::test]
async fn opm_renders_the_pushed_catalog_and_bundle_images() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    build_fixtures(dir.path()).await;
    let access = access(Credentials::Anonymous);
    for layout in ["bundle", "catalog"] {
        push_layout(
            &format!("{}:v1", dir.path().join(layout).display()),
            &format!("{}/olmpack/{layout}:v1", registry.host()),
            &access,
            &Progress::Quiet,
        )
        .await
        .unwrap();
    }

    let catalog_ref = format!("{}/olmpack/catalog:v1", registry.host());
    let rendered = run(
        Tool::Opm,
        &["render", &catalog_ref, "--use-http", "-o", "json"],
    );
    let from_image = json_stream(&rendered);
    let from_dir = json_stream(&run(
        Tool::Opm,
        &["render", fixture("catalog").to_str().unwrap(), "-o", "json"],
    ));
    assert_eq!(
        from_image, from_dir,
        "opm reads the same catalog from the image"
    );
    assert_eq!(from_image.len(), 4);

    let bundle_ref = format!("{}/olmpack/bundle:v1", registry.host());
    let rendered = json_stream(&run(
        Tool::Opm,
        &["render", &bundle_ref, "--use-http", "-o", "json"],
    ));
    assert_eq!(rendered.len(), 1);
    assert_eq!(rendered[0]["schema"], "olm.bundle");
    assert_eq!(rendered[0]["name"], "webapp-operator.v1.0.0");
    assert_eq!(rendered[0]["package"], "webapp-operator");
    assert_eq!(rendered[0]["image"], bundle_ref);
    let from_dir = json_stream(&run(
        Tool::Opm,
        &["render", fixture("bundle").to_str().unwrap(), "-o", "json"],
    ));
    assert_eq!(rendered[0]["properties"], from_dir[0]["properties"]);
}

fn json_stream(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test]
async fn skopeo_copies_olmpack_layouts_and_inspects_olmpack_pushes() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(private_registry_auth()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (bundle_digest, catalog_digest) = build_fixtures(dir.path()).await;
    let creds = format!("{USER}:{PASSWORD}");
    let access = access(basic());

    for (layout, digest) in [("bundle", &bundle_digest), ("catalog", &catalog_digest)] {
        // skopeo reads olmpack's layout and pushes it unchanged.
        let copied = format!("{}/skopeo/{layout}:v1", registry.host());
        run(
            Tool::Skopeo,
            &[
                "copy",
                "--dest-tls-verify=false",
                "--dest-creds",
                &creds,
                &format!("oci:{}:v1", dir.path().join(layout).display()),
                &format!("docker://{copied}"),
            ],
        );
        assert_eq!(&resolve_digest(&copied, &access).await.unwrap(), digest);

        // skopeo reads what olmpack pushed.
        let pushed = format!("{}/olmpack/{layout}:v1", registry.host());
        push_layout(
            &format!("{}:v1", dir.path().join(layout).display()),
            &pushed,
            &access,
            &Progress::Quiet,
        )
        .await
        .unwrap();
        let inspected: Value = serde_json::from_str(&run(
            Tool::Skopeo,
            &[
                "inspect",
                "--tls-verify=false",
                "--creds",
                &creds,
                &format!("docker://{pushed}"),
            ],
        ))
        .unwrap();
        assert_eq!(&inspected["Digest"], digest.as_str());
        assert_eq!(inspected["Os"], "linux");
        let labels = &inspected["Labels"];
        if layout == "bundle" {
            assert_eq!(
                labels["operators.operatorframework.io.bundle.mediatype.v1"],
                "registry+v1"
            );
            assert_eq!(labels.as_object().unwrap().len(), 8);
        } else {
            assert_eq!(
                labels["operators.operatorframework.io.index.configs.v1"],
                "/configs"
            );
        }
    }
}

#[tokio::test]
async fn cli_push_with_docker_config_credentials_never_logs_them() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(private_registry_auth()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (bundle_digest, _) = build_fixtures(dir.path()).await;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let docker_config = dir.path().join("docker");
    std::fs::create_dir(&docker_config).unwrap();
    std::fs::write(
        docker_config.join("config.json"),
        json!({"auths": {registry.host(): {"auth": encoded}}}).to_string(),
    )
    .unwrap();

    let olmpack = |args: &[&str], env: &[(&str, &str)]| {
        let output = Command::new(env!("CARGO_BIN_EXE_olmpack"))
            .args(args)
            .env_remove("REGISTRY_AUTH_FILE")
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("OLMPACK_REGISTRY_USERNAME")
            .env_remove("OLMPACK_REGISTRY_PASSWORD")
            .env("OLMPACK_LOG", "trace")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        for secret in [PASSWORD, &encoded] {
            assert!(
                !stdout.contains(secret) && !stderr.contains(secret),
                "{secret} leaked:\n{stderr}"
            );
        }
        (output.status.code(), stdout, stderr)
    };
    let source = format!("{}:v1", dir.path().join("bundle").display());
    let target = format!("{}/cli/bundle:v1", registry.host());

    let (code, stdout, stderr) = olmpack(
        &["-vvv", "image", "push", &source, &target],
        &[("DOCKER_CONFIG", docker_config.to_str().unwrap())],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, format!("{bundle_digest}\n"));
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "trace logs were on"
    );

    let (code, stdout, stderr) = olmpack(
        &["-vvv", "image", "resolve", &target],
        &[("DOCKER_CONFIG", docker_config.to_str().unwrap())],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, format!("{bundle_digest}\n"));

    // Credentials from flags and the environment instead of a config file.
    let (code, stdout, stderr) = olmpack(
        &[
            "-vvv",
            "image",
            "push",
            &source,
            &format!("{}/cli/env:v1", registry.host()),
            "--username",
            USER,
        ],
        &[
            ("OLMPACK_REGISTRY_PASSWORD", PASSWORD),
            ("DOCKER_CONFIG", "/nonexistent"),
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, format!("{bundle_digest}\n"));

    // No credentials: a clear refusal, exit code 2.
    let (code, _, stderr) = olmpack(
        &["image", "push", &source, &target],
        &[("DOCKER_CONFIG", "/nonexistent"), ("HOME", "/nonexistent")],
    );
    assert_eq!(code, Some(2));
    assert!(
        stderr.lines().any(|l| l.starts_with("error: ")
            && l.ends_with(&format!(
                "{} denied access (HTTP 401); check the registry credentials",
                registry.host()
            ))),
        "{stderr}"
    );
}

#[test]
fn plain_http_is_refused_for_remote_hosts_unless_asked_for() {
    // A non-loopback registry is reached over HTTPS; with --insecure-http over HTTP. Nothing
    // listens on this documentation address, so both fail, but the scheme shows in the error.
    olmpack::install_crypto_provider();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut quick = access(Credentials::Anonymous);
    quick.retry.attempts = 1;
    quick.connect_timeout = std::time::Duration::from_millis(300);
    let reference = "192.0.2.1:5000/x/y:v1";
    let https = runtime
        .block_on(resolve_digest(reference, &quick))
        .unwrap_err();
    assert!(
        format!("{:?}", https).contains("https://192.0.2.1:5000"),
        "{https:?}"
    );
    quick.insecure_http = true;
    let http = runtime
        .block_on(resolve_digest(reference, &quick))
        .unwrap_err();
    assert!(
        format!("{:?}", http).contains("http://192.0.2.1:5000"),
        "{http:?}"
    );
}

/// Writes a two-platform "opm" base image index (plus an attestation entry) into a layout.
fn write_base_layout(dir: &Path, out: &Path) {
    let writer = LayoutWriter::create(out).unwrap();
    let mut manifests = Vec::new();
    for arch in ["amd64", "arm64"] {
        let root = dir.join(format!("rootfs-{arch}"));
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/opm"), format!("opm for {arch}")).unwrap();
        let entries = layer::collect(&[LayerSource {
            dir: root.join("bin"),
            dest: "bin".into(),
        }])
        .unwrap();
        let (written, digest, size) = writer
            .write_blob_with::<olmpack_oci::image::layout::LayoutError, _>(|w| {
                Ok(layer::write(&entries, LayerOptions::default(), w).unwrap())
            })
            .unwrap();
        let config = json!({
            "architecture": arch, "os": "linux",
            "config": {"Env": ["PATH=/bin"], "Entrypoint": ["/bin/opm"], "Labels": {"base": arch}},
            "rootfs": {"type": "layers", "diff_ids": [written.diff_id]},
            "history": [{"created_by": "ADD opm /bin/opm"}],
        });
        let config = writer.put_json(media_type::CONFIG, &config).unwrap();
        let manifest = ImageManifest {
            schema_version: 2,
            media_type: Some(media_type::MANIFEST.into()),
            config,
            layers: vec![Descriptor::new(media_type::DOCKER_LAYER_GZIP, digest, size)],
            annotations: None,
        };
        let mut descriptor = writer.put_json(media_type::MANIFEST, &manifest).unwrap();
        descriptor.platform = Some(Platform {
            architecture: arch.into(),
            ..Platform::linux_amd64()
        });
        manifests.push(descriptor);
    }
    // An attestation-like entry that must not become a platform of the catalog.
    let mut attestation = manifests[0].clone();
    attestation.platform = Some(Platform {
        architecture: "unknown".into(),
        os: "unknown".into(),
        ..Platform::linux_amd64()
    });
    manifests.push(attestation);
    let index = writer
        .put_json(media_type::INDEX, &ImageIndex::new(manifests))
        .unwrap();
    writer.finish(&index, Some("v1")).unwrap();
}

#[tokio::test]
async fn catalog_on_a_multi_platform_base_keeps_every_platform_and_runs_opm_serve() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(private_registry_auth()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let access = access(basic());
    write_base_layout(dir.path(), &dir.path().join("base"));
    let base_ref = format!("{}/base/opm:v1", registry.host());
    push_layout(
        &format!("{}:v1", dir.path().join("base").display()),
        &base_ref,
        &access,
        &Progress::Quiet,
    )
    .await
    .unwrap();

    let out = dir.path().join("catalog");
    let root = build_catalog_image(
        &fixture("catalog"),
        &out,
        &options("v1"),
        Some((&base_ref, &access)),
        &Progress::Quiet,
    )
    .await
    .unwrap();
    assert_eq!(root.media_type, media_type::INDEX);
    let layout = Layout::open(&out).unwrap();
    let index: ImageIndex = layout.read_json(&root.digest, "index").unwrap();
    let arches: Vec<&str> = index
        .manifests
        .iter()
        .map(|m| m.platform.as_ref().unwrap().architecture.as_str())
        .collect();
    assert_eq!(arches, ["amd64", "arm64"]);
    let mut catalog_layers = Vec::new();
    for entry in &index.manifests {
        let manifest: ImageManifest = layout.read_json(&entry.digest, "manifest").unwrap();
        assert_eq!(manifest.layers.len(), 2, "base layer + catalog layer");
        assert_eq!(
            manifest.layers[0].media_type,
            media_type::LAYER_GZIP,
            "docker media type mapped to OCI"
        );
        catalog_layers.push(manifest.layers[1].digest.clone());
        let config: Value = layout.read_json(&manifest.config.digest, "config").unwrap();
        let arch = &entry.platform.as_ref().unwrap().architecture;
        assert_eq!(&config["architecture"], arch.as_str());
        assert_eq!(config["config"]["Env"], json!(["PATH=/bin"]));
        assert_eq!(config["config"]["Labels"]["base"], arch.as_str());
        assert_eq!(
            config["config"]["Labels"]["operators.operatorframework.io.index.configs.v1"],
            "/configs"
        );
        assert_eq!(config["config"]["Entrypoint"], json!(["/bin/opm"]));
        assert_eq!(
            config["config"]["Cmd"],
            json!([
                "serve",
                "/configs",
                "--cache-dir=/tmp/cache",
                "--cache-enforce-integrity=false"
            ])
        );
        assert_eq!(config["rootfs"]["diff_ids"].as_array().unwrap().len(), 2);
        let history = config["history"].as_array().unwrap();
        let non_empty = history
            .iter()
            .filter(|h| h["empty_layer"] != json!(true))
            .count();
        assert_eq!(non_empty, 2, "history stays aligned with the layers");
    }
    assert_eq!(
        catalog_layers[0], catalog_layers[1],
        "one catalog layer shared by all platforms"
    );

    // The real opm serves the unpacked image with the image's own command line.
    let manifest: ImageManifest = layout
        .read_json(&index.manifests[0].digest, "manifest")
        .unwrap();
    let rootfs = dir.path().join("rootfs");
    for layer in &manifest.layers {
        let bytes = layout.read_blob(&layer.digest).unwrap();
        tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()))
            .unpack(&rootfs)
            .unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(rootfs.join("bin/opm")).unwrap(),
        "opm for amd64"
    );
    let config: Value = layout.read_json(&manifest.config.digest, "config").unwrap();
    let cache = dir.path().join("cache");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let args: Vec<String> = config["config"]["Cmd"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap()
                .replace("/configs", rootfs.join("configs").to_str().unwrap())
                .replace("/tmp/cache", cache.to_str().unwrap())
        })
        .chain([
            "-p".to_owned(),
            port.to_string(),
            "--pprof-addr=".to_owned(),
        ])
        .collect();
    let mut serve = tokio::process::Command::new(Tool::Opm.path().unwrap())
        .args(&args)
        .kill_on_drop(true)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut serving = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            serving = true;
            break;
        }
        if let Some(status) = serve.try_wait().unwrap() {
            let output = serve.wait_with_output().await.unwrap();
            panic!(
                "opm serve {args:?} exited {status}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    serve.kill().await.unwrap();
    assert!(serving, "opm serve {args:?} listens");

    // Push the index and read it back with skopeo.
    let target = format!("{}/olmpack/catalog-multi:v1", registry.host());
    push_layout(
        &format!("{}:v1", out.display()),
        &target,
        &access,
        &Progress::Quiet,
    )
    .await
    .unwrap();
    let raw: Value = serde_json::from_str(&run(
        Tool::Skopeo,
        &[
            "inspect",
            "--raw",
            "--tls-verify=false",
            "--creds",
            &format!("{USER}:{PASSWORD}"),
            &format!("docker://{target}"),
        ],
    ))
    .unwrap();
    assert_eq!(raw["manifests"].as_array().unwrap().len(), 2);
    Inspector::new(OciAuth::Basic(USER.into(), PASSWORD.into()))
        .assert_same_as_layout(&target, &out, "v1")
        .await;
}
