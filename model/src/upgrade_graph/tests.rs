use super::*;

fn plan(channels: &str, policy: &str, releases: &str) -> LoadedPlan {
    let text = format!(
        "package: op\ndefaultChannel: stable\nchannels: [{channels}]\nupgrades: {{policy: {policy}}}\ncsv: {{displayName: Op, description: d, provider: {{name: p}}}}\nreleases:\n{releases}"
    );
    crate::plan::parse(std::path::Path::new("olmpack.yaml"), &text).unwrap()
}

fn csv<'a>(g: &'a UpgradeGraph, version: &str) -> &'a Edges {
    g.csv_edges(version).unwrap()
}

#[test]
fn replaces_chain_skips_broken_releases() {
    let g = UpgradeGraph::from_plan(&plan(
        "stable",
        "replaces-chain",
        "- {version: 0.2.0, manifests: m}\n- {version: 0.1.0, manifests: m}\n- {version: 0.3.0, manifests: m, broken: true}\n- {version: 0.3.1, manifests: m, skipRange: '>=0.2.0 <0.3.1'}\n",
    ));
    assert_eq!(csv(&g, "0.1.0"), &Edges::default());
    assert_eq!(csv(&g, "0.2.0").replaces.as_deref(), Some("op.v0.1.0"));
    assert_eq!(csv(&g, "0.3.0").replaces.as_deref(), Some("op.v0.2.0"));
    assert_eq!(
        csv(&g, "0.3.1"),
        &Edges {
            replaces: Some("op.v0.2.0".into()),
            skips: vec!["op.v0.3.0".into()],
            skip_range: Some(">=0.2.0 <0.3.1".into()),
        }
    );
    assert!(g.findings().is_empty());
}

#[test]
fn explicit_edges_win_and_none_policy_computes_nothing() {
    let g = UpgradeGraph::from_plan(&plan(
        "stable",
        "replaces-chain",
        "- {version: 1.0.0, manifests: m}\n- {version: 1.1.0, manifests: m, replaces: '', skips: [op.v0.9.0]}\n",
    ));
    assert_eq!(csv(&g, "1.1.0").replaces, None);
    assert_eq!(csv(&g, "1.1.0").skips, vec!["op.v0.9.0".to_owned()]);
    assert_eq!(g.channels()[0].entries[1].edges, csv(&g, "1.1.0").clone());
    let g = UpgradeGraph::from_plan(&plan(
        "stable",
        "none",
        "- {version: 1.0.0, manifests: m}\n- {version: 1.1.0, manifests: m, replaces: op.v1.0.0}\n- {version: 1.2.0, manifests: m}\n",
    ));
    assert_eq!(csv(&g, "1.1.0").replaces.as_deref(), Some("op.v1.0.0"));
    assert_eq!(csv(&g, "1.2.0"), &Edges::default());
    assert_eq!(g.channels()[0].entries[2].edges, Edges::default());
}

#[test]
fn channels_with_different_predecessors_keep_their_own_and_say_so() {
    let g = UpgradeGraph::from_plan(&plan(
        "candidate, stable",
        "replaces-chain",
        "- {version: 1.0.0, manifests: m}\n- {version: 1.1.0-rc.1, manifests: m, channels: [candidate]}\n- {version: 1.1.0, manifests: m}\n",
    ));
    let names: Vec<&str> = g.channels().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["candidate", "stable"]);
    let candidate = g.entry("candidate", "op.v1.1.0").unwrap();
    assert_eq!(candidate.edges.replaces.as_deref(), Some("op.v1.1.0-rc.1"));
    let stable = g.entry("stable", "op.v1.1.0").unwrap();
    assert_eq!(stable.edges.replaces.as_deref(), Some("op.v1.0.0"));
    // The CSV carries the default channel's edges.
    assert_eq!(g.node("op.v1.1.0").unwrap().home_channel, "stable");
    assert_eq!(csv(&g, "1.1.0"), &stable.edges);
    // The release candidate is not in the default channel: its first channel is home.
    assert_eq!(g.node("op.v1.1.0-rc.1").unwrap().home_channel, "candidate");
    let messages: Vec<String> = g
        .findings()
        .iter()
        .map(|f| {
            format!(
                "{} {}: {}",
                f.rule,
                f.field.as_deref().unwrap_or(""),
                f.message
            )
        })
        .collect();
    assert_eq!(
        messages,
        [
            "plan/channel-edges-differ releases[2]: release 1.1.0 has different upgrade edges in its channels: replaces op.v1.0.0, no skips in stable; replaces op.v1.1.0-rc.1, no skips in candidate; its CSV carries those of channel stable"
        ]
    );
    assert_eq!(g.findings_for("1.1.0").count(), 1);
    assert_eq!(g.findings_for("1.0.0").count(), 0);
}

#[test]
fn edges_lists_replaces_skips_and_skip_range_per_channel() {
    let g = UpgradeGraph::from_plan(&plan(
        "stable",
        "replaces-chain",
        "- {version: 1.0.0, manifests: m}\n- {version: 1.1.0, manifests: m, broken: true}\n- {version: 1.2.0, manifests: m, skipRange: '>=1.0.0 <1.2.0', skips: [op.v0.9.0]}\n",
    ));
    let edges: Vec<(&str, &str, EdgeKind, &str)> = g
        .edges()
        .map(|e| (e.from, e.to, e.kind, e.channel))
        .collect();
    assert_eq!(
        edges,
        [
            ("op.v1.0.0", "op.v1.1.0", EdgeKind::Replaces, "stable"),
            ("op.v1.0.0", "op.v1.2.0", EdgeKind::Replaces, "stable"),
            ("op.v0.9.0", "op.v1.2.0", EdgeKind::Skips, "stable"),
            ("op.v1.1.0", "op.v1.2.0", EdgeKind::Skips, "stable"),
            ("op.v1.0.0", "op.v1.2.0", EdgeKind::SkipRange, "stable"),
            ("op.v1.1.0", "op.v1.2.0", EdgeKind::SkipRange, "stable"),
        ]
    );
}

#[test]
fn a_release_listing_a_channel_twice_is_one_entry() {
    let g = UpgradeGraph::from_plan(&plan(
        "stable",
        "replaces-chain",
        "- {version: 1.0.0, manifests: m, channels: [stable, stable]}\n- {version: 1.1.0, manifests: m}\n",
    ));
    assert_eq!(g.channels()[0].entries.len(), 2);
    assert_eq!(g.node("op.v1.0.0").unwrap().channels, ["stable"]);
}

#[test]
fn an_explicit_replaces_of_a_release_not_older_is_a_cycle_naming_the_plan_field() {
    let g = |releases: &str| {
        let plan = plan("candidate, stable", "replaces-chain", releases);
        let found = UpgradeGraph::from_plan(&plan).replaces_cycles(&plan);
        found
            .iter()
            .map(|f| {
                format!(
                    "{} {}: {}",
                    f.field.as_deref().unwrap_or("-"),
                    f.rule,
                    f.message
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        g(
            "- {version: 1.0.0, manifests: m, replaces: op.v1.2.0}\n- {version: 1.1.0, manifests: m}\n- {version: 1.2.0, manifests: m}\n"
        ),
        [
            "releases[0].replaces plan/replaces-cycle: op.v1.0.0 replaces op.v1.2.0, which is not older: the replaces chain op.v1.0.0 -> op.v1.2.0 -> op.v1.1.0 -> op.v1.0.0 is a cycle in channels candidate, stable, so no entry is the channel's head (the one nothing replaces, which OLM installs)"
        ]
    );
    assert_eq!(
        g("- {version: 1.0.0, manifests: m, replaces: op.v1.0.0, channels: [stable]}\n"),
        [
            "releases[0].replaces plan/replaces-cycle: op.v1.0.0 replaces op.v1.0.0, which is not older: the replaces chain op.v1.0.0 -> op.v1.0.0 is a cycle in channel stable, so no entry is the channel's head (the one nothing replaces, which OLM installs)"
        ]
    );
    // A replaces of an older release, or of one outside the plan, closes no cycle.
    let none: [&str; 0] = [];
    assert_eq!(
        g(
            "- {version: 1.0.0, manifests: m, replaces: op.v0.9.0}\n- {version: 1.2.0, manifests: m, replaces: op.v1.0.0}\n- {version: 1.1.0, manifests: m}\n"
        ),
        none
    );
}
