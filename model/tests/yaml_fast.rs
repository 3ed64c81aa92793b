//! The fast YAML reader behind `olmpack_model::yaml::value_from_str` against the full parser,
//! on tricky scalars and structures: it must give the full parser's value or decline, and
//! must read the rows marked `true` itself.

use olmpack_model::yaml::{fast_value_from_str, from_str, value_from_str};
use serde_json::Value;

/// Inputs, and whether the fast reader must read them itself (`false`: it must decline).
const CASES: &[(&str, bool)] = &[
    ("a: yes\nb: on\nc: Off\nd: y\ne: N\nf: TRUE\ng: no\n", true),
    ("a: ~\nb: null\nc: Null\nd: NULL\ne:\nf: nULL\n", true),
    (
        "a: 0x1F\nb: 1e3\nc: 0o17\nd: +1\ne: .5\nf: 1.0\ng: 007\n",
        true,
    ),
    (
        "a: 0X1F\nb: 1_000\nc: -12\nd: -0\ne: 18446744073709551616\n",
        true,
    ),
    (
        "a: 1.2.3\nb: 2021-01-01\nc: 1:30\nd: 12:30:00\ne: -.5\n",
        true,
    ),
    ("a: .inf\n", false),
    (
        "a: \"quoted\"\nb: 'it''s'\nc: \"esc \\t \\u00e9 \\x41 \\\\ \\\" \\/\"\n",
        true,
    ),
    ("a: \"\\N\\_\\L\\P\\e\\0\\a\\b\\v\\f\\r\\ \"\n", true),
    ("a: \"\\uD800\"\n", false),
    ("a: \"bad \\q escape\"\n", false),
    (
        "a: plain text\n  over lines\n\n  and a paragraph\nb: 1\n",
        true,
    ),
    ("a: x\n  - y\n  [z] &w *v !u ? t :s\n", true),
    ("a:\n  x\n  y\n", true),
    ("a: 'one\n  two\n\n  three '\nb: \"x\\\n  y\"\n", true),
    ("a:\n  b: 'x\ny'\n  c: \"p \n q\"\n", true),
    ("a: \"\n  x\"\n", true),
    (
        "a: |-\n  keep\n   this\n\nb: |\n  x\n\n\nc: |+\n  y\n\n",
        true,
    ),
    ("a: >\n  folded\n  text\n\n  para\n    more\n  end\n", true),
    ("a: >-\n  x\n  y\n\n   z\n  w\n", true),
    ("a: >+\n  x\n  y\n\n\nb: >\n\n  lead\n", true),
    ("a: |\n  x\n   \n  y\n", true),
    ("a: |\n  x\n    \n", true),
    ("a: |2\n   x\n", false),
    // Found by random testing: an empty line deeper than the first content line (an error),
    // and kept trailing lines without their last line break.
    ("e: |\n    \n  x\n", false),
    ("- \n    |+\n  x y\n  ", false),
    ("- \n    |+\n  x y\n  \n", true),
    ("a: |\n  no final newline", false),
    ("- a: 1\n  b: [x, 'y', \"z\", 3]\n- - nested\n", false),
    ("- a: 1\n  b: [x, 'y', \"z\", 3]\n-\n- c:\n  - d\n", true),
    ("k: []\nm: {}\np: { }\nq: [ ]\n", true),
    ("k: {a: 1}\n", false),
    (
        "'a: b': 1\n\"c # d\": x # comment\ne: 'f # g'\nh: i#j\n",
        true,
    ),
    ("a: b: c\n", false),
    ("a: &x 1\nb: *x\n", false),
    ("a: !!str 1\n", false),
    ("? a\n: b\n", false),
    ("a: 1\na: 2\n", false),
    ("<<: {a: 1}\n", false),
    ("a: 1\n---\nb: 2\n", false),
    ("---\na: 1\n", true),
    ("%YAML 1.2\n---\na: 1\n", false),
    ("a:\tb\n", false),
    ("a: b\r\nc: d\r\n", false),
    ("\u{feff}a: 1\n", true),
    ("a: \u{85}b\n", false),
    ("just a scalar\n", false),
    ("# only a comment\n", false),
    ("-XX: 1\nnull: 1\n", false),
    ("-XX: 1\n'null': 1\n8080: x\n", false),
    ("-XX: 1\n'null': 1\n", true),
    ("  indented: root\n  b: 2\n", true),
    ("a:\n    b: 1\n  c: 2\n", false),
    ("a:\n- x\n- y\nb: 1\n", true),
    ("a: x\nb: y # c\n  d\n", false),
    // Container arguments are strings without asking the full parser; `---x` is left to it.
    (
        "args:\n- --leader-elect\n- --metrics-bind-address=:8080\n- -v\n",
        true,
    ),
    ("a: ---x\n", false),
];

/// Every case, read by the fast reader and by the full parser: the fast reader must give
/// the full parser's value or decline; `true` rows must be read by the fast reader.
#[test]
fn fast_reader_matches_the_full_parser() {
    for (text, fast_reads) in CASES {
        let full = from_str::<Value>(text);
        match fast_value_from_str(text) {
            Some(value) => {
                assert_eq!(Some(&value), full.as_ref().ok(), "{text:?}");
                assert!(fast_reads, "{text:?} should be declined");
            }
            None => assert!(!fast_reads, "{text:?} declined ({full:?})"),
        }
    }
}

/// The full parser refuses a simple key of over 1,024 characters; the fast reader declines
/// long keys instead of reading them (and still reads a long value, and a key under its limit).
#[test]
fn long_keys_are_left_to_the_full_parser() {
    for (key_len, fast_reads) in [(1100, false), (999, true)] {
        for quote in ["", "'", "\""] {
            let key = format!("{quote}{}{quote}", "k".repeat(key_len - 2 * quote.len()));
            let text = format!("{key}: 1\nv: {}\n", "x".repeat(2000));
            let full = from_str::<Value>(&text);
            assert_eq!(full.is_ok(), fast_reads, "{key_len} {quote:?}: {full:?}");
            match fast_value_from_str(&text) {
                Some(value) => assert_eq!(Some(&value), full.as_ref().ok()),
                None => assert!(!fast_reads, "a {key_len}-byte key {quote:?} is declined"),
            }
        }
    }
}

/// The reference operator's generated bundles (real CSVs and CRDs, committed under `bundle/`)
/// are read by the fast reader itself, to the full parser's value: without this, a reader
/// that declined every manifest would pass the other tests where the corpus is absent.
#[test]
fn the_reference_bundles_are_read_by_the_fast_reader() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle");
    let mut files = Vec::new();
    for version in std::fs::read_dir(&root).unwrap() {
        let version = version.unwrap().path();
        if !version.is_dir() {
            continue; // the generated tree's marker file
        }
        for dir in ["manifests", "metadata"] {
            for file in std::fs::read_dir(version.join(dir)).unwrap() {
                files.push(file.unwrap().path());
            }
        }
    }
    assert!(
        files.len() >= 15,
        "{} files under {}",
        files.len(),
        root.display()
    );
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let full = from_str::<Value>(&text).unwrap();
        assert_eq!(fast_value_from_str(&text), Some(full), "{}", file.display());
    }
}

#[test]
fn value_from_str_gives_the_full_parsers_value_and_errors() {
    for text in [
        "a: 1\nb: [x, y]\n",
        "a: &x 1\nb: *x\n",
        "a: 1\na: 2\n",
        "a: [1, 2\nb: 3",
    ] {
        let fast = value_from_str(text).map_err(|e| e.to_string());
        let full = from_str::<Value>(text).map_err(|e| e.to_string());
        assert_eq!(fast, full, "{text:?}");
    }
}

/// Line pieces random documents are made of: valid and broken YAML, mixed.
const PIECES: &[&str] = &[
    "a:",
    "b: c",
    "- ",
    "- x",
    "'q'",
    "\"d\"",
    "|",
    ">-",
    "|+",
    ">",
    "# c",
    "text",
    "more text",
    "[1, 2]",
    "[a, 'b']",
    "{}",
    "[]",
    "k: v # c",
    "key:  ",
    "x y",
    ":",
    "-",
    "? ",
    "&a x",
    "*a",
    "'multi",
    "line'",
    "\"esc\\n\"",
    "\"ml",
    "end\"",
    "1.5",
    "0x1",
    "~",
    "yes",
    "- - z",
    "-XX: 1",
    "\"a\": b",
    "'k': 'v'",
    "a: b: c",
    "c:d",
    "e: |",
    "f: >",
    "g: 'h",
    "i\"",
    "j: \"",
    "  ",
    "",
    "k: -1",
    "l: 012",
    "m: [x",
    "n: x]",
    "o: #",
    "p: 'it''s'",
    "q: \\",
    "r: \"\\x41\\u00e9\"",
    "s: a #b",
    "t:",
    "- u:",
    "  - v",
    "w: !x y",
    "%",
    "---",
    "...",
    "z: { }",
    "aa: [ ]",
    "bb: 1e3",
    "cc: .5",
    "dd: +1",
    "ee: -",
    "ff: @x",
    "gg: `x",
    "- 'a': 1",
    "|-",
    ">+",
    "    cont",
    "      deeper",
    "\u{e9}: \u{e9}",
    "no: n",
    "- >",
    "- |-",
];

/// Random documents (a fixed xorshift sequence) of the pieces above, indented at random: the
/// fast reader must read some and give the full parser's value for each it reads.
#[test]
fn random_documents_match_the_full_parser() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut pick = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut read = 0;
    for _ in 0..100_000 {
        let mut doc = String::new();
        for _ in 0..1 + pick(6) {
            doc.push_str(&" ".repeat([0, 0, 0, 1, 2, 2, 2, 3, 4, 4, 6][pick(11)]));
            doc.push_str(PIECES[pick(PIECES.len())]);
            if pick(4) == 0 {
                doc.push(' ');
                doc.push_str(PIECES[pick(PIECES.len())]);
            }
            if pick(10) != 0 {
                doc.push('\n');
            }
        }
        if let Some(value) = fast_value_from_str(&doc) {
            read += 1;
            let full = from_str::<Value>(&doc);
            assert_eq!(Some(&value), full.as_ref().ok(), "{doc:?}: {full:?}");
        }
    }
    assert!(read > 5_000, "the fast reader read only {read} documents");
}
