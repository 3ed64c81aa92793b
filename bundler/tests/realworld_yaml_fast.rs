//! The fast YAML reader (`olmpack_model::yaml::value_from_str`'s dedicated path) against the full
//! parser on every `.yaml`, `.yml` and `.json` file of the community-operators corpus: for the
//! whole file and for each of its `---`-separated documents, the fast reader must give exactly
//! the full parser's value, or decline; a stream of several documents, which the fast path
//! of `from_multi_str` reads cut at its `---` lines, must read as the full parser reads it
//! whole. The fast reader must also read most of the corpus, or it would not make rendering
//! faster.
//!
//! Run: `cargo xtask conformance realworld_yaml_fast` (unpacks the corpus once).

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use olmpack_model::yaml;
use serde_json::Value;

/// The share of the corpus's YAML bytes the fast reader must read itself (it reads 98.8%).
const MIN_FAST_SHARE: f64 = 0.95;

/// The whole text, then each document between `---` lines when there are several.
fn inputs(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            docs.push(String::new());
        } else if let Some(last) = docs.last_mut() {
            last.push_str(line);
        }
    }
    let mut out = vec![text.to_owned()];
    if docs.len() > 1 {
        out.extend(docs);
    }
    out
}

#[derive(Default)]
struct Tally {
    /// Files that are not UTF-8 text: neither reader takes them (render refuses them).
    not_utf8: AtomicUsize,
    inputs: AtomicUsize,
    /// Files of several documents, read whole both ways.
    streams: AtomicUsize,
    fast: AtomicUsize,
    bytes: AtomicUsize,
    fast_bytes: AtomicUsize,
    mismatches: Mutex<Vec<String>>,
}

impl Tally {
    fn check(&self, file: &Path, input: &str) {
        self.inputs.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(input.len(), Ordering::Relaxed);
        let Some(fast) = yaml::fast_value_from_str(input) else {
            return;
        };
        self.fast.fetch_add(1, Ordering::Relaxed);
        self.fast_bytes.fetch_add(input.len(), Ordering::Relaxed);
        let full = yaml::from_str::<Value>(input);
        if full.as_ref().ok() != Some(&fast) {
            let full = match full {
                Ok(v) => format!("a different value ({} bytes as JSON)", v.to_string().len()),
                Err(e) => format!("an error: {e}"),
            };
            self.mismatches.lock().unwrap().push(format!(
                "{}: the fast reader read a value, the full parser {full}",
                file.display()
            ));
        }
    }

    fn check_stream(&self, file: &Path, text: &str) {
        self.streams.fetch_add(1, Ordering::Relaxed);
        let ours = yaml::from_multi_str(text).map_err(|e| e.to_string());
        if ours != yaml::full_multi_from_str(text).map_err(|e| e.to_string()) {
            self.mismatches.lock().unwrap().push(format!(
                "{}: the stream reads differently cut at its `---` lines",
                file.display()
            ));
        }
    }
}

#[test]
fn realworld_fast_yaml_reader_matches_the_full_parser() {
    let Some(corpus) = olmpack_testkit::corpus::require(
        olmpack_testkit::corpus::COMMUNITY_OPERATORS,
        "realworld_fast_yaml_reader_matches_the_full_parser",
    ) else {
        return;
    };
    let files = olmpack_testkit::corpus::files(&corpus, &["yaml", "yml", "json"]);
    assert!(
        files.len() > 5000,
        "only {} files in the corpus",
        files.len()
    );
    let tally = Tally::default();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(file) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let Ok(text) = std::fs::read_to_string(file) else {
                        tally.not_utf8.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    let inputs = inputs(&text);
                    if inputs.len() > 1 {
                        tally.check_stream(file, &text);
                    }
                    for input in inputs {
                        tally.check(file, &input);
                    }
                }
            });
        }
    });
    let (bytes, fast_bytes) = (tally.bytes.into_inner(), tally.fast_bytes.into_inner());
    let share = fast_bytes as f64 / bytes.max(1) as f64;
    println!(
        "{} files ({} not UTF-8, skipped; {} of several documents), {} inputs: the fast reader read {} ({:.1}% of {} bytes), declined the rest",
        files.len(),
        tally.not_utf8.into_inner(),
        tally.streams.into_inner(),
        tally.inputs.into_inner(),
        tally.fast.into_inner(),
        100.0 * share,
        bytes
    );
    let mismatches = tally.mismatches.into_inner().unwrap();
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(
        share >= MIN_FAST_SHARE,
        "the fast reader read only {:.1}% of the corpus's bytes (at least {:.0}% expected)",
        100.0 * share,
        100.0 * MIN_FAST_SHARE
    );
}
