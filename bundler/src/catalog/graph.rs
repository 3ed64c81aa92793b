//! Drawing upgrade graphs: mermaid (renders on GitHub) and Graphviz dot.
//!
//! Contract: one cluster per channel, coloured from a fixed palette in channel-name order;
//! nodes are `bundle (version)`; edges point the way an installed copy moves (old → new) and
//! are labelled `replaces`, `skips` or `skipRange`; the channel head is drawn bold, deprecated
//! bundles dashed and struck through with "(deprecated)". Output is deterministic.
#![warn(missing_docs)]

use std::fmt::Write as _;

use super::model::{Model, Package};
use super::upgrade::Edge;
use super::version::Range;

/// Output syntax.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GraphFormat {
    /// A Mermaid `graph` block (renders on GitHub).
    #[default]
    Mermaid,
    /// A Graphviz DOT digraph.
    Dot,
}

impl crate::choice::Choice for GraphFormat {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("mermaid", GraphFormat::Mermaid), ("dot", GraphFormat::Dot)];
}

const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

/// One edge of a channel: `from` upgrades to `to`.
struct DrawnEdge {
    from: String,
    to: String,
    via: Edge,
}

fn channel_edges(pkg: &Package, ch: &super::model::Channel) -> Vec<DrawnEdge> {
    let mut out = Vec::new();
    for e in &ch.entries {
        if !e.replaces.is_empty() && ch.entry(&e.replaces).is_some() {
            out.push(DrawnEdge {
                from: e.replaces.clone(),
                to: e.name.clone(),
                via: Edge::Replaces,
            });
        }
        for s in &e.skips {
            if ch.entry(s).is_some() {
                out.push(DrawnEdge {
                    from: s.clone(),
                    to: e.name.clone(),
                    via: Edge::Skips,
                });
            }
        }
        if let Ok(range) = Range::parse(&e.skip_range) {
            for other in &ch.entries {
                let covered = other.name != e.name
                    && pkg
                        .bundles
                        .get(&other.name)
                        .and_then(|b| b.version.as_ref())
                        .is_some_and(|v| range.contains(v));
                if covered {
                    out.push(DrawnEdge {
                        from: other.name.clone(),
                        to: e.name.clone(),
                        via: Edge::SkipRange,
                    });
                }
            }
        }
    }
    out
}

fn label(via: Edge) -> &'static str {
    match via {
        Edge::Replaces => "replaces",
        Edge::Skips => "skips",
        Edge::SkipRange => "skipRange",
    }
}

fn id(parts: &[&str]) -> String {
    parts
        .join("__")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn node_label(pkg: &Package, name: &str) -> String {
    let b = pkg.bundles.get(name);
    let mut s = name.to_owned();
    if let Some(v) = b.map(|b| b.version_string()).filter(|v| !v.is_empty()) {
        s.push_str(&format!(" ({v})"));
    }
    if b.is_some_and(|b| b.deprecation.is_some()) {
        s.push_str(" (deprecated)");
    }
    s.replace('"', "'")
}

/// Draws every package of `model`, or only `package`.
pub fn render(model: &Model, package: Option<&str>, format: GraphFormat) -> String {
    let pkgs: Vec<&Package> = model
        .packages
        .values()
        .filter(|p| package.is_none_or(|n| n == p.name))
        .collect();
    match format {
        GraphFormat::Mermaid => mermaid(&pkgs),
        GraphFormat::Dot => dot(&pkgs),
    }
}

fn mermaid(pkgs: &[&Package]) -> String {
    let mut out = String::from("graph LR\n");
    out.push_str("  classDef head stroke-width:4px\n");
    out.push_str("  classDef deprecated stroke-dasharray:5 5,color:#888\n");
    for (i, color) in PALETTE.iter().enumerate() {
        let _ = writeln!(out, "  classDef ch{i} stroke:{color}");
    }
    for pkg in pkgs {
        let _ = writeln!(out, "  subgraph {}[\"{}\"]", id(&[&pkg.name]), pkg.name);
        for (ci, ch) in pkg.channels.values().enumerate() {
            let color = ci % PALETTE.len();
            let default = if ch.name == pkg.default_channel {
                " (default)"
            } else {
                ""
            };
            let deprecated = if ch.deprecation.is_some() {
                " (deprecated)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "    subgraph {}[\"channel {}{default}{deprecated}\"]",
                id(&[&pkg.name, &ch.name]),
                ch.name
            );
            let head = ch.head().map(|h| h.name.clone());
            for e in &ch.entries {
                let nid = id(&[&pkg.name, &ch.name, &e.name]);
                let _ = writeln!(out, "      {nid}[\"{}\"]", node_label(pkg, &e.name));
                let mut classes = vec![format!("ch{color}")];
                if head.as_deref() == Some(e.name.as_str()) {
                    classes.push("head".to_owned());
                }
                if pkg
                    .bundles
                    .get(&e.name)
                    .is_some_and(|b| b.deprecation.is_some())
                {
                    classes.push("deprecated".to_owned());
                }
                let _ = writeln!(out, "      class {nid} {}", classes.join(","));
            }
            for edge in channel_edges(pkg, ch) {
                let _ = writeln!(
                    out,
                    "      {} -- {} --> {}",
                    id(&[&pkg.name, &ch.name, &edge.from]),
                    label(edge.via),
                    id(&[&pkg.name, &ch.name, &edge.to])
                );
            }
            out.push_str("    end\n");
            let _ = writeln!(
                out,
                "    style {} stroke:{},stroke-width:2px",
                id(&[&pkg.name, &ch.name]),
                PALETTE[color]
            );
        }
        out.push_str("  end\n");
    }
    out
}

fn dot(pkgs: &[&Package]) -> String {
    let mut out = String::from(
        "digraph catalog {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n",
    );
    for pkg in pkgs {
        let _ = writeln!(
            out,
            "  subgraph \"cluster_{}\" {{\n    label=\"{}\";",
            id(&[&pkg.name]),
            pkg.name
        );
        for (ci, ch) in pkg.channels.values().enumerate() {
            let color = PALETTE[ci % PALETTE.len()];
            let default = if ch.name == pkg.default_channel {
                " (default)"
            } else {
                ""
            };
            let deprecated = if ch.deprecation.is_some() {
                " (deprecated)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "    subgraph \"cluster_{}\" {{\n      label=\"channel {}{default}{deprecated}\";\n      color=\"{color}\";",
                id(&[&pkg.name, &ch.name]),
                ch.name
            );
            let head = ch.head().map(|h| h.name.clone());
            for e in &ch.entries {
                let mut attrs = vec![
                    format!("label=\"{}\"", node_label(pkg, &e.name)),
                    format!("color=\"{color}\""),
                ];
                let mut style = Vec::new();
                if head.as_deref() == Some(e.name.as_str()) {
                    style.push("bold");
                }
                if pkg
                    .bundles
                    .get(&e.name)
                    .is_some_and(|b| b.deprecation.is_some())
                {
                    style.push("dashed");
                    attrs.push("fontcolor=\"#888888\"".to_owned());
                }
                if !style.is_empty() {
                    attrs.push(format!("style=\"{}\"", style.join(",")));
                }
                let _ = writeln!(
                    out,
                    "      \"{}\" [{}];",
                    id(&[&pkg.name, &ch.name, &e.name]),
                    attrs.join(", ")
                );
            }
            for edge in channel_edges(pkg, ch) {
                let style = match edge.via {
                    Edge::Replaces => "solid",
                    Edge::Skips => "dashed",
                    Edge::SkipRange => "dotted",
                };
                let _ = writeln!(
                    out,
                    "      \"{}\" -> \"{}\" [label=\"{}\", color=\"{color}\", style={style}];",
                    id(&[&pkg.name, &ch.name, &edge.from]),
                    id(&[&pkg.name, &ch.name, &edge.to]),
                    label(edge.via)
                );
            }
            out.push_str("    }\n");
        }
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}
