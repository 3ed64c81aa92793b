//! A fast reader for the block-style YAML that real manifests are written in.
//!
//! Contract: [`parse`] returns exactly the value the full parser (serde-saphyr into
//! `serde_json::Value`, with olmpack's options) returns for the same text, or `None` ("declined")
//! whenever the text leaves the subset below or anything is in doubt; the caller then reads
//! the text with the full parser, which also produces every error message. It never fails and
//! never accepts text the full parser refuses.
//!
//! The subset: one document (an optional leading `---` line), whose root is a block mapping or
//! sequence; block mappings with plain or single-line quoted keys, block sequences (also
//! compact `- key: value` entries and sequences at their key's indentation); plain scalars
//! (also over several lines), single- and double-quoted scalars (also over several lines),
//! literal and folded block scalars with a chomping indicator, one-line flow sequences of
//! scalars, `[]` and `{}`; comments and blank lines. Declined: tabs, carriage returns and
//! other control characters, byte-order marks and Unicode line separators, anchors, aliases,
//! tags, directives, complex keys, merge keys, repeated keys, flow mappings, nested flow
//! collections, explicit indentation indicators, scalar roots, more than one document, and
//! inputs so large (more scalar bytes) or deep that the full parser's budget could matter.
//!
//! Plain scalars resolve as the full parser resolves them: `~`, `null`, `Null`, `NULL` are
//! null; YAML 1.1 booleans (`yes`, `on`, `y`, ... in any case) are booleans; decimal integers
//! without a leading zero are numbers; any other scalar that starts with a digit, a sign or a
//! dot is resolved by the full parser itself, except `--flag`; everything else is a string.

use serde_json::{Map, Value};

/// The fast reader declined the text (the full parser reads it instead).
#[derive(Debug)]
struct Decline;

type Fast<T> = Result<T, Decline>;

/// Deeper nesting is left to the full parser, whose budget allows 64 levels.
const MAX_DEPTH: usize = 48;
/// Larger texts are left to the full parser. Its node and event budgets grow with the text
/// (a text without aliases never meets them); its budget of scalar bytes is this size.
const MAX_LEN: usize = 256 << 20;
/// Characters that cannot start a plain scalar or key the fast reader takes.
const INDICATORS: &[u8] = b"-?:,[]{}#&*!|>'\"%@`";

/// Reads one YAML document (see the module contract); `None` when declined.
pub(crate) fn parse(text: &str) -> Option<Value> {
    if text.len() > MAX_LEN || !plain_characters(text.as_bytes()) {
        return None;
    }
    let mut reader = Reader::new(text).ok()?;
    reader.document().ok()
}

/// What [`plain_characters`] makes of each byte: 0 fine, 1 refused, 2 look at what follows.
const BYTE_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = 1;
        b += 1;
    }
    table[b'\n' as usize] = 0;
    table[0x7F] = 1;
    table[0xC2] = 2;
    table[0xE2] = 2;
    table[0xEF] = 2;
    table
};

/// Whether `bytes` hold only characters the fast reader handles: no tab, carriage return or
/// other control character, DEL, C1 control (NEL among them), U+2028/U+2029, BOM, U+FFFE/F.
fn plain_characters(bytes: &[u8]) -> bool {
    // Most of a manifest is printable ASCII and line breaks: whole blocks of those are
    // passed at once (a loop without early exit, which the compiler vectorizes); a block
    // holding anything else is looked at byte by byte.
    const BLOCK: usize = 64;
    let mut start = 0;
    while start < bytes.len() {
        let end = (start + BLOCK).min(bytes.len());
        let block = &bytes[start..end];
        let ascii = block.iter().fold(true, |ok, &b| {
            ok & ((0x20..0x7F).contains(&b) | (b == b'\n'))
        });
        if !ascii && !plain_from(bytes, start, end) {
            return false;
        }
        start = end;
    }
    true
}

/// [`plain_characters`] byte by byte for `bytes[from..to]` (looking past `to` for the rest
/// of a character that starts before it).
fn plain_from(bytes: &[u8], from: usize, to: usize) -> bool {
    for (i, &b) in bytes.iter().enumerate().take(to).skip(from) {
        match BYTE_CLASS[b as usize] {
            0 => {}
            1 => return false,
            _ => {
                let (b1, b2) = (bytes.get(i + 1).copied(), bytes.get(i + 2).copied());
                let bad = match b {
                    0xC2 => matches!(b1, Some(0x80..=0x9F)),
                    0xE2 => b1 == Some(0x80) && matches!(b2, Some(0xA8 | 0xA9)),
                    _ => {
                        (b1 == Some(0xBB) && b2 == Some(0xBF))
                            || (b1 == Some(0xBF) && matches!(b2, Some(0xBE | 0xBF)))
                    }
                };
                if bad {
                    return false;
                }
            }
        }
    }
    true
}

/// Number of leading spaces.
fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// A line with nothing but spaces, or a comment.
fn blank(line: &str) -> bool {
    let t = line.trim_start_matches(' ');
    t.is_empty() || t.starts_with('#')
}

/// `-` alone or followed by a space: a block sequence entry.
fn is_entry(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

/// What may follow a node on its line: nothing, or a comment after a space.
fn trailing_ok(rest: &str) -> bool {
    let t = rest.trim_start_matches(' ');
    t.is_empty() || (t.starts_with('#') && t.len() < rest.len())
}

struct Reader<'a> {
    lines: Vec<&'a str>,
    /// Each line's indentation ([`indent`]), measured once.
    indents: Vec<usize>,
    /// The line being read.
    i: usize,
    depth: usize,
    /// Whether the text ends with a line break (a block scalar on the last line needs one).
    final_newline: bool,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Fast<Self> {
        // The lines as `split('\n')` gives them, with their indentation.
        let breaks = memchr::memchr_iter(b'\n', text.as_bytes());
        let mut lines = Vec::new();
        let mut indents = Vec::new();
        let mut start = 0;
        for end in breaks.chain([text.len()]) {
            let line = &text[start..end];
            lines.push(line);
            indents.push(indent(line));
            start = end + 1;
        }
        let final_newline = text.ends_with('\n');
        if final_newline {
            lines.pop();
            indents.pop();
        }
        let first = lines.iter().position(|l| !blank(l));
        for (i, line) in lines.iter().enumerate() {
            let marker =
                line.starts_with("---") || line.starts_with("...") || line.starts_with('%');
            if marker && !(Some(i) == first && line.trim_end_matches(' ') == "---") {
                return Err(Decline);
            }
        }
        let mut reader = Self {
            lines,
            indents,
            i: 0,
            depth: 0,
            final_newline,
        };
        if let Some(first) = first
            && reader.lines[first].starts_with("---")
        {
            reader.i = first + 1;
        }
        Ok(reader)
    }

    fn skip_blank(&mut self) {
        while let Some((_, content)) = self.line(self.i)
            && (content.is_empty() || content.starts_with('#'))
        {
            self.i += 1;
        }
    }

    /// Line `j`'s indentation and content.
    fn line(&self, j: usize) -> Option<(usize, &'a str)> {
        let line = *self.lines.get(j)?;
        let n = self.indents[j];
        Some((n, &line[n..]))
    }

    /// The current line's indentation and content.
    fn peek(&self) -> Option<(usize, &'a str)> {
        self.line(self.i)
    }

    fn document(&mut self) -> Fast<Value> {
        self.skip_blank();
        let (n, _) = self.peek().ok_or(Decline)?;
        let value = self.block_node(n)?;
        self.skip_blank();
        if self.i != self.lines.len() {
            return Err(Decline);
        }
        Ok(value)
    }

    /// The block collection starting on the current line, at indentation `n`.
    fn block_node(&mut self, n: usize) -> Fast<Value> {
        let (_, content) = self.peek().ok_or(Decline)?;
        self.collection(n, content)?.ok_or(Decline)
    }

    /// The block collection that `content`, the current line at indentation `n`, starts;
    /// `None` when the line starts none.
    fn collection(&mut self, n: usize, content: &'a str) -> Fast<Option<Value>> {
        if is_entry(content) {
            return self.sequence(n).map(Some);
        }
        match key_split(content)? {
            Some(first) => self.mapping(n, Some(first)).map(Some),
            None => Ok(None),
        }
    }

    fn enter(&mut self) -> Fast<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Decline);
        }
        Ok(())
    }

    /// A block mapping at indentation `n` whose first entry, already split into key and what
    /// follows its `:`, is `first` (on the current line, or inside a sequence entry's line:
    /// `- key: value`).
    fn mapping(&mut self, n: usize, first: Option<(String, &'a str)>) -> Fast<Value> {
        self.enter()?;
        let mut map = Map::new();
        let mut first = first;
        loop {
            let (key, rest) = match first.take() {
                Some(entry) => entry,
                None => {
                    self.skip_blank();
                    let Some((m, content)) = self.peek() else {
                        break;
                    };
                    if m < n || (m == n && is_entry(content)) {
                        break;
                    }
                    if m > n {
                        return Err(Decline);
                    }
                    key_split(content)?.ok_or(Decline)?
                }
            };
            let value = self.value(rest, n, true)?;
            if map.insert(key, value).is_some() {
                return Err(Decline);
            }
        }
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    /// A block sequence at indentation `n`.
    fn sequence(&mut self, n: usize) -> Fast<Value> {
        self.enter()?;
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            let Some((m, content)) = self.peek() else {
                break;
            };
            if m < n || (m == n && !is_entry(content)) {
                break;
            }
            if m > n {
                return Err(Decline);
            }
            let rest = &content[1..];
            let body = rest.trim_start_matches(' ');
            let item = if is_entry(body) {
                return Err(Decline);
            } else if let Some(first) = key_split(body)? {
                self.mapping(n + 1 + (rest.len() - body.len()), Some(first))?
            } else {
                self.value(rest, n, false)?
            };
            items.push(item);
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    /// The value after `key:` or `- ` on the current line (`rest`), whose parent is at
    /// indentation `n`; consumes every line of the value. `in_map`: a sequence at the key's
    /// own indentation is the value.
    fn value(&mut self, rest: &'a str, n: usize, in_map: bool) -> Fast<Value> {
        let rest = rest.trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with('#') {
            self.i += 1;
            return self.nested(n, in_map);
        }
        match rest.as_bytes()[0] {
            b'"' | b'\'' => {
                let (text, after) = self.quoted(rest)?;
                if !trailing_ok(after) {
                    return Err(Decline);
                }
                self.i += 1;
                Ok(Value::String(text))
            }
            b'|' | b'>' => self.block_scalar(rest, n),
            b'[' => {
                let value = flow_sequence(rest)?;
                self.i += 1;
                Ok(value)
            }
            b'{' if rest[1..].trim_start_matches(' ').starts_with('}') => {
                let after = &rest[1..].trim_start_matches(' ')[1..];
                if !trailing_ok(after) {
                    return Err(Decline);
                }
                self.i += 1;
                Ok(Value::Object(Map::new()))
            }
            b if INDICATORS.contains(&b) && b != b'-' => Err(Decline),
            b'-' if rest.len() == 1 || rest.as_bytes()[1] == b' ' => Err(Decline),
            _ => self.plain(rest, n),
        }
    }

    /// The value on the lines after a `key:` or `-` with nothing else on its line.
    fn nested(&mut self, n: usize, in_map: bool) -> Fast<Value> {
        self.skip_blank();
        match self.peek() {
            Some((m, content)) if m > n => match self.collection(m, content)? {
                Some(collection) => Ok(collection),
                None => self.value(content, n, false),
            },
            Some((m, content)) if m == n && in_map && is_entry(content) => self.sequence(n),
            _ => Ok(Value::Null),
        }
    }

    /// A plain scalar starting with `first` on the current line, continued on the following
    /// lines indented deeper than `n`.
    fn plain(&mut self, first: &'a str, n: usize) -> Fast<Value> {
        let (text, mut ended) = plain_line(first)?;
        self.i += 1;
        let mut folded: Option<String> = None;
        let mut empties = 0;
        let mut j = self.i;
        while !ended && let Some((m, t)) = self.line(j) {
            if t.is_empty() {
                empties += 1;
                j += 1;
                continue;
            }
            if m <= n || t.starts_with('#') {
                break;
            }
            let (piece, commented) = plain_line(t)?;
            let s = folded.get_or_insert_with(|| text.to_owned());
            if empties == 0 {
                s.push(' ');
            } else {
                s.extend(std::iter::repeat_n('\n', empties));
            }
            s.push_str(piece);
            empties = 0;
            j += 1;
            self.i = j;
            ended = commented;
        }
        match folded {
            Some(s) => resolve_plain(&s),
            None => resolve_plain(text),
        }
    }

    /// A quoted scalar starting at `rest` (its opening quote) on the current line, over as
    /// many lines as it takes (the full parser does not ask for indentation). Returns its value
    /// and what follows the closing quote; the current line is then the closing quote's.
    fn quoted(&mut self, rest: &'a str) -> Fast<(String, &'a str)> {
        let double = rest.starts_with('"');
        let mut out = String::new();
        let mut s = &rest[1..];
        loop {
            let mut line = QuotedLine::new(&mut out);
            if let Some(end) = line.scan(s, double)? {
                return Ok((out, &s[end..]));
            }
            let escaped_break = line.escaped_break;
            if !escaped_break && let Some(at) = line.spaces_from {
                out.truncate(at);
            }
            self.i += 1;
            let mut empties = 0;
            while self.i < self.lines.len() && self.lines[self.i].trim_start_matches(' ').is_empty()
            {
                empties += 1;
                self.i += 1;
            }
            let next = *self.lines.get(self.i).ok_or(Decline)?;
            if escaped_break && empties > 0 {
                return Err(Decline);
            }
            if !escaped_break {
                if empties == 0 {
                    out.push(' ');
                } else {
                    out.extend(std::iter::repeat_n('\n', empties));
                }
            }
            s = next.trim_start_matches(' ');
        }
    }

    /// A literal (`|`) or folded (`>`) block scalar whose header is `header`, content on the
    /// following lines indented deeper than `n`.
    fn block_scalar(&mut self, header: &'a str, n: usize) -> Fast<Value> {
        let folded = header.starts_with('>');
        let mut chomp = b' ';
        let mut rest = &header[1..];
        if let Some(c @ (b'-' | b'+')) = rest.bytes().next() {
            chomp = c;
            rest = &rest[1..];
        }
        if !trailing_ok(rest) {
            return Err(Decline);
        }
        self.i += 1;
        let start = self.i;
        let content = (start..self.lines.len())
            .find(|&j| !self.lines[j].trim_start_matches(' ').is_empty())
            .ok_or(Decline)?;
        let ci = indent(self.lines[content]);
        // Empty lines before the first content line may not be indented deeper than it.
        if ci <= n || self.lines[start..content].iter().any(|l| l.len() > ci) {
            return Err(Decline);
        }
        let mut end = start;
        let mut last = None;
        while end < self.lines.len() {
            let line = self.lines[end];
            if line.trim_start_matches(' ').is_empty() {
                if line.len() > ci {
                    last = Some(end);
                }
            } else if indent(line) >= ci {
                last = Some(end);
            } else {
                break;
            }
            end += 1;
        }
        let last = last.ok_or(Decline)?;
        // The last line break must be there (and, to keep trailing lines, every one of them).
        let kept = if chomp == b'+' { end } else { last + 1 };
        if kept == self.lines.len() && !self.final_newline {
            return Err(Decline);
        }
        let body: Vec<&str> = self.lines[start..=last]
            .iter()
            .map(|l| l.get(ci..).unwrap_or(""))
            .collect();
        let mut text = if folded { fold(&body) } else { body.join("\n") };
        match chomp {
            b'-' => {}
            b'+' => text.extend(std::iter::repeat_n('\n', end - last)),
            _ => text.push('\n'),
        }
        self.i = last + 1;
        Ok(Value::String(text))
    }
}

/// The lines of a folded block scalar (indentation removed, up to the last non-empty one)
/// folded: a break between two lines that do not start with a space becomes a space, or is
/// dropped when empty lines follow it; every other break is kept.
fn fold(body: &[&str]) -> String {
    let mut out = String::new();
    let mut prev: Option<&str> = None;
    let mut empties = 0;
    for line in body {
        if line.is_empty() {
            empties += 1;
            continue;
        }
        match prev {
            None => out.extend(std::iter::repeat_n('\n', empties)),
            Some(p) => {
                let normal = !p.starts_with(' ') && !line.starts_with(' ');
                let breaks = if normal { empties } else { empties + 1 };
                if breaks == 0 {
                    out.push(' ');
                } else {
                    out.extend(std::iter::repeat_n('\n', breaks));
                }
            }
        }
        out.push_str(line);
        prev = Some(line);
        empties = 0;
    }
    out
}

/// One line of a quoted scalar being read into `out`.
struct QuotedLine<'o> {
    out: &'o mut String,
    /// Where the run of literal spaces at the end of `out` starts (trimmed at a line break).
    spaces_from: Option<usize>,
    /// The line ended with `\` (double-quoted): the break is dropped, not folded.
    escaped_break: bool,
}

impl<'o> QuotedLine<'o> {
    /// A line read into `out`, with nothing seen yet.
    fn new(out: &'o mut String) -> Self {
        Self {
            out,
            spaces_from: None,
            escaped_break: false,
        }
    }

    /// Reads `s` up to the closing quote (returning the offset after it) or the line's end.
    fn scan(&mut self, s: &str, double: bool) -> Fast<Option<usize>> {
        let bytes = s.as_bytes();
        let quote = if double { b'"' } else { b'\'' };
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b == quote {
                if !double && bytes.get(i + 1) == Some(&b'\'') {
                    self.out.push('\'');
                    self.spaces_from = None;
                    i += 2;
                    continue;
                }
                return Ok(Some(i + 1));
            }
            if double && b == b'\\' {
                if i + 1 == bytes.len() {
                    self.escaped_break = true;
                    return Ok(None);
                }
                i += 1 + escape(&s[i + 1..], self.out)?;
                self.spaces_from = None;
                continue;
            }
            if b == b' ' {
                self.spaces_from.get_or_insert(self.out.len());
                self.out.push(' ');
                i += 1;
                continue;
            }
            let run = bytes[i..]
                .iter()
                .position(|&c| c == quote || c == b' ' || (double && c == b'\\'))
                .map_or(bytes.len(), |p| i + p);
            self.out.push_str(&s[i..run]);
            self.spaces_from = None;
            i = run;
        }
        Ok(None)
    }
}

/// Decodes the escape after a backslash at the start of `s` into `out`; returns its length.
fn escape(s: &str, out: &mut String) -> Fast<usize> {
    let c = s.as_bytes()[0];
    let simple = match c {
        b'0' => '\0',
        b'a' => '\x07',
        b'b' => '\x08',
        b't' => '\t',
        b'n' => '\n',
        b'v' => '\x0B',
        b'f' => '\x0C',
        b'r' => '\r',
        b'e' => '\x1B',
        b' ' => ' ',
        b'"' => '"',
        b'/' => '/',
        b'\\' => '\\',
        b'N' => '\u{85}',
        b'_' => '\u{A0}',
        b'L' => '\u{2028}',
        b'P' => '\u{2029}',
        b'x' | b'u' | b'U' => {
            let len = match c {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let hex = s.get(1..1 + len).ok_or(Decline)?;
            if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                return Err(Decline);
            }
            let code = u32::from_str_radix(hex, 16).map_err(|_| Decline)?;
            out.push(char::from_u32(code).ok_or(Decline)?);
            return Ok(1 + len);
        }
        _ => return Err(Decline),
    };
    out.push(simple);
    Ok(1)
}

/// Keys whose `:` is this many bytes or more after the key's start are left to the full
/// parser, which refuses a simple key over 1,024 characters (bytes are never fewer).
const MAX_KEY_LEN: usize = 1000;

/// A key line's key and what follows its `:`; `None` when the line is not `key: ...`.
fn key_split(content: &str) -> Fast<Option<(String, &str)>> {
    let bytes = content.as_bytes();
    match bytes.first() {
        None => return Ok(None),
        Some(b'"' | b'\'') => {
            let double = bytes[0] == b'"';
            let mut key = String::new();
            let mut line = QuotedLine::new(&mut key);
            let Some(end) = line.scan(&content[1..], double)? else {
                return Ok(None);
            };
            let after = content[1 + end..].trim_start_matches(' ');
            return match after.strip_prefix(':') {
                Some(_) if content.len() - after.len() >= MAX_KEY_LEN => Err(Decline),
                Some(rest) if rest.is_empty() || rest.starts_with(' ') => Ok(Some((key, rest))),
                _ => Ok(None),
            };
        }
        Some(b'-') if bytes.get(1).is_some_and(|&b| b != b' ') => {}
        Some(b) if INDICATORS.contains(b) => return Ok(None),
        Some(_) => {}
    }
    for (j, &b) in bytes.iter().enumerate() {
        if b == b'#' && bytes[j - 1] == b' ' {
            return Ok(None);
        }
        if b == b':' && matches!(bytes.get(j + 1), None | Some(b' ')) {
            if j >= MAX_KEY_LEN {
                return Err(Decline);
            }
            let key = content[..j].trim_end_matches(' ');
            return match resolve_plain(key)? {
                Value::String(s) if s != "<<" => Ok(Some((s, &content[j + 1..]))),
                _ => Err(Decline),
            };
        }
    }
    Ok(None)
}

/// A plain scalar's text on one line (before a comment) and whether a comment ends it;
/// declined when a `: ` would make the line a mapping.
fn plain_line(s: &str) -> Fast<(&str, bool)> {
    let bytes = s.as_bytes();
    for (j, &b) in bytes.iter().enumerate() {
        if b == b'#' && j > 0 && bytes[j - 1] == b' ' {
            return Ok((s[..j].trim_end_matches(' '), true));
        }
        if b == b':' && matches!(bytes.get(j + 1), None | Some(b' ')) {
            return Err(Decline);
        }
    }
    Ok((s.trim_end_matches(' '), false))
}

/// A plain scalar's value (module docs).
fn resolve_plain(text: &str) -> Fast<Value> {
    let Some(&first) = text.as_bytes().first() else {
        return Err(Decline);
    };
    if matches!(text, "~" | "null" | "Null" | "NULL") {
        return Ok(Value::Null);
    }
    // Every YAML 1.1 boolean is one to five letters starting with one of these.
    let maybe_bool = text.len() <= 5 && matches!(first | 0x20, b't' | b'y' | b'o' | b'f' | b'n');
    for (word, value) in [
        ("true", true),
        ("yes", true),
        ("y", true),
        ("on", true),
        ("false", false),
        ("no", false),
        ("n", false),
        ("off", false),
    ] {
        if maybe_bool && text.eq_ignore_ascii_case(word) {
            return Ok(Value::Bool(value));
        }
    }
    // `--flag` (container arguments) is a string to every resolver: no need to ask the full
    // parser (`---` is left to it, being a document marker at a line's start).
    let flag = text.starts_with("--") && !text.starts_with("---");
    if flag || !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return Ok(Value::String(text.to_owned()));
    }
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let simple = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits.len() == 1 || !digits.starts_with('0'));
    if simple {
        let n: i64 = digits.parse().map_err(|_| Decline)?;
        return Ok(if negative { (-n).into() } else { n.into() });
    }
    full_scalar(text)
}

/// A plain scalar resolved by the full parser, read as a document of its own.
fn full_scalar(text: &str) -> Fast<Value> {
    if text.contains('\n') || text.starts_with("---") || text.starts_with("...") {
        return Err(Decline);
    }
    match super::from_str::<Value>(text) {
        Ok(v) if !(v.is_array() || v.is_object()) => Ok(v),
        _ => Err(Decline),
    }
}

/// A one-line flow sequence of scalars (`[a, "b", 1]`), then nothing but a comment.
fn flow_sequence(s: &str) -> Fast<Value> {
    let mut items = Vec::new();
    let mut rest = s[1..].trim_start_matches(' ');
    if let Some(after) = rest.strip_prefix(']') {
        return if trailing_ok(after) {
            Ok(Value::Array(items))
        } else {
            Err(Decline)
        };
    }
    loop {
        let (item, after) = match rest.as_bytes().first() {
            Some(b'"' | b'\'') => {
                let mut text = String::new();
                let mut line = QuotedLine::new(&mut text);
                let end = line
                    .scan(&rest[1..], rest.starts_with('"'))?
                    .ok_or(Decline)?;
                (Value::String(text), &rest[1 + end..])
            }
            Some(b) if INDICATORS.contains(b) => return Err(Decline),
            Some(_) => {
                let end = rest.find([',', ']']).ok_or(Decline)?;
                let text = rest[..end].trim_end_matches(' ');
                if text.contains([':', '#', '[', '{', '}']) {
                    return Err(Decline);
                }
                (resolve_plain(text)?, &rest[end..])
            }
            None => return Err(Decline),
        };
        items.push(item);
        let after = after.trim_start_matches(' ');
        if let Some(tail) = after.strip_prefix(']') {
            return if trailing_ok(tail) {
                Ok(Value::Array(items))
            } else {
                Err(Decline)
            };
        }
        rest = after
            .strip_prefix(',')
            .ok_or(Decline)?
            .trim_start_matches(' ');
    }
}
