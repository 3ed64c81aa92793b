//! Image references (`host/repo:tag@digest`) and layout references (`DIR[:TAG]`).
//!
//! Registry references follow Docker's rules (oci-client's parser): a name without a host is
//! on `docker.io`, a name without tag or digest means `:latest`.

use std::net::IpAddr;
use std::path::PathBuf;

pub use oci_client::Reference;

/// Failure to parse a reference.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    /// The text is neither a registry reference nor an OCI layout path.
    #[error("{reference:?} is not a valid image reference")]
    Invalid {
        /// The reference as given.
        reference: String,
        /// The parser's complaint.
        #[source]
        source: oci_client::ParseError,
    },
    /// The reference is `LAYOUT:` with nothing after the colon.
    #[error("{reference:?}: the tag in an OCI layout reference must not be empty")]
    EmptyTag {
        /// The reference as given.
        reference: String,
    },
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::RefusesInput for ReferenceError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// Parses a registry image reference.
pub fn parse(reference: &str) -> Result<Reference, ReferenceError> {
    reference.parse().map_err(|source| ReferenceError::Invalid {
        reference: reference.to_owned(),
        source,
    })
}

/// An OCI layout directory and optionally the tag of one image in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutRef {
    /// The layout directory.
    pub path: PathBuf,
    /// The tag to pick from the layout (its `org.opencontainers.image.ref.name`); none picks the only image.
    pub tag: Option<String>,
}

/// Splits `DIR[:TAG]`: the text after the last `:` is a tag when it contains no `/`.
pub fn parse_layout_ref(text: &str) -> Result<LayoutRef, ReferenceError> {
    match text.rsplit_once(':') {
        Some((path, tag)) if !tag.contains('/') && !path.is_empty() => {
            if tag.is_empty() {
                return Err(ReferenceError::EmptyTag {
                    reference: text.to_owned(),
                });
            }
            Ok(LayoutRef {
                path: PathBuf::from(path),
                tag: Some(tag.to_owned()),
            })
        }
        _ => Ok(LayoutRef {
            path: PathBuf::from(text),
            tag: None,
        }),
    }
}

/// True when `registry` (a host with optional port) is a loopback address, where plain HTTP is
/// allowed without `--insecure-http`.
pub fn is_loopback(registry: &str) -> bool {
    let host = if let Some(rest) = registry.strip_prefix('[') {
        rest.split(']').next().unwrap_or(rest)
    } else {
        registry.rsplit_once(':').map_or(registry, |(h, _)| h)
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_refs_split_on_the_last_colon_without_slash() {
        let cases = [
            ("out", "out", None),
            ("out:v1", "out", Some("v1")),
            ("./a/b:latest", "./a/b", Some("latest")),
            ("/tmp/x:y/z", "/tmp/x:y/z", None),
        ];
        for (text, path, tag) in cases {
            let parsed = parse_layout_ref(text).unwrap();
            assert_eq!(parsed.path, PathBuf::from(path), "{text}");
            assert_eq!(parsed.tag.as_deref(), tag, "{text}");
        }
        assert_eq!(
            parse_layout_ref("out:").unwrap_err().to_string(),
            "\"out:\": the tag in an OCI layout reference must not be empty"
        );
    }

    #[test]
    fn only_loopback_hosts_count_as_loopback() {
        for host in [
            "127.0.0.1:5000",
            "localhost",
            "localhost:80",
            "[::1]:5000",
            "127.1.2.3",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "quay.io",
            "10.0.0.1:5000",
            "localhost.example.com",
            "[fe80::1]:5000",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn registry_references_default_to_docker_hub_and_latest() {
        let r = parse("127.0.0.1:5000/olmpack/catalog:v1").unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("127.0.0.1:5000", "olmpack/catalog", Some("v1"))
        );
        let r = parse("busybox").unwrap();
        assert_eq!(r.registry(), "docker.io");
        assert_eq!(r.repository(), "library/busybox");
        assert!(parse("has space/x").is_err());
        assert!(parse("example.com/Repo").is_err());
    }
}
