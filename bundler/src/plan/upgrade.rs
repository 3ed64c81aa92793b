//! Upgrade edges (`replaces`, `skips`, `olm.skipRange`) for every release of a plan.
//!
//! Policy `replaces-chain` (the default): each release replaces the newest older release that
//! is not `broken`, and skips every broken release newer than that one — so an installed broken
//! release still has an upgrade, and nothing upgrades *to* it. Explicit `replaces` (`""` for
//! none) and `skips` in the plan win over / add to the computed ones; `skipRange` is taken as
//! written. Policy `none`: only explicit edges.
//!
//! The catalog's channel entries use the same edges as the CSVs, so OLM v0 (which reads
//! channel entries) and anyone reading the CSV see one graph.

use std::collections::BTreeMap;

use super::{EdgePolicy, LoadedPlan};

/// The upgrade edges of one release.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Edges {
    pub replaces: Option<String>,
    pub skips: Vec<String>,
    pub skip_range: Option<String>,
}

/// Edges for every release, keyed by release version string.
pub fn edges(plan: &LoadedPlan) -> BTreeMap<String, Edges> {
    let sorted = plan.sorted_releases();
    let mut out = BTreeMap::new();
    for (i, (_, release)) in sorted.iter().enumerate() {
        let older = &sorted[..i];
        let (computed_replaces, computed_skips) = match plan.plan.upgrades.policy {
            EdgePolicy::None => (None, Vec::new()),
            EdgePolicy::ReplacesChain => {
                let replaced = older.iter().rposition(|(_, r)| !r.broken);
                let skipped_from = replaced.map_or(0, |p| p + 1);
                let skips = older[skipped_from..]
                    .iter()
                    .filter(|(_, r)| r.broken)
                    .map(|(_, r)| plan.bundle_name(&r.version))
                    .collect();
                (
                    replaced.map(|p| plan.bundle_name(&older[p].1.version)),
                    skips,
                )
            }
        };
        let replaces = match &release.replaces {
            Some(explicit) if explicit.is_empty() => None,
            Some(explicit) => Some(explicit.clone()),
            None => computed_replaces,
        };
        let mut skips: Vec<String> = computed_skips;
        skips.extend(release.skips.iter().cloned());
        skips.sort();
        skips.dedup();
        out.insert(
            release.version.clone(),
            Edges {
                replaces,
                skips,
                skip_range: release.skip_range.clone(),
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(releases: &str, policy: &str) -> LoadedPlan {
        let text = format!(
            "package: op\ndefaultChannel: stable\nchannels: [stable]\nupgrades: {{policy: {policy}}}\ncsv: {{displayName: Op, description: d, provider: {{name: p}}}}\nreleases:\n{releases}"
        );
        super::super::parse(std::path::Path::new("olmpack.yaml"), &text).unwrap()
    }

    #[test]
    fn replaces_chain_skips_broken_releases() {
        let p = plan(
            "- {version: 0.2.0, manifests: m}\n- {version: 0.1.0, manifests: m}\n- {version: 0.3.0, manifests: m, broken: true}\n- {version: 0.3.1, manifests: m, skipRange: '>=0.2.0 <0.3.1'}\n",
            "replaces-chain",
        );
        let e = edges(&p);
        assert_eq!(e["0.1.0"], Edges::default());
        assert_eq!(e["0.2.0"].replaces.as_deref(), Some("op.v0.1.0"));
        assert_eq!(e["0.3.0"].replaces.as_deref(), Some("op.v0.2.0"));
        assert_eq!(
            e["0.3.1"],
            Edges {
                replaces: Some("op.v0.2.0".into()),
                skips: vec!["op.v0.3.0".into()],
                skip_range: Some(">=0.2.0 <0.3.1".into()),
            }
        );
    }

    #[test]
    fn explicit_edges_win_and_none_policy_computes_nothing() {
        let p = plan(
            "- {version: 1.0.0, manifests: m}\n- {version: 1.1.0, manifests: m, replaces: '', skips: [op.v0.9.0]}\n",
            "replaces-chain",
        );
        let e = edges(&p);
        assert_eq!(e["1.1.0"].replaces, None);
        assert_eq!(e["1.1.0"].skips, vec!["op.v0.9.0".to_owned()]);
        let p = plan(
            "- {version: 1.0.0, manifests: m}\n- {version: 1.1.0, manifests: m}\n",
            "none",
        );
        assert_eq!(edges(&p)["1.1.0"], Edges::default());
    }
}
