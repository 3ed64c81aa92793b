//! JUnit XML, the one writer every olmpack report uses: validation reports (one test case per
//! finding), `upgrade check` (per edge and consumer), `upgrade test` (per edge) and
//! `upgrade olm` (per case).
//!
//! A [`Suite`] is a list of [`TestCase`]s, each with an [`Outcome`]; the suite's counts
//! (`tests`, `failures`, `errors`, `skipped`) are taken from the outcomes, so they always
//! agree with the cases written. Every text is XML-escaped here; callers pass plain text.

use std::fmt::Write as _;

use super::xml_escape;

/// One `<testsuite>`, written inside a `<testsuites>` root.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Suite {
    /// The suite's name, e.g. `olmpack upgrade test`.
    pub name: String,
    /// How long the whole suite took, as written in its `time` attribute (`12.5`); none: no
    /// `time` attribute.
    pub time: Option<String>,
    /// The suite's `<properties>`: name and value.
    pub properties: Vec<(String, String)>,
    /// The test cases, in order.
    pub cases: Vec<TestCase>,
}

/// One `<testcase>`.
#[derive(Clone, Debug, PartialEq)]
pub struct TestCase {
    /// The `classname` attribute (a package, a rule id).
    pub classname: String,
    /// The `name` attribute.
    pub name: String,
    /// How long the case took, as written in its `time` attribute (`0.125`); none: no
    /// `time` attribute.
    pub time: Option<String>,
    /// What came of it.
    pub outcome: Outcome,
}

/// What came of one test case.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Passed, with nothing to say.
    Passed,
    /// Passed, with text for the record (`<system-out>`).
    PassedWith(String),
    /// Failed: what was found, and its kind (the `type` attribute).
    Failed {
        /// The `message` attribute.
        message: String,
        /// The `type` attribute.
        kind: String,
    },
    /// Could not be judged: the test itself broke (`<error>`).
    Error {
        /// The `message` attribute.
        message: String,
        /// The `type` attribute.
        kind: String,
    },
    /// Not judged: checks that could not run, and why (`<skipped>`).
    Skipped(String),
}

impl TestCase {
    /// A case named `name` in `classname`, with no time.
    pub fn new(classname: impl Into<String>, name: impl Into<String>, outcome: Outcome) -> Self {
        Self {
            classname: classname.into(),
            name: name.into(),
            time: None,
            outcome,
        }
    }

    /// Sets the `time` attribute, as written.
    pub fn time(mut self, time: impl Into<String>) -> Self {
        self.time = Some(time.into());
        self
    }

    fn write(&self, out: &mut String) {
        let _ = write!(
            out,
            "<testcase classname=\"{}\" name=\"{}\"",
            xml_escape(&self.classname),
            xml_escape(&self.name)
        );
        if let Some(time) = &self.time {
            let _ = write!(out, " time=\"{}\"", xml_escape(time));
        }
        match &self.outcome {
            Outcome::Passed => out.push_str("/>\n"),
            Outcome::PassedWith(text) => {
                let _ = writeln!(
                    out,
                    "><system-out>{}</system-out></testcase>",
                    xml_escape(text)
                );
            }
            Outcome::Failed { message, kind } | Outcome::Error { message, kind } => {
                let element = match self.outcome {
                    Outcome::Failed { .. } => "failure",
                    _ => "error",
                };
                let _ = writeln!(
                    out,
                    "><{element} message=\"{}\" type=\"{}\"/></testcase>",
                    xml_escape(message),
                    xml_escape(kind)
                );
            }
            Outcome::Skipped(message) => {
                let _ = writeln!(
                    out,
                    "><skipped message=\"{}\"/></testcase>",
                    xml_escape(message)
                );
            }
        }
    }
}

impl Suite {
    /// An empty suite named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// How many cases have an outcome `matches` accepts.
    fn count(&self, matches: fn(&Outcome) -> bool) -> usize {
        self.cases.iter().filter(|c| matches(&c.outcome)).count()
    }

    /// The JUnit XML document: the declaration, `<testsuites>` with this one suite.
    pub fn to_xml(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = write!(
            out,
            "<testsuites><testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"",
            xml_escape(&self.name),
            self.cases.len(),
            self.count(|o| matches!(o, Outcome::Failed { .. })),
            self.count(|o| matches!(o, Outcome::Error { .. })),
            self.count(|o| matches!(o, Outcome::Skipped(_))),
        );
        if let Some(time) = &self.time {
            let _ = write!(out, " time=\"{}\"", xml_escape(time));
        }
        out.push_str(">\n");
        if !self.properties.is_empty() {
            out.push_str("<properties>");
            for (name, value) in &self.properties {
                let _ = write!(
                    out,
                    "<property name=\"{}\" value=\"{}\"/>",
                    xml_escape(name),
                    xml_escape(value)
                );
            }
            out.push_str("</properties>\n");
        }
        for case in &self.cases {
            case.write(&mut out);
        }
        out.push_str("</testsuite></testsuites>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_come_from_the_outcomes_and_every_text_is_escaped() {
        let mut suite = Suite::new("olmpack upgrade olm");
        suite.time = Some("3.5".to_owned());
        suite
            .properties
            .push(("olmpack.shard".to_owned(), "1/2".to_owned()));
        suite.cases = vec![
            TestCase::new("p", "a & b", Outcome::Passed).time("1.0"),
            TestCase::new(
                "p",
                "b",
                Outcome::Failed {
                    message: "[olm] \"refused\" <now>".to_owned(),
                    kind: "olm".to_owned(),
                },
            ),
            TestCase::new(
                "p",
                "c",
                Outcome::Error {
                    message: "no apiserver".to_owned(),
                    kind: "environment".to_owned(),
                },
            ),
            TestCase::new(
                "p",
                "d",
                Outcome::Skipped("example checks: none".to_owned()),
            ),
            TestCase::new("r", "e", Outcome::PassedWith("warning: x < y".to_owned())),
        ];
        assert_eq!(
            suite.to_xml(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites><testsuite name=\"olmpack upgrade olm\" tests=\"5\" failures=\"1\" errors=\"1\" skipped=\"1\" time=\"3.5\">\n\
             <properties><property name=\"olmpack.shard\" value=\"1/2\"/></properties>\n\
             <testcase classname=\"p\" name=\"a &amp; b\" time=\"1.0\"/>\n\
             <testcase classname=\"p\" name=\"b\"><failure message=\"[olm] &quot;refused&quot; &lt;now&gt;\" type=\"olm\"/></testcase>\n\
             <testcase classname=\"p\" name=\"c\"><error message=\"no apiserver\" type=\"environment\"/></testcase>\n\
             <testcase classname=\"p\" name=\"d\"><skipped message=\"example checks: none\"/></testcase>\n\
             <testcase classname=\"r\" name=\"e\"><system-out>warning: x &lt; y</system-out></testcase>\n\
             </testsuite></testsuites>\n"
        );
    }

    #[test]
    fn an_empty_suite_has_no_properties_and_no_time() {
        assert_eq!(
            Suite::new("s").to_xml(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites><testsuite name=\"s\" tests=\"0\" failures=\"0\" errors=\"0\" skipped=\"0\">\n\
             </testsuite></testsuites>\n"
        );
    }
}
