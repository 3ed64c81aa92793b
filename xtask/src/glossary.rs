//! `cargo xtask lint`'s glossary checks: each word of the glossary (docs/architecture.md) keeps its one meaning
//! in product code, where a machine can tell.
//!
//! - [`check_words`]: a word that belongs to one piece of code ([`WORDS`]: "render" is opm's
//!   render) appears — in code, comments or strings of the product sources ([`SOURCES`]) —
//!   only in that code's files, on a line that names it (`opm render`), or where an
//!   [`Allowed`] entry says why; a phrase that named the wrong thing ("release job" for
//!   `olmpack generate`, `upgrade live`, a command that never existed) appears nowhere.
//! - [`check_type_names`]: a glossary type name ([`ONE_TYPE`]: `Plan`, `Release`, `Case`, …)
//!   is defined once in product code, unless an [`AllowedType`] entry says why.
//! - [`check_plan_types`]: a type whose name says `Plan` is the release plan (or OLM's
//!   `InstallPlan`); a function named `plan` is the release plan's.
//! - [`check_readme`]: the glossary has a row for every word of [`GLOSSARY`], and every
//!   path the Layout tables (and the glossary) of docs/architecture.md name exists.
//! - [`check_allow_lists`]: every allow-list entry still matches something (a rename done
//!   takes its entry with it).
//!
//! Allow-list entries name the file, the line they cover and why: each is a known exception
//! (the same concept in two shapes, or a rename left for later), so a new use shows up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::layout::{blank_strings_and_comments, rust_files, without_test_items};

/// The product sources the glossary holds (xtask, which spells the rules, is left out).
pub const SOURCES: &[&str] = &[
    "bundler/src",
    "model/src",
    "oci/src",
    "upgrade-tests/src",
    "operator/src",
    "crd-migrate/src",
];

/// The words the glossary defines, each on a row of its own.
pub const GLOSSARY: &[&str] = &[
    "plan", "release", "step", "generate", "lay out", "render", "check", "test", "case", "edge",
    "consumer", "finding", "verdict", "live",
];

/// A word (or phrase) kept to one meaning by where it may appear.
#[derive(Debug)]
pub struct Word {
    /// The word, lower case; matched case-insensitively at the start of a word, so
    /// `rendered`, `Render` and `render_built` match and `surrender` does not.
    pub text: &'static str,
    /// Its one meaning, or why the phrase names nothing.
    pub meaning: &'static str,
    /// Files (or directories, ending in `/`) that are the code the word names: free there.
    pub home: &'static [&'static str],
    /// A line holding one of these names the meaning itself (`opm render`): fine anywhere.
    pub contexts: &'static [&'static str],
    /// Known exceptions.
    pub allowed: &'static [Allowed],
}

/// A known exception to a [`Word`]: lines of `path` holding `line` (every line when empty).
#[derive(Debug)]
pub struct Allowed {
    /// The file, from the workspace root.
    pub path: &'static str,
    /// A piece of the lines allowed; empty for the whole file.
    pub line: &'static str,
    /// Why this use is allowed.
    pub reason: &'static str,
}

/// The words whose meaning a machine can check.
pub const WORDS: &[Word] = &[
    Word {
        text: "render",
        meaning: "opm's render: a bundle (directory or image) turned into the catalog's \
                  `olm.bundle` blob (`catalog render`, `render-template`); laying out bundle \
                  files is \"lay out\", printing a catalog is \"serialise\"",
        home: &[
            // opm's render itself, its streaming, templates and command.
            "bundler/src/catalog/render.rs",
            "bundler/src/catalog/stream.rs",
            "bundler/src/catalog/template/",
            "bundler/src/cli/catalog.rs",
            // They call it: each built bundle rendered into the generated catalog.
            "bundler/src/build.rs",
            "bundler/src/catalog/generate.rs",
        ],
        contexts: &[
            "opm render",
            "opm's render",
            "catalog render",
            "catalog_render",
            "render-template",
            "render::",
            "[`render`]",
            "mod render;",
        ],
        allowed: &[Allowed {
            path: "bundler/src/cli/mod.rs",
            line: "Generate, render, validate and draw File-Based Catalogs",
            reason: "the `catalog` command's help lists its subcommands, `catalog render` \
                         among them",
        }],
    },
    Word {
        text: "release job",
        meaning: "nothing in product code: `olmpack generate` is the generate job and \
                  `olmpack release` the release; the CI job that runs it is a release workflow",
        home: &[],
        contexts: &[],
        allowed: &[],
    },
    Word {
        text: "upgrade live",
        meaning: "no such command: the live answer is `olmpack upgrade test`",
        home: &[],
        contexts: &[],
        allowed: &[],
    },
    Word {
        text: "printed plan",
        meaning: "nothing: `olmpack release` prints its steps; the plan is olmpack.yaml",
        home: &[],
        contexts: &[],
        allowed: &[],
    },
    Word {
        text: "plan of steps",
        meaning: "nothing: `olmpack release` prints its steps; the plan is olmpack.yaml",
        home: &[],
        contexts: &[],
        allowed: &[],
    },
    Word {
        text: "upgrade::live",
        meaning: "`upgrade test`'s module is `olmpack::upgrade::test`, named for its command \
                  (the engine it drives is `olmpack_envtest::live`)",
        home: &[],
        contexts: &[],
        allowed: &[],
    },
];

/// Type names that must name one concept: defined once in product code.
pub const ONE_TYPE: &[&str] = &[
    "Plan", "Release", "Step", "Case", "Edge", "Consumer", "Finding", "Verdict",
];

/// A known second definition of a [`ONE_TYPE`] name.
#[derive(Debug)]
pub struct AllowedType {
    /// The type name.
    pub name: &'static str,
    /// The files defining it, from the workspace root.
    pub paths: &'static [&'static str],
    /// Why.
    pub reason: &'static str,
}

/// Type names defined more than once, and why.
pub const ALLOWED_TYPES: &[AllowedType] = &[];

/// Type names that say `Plan` and are the release plan (or OLM's InstallPlan kind).
pub const PLAN_TYPES: &[&str] = &[
    "Plan",
    "LoadedPlan",
    "PlanError",
    "PlanLoadError",
    "PlanInputs",
    "PlanCommand",
    "ReadPlan",
    "InstallPlan",
    "InstallPlanSpec",
    "InstallPlanStatus",
    "InstallPlanStep",
];

/// Known other uses of "plan" in names: `path`'s `name`, and why.
pub const ALLOWED_PLAN_NAMES: &[(&str, &str, &str)] = &[];

/// Where the glossary and the Layout tables are.
const ARCHITECTURE: &str = "docs/architecture.md";

/// Every glossary check, all run; fails with every problem found.
pub fn check_all(root: &Path) -> Result<()> {
    let mut files = Vec::new();
    for src in SOURCES {
        for (path, text) in rust_files(&root.join(src))? {
            files.push((Path::new(src).join(path), text));
        }
    }
    let readme = std::fs::read_to_string(root.join(ARCHITECTURE))?;
    let mut problems = check_words(&files, WORDS);
    problems.extend(check_type_names(&files, ONE_TYPE, ALLOWED_TYPES));
    problems.extend(check_plan_types(&files, ALLOWED_PLAN_NAMES));
    problems.extend(check_allow_lists(&files));
    problems.extend(check_readme(&readme, GLOSSARY, &|p| root.join(p).exists()));
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "glossary: {} problem(s) (docs/architecture.md's Glossary says what each word means)\n{}",
        problems.len(),
        problems.join("\n")
    )
}

/// Where `word` starts a word in `line` (lower-cased match; the character before it is not
/// a lower-case letter, so `Render` in `GenerateError::Render` and `_render` count).
fn has_word(line: &str, word: &str) -> bool {
    let lower = line.to_lowercase();
    let bytes = line.as_bytes();
    lower
        .match_indices(word)
        .any(|(at, _)| at == 0 || !bytes.get(at - 1).is_some_and(|b| b.is_ascii_lowercase()))
}

fn path_str(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// Every line of `files` that uses a [`Word`] outside its meaning, as `file:line: ...`.
pub fn check_words(files: &[(PathBuf, String)], words: &[Word]) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, text) in files {
        let path = path_str(path);
        for word in words {
            let at_home = word
                .home
                .iter()
                .any(|h| path == *h || (h.ends_with('/') && path.starts_with(h)));
            if at_home {
                continue;
            }
            for (n, line) in text.lines().enumerate() {
                if !has_word(line, word.text) || word.contexts.iter().any(|c| line.contains(c)) {
                    continue;
                }
                let allowed = word
                    .allowed
                    .iter()
                    .any(|a| a.path == path && line.contains(a.line));
                if !allowed {
                    problems.push(format!(
                        "  {path}:{}: \"{}\" means {}: {}",
                        n + 1,
                        word.text,
                        word.meaning,
                        line.trim()
                    ));
                }
            }
        }
    }
    problems
}

/// A file of tests only (`tests.rs`, or under a `tests/` folder): its types are fixtures.
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// Allow-list entries that match nothing in `files` any more, each with its reason.
pub fn check_allow_lists(files: &[(PathBuf, String)]) -> Vec<String> {
    let text_of = |path: &str| {
        files
            .iter()
            .find(|(p, _)| path_str(p) == path)
            .map(|(_, t)| t.as_str())
    };
    let stale = |what: String, reason: &str| {
        format!("  allow-list entry {what} matches nothing (remove it): {reason}")
    };
    let mut problems = Vec::new();
    for word in WORDS {
        for a in word.allowed {
            let used = text_of(a.path).is_some_and(|text| {
                text.lines()
                    .any(|l| has_word(l, word.text) && l.contains(a.line))
            });
            if !used {
                problems.push(stale(format!("\"{}\" in {}", word.text, a.path), a.reason));
            }
        }
    }
    for a in ALLOWED_TYPES {
        let defines = |path: &&str| {
            text_of(path).is_some_and(|t| defined_types(t).iter().any(|(_, n)| n == a.name))
        };
        if !a.paths.iter().all(defines) {
            problems.push(stale(format!("type `{}`", a.name), a.reason));
        }
    }
    for (path, name, reason) in ALLOWED_PLAN_NAMES {
        let all = ["struct", "enum", "type", "trait", "fn", "mod"];
        let used = text_of(path).is_some_and(|t| defined(t, &all).iter().any(|(_, n)| n == name));
        if !used {
            problems.push(stale(format!("`{name}` in {path}"), reason));
        }
    }
    problems
}

/// The types (struct, enum, type alias, trait) `code` defines, with their lines.
fn defined_types(text: &str) -> Vec<(usize, String)> {
    defined(text, &["struct", "enum", "type", "trait"])
}

/// The names `text`'s code defines with one of `keywords` (items only: comments, strings and
/// `#[cfg(test)]` items left out; `pub(crate)`, `async`, `const` and `unsafe` in front are
/// fine).
fn defined(text: &str, keywords: &[&str]) -> Vec<(usize, String)> {
    let code = without_test_items(&blank_strings_and_comments(text));
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line.trim_start();
        loop {
            if let Some(after) = rest.strip_prefix("pub(") {
                rest = after.split_once(')').map_or("", |(_, r)| r).trim_start();
                continue;
            }
            let qualifier = ["pub ", "async ", "const ", "unsafe "]
                .iter()
                .find_map(|q| rest.strip_prefix(q));
            match qualifier {
                Some(after) => rest = after.trim_start(),
                None => break,
            }
        }
        for keyword in keywords {
            let Some(after) = rest.strip_prefix(keyword) else {
                continue;
            };
            if !after.starts_with(' ') {
                continue;
            }
            let name: String = after
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push((n + 1, name));
            }
        }
    }
    out
}

/// Every [`ONE_TYPE`] name defined in more than one file that [`ALLOWED_TYPES`] does not
/// cover, naming each definition.
pub fn check_type_names(
    files: &[(PathBuf, String)],
    names: &[&str],
    allowed: &[AllowedType],
) -> Vec<String> {
    let mut defs: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (path, text) in files.iter().filter(|(p, _)| !is_test_file(p)) {
        let path = path_str(path);
        for (line, name) in defined_types(text) {
            if let Some(known) = names.iter().find(|n| **n == name) {
                defs.entry(known)
                    .or_default()
                    .push(format!("{path}:{line}"));
            }
        }
    }
    let mut problems = Vec::new();
    for (name, places) in defs {
        if places.len() < 2 {
            continue;
        }
        let file = |p: &String| p.rsplit_once(':').map_or(p.clone(), |(f, _)| f.to_owned());
        let covered = allowed
            .iter()
            .any(|a| a.name == name && places.iter().all(|p| a.paths.contains(&file(p).as_str())));
        if !covered {
            problems.push(format!(
                "  type `{name}` is defined {} times (one name, one concept; rename one): {}",
                places.len(),
                places.join(", ")
            ));
        }
    }
    problems
}

/// Types whose name says `Plan` that are not the release plan's, and functions named `plan`
/// outside it, unless [`ALLOWED_PLAN_NAMES`] lists them.
pub fn check_plan_types(
    files: &[(PathBuf, String)],
    allowed_names: &[(&str, &str, &str)],
) -> Vec<String> {
    let plan_home = |p: &str| p.starts_with("model/src/plan") || p == "bundler/src/plan.rs";
    let mut problems = Vec::new();
    for (path, text) in files.iter().filter(|(p, _)| !is_test_file(p)) {
        let path = path_str(path);
        let allowed = |name: &str| {
            allowed_names
                .iter()
                .any(|(p, n, _)| *p == path && *n == name)
        };
        for (line, name) in defined_types(text) {
            if name.contains("Plan") && !PLAN_TYPES.contains(&name.as_str()) && !allowed(&name) {
                problems.push(format!(
                    "  {path}:{line}: type `{name}`: \"plan\" is the release plan (olmpack.yaml); name this one for what it holds"
                ));
            }
        }
        for (line, name) in defined(text, &["fn"]) {
            if name == "plan" && !plan_home(&path) && !allowed(&name) {
                problems.push(format!(
                    "  {path}:{line}: `plan`: \"plan\" is the release plan (olmpack.yaml); name this one for what it does"
                ));
            }
        }
    }
    problems
}

/// docs/architecture.md's glossary lacks a row for a word of `glossary`, or a Layout table names a path
/// that `exists` denies.
pub fn check_readme(readme: &str, glossary: &[&str], exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut problems = Vec::new();
    let section = |title: &str| -> Vec<&str> {
        readme
            .lines()
            .skip_while(|l| !l.starts_with(title))
            .skip(1)
            .take_while(|l| !l.starts_with("## ") && !l.starts_with("### "))
            .collect()
    };
    let glossary_rows = section("## Glossary");
    if glossary_rows.is_empty() {
        problems.push("  docs/architecture.md has no `## Glossary` section".to_owned());
    }
    for word in glossary {
        let row = format!("| {word} |");
        if !glossary_rows.iter().any(|l| l.starts_with(&row)) {
            problems.push(format!(
                "  docs/architecture.md's glossary has no row `{row}`"
            ));
        }
    }
    // The files and folders the glossary's last column names, under `bundler/src/`.
    for row in glossary_rows.iter().filter(|l| l.starts_with("| ")) {
        let in_code = row.trim_end_matches('|').rsplit('|').next().unwrap_or("");
        for path in in_code.split('`').skip(1).step_by(2) {
            let names_path = !path.contains(' ') && (path.ends_with(".rs") || path.ends_with('/'));
            let named = format!("bundler/src/{path}");
            if names_path && !path.contains("::") && !exists(&named) {
                problems.push(format!(
                    "  docs/architecture.md's glossary names `{path}`, which is not in bundler/src/"
                ));
            }
        }
    }
    let tables = [
        ("## Layout", ""),
        ("### A map of `olmpack` (`bundler/src/`)", "bundler/src/"),
    ];
    for (title, base) in tables {
        for row in section(title).iter().filter(|l| l.starts_with("| `")) {
            let first = row.split('|').nth(1).unwrap_or("");
            for path in first.split('`').skip(1).step_by(2) {
                let path = format!("{base}{path}");
                if !exists(&path) {
                    problems.push(format!(
                        "  docs/architecture.md's \"{title}\" names `{path}`, which does not exist"
                    ));
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::layout::tests::files;

    #[test]
    fn render_outside_opm_render_code_fails_the_lint() {
        let problems = check_words(
            &files(&[
                (
                    "bundler/src/bundle/files.rs",
                    "//! Rendering a bundle to its files.\n",
                ),
                (
                    "bundler/src/bundle/generate.rs",
                    "fn f() { render_one(x) }\n",
                ),
            ]),
            WORDS,
        );
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(problems[0].contains("bundler/src/bundle/files.rs:1"));
        assert!(problems[1].contains("render_one"));
    }

    #[test]
    fn render_in_its_home_or_naming_opm_render_passes() {
        let problems = check_words(
            &files(&[
                (
                    "bundler/src/catalog/render.rs",
                    "pub fn render_built() {}\n",
                ),
                (
                    "bundler/src/catalog/template/mod.rs",
                    "// rendered bundles\n",
                ),
                (
                    "bundler/src/catalog/gojson.rs",
                    "/// as `opm render -o json` prints\n",
                ),
                (
                    "bundler/src/catalog/graph.rs",
                    "/// no word here: surrender\n",
                ),
            ]),
            WORDS,
        );
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn an_allowed_line_passes_and_the_rest_of_its_file_does_not() {
        let problems = check_words(
            &files(&[(
                "bundler/src/cli/mod.rs",
                "/// Generate, render, validate and draw File-Based Catalogs.\nfn render() {}\n",
            )]),
            WORDS,
        );
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].contains("bundler/src/cli/mod.rs:2"));
    }

    #[test]
    fn a_phrase_that_named_the_wrong_thing_fails_anywhere() {
        let problems = check_words(
            &files(&[
                (
                    "bundler/src/cli/jobs/generate.rs",
                    "//! The release job: bundles.\n",
                ),
                (
                    "upgrade-tests/src/lib.rs",
                    "//! what `olmpack upgrade live` runs\n",
                ),
                ("bundler/src/lib.rs", "//! [`upgrade::live`]\n"),
            ]),
            WORDS,
        );
        assert_eq!(problems.len(), 3, "{problems:#?}");
    }

    #[test]
    fn a_glossary_type_defined_twice_fails_unless_allowed() {
        let two = files(&[
            ("model/src/plan/mod.rs", "pub struct Release {\n}\n"),
            ("operator/src/releases.rs", "/// x\npub struct Release {}\n"),
            (
                "bundler/src/x.rs",
                "// struct Release in a comment\nlet s = \"enum Release\";\n",
            ),
            (
                "bundler/src/y.rs",
                "#[cfg(test)]\nmod tests {\n    struct Release;\n}\n",
            ),
            ("bundler/src/z/tests.rs", "struct Release;\n"),
        ]);
        let problems = check_type_names(&two, ONE_TYPE, ALLOWED_TYPES);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].contains("model/src/plan/mod.rs:1, operator/src/releases.rs:2"));

        let allowed = [AllowedType {
            name: "Release",
            paths: &["model/src/plan/mod.rs", "operator/src/releases.rs"],
            reason: "test",
        }];
        assert!(check_type_names(&two, ONE_TYPE, &allowed).is_empty());
    }

    #[test]
    fn a_plan_that_is_not_the_release_plan_fails() {
        let allowed = [
            ("bundler/src/image/push.rs", "PushPlan", "why"),
            ("bundler/src/image/push.rs", "plan", "why"),
        ];
        let problems = check_plan_types(
            &files(&[
                ("model/src/plan/mod.rs", "pub struct LoadedPlan;\n"),
                (
                    "bundler/src/supply/mod.rs",
                    "pub struct SigningPlan;\npub fn plan() {}\n",
                ),
                (
                    "bundler/src/image/push.rs",
                    "struct PushPlan;\nfn plan() {}\n",
                ),
            ]),
            &allowed,
        );
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(problems[0].contains("SigningPlan"));
        assert!(problems[1].contains("bundler/src/supply/mod.rs:2"));
    }

    #[test]
    fn the_readme_glossary_and_layout_are_held_to_the_tree() {
        let readme = "# x\n## Glossary\n\nRules in `xtask/src/glossary.rs`.\n\n| word | meaning |\n| --- | --- |\n\
                      | render | opm's `manifests/` | `catalog/render.rs`, `catalog/gone.rs` |\n\
                      ## Layout\n\n| `model/` | m |\n| `gone/`, `model/` | g |\n";
        let exists = |p: &str| p == "model/" || p == "bundler/src/catalog/render.rs";
        let problems = check_readme(readme, &["render", "plan"], &exists);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(problems[0].contains("| plan |"));
        assert!(problems[1].contains("`catalog/gone.rs`"));
        assert!(problems[2].contains("`gone/`"));
    }
}
