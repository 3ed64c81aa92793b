//! Version ranges in the syntax OLM uses for `olm.skipRange` (blang/semver's), e.g.
//! `>=1.0.0 <1.3.0`, `>1.0.0 <2.0.0 || >=3.0.0`, `1.2.x`.
//!
//! - Alternatives are separated by `||`; within one, comparators separated by whitespace must
//!   all hold.
//! - A comparator is an optional operator (`>=`, `<=`, `>`, `<`, `=`, `==`, `!=`; none means
//!   `=`) and a full `MAJOR.MINOR.PATCH` version, or a wildcard (`1.x`, `1.2.x`, `*` accepted
//!   for `x`) that stands for the versions it matches.
//! - Comparison is semver precedence with build metadata ignored, as blang does.

use std::fmt;

use semver::Version;

/// Failure to parse a range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RangeError(String);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Comparator {
    op: Op,
    version: Version,
}

/// A parsed range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    text: String,
    alternatives: Vec<Vec<Comparator>>,
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn strip_build(v: &Version) -> Version {
    let mut v = v.clone();
    v.build = semver::BuildMetadata::EMPTY;
    v
}

impl Range {
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        if text.trim().is_empty() {
            return Err(RangeError("the range is empty".into()));
        }
        let mut alternatives = Vec::new();
        for alternative in text.split("||") {
            let mut comparators = Vec::new();
            let mut tokens = alternative.split_whitespace().peekable();
            if tokens.peek().is_none() {
                return Err(RangeError("an alternative between `||` is empty".into()));
            }
            while let Some(token) = tokens.next() {
                // Allow `>= 1.0.0` as well as `>=1.0.0`.
                let token = if token.chars().all(|c| matches!(c, '<' | '>' | '=' | '!')) {
                    let next = tokens
                        .next()
                        .ok_or_else(|| RangeError(format!("operator {token:?} has no version")))?;
                    format!("{token}{next}")
                } else {
                    token.to_owned()
                };
                comparators.extend(parse_comparator(&token)?);
            }
            alternatives.push(comparators);
        }
        Ok(Self {
            text: text.to_owned(),
            alternatives,
        })
    }

    /// Whether `version` is in the range.
    pub fn contains(&self, version: &Version) -> bool {
        let v = strip_build(version);
        self.alternatives.iter().any(|alt| {
            alt.iter().all(|c| match c.op {
                Op::Eq => v == c.version,
                Op::Ne => v != c.version,
                Op::Gt => v > c.version,
                Op::Ge => v >= c.version,
                Op::Lt => v < c.version,
                Op::Le => v <= c.version,
            })
        })
    }
}

fn parse_comparator(token: &str) -> Result<Vec<Comparator>, RangeError> {
    let (op, rest) = [
        (">=", Op::Ge),
        ("<=", Op::Le),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        (">", Op::Gt),
        ("<", Op::Lt),
        ("=", Op::Eq),
    ]
    .iter()
    .find_map(|(prefix, op)| token.strip_prefix(prefix).map(|rest| (*op, rest)))
    .unwrap_or((Op::Eq, token));
    if rest.is_empty() {
        return Err(RangeError(format!("{token:?} has no version")));
    }
    let parts: Vec<&str> = rest.splitn(3, '.').collect();
    let wild = |p: &str| matches!(p, "x" | "X" | "*");
    if parts.iter().any(|p| wild(p)) {
        let number = |p: &str| {
            p.parse::<u64>()
                .map_err(|_| RangeError(format!("{token:?} is not a version or wildcard")))
        };
        let (lower, upper) = match parts.as_slice() {
            [m, n] | [m, n, _] if wild(n) => {
                let major = number(m)?;
                (Version::new(major, 0, 0), Version::new(major + 1, 0, 0))
            }
            [m, n, p] if wild(p) => {
                let (major, minor) = (number(m)?, number(n)?);
                (
                    Version::new(major, minor, 0),
                    Version::new(major, minor + 1, 0),
                )
            }
            _ => return Err(RangeError(format!("{token:?} is not a valid wildcard"))),
        };
        let inside = |v| {
            vec![
                Comparator {
                    op: Op::Ge,
                    version: lower.clone(),
                },
                Comparator {
                    op: Op::Lt,
                    version: v,
                },
            ]
        };
        return match op {
            Op::Eq => Ok(inside(upper)),
            Op::Ge => Ok(vec![Comparator {
                op: Op::Ge,
                version: lower,
            }]),
            Op::Lt => Ok(vec![Comparator {
                op: Op::Lt,
                version: lower,
            }]),
            Op::Gt => Ok(vec![Comparator {
                op: Op::Ge,
                version: upper,
            }]),
            Op::Le => Ok(vec![Comparator {
                op: Op::Lt,
                version: upper,
            }]),
            Op::Ne => Err(RangeError(format!("{token:?}: != cannot take a wildcard"))),
        };
    }
    let version = Version::parse(rest)
        .map_err(|e| RangeError(format!("{rest:?} is not a semantic version ({e})")))?;
    Ok(vec![Comparator {
        op,
        version: strip_build(&version),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn ranges_contain_what_blang_would() {
        let cases = [
            (">=1.0.0 <1.3.0", "1.2.9", true),
            (">=1.0.0 <1.3.0", "1.3.0", false),
            (">= 1.0.0 < 2.0.0", "1.5.0", true),
            (">1.0.0 <2.0.0 || >=3.0.0", "3.1.0", true),
            (">1.0.0 <2.0.0 || >=3.0.0", "2.5.0", false),
            ("1.2.x", "1.2.7", true),
            ("1.2.x", "1.3.0", false),
            ("<1.x", "0.9.0", true),
            ("!=1.0.0", "1.0.0", false),
            ("1.0.0", "1.0.0+build.5", true),
            (">=0.2.0 <0.3.0", "0.3.0-rc.1", true),
        ];
        for (range, version, expected) in cases {
            assert_eq!(
                Range::parse(range).unwrap().contains(&v(version)),
                expected,
                "{range} ∋ {version}"
            );
        }
    }

    #[test]
    fn bad_ranges_say_why() {
        let cases = [
            ("", "the range is empty"),
            (">=1.0 <2.0.0", "\"1.0\" is not a semantic version"),
            (">=1.0.0 ||", "an alternative between `||` is empty"),
            (">=", "operator \">=\" has no version"),
            ("!=1.x", "\"!=1.x\": != cannot take a wildcard"),
        ];
        for (range, message) in cases {
            let err = Range::parse(range).unwrap_err().to_string();
            assert!(err.starts_with(message), "{range}: {err}");
        }
    }
}
