//! Splitting `upgrade olm`'s cases over several CI jobs, and putting their JUnit reports
//! back together.
//!
//! - Shard `i/n` runs the cases whose position in the catalog's case order ([`super::load_cases`],
//!   deterministic) leaves `i - 1` when divided by `n`: every case runs in exactly one shard,
//!   and neighbouring cases (often the same package) land on different jobs. Cases never share
//!   an environment, so a case's verdict does not depend on its shard.
//! - A sharded run's JUnit says which shard it is (the testsuite property [`SHARD_PROPERTY`]);
//!   [`merge`] refuses a set of reports in which a shard is missing, appears twice, or counts
//!   its shards differently — a crashed job must not read as a green run.

use std::fmt::Write as _;

use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;

/// The testsuite property naming the shard a JUnit report comes from, e.g. `2/3`.
pub const SHARD_PROPERTY: &str = "olmpack.shard";

/// One of `count` equal parts of a run (`index` counts from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which part, from 1.
    pub index: usize,
    /// How many parts.
    pub count: usize,
}

/// A shard that cannot be, or JUnit reports that do not merge.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ShardError {
    /// `--shard` is not `I/N` with 1 ≤ I ≤ N.
    #[error("shard {0:?} is not I/N with 1 <= I <= N (e.g. 2/3: the second of three)")]
    Syntax(String),
    /// No report to merge.
    #[error("no JUnit report to merge")]
    Nothing,
    /// A report is not well-formed XML.
    #[error("{file}: not well-formed XML at byte {at}: {message}")]
    Xml {
        /// The report.
        file: String,
        /// Where reading stopped.
        at: u64,
        /// What was wrong.
        message: String,
    },
    /// A report's root is neither `<testsuites>` nor `<testsuite>`.
    #[error(
        "{file}: the root element is <{root}>; a JUnit report's is <testsuites> or <testsuite>"
    )]
    NotJunit {
        /// The report.
        file: String,
        /// The root element found.
        root: String,
    },
    /// A report declares a document type (its entities would not survive the merge).
    #[error("{file}: has a document type declaration, which JUnit reports do not use")]
    Doctype {
        /// The report.
        file: String,
    },
    /// A testsuite's count or time attribute is not a count or a number of seconds.
    #[error("{file}: testsuite {suite:?}: {attribute}={value:?} is not {expected}")]
    Attribute {
        /// The report.
        file: String,
        /// The testsuite's name.
        suite: String,
        /// The attribute.
        attribute: &'static str,
        /// Its value.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// A testsuite's count attribute disagrees with its test cases: the merge counts the
    /// cases, and a report whose attributes say otherwise was not written by its run.
    #[error(
        "{file}: testsuite {suite:?}: {attribute}={value:?}, but its test cases count {counted}; a report whose totals disagree with its cases is not merged"
    )]
    Disagrees {
        /// The report.
        file: String,
        /// The testsuite's name.
        suite: String,
        /// The attribute.
        attribute: &'static str,
        /// Its value.
        value: String,
        /// What the test cases count.
        counted: u64,
    },
    /// A testsuite's shard property is not `I/N`.
    #[error("{file}: testsuite {suite:?}: property {SHARD_PROPERTY}: {source}")]
    BadShard {
        /// The report.
        file: String,
        /// The testsuite's name.
        suite: String,
        /// Why the value is not a shard.
        source: Box<ShardError>,
    },
    /// Two reports are the same shard.
    #[error("{file}: shard {shard} is also {other}")]
    Twice {
        /// The later report.
        file: String,
        /// The shard.
        shard: Shard,
        /// The report that was that shard first.
        other: String,
    },
    /// Reports count their shards differently.
    #[error("{file}: shard {shard} is one of {}, but {other} is shard {other_shard}", shard.count)]
    Counts {
        /// The report.
        file: String,
        /// Its shard.
        shard: Shard,
        /// A report counting differently.
        other: String,
        /// That report's shard.
        other_shard: Shard,
    },
    /// Some shards have no report.
    #[error("no report of shard(s) {} of {count}: their jobs did not finish or their reports were not collected", missing.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Missing {
        /// The shards missing (indexes).
        missing: Vec<usize>,
        /// How many shards there are.
        count: usize,
    },
    /// Sharded and unsharded reports mixed.
    #[error("{file}: is not from a sharded run, but {other} is shard {shard}")]
    Mixed {
        /// The unsharded report.
        file: String,
        /// A sharded one.
        other: String,
        /// Its shard.
        shard: Shard,
    },
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Self, ShardError> {
        let syntax = || ShardError::Syntax(text.to_owned());
        let (i, n) = text.split_once('/').ok_or_else(syntax)?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(i) || !digits(n) {
            return Err(syntax());
        }
        let (index, count) = (
            i.parse().map_err(|_| syntax())?,
            n.parse().map_err(|_| syntax())?,
        );
        if index == 0 || index > count {
            return Err(syntax());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The items of this shard, in their order.
    pub fn select<T>(&self, items: Vec<T>) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % self.count == self.index - 1)
            .map(|(_, item)| item)
            .collect()
    }
}

/// JUnit reports merged into one.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    /// The merged report: one `<testsuites>` holding every report's testsuites (by shard when
    /// sharded, else in the order given), with the totals.
    pub xml: String,
    /// Test cases in all.
    pub tests: u64,
    /// Failed test cases.
    pub failures: u64,
    /// Test cases in error.
    pub errors: u64,
    /// Skipped test cases (for `upgrade olm`: passed with checks not run).
    pub skipped: u64,
    /// How many shards the reports are of (`None`: not from a sharded run).
    pub shards: Option<usize>,
}

/// One testsuite of a report: its text as written, its counts and its shard.
struct Suite {
    raw: String,
    counts: [u64; 4],
    time: f64,
    shard: Option<Shard>,
}

/// Merges JUnit reports (`(file name, text)`), checking a sharded run is complete.
pub fn merge(reports: &[(String, String)]) -> Result<Merged, ShardError> {
    if reports.is_empty() {
        return Err(ShardError::Nothing);
    }
    let mut all: Vec<(usize, Suite)> = Vec::new();
    for (at, (file, text)) in reports.iter().enumerate() {
        all.extend(suites(file, text)?.into_iter().map(|s| (at, s)));
    }
    let shards = check_shards(reports, &all)?;
    if shards.is_some() {
        all.sort_by_key(|(at, s)| (s.shard.map(|s| s.index), *at));
    }
    let mut counts = [0u64; 4];
    let mut time = 0.0;
    for (_, suite) in &all {
        for (total, n) in counts.iter_mut().zip(suite.counts) {
            *total += n;
        }
        time += suite.time;
    }
    let [tests, failures, errors, skipped] = counts;
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time:.1}\">"
    );
    for (_, suite) in &all {
        xml.push_str(&suite.raw);
        xml.push('\n');
    }
    xml.push_str("</testsuites>\n");
    Ok(Merged {
        xml,
        tests,
        failures,
        errors,
        skipped,
        shards,
    })
}

/// Every shard once, all counted alike, none unsharded beside them; the shard count.
fn check_shards(
    reports: &[(String, String)],
    all: &[(usize, Suite)],
) -> Result<Option<usize>, ShardError> {
    let name = |at: usize| reports[at].0.clone();
    let Some((first_at, first)) = all.iter().find_map(|(at, s)| s.shard.map(|s| (*at, s))) else {
        return Ok(None);
    };
    let mut seen: Vec<Option<usize>> = vec![None; first.count];
    for (at, suite) in all {
        let Some(shard) = suite.shard else {
            return Err(ShardError::Mixed {
                file: name(*at),
                other: name(first_at),
                shard: first,
            });
        };
        if shard.count != first.count {
            return Err(ShardError::Counts {
                file: name(*at),
                shard,
                other: name(first_at),
                other_shard: first,
            });
        }
        match seen[shard.index - 1] {
            Some(other) if other != *at => {
                return Err(ShardError::Twice {
                    file: name(*at),
                    shard,
                    other: name(other),
                });
            }
            _ => seen[shard.index - 1] = Some(*at),
        }
    }
    let missing: Vec<usize> = (1..=first.count)
        .filter(|i| seen[i - 1].is_none())
        .collect();
    if !missing.is_empty() {
        return Err(ShardError::Missing {
            missing,
            count: first.count,
        });
    }
    Ok(Some(first.count))
}

/// The testsuites of one report (its root `<testsuites>`' children, or its root `<testsuite>`).
fn suites(file: &str, text: &str) -> Result<Vec<Suite>, ShardError> {
    let mut reader = Reader::from_str(text);
    let mut out = Vec::new();
    let (mut root_seen, mut inside) = (false, false);
    loop {
        let before = reader.buffer_position() as usize;
        let (start, empty) = match next(&mut reader, file)? {
            Event::Eof => break,
            Event::DocType(_) => {
                return Err(ShardError::Doctype {
                    file: file.to_owned(),
                });
            }
            Event::End(_) => {
                inside = false;
                continue;
            }
            Event::Start(start) => (start, false),
            Event::Empty(start) => (start, true),
            _ => continue,
        };
        if !inside {
            if root_seen {
                return Err(ill_formed(&reader, file, "more than one root element"));
            }
            root_seen = true;
            match start.name().as_ref() {
                b"testsuites" => {
                    inside = !empty;
                    continue;
                }
                b"testsuite" => {}
                other => return Err(not_junit(file, other)),
            }
        } else if start.name().as_ref() != b"testsuite" {
            // Anything else under <testsuites> (e.g. <properties>) is not carried over.
            if !empty {
                let end = start.to_end().into_owned();
                reader
                    .read_to_end(end.name())
                    .map_err(|e| xml_error(&reader, file, e))?;
            }
            continue;
        }
        let read = if empty {
            ReadSuite::default()
        } else {
            read_suite(&mut reader, file)?
        };
        let raw = text[before..reader.buffer_position() as usize].trim_start();
        out.push(counted(file, &start, raw.to_owned(), read)?);
    }
    if !root_seen {
        return Err(not_junit(file, b"(none)"));
    }
    if inside {
        return Err(ill_formed(&reader, file, "it ends before </testsuites>"));
    }
    Ok(out)
}

/// What a `<testsuite>` holds: its shard property and its test cases by outcome.
#[derive(Default)]
struct ReadSuite {
    shard: Option<String>,
    /// Test cases, failed, in error, skipped (each case in one class, in that order).
    counts: [u64; 4],
}

/// Reads a `<testsuite>` to its end: the value of its shard property, if any, and its test
/// cases counted by their `<failure>`, `<error>` and `<skipped>` children.
fn read_suite(reader: &mut Reader<&[u8]>, file: &str) -> Result<ReadSuite, ShardError> {
    let mut depth = 1usize;
    let mut read = ReadSuite::default();
    // The depth of the open `<testcase>`'s children, and the outcome seen so far.
    let mut case: Option<(usize, Option<usize>)> = None;
    while depth > 0 {
        let (e, opens) = match next(reader, file)? {
            Event::Start(e) => (e, true),
            Event::Empty(e) => (e, false),
            Event::End(_) => {
                if case.is_some_and(|(at, _)| at == depth) {
                    close_case(&mut read, case.take());
                }
                depth -= 1;
                continue;
            }
            Event::Eof => return Err(ill_formed(reader, file, "it ends inside a <testsuite>")),
            _ => continue,
        };
        read.shard = read.shard.or(shard_property(&e));
        match (e.name().as_ref(), &mut case) {
            (b"testcase", None) if opens => case = Some((depth + 1, None)),
            (b"testcase", None) => read.counts[0] += 1,
            (name, Some((at, outcome))) if *at == depth => {
                let class = [b"failure".as_slice(), b"error", b"skipped"]
                    .iter()
                    .position(|n| *n == name);
                *outcome = match (*outcome, class) {
                    (Some(seen), Some(class)) => Some(seen.min(class)),
                    (seen, class) => seen.or(class),
                };
            }
            _ => {}
        }
        depth += usize::from(opens);
    }
    Ok(read)
}

/// Counts the test case just closed.
fn close_case(read: &mut ReadSuite, case: Option<(usize, Option<usize>)>) {
    read.counts[0] += 1;
    if let Some((_, Some(class))) = case {
        read.counts[class + 1] += 1;
    }
}

fn ill_formed(reader: &Reader<&[u8]>, file: &str, message: &str) -> ShardError {
    ShardError::Xml {
        file: file.to_owned(),
        at: reader.buffer_position(),
        message: message.to_owned(),
    }
}

fn not_junit(file: &str, root: &[u8]) -> ShardError {
    ShardError::NotJunit {
        file: file.to_owned(),
        root: String::from_utf8_lossy(root).into_owned(),
    }
}

fn next<'a>(reader: &mut Reader<&'a [u8]>, file: &str) -> Result<Event<'a>, ShardError> {
    reader.read_event().map_err(|e| xml_error(reader, file, e))
}

fn xml_error(reader: &Reader<&[u8]>, file: &str, e: quick_xml::Error) -> ShardError {
    ShardError::Xml {
        file: file.to_owned(),
        at: reader.error_position(),
        message: e.to_string(),
    }
}

/// The value of `<property name="olmpack.shard" value="…">`, if `e` is that.
fn shard_property(e: &BytesStart<'_>) -> Option<String> {
    if e.name().as_ref() != b"property" || attribute(e, "name").as_deref() != Some(SHARD_PROPERTY) {
        return None;
    }
    attribute(e, "value")
}

fn attribute(e: &BytesStart<'_>, name: &str) -> Option<String> {
    let a = e.try_get_attribute(name).ok().flatten()?;
    a.unescape_value().ok().map(|v| v.into_owned())
}

/// The suite's counts (from its test cases, checked against its attributes), time and shard.
fn counted(
    file: &str,
    start: &BytesStart<'_>,
    raw: String,
    read: ReadSuite,
) -> Result<Suite, ShardError> {
    let suite = attribute(start, "name").unwrap_or_default();
    let bad =
        |attribute: &'static str, value: String, expected: &'static str| ShardError::Attribute {
            file: file.to_owned(),
            suite: suite.clone(),
            attribute,
            value,
            expected,
        };
    for (counted, key) in read
        .counts
        .iter()
        .zip(["tests", "failures", "errors", "skipped"])
    {
        let Some(v) = attribute(start, key) else {
            continue;
        };
        let n: u64 = v
            .trim()
            .parse()
            .map_err(|_| bad(key, v.clone(), "a count"))?;
        if n != *counted {
            return Err(ShardError::Disagrees {
                file: file.to_owned(),
                suite: suite.clone(),
                attribute: key,
                value: v,
                counted: *counted,
            });
        }
    }
    let time = match attribute(start, "time") {
        Some(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| bad("time", v, "a number of seconds"))?,
        None => 0.0,
    };
    let shard = read
        .shard
        .map(|v| {
            v.parse::<Shard>().map_err(|e| ShardError::BadShard {
                file: file.to_owned(),
                suite: suite.clone(),
                source: Box::new(e),
            })
        })
        .transpose()?;
    Ok(Suite {
        raw,
        counts: read.counts,
        time,
        shard,
    })
}

#[cfg(test)]
mod tests;
