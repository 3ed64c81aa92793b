//! `.indexignore` files: gitignore-style patterns that hide paths from the catalog loader.
//!
//! Contract (the gitignore rules opm's loader applies):
//! - every `.indexignore` applies to its own directory and below; deeper files and later lines
//!   win; `!pattern` re-includes;
//! - a pattern without `/` (other than a trailing one) matches a name at any depth; one with a
//!   `/` is anchored at the directory of its `.indexignore`; a trailing `/` matches directories
//!   only (and so everything below them);
//! - `*` and `?` do not cross `/`, `**` as a whole component matches any number of directories,
//!   `[a-z]`/`[!a-z]` are character classes, `\` escapes.
#![warn(missing_docs)]

/// A compiled set of `.indexignore` rules for one catalog tree.
#[derive(Clone, Debug, Default)]
pub struct IgnoreMatcher {
    rules: Vec<Rule>,
}

#[derive(Clone, Debug)]
struct Rule {
    /// Components of the directory holding the `.indexignore`.
    base: Vec<String>,
    negate: bool,
    dir_only: bool,
    anchored: bool,
    parts: Vec<String>,
}

impl IgnoreMatcher {
    /// A matcher with no patterns: it ignores nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the patterns of an `.indexignore` found in directory `base` (relative, `/`-separated,
    /// empty for the root). Call shallow directories first.
    pub fn add_file(&mut self, base: &str, text: &str) {
        let base: Vec<String> = base
            .split('/')
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect();
        for line in text.lines() {
            let mut line = line.trim_end_matches('\r');
            if !line.ends_with("\\ ") {
                line = line.trim_end_matches(' ');
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negate, mut pat) = match line.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, line),
            };
            if let Some(rest) = pat.strip_prefix('\\')
                && (rest.starts_with('#') || rest.starts_with('!'))
            {
                pat = rest;
            }
            let dir_only = pat.ends_with('/');
            let pat = pat.trim_end_matches('/');
            if pat.is_empty() {
                continue;
            }
            let anchored = pat.contains('/');
            let parts = pat
                .trim_start_matches('/')
                .split('/')
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect();
            self.rules.push(Rule {
                base: base.clone(),
                negate,
                dir_only,
                anchored,
                parts,
            });
        }
    }

    /// Whether the file at `path` (relative, `/`-separated) is ignored.
    pub fn is_ignored(&self, path: &str) -> bool {
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        let mut ignored = false;
        for rule in &self.rules {
            if comps.len() <= rule.base.len() || !rule.base.iter().zip(&comps).all(|(a, b)| a == b)
            {
                continue;
            }
            if rule.matches(&comps[rule.base.len()..]) {
                ignored = !rule.negate;
            }
        }
        ignored
    }
}

impl Rule {
    /// `rel` is the path below the rule's base; its last component is a file.
    fn matches(&self, rel: &[&str]) -> bool {
        if self.anchored {
            // The pattern must match a leading run of components: the file itself, or a
            // directory above it.
            (1..=rel.len()).any(|end| {
                let is_dir = end < rel.len();
                (is_dir || !self.dir_only) && match_parts(&self.parts, &rel[..end])
            })
        } else {
            rel.iter().enumerate().any(|(i, comp)| {
                let is_dir = i + 1 < rel.len();
                (is_dir || !self.dir_only) && glob(&self.parts[0], comp)
            })
        }
    }
}

fn match_parts(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| match_parts(rest, &path[skip..]))
        }
        Some((first, rest)) => match path.split_first() {
            Some((comp, path_rest)) => glob(first, comp) && match_parts(rest, path_rest),
            None => false,
        },
    }
}

/// Matches one path component against one glob component.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|skip| glob_at(&p[1..], &t[skip..])),
        Some('?') => !t.is_empty() && glob_at(&p[1..], &t[1..]),
        Some('[') => match (class_end(p), t.first()) {
            (Some(end), Some(c)) => {
                class_matches(&p[1..end], *c) && glob_at(&p[end + 1..], &t[1..])
            }
            (None, Some('[')) => glob_at(&p[1..], &t[1..]),
            _ => false,
        },
        Some('\\') if p.len() > 1 => t.first() == Some(&p[1]) && glob_at(&p[2..], &t[1..]),
        Some(c) => t.first() == Some(c) && glob_at(&p[1..], &t[1..]),
    }
}

fn class_end(p: &[char]) -> Option<usize> {
    let mut i = 1;
    if matches!(p.get(i), Some('!' | '^')) {
        i += 1;
    }
    if p.get(i) == Some(&']') {
        i += 1;
    }
    while i < p.len() {
        if p[i] == ']' {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn class_matches(class: &[char], c: char) -> bool {
    let (negate, class) = match class.first() {
        Some('!' | '^') => (true, &class[1..]),
        _ => (false, class),
    };
    let mut found = false;
    let mut i = 0;
    while i < class.len() {
        if i + 2 < class.len() && class[i + 1] == '-' {
            if class[i] <= c && c <= class[i + 2] {
                found = true;
            }
            i += 3;
        } else {
            if class[i] == c {
                found = true;
            }
            i += 1;
        }
    }
    found != negate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitignore_rules() {
        let mut m = IgnoreMatcher::new();
        m.add_file("", "# comment\n*.md\n/build/\ndocs/**/*.txt\n!keep.md\n");
        m.add_file("pkg", "secret*\n");
        assert!(m.is_ignored("README.md"));
        assert!(m.is_ignored("a/b/NOTES.md"));
        assert!(!m.is_ignored("keep.md"));
        assert!(m.is_ignored("build/x.json"));
        assert!(!m.is_ignored("a/build/x.json"), "anchored to the root");
        assert!(m.is_ignored("docs/x.txt"));
        assert!(m.is_ignored("docs/a/b/x.txt"));
        assert!(!m.is_ignored("docs/a/b/x.json"));
        assert!(m.is_ignored("pkg/secret.yaml"));
        assert!(
            !m.is_ignored("other/secret.yaml"),
            "applies below its own directory only"
        );
        assert!(glob("[a-c]?.json", "b1.json"));
        assert!(!glob("[!a-c]*", "apple"));
    }
}
