//! Validation findings and how they are shown: text for people, JSON for tools, JUnit for CI.
//!
//! Every validator in olmpack (bundle, catalog) returns a [`Report`]: a list of [`Finding`]s,
//! each with a stable rule id, a severity, and where it is (file, object, field path). Output is
//! deterministic: findings are sorted by file, object, field, rule and message.
//!
//! Exit codes (shared by every `validate` command, see [`Report::exit_code`]):
//! - `0`: no errors (warnings and infos allowed),
//! - `1`: at least one error,
//! - `2`: the input could not be read at all (reported by the CLI, not here).

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
    fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One problem found in an input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable identifier, `family/name` (e.g. `csv/missing-field`). Never reworded.
    pub rule: String,
    pub severity: Severity,
    /// The file the finding is about, relative to the validated directory when possible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The object, as `Kind/name` (or `package/channel/bundle` for catalogs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The field path inside the object, e.g. `spec.install.spec.deployments[0].name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
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
            field: None,
            message: message.into(),
            hint: None,
        }
    }

    pub fn error(rule: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Error, message)
    }

    pub fn warning(rule: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Warning, message)
    }

    pub fn info(rule: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Info, message)
    }

    pub fn file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub fn object(mut self, object: impl Into<String>) -> Self {
        self.object = Some(object.into());
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

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
    pub findings: Vec<Finding>,
}

/// How to print a [`Report`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    #[default]
    Text,
    Json,
    Junit,
}

impl Report {
    pub fn new(subject: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            findings: Vec::new(),
        }
    }

    pub fn push(&mut self, finding: Finding) {
        self.findings.push(finding);
    }

    pub fn extend(&mut self, findings: impl IntoIterator<Item = Finding>) {
        self.findings.extend(findings);
    }

    /// Sorts findings into their stable order and drops exact duplicates.
    pub fn normalize(&mut self) {
        self.findings
            .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        self.findings.dedup();
    }

    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    pub fn has_errors(&self) -> bool {
        self.count(Severity::Error) > 0
    }

    /// `0` without errors, `1` with errors (see the module docs).
    pub fn exit_code(&self) -> u8 {
        u8::from(self.has_errors())
    }

    pub fn render(&self, format: OutputFormat) -> String {
        match format {
            OutputFormat::Text => self.to_text(),
            OutputFormat::Json => {
                let mut s = serde_json::to_string_pretty(self).expect("a report always serializes");
                s.push('\n');
                s
            }
            OutputFormat::Junit => self.to_junit(),
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
            let _ = writeln!(out, ": {}", f.message);
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

    /// One test case per finding (errors are failures), plus one passing case when clean, so
    /// CI dashboards show the validation ran.
    fn to_junit(&self) -> String {
        let errors = self.count(Severity::Error);
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let cases = self.findings.len().max(1);
        let _ = writeln!(
            out,
            "<testsuites><testsuite name=\"{}\" tests=\"{cases}\" failures=\"{errors}\" errors=\"0\">",
            xml_escape(&self.subject)
        );
        if self.findings.is_empty() {
            let _ = writeln!(
                out,
                "<testcase classname=\"olmpack\" name=\"{}\"/>",
                xml_escape(&self.subject)
            );
        }
        for f in &self.findings {
            let name = format!("{} {}", f.rule, f.location());
            let _ = write!(
                out,
                "<testcase classname=\"{}\" name=\"{}\"",
                xml_escape(&f.rule),
                xml_escape(name.trim())
            );
            let text = match &f.hint {
                Some(hint) => format!("{} (hint: {hint})", f.message),
                None => f.message.clone(),
            };
            match f.severity {
                Severity::Error => {
                    let _ = writeln!(
                        out,
                        "><failure message=\"{}\" type=\"error\"/></testcase>",
                        xml_escape(&text)
                    );
                }
                Severity::Warning | Severity::Info => {
                    let _ = writeln!(
                        out,
                        "><system-out>{}: {}</system-out></testcase>",
                        f.severity.as_str(),
                        xml_escape(&text)
                    );
                }
            }
        }
        out.push_str("</testsuite></testsuites>\n");
        out
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

/// `s` with XML's five special characters escaped.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {
                let _ = write!(out, "&#{};", c as u32);
            }
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
            sample().render(OutputFormat::Text),
            "warning[csv/no-icon] manifests/x.clusterserviceversion.yaml: ClusterServiceVersion/x.v0.1.0: spec.icon: no icon\n\
             error[bundle/missing-annotations] metadata/annotations.yaml: metadata/annotations.yaml is missing\n  \
             hint: run `olmpack bundle generate`\n\
             bundle/0.1.0: 1 error(s), 1 warning(s), 0 info\n"
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
        let xml = report.render(OutputFormat::Junit);
        assert!(xml.contains("name=\"a&lt;b\" tests=\"1\" failures=\"1\""));
        assert!(xml.contains("message=\"bad &quot;quote&quot; &amp; &lt;tag&gt;\""));
        let clean = Report::new("ok").render(OutputFormat::Junit);
        assert!(clean.contains("tests=\"1\" failures=\"0\""));
    }

    #[test]
    fn json_is_stable() {
        let json = sample().render(OutputFormat::Json);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["findings"][0]["rule"], "csv/no-icon");
        assert_eq!(value["findings"][1]["severity"], "error");
        assert!(value["findings"][0].get("hint").is_none());
    }
}
