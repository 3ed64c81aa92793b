//! The operator's release history: which `WebApp` versions each release serves and stores.
//! [`crate::manifests`] builds a release's CRD from this table; the bundler packages one
//! bundle per entry.
//!
//! Guarantees (checked by tests): exactly one storage version per release; the storage
//! version never moves backwards; a version once stored stays listed in `spec.versions`
//! (possibly `served: false`) so that `status.storedVersions` stays valid on upgrade; a
//! release with more than one listed version has a conversion webhook.

use crate::api::Version;

/// How one release lists one CRD version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionEntry {
    pub version: Version,
    pub served: bool,
    pub storage: bool,
    /// Deprecation warning returned by the apiserver to clients of this version.
    pub deprecation: Option<&'static str>,
}

/// One operator release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperatorRelease {
    /// Semantic version without a leading `v`.
    pub version: &'static str,
    /// The CRD versions, oldest first.
    pub crd_versions: &'static [VersionEntry],
}

const V1ALPHA1_DEPRECATED: &str =
    "apps.olmpack.dev/v1alpha1 WebApp is deprecated; use apps.olmpack.dev/v1";

const fn entry(version: Version, served: bool, storage: bool) -> VersionEntry {
    VersionEntry {
        version,
        served,
        storage,
        deprecation: None,
    }
}

const fn deprecated(version: Version, served: bool) -> VersionEntry {
    VersionEntry {
        version,
        served,
        storage: false,
        deprecation: Some(V1ALPHA1_DEPRECATED),
    }
}

const V1_0: &[VersionEntry] = &[
    deprecated(Version::V1alpha1, false),
    entry(Version::V1beta1, true, false),
    entry(Version::V1, true, true),
];

/// Every release, oldest first.
pub const RELEASES: &[OperatorRelease] = &[
    OperatorRelease {
        version: "0.1.0",
        crd_versions: &[entry(Version::V1alpha1, true, true)],
    },
    OperatorRelease {
        version: "0.2.0",
        crd_versions: &[
            entry(Version::V1alpha1, true, false),
            entry(Version::V1beta1, true, true),
        ],
    },
    OperatorRelease {
        version: "0.3.0",
        crd_versions: &[
            deprecated(Version::V1alpha1, true),
            entry(Version::V1beta1, true, false),
            entry(Version::V1, true, true),
        ],
    },
    OperatorRelease {
        version: "1.0.0",
        crd_versions: V1_0,
    },
    OperatorRelease {
        version: "1.0.1",
        crd_versions: V1_0,
    },
];

impl OperatorRelease {
    /// The release called `version` (with or without a leading `v`).
    pub fn find(version: &str) -> Option<&'static OperatorRelease> {
        let version = version.strip_prefix('v').unwrap_or(version);
        RELEASES.iter().find(|r| r.version == version)
    }

    /// The newest release.
    pub fn latest() -> &'static OperatorRelease {
        RELEASES.last().expect("the release table is not empty")
    }

    /// The storage version.
    pub fn storage_version(&self) -> Version {
        self.crd_versions
            .iter()
            .find(|e| e.storage)
            .map(|e| e.version)
            .unwrap_or(Version::V1)
    }

    /// Whether the CRD needs the conversion webhook (more than one listed version).
    pub fn needs_conversion_webhook(&self) -> bool {
        self.crd_versions.len() > 1
    }

    /// The operator image of this release.
    pub fn image(&self) -> String {
        format!("quay.io/olmpack/webapp-operator:v{}", self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_has_one_storage_version_moving_forward() {
        let mut previous: Option<&OperatorRelease> = None;
        for release in RELEASES {
            let storage = release.crd_versions.iter().filter(|e| e.storage).count();
            assert_eq!(storage, 1, "release {}", release.version);
            if let Some(prev) = previous {
                assert!(release.storage_version() >= prev.storage_version());
                for old in prev.crd_versions {
                    assert!(
                        release
                            .crd_versions
                            .iter()
                            .any(|e| e.version == old.version),
                        "release {} drops {} listed by {}",
                        release.version,
                        old.version.name(),
                        prev.version
                    );
                }
                let prev_v = semver::Version::parse(prev.version).unwrap();
                assert!(semver::Version::parse(release.version).unwrap() > prev_v);
            }
            previous = Some(release);
        }
    }

    #[test]
    fn find_accepts_a_leading_v() {
        assert_eq!(OperatorRelease::find("v0.2.0").unwrap().version, "0.2.0");
        assert!(OperatorRelease::find("9.9.9").is_none());
        assert_eq!(OperatorRelease::latest().version, "1.0.1");
    }
}
