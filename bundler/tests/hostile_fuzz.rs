//! Structured-mutation fuzzing of every loader (plan, bundle manifests, annotations, catalog),
//! for a fixed budget in the normal test run.
//!
//! Mutations: deleted keys, type swaps, huge strings, deep nesting, alias bombs, duplicate
//! keys, invalid UTF-8, NUL, truncation, empty documents, CRLF, BOM — one to three per case,
//! applied to a valid seed. Properties: no panic, bounded time per case, and every problem
//! names its file; through the CLI (under a 2 GiB address-space limit and a deadline) the exit
//! code is 0, 1 or 2 and a failure names a file.
//!
//! Found cases are kept as regression inputs in `tests/fixtures/hostile/` (`<loader>-*.txt`)
//! and replayed first on every run.

mod hostile_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

use hostile_support::*;

/// The most one case may take in-process (generous: CI machines are slow and shared).
const CASE_DEADLINE: Duration = Duration::from_secs(20);

#[derive(Clone, Debug)]
enum Mutation {
    DeleteKey(usize),
    SwapType(usize, u8),
    HugeString(usize),
    DeepNesting(usize),
    AliasBomb,
    DuplicateKey,
    InvalidUtf8(usize),
    Nul(usize),
    Truncate(usize),
    EmptyDocuments,
    Crlf,
    Bom,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => any::<usize>().prop_map(Mutation::DeleteKey),
        3 => (any::<usize>(), 0u8..5).prop_map(|(i, t)| Mutation::SwapType(i, t)),
        1 => any::<usize>().prop_map(Mutation::HugeString),
        1 => (100usize..6000).prop_map(Mutation::DeepNesting),
        1 => Just(Mutation::AliasBomb),
        2 => Just(Mutation::DuplicateKey),
        1 => any::<usize>().prop_map(Mutation::InvalidUtf8),
        1 => any::<usize>().prop_map(Mutation::Nul),
        2 => any::<usize>().prop_map(Mutation::Truncate),
        1 => Just(Mutation::EmptyDocuments),
        1 => Just(Mutation::Crlf),
        1 => Just(Mutation::Bom),
    ]
}

/// Pre-order paths to every node of `value`, so a random index picks a node.
fn paths(value: &Value, here: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(here.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                here.push(k.clone());
                paths(v, here, out);
                here.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                here.push(i.to_string());
                paths(v, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

fn node_mut<'a>(value: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut current = value;
    for key in path {
        current = match current {
            Value::Object(map) => map.get_mut(key)?,
            Value::Array(items) => items.get_mut(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

fn pick(value: &Value, index: usize) -> Vec<String> {
    let mut all = Vec::new();
    paths(value, &mut Vec::new(), &mut all);
    all[index % all.len()].clone()
}

/// Applies a value-level mutation; returns false for text-level ones.
fn mutate_value(value: &mut Value, m: &Mutation) -> bool {
    match m {
        Mutation::DeleteKey(i) => {
            let path = pick(value, *i);
            if let Some((last, parent)) = path.split_last()
                && let Some(Value::Object(map)) = node_mut(value, parent)
            {
                map.remove(last);
            }
        }
        Mutation::SwapType(i, t) => {
            let path = pick(value, *i);
            if let Some(node) = node_mut(value, &path) {
                *node = match t {
                    0 => Value::from(42),
                    1 => Value::from("swapped"),
                    2 => serde_json::json!([1, "two"]),
                    3 => serde_json::json!({"k": "v"}),
                    _ => Value::Null,
                };
            }
        }
        Mutation::HugeString(i) => {
            let path = pick(value, *i);
            if let Some(node) = node_mut(value, &path) {
                *node = Value::from("h".repeat(1 << 20));
            }
        }
        _ => return false,
    }
    true
}

fn mutate_text(bytes: &mut Vec<u8>, m: &Mutation) {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match m {
        Mutation::AliasBomb => {
            let mut bomb = String::from("\nb0: &b0 [x, x, x, x, x, x, x, x]\n");
            for i in 1..9 {
                let p = i - 1;
                bomb.push_str(&format!(
                    "b{i}: &b{i} [*b{p}, *b{p}, *b{p}, *b{p}, *b{p}, *b{p}, *b{p}, *b{p}]\n"
                ));
            }
            bytes.extend_from_slice(bomb.as_bytes());
        }
        Mutation::DuplicateKey => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            if let Some(line) = text
                .lines()
                .find(|l| !l.starts_with([' ', '-', '#']) && l.contains(':'))
            {
                bytes.extend_from_slice(format!("\n{line}\n").as_bytes());
            }
        }
        Mutation::InvalidUtf8(i) => {
            let pos = at(*i, bytes.len());
            bytes.splice(pos..pos, [0xff, 0xfe, 0xc3]);
        }
        Mutation::Nul(i) => {
            let pos = at(*i, bytes.len());
            bytes.insert(pos, 0);
        }
        Mutation::Truncate(i) => {
            let pos = at(*i, bytes.len());
            bytes.truncate(pos);
        }
        Mutation::EmptyDocuments => {
            let mut out = b"---\n# nothing\n---\n".to_vec();
            out.append(bytes);
            out.extend_from_slice(b"\n---\n");
            *bytes = out;
        }
        Mutation::Crlf => {
            let text = String::from_utf8_lossy(bytes).replace('\n', "\r\n");
            *bytes = text.into_bytes();
        }
        Mutation::DeepNesting(depth) => {
            let nested = format!("\ndeep: {}{}\n", "[".repeat(*depth), "]".repeat(*depth));
            bytes.extend_from_slice(nested.as_bytes());
        }
        Mutation::Bom => {
            let mut out = b"\xEF\xBB\xBF".to_vec();
            out.append(bytes);
            *bytes = out;
        }
        _ => {}
    }
}

/// A seed (YAML text) with the mutations applied: value ones first, then text ones.
fn apply(seed: &str, mutations: &[Mutation]) -> Vec<u8> {
    let mut value: Value = olmpack_model::yaml::from_str(seed).unwrap();
    let mut text_level = Vec::new();
    for m in mutations {
        if !mutate_value(&mut value, m) {
            text_level.push(m);
        }
    }
    let mut bytes = olmpack_model::yaml::to_string(&value).unwrap().into_bytes();
    for m in text_level {
        mutate_text(&mut bytes, m);
    }
    bytes
}

fn seeds() -> Vec<(&'static str, String)> {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("example");
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bundles/sdk-memcached");
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
    vec![
        ("plan", read(example.join("olmpack.yaml"))),
        (
            "csv",
            read(bundle.join("manifests/memcached-operator.clusterserviceversion.yaml")),
        ),
        (
            "annotations",
            read(bundle.join("metadata/annotations.yaml")),
        ),
        ("catalog", CATALOG.split("---\n").nth(3).unwrap().to_owned()),
    ]
}

/// Runs one loader on `bytes` in-process: no panic, bounded time, problems name the file.
fn check_in_process(loader: &str, bytes: &[u8]) {
    let start = Instant::now();
    let file = Path::new("fuzzed.yaml");
    let result = std::panic::catch_unwind(|| match loader {
        "plan" => match std::str::from_utf8(bytes) {
            Ok(text) => match olmpack_model::plan::parse(file, text) {
                Ok(_) => None,
                Err(e) => Some(e.to_string()),
            },
            Err(_) => None,
        },
        "csv" | "annotations" => {
            let rel = if loader == "csv" {
                Path::new("manifests/csv.yaml")
            } else {
                Path::new("metadata/annotations.yaml")
            };
            let bundle = olmpack::bundle::load::load_files(Path::new("b"), [(rel, bytes)]);
            let bundle_problem = bundle.problems.first().map(|p| {
                assert_eq!(p.file, rel, "the problem names the file");
                p.message.clone()
            });
            // The validator must cope with whatever loaded.
            let _ = olmpack::bundle::validate::validate(&bundle, &Default::default());
            bundle_problem.map(|m| format!("fuzzed.yaml: {m}"))
        }
        _ => {
            let (_, problems) = olmpack::catalog::load::parse_file(file, bytes);
            problems.first().map(|p| {
                assert_eq!(p.file, file, "the problem names the file");
                format!("fuzzed.yaml: {}", p.message)
            })
        }
    });
    let elapsed = start.elapsed();
    let message = result.unwrap_or_else(|_| panic!("{loader} loader panicked"));
    assert!(elapsed < CASE_DEADLINE, "{loader}: took {elapsed:?}");
    if let Some(message) = message {
        assert!(message.contains("fuzzed.yaml"), "{loader}: {message}");
        for leak in [
            "DuplicateKeyPolicy",
            "from_str_multiple",
            "budget breached",
            "expected struct",
        ] {
            assert!(!message.contains(leak), "{loader}: {message}");
        }
    }
}

fn regression_inputs() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let loader = name.split('-').next().unwrap().to_owned();
        out.push((loader, std::fs::read(&path).unwrap()));
    }
    out.sort();
    assert!(!out.is_empty(), "no regression inputs in {}", dir.display());
    out
}

#[test]
fn hostile_fuzz_loaders_in_process() {
    for (loader, bytes) in regression_inputs() {
        check_in_process(&loader, &bytes);
    }
    for (loader, seed) in seeds() {
        let mut runner = TestRunner::new(Config {
            cases: 40,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&proptest::collection::vec(mutation(), 1..4), |mutations| {
                check_in_process(loader, &apply(&seed, &mutations));
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{loader}: {e}"));
    }
}

#[test]
fn hostile_fuzz_cli_exit_codes() {
    let (dir, plan) = example();
    let d = dir.path();
    let plan_seed = std::fs::read_to_string(&plan).unwrap();
    let catalog_seed = CATALOG.split("---\n").nth(3).unwrap().to_owned();
    write(
        &d.join("c/demo/package.yaml"),
        CATALOG.split("---\n").nth(1).unwrap(),
    );
    write(
        &d.join("c/demo/channel.yaml"),
        CATALOG.split("---\n").nth(2).unwrap(),
    );
    let mut runner = TestRunner::new(Config {
        cases: 16,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(any::<bool>(), proptest::collection::vec(mutation(), 1..3)),
            |(on_plan, mutations)| {
                let (args, file): (&[&str], &str) = if on_plan {
                    std::fs::write(&plan, apply(&plan_seed, &mutations)).unwrap();
                    (&["generate", "--check"], "olmpack.yaml")
                } else {
                    std::fs::write(
                        d.join("c/demo/bundle.yaml"),
                        apply(&catalog_seed, &mutations),
                    )
                    .unwrap();
                    (&["catalog", "validate", "c"], "bundle.yaml")
                };
                let out = run_with(d, args, Duration::from_secs(60));
                prop_assert!(
                    [0, 1, 2].contains(&out.code),
                    "exit {}: {}",
                    out.code,
                    out.all()
                );
                // A stale --check (exit 1 with a diff) names the output; everything else an
                // input file (the mutated one, or another the problem is about).
                if out.code == 2 || (out.code == 1 && !out.all().contains("difference(s)")) {
                    let named = [file, "package.yaml", "channel.yaml", "deploy/"]
                        .iter()
                        .any(|f| out.all().contains(f));
                    prop_assert!(named, "{}", out.all());
                }
                out.in_our_words();
                Ok(())
            },
        )
        .unwrap();
}
