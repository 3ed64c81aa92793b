//! YAML in and out, the one way olmpack does it.
//!
//! Output is deterministic: object keys sorted (serde_json's map is ordered), block style,
//! strings quoted only where YAML would misread them. Input accepts multi-document streams,
//! anchors and aliases; errors carry line and column.

use serde::Serialize;
use serde::de::DeserializeOwned;

mod fast;

/// Failure to parse or print YAML.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    /// The text is not valid YAML (with line and column).
    #[error("invalid YAML: {0}")]
    Parse(String),
    /// A value could not be printed as YAML.
    #[error("failed to print YAML: {0}")]
    Print(String),
}

/// Parses one YAML document.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    full_parse(prepare(text))
}

/// The full parser on text [`prepare`] has seen.
fn full_parse<T: DeserializeOwned>(prepared: &str) -> Result<T, YamlError> {
    serde_saphyr::from_str_with_options(prepared, options(prepared))
        .map_err(parse_error_in(prepared))
}

/// Parses one YAML document into a JSON value, as [`from_str`] does (same value, same
/// errors), faster: block-style YAML as manifests are written is read by a dedicated reader,
/// which hands anything outside its subset to the full parser.
pub fn value_from_str(text: &str) -> Result<serde_json::Value, YamlError> {
    let text = prepare(text);
    match fast::parse(text) {
        Some(value) => Ok(value),
        None => full_parse(text),
    }
}

/// The dedicated reader of [`value_from_str`] alone: `None` when it hands the text to the full
/// parser. For tests that check it against the full parser.
#[doc(hidden)]
pub fn fast_value_from_str(text: &str) -> Option<serde_json::Value> {
    fast::parse(prepare(text))
}

/// The parser's resource budget for `text`, the same for every YAML olmpack reads: generous
/// for real manifests and catalogs, fatal to alias bombs and runaway nesting. The nodes and
/// events it counts are the text's own (aliases have their own limits), so their budget
/// grows with the text: YAML spends at least a byte on a node and on every two events, and
/// a file olmpack reads whole (at most `--max-file-size`) is never refused for holding many
/// small values — opm reads such a file (a 26 MB template) as any other.
fn options(text: &str) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = 100_000;
    budget.max_nodes = 2_000_000.max(text.len().saturating_add(1_000));
    budget.max_events = 5_000_000.max(text.len().saturating_mul(2).saturating_add(1_000));
    budget.max_total_scalar_bytes = 256 << 20;
    budget.max_recorded_anchor_events = 200_000;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = 100_000;
    options
}

/// The parser's first line (`line L column C: what`), without its source snippet, in our
/// words ([`describe`]).
fn parse_error(err: impl std::fmt::Display) -> YamlError {
    let text = err.to_string();
    let first = text.lines().next().unwrap_or("").trim();
    YamlError::Parse(describe(first.strip_prefix("error: ").unwrap_or(first)))
}

/// [`parse_error`] for errors in `source`: an alias the parser refuses is named from the text
/// at the error's line and column.
fn parse_error_in(source: &str) -> impl Fn(serde_saphyr::Error) -> YamlError + '_ {
    move |err| {
        let YamlError::Parse(message) = parse_error(err) else {
            unreachable!("parse_error makes parse errors")
        };
        YamlError::Parse(long_key(source, &name_alias(source, &message)))
    }
}

/// The most characters YAML reads as a key written without `? ` (a simple key); Go's YAML
/// reader (kubectl's, OLM's) has the same limit.
const SIMPLE_KEY_MAX: usize = 1024;

/// `line L column C: <problem>` said as what it is when line L's key is longer than YAML
/// reads as a simple key: the parser's own words ("mapping values are not allowed") do not
/// say so.
fn long_key(source: &str, message: &str) -> String {
    let Some((location, _)) = message.split_once(": ") else {
        return message.to_owned();
    };
    let mut numbers = location.split(' ').filter_map(|w| w.parse::<usize>().ok());
    let Some(line) = numbers.next() else {
        return message.to_owned();
    };
    let text = source.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let item = text.trim_start().trim_start_matches("- ").trim_start();
    let key = match item.find(": ") {
        Some(end) => &item[..end],
        None => item.strip_suffix(':').unwrap_or(""),
    };
    let length = key.chars().count();
    if length <= SIMPLE_KEY_MAX {
        return message.to_owned();
    }
    format!(
        "line {line}: a key of {length} characters; YAML reads at most {SIMPLE_KEY_MAX} characters as a key written without \"? \" (Go's YAML reader too)"
    )
}

/// `line L column C: <alias problem>` with the alias at that place named (`*name`).
fn name_alias(source: &str, message: &str) -> String {
    const UNKNOWN: &str = "an alias is used before an anchor defines it";
    const RECURSIVE: &str = "an alias refers to the value that contains it";
    let Some((location, what)) = message.split_once(": ") else {
        return message.to_owned();
    };
    if !what.starts_with(UNKNOWN) && !what.starts_with(RECURSIVE) {
        return message.to_owned();
    }
    let mut numbers = location.split(' ').filter_map(|w| w.parse::<usize>().ok());
    let (Some(line), Some(column)) = (numbers.next(), numbers.next()) else {
        return message.to_owned();
    };
    let at = source
        .lines()
        .nth(line.saturating_sub(1))
        .and_then(|l| l.get(column.saturating_sub(1)..))
        .unwrap_or("");
    // The alias is at the place, or is the first alias after it (the place may be its key).
    let Some(star) = at.find('*') else {
        return message.to_owned();
    };
    let name: String = at[star + 1..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}'))
        .collect();
    if name.is_empty() {
        return message.to_owned();
    }
    let what = if what.starts_with(UNKNOWN) {
        format!(
            "alias *{name} is used before an anchor &{name} defines it (or no anchor does); an alias can only repeat a value anchored earlier"
        )
    } else {
        format!(
            "alias *{name} refers to the value that contains it (a recursive alias); a manifest cannot hold a cycle"
        )
    };
    format!("{location}: {what}")
}

/// Text as the parser should see it: without a byte-order mark, and without empty documents
/// before the first one (`---` lines with only blanks and comments between them), which Go's
/// decoders skip too.
fn prepare(text: &str) -> &str {
    let mut text = text.strip_prefix('\u{feff}').unwrap_or(text);
    loop {
        let mut markers = 0;
        let mut cut = None;
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let bare = line.trim_end();
            if bare == "---" {
                markers += 1;
                if markers == 2 {
                    cut = Some(offset);
                    break;
                }
            } else if !(bare.trim_start().is_empty() || bare.trim_start().starts_with('#')) {
                break;
            }
            offset += line.len();
        }
        match cut {
            Some(at) => text = &text[at..],
            None => return without_empty_trailing_documents(text),
        }
    }
}

/// Text without `---` lines that only blanks and comments follow (empty last documents).
fn without_empty_trailing_documents(mut text: &str) -> &str {
    loop {
        let last = text
            .split_inclusive('\n')
            .rev()
            .scan(text.len(), |end, line| {
                *end -= line.len();
                Some((*end, line.trim()))
            })
            .find(|(_, line)| !(line.is_empty() || line.starts_with('#')));
        match last {
            Some((start, "---")) if start > 0 => text = &text[..start],
            _ => return text,
        }
    }
}

/// The parser's message in our words: no option or function names, no debug output.
fn describe(message: &str) -> String {
    let (location, what) = match message.find(": ") {
        Some(i) if message.starts_with("line ") => (&message[..i + 2], &message[i + 2..]),
        _ => ("", message),
    };
    let ours = if let Some(rest) = what.strip_prefix("duplicate mapping key") {
        let key = rest
            .split(", set DuplicateKeyPolicy")
            .next()
            .unwrap_or("")
            .trim_start_matches(':')
            .trim();
        format!("duplicate key {key}: each key may appear only once in a mapping")
    } else if what.contains("from_str_multiple") || what.contains("multiple documents") {
        "holds more than one YAML document; this file must hold exactly one".to_owned()
    } else if let Some(breach) = what.strip_prefix("budget breached: ") {
        budget_words(breach)
    } else if what.starts_with("alias references unknown anchor") {
        "an alias is used before an anchor defines it".to_owned()
    } else if what.starts_with("recursive references require weak recursion types") {
        "an alias refers to the value that contains it".to_owned()
    } else if what.starts_with("alias ") {
        "aliases expand to too much data (an alias bomb?); olmpack stops reading here".to_owned()
    } else if let Some(rest) = what.strip_prefix("invalid type: ") {
        format!("wrong type: {rest}")
    } else if let Some(rest) = what.strip_prefix("non-finite float ") {
        let number = rest.split(" rejected").next().unwrap_or(rest);
        format!(
            "the number {number} is beyond a 64-bit float's range (it would read as infinity, which JSON cannot hold)"
        )
    } else {
        what.to_owned()
    };
    format!("{location}{ours}")
}

/// `Nodes { nodes: 250001 }` → what the budget limits, in words.
fn budget_words(breach: &str) -> String {
    let name = breach.split([' ', '{']).next().unwrap_or("");
    let count: String = breach.chars().filter(char::is_ascii_digit).collect();
    let what = match name {
        "Nodes" => "values (nodes)",
        "Events" => "parser events",
        "Aliases" => "aliases",
        "Anchors" => "anchors",
        "Depth" => "levels of nesting",
        "Documents" => "documents",
        _ => "parts",
    };
    if name == "Depth" {
        return format!(
            "nested too deeply to read safely: {count} levels, over olmpack's limit for one file"
        );
    }
    format!(
        "too large to read safely: {count} {what}, over olmpack's limit for one file (this protects against alias bombs and runaway nesting); split the file"
    )
}

/// Parses every document of a `---`-separated stream; empty documents are skipped.
pub fn from_multi_str(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    let text = prepare(text);
    match fast_documents(text) {
        Some(docs) => Ok(docs),
        None => full_multi_parse(text),
    }
}

/// The full parser on every document of a stream [`prepare`] has seen (empty ones dropped).
fn full_multi_parse(prepared: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple_with_options(prepared, options(prepared))
            .map_err(parse_error_in(prepared))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// [`from_multi_str`] by the full parser alone. For tests that check the fast path against it.
#[doc(hidden)]
pub fn full_multi_from_str(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    full_multi_parse(prepare(text))
}

/// Every document of a stream read by the fast reader, or `None` as soon as it declines one
/// (the full parser then reads the whole stream). The stream is cut before each line that
/// is exactly `---`: such a line starts a document wherever it stands, as YAML allows it in
/// no scalar; a cut inside anything unfinished leaves a piece the reader declines.
fn fast_documents(text: &str) -> Option<Vec<serde_json::Value>> {
    let markers = memchr::memmem::find_iter(text.as_bytes(), "\n---")
        .map(|i| i + 1)
        .filter(|&i| matches!(text.as_bytes().get(i + 3), None | Some(b'\n')));
    // The first piece may begin with its own `---` line, which the reader takes.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(markers)
        .chain([text.len()])
        .collect();
    starts
        .windows(2)
        .map(|w| fast::parse(&text[w[0]..w[1]]))
        .collect()
}

/// [`from_multi_str`], lenient about repeated keys the way Go's `sigs.k8s.io/yaml` is (the
/// decoder Kubernetes tools such as crdify read CRD files with): a repeated key keeps its
/// last value instead of failing.
pub fn from_multi_str_last_key_wins(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple_with_options(prepare(text), options)
            .map_err(parse_error_in(prepare(text)))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Something Go's YAML decoding (sigs.k8s.io/yaml, as opm and OLM use it) accepts and
/// olmpack read the same way, but reports: the input means something else to stricter readers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leniency {
    /// 1-based document index in the stream (counting only non-empty documents).
    pub document: usize,
    /// 1-based line of the node the note is about.
    pub line: u64,
    /// What was read leniently, and how stricter readers differ.
    pub message: String,
}

/// The documents of a stream read the way Go's decoders read them, and what was read leniently.
pub type GoDocuments = (Vec<serde_json::Value>, Vec<Leniency>);

/// Parses every document of a stream the way Go's decoders do: as [`from_multi_str`], and a
/// mapping key given twice keeps its last value (with a [`Leniency`] naming both lines).
/// When the stream has a key given twice and also something else the reader refuses, that
/// refusal is the error (a repeated key alone is no reason to refuse it).
pub fn from_multi_str_go(text: &str) -> Result<GoDocuments, YamlError> {
    match from_multi_str(text) {
        Ok(docs) => Ok((docs, Vec::new())),
        Err(strict) => match duplicate_keys_last_wins(text, &strict) {
            Some(Ok(read)) => Ok(read),
            Some(Err(lenient)) => Err(lenient),
            None => Err(strict),
        },
    }
}

/// Parses one document the way Go's decoders do (see [`from_multi_str_go`]).
pub fn from_str_go(text: &str) -> Result<(serde_json::Value, Vec<Leniency>), YamlError> {
    let (mut docs, notes) = from_multi_str_go(text)?;
    match docs.len() {
        0 => Ok((serde_json::Value::Null, notes)),
        1 => Ok((docs.remove(0), notes)),
        n => Err(YamlError::Parse(format!(
            "expected one YAML document, found {n}"
        ))),
    }
}

/// The slow path, taken only when the strict parse failed: re-reads the stream with
/// duplicate keys passed through, keeping the last value of each. `None` when the stream has
/// no duplicate key (the strict error is then the one to show); `Some(Err)` when it has one
/// (the strict error named it) but does not parse for another reason, which is the error.
fn duplicate_keys_last_wins(
    text: &str,
    strict: &YamlError,
) -> Option<Result<GoDocuments, YamlError>> {
    let mut options = options(text);
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    let nodes: Vec<GoNode> = match serde_saphyr::from_multiple_with_options(prepare(text), options)
    {
        Ok(nodes) => nodes,
        Err(e) if strict.to_string().contains(": duplicate key ") => {
            return Some(Err(parse_error_in(prepare(text))(e)));
        }
        Err(_) => return None,
    };
    let mut docs = Vec::new();
    let mut notes = Vec::new();
    for node in nodes.into_iter().filter(|n| !n.value.is_null()) {
        let document = docs.len() + 1;
        notes.extend(node.duplicates.into_iter().map(|d| Leniency {
            document,
            line: d.line,
            message: format!(
                "key {:?} is given twice (lines {} and {}); the last value is used, as Go's YAML decoder does",
                d.key, d.first_line, d.line
            ),
        }));
        docs.push(node.value);
    }
    (!notes.is_empty()).then_some(Ok((docs, notes)))
}

/// A mapping key given a second time in the same mapping.
#[derive(Debug)]
struct Duplicate {
    key: String,
    first_line: u64,
    line: u64,
}

/// A YAML node read as JSON, with the duplicate keys found inside it.
#[derive(Debug)]
struct GoNode {
    value: serde_json::Value,
    duplicates: Vec<Duplicate>,
}

impl GoNode {
    fn leaf(value: serde_json::Value) -> Self {
        Self {
            value,
            duplicates: Vec::new(),
        }
    }
}

/// A mapping key as Go's YAML-to-JSON conversion spells it (scalars as their text).
fn key_text(key: serde_json::Value) -> String {
    match key {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}

impl<'de> serde::Deserialize<'de> for GoNode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(GoNodeVisitor)
    }
}

struct GoNodeVisitor;

impl<'de> serde::de::Visitor<'de> for GoNodeVisitor {
    type Value = GoNode;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML node")
    }

    fn visit_bool<E>(self, v: bool) -> Result<GoNode, E> {
        Ok(GoNode::leaf(v.into()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<GoNode, E> {
        Ok(GoNode::leaf(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<GoNode, E> {
        Ok(GoNode::leaf(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<GoNode, E> {
        Ok(GoNode::leaf(
            serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<GoNode, E> {
        Ok(GoNode::leaf(v.into()))
    }
    fn visit_string<E>(self, v: String) -> Result<GoNode, E> {
        Ok(GoNode::leaf(v.into()))
    }
    fn visit_unit<E>(self) -> Result<GoNode, E> {
        Ok(GoNode::leaf(serde_json::Value::Null))
    }
    fn visit_none<E>(self) -> Result<GoNode, E> {
        Ok(GoNode::leaf(serde_json::Value::Null))
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<GoNode, D::Error> {
        serde::Deserialize::deserialize(d)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<GoNode, A::Error> {
        let mut items = Vec::new();
        let mut duplicates = Vec::new();
        while let Some(node) = seq.next_element::<GoNode>()? {
            items.push(node.value);
            duplicates.extend(node.duplicates);
        }
        Ok(GoNode {
            value: serde_json::Value::Array(items),
            duplicates,
        })
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<GoNode, A::Error> {
        let mut object = serde_json::Map::new();
        let mut lines = std::collections::HashMap::new();
        let mut duplicates = Vec::new();
        while let Some(key) = map.next_key::<serde_saphyr::Spanned<serde_json::Value>>()? {
            let line = key.referenced.line();
            let key = key_text(key.value);
            let node = map.next_value::<GoNode>()?;
            duplicates.extend(node.duplicates);
            if let Some(first_line) = lines.insert(key.clone(), line) {
                duplicates.push(Duplicate {
                    key: key.clone(),
                    first_line,
                    line,
                });
            }
            object.insert(key, node.value);
        }
        duplicates.sort_by_key(|d| d.line);
        Ok(GoNode {
            value: serde_json::Value::Object(object),
            duplicates,
        })
    }
}

/// Prints a value as one YAML document (no leading `---`, one trailing newline).
pub fn to_string<T: Serialize>(value: &T) -> Result<String, YamlError> {
    // Go through serde_json::Value so that every map is key-sorted, whatever `T` is.
    let value = serde_json::to_value(value).map_err(|e| YamlError::Print(e.to_string()))?;
    // Long single-line strings (image references, base64 icons) stay on one line, as
    // kubectl writes them; multi-line strings still use literal `|` blocks.
    let mut options = serde_saphyr::SerializerOptions::default();
    options.folded_wrap_chars = usize::MAX;
    let mut text = serde_saphyr::to_string_with_options(&value, options)
        .map_err(|e| YamlError::Print(e.to_string()))?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key longer than YAML reads as a simple key is said so, not as the parser's
    /// "mapping values are not allowed".
    #[test]
    fn a_key_too_long_for_yaml_is_said_so() {
        let key = "k".repeat(100_000);
        for text in [
            format!("labels:\n  {key}: v\n"),
            format!("labels:\n- {key}: v\n"),
        ] {
            let err = from_str::<serde_json::Value>(&text).unwrap_err();
            assert_eq!(
                err.to_string(),
                "invalid YAML: line 2: a key of 100000 characters; YAML reads at most 1024 characters as a key written without \"? \" (Go's YAML reader too)"
            );
        }
        let fine = format!("labels:\n  {}: v\n", "k".repeat(1024));
        assert!(from_str::<serde_json::Value>(&fine).is_ok());
    }

    #[test]
    fn round_trips_tricky_scalars_and_sorts_keys() {
        let value =
            serde_json::json!({"z": "yes", "a": "123", "m": "x: y", "n": null, "t": "multi\nline"});
        let text = to_string(&value).unwrap();
        assert!(text.starts_with("a: \"123\"\n"));
        let back: serde_json::Value = from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn long_single_line_strings_are_not_folded() {
        let long = "x".repeat(50) + " " + &"y".repeat(50);
        let text = to_string(&serde_json::json!({ "k": long })).unwrap();
        assert_eq!(text, format!("k: {long}\n"));
    }

    /// Streams cut at their `---` lines read as the full parser reads them whole (values and
    /// errors), and the fast reader takes those whose pieces are all in its subset.
    #[test]
    fn streams_cut_at_marker_lines_read_as_the_full_parser_reads_them() {
        let cases: &[(&str, bool)] = &[
            ("a: 1\n---\nb: 2\n", true),
            ("---\na: 1\n---\nb: [x, y]\n", true),
            ("a: |\n  x\n---\nb: 2\n", true),
            ("a: 1\n---\n", true),
            ("---\n---\na: 1\n", true),
            ("a: 1\n---\n---\nb: 2\n", false),
            ("a: 1\n...\n---\nb: 2\n", false),
            ("a: \"x\n---\ny\"\n", false),
            ("a: 1\n--- \nb: 2\n", false),
            ("a: 1\n--- # c\nb: 2\n", false),
            ("a: 1\n---b: 2\n", false),
            ("# c\n---\na: 1\n", false),
            ("a: 1\n---\n- b\n", true),
            ("a: 1\n---\nb: 2\nb: 3\n", false),
            ("", false),
        ];
        for &(text, fast) in cases {
            let full = full_multi_from_str(text).map_err(|e| e.to_string());
            let ours = from_multi_str(text).map_err(|e| e.to_string());
            assert_eq!(ours, full, "{text:?}");
            assert_eq!(fast_documents(prepare(text)).is_some(), fast, "{text:?}");
        }
    }

    #[test]
    fn multi_document_streams_with_aliases() {
        let docs = from_multi_str("a: 1\n---\n---\nb: &x 2\nc: *x\n").unwrap();
        assert_eq!(
            docs,
            vec![
                serde_json::json!({"a": 1}),
                serde_json::json!({"b": 2, "c": 2})
            ]
        );
    }

    #[test]
    fn bom_and_empty_leading_documents_are_skipped() {
        let value: serde_json::Value = from_str("\u{feff}---\n# c\n---\n\n---\na: 1\n").unwrap();
        assert_eq!(value, serde_json::json!({"a": 1}));
        assert_eq!(prepare("---\na: 1\n---\n# end\n---\n"), "---\na: 1\n");
        assert_eq!(prepare("---\n"), "---\n");
    }

    #[test]
    fn library_words_are_replaced() {
        assert_eq!(
            describe(
                "line 3 column 1: duplicate mapping key: a, set DuplicateKeyPolicy in Options if acceptable"
            ),
            "line 3 column 1: duplicate key a: each key may appear only once in a mapping"
        );
        let text = describe("budget breached: Nodes { nodes: 250001 }");
        assert!(
            text.starts_with("too large to read safely: 250001 values"),
            "{text}"
        );
    }

    #[test]
    fn duplicate_keys_keep_the_last_value_and_name_both_lines() {
        let text =
            "kind: RoleBinding\nmetadata:\n  name: a\n  name: b\nkind: RoleBinding\n---\nx: 1\n";
        let (docs, notes) = from_multi_str_go(text).unwrap();
        assert_eq!(
            docs,
            vec![
                serde_json::json!({"kind": "RoleBinding", "metadata": {"name": "b"}}),
                serde_json::json!({"x": 1}),
            ]
        );
        let notes: Vec<_> = notes
            .iter()
            .map(|n| (n.document, n.line, n.message.as_str()))
            .collect();
        assert_eq!(
            notes,
            vec![
                (
                    1,
                    4,
                    "key \"name\" is given twice (lines 3 and 4); the last value is used, as Go's YAML decoder does"
                ),
                (
                    1,
                    5,
                    "key \"kind\" is given twice (lines 1 and 5); the last value is used, as Go's YAML decoder does"
                ),
            ]
        );
    }

    #[test]
    fn the_go_reader_keeps_the_strict_error_for_broken_yaml() {
        let err = from_multi_str_go("a: [1, 2\nb: 3").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid YAML: line 2 column 2: illegal placement of ':' indicator"
        );
        assert_eq!(from_multi_str_go("a: 1\n").unwrap().1, vec![]);
    }

    #[test]
    fn errors_carry_the_line() {
        let err = from_str::<serde_json::Value>("a: [1, 2\nb: 3").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid YAML: line 2 column 2: illegal placement of ':' indicator"
        );
    }
}
