//! SPDX 2.3 SBOMs (JSON) of images: the files in the image and the images
//! it references by digest.
//!
//! Contract:
//! - **Pure and deterministic.** [`build`] depends only on its [`SbomInput`]: `created` comes
//!   from the caller's `SOURCE_DATE_EPOCH` (0 when unset), the `documentNamespace` is derived
//!   from the image's repository and digest, files and packages are sorted, and identifiers
//!   are numbered in that order.
//! - **The image is the described package** (`DOCUMENT DESCRIBES`), with
//!   `primaryPackagePurpose: CONTAINER`, a `pkg:oci` purl and its manifest digest as version.
//!   Every file it holds is listed with the SHA1 checksum SPDX 2.3 requires (plus SHA256) and
//!   related with `CONTAINS`; the package's `packageVerificationCode` is computed from those
//!   SHA1s as SPDX 2.3 §7.9 defines it.
//! - **Referenced images** (the images the image's files name, as the caller lists them) are
//!   packages related with `DEPENDS_ON`. Those pinned by digest carry a `pkg:oci`
//!   purl with the digest as version; an image named only by tag is still listed, with
//!   `versionInfo: NOASSERTION` and no purl (a purl needs the digest).

use std::collections::BTreeSet;

use serde::Serialize;
use sha1::Sha1;
use sha2::{Digest as _, Sha256};

use crate::image::build::rfc3339;
use crate::image::digest::sha256_hex;
use crate::image::reference::{self, ReferenceError};

/// The media type of an SPDX JSON document (the SBOM artifact's `artifactType`).
pub const SPDX_JSON: &str = "application/spdx+json";

/// What goes into the SBOM of one image.
#[derive(Clone, Debug)]
pub struct SbomInput<'a> {
    /// The name the image is published as (`host/repo:tag`).
    pub reference: &'a str,
    /// The image's manifest (or index) digest.
    pub digest: &'a str,
    /// Every file in the image: absolute path in the image and contents.
    pub files: Vec<(String, &'a [u8])>,
    /// Images it references (`host/repo[:tag][@digest]`).
    pub references: Vec<String>,
    /// Seconds since the Unix epoch, for `creationInfo.created`.
    pub created: u64,
}

/// Failure to describe an image.
#[derive(Debug, thiserror::Error)]
pub enum SbomError {
    /// The image's digest is not `sha256:` and 64 hex digits, so it cannot serve as the
    /// package version and document namespace.
    #[error("SBOM of {image}: {digest:?} is not a sha256 digest")]
    Digest {
        /// The image described, as published.
        image: String,
        /// The digest given for it.
        digest: String,
    },
    /// The image's own name, or the name of an image it references, is not a valid image
    /// reference.
    #[error("SBOM of {image}: cannot name the referenced image")]
    Reference {
        /// The image described, as published.
        image: String,
        /// What is wrong with the reference.
        #[source]
        source: ReferenceError,
    },
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::RefusesInput for SbomError {
    fn refuses_input(&self) -> bool {
        false
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    spdx_version: &'static str,
    data_license: &'static str,
    #[serde(rename = "SPDXID")]
    spdx_id: &'static str,
    name: String,
    document_namespace: String,
    creation_info: CreationInfo,
    packages: Vec<Package>,
    files: Vec<File>,
    relationships: Vec<Relationship>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CreationInfo {
    created: String,
    creators: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    name: String,
    #[serde(rename = "SPDXID")]
    spdx_id: String,
    version_info: String,
    download_location: &'static str,
    files_analyzed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    package_verification_code: Option<VerificationCode>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    checksums: Vec<Checksum>,
    license_concluded: &'static str,
    license_declared: &'static str,
    copyright_text: &'static str,
    primary_package_purpose: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    external_refs: Vec<ExternalRef>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    has_files: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VerificationCode {
    package_verification_code_value: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Checksum {
    algorithm: &'static str,
    checksum_value: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ExternalRef {
    reference_category: &'static str,
    reference_type: &'static str,
    reference_locator: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct File {
    file_name: String,
    #[serde(rename = "SPDXID")]
    spdx_id: String,
    checksums: Vec<Checksum>,
    license_concluded: &'static str,
    copyright_text: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Relationship {
    spdx_element_id: String,
    relationship_type: &'static str,
    related_spdx_element: String,
}

const NOASSERTION: &str = "NOASSERTION";
const IMAGE_ID: &str = "SPDXRef-Image";

/// The SPDX 2.3 JSON document of one image, pretty-printed with a final newline.
pub fn build(input: &SbomInput<'_>) -> Result<Vec<u8>, SbomError> {
    let image = reference::parse(input.reference).map_err(|source| SbomError::Reference {
        image: input.reference.to_owned(),
        source,
    })?;
    let hex = sha256_hex(input.digest).ok_or_else(|| SbomError::Digest {
        image: input.reference.to_owned(),
        digest: input.digest.to_owned(),
    })?;
    let repository = format!("{}/{}", image.registry(), image.repository());

    let (files, sha1s) = file_entries(&input.files);
    let mut relationships = vec![Relationship {
        spdx_element_id: "SPDXRef-DOCUMENT".into(),
        relationship_type: "DESCRIBES",
        related_spdx_element: IMAGE_ID.into(),
    }];
    relationships.extend(files.iter().map(|f| Relationship {
        spdx_element_id: IMAGE_ID.into(),
        relationship_type: "CONTAINS",
        related_spdx_element: f.spdx_id.clone(),
    }));
    let mut packages = vec![image_package(&image, input.digest, hex, &files, sha1s)];
    let referenced: BTreeSet<&str> = input.references.iter().map(String::as_str).collect();
    for (i, text) in referenced.into_iter().enumerate() {
        let package = referenced_package(input.reference, text, i + 1)?;
        relationships.push(Relationship {
            spdx_element_id: IMAGE_ID.into(),
            relationship_type: "DEPENDS_ON",
            related_spdx_element: package.spdx_id.clone(),
        });
        packages.push(package);
    }

    let document = Document {
        spdx_version: "SPDX-2.3",
        data_license: "CC0-1.0",
        spdx_id: "SPDXRef-DOCUMENT",
        name: input.reference.to_owned(),
        document_namespace: format!(
            "https://olmpack.dev/spdx/{}/sha256-{hex}",
            repository.replace(':', "-")
        ),
        creation_info: CreationInfo {
            created: rfc3339(input.created),
            creators: vec![concat!("Tool: olmpack-", env!("CARGO_PKG_VERSION")).to_owned()],
        },
        packages,
        files,
        relationships,
    };
    let mut bytes = serde_json::to_vec_pretty(&document).expect("an SPDX document serializes");
    bytes.push(b'\n');
    Ok(bytes)
}

/// One SPDX file per file of the image, sorted by path and numbered in that order, and their
/// SHA1s (in the same order) for the package verification code.
fn file_entries(files: &[(String, &[u8])]) -> (Vec<File>, Vec<String>) {
    let mut sorted: Vec<&(String, &[u8])> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut sha1s = Vec::with_capacity(sorted.len());
    let entries = sorted
        .iter()
        .enumerate()
        .map(|(i, (path, contents))| {
            let sha1 = hex_of(&Sha1::digest(contents));
            sha1s.push(sha1.clone());
            File {
                file_name: format!(".{}", path),
                spdx_id: format!("SPDXRef-File-{}", i + 1),
                checksums: vec![
                    Checksum {
                        algorithm: "SHA1",
                        checksum_value: sha1,
                    },
                    Checksum {
                        algorithm: "SHA256",
                        checksum_value: hex_of(&Sha256::digest(contents)),
                    },
                ],
                license_concluded: NOASSERTION,
                copyright_text: NOASSERTION,
            }
        })
        .collect();
    (entries, sha1s)
}

/// The described package: the image itself (`digest`, whose hex is `hex`), holding `files`.
fn image_package(
    image: &reference::Reference,
    digest: &str,
    hex: &str,
    files: &[File],
    sha1s: Vec<String>,
) -> Package {
    Package {
        name: format!("{}/{}", image.registry(), image.repository()),
        spdx_id: IMAGE_ID.into(),
        version_info: digest.to_owned(),
        download_location: NOASSERTION,
        files_analyzed: true,
        package_verification_code: Some(VerificationCode {
            package_verification_code_value: verification_code(sha1s),
        }),
        checksums: vec![Checksum {
            algorithm: "SHA256",
            checksum_value: hex.to_owned(),
        }],
        license_concluded: NOASSERTION,
        license_declared: NOASSERTION,
        copyright_text: NOASSERTION,
        primary_package_purpose: "CONTAINER",
        external_refs: vec![purl_ref(
            image.repository(),
            image.registry(),
            digest,
            image.tag(),
        )],
        has_files: files.iter().map(|f| f.spdx_id.clone()).collect(),
    }
}

/// The `n`th image `image` references (`text`), as a package it depends on.
fn referenced_package(image: &str, text: &str, n: usize) -> Result<Package, SbomError> {
    let parsed = reference::parse(text).map_err(|source| SbomError::Reference {
        image: image.to_owned(),
        source,
    })?;
    let digest = parsed.digest().filter(|d| sha256_hex(d).is_some());
    Ok(Package {
        name: format!("{}/{}", parsed.registry(), parsed.repository()),
        spdx_id: format!("SPDXRef-Referenced-{n}"),
        version_info: digest.unwrap_or(NOASSERTION).to_owned(),
        download_location: NOASSERTION,
        files_analyzed: false,
        package_verification_code: None,
        checksums: Vec::new(),
        license_concluded: NOASSERTION,
        license_declared: NOASSERTION,
        copyright_text: NOASSERTION,
        primary_package_purpose: "CONTAINER",
        external_refs: digest
            .map(|d| purl_ref(parsed.repository(), parsed.registry(), d, parsed.tag()))
            .into_iter()
            .collect(),
        has_files: Vec::new(),
    })
}

fn purl_ref(repository: &str, registry: &str, digest: &str, tag: Option<&str>) -> ExternalRef {
    ExternalRef {
        reference_category: "PACKAGE-MANAGER",
        reference_type: "purl",
        reference_locator: purl(repository, registry, digest, tag),
    }
}

/// `pkg:oci/<name>@sha256%3A<hex>?repository_url=<registry>/<repository>[&tag=<tag>]`, the
/// purl spec's `oci` type: the name is the repository's last component, lowercase.
pub fn purl(repository: &str, registry: &str, digest: &str, tag: Option<&str>) -> String {
    let name = repository.rsplit('/').next().unwrap_or(repository);
    let mut purl = format!(
        "pkg:oci/{}@{}?repository_url={}",
        percent_encode(&name.to_lowercase()),
        percent_encode(digest),
        percent_encode(&format!("{registry}/{repository}"))
    );
    if let Some(tag) = tag {
        purl.push_str("&tag=");
        purl.push_str(&percent_encode(tag));
    }
    purl
}

/// Percent-encodes everything but unreserved characters and `/`.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// SPDX 2.3 §7.9: SHA1 of the sorted, concatenated lowercase-hex SHA1s of the files.
fn verification_code(mut sha1s: Vec<String>) -> String {
    sha1s.sort();
    hex_of(&Sha1::digest(sha1s.concat().as_bytes()))
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000001";

    fn input<'a>(files: Vec<(String, &'a [u8])>, references: Vec<String>) -> SbomInput<'a> {
        SbomInput {
            reference: "127.0.0.1:5000/acme/op-bundle:v1.0.0",
            digest: DIGEST,
            files,
            references,
            created: 0,
        }
    }

    #[test]
    fn purls_follow_the_oci_type() {
        assert_eq!(
            purl("acme/Op-Bundle", "127.0.0.1:5000", DIGEST, Some("v1.0.0")),
            format!(
                "pkg:oci/op-bundle@sha256%3A{}?repository_url=127.0.0.1%3A5000/acme/Op-Bundle&tag=v1.0.0",
                &DIGEST[7..]
            )
        );
    }

    #[test]
    fn the_verification_code_is_the_sha1_of_the_sorted_file_sha1s() {
        // SHA1("") and SHA1("a"), sorted: 86f7… before da39….
        let code = verification_code(vec![
            "da39a3ee5e6b4b0d3255bfef95601890afd80709".into(),
            "86f7e437faa5a7fce15d1ddcb9eaeaea377667b8".into(),
        ]);
        assert_eq!(
            code,
            hex_of(&Sha1::digest(
                b"86f7e437faa5a7fce15d1ddcb9eaeaea377667b8da39a3ee5e6b4b0d3255bfef95601890afd80709"
            ))
        );
    }

    #[test]
    fn files_and_references_are_sorted_and_deduplicated() {
        let a = build(&input(
            vec![("/b".into(), b"b"), ("/a".into(), b"a")],
            vec![
                format!("r.io/x/op@{DIGEST}"),
                "r.io/x/tagged:v1".into(),
                format!("r.io/x/op@{DIGEST}"),
            ],
        ))
        .unwrap();
        let b = build(&input(
            vec![("/a".into(), b"a"), ("/b".into(), b"b")],
            vec!["r.io/x/tagged:v1".into(), format!("r.io/x/op@{DIGEST}")],
        ))
        .unwrap();
        assert_eq!(a, b);
        let doc: serde_json::Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(doc["files"][0]["fileName"], "./a");
        assert_eq!(doc["packages"].as_array().unwrap().len(), 3);
        assert_eq!(doc["packages"][2]["versionInfo"], "NOASSERTION");
        assert!(doc["packages"][2].get("externalRefs").is_none());
    }

    #[test]
    fn a_digest_that_is_not_sha256_is_refused() {
        let mut bad = input(Vec::new(), Vec::new());
        bad.digest = "sha512:00";
        assert_eq!(
            build(&bad).unwrap_err().to_string(),
            "SBOM of 127.0.0.1:5000/acme/op-bundle:v1.0.0: \"sha512:00\" is not a sha256 digest"
        );
    }

    #[test]
    fn sbom_snapshot() {
        let sbom = build(&input(
            vec![
                (
                    "/manifests/op.clusterserviceversion.yaml".into(),
                    b"kind: ClusterServiceVersion\n",
                ),
                ("/metadata/annotations.yaml".into(), b"annotations: {}\n"),
            ],
            vec![format!("127.0.0.1:5000/acme/op@{DIGEST}")],
        ))
        .unwrap();
        insta::assert_snapshot!(String::from_utf8(sbom).unwrap());
    }
}
