//! OpenShift's own version gates on a bundle, judged against one OpenShift release:
//!
//! - **which catalogs carry it**: Red Hat's operator pipeline reads the bundle's
//!   `com.redhat.openshift.versions` annotation (and image label) and adds the bundle to the
//!   catalog (index image) of each OpenShift release it names ([`CatalogVersions`]). No
//!   cluster reads the annotation: a release it leaves out simply does not offer the bundle.
//! - **which cluster upgrades it blocks**: OpenShift's OLM reads the `olm.maxOpenShiftVersion`
//!   property of every installed ClusterServiceVersion and, while one is below the cluster's
//!   next minor release or is invalid, sets the `operator-lifecycle-manager` ClusterOperator's
//!   `Upgradeable` condition to False ([`upgrade_gate`]).
//!
//! Pure: values in, verdicts out. `bundle validate --platform openshift-4.N` and `upgrade olm
//! --platform openshift-4.N` both judge by this module.

use std::fmt;

use serde_json::Value;

use crate::version::parse_tolerant;

/// The bundle annotation Red Hat's pipeline chooses a bundle's OpenShift catalogs by.
pub const VERSIONS_ANNOTATION: &str = "com.redhat.openshift.versions";

/// The property OpenShift's OLM reads a bundle's highest OpenShift release from.
pub const MAX_VERSION_PROPERTY: &str = "olm.maxOpenShiftVersion";

/// An OpenShift release, `major.minor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpenShiftRelease {
    /// The major version (4).
    pub major: u64,
    /// The minor version.
    pub minor: u64,
}

impl OpenShiftRelease {
    /// OpenShift 4.`minor`.
    pub const fn four(minor: u64) -> Self {
        OpenShiftRelease { major: 4, minor }
    }

    /// The next minor release (4.14 → 4.15).
    pub const fn next_minor(self) -> Self {
        OpenShiftRelease {
            major: self.major,
            minor: self.minor + 1,
        }
    }

    /// The release as OpenShift's OLM compares it: 4.23 and 5.0 are the same release.
    fn normalized(self) -> Self {
        if self == OpenShiftRelease::four(23) {
            OpenShiftRelease { major: 5, minor: 0 }
        } else {
            self
        }
    }
}

impl fmt::Display for OpenShiftRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The OpenShift releases whose catalogs carry a bundle, as its `com.redhat.openshift.versions`
/// says (Red Hat's "Managing OpenShift Versions"; the letter `v` before each version, no
/// spaces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogVersions {
    /// `v4.12`: 4.12 and every later release.
    AndLater(OpenShiftRelease),
    /// `=v4.12`: 4.12 only.
    Only(OpenShiftRelease),
    /// `v4.12-v4.14`: 4.12 to 4.14, both included.
    Range(OpenShiftRelease, OpenShiftRelease),
    /// `v4.5,v4.6` or `v4.6,v4.5`: the two comma lists the pipeline still accepts, for
    /// historical reasons; both mean `v4.5` (4.5 and later). Any other list is refused.
    Legacy,
}

/// Why a `com.redhat.openshift.versions` value is not one Red Hat's pipeline reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionsError {
    /// The value is empty.
    #[error(
        "the value is empty; Red Hat's pipeline reads a release (v4.14: 4.14 and later), =v4.14 (4.14 only) or a range (v4.14-v4.16)"
    )]
    Empty,
    /// The value holds a space.
    #[error("{0:?} holds a space, which Red Hat's pipeline does not allow")]
    Space(String),
    /// A comma list other than the two legacy ones.
    #[error(
        "{0:?}: Red Hat's pipeline allows a comma only in the legacy values v4.5,v4.6 and v4.6,v4.5 (both meaning v4.5 and later) and adds a bundle with any other list to no OpenShift catalog"
    )]
    List(String),
    /// A version is not `v<major>.<minor>`.
    #[error(
        "{value:?}: {part:?} is not a release Red Hat's pipeline reads (v<major>.<minor>, e.g. v4.14)"
    )]
    Version {
        /// The whole value.
        value: String,
        /// The part that is not a version.
        part: String,
    },
    /// A range whose start is after its end.
    #[error("{0:?}: the range holds no release (it starts after it ends)")]
    EmptyRange(String),
}

impl CatalogVersions {
    /// Reads a `com.redhat.openshift.versions` value.
    pub fn parse(value: &str) -> Result<Self, VersionsError> {
        if value.is_empty() {
            return Err(VersionsError::Empty);
        }
        if value.contains(char::is_whitespace) {
            return Err(VersionsError::Space(value.to_owned()));
        }
        if value.contains(',') {
            return match value {
                "v4.5,v4.6" | "v4.6,v4.5" => Ok(CatalogVersions::Legacy),
                _ => Err(VersionsError::List(value.to_owned())),
            };
        }
        let release = |part: &str| {
            release(part).ok_or_else(|| VersionsError::Version {
                value: value.to_owned(),
                part: part.to_owned(),
            })
        };
        if let Some(only) = value.strip_prefix('=') {
            return Ok(CatalogVersions::Only(release(only)?));
        }
        match value.split_once('-') {
            None => Ok(CatalogVersions::AndLater(release(value)?)),
            Some((from, to)) => {
                let (from, to) = (release(from)?, release(to)?);
                if from > to {
                    return Err(VersionsError::EmptyRange(value.to_owned()));
                }
                Ok(CatalogVersions::Range(from, to))
            }
        }
    }

    /// Whether the catalog of OpenShift `release` carries the bundle.
    pub fn carries(&self, release: OpenShiftRelease) -> bool {
        match *self {
            CatalogVersions::AndLater(from) => release >= from,
            CatalogVersions::Only(only) => release == only,
            CatalogVersions::Range(from, to) => (from..=to).contains(&release),
            CatalogVersions::Legacy => release >= OpenShiftRelease::four(5),
        }
    }

    /// The releases, in words: `4.12 and later`, `4.12 only`, `4.12 to 4.14`.
    pub fn describe(&self) -> String {
        match self {
            CatalogVersions::AndLater(from) => format!("{from} and later"),
            CatalogVersions::Only(only) => format!("{only} only"),
            CatalogVersions::Range(from, to) => format!("{from} to {to}"),
            CatalogVersions::Legacy => "4.5 and later (a legacy comma list)".to_owned(),
        }
    }
}

/// Why OpenShift `release`'s catalog lacks a bundle, by its `com.redhat.openshift.versions`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CatalogGap {
    /// The value names other releases.
    #[error("OpenShift's catalog for {release} does not carry the bundle: {value:?} names {}", versions.describe())]
    LeftOut {
        /// The annotation's value.
        value: String,
        /// The releases it names.
        versions: CatalogVersions,
        /// The release whose catalog lacks the bundle.
        release: OpenShiftRelease,
    },
    /// The value is not one Red Hat's pipeline reads.
    #[error("{0}; which OpenShift catalogs carry the bundle cannot be told")]
    Unreadable(VersionsError),
}

/// Why OpenShift `release`'s catalog lacks a bundle whose `com.redhat.openshift.versions` is
/// `value`; `None` when it carries the bundle.
pub fn catalog_gap(value: &str, release: OpenShiftRelease) -> Option<CatalogGap> {
    match CatalogVersions::parse(value) {
        Err(why) => Some(CatalogGap::Unreadable(why)),
        Ok(versions) if !versions.carries(release) => Some(CatalogGap::LeftOut {
            value: value.to_owned(),
            versions,
            release,
        }),
        Ok(_) => None,
    }
}

/// `v<major>.<minor>` as a release.
fn release(text: &str) -> Option<OpenShiftRelease> {
    let (major, minor) = text.strip_prefix('v')?.split_once('.')?;
    let number = |s: &str| {
        (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    Some(OpenShiftRelease {
        major: number(major)?,
        minor: number(minor)?,
    })
}

/// What OpenShift's OLM finds wrong with a CSV's `olm.maxOpenShiftVersion` properties, in its
/// words; any of these blocks every upgrade of the cluster.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidMax {
    /// The property is given more than once.
    #[error(r#"defining more than one "olm.maxOpenShiftVersion" property is not allowed"#)]
    MoreThanOne,
    /// The value is an empty string.
    #[error(r#"value cannot be "" (an empty string)"#)]
    Empty,
    /// The value is not a (tolerant) semantic version.
    #[error("failed to parse {value:?} as semver: {why}")]
    NotSemver {
        /// The value, without its quotes.
        value: String,
        /// blang's reason.
        why: String,
    },
    /// The value has a patch, pre-release or build part.
    #[error(
        "property olm.maxOpenShiftVersion must specify only <major>.<minor> version, got invalid value {0}"
    )]
    NotMajorMinor(String),
}

/// The release a CSV's `olm.maxOpenShiftVersion` property `values` name (none when there is no
/// such property), read as OpenShift's OLM reads it: the value's JSON text without its quotes
/// as a tolerant semver of only major and minor. A JSON number is read from serde's text of
/// it, which drops trailing zeros (`4.10` as a number reads as 4.1 — write it as a string).
pub fn max_openshift_version(values: &[Value]) -> Result<Option<OpenShiftRelease>, InvalidMax> {
    let value = match values {
        [] => return Ok(None),
        [one] => one,
        _ => return Err(InvalidMax::MoreThanOne),
    };
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let text = text.trim_matches('"');
    if text.is_empty() {
        return Err(InvalidMax::Empty);
    }
    let version = parse_tolerant(text).map_err(|why| InvalidMax::NotSemver {
        value: text.to_owned(),
        why,
    })?;
    if version.patch != 0 || !version.pre.is_empty() || !version.build.is_empty() {
        return Err(InvalidMax::NotMajorMinor(version.to_string()));
    }
    Ok(Some(OpenShiftRelease {
        major: version.major,
        minor: version.minor,
    }))
}

/// What OpenShift's OLM on a cluster at `current` does while a CSV with the
/// `olm.maxOpenShiftVersion` property `values` is installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpgradeGate {
    /// Nothing: no property, or its release is the next minor or later.
    Open,
    /// Upgrades to the next minor release are blocked: the CSV's maximum is below it.
    Blocked {
        /// The CSV's `olm.maxOpenShiftVersion`.
        max: OpenShiftRelease,
        /// The release the cluster cannot upgrade to.
        next: OpenShiftRelease,
    },
    /// Every upgrade is blocked: the property is invalid.
    Invalid(InvalidMax),
}

/// What OpenShift's OLM on a cluster at `current` does about a CSV whose
/// `olm.maxOpenShiftVersion` properties are `values` (4.23 and 5.0 count as one release, as
/// OLM counts them).
pub fn upgrade_gate(current: OpenShiftRelease, values: &[Value]) -> UpgradeGate {
    let max = match max_openshift_version(values) {
        Ok(Some(max)) => max,
        Ok(None) => return UpgradeGate::Open,
        Err(invalid) => return UpgradeGate::Invalid(invalid),
    };
    let next = current.normalized().next_minor();
    if max.normalized() >= next {
        return UpgradeGate::Open;
    }
    UpgradeGate::Blocked {
        max,
        next: current.next_minor(),
    }
}

impl UpgradeGate {
    /// The line OpenShift's OLM writes for CSV `namespace/csv` into the
    /// `operator-lifecycle-manager` ClusterOperator's `Upgradeable=False` message (reason
    /// `IncompatibleOperatorsInstalled`); `None` when the gate is open.
    pub fn condition_line(&self, namespace: &str, csv: &str) -> Option<String> {
        match self {
            UpgradeGate::Open => None,
            UpgradeGate::Blocked { max, .. } => Some(format!(
                "maximum supported OCP version for {namespace}/{csv} is {max}"
            )),
            UpgradeGate::Invalid(why) => Some(format!(
                "{namespace}/{csv} has invalid {MAX_VERSION_PROPERTY} properties: {why}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_parse_as_red_hats_pipeline_documents_them() {
        use CatalogVersions::*;
        let table: [(&str, Result<CatalogVersions, &str>); 14] = [
            ("v4.12", Ok(AndLater(OpenShiftRelease::four(12)))),
            ("=v4.12", Ok(Only(OpenShiftRelease::four(12)))),
            (
                "v4.12-v4.14",
                Ok(Range(
                    OpenShiftRelease::four(12),
                    OpenShiftRelease::four(14),
                )),
            ),
            (
                "v4.14-v4.14",
                Ok(Range(
                    OpenShiftRelease::four(14),
                    OpenShiftRelease::four(14),
                )),
            ),
            ("v4.5,v4.6", Ok(Legacy)),
            ("v4.6,v4.5", Ok(Legacy)),
            (
                "",
                Err(
                    "the value is empty; Red Hat's pipeline reads a release (v4.14: 4.14 and later), =v4.14 (4.14 only) or a range (v4.14-v4.16)",
                ),
            ),
            (
                "v4.12 - v4.14",
                Err("\"v4.12 - v4.14\" holds a space, which Red Hat's pipeline does not allow"),
            ),
            (
                "v4.12,v4.13",
                Err(
                    "\"v4.12,v4.13\": Red Hat's pipeline allows a comma only in the legacy values v4.5,v4.6 and v4.6,v4.5 (both meaning v4.5 and later) and adds a bundle with any other list to no OpenShift catalog",
                ),
            ),
            (
                "4.12",
                Err(
                    "\"4.12\": \"4.12\" is not a release Red Hat's pipeline reads (v<major>.<minor>, e.g. v4.14)",
                ),
            ),
            (
                "v4.12.1",
                Err(
                    "\"v4.12.1\": \"v4.12.1\" is not a release Red Hat's pipeline reads (v<major>.<minor>, e.g. v4.14)",
                ),
            ),
            (
                "v4.12-",
                Err(
                    "\"v4.12-\": \"\" is not a release Red Hat's pipeline reads (v<major>.<minor>, e.g. v4.14)",
                ),
            ),
            (
                "=4.12",
                Err(
                    "\"=4.12\": \"4.12\" is not a release Red Hat's pipeline reads (v<major>.<minor>, e.g. v4.14)",
                ),
            ),
            (
                "v4.14-v4.12",
                Err("\"v4.14-v4.12\": the range holds no release (it starts after it ends)"),
            ),
        ];
        for (value, want) in table {
            let got = CatalogVersions::parse(value).map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_owned), "{value:?}");
        }
    }

    #[test]
    fn catalogs_carry_the_releases_the_value_names() {
        let carried = |value: &str| -> Vec<u64> {
            let versions = CatalogVersions::parse(value).unwrap();
            (1..=22)
                .filter(|&m| versions.carries(OpenShiftRelease::four(m)))
                .collect()
        };
        assert_eq!(carried("v4.20"), [20, 21, 22]);
        assert_eq!(carried("=v4.14"), [14]);
        assert_eq!(carried("v4.12-v4.14"), [12, 13, 14]);
        assert_eq!(carried("v4.6,v4.5"), (5..=22).collect::<Vec<_>>());
        let later = CatalogVersions::parse("v4.20").unwrap();
        assert!(later.carries(OpenShiftRelease { major: 5, minor: 0 }));
        assert_eq!(later.describe(), "4.20 and later");
        assert_eq!(
            CatalogVersions::parse("v4.12-v4.14").unwrap().describe(),
            "4.12 to 4.14"
        );
        assert_eq!(
            CatalogVersions::parse("=v4.12").unwrap().describe(),
            "4.12 only"
        );
    }

    #[test]
    fn a_catalog_gap_says_which_releases_the_value_names() {
        let gap =
            |value: &str| catalog_gap(value, OpenShiftRelease::four(14)).map(|g| g.to_string());
        assert_eq!(gap("v4.12-v4.14"), None);
        assert_eq!(gap("v4.6,v4.5"), None);
        assert_eq!(
            gap("v4.15"),
            Some("OpenShift's catalog for 4.14 does not carry the bundle: \"v4.15\" names 4.15 and later".to_owned())
        );
        assert_eq!(
            gap("=v4.13"),
            Some("OpenShift's catalog for 4.14 does not carry the bundle: \"=v4.13\" names 4.13 only".to_owned())
        );
        assert_eq!(
            gap("v4.10-v4.13"),
            Some("OpenShift's catalog for 4.14 does not carry the bundle: \"v4.10-v4.13\" names 4.10 to 4.13".to_owned())
        );
        assert_eq!(
            gap("v4.13 "),
            Some("\"v4.13 \" holds a space, which Red Hat's pipeline does not allow; which OpenShift catalogs carry the bundle cannot be told".to_owned())
        );
    }

    #[test]
    fn max_openshift_version_gates_upgrades_as_openshifts_olm_does() {
        let gate = |current: u64, values: &[Value]| {
            let gate = upgrade_gate(OpenShiftRelease::four(current), values);
            gate.condition_line("ns", "op.v1")
        };
        let blocked = |max: &str| {
            Some(format!(
                "maximum supported OCP version for ns/op.v1 is {max}"
            ))
        };
        let invalid = |why: &str| {
            Some(format!(
                "ns/op.v1 has invalid olm.maxOpenShiftVersion properties: {why}"
            ))
        };
        let table = [
            (14, vec![], None),
            (14, vec![json!("4.8")], blocked("4.8")),
            (14, vec![json!("4.14")], blocked("4.14")),
            (14, vec![json!("v4.14")], blocked("4.14")),
            (14, vec![json!(" 4.14 ")], blocked("4.14")),
            (14, vec![json!("4.014")], blocked("4.14")),
            (14, vec![json!("4.15")], None),
            (14, vec![json!("4.15.0")], None),
            (14, vec![json!("5")], None),
            (14, vec![json!("\"4.20\"")], None),
            (14, vec![json!(4.8)], blocked("4.8")),
            (22, vec![json!("4.22")], blocked("4.22")),
            (22, vec![json!("4.23")], None),
            (22, vec![json!("5.0")], None),
            (
                14,
                vec![json!("")],
                invalid(r#"value cannot be "" (an empty string)"#),
            ),
            (
                14,
                vec![json!("4.15.1")],
                invalid(
                    "property olm.maxOpenShiftVersion must specify only <major>.<minor> version, got invalid value 4.15.1",
                ),
            ),
            (
                14,
                vec![json!("4.15.0-rc1")],
                invalid(
                    "property olm.maxOpenShiftVersion must specify only <major>.<minor> version, got invalid value 4.15.0-rc1",
                ),
            ),
            (
                14,
                vec![json!("4.15-rc1")],
                invalid(
                    r#"failed to parse "4.15-rc1" as semver: Short version cannot contain PreRelease/Build meta data"#,
                ),
            ),
            // blang's tolerant parse puts a 0 before a part not led by a digit, and says so.
            (
                14,
                vec![json!("four")],
                invalid(
                    r#"failed to parse "four" as semver: Invalid character(s) found in major number "0four""#,
                ),
            ),
            (
                14,
                vec![json!("4.15"), json!("4.16")],
                invalid(
                    r#"defining more than one "olm.maxOpenShiftVersion" property is not allowed"#,
                ),
            ),
        ];
        for (current, values, want) in table {
            assert_eq!(gate(current, &values), want, "4.{current} {values:?}");
        }
        assert_eq!(
            upgrade_gate(OpenShiftRelease::four(14), &[json!("4.8")]),
            UpgradeGate::Blocked {
                max: OpenShiftRelease::four(8),
                next: OpenShiftRelease::four(15)
            }
        );
    }
}
