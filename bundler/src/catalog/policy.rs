//! Channels for olmpack's own release plan: a pure function from releases and a policy to
//! `olm.channel` blobs (and deprecations).
//!
//! Contract:
//! - Promotion: with [`Policy::promote`], a release listed in `stable` is also in `fast` and
//!   `candidate`, one in `fast` also in `candidate` (only for those channels the plan uses).
//! - In each channel, releases are ordered by version; each non-broken release `replaces` the
//!   previous non-broken one and `skips` the broken releases between them; broken releases stay
//!   entries (installed copies can leave them) but nothing upgrades *to* them.
//! - With [`Policy::skip_range`], the newest entry of each channel gets
//!   `>=<oldest version in the channel> <its version>` (OLM v0 honours skipRange only on the
//!   head, so it is set on the head only).
//! - With [`Policy::per_minor_channels`], every channel `C` also gets `C-v<X>.<Y>` channels.
//! - Overrides in a [`ReleaseInput`] (replaces, skips, skipRange) win over computed values.
//! - Output is sorted (channels by name, entries by version): deterministic.

use std::collections::BTreeMap;

use super::declcfg::{
    Channel, ChannelEntry, Deprecation, DeprecationEntry, Reference, SCHEMA_BUNDLE, SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS,
};
use super::version::{Version, cmp_versions};

/// One released bundle as the plan describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseInput {
    /// Bundle (CSV) name, e.g. `webapp-operator.v1.2.0`.
    pub bundle: String,
    pub version: Version,
    /// Channels the release is published to (before promotion).
    pub channels: Vec<String>,
    pub replaces: Option<String>,
    pub skips: Option<Vec<String>>,
    pub skip_range: Option<String>,
    /// Deprecation message, when deprecated.
    pub deprecated: Option<String>,
    /// Never an upgrade target; skipped by the next release.
    pub broken: bool,
}

/// How channels are computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Promotion order, least stable first (default `candidate`, `fast`, `stable`).
    pub promotion: Vec<String>,
    pub promote: bool,
    pub per_minor_channels: bool,
    pub skip_range: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            promotion: vec!["candidate".into(), "fast".into(), "stable".into()],
            promote: true,
            per_minor_channels: false,
            skip_range: true,
        }
    }
}

/// A release plan that cannot become channels.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("release {bundle} is in no channel")]
    NoChannel { bundle: String },
    #[error("releases {a} and {b} have the same version {version}")]
    DuplicateVersion {
        a: String,
        b: String,
        version: String,
    },
}

/// Computes the channels (module contract).
pub fn compute_channels(
    package: &str,
    inputs: &[ReleaseInput],
    policy: &Policy,
) -> Result<Vec<Channel>, PolicyError> {
    let mut sorted: Vec<&ReleaseInput> = inputs.iter().collect();
    sorted.sort_by(|a, b| cmp_versions(&a.version, &b.version).then(a.bundle.cmp(&b.bundle)));
    for pair in sorted.windows(2) {
        if cmp_versions(&pair[0].version, &pair[1].version).is_eq() {
            return Err(PolicyError::DuplicateVersion {
                a: pair[0].bundle.clone(),
                b: pair[1].bundle.clone(),
                version: pair[0].version.to_string(),
            });
        }
    }
    let mut members: BTreeMap<String, Vec<&ReleaseInput>> = BTreeMap::new();
    for r in &sorted {
        if r.channels.is_empty() {
            return Err(PolicyError::NoChannel {
                bundle: r.bundle.clone(),
            });
        }
        let mut chans: Vec<String> = r.channels.clone();
        if policy.promote {
            for c in &r.channels {
                if let Some(pos) = policy.promotion.iter().position(|p| p == c) {
                    chans.extend(policy.promotion[..pos].iter().cloned());
                }
            }
        }
        if policy.per_minor_channels {
            let minors: Vec<String> = chans
                .iter()
                .map(|c| format!("{c}-v{}.{}", r.version.major, r.version.minor))
                .collect();
            chans.extend(minors);
        }
        chans.sort();
        chans.dedup();
        for c in chans {
            members.entry(c).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for (name, releases) in members {
        let mut entries = Vec::new();
        let mut previous: Option<&ReleaseInput> = None;
        let mut broken_since: Vec<String> = Vec::new();
        for r in &releases {
            let mut e = ChannelEntry {
                name: r.bundle.clone(),
                ..ChannelEntry::default()
            };
            if let Some(p) = previous {
                e.replaces = p.bundle.clone();
            }
            e.skips = broken_since.clone();
            if let Some(o) = &r.replaces {
                e.replaces = o.clone();
            }
            if let Some(o) = &r.skips {
                e.skips = o.clone();
            }
            if let Some(o) = &r.skip_range {
                e.skip_range = o.clone();
            }
            entries.push(e);
            if r.broken {
                broken_since.push(r.bundle.clone());
            } else {
                previous = Some(r);
                broken_since.clear();
            }
        }
        // A broken newest release: the channel head must not be broken-only; the last good
        // release stays reachable because the broken one replaces it.
        if policy.skip_range && releases.len() > 1 {
            let oldest = &releases[0].version;
            let newest = releases[releases.len() - 1];
            if newest.skip_range.is_none()
                && let Some(e) = entries.last_mut()
            {
                e.skip_range = format!(">={oldest} <{}", newest.version);
            }
        }
        out.push(Channel {
            origin: None,
            schema: SCHEMA_CHANNEL.to_owned(),
            name,
            package: package.to_owned(),
            entries,
            properties: Vec::new(),
        });
    }
    Ok(out)
}

/// The `olm.deprecations` blob for deprecated releases, if any.
pub fn deprecations(package: &str, inputs: &[ReleaseInput]) -> Option<Deprecation> {
    let mut entries: Vec<DeprecationEntry> = inputs
        .iter()
        .filter_map(|r| {
            r.deprecated.as_ref().map(|m| DeprecationEntry {
                reference: Reference {
                    schema: SCHEMA_BUNDLE.to_owned(),
                    name: r.bundle.clone(),
                },
                message: m.clone(),
            })
        })
        .collect();
    entries.sort_by(|a, b| a.reference.cmp(&b.reference));
    (!entries.is_empty()).then(|| Deprecation {
        origin: None,
        schema: SCHEMA_DEPRECATIONS.to_owned(),
        package: package.to_owned(),
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(v: &str, chans: &[&str], broken: bool) -> ReleaseInput {
        ReleaseInput {
            bundle: format!("op.v{v}"),
            version: Version::parse(v).unwrap(),
            channels: chans.iter().map(|s| s.to_string()).collect(),
            replaces: None,
            skips: None,
            skip_range: None,
            deprecated: None,
            broken,
        }
    }

    #[test]
    fn promotion_replaces_and_broken_skips() {
        let inputs = vec![
            rel("1.0.0", &["stable"], false),
            rel("1.1.0", &["candidate"], true),
            rel("1.2.0", &["fast"], false),
        ];
        let chans = compute_channels("op", &inputs, &Policy::default()).unwrap();
        let names: Vec<&str> = chans.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["candidate", "fast", "stable"]);
        let cand = &chans[0].entries;
        assert_eq!(cand[1].replaces, "op.v1.0.0");
        assert_eq!(cand[2].replaces, "op.v1.0.0");
        assert_eq!(cand[2].skips, vec!["op.v1.1.0".to_string()]);
        assert_eq!(cand[2].skip_range, ">=1.0.0 <1.2.0");
        assert_eq!(chans[2].entries.len(), 1);
        assert_eq!(chans[2].entries[0].skip_range, "");
    }
}
