//! `cargo xtask lint`'s layout checks: the one-way flow of the pipeline, kept by a machine.
//!
//! - [`check_model_is_pure`]: `olmpack-model` (the pure model) must not depend, directly or
//!   through other crates, on a crate that does I/O or parses command lines ([`DENIED`]),
//!   read from `cargo metadata`'s resolved graph (normal dependencies only).
//! - [`check_module_cycles`]: the top-level modules of the `olmpack` crate (`bundle`,
//!   `catalog`, ...) and of the model must not import each other in a cycle. An import is any `crate::X`,
//!   `olmpack::X` or `super::…::X` path reaching a top-level module `X`, in code that is not
//!   `#[cfg(test)]` (strings and comments do not count).
//! - [`check_file_circles`]: no two files of a product crate ([`PRODUCT_SOURCES`]) import each
//!   other, directly or around a circle — also siblings inside one module. Imports are
//!   resolved to the file that defines the module they name; a file naming its own
//!   enclosing module (`super::X` from a child) is not an arrow.
//! - [`check_shipped_avoid_dev_only`]: no shipped crate ([`SHIPPED`]) reaches a test-only
//!   crate ([`DEV_ONLY`]) through normal dependencies.
//! - [`check_lower_layer_knows_no_olm`]: `olmpack-oci` (images, registries, SBOMs,
//!   signatures, safe file reading and writing) depends on no crate that knows OLM
//!   ([`OLM_CRATES`]), uses `olmpack-model` only for [`LOWER_MODEL_USES`], and its code
//!   (comments included, tests aside) names none of OLM's words ([`OLM_WORDS`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Crates the model must never reach: I/O, networking, async runtimes, progress bars and
/// argument parsers.
pub const DENIED: &[&str] = &[
    "clap",
    "tokio",
    "kube",
    "kube-client",
    "oci-client",
    "reqwest",
    "hyper",
    "tempfile",
    "tracing-subscriber",
    "indicatif",
    "tar",
    "flate2",
];

/// The crates whose top-level modules must not import each other in a cycle.
pub const CHECKED_CRATES: &[&str] = &["bundler/src", "model/src", "oci/src"];

/// The product crates' sources: no two of their files may import each other in a circle.
pub const PRODUCT_SOURCES: &[&str] = &[
    "bundler/src",
    "model/src",
    "oci/src",
    "upgrade-tests/src",
    "operator/src",
    "crd-migrate/src",
    "xtask/src",
];

/// The crates that are shipped (the `olmpack` binary, the operator, and what they link).
pub const SHIPPED: &[&str] = &[
    "olmpack",
    "olmpack-model",
    "olmpack-oci",
    "olmpack-envtest",
    "webapp-operator",
    "crd-migrate",
];

/// Crates for tests and benches only.
pub const DEV_ONLY: &[&str] = &["olmpack-testkit"];

/// The pure model crate.
const MODEL: &str = "olmpack-model";

/// The lower layer: OCI images, registries, SBOMs, signatures, and the safe file reading and
/// writing beneath them.
const LOWER: &str = "olmpack-oci";

/// The lower layer's sources.
pub const LOWER_SOURCES: &str = "oci/src";

/// The workspace crates that know OLM: the lower layer reaches none of them.
pub const OLM_CRATES: &[&str] = &[
    "olmpack",
    "olmpack-envtest",
    "olmpack-testkit",
    "webapp-operator",
    "crd-migrate",
];

/// What the lower layer may use of `olmpack-model`: its terminal-safe text, nothing of the
/// plan, bundles or catalogs.
pub const LOWER_MODEL_USES: &[&str] = &["olmpack_model::report::safe_line"];

/// Words that name OLM or what it packages (whole words, case as written); the lower layer's
/// code and comments use none of them.
pub const OLM_WORDS: &[&str] = &[
    "OLM",
    "opm",
    "CSV",
    "ClusterServiceVersion",
    "operatorframework",
    "File-Based Catalog",
    "annotations.yaml",
    "registry+v1",
    "Subscription",
    "ClusterExtension",
    "CatalogSource",
];

/// Every layout check, all run; fails with every problem found.
pub fn check_all(root: &Path) -> Result<()> {
    let mut results = vec![
        check_model_is_pure(root),
        check_shipped_avoid_dev_only(root),
        check_lower_layer_knows_no_olm(root),
    ];
    results.extend(
        CHECKED_CRATES
            .iter()
            .map(|src| check_module_cycles(&root.join(src))),
    );
    results.extend(
        PRODUCT_SOURCES
            .iter()
            .map(|src| check_file_circles(&root.join(src))),
    );
    let problems: Vec<String> = results
        .into_iter()
        .filter_map(Result::err)
        .map(|e| format!("{e:#}"))
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "layout: {} problem(s)\n{}",
        problems.len(),
        problems.join("\n")
    )
}

/// Fails when [`MODEL`] reaches a [`DENIED`] crate through normal dependencies; the message
/// shows the chain of crates that leads there.
pub fn check_model_is_pure(root: &Path) -> Result<()> {
    let metadata = metadata(root)?;
    let chains = denied_chains(&metadata, MODEL, DENIED)?;
    if chains.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = chains
        .iter()
        .map(|c| format!("  {}", c.join(" -> ")))
        .collect();
    bail!(
        "{MODEL} must stay pure, but depends on I/O or command-line crates:\n{}",
        lines.join("\n")
    )
}

/// Fails when a shipped crate ([`SHIPPED`]) depends, directly or through other crates, on a
/// dev-only crate ([`DEV_ONLY`]) through normal dependencies.
pub fn check_shipped_avoid_dev_only(root: &Path) -> Result<()> {
    let metadata = metadata(root)?;
    let mut lines = Vec::new();
    for package in SHIPPED {
        for chain in denied_chains(&metadata, package, DEV_ONLY)? {
            lines.push(format!("  {}", chain.join(" -> ")));
        }
    }
    if lines.is_empty() {
        return Ok(());
    }
    bail!(
        "shipped crates must not depend on test-only crates (make it a dev-dependency):\n{}",
        lines.join("\n")
    )
}

/// Fails when the lower layer ([`LOWER`]) reaches a crate that knows OLM ([`OLM_CRATES`])
/// through normal dependencies, or when its code names OLM ([`olm_mentions`]).
pub fn check_lower_layer_knows_no_olm(root: &Path) -> Result<()> {
    let metadata = metadata(root)?;
    let mut lines: Vec<String> = denied_chains(&metadata, LOWER, OLM_CRATES)?
        .iter()
        .map(|c| format!("  {}", c.join(" -> ")))
        .collect();
    let files = rust_files(&root.join(LOWER_SOURCES))?;
    lines.extend(
        olm_mentions(&files)
            .into_iter()
            .map(|m| format!("  {LOWER_SOURCES}/{m}")),
    );
    if lines.is_empty() {
        return Ok(());
    }
    bail!(
        "{LOWER} is the layer below OLM, but knows OLM (move the OLM part up into olmpack, or \
         have olmpack pass it in):\n{}",
        lines.join("\n")
    )
}

/// Each `file:line` of `files` whose code or comments (test items aside) name one of
/// [`OLM_WORDS`] as a whole word, or use `olmpack_model` beyond [`LOWER_MODEL_USES`].
pub fn olm_mentions(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut mentions = Vec::new();
    for (path, text) in files {
        for (n, line) in without_test_items(text).lines().enumerate() {
            let words: Vec<&str> = OLM_WORDS
                .iter()
                .copied()
                .filter(|w| has_whole_word(line, w))
                .collect();
            if !words.is_empty() {
                mentions.push(format!(
                    "{}:{}: names {}",
                    path.display(),
                    n + 1,
                    words.join(", ")
                ));
            }
            let model_uses = line.matches("olmpack_model::").count();
            let allowed: usize = LOWER_MODEL_USES
                .iter()
                .map(|u| line.matches(u).count())
                .sum();
            if model_uses > allowed {
                mentions.push(format!(
                    "{}:{}: uses olmpack_model beyond {}",
                    path.display(),
                    n + 1,
                    LOWER_MODEL_USES.join(", ")
                ));
            }
        }
    }
    mentions
}

/// Whether `word` stands in `line` on its own: no letter, digit or `_` right before or after.
fn has_whole_word(line: &str, word: &str) -> bool {
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    line.match_indices(word).any(|(at, _)| {
        !is_word(line[..at].chars().next_back()) && !is_word(line[at + word.len()..].chars().next())
    })
}

/// `cargo metadata` of the workspace at `root`.
fn metadata(root: &Path) -> Result<serde_json::Value> {
    let output = Command::new(super::cargo_bin())
        .current_dir(root)
        .args(["metadata", "--format-version", "1"])
        .output()
        .context("running cargo metadata")?;
    anyhow::ensure!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).context("reading cargo metadata's output")
}

/// Every shortest chain of normal dependencies from `package` to a `denied` crate.
fn denied_chains(
    metadata: &serde_json::Value,
    package: &str,
    denied: &[&str],
) -> Result<Vec<Vec<String>>> {
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .context("cargo metadata has no packages")?
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let mut deps: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in metadata["resolve"]["nodes"]
        .as_array()
        .context("cargo metadata has no resolved graph")?
    {
        let Some(id) = node["id"].as_str() else {
            continue;
        };
        let normal = node["deps"].as_array().into_iter().flatten().filter(|d| {
            d["dep_kinds"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].is_null()))
        });
        deps.insert(id, normal.filter_map(|d| d["pkg"].as_str()).collect());
    }
    let start = names
        .iter()
        .find(|(_, name)| **name == package)
        .map(|(id, _)| *id)
        .with_context(|| format!("cargo metadata does not list {package}"))?;
    // Breadth first, so each denied crate is reported with its shortest chain.
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    let mut chains = Vec::new();
    while let Some(id) = queue.pop_front() {
        let name = names.get(id).copied().unwrap_or(id);
        if id != start && denied.contains(&name) {
            let mut chain = vec![name.to_owned()];
            let mut at = id;
            while let Some(p) = parent.get(at) {
                chain.push(names.get(p).copied().unwrap_or(p).to_owned());
                at = p;
            }
            chain.reverse();
            chains.push(chain);
            continue;
        }
        for dep in deps.get(id).into_iter().flatten() {
            if *dep != start && !parent.contains_key(dep) {
                parent.insert(dep, id);
                queue.push_back(dep);
            }
        }
    }
    Ok(chains)
}

/// Fails when the top-level modules of the crate in `src` import each other in a cycle,
/// naming the cycle and, for each step, a file and line that makes it.
pub fn check_module_cycles(src: &Path) -> Result<()> {
    let files = rust_files(src)?;
    let graph = module_graph(&files);
    match find_cycle(&graph) {
        None => Ok(()),
        Some(cycle) => bail!(
            "the top-level modules of {} import each other in a cycle (data must flow one way):\n{}",
            src.display(),
            describe_cycle(&graph, &cycle)
        ),
    }
}

/// Fails when files of the crate in `src` import each other in a circle, anywhere (also
/// inside one module: a parent and its child, or siblings); names every circle with the
/// imports that make it.
pub fn check_file_circles(src: &Path) -> Result<()> {
    let graph = file_graph(&rust_files(src)?);
    let circles = circles(&graph);
    if circles.is_empty() {
        return Ok(());
    }
    let text: Vec<String> = circles
        .iter()
        .map(|files| describe_circle(&graph, files))
        .collect();
    bail!(
        "files of {} import each other in {} circle(s) (move what both need below both):\n{}",
        src.display(),
        circles.len(),
        text.join("\n")
    )
}

/// The strongly connected parts of `graph` with more than one node, each sorted.
fn circles(graph: &ModuleGraph) -> Vec<Vec<String>> {
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(node) = stack.pop() {
            for next in graph.get(&node).into_iter().flat_map(BTreeMap::keys) {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|n| (n, reach(n))).collect();
    let mut placed = BTreeSet::new();
    let mut found = Vec::new();
    for (node, from_node) in &reached {
        if placed.contains(*node) || !from_node.contains(*node) {
            continue;
        }
        let part: Vec<String> = from_node
            .iter()
            .filter(|other| reached.get(other).is_some_and(|r| r.contains(*node)))
            .cloned()
            .collect();
        placed.extend(part.iter().cloned());
        if part.len() > 1 {
            found.push(part);
        }
    }
    found
}

/// The files of a circle, then each import between two of them with its first `file:line`.
fn describe_circle(graph: &ModuleGraph, files: &[String]) -> String {
    let mut text = format!("  circle of {} files: {}", files.len(), files.join(", "));
    for from in files {
        for (to, at) in graph.get(from).into_iter().flatten() {
            if files.contains(to) {
                text.push_str(&format!("\n    {from} -> {to} (first at {at})"));
            }
        }
    }
    text
}

/// The module graph of the crate in `src`, one line per module: `module -> imported, ...`.
pub fn describe(src: &Path) -> Result<String> {
    let graph = module_graph(&rust_files(src)?);
    let mut text = String::new();
    for (module, edges) in &graph {
        let targets: Vec<&str> = edges.keys().map(String::as_str).collect();
        text.push_str(&format!("{module} -> {}\n", targets.join(", ")));
    }
    Ok(text)
}

/// Every `.rs` file under `src`, with its path relative to `src` and its text.
pub(crate) fn rust_files(src: &Path) -> Result<Vec<(PathBuf, String)>> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))?;
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?;
                let relative = path.strip_prefix(src).unwrap_or(&path).to_path_buf();
                files.push((relative, text));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// A node (a top-level module, or a file) → the nodes it imports, each with the first
/// `file:line` that imports it.
pub type ModuleGraph = BTreeMap<String, BTreeMap<String, String>>;

/// One source file that is product code: its path relative to `src`, its module path, and its
/// code with strings, comments and `#[cfg(test)]` items blanked.
struct Source {
    path: PathBuf,
    module: Vec<String>,
    code: String,
}

/// The files that are not test code (files declared `#[cfg(test)] mod x;` are left out).
fn sources(files: &[(PathBuf, String)]) -> Vec<Source> {
    let cleaned: Vec<(PathBuf, Vec<String>, String)> = files
        .iter()
        .map(|(path, text)| {
            (
                path.clone(),
                module_path(path),
                blank_strings_and_comments(text),
            )
        })
        .collect();
    let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
    for (_, module, code) in &cleaned {
        for name in test_module_declarations(code) {
            let mut child = module.clone();
            child.push(name);
            test_only.insert(child);
        }
    }
    cleaned
        .into_iter()
        .filter(|(_, module, _)| !test_only.iter().any(|t| module.starts_with(t)))
        .map(|(path, module, code)| Source {
            path,
            module,
            code: without_test_items(&code),
        })
        .collect()
}

/// Every import of a non-root source resolved to the module (file) that defines it: the
/// longest prefix of the imported path that is a module of the crate. Imports of the crate
/// root (`lib.rs`, `main.rs`) and of other crates are dropped.
fn resolved_imports(sources: &[Source]) -> Vec<(&Source, usize, &Source)> {
    let by_module: BTreeMap<&[String], &Source> =
        sources.iter().map(|s| (s.module.as_slice(), s)).collect();
    let mut found = Vec::new();
    for source in sources.iter().filter(|s| !s.module.is_empty()) {
        for (line, path) in imports(&source.code, &source.module) {
            let target = (1..=path.len())
                .rev()
                .find_map(|n| by_module.get(&path[..n]).copied());
            if let Some(target) = target
                && target.module != source.module
            {
                found.push((source, line, target));
            }
        }
    }
    found
}

/// The import graph of a crate's top-level modules, from its files (paths relative to `src`).
/// `lib.rs` and `main.rs` are the crate roots, not modules; test code is left out.
pub fn module_graph(files: &[(PathBuf, String)]) -> ModuleGraph {
    let sources = sources(files);
    let mut graph = ModuleGraph::new();
    for source in sources.iter().filter(|s| !s.module.is_empty()) {
        graph.entry(source.module[0].clone()).or_default();
    }
    for (from, line, to) in resolved_imports(&sources) {
        if from.module[0] != to.module[0] {
            graph
                .entry(from.module[0].clone())
                .or_default()
                .entry(to.module[0].clone())
                .or_insert_with(|| format!("{}:{line}", from.path.display()));
        }
    }
    graph
}

/// The import graph of a crate's files (paths relative to `src`; the crate roots left out):
/// a file imports another when it names an item, or a module, that the other defines —
/// except its own enclosing modules (a child's `super::X` is the module's shared face; the
/// parent composing its children is the arrow that counts).
pub fn file_graph(files: &[(PathBuf, String)]) -> ModuleGraph {
    let sources = sources(files);
    let mut graph = ModuleGraph::new();
    for source in sources.iter().filter(|s| !s.module.is_empty()) {
        graph.entry(source.path.display().to_string()).or_default();
    }
    for (from, line, to) in resolved_imports(&sources) {
        // A file naming its own enclosing module (`super::Finding` defined in the parent's
        // `mod.rs`) uses that module's face, not another part: no arrow.
        if from.module.starts_with(&to.module) {
            continue;
        }
        graph
            .entry(from.path.display().to_string())
            .or_default()
            .entry(to.path.display().to_string())
            .or_insert_with(|| format!("{}:{line}", from.path.display()));
    }
    graph
}

/// `bundle/validate/csv.rs` → `[bundle, validate, csv]`; `bundle/mod.rs` → `[bundle]`;
/// `lib.rs`, `main.rs` → `[]`.
fn module_path(path: &Path) -> Vec<String> {
    let mut parts: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        let is_root = parts.is_empty() && (stem == "lib" || stem == "main");
        if stem != "mod" && !is_root {
            parts.push(stem.to_owned());
        }
    }
    parts
}

/// The code with string and character literals and comments replaced by spaces (newlines
/// kept, so line numbers stay right).
pub(crate) fn blank_strings_and_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r#"..."#: ends at a quote followed by the same number of hashes.
            let open = 2 + hashes + usize::from(c == 'b');
            for &ch in &chars[i..i + open] {
                blank(&mut out, ch);
            }
            i += open;
            while i < chars.len() {
                let closes =
                    chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'));
                if closes {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    i += hashes + 1;
                    break;
                }
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && char_literal_len(&chars, i).is_some() {
            let len = char_literal_len(&chars, i).unwrap_or(1);
            for _ in 0..len {
                out.push(' ');
            }
            i += len;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// At a raw string (`r"`, `r#"`, `br#"`), the number of `#`s.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    let previous_is_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    if previous_is_ident {
        return None;
    }
    let mut j = i;
    if chars[j] == 'b' {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some(hashes)
}

/// At a `'`, the length of the character literal starting there (none for a lifetime).
fn char_literal_len(chars: &[char], i: usize) -> Option<usize> {
    match chars.get(i + 1)? {
        '\\' => {
            let end = chars[i + 2..].iter().position(|c| *c == '\'')?;
            Some(end + 3)
        }
        _ => (chars.get(i + 2) == Some(&'\'')).then_some(3),
    }
}

/// Names declared `#[cfg(test)] mod name;` (their files are test code).
fn test_module_declarations(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        rest = &rest[at + "#[cfg(test)]".len()..];
        let item = rest.trim_start();
        let item = item.strip_prefix("pub ").unwrap_or(item).trim_start();
        if let Some(decl) = item.strip_prefix("mod ") {
            let name: String = decl
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let after = decl.trim_start()[name.len()..].trim_start();
            if after.starts_with(';') {
                names.push(name);
            }
        }
    }
    names
}

/// The code with every `#[cfg(test)]` item blanked: up to its `;` or through its `{ … }`.
pub(crate) fn without_test_items(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + marker.len() <= out.len() {
        if out[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut depth = 0usize;
        while j < out.len() {
            let c = out[j];
            if c == '{' {
                depth += 1;
            } else if c == '}' {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            } else if c == ';' && depth == 0 {
                break;
            }
            j += 1;
        }
        let end = (j + 1).min(out.len());
        for c in &mut out[i..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = j + 1;
    }
    out.into_iter().collect()
}

/// The paths `code` (of module `module`) imports, absolute from the crate root, with their
/// 1-based lines: `crate::…` and `olmpack::…`, `super::…` and `self::…` made absolute, and
/// `child::…` for a child declared `mod child;` here. A `{…}` group (also over several
/// lines) yields one path per member.
fn imports(code: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let children = child_modules(code);
    let mut found = Vec::new();
    let mut line = 1;
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let c = rest.chars().next().unwrap_or(' ');
        if c == '\n' {
            line += 1;
        }
        let before = code[..at].chars().next_back().unwrap_or(' ');
        let starts_ident = !(before.is_alphanumeric() || before == '_' || before == ':');
        if starts_ident && let Some((base, after)) = path_start(rest, module, &children) {
            for path in expand(after) {
                found.push((line, [base.clone(), path].concat()));
            }
        }
        at += c.len_utf8();
    }
    found
}

/// At the start of a path, the module it starts from and the text after that prefix.
fn path_start<'a>(
    rest: &'a str,
    module: &[String],
    children: &[String],
) -> Option<(Vec<String>, &'a str)> {
    for root in ["crate::", "olmpack::"] {
        if let Some(after) = rest.strip_prefix(root) {
            return Some((Vec::new(), after));
        }
    }
    if let Some(after) = rest.strip_prefix("self::") {
        return Some((module.to_vec(), after));
    }
    if rest.starts_with("super::") {
        let mut after = rest;
        let mut ups = 0;
        while let Some(more) = after.strip_prefix("super::") {
            ups += 1;
            after = more;
        }
        let base = module.get(..module.len().checked_sub(ups)?)?;
        return Some((base.to_vec(), after));
    }
    children
        .iter()
        .find(|child| {
            rest.strip_prefix(child.as_str())
                .is_some_and(|r| r.starts_with("::"))
        })
        .map(|_| (module.to_vec(), rest))
}

/// The names of the child modules `code` declares in files of their own (`mod x;`).
fn child_modules(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line
                .strip_prefix("pub(crate) ")
                .or_else(|| line.strip_prefix("pub(super) "))
                .or_else(|| line.strip_prefix("pub "))
                .unwrap_or(line);
            let name = line.strip_prefix("mod ")?.strip_suffix(';')?.trim();
            Some(name.to_owned())
        })
        .collect()
}

/// `a::b::X` → `[[a, b, X]]`; `a::{b, c::{d, e}}` → `[[a, b], [a, c, d], [a, c, e]]`; a glob
/// ends its path (`a::*` → `[[a]]`).
fn expand(after: &str) -> Vec<Vec<String>> {
    let mut path = Vec::new();
    let mut rest = after;
    loop {
        let trimmed = rest.trim_start();
        if let Some(inner) = trimmed.strip_prefix('{') {
            let end = matching_brace(inner).unwrap_or(inner.len());
            return split_top_level(&inner[..end])
                .into_iter()
                .flat_map(expand)
                .map(|tail| [path.clone(), tail].concat())
                .collect();
        }
        let ident: String = trimmed
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            break;
        }
        rest = &trimmed[ident.len()..];
        path.push(ident);
        match rest.strip_prefix("::") {
            Some(more) => rest = more,
            None => break,
        }
    }
    if path.is_empty() {
        Vec::new()
    } else {
        vec![path]
    }
}

/// The index of the `}` closing a group whose `{` came just before `inner`.
fn matching_brace(inner: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `a, b::{c, d}, e` → `[a, b::{c, d}, e]`.
fn split_top_level(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
}

/// A cycle of the graph (its modules in order, the first repeated at the end), if any.
pub fn find_cycle(graph: &ModuleGraph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Open,
        Done,
    }
    fn visit<'a>(
        node: &'a str,
        graph: &'a ModuleGraph,
        state: &mut BTreeMap<&'a str, State>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(node, State::Open);
        stack.push(node);
        for next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            match state.get(next.as_str()) {
                Some(State::Open) => {
                    let from = stack.iter().position(|n| n == next).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[from..].iter().map(|s| (*s).to_owned()).collect();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(State::Done) => {}
                None => {
                    if let Some(cycle) = visit(next, graph, state, stack) {
                        return Some(cycle);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node, State::Done);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node.as_str()) {
            let mut stack = Vec::new();
            if let Some(cycle) = visit(node, graph, &mut state, &mut stack) {
                return Some(cycle);
            }
        }
    }
    None
}

/// `a -> b -> a`, then one line per step with the file and line that makes it.
fn describe_cycle(graph: &ModuleGraph, cycle: &[String]) -> String {
    let mut text = format!("  {}", cycle.join(" -> "));
    for step in cycle.windows(2) {
        let at = graph
            .get(&step[0])
            .and_then(|edges| edges.get(&step[1]))
            .map_or("?", String::as_str);
        text.push_str(&format!("\n  {} -> {} (first at {at})", step[0], step[1]));
    }
    text
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Source files for a rule's test: (path, text) pairs.
    pub(crate) fn files(list: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        list.iter()
            .map(|(p, t)| (PathBuf::from(p), (*t).to_owned()))
            .collect()
    }

    fn edges(graph: &ModuleGraph) -> Vec<String> {
        graph
            .iter()
            .flat_map(|(from, to)| to.keys().map(move |t| format!("{from}->{t}")))
            .collect()
    }

    #[test]
    fn a_small_cycle_is_found_and_named() {
        let graph = module_graph(&files(&[
            ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
            ("a.rs", "use crate::b::Thing;\n"),
            ("b/mod.rs", "pub mod inner;\n"),
            ("b/inner.rs", "fn f() { super::super::c::g(); }\n"),
            ("c.rs", "pub fn g() { crate::a::h() }\n"),
        ]));
        assert_eq!(edges(&graph), ["a->b", "b->c", "c->a"]);
        let cycle = find_cycle(&graph).expect("a -> b -> c -> a is a cycle");
        assert_eq!(cycle, ["a", "b", "c", "a"]);
        let text = describe_cycle(&graph, &cycle);
        assert!(text.contains("b -> c (first at b/inner.rs:1)"), "{text}");
    }

    #[test]
    fn one_way_imports_are_no_cycle() {
        let graph = module_graph(&files(&[
            ("a.rs", "use crate::{b, c::X};\nuse olmpack::c::Y;\n"),
            ("b.rs", "use crate::c::Z;\n"),
            ("c.rs", "use super::x;\n"),
        ]));
        assert_eq!(edges(&graph), ["a->b", "a->c", "b->c"]);
        assert_eq!(find_cycle(&graph), None);
    }

    #[test]
    fn tests_strings_and_comments_are_not_imports() {
        let graph = module_graph(&files(&[
            ("a.rs", "use crate::b::X;\n#[cfg(test)]\nmod tests;\n"),
            ("a/tests.rs", "use crate::c::Y;\n"),
            (
                "b.rs",
                "// crate::a::x\nconst S: &str = \"crate::a::y\";\nconst R: &str = r#\"crate::a\"#;\n\
                 fn f<'a>(_: &'a str) -> char { '{' }\n\
                 #[cfg(test)]\nmod tests {\n    use crate::a::Z;\n    fn g() { if true { crate::a::w(); } }\n}\n",
            ),
            ("c.rs", "/* crate::a::q */\n"),
        ]));
        assert_eq!(edges(&graph), ["a->b"]);
        assert_eq!(find_cycle(&graph), None);
    }

    #[test]
    fn an_import_group_over_several_lines_counts() {
        let graph = module_graph(&files(&[
            ("a.rs", "use crate::{\n    b::X,\n    c,\n};\n"),
            ("b.rs", ""),
            ("c.rs", "use crate::a::Q;\n"),
        ]));
        assert_eq!(edges(&graph), ["a->b", "a->c", "c->a"]);
        assert_eq!(find_cycle(&graph).unwrap(), ["a", "c", "a"]);
    }

    #[test]
    fn siblings_importing_each_other_are_a_circle_of_files() {
        let graph = file_graph(&files(&[
            ("lib.rs", "pub mod p;\n"),
            (
                "p/mod.rs",
                "mod a;\nmod b;\npub use a::A;\nfn f() { b::g() }\n",
            ),
            ("p/a.rs", "use super::{\n    b::B,\n};\n"),
            ("p/b.rs", "use super::a::A;\nuse super::Shared;\n"),
        ]));
        assert_eq!(
            edges(&graph),
            [
                "p/a.rs->p/b.rs",
                "p/b.rs->p/a.rs",
                "p/mod.rs->p/a.rs",
                "p/mod.rs->p/b.rs"
            ]
        );
        assert_eq!(graph["p/a.rs"]["p/b.rs"], "p/a.rs:1");
        let found = circles(&graph);
        assert_eq!(found, [["p/a.rs", "p/b.rs"]]);
        let text = describe_circle(&graph, &found[0]);
        assert!(
            text.contains("p/b.rs -> p/a.rs (first at p/b.rs:1)"),
            "{text}"
        );
    }

    #[test]
    fn a_child_using_its_parents_face_is_no_circle() {
        let graph = file_graph(&files(&[
            (
                "q/mod.rs",
                "mod c;\npub struct Finding;\nfn f() { c::check() }\n",
            ),
            (
                "q/c.rs",
                "use super::Finding;\nuse crate::q::Finding as F;\nuse self::x::Y;\n",
            ),
            ("r.rs", "use crate::q::Finding;\n"),
        ]));
        assert_eq!(edges(&graph), ["q/mod.rs->q/c.rs", "r.rs->q/mod.rs"]);
        assert!(circles(&graph).is_empty());
    }

    #[test]
    fn a_shipped_crate_reaching_a_test_only_crate_is_named() {
        let metadata = serde_json::json!({
            "packages": [
                {"id": "o", "name": "olmpack"},
                {"id": "e", "name": "olmpack-envtest"},
                {"id": "k", "name": "olmpack-testkit"},
            ],
            "resolve": {"nodes": [
                {"id": "o", "deps": [
                    {"pkg": "e", "dep_kinds": [{"kind": null}]},
                    {"pkg": "k", "dep_kinds": [{"kind": "dev"}]},
                ]},
                {"id": "e", "deps": [{"pkg": "k", "dep_kinds": [{"kind": null}]}]},
                {"id": "k", "deps": []},
            ]},
        });
        let chains = denied_chains(&metadata, "olmpack", DEV_ONLY).unwrap();
        assert_eq!(chains, [["olmpack", "olmpack-envtest", "olmpack-testkit"]]);
    }

    #[test]
    fn the_model_chain_to_a_denied_crate_is_shown() {
        let metadata = serde_json::json!({
            "packages": [
                {"id": "m", "name": "olmpack-model"},
                {"id": "s", "name": "serde"},
                {"id": "h", "name": "helper"},
                {"id": "t", "name": "tokio"},
                {"id": "d", "name": "tempfile"},
            ],
            "resolve": {"nodes": [
                {"id": "m", "deps": [
                    {"pkg": "s", "dep_kinds": [{"kind": null}]},
                    {"pkg": "h", "dep_kinds": [{"kind": null}]},
                    {"pkg": "d", "dep_kinds": [{"kind": "dev"}]},
                ]},
                {"id": "h", "deps": [{"pkg": "t", "dep_kinds": [{"kind": null}]}]},
                {"id": "s", "deps": []},
                {"id": "t", "deps": []},
                {"id": "d", "deps": []},
            ]},
        });
        let chains = denied_chains(&metadata, "olmpack-model", DENIED).unwrap();
        assert_eq!(chains, [["olmpack-model", "helper", "tokio"]]);
    }

    #[test]
    fn the_lower_layer_naming_olm_is_found() {
        let files = files(&[
            (
                "image/build.rs",
                "//! Images of files.\n\
                 pub const LABEL: &str = \"operators.operatorframework.io.index.configs.v1\";\n\
                 /// Serves the catalog with opm.\n\
                 fn f() { olmpack_model::plan::load(); }\n\
                 fn g() { olmpack_model::report::safe_line(\"x\"); }\n\
                 #[cfg(test)]\nmod tests {\n    const CSV: &str = \"kind: ClusterServiceVersion\";\n}\n",
            ),
            (
                "image/layout.rs",
                "//! OLMish olmpack layouts, CSVs, topmost.\n",
            ),
        ]);
        assert_eq!(
            olm_mentions(&files),
            [
                "image/build.rs:2: names operatorframework",
                "image/build.rs:3: names opm",
                "image/build.rs:4: uses olmpack_model beyond olmpack_model::report::safe_line",
            ]
        );
    }

    #[test]
    fn the_lower_layer_reaching_an_olm_crate_is_named() {
        let metadata = serde_json::json!({
            "packages": [
                {"id": "i", "name": "olmpack-oci"},
                {"id": "m", "name": "olmpack-model"},
                {"id": "o", "name": "olmpack"},
            ],
            "resolve": {"nodes": [
                {"id": "i", "deps": [
                    {"pkg": "m", "dep_kinds": [{"kind": null}]},
                    {"pkg": "o", "dep_kinds": [{"kind": null}]},
                ]},
                {"id": "m", "deps": []},
                {"id": "o", "deps": [{"pkg": "i", "dep_kinds": [{"kind": null}]}]},
            ]},
        });
        let chains = denied_chains(&metadata, "olmpack-oci", OLM_CRATES).unwrap();
        assert_eq!(chains, [["olmpack-oci", "olmpack"]]);
    }
}
