//! The upgrade graph of a release plan: which release upgrades to which, in which channel.
//!
//! It is computed once from the plan ([`UpgradeGraph::from_plan`]) and is the only place upgrade
//! edges are decided: the CSVs' `replaces`, `skips` and `olm.skipRange` ([`Node::csv`]) and the
//! catalog's `olm.channel` entries ([`UpgradeGraph::channels`]) are both read from it, so OLM v0
//! (which reads channel entries) and anyone reading a CSV see one graph.
//!
//! Rules, in each channel (a release is a member of the channels it names, else the plan's
//! `channels`), members ordered by version:
//! - policy `replaces-chain` (the default): a release replaces the newest older member that is
//!   not `broken`, and skips the broken members between the two (every older broken member when
//!   there is none) — so an installed broken release still has an upgrade, and nothing after it
//!   upgrades *to* it. Policy `none`: nothing is computed.
//! - an explicit `replaces` wins over the computed one (`""`: no `replaces` at all); explicit
//!   `skips` are added to the computed ones; skips are sorted and deduplicated;
//! - `skipRange` is taken as written.
//!
//! A CSV holds one set of edges, but a release in several channels may have a different
//! predecessor in each. The CSV carries the edges of the release's *home channel*: the plan's
//! default channel when the release is in it, else the first channel the release names. When
//! the release's edges differ between its channels, a warning (`plan/channel-edges-differ`,
//! [`UpgradeGraph::findings`]) says so; the catalog keeps each channel's own edges, because a
//! channel entry that replaces a bundle outside the channel strands the channel's older releases.
//!
//! [`UpgradeGraph::edges`] lists every edge (replaces, skips, skipRange) per channel, for code
//! that checks or tests each upgrade step.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::plan::{EdgePolicy, LoadedPlan, Release};
use crate::report::Finding;
use crate::version::Range;

/// The upgrade edges of one release, as a CSV or one channel entry holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Edges {
    /// The bundle this release replaces (`spec.replaces`).
    pub replaces: Option<String>,
    /// Bundles this release skips (`spec.skips`), sorted.
    pub skips: Vec<String>,
    /// The `olm.skipRange` annotation, as written in the plan.
    pub skip_range: Option<String>,
}

/// One release of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Bundle (CSV) name, e.g. `my-operator.v1.2.0`.
    pub bundle: String,
    /// The release version.
    pub version: semver::Version,
    /// The channels the release is published to, as the plan lists them.
    pub channels: Vec<String>,
    /// A broken release: nothing computed upgrades to it.
    pub broken: bool,
    /// Marked deprecated in the catalog.
    pub deprecated: bool,
    /// The channel whose edges the CSV carries (see the module docs).
    pub home_channel: String,
    /// The edges the CSV carries: those of [`Node::home_channel`].
    pub csv: Edges,
    /// Index of the release in the plan's `releases` (for messages).
    index: usize,
}

/// One entry of a channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Bundle (CSV) name.
    pub bundle: String,
    /// The release version.
    pub version: semver::Version,
    /// The entry's edges in this channel.
    pub edges: Edges,
}

/// One channel: its entries, oldest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Channel {
    /// Channel name.
    pub name: String,
    /// Entries ordered by version.
    pub entries: Vec<Entry>,
}

/// Why one bundle is an upgrade of another: the one edge kind of every graph, check and
/// report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EdgeKind {
    /// `to` replaces `from`.
    Replaces,
    /// `to` skips `from`.
    Skips,
    /// `to`'s `olm.skipRange` contains `from`'s version (OLM v0 honours it on a channel head
    /// only; OLM v1 on every entry).
    SkipRange,
    /// From a channel head of the previously published catalog to the new head (an upgrade
    /// users make when a release moves a channel's head, not a field of the graph).
    NextHead,
}

impl EdgeKind {
    /// The edge kind as reports print it: the field that makes it (`skipRange`), or
    /// `next head`.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Replaces => "replaces",
            EdgeKind::Skips => "skips",
            EdgeKind::SkipRange => "skipRange",
            EdgeKind::NextHead => "next head",
        }
    }
}

/// One upgrade step of the graph: an installed `from` may upgrade to `to` in `channel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelEdge<'a> {
    /// The installed bundle. For `replaces`/`skips` it may be a bundle the plan does not hold
    /// (an explicit edge to an older, unlisted release).
    pub from: &'a str,
    /// The bundle upgraded to.
    pub to: &'a str,
    /// Which field makes the edge.
    pub kind: EdgeKind,
    /// The channel the edge is in.
    pub channel: &'a str,
}

/// The upgrade graph of one plan (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpgradeGraph {
    package: String,
    nodes: Vec<Node>,
    channels: Vec<Channel>,
    findings: Vec<Finding>,
}

impl UpgradeGraph {
    /// Computes the graph of `plan` (module rules). Releases whose version does not parse are
    /// left out; [`crate::plan::parse`] refuses such plans.
    pub fn from_plan(plan: &LoadedPlan) -> Self {
        let policy = plan.plan.upgrades.policy;
        let sorted = plan.sorted_releases();
        let mut members: BTreeMap<String, Vec<(&semver::Version, &Release)>> = BTreeMap::new();
        for (version, release) in &sorted {
            for channel in channels_of(plan, release) {
                members
                    .entry(channel)
                    .or_default()
                    .push((version, *release));
            }
        }
        let channels: Vec<Channel> = members
            .into_iter()
            .map(|(name, releases)| Channel {
                entries: channel_entries(plan, policy, &releases),
                name,
            })
            .collect();
        let mut graph = UpgradeGraph {
            package: plan.plan.package.clone(),
            nodes: Vec::new(),
            channels,
            findings: Vec::new(),
        };
        for (version, release) in &sorted {
            let index = plan
                .plan
                .releases
                .iter()
                .position(|r| std::ptr::eq(r, *release))
                .unwrap_or_default();
            let node = graph.build_node(plan, version, release, index);
            graph.nodes.push(node);
        }
        graph.findings = graph.disagreements(plan);
        graph
    }

    /// The node of one release, its CSV edges read from its home channel.
    fn build_node(
        &self,
        plan: &LoadedPlan,
        version: &semver::Version,
        release: &Release,
        index: usize,
    ) -> Node {
        let bundle = plan.bundle_name(&release.version);
        let channels = channels_of(plan, release);
        let home_channel = if channels.contains(&plan.plan.default_channel) {
            plan.plan.default_channel.clone()
        } else {
            channels.first().cloned().unwrap_or_default()
        };
        let csv = self
            .entry(&home_channel, &bundle)
            .map(|e| e.edges.clone())
            .unwrap_or_default();
        Node {
            bundle,
            version: version.clone(),
            channels,
            broken: release.broken,
            deprecated: release.deprecated,
            home_channel,
            csv,
            index,
        }
    }

    /// A warning for each release whose edges differ between its channels.
    fn disagreements(&self, plan: &LoadedPlan) -> Vec<Finding> {
        let mut out = Vec::new();
        for node in &self.nodes {
            let mut by_edges: BTreeMap<String, Vec<&str>> = BTreeMap::new();
            for channel in &node.channels {
                if let Some(entry) = self.entry(channel, &node.bundle) {
                    by_edges
                        .entry(describe(&entry.edges))
                        .or_default()
                        .push(channel);
                }
            }
            if by_edges.len() < 2 {
                continue;
            }
            let variants: Vec<String> = by_edges
                .iter()
                .map(|(edges, channels)| format!("{edges} in {}", channels.join(", ")))
                .collect();
            out.push(
                Finding::warning(
                    "plan/channel-edges-differ",
                    format!(
                        "release {} has different upgrade edges in its channels: {}; its CSV carries those of channel {}",
                        node.version,
                        variants.join("; "),
                        node.home_channel
                    ),
                )
                .file(&plan.path)
                .field(format!("releases[{}]", node.index))
                .hint("set the release's `replaces` and `skips` explicitly so every channel agrees"),
            );
        }
        out
    }

    /// An error (`plan/replaces-cycle`, about the plan file) for each release whose explicit
    /// `replaces` names a release that is not older and so closes a cycle of `replaces` in a
    /// channel: the channel then has no head (no entry that nothing replaces), which OLM
    /// installs, and the catalog cannot be built. One finding per such release, naming every
    /// channel the cycle is in. Linear in the entries of each channel.
    pub fn replaces_cycles(&self, plan: &LoadedPlan) -> Vec<Finding> {
        // Per culprit release index: the cycle from the culprit (first seen) and its channels.
        let mut found: BTreeMap<usize, (Vec<&str>, Vec<&str>)> = BTreeMap::new();
        for channel in &self.channels {
            for cycle in channel_cycles(channel) {
                for culprit in culprits(&cycle) {
                    let Some(node) = self.node(cycle[culprit].bundle.as_str()) else {
                        continue;
                    };
                    let mut bundles: Vec<&str> = cycle.iter().map(|e| e.bundle.as_str()).collect();
                    bundles.rotate_left(culprit);
                    let entry = found.entry(node.index).or_insert((bundles, Vec::new()));
                    entry.1.push(&channel.name);
                }
            }
        }
        found
            .into_iter()
            .map(|(index, (bundles, channels))| {
                let chain = bundles.iter().chain(bundles.first()).copied();
                let message = format!(
                    "{} replaces {}, which is not older: the replaces chain {} is a cycle in channel{} {}, so no entry is the channel's head (the one nothing replaces, which OLM installs)",
                    bundles[0],
                    bundles.get(1).unwrap_or(&bundles[0]),
                    chain.collect::<Vec<_>>().join(" -> "),
                    if channels.len() == 1 { "" } else { "s" },
                    channels.join(", "),
                );
                Finding::error("plan/replaces-cycle", message)
                    .file(&plan.path)
                    .field(format!("releases[{index}].replaces"))
            })
            .collect()
    }

    /// The package the graph belongs to.
    pub fn package(&self) -> &str {
        &self.package
    }

    /// Every release, oldest first.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The release whose bundle is `bundle`.
    pub fn node(&self, bundle: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.bundle == bundle)
    }

    /// The CSV edges of the release with version `version` (as the plan writes it).
    pub fn csv_edges(&self, version: &str) -> Option<&Edges> {
        self.nodes
            .iter()
            .find(|n| n.version.to_string() == version)
            .map(|n| &n.csv)
    }

    /// Every channel, ordered by name.
    pub fn channels(&self) -> &[Channel] {
        &self.channels
    }

    /// The entry of `bundle` in `channel`, if it is a member.
    pub fn entry(&self, channel: &str, bundle: &str) -> Option<&Entry> {
        self.channels
            .iter()
            .find(|c| c.name == channel)?
            .entries
            .iter()
            .find(|e| e.bundle == bundle)
    }

    /// Warnings about the graph (`plan/channel-edges-differ`), about the plan file.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The warnings about the release with version `version`.
    pub fn findings_for(&self, version: &str) -> impl Iterator<Item = &Finding> {
        let field = self
            .nodes
            .iter()
            .find(|n| n.version.to_string() == version)
            .map(|n| format!("releases[{}]", n.index));
        self.findings
            .iter()
            .filter(move |f| field.is_some() && f.field == field)
    }

    /// Every edge: per channel (by name), per entry (by version): its `replaces`, then its
    /// `skips`, then one `skipRange` edge from each other member of the channel whose version
    /// the range contains (none when the range does not parse).
    pub fn edges(&self) -> impl Iterator<Item = ChannelEdge<'_>> {
        self.channels.iter().flat_map(|channel| {
            channel
                .entries
                .iter()
                .flat_map(move |entry| entry_edges(channel, entry))
        })
    }
}

/// The channels of a release in plan order, each once.
fn channels_of(plan: &LoadedPlan, release: &Release) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for channel in plan.channels_of(release) {
        if !out.contains(channel) {
            out.push(channel.clone());
        }
    }
    out
}

/// The edges of one entry (see [`UpgradeGraph::edges`]).
fn entry_edges<'a>(channel: &'a Channel, entry: &'a Entry) -> Vec<ChannelEdge<'a>> {
    let edge = |from: &'a str, kind| ChannelEdge {
        from,
        to: &entry.bundle,
        kind,
        channel: &channel.name,
    };
    let mut out: Vec<ChannelEdge<'a>> = entry
        .edges
        .replaces
        .iter()
        .map(|r| edge(r, EdgeKind::Replaces))
        .collect();
    out.extend(entry.edges.skips.iter().map(|s| edge(s, EdgeKind::Skips)));
    if let Some(range) = entry.edges.skip_range.as_deref().map(Range::parse) {
        let range = range.ok();
        out.extend(
            channel
                .entries
                .iter()
                .filter(|other| other.bundle != entry.bundle)
                .filter(|other| range.as_ref().is_some_and(|r| r.contains(&other.version)))
                .map(|other| edge(&other.bundle, EdgeKind::SkipRange)),
        );
    }
    out
}

/// The entries of one channel whose members are `releases`, oldest first (module rules).
fn channel_entries(
    plan: &LoadedPlan,
    policy: EdgePolicy,
    releases: &[(&semver::Version, &Release)],
) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut previous: Option<&Release> = None;
    let mut broken_since: Vec<&Release> = Vec::new();
    for (version, release) in releases {
        let (computed_replaces, computed_skips) = match policy {
            EdgePolicy::None => (None, Vec::new()),
            EdgePolicy::ReplacesChain => (previous, broken_since.clone()),
        };
        let replaces = match &release.replaces {
            Some(explicit) if explicit.is_empty() => None,
            Some(explicit) => Some(explicit.clone()),
            None => computed_replaces.map(|r| plan.bundle_name(&r.version)),
        };
        let mut skips: Vec<String> = computed_skips
            .iter()
            .map(|r| plan.bundle_name(&r.version))
            .chain(release.skips.iter().cloned())
            .collect();
        skips.sort();
        skips.dedup();
        entries.push(Entry {
            bundle: plan.bundle_name(&release.version),
            version: (*version).clone(),
            edges: Edges {
                replaces,
                skips,
                skip_range: release.skip_range.clone(),
            },
        });
        if release.broken {
            broken_since.push(release);
        } else {
            previous = Some(release);
            broken_since.clear();
        }
    }
    entries
}

/// Every cycle of `replaces` among a channel's entries, each in replaces order (an entry,
/// then the entry it replaces, …). Each entry replaces at most one, so one walk per entry,
/// never past an entry already walked, finds them all in linear time.
fn channel_cycles(channel: &Channel) -> Vec<Vec<&Entry>> {
    let at: std::collections::HashMap<&str, usize> = (channel.entries.iter().enumerate())
        .map(|(i, e)| (e.bundle.as_str(), i))
        .collect();
    // 0: not walked yet; 1: on the current walk; 2: walked.
    let mut state = vec![0u8; channel.entries.len()];
    let mut cycles = Vec::new();
    for start in 0..channel.entries.len() {
        let mut path = Vec::new();
        let mut next = Some(start);
        while let Some(i) = next.filter(|&i| state[i] == 0) {
            state[i] = 1;
            path.push(i);
            let replaces = channel.entries[i].edges.replaces.as_deref();
            next = replaces.and_then(|r| at.get(r)).copied();
        }
        // The walk stopped at an entry on itself: a cycle from there.
        if let Some(i) = next.filter(|&i| state[i] == 1)
            && let Some(from) = path.iter().position(|&p| p == i)
        {
            cycles.push(path[from..].iter().map(|&p| &channel.entries[p]).collect());
        }
        for p in path {
            state[p] = 2;
        }
    }
    cycles
}

/// The positions in `cycle` of the entries that replace one not older than themselves: the
/// explicit `replaces` that close it (a computed one always names an older release).
fn culprits(cycle: &[&Entry]) -> Vec<usize> {
    (0..cycle.len())
        .filter(|&i| cycle[i].version <= cycle[(i + 1) % cycle.len()].version)
        .collect()
}

/// `replaces a, skips b, c` (or `no replaces, no skips`), for messages.
fn describe(edges: &Edges) -> String {
    let replaces = edges
        .replaces
        .as_ref()
        .map_or_else(|| "no replaces".to_owned(), |r| format!("replaces {r}"));
    let skips = if edges.skips.is_empty() {
        "no skips".to_owned()
    } else {
        format!("skips {}", edges.skips.join(" "))
    };
    format!("{replaces}, {skips}")
}

#[cfg(test)]
mod tests;
