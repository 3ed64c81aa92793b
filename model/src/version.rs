//! Bundle versions and `skipRange` expressions, with the semantics OLM uses (blang/semver v4).
//!
//! Contract:
//! - versions are strict semver 2.0 (`1.2.3`, `1.2.3-rc.1+build`); ordering ignores build
//!   metadata and puts a pre-release before its release, as blang does;
//! - [`Range::parse`] accepts blang's range grammar: comparators `>`, `>=`, `<`, `<=`, `=`,
//!   `==`, `!=`, `!` (none means `=`), space-separated for AND, `||` for OR, and `x` wildcards
//!   (`1.x`, `>=1.2.x`). Unlike npm ranges, pre-releases are matched like any other version.

use std::cmp::Ordering;

pub use semver::Version;

/// Parses a bundle version as blang does (no leading `v`, three numeric parts).
pub fn parse_version(text: &str) -> Result<Version, String> {
    Version::parse(text).map_err(|e| blang_message(text).unwrap_or_else(|| e.to_string()))
}

/// Parses a version as blang's `ParseTolerant` does (OLM reads `olm.maxOpenShiftVersion` so):
/// spaces around it and a leading `v` dropped, leading zeros of each part dropped, and a
/// missing minor or patch read as 0 (`4.8` is 4.8.0) — unless that short form carries a
/// pre-release or build suffix.
pub fn parse_tolerant(text: &str) -> Result<Version, String> {
    let text = text.trim();
    let text = text.strip_prefix('v').unwrap_or(text);
    let mut parts: Vec<String> = text
        .splitn(3, '.')
        .map(|part| {
            let trimmed = part.trim_start_matches('0');
            match trimmed.chars().next() {
                _ if part.len() <= 1 => part.to_owned(),
                Some(c) if c.is_ascii_digit() => trimmed.to_owned(),
                _ => format!("0{trimmed}"),
            }
        })
        .collect();
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("Short version cannot contain PreRelease/Build meta data".to_owned());
        }
        parts.resize(3, "0".to_owned());
    }
    parse_version(&parts.join("."))
}

/// blang's wording for the common ways a version is malformed (opm prints these).
fn blang_message(text: &str) -> Option<String> {
    if text.is_empty() {
        return Some("Version string empty".to_owned());
    }
    let parts: Vec<&str> = text.splitn(3, '.').collect();
    if parts.len() != 3 {
        return Some("No Major.Minor.Patch elements found".to_owned());
    }
    let patch = parts[2].split(['-', '+']).next().unwrap_or_default();
    for (what, part) in [("major", parts[0]), ("minor", parts[1]), ("patch", patch)] {
        if part.is_empty() || !part.chars().all(|c| c.is_ascii_digit()) {
            return Some(format!(
                "Invalid character(s) found in {what} number {part:?}"
            ));
        }
        if part.len() > 1 && part.starts_with('0') {
            let what = format!("{}{}", what[..1].to_uppercase(), &what[1..]);
            return Some(format!(
                "{what} number must not contain leading zeroes {part:?}"
            ));
        }
    }
    None
}

/// blang's check of one pre-release identifier (OLM releases are made of them).
pub fn check_prerelease_identifier(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("Prerelease is empty".to_owned());
    }
    if !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(format!("Invalid character(s) found in prerelease {id:?}"));
    }
    if id.chars().all(|c| c.is_ascii_digit()) && id.len() > 1 && id.starts_with('0') {
        return Err(format!(
            "Numeric PreRelease version must not contain leading zeroes {id:?}"
        ));
    }
    Ok(())
}

/// blang's version order: build metadata is ignored.
pub fn cmp_versions(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch, &a.pre).cmp(&(b.major, b.minor, b.patch, &b.pre))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A parsed `skipRange`: OR of AND-ed comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    alternatives: Vec<Vec<(Op, Version)>>,
}

/// One side of an interval: a version and whether it is included.
pub type Bound = Option<(Version, bool)>;

impl Range {
    /// Parses a range the way OLM (blang/semver) does: `>=1.0.0 <2.0.0`, `||` between alternatives.
    pub fn parse(text: &str) -> Result<Range, String> {
        let parts = split_and_trim(text);
        let mut or_parts: Vec<Vec<String>> = Vec::new();
        let mut current = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            if p == "||" {
                if i == 0 {
                    return Err("First element in range is '||'".to_owned());
                }
                or_parts.push(std::mem::take(&mut current));
            } else {
                current.push(p.clone());
            }
        }
        if current.is_empty() {
            return Err("Last element in range is '||'".to_owned());
        }
        or_parts.push(current);
        let mut alternatives = Vec::new();
        for group in or_parts {
            let mut and = Vec::new();
            for part in expand_wildcards(&group)? {
                let (op, version) = split_comparator(&part)?;
                let op = match op {
                    "" | "=" | "==" => Op::Eq,
                    "!=" | "!" => Op::Ne,
                    ">" => Op::Gt,
                    ">=" => Op::Ge,
                    "<" => Op::Lt,
                    "<=" => Op::Le,
                    other => {
                        return Err(format!(
                            "Could not parse Range {part:?}: Could not parse comparator {other:?} in {part:?}"
                        ));
                    }
                };
                let v = parse_version(version).map_err(|e| {
                    format!("Could not parse Range {part:?}: Could not parse version {version:?} in {part:?}: {e}")
                })?;
                and.push((op, v));
            }
            alternatives.push(and);
        }
        Ok(Range { alternatives })
    }

    /// True when `v` is in the range.
    pub fn contains(&self, v: &Version) -> bool {
        self.alternatives.iter().any(|and| {
            and.iter().all(|(op, bound)| {
                let c = cmp_versions(v, bound);
                match op {
                    Op::Eq => c == Ordering::Equal,
                    Op::Ne => c != Ordering::Equal,
                    Op::Gt => c == Ordering::Greater,
                    Op::Ge => c != Ordering::Less,
                    Op::Lt => c == Ordering::Less,
                    Op::Le => c != Ordering::Greater,
                }
            })
        })
    }

    /// The one interval the range is, exactly, when it has a single alternative and no `!=`
    /// (then every version between its bounds is in the range).
    pub fn as_interval(&self) -> Option<(Bound, Bound)> {
        match self.alternatives.as_slice() {
            [and] if and.iter().all(|(op, _)| *op != Op::Ne) => self.intervals().pop(),
            _ => None,
        }
    }

    /// The intervals the range covers (one per OR branch; `!=` points are ignored, so the
    /// result may be slightly larger than the range).
    pub fn intervals(&self) -> Vec<(Bound, Bound)> {
        self.alternatives
            .iter()
            .map(|and| {
                let mut lo: Bound = None;
                let mut hi: Bound = None;
                for (op, v) in and {
                    let (l, h): (Bound, Bound) = match op {
                        Op::Eq => (Some((v.clone(), true)), Some((v.clone(), true))),
                        Op::Ne => (None, None),
                        Op::Gt => (Some((v.clone(), false)), None),
                        Op::Ge => (Some((v.clone(), true)), None),
                        Op::Lt => (None, Some((v.clone(), false))),
                        Op::Le => (None, Some((v.clone(), true))),
                    };
                    lo = tighter(lo, l, Ordering::Greater);
                    hi = tighter(hi, h, Ordering::Less);
                }
                (lo, hi)
            })
            .collect()
    }

    /// Whether any version strictly below `v` is covered.
    pub fn covers_any_below(&self, v: &Version) -> bool {
        self.intervals().into_iter().any(|(lo, hi)| {
            let hi = tighter(hi, Some((v.clone(), false)), Ordering::Less);
            non_empty(&lo, &hi)
        })
    }

    /// Whether any version at or above `v` is covered.
    pub fn covers_any_at_or_above(&self, v: &Version) -> bool {
        self.intervals().into_iter().any(|(lo, hi)| {
            let lo = tighter(lo, Some((v.clone(), true)), Ordering::Greater);
            non_empty(&lo, &hi)
        })
    }
}

/// Keeps the tighter of two bounds: `prefer` is `Greater` for lower bounds, `Less` for upper.
fn tighter(a: Bound, b: Bound, prefer: Ordering) -> Bound {
    match (a, b) {
        (None, b) => b,
        (a, None) => a,
        (Some(a), Some(b)) => match cmp_versions(&a.0, &b.0) {
            Ordering::Equal => Some((a.0, a.1 && b.1)),
            c if c == prefer => Some(a),
            _ => Some(b),
        },
    }
}

fn non_empty(lo: &Bound, hi: &Bound) -> bool {
    match (lo, hi) {
        (Some((l, li)), Some((h, hi))) => match cmp_versions(l, h) {
            Ordering::Less => true,
            Ordering::Equal => *li && *hi,
            Ordering::Greater => false,
        },
        _ => true,
    }
}

/// blang's tokeniser: spaces split, except directly after `>`, `<`, `=`.
fn split_and_trim(s: &str) -> Vec<String> {
    let bytes = s.as_bytes();
    let mut result = Vec::new();
    let mut last = 0usize;
    let mut last_char = 0u8;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b' ' && !matches!(last_char, b'>' | b'<' | b'=') {
            if last + 1 < i + 1 && last < i {
                result.push(s[last..i].to_owned());
            }
            last = i + 1;
        } else if b != b' ' {
            last_char = b;
        }
    }
    if last < s.len() {
        result.push(s[last..].to_owned());
    }
    result
        .into_iter()
        .map(|p| p.replace(' ', ""))
        .filter(|p| !p.is_empty())
        .collect()
}

fn split_comparator(s: &str) -> Result<(&str, &str), String> {
    match s.find(|c: char| c.is_ascii_digit()) {
        Some(i) => Ok((s[..i].trim(), &s[i..])),
        None => Err(format!("Could not get version from string: {s:?}")),
    }
}

fn expand_wildcards(parts: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for part in parts {
        if !part.contains('x') {
            out.push(part.clone());
            continue;
        }
        let (op, v) = split_comparator(part)?;
        let pieces: Vec<&str> = v.split('.').collect();
        let wildcard = if pieces.last() == Some(&"x") {
            pieces.len()
        } else {
            0
        };
        let flat = {
            let f = v.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
            if f.split('.').count() == 2 {
                format!("{f}.0")
            } else {
                f
            }
        };
        let bump = |index: usize| -> String {
            let mut ps: Vec<String> = flat.split('.').map(str::to_owned).collect();
            if let Some(n) = ps.get(index).and_then(|p| p.parse::<u64>().ok()) {
                ps[index] = (n + 1).to_string();
            }
            ps.join(".")
        };
        let incremented = match wildcard {
            3 => bump(1),
            2 => bump(0),
            _ => String::new(),
        };
        let (result_op, increment) = match op {
            ">" => (">=", true),
            ">=" => (">=", false),
            "<" => ("<", false),
            "<=" => ("<", true),
            "" | "=" | "==" => {
                out.push(format!(">={flat}"));
                ("<", true)
            }
            "!=" | "!" => {
                out.push(format!("<{flat}"));
                (">=", true)
            }
            _ => ("", false),
        };
        let version = if increment { incremented } else { flat.clone() };
        out.push(format!("{result_op}{version}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn ranges_like_blang() {
        let r = Range::parse(">=1.0.0 <2.0.0").unwrap();
        assert!(r.contains(&v("1.0.0")) && r.contains(&v("1.9.9")) && !r.contains(&v("2.0.0")));
        assert!(
            r.contains(&v("1.5.0-rc.1")),
            "pre-releases are ordinary versions"
        );
        let r = Range::parse("<1.0.0 || >=3.0.0").unwrap();
        assert!(r.contains(&v("0.1.0")) && r.contains(&v("3.1.0")) && !r.contains(&v("2.0.0")));
        let r = Range::parse("1.2.x").unwrap();
        assert!(r.contains(&v("1.2.9")) && !r.contains(&v("1.3.0")));
        let r = Range::parse(">= 1.0.0 < 1.5.0").unwrap();
        assert!(r.contains(&v("1.4.0")));
        assert!(Range::parse(">=1.0 <2.0.0").is_err());
        assert!(Range::parse("|| 1.0.0").is_err());
        assert!(Range::parse("latest").is_err());
    }

    #[test]
    fn version_errors_use_blangs_words() {
        assert_eq!(
            parse_version("1.0").unwrap_err(),
            "No Major.Minor.Patch elements found"
        );
        assert_eq!(
            parse_version("01.0.0").unwrap_err(),
            "Major number must not contain leading zeroes \"01\""
        );
        assert_eq!(
            check_prerelease_identifier("01").unwrap_err(),
            "Numeric PreRelease version must not contain leading zeroes \"01\""
        );
    }

    #[test]
    fn interval_questions() {
        let r = Range::parse(">=2.0.0 <1.0.0").unwrap();
        assert!(!r.covers_any_below(&v("3.0.0")));
        let r = Range::parse(">=1.0.0 <1.2.0").unwrap();
        assert!(r.covers_any_below(&v("1.2.0")));
        assert!(!r.covers_any_below(&v("1.0.0")));
        assert!(!r.covers_any_at_or_above(&v("1.2.0")));
        assert!(r.covers_any_at_or_above(&v("1.1.0")));
    }
}
