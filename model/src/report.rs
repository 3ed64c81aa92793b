//! Validation findings and how they are shown: text for people, JSON for tools, JUnit for CI,
//! Markdown for CI summaries (`$GITHUB_STEP_SUMMARY`).
//!
//! Every validator in olmpack (bundle, catalog) returns a [`Report`]: a list of [`Finding`]s,
//! each with a stable rule id, a severity, and where it is (file, object, field path). Output is
//! deterministic: findings are sorted by file, object, field, rule and message.
//!
//! Exit codes (shared by every `validate` command, see [`Report::exit_code`]):
//! - `0`: no errors (warnings and infos allowed),
//! - `1`: at least one error,
//! - `2`: the input could not be read at all (reported by the CLI, not here).

pub mod junit;

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The artifact is rejected by OLM, opm or the cluster; validation fails.
    Error,
    /// Accepted, but likely wrong or against a published guideline.
    Warning,
    /// Worth knowing; never wrong by itself.
    Info,
}

impl Severity {
    /// How the severity is named in output: `error`, `warning`, `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// Who refuses an input, or breaks on it: what makes a finding an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Consumer {
    /// The Kubernetes API server refuses the object on create.
    #[serde(rename = "kube-apiserver")]
    KubeApiserver,
    /// OLM v0 (catalog and OLM operators) refuses or fails to install the bundle.
    #[serde(rename = "OLM v0")]
    OlmV0,
    /// OLM v1 (operator-controller) refuses the bundle.
    #[serde(rename = "OLM v1")]
    OlmV1,
    /// `opm` refuses it (`opm render`, `opm validate` or `opm serve`).
    #[serde(rename = "opm")]
    Opm,
    /// Installed as written, the operator's pod cannot start.
    #[serde(rename = "the pod cannot start")]
    PodCannotStart,
    /// operatorhub.io's publishing checks (errors only with `--operatorhub`).
    #[serde(rename = "OperatorHub")]
    OperatorHub,
}

impl Consumer {
    /// How the consumer is named in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Consumer::KubeApiserver => "kube-apiserver",
            Consumer::OlmV0 => "OLM v0",
            Consumer::OlmV1 => "OLM v1",
            Consumer::Opm => "opm",
            Consumer::PodCannotStart => "the pod cannot start",
            Consumer::OperatorHub => "OperatorHub",
        }
    }

    /// The consumer as options and JSON keys write it: `kube-apiserver`, `olm-v0`, `olm-v1`,
    /// `opm`, `pod-cannot-start`, `operatorhub` (`upgrade check --consumer olm-v0`).
    pub fn id(self) -> &'static str {
        match self {
            Consumer::KubeApiserver => "kube-apiserver",
            Consumer::OlmV0 => "olm-v0",
            Consumer::OlmV1 => "olm-v1",
            Consumer::Opm => "opm",
            Consumer::PodCannotStart => "pod-cannot-start",
            Consumer::OperatorHub => "operatorhub",
        }
    }

    /// What happens, as text output says it: `refused by opm`, `the pod cannot start`.
    pub fn outcome(self) -> String {
        match self {
            Consumer::PodCannotStart => self.as_str().to_owned(),
            other => format!("refused by {}", other.as_str()),
        }
    }
}

/// One problem found in an input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable identifier, `family/name` (e.g. `csv/missing-field`). Never reworded.
    pub rule: String,
    /// How bad it is.
    pub severity: Severity,
    /// The file the finding is about, relative to the validated directory when possible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The object, as `Kind/name` (or `package/channel/bundle` for catalogs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The API version of the object the finding is about (e.g. `v1beta1`), where the same
    /// object reads differently by version (the live upgrade test's findings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The field path inside the object, e.g. `spec.install.spec.deployments[0].name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What is wrong, in one sentence.
    pub message: String,
    /// For errors: who refuses the input or breaks on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer: Option<Consumer>,
    /// What to do about it, when there is something specific to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Finding {
    /// A finding with only rule, severity and message; add location with the builders.
    pub fn new(rule: impl Into<String>, severity: Severity, message: impl Into<String>) -> Self {
        Self {
            rule: rule.into(),
            severity,
            file: None,
            object: None,
            version: None,
            field: None,
            message: message.into(),
            consumer: None,
            hint: None,
        }
    }

    /// Names who refuses the input (see [`Consumer`]).
    pub fn consumer(mut self, consumer: Consumer) -> Self {
        self.consumer = Some(consumer);
        self
    }

    /// An error finding: some consumer refuses the input (name it with [`Finding::consumer`]).
    pub fn error(rule: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Error, message)
    }

    /// A warning finding: accepted, but likely wrong.
    pub fn warning(rule: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Warning, message)
    }

    /// An info finding: worth knowing.
    pub fn info(rule: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Info, message)
    }

    /// Sets the file the finding is about.
    pub fn file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Sets the object, as `Kind/name`.
    pub fn object(mut self, object: impl Into<String>) -> Self {
        self.object = Some(object.into());
        self
    }

    /// Sets the API version of the object.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Sets the field path inside the object.
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// Sets what to do about it.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    fn sort_key(&self) -> impl Ord + '_ {
        (
            self.file.as_deref(),
            self.object.as_deref(),
            self.field.as_deref(),
            self.severity,
            self.rule.as_str(),
            self.message.as_str(),
        )
    }

    /// `file: object: field: message`, the parts that are known.
    fn location(&self) -> String {
        let mut parts = Vec::new();
        if let Some(file) = &self.file {
            parts.push(file.display().to_string());
        }
        if let Some(object) = &self.object {
            parts.push(object.clone());
        }
        if let Some(version) = &self.version {
            parts.push(version.clone());
        }
        if let Some(field) = &self.field {
            parts.push(field.clone());
        }
        parts.join(": ")
    }
}

/// The findings of one validation run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    /// What was validated (a directory, an image reference).
    pub subject: String,
    /// The findings (in their stable order once [`Report::normalize`] ran).
    pub findings: Vec<Finding>,
}

/// How olmpack prints results: validation [`Report`]s here, and every other report that
/// offers a choice of format (live upgrade tests, upgrade checks) in the same four words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// Lines for people, one per finding, and a summary line.
    #[default]
    Text,
    /// One JSON document, for tools.
    Json,
    /// A JUnit XML test suite, one test case per finding, for CI dashboards.
    Junit,
    /// A Markdown table, for CI summaries such as `$GITHUB_STEP_SUMMARY`.
    Markdown,
}

impl crate::choice::Choice for OutputFormat {
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("text", OutputFormat::Text),
        ("json", OutputFormat::Json),
        ("junit", OutputFormat::Junit),
        ("markdown", OutputFormat::Markdown),
    ];
}

impl Report {
    /// An empty report about `subject`.
    pub fn new(subject: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            findings: Vec::new(),
        }
    }

    /// Adds one finding.
    pub fn push(&mut self, finding: Finding) {
        self.findings.push(finding);
    }

    /// Adds findings.
    pub fn extend(&mut self, findings: impl IntoIterator<Item = Finding>) {
        self.findings.extend(findings);
    }

    /// Sorts findings into their stable order and drops exact duplicates.
    pub fn normalize(&mut self) {
        self.findings
            .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        self.findings.dedup();
    }

    /// How many findings have this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    /// True when at least one finding is an error.
    pub fn has_errors(&self) -> bool {
        self.count(Severity::Error) > 0
    }

    /// `0` without errors, `1` with errors (see the module docs).
    pub fn exit_code(&self) -> u8 {
        u8::from(self.has_errors())
    }

    /// The report in `format`. Values are shown safely: in text and JUnit, control and bidi
    /// characters appear as `<U+XXXX>` (in text, line breaks too: one line per finding, so a
    /// value cannot forge another line, such as a CI workflow command); JSON carries them raw, escaped as JSON (`\u202e`); in
    /// every format a value longer than [`MAX_SHOWN`] characters is shortened.
    pub fn format(&self, format: OutputFormat) -> String {
        match format {
            OutputFormat::Text => self.shown(safe_line).to_text(),
            OutputFormat::Json => {
                let raw = self.shown(safe_raw);
                let s = serde_json::to_string_pretty(&raw).expect("a report always serializes");
                let mut s = escape_invisible_in_json(&s);
                s.push('\n');
                s
            }
            OutputFormat::Junit => self.shown(safe_text).to_junit(),
            OutputFormat::Markdown => self.shown(safe_text).to_markdown(),
        }
    }

    /// A copy with every text passed through `show`.
    fn shown(&self, show: fn(&str) -> String) -> Report {
        let path = |p: &PathBuf| PathBuf::from(show(&p.to_string_lossy()));
        Report {
            subject: show(&self.subject),
            findings: self
                .findings
                .iter()
                .map(|f| Finding {
                    rule: f.rule.clone(),
                    severity: f.severity,
                    file: f.file.as_ref().map(path),
                    object: f.object.as_deref().map(show),
                    version: f.version.as_deref().map(show),
                    field: f.field.as_deref().map(show),
                    message: show(&f.message),
                    consumer: f.consumer,
                    hint: f.hint.as_deref().map(show),
                })
                .collect(),
        }
    }

    fn to_text(&self) -> String {
        let mut out = String::new();
        for f in &self.findings {
            let location = f.location();
            let _ = write!(out, "{}[{}]", f.severity.as_str(), f.rule);
            if !location.is_empty() {
                let _ = write!(out, " {location}");
            }
            let _ = write!(out, ": {}", f.message);
            match f.consumer {
                Some(consumer) => {
                    let _ = writeln!(out, " ({})", consumer.outcome());
                }
                None => out.push('\n'),
            }
            if let Some(hint) = &f.hint {
                let _ = writeln!(out, "  hint: {hint}");
            }
        }
        let _ = writeln!(
            out,
            "{}: {} error(s), {} warning(s), {} info",
            self.subject,
            self.count(Severity::Error),
            self.count(Severity::Warning),
            self.count(Severity::Info)
        );
        out
    }

    /// A heading, one table row per finding and the counts.
    fn to_markdown(&self) -> String {
        let mut out = format!("## {}\n\n", markdown_escape(&self.subject));
        let _ = writeln!(
            out,
            "{} error(s), {} warning(s), {} info.",
            self.count(Severity::Error),
            self.count(Severity::Warning),
            self.count(Severity::Info)
        );
        if self.findings.is_empty() {
            return out;
        }
        out.push_str("\n| Severity | Rule | Where | Message | Refused by | Hint |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        for f in &self.findings {
            let cells = [
                f.severity.as_str().to_owned(),
                format!("`{}`", f.rule),
                markdown_escape(&f.location()),
                markdown_escape(&f.message),
                f.consumer.map_or(String::new(), |c| c.as_str().to_owned()),
                f.hint.as_deref().map_or(String::new(), markdown_escape),
            ];
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out
    }

    /// One test case per finding (errors are failures), plus one passing case when clean, so
    /// CI dashboards show the validation ran.
    fn to_junit(&self) -> String {
        let mut suite = junit::Suite::new(&self.subject);
        if self.findings.is_empty() {
            suite.cases.push(junit::TestCase::new(
                "olmpack",
                &self.subject,
                junit::Outcome::Passed,
            ));
        }
        for f in &self.findings {
            let name = format!("{} {}", f.rule, f.location());
            let text = match &f.hint {
                Some(hint) => format!("{} (hint: {hint})", f.message),
                None => f.message.clone(),
            };
            let outcome = match f.severity {
                Severity::Error => junit::Outcome::Failed {
                    message: text,
                    kind: f.consumer.map_or("error", Consumer::as_str).to_owned(),
                },
                Severity::Warning | Severity::Info => {
                    junit::Outcome::PassedWith(format!("{}: {text}", f.severity.as_str()))
                }
            };
            suite
                .cases
                .push(junit::TestCase::new(&f.rule, name.trim(), outcome));
        }
        suite.to_xml()
    }
}

/// `message: cause: cause` for an error chain.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Longest value (a run of characters without spaces) shown whole.
pub const MAX_SHOWN: usize = 200;

/// Characters that change how text around them is displayed without being visible: bidi
/// controls, zero-width characters, the byte-order mark.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// Text safe for a terminal: control characters (except newlines and tabs) and invisible
/// ones shown as `<U+XXXX>`, Rust's `\u{…}` escapes shown the same way, and long values
/// shortened.
pub fn safe_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in undo_rust_escapes(&shorten(text)).chars() {
        if (c.is_control() && c != '\n' && c != '\t') || is_invisible(c) {
            let _ = write!(out, "<U+{:04X}>", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// [`safe_text`] on one line: line breaks shown as `<U+000A>` as well.
pub fn safe_line(text: &str) -> String {
    safe_text(text).replace('\n', "<U+000A>")
}

/// Text for JSON: raw characters (Rust's `\u{…}` escapes undone), long values shortened;
/// the JSON writer escapes the rest.
pub fn safe_raw(text: &str) -> String {
    undo_rust_escapes(&shorten(text))
}

/// Escapes invisible characters in serialized JSON (they are legal raw, but hide text).
fn escape_invisible_in_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if is_invisible(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// `\u{202e}` (how Rust's debug format escapes a character) → the character itself.
fn undo_rust_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("\\u{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 3..];
        let decoded = after.find('}').and_then(|end| {
            let c = char::from_u32(u32::from_str_radix(&after[..end], 16).ok()?)?;
            Some((c, end))
        });
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[i..i + 3]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every run of more than [`MAX_SHOWN`] non-space characters cut to its start and end.
fn shorten(text: &str) -> String {
    if text.len() <= MAX_SHOWN {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len().min(64 * 1024));
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let count = word.chars().count();
        if count > MAX_SHOWN {
            let head: String = word.chars().take(MAX_SHOWN / 2).collect();
            let tail: String = word.chars().skip(count - 20).collect();
            let _ = write!(
                out,
                "{head}…[{} characters left out]…{tail}",
                count - MAX_SHOWN / 2 - 20
            );
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `s` as the text of a Markdown table cell: `|`, `\\`, backticks and markup characters
/// escaped, line breaks as `<br>`, HTML's `<` `>` `&` as entities.
pub fn markdown_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' => out.push_str("<br>"),
            c => out.push(c),
        }
    }
    out
}

/// `s` with XML's five special characters escaped and `\r` as a reference. A character XML
/// 1.0 cannot hold at all, not even as a reference (a control character other than tab, line
/// feed and carriage return; U+FFFE, U+FFFF), becomes U+FFFD, so the document stays
/// well-formed for every JUnit reader.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let mut report = Report::new("bundle/0.1.0");
        report.push(
            Finding::warning("csv/no-icon", "no icon")
                .file("manifests/x.clusterserviceversion.yaml")
                .object("ClusterServiceVersion/x.v0.1.0")
                .field("spec.icon"),
        );
        report.push(
            Finding::error(
                "bundle/missing-annotations",
                "metadata/annotations.yaml is missing",
            )
            .file("metadata/annotations.yaml")
            .hint("run `olmpack bundle generate`"),
        );
        report.normalize();
        report
    }

    #[test]
    fn text_names_file_object_and_field() {
        assert_eq!(
            sample().format(OutputFormat::Text),
            "warning[csv/no-icon] manifests/x.clusterserviceversion.yaml: ClusterServiceVersion/x.v0.1.0: spec.icon: no icon\n\
             error[bundle/missing-annotations] metadata/annotations.yaml: metadata/annotations.yaml is missing\n  \
             hint: run `olmpack bundle generate`\n\
             bundle/0.1.0: 1 error(s), 1 warning(s), 0 info\n"
        );
    }

    #[test]
    fn markdown_is_one_row_per_finding() {
        assert_eq!(
            sample().format(OutputFormat::Markdown),
            "## bundle/0.1.0\n\n\
             1 error(s), 1 warning(s), 0 info.\n\n\
             | Severity | Rule | Where | Message | Refused by | Hint |\n\
             |---|---|---|---|---|---|\n\
             | warning | `csv/no-icon` | manifests/x.clusterserviceversion.yaml: ClusterServiceVersion/x.v0.1.0: spec.icon | no icon |  |  |\n\
             | error | `bundle/missing-annotations` | metadata/annotations.yaml | metadata/annotations.yaml is missing |  | run \\`olmpack bundle generate\\` |\n"
        );
        let mut tricky = Report::new("a|b");
        tricky.push(Finding::error("x/y", "line one\nsplit | by a <pipe>").consumer(Consumer::Opm));
        let md = tricky.format(OutputFormat::Markdown);
        assert!(md.starts_with("## a\\|b\n"), "{md}");
        assert!(
            md.contains("| line one<br>split \\| by a &lt;pipe&gt; | opm |"),
            "{md}"
        );
        assert!(
            Report::new("ok")
                .format(OutputFormat::Markdown)
                .ends_with("0 info.\n")
        );
    }

    #[test]
    fn exit_code_follows_errors_only() {
        let mut report = sample();
        assert_eq!(report.exit_code(), 1);
        report.findings.retain(|f| f.severity != Severity::Error);
        assert_eq!(report.exit_code(), 0);
    }

    #[test]
    fn junit_escapes_and_counts_failures() {
        let mut report = Report::new("a<b");
        report.push(Finding::error("x/y", "bad \"quote\" & <tag>"));
        let xml = report.format(OutputFormat::Junit);
        assert!(xml.contains("name=\"a&lt;b\" tests=\"1\" failures=\"1\""));
        assert!(xml.contains("message=\"bad &quot;quote&quot; &amp; &lt;tag&gt;\""));
        let clean = Report::new("ok").format(OutputFormat::Junit);
        assert!(clean.contains("tests=\"1\" failures=\"0\""));
    }

    #[test]
    fn values_are_shown_safely() {
        let mut report = Report::new("x");
        let long = "a".repeat(10_000);
        report.push(Finding::error(
            "x/y",
            String::from("name \u{202e}gpj \\u{0} ") + &long,
        ));
        let text = report.format(OutputFormat::Text);
        assert!(text.contains("name <U+202E>gpj <U+0000> aaa"), "{text}");
        assert!(text.len() < 1000, "{}", text.len());
        let json = report.format(OutputFormat::Json);
        assert!(json.contains("name \\u202egpj \\u0000 aaa"), "{json}");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(
            value["findings"][0]["message"]
                .as_str()
                .unwrap()
                .contains("\u{202e}gpj \u{0}")
        );
    }

    #[test]
    fn a_value_cannot_forge_a_line_of_text_or_markdown() {
        let mut report = Report::new("x");
        report.push(
            Finding::error("catalog/x", "name \"a\n::error::forged\r\n\"")
                .object("olm.bundle/a\n::warning::b")
                .hint("h\nok"),
        );
        assert_eq!(
            report.format(OutputFormat::Text),
            "error[catalog/x] olm.bundle/a<U+000A>::warning::b: name \"a<U+000A>::error::forged<U+000D><U+000A>\"\n  \
             hint: h<U+000A>ok\n\
             x: 1 error(s), 0 warning(s), 0 info\n"
        );
        let md = report.format(OutputFormat::Markdown);
        assert!(
            md.lines()
                .all(|l| !l.contains("::") || l.starts_with("| error |")),
            "{md}"
        );
        assert!(md.contains("olm.bundle/a<br>::warning::b"), "{md}");
    }

    #[test]
    fn json_is_stable() {
        let json = sample().format(OutputFormat::Json);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["findings"][0]["rule"], "csv/no-icon");
        assert_eq!(value["findings"][1]["severity"], "error");
        assert!(value["findings"][0].get("hint").is_none());
    }

    /// XML 1.0 has no way to write U+0000..U+001F (but tab, line feed and carriage return),
    /// not even `&#1;`: such a character in a finding's text must not make the JUnit report
    /// a document no JUnit reader parses.
    #[test]
    fn xml_escape_writes_only_what_xml_can_hold() {
        let table = [
            ("a<b>&\"c'", "a&lt;b&gt;&amp;&quot;c&apos;"),
            ("tab\tline\nret\r", "tab\tline\nret&#13;"),
            (
                "nul\0bell\u{7}esc\u{1b}",
                "nul\u{fffd}bell\u{fffd}esc\u{fffd}",
            ),
            ("\u{fffe}\u{ffff}é", "\u{fffd}\u{fffd}é"),
        ];
        for (text, want) in table {
            assert_eq!(xml_escape(text), want, "{text:?}");
        }
    }
}
