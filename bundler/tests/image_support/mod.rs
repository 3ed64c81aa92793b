//! Helpers shared by the `image_*` integration tests.
#![allow(dead_code)]

pub mod proxy;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use olmpack_envtest::binaries::Tool;
use olmpack_oci::image::layout::{ImageIndex, ImageManifest, Layout};
use olmpack_oci::image::{
    auth::Credentials, build::BuildOptions, media_type, registry::RegistryAccess,
    registry::RetryPolicy,
};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/image")
        .join(name)
}

/// Every file under `dir`, keyed by relative path.
pub fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

pub fn options(tag: &str) -> BuildOptions {
    BuildOptions {
        tag: Some(tag.to_owned()),
        ..Default::default()
    }
}

/// Runs a real tool; panics with its output if it fails.
pub fn run(tool: Tool, args: &[&str]) -> String {
    let bin = tool
        .path()
        .expect("the tool is installed (cargo xtask setup)");
    let output = Command::new(&bin).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{} {args:?} failed:\n{}\n{}",
        bin.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Registry access for tests: given credentials, quick retries.
pub fn access(credentials: Credentials) -> RegistryAccess {
    RegistryAccess {
        credentials,
        auth_files: Default::default(),
        retry: RetryPolicy {
            attempts: 6,
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_millis(400),
        },
        read_timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_secs(2),
        ..Default::default()
    }
}

/// A plain oci-client for checking what the registry holds, independent of olmpack's code.
pub struct Inspector {
    client: Client,
    auth: RegistryAuth,
}

impl Inspector {
    pub fn new(auth: RegistryAuth) -> Self {
        let client = Client::try_from(ClientConfig {
            protocol: ClientProtocol::Http,
            ..Default::default()
        })
        .unwrap();
        Self { client, auth }
    }

    pub async fn manifest(&self, reference: &str) -> Option<(Vec<u8>, String)> {
        let reference: Reference = reference.parse().unwrap();
        match self
            .client
            .pull_manifest_raw(&reference, &self.auth, media_type::ALL_MANIFESTS)
            .await
        {
            Ok((bytes, digest)) => Some((bytes.to_vec(), digest)),
            Err(_) => None,
        }
    }

    pub async fn blob(&self, repo: &str, digest: &str) -> Option<Vec<u8>> {
        let reference: Reference = format!("{repo}@{digest}").parse().unwrap();
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
        let mut out = Vec::new();
        let descriptor = OciDescriptor {
            digest: digest.to_owned(),
            ..Default::default()
        };
        self.client
            .pull_blob(&reference, &descriptor, &mut out)
            .await
            .ok()
            .map(|()| out)
    }

    pub async fn blob_exists(&self, repo: &str, digest: &str) -> bool {
        let reference: Reference = format!("{repo}@{digest}").parse().unwrap();
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
        self.client.blob_exists(&reference, digest).await.unwrap()
    }

    /// Pulls the image `reference` back completely and checks every byte against `layout`.
    pub async fn assert_same_as_layout(&self, reference: &str, layout: &Path, tag: &str) {
        let layout = Layout::open(layout).unwrap();
        let root = layout.find(Some(tag)).unwrap();
        let (bytes, digest) = self.manifest(reference).await.expect("the image is pushed");
        assert_eq!(
            digest, root.digest,
            "{reference} resolves to the layout's image"
        );
        assert_eq!(bytes, layout.read_blob(&root.digest).unwrap());
        let repo = reference.rsplit_once(':').unwrap().0;
        for digest in graph_blobs(&layout, &root.digest, &root.media_type) {
            let pulled = self
                .blob(repo, &digest)
                .await
                .expect("every blob is pushed");
            assert_eq!(pulled, layout.read_blob(&digest).unwrap(), "blob {digest}");
        }
    }

    /// The registry invariant: every manifest of `layout` that `repo` holds has all its blobs
    /// (and child manifests) there too. Returns how many of the layout's manifests it holds.
    pub async fn assert_no_dangling_manifest(&self, repo: &str, layout: &Path) -> usize {
        let layout = Layout::open(layout).unwrap();
        let mut held = 0;
        for manifest in manifests_of(&layout) {
            let Some((bytes, _)) = self.manifest(&format!("{repo}@{}", manifest.0)).await else {
                continue;
            };
            held += 1;
            if media_type::is_index(&manifest.1) {
                let index: ImageIndex = serde_json::from_slice(&bytes).unwrap();
                for child in index.manifests {
                    assert!(
                        self.manifest(&format!("{repo}@{}", child.digest))
                            .await
                            .is_some(),
                        "index {} is in the registry but its manifest {} is not",
                        manifest.0,
                        child.digest
                    );
                }
            } else {
                let image: ImageManifest = serde_json::from_slice(&bytes).unwrap();
                for blob in std::iter::once(&image.config).chain(&image.layers) {
                    assert!(
                        self.blob_exists(repo, &blob.digest).await,
                        "manifest {} is in the registry but its blob {} is not",
                        manifest.0,
                        blob.digest
                    );
                }
            }
        }
        held
    }
}

/// (digest, media type) of every manifest and index in a layout's image graph.
pub fn manifests_of(layout: &Layout) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<(String, String)> = layout
        .index()
        .manifests
        .iter()
        .map(|d| (d.digest.clone(), d.media_type.clone()))
        .collect();
    while let Some((digest, media)) = stack.pop() {
        if media_type::is_index(&media) {
            let index: ImageIndex = layout.read_json(&digest, "index").unwrap();
            stack.extend(
                index
                    .manifests
                    .iter()
                    .map(|d| (d.digest.clone(), d.media_type.clone())),
            );
        }
        out.push((digest, media));
    }
    out
}

/// Every config and layer digest under a root.
pub fn graph_blobs(layout: &Layout, digest: &str, media: &str) -> Vec<String> {
    if media_type::is_index(media) {
        let index: ImageIndex = layout.read_json(digest, "index").unwrap();
        index
            .manifests
            .iter()
            .flat_map(|d| graph_blobs(layout, &d.digest, &d.media_type))
            .collect()
    } else {
        let image: ImageManifest = layout.read_json(digest, "manifest").unwrap();
        std::iter::once(image.config.digest)
            .chain(image.layers.into_iter().map(|l| l.digest))
            .collect()
    }
}

/// Copies a directory tree (files and directories only).
pub fn copy_tree(from: &Path, to: &Path) {
    olmpack_testkit::files::copy_tree(from, to).unwrap();
}
