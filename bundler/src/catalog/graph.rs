//! Drawing upgrade graphs: mermaid (GitHub draws it) and Graphviz dot.
//!
//! Contract: one cluster per channel, coloured from a fixed palette in channel-name order;
//! nodes are `bundle (version)`; edges point the way an installed copy moves (old → new) and
//! are labelled `replaces`, `skips` or `skipRange`; the channel head is drawn bold, deprecated
//! bundles dashed and struck through with "(deprecated)". Output is deterministic.
#![warn(missing_docs)]

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::cover::ByVersion;
use super::model::{Model, Package};
use olmpack_model::upgrade_graph::EdgeKind;
use olmpack_model::version::Range;

/// Output syntax.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GraphFormat {
    /// A Mermaid `graph` block (GitHub draws it).
    #[default]
    Mermaid,
    /// A Graphviz DOT digraph.
    Dot,
}

impl olmpack_model::choice::Choice for GraphFormat {
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
    via: EdgeKind,
}

fn channel_edges(pkg: &Package, ch: &super::model::Channel) -> Vec<DrawnEdge> {
    let mut out = Vec::new();
    let by_version = ByVersion::new(ch.entries.iter().filter_map(|e| {
        let v = pkg.bundles.get(&e.name)?.version.as_ref()?;
        Some((v, e.name.as_str()))
    }));
    for e in &ch.entries {
        if !e.replaces.is_empty() && ch.entry(&e.replaces).is_some() {
            out.push(DrawnEdge {
                from: e.replaces.clone(),
                to: e.name.clone(),
                via: EdgeKind::Replaces,
            });
        }
        for s in &e.skips {
            if ch.entry(s).is_some() {
                out.push(DrawnEdge {
                    from: s.clone(),
                    to: e.name.clone(),
                    via: EdgeKind::Skips,
                });
            }
        }
        if let Ok(range) = Range::parse(&e.skip_range) {
            // Covered entries in channel order, as they are drawn.
            let mut covered: Vec<&str> = by_version
                .covered(&range, &None, &None)
                .into_iter()
                .map(|i| by_version.get(i).1)
                .filter(|name| *name != e.name)
                .collect();
            covered.sort_by_key(|name| ch.position(name));
            out.extend(covered.into_iter().map(|from| DrawnEdge {
                from: from.to_owned(),
                to: e.name.clone(),
                via: EdgeKind::SkipRange,
            }));
        }
    }
    out
}

/// Node and cluster ids: readable (the names with every character that is not an ASCII
/// letter or digit made `_`) and injective — a second name that would get the same id, or an
/// id mermaid reserves (`end`, …), gets a numbered suffix. Assigned in drawing order, so the
/// output stays deterministic.
#[derive(Debug, Default)]
struct Ids {
    by_name: HashMap<Vec<String>, String>,
    used: HashSet<String>,
}

/// Words mermaid reads as syntax where a node or subgraph id stands.
const RESERVED: [&str; 9] = [
    "end",
    "graph",
    "flowchart",
    "subgraph",
    "class",
    "classdef",
    "style",
    "linkstyle",
    "click",
];

impl Ids {
    fn get(&mut self, parts: &[&str]) -> String {
        let key: Vec<String> = parts.iter().map(|p| (*p).to_owned()).collect();
        if let Some(id) = self.by_name.get(&key) {
            return id.clone();
        }
        let base: String = parts
            .join("__")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let mut id = base.clone();
        let mut n = 1;
        while self.used.contains(&id) || RESERVED.contains(&id.to_ascii_lowercase().as_str()) {
            n += 1;
            id = format!("{base}_{n}");
        }
        self.used.insert(id.clone());
        self.by_name.insert(key, id.clone());
        id
    }
}

/// Text shown in a label: control and invisible characters (bidi overrides, zero-width
/// spaces) as `<U+XXXX>`, so no raw escape sequence or line break reaches the output.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let invisible = matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}');
        if c.is_control() || invisible {
            let _ = write!(out, "<U+{:04X}>", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// A label inside mermaid's `["…"]`: [`visible`], then `"`, `#`, `<`, `>`, `&` and
/// backquotes as mermaid's `#code;` entities.
fn mermaid_text(text: &str) -> String {
    let mut out = String::new();
    for c in visible(text).chars() {
        match c {
            '"' | '#' | '<' | '>' | '&' | '`' => {
                let _ = write!(out, "#{};", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A Graphviz quoted string's contents: [`visible`], with `\` and `"` escaped.
fn dot_text(text: &str) -> String {
    visible(text).replace('\\', "\\\\").replace('"', "\\\"")
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
    s
}

/// Draws every package of `model`, or only `package`.
pub fn draw(model: &Model, package: Option<&str>, format: GraphFormat) -> String {
    let mut drawing = Drawing::new(format);
    for pkg in model.packages.values() {
        if package.is_none_or(|n| n == pkg.name) {
            drawing.package(pkg);
        }
    }
    drawing.finish()
}

/// A graph drawn one package at a time, so a catalog's packages need not be held at once:
/// [`Drawing::package`] for each package in name order, [`Drawing::take`] whenever the text
/// so far may be written out, [`Drawing::finish`] for the rest. The text is [`draw`]'s.
#[derive(Debug)]
pub struct Drawing {
    format: GraphFormat,
    ids: Ids,
    out: String,
}

impl Drawing {
    /// A drawing in `format`, with its header.
    pub fn new(format: GraphFormat) -> Self {
        let mut out = String::new();
        match format {
            GraphFormat::Mermaid => mermaid_header(&mut out),
            GraphFormat::Dot => out.push_str(
                "digraph catalog {\n  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n",
            ),
        }
        Drawing {
            format,
            ids: Ids::default(),
            out,
        }
    }

    /// Draws one package (each package once, in name order, as a model holds them).
    pub fn package(&mut self, pkg: &Package) {
        // Every id of a package starts with its name: only the ids in use outlive it.
        self.ids.by_name.clear();
        match self.format {
            GraphFormat::Mermaid => mermaid_package(&mut self.ids, pkg, &mut self.out),
            GraphFormat::Dot => dot_package(&mut self.ids, pkg, &mut self.out),
        }
    }

    /// The text drawn since the last call.
    pub fn take(&mut self) -> String {
        std::mem::take(&mut self.out)
    }

    /// The rest of the text, with the footer.
    pub fn finish(mut self) -> String {
        if self.format == GraphFormat::Dot {
            self.out.push_str("}\n");
        }
        self.out
    }
}

/// ` (default)` and ` (deprecated)` after a channel's name, as they apply.
fn channel_title(pkg: &Package, ch: &super::model::Channel) -> String {
    let mut title = format!("channel {}", ch.name);
    if ch.name == pkg.default_channel {
        title.push_str(" (default)");
    }
    if ch.deprecation.is_some() {
        title.push_str(" (deprecated)");
    }
    title
}

fn is_deprecated(pkg: &Package, name: &str) -> bool {
    pkg.bundles
        .get(name)
        .is_some_and(|b| b.deprecation.is_some())
}

fn mermaid_header(out: &mut String) {
    out.push_str("graph LR\n");
    out.push_str("  classDef head stroke-width:4px\n");
    out.push_str("  classDef deprecated stroke-dasharray:5 5,color:#888\n");
    for (i, color) in PALETTE.iter().enumerate() {
        let _ = writeln!(out, "  classDef ch{i} stroke:{color}");
    }
}

fn mermaid_package(ids: &mut Ids, pkg: &Package, out: &mut String) {
    let pid = ids.get(&[&pkg.name]);
    let _ = writeln!(out, "  subgraph {pid}[\"{}\"]", mermaid_text(&pkg.name));
    for (ci, ch) in pkg.channels.values().enumerate() {
        let color = ci % PALETTE.len();
        let cid = ids.get(&[&pkg.name, &ch.name]);
        let _ = writeln!(
            out,
            "    subgraph {cid}[\"{}\"]",
            mermaid_text(&channel_title(pkg, ch))
        );
        let head = ch.head().map(|h| h.name.clone());
        for e in &ch.entries {
            let nid = ids.get(&[&pkg.name, &ch.name, &e.name]);
            let _ = writeln!(
                out,
                "      {nid}[\"{}\"]",
                mermaid_text(&node_label(pkg, &e.name))
            );
            let mut classes = vec![format!("ch{color}")];
            if head.as_deref() == Some(e.name.as_str()) {
                classes.push("head".to_owned());
            }
            if is_deprecated(pkg, &e.name) {
                classes.push("deprecated".to_owned());
            }
            let _ = writeln!(out, "      class {nid} {}", classes.join(","));
        }
        for edge in channel_edges(pkg, ch) {
            let from = ids.get(&[&pkg.name, &ch.name, &edge.from]);
            let to = ids.get(&[&pkg.name, &ch.name, &edge.to]);
            let _ = writeln!(out, "      {from} -- {} --> {to}", edge.via.as_str());
        }
        out.push_str("    end\n");
        let _ = writeln!(
            out,
            "    style {cid} stroke:{},stroke-width:2px",
            PALETTE[color]
        );
    }
    out.push_str("  end\n");
}

fn dot_package(ids: &mut Ids, pkg: &Package, out: &mut String) {
    let _ = writeln!(
        out,
        "  subgraph \"cluster_{}\" {{\n    label=\"{}\";",
        ids.get(&[&pkg.name]),
        dot_text(&pkg.name)
    );
    for (ci, ch) in pkg.channels.values().enumerate() {
        let color = PALETTE[ci % PALETTE.len()];
        let _ = writeln!(
            out,
            "    subgraph \"cluster_{}\" {{\n      label=\"{}\";\n      color=\"{color}\";",
            ids.get(&[&pkg.name, &ch.name]),
            dot_text(&channel_title(pkg, ch))
        );
        let head = ch.head().map(|h| h.name.clone());
        for e in &ch.entries {
            let mut attrs = vec![
                format!("label=\"{}\"", dot_text(&node_label(pkg, &e.name))),
                format!("color=\"{color}\""),
            ];
            let mut style = Vec::new();
            if head.as_deref() == Some(e.name.as_str()) {
                style.push("bold");
            }
            if is_deprecated(pkg, &e.name) {
                style.push("dashed");
                attrs.push("fontcolor=\"#888888\"".to_owned());
            }
            if !style.is_empty() {
                attrs.push(format!("style=\"{}\"", style.join(",")));
            }
            let _ = writeln!(
                out,
                "      \"{}\" [{}];",
                ids.get(&[&pkg.name, &ch.name, &e.name]),
                attrs.join(", ")
            );
        }
        for edge in channel_edges(pkg, ch) {
            let style = match edge.via {
                EdgeKind::Replaces => "solid",
                EdgeKind::Skips => "dashed",
                EdgeKind::SkipRange => "dotted",
                EdgeKind::NextHead => "bold",
            };
            let _ = writeln!(
                out,
                "      \"{}\" -> \"{}\" [label=\"{}\", color=\"{color}\", style={style}];",
                ids.get(&[&pkg.name, &ch.name, &edge.from]),
                ids.get(&[&pkg.name, &ch.name, &edge.to]),
                edge.via.as_str()
            );
        }
        out.push_str("    }\n");
    }
    out.push_str("  }\n");
}
