//! YAML exactly as `opm render -o yaml` prints a blob: Go's JSON encoding of the blob turned
//! into YAML by `sigs.k8s.io/yaml` (go-yaml v2 underneath). Contract, as observed on opm and
//! go-yaml v2.4:
//! - map keys in go-yaml's "natural" order (letters before other characters, runs of digits
//!   compared as numbers), block style, sequences inside mappings not indented, empty
//!   collections as `[]` / `{}`;
//! - strings plain when they would read back as the same string, double-quoted when they
//!   would read back as another type (`"1.0"`, `"true"`, `""`, timestamps), single-quoted when
//!   an indicator or surrounding space forbids plain, double-quoted with escapes when they hold
//!   characters YAML cannot print, literal blocks (`|`, `|-`, `|+`) when they hold line breaks;
//! - plain and quoted strings folded at spaces past column 80, as go-yaml does;
//! - numbers as go-yaml prints what it parsed from Go's JSON (integers as integers, other
//!   floats in Go's shortest `%g` form).
//!
//! This writer is a direct serialiser, not a generic YAML library: no tags, anchors or flow
//! style beyond empty collections, which opm's output never contains.

use serde_json::Value;

const BEST_WIDTH: usize = 80;
const BEST_INDENT: i64 = 2;

/// Writes `value` as one YAML document (no `---`), as `yaml.Marshal` would.
pub fn write_document(out: &mut Vec<u8>, value: &Value) {
    let mut e = Emitter {
        out,
        column: 0,
        whitespace: true,
        indention: true,
        open_ended: false,
        indent: -1,
    };
    e.node(value, Context::Root);
    // Document end: finish the line; an open-ended block scalar at the very end gets `...`.
    e.indent = -1;
    e.write_indent();
    if e.open_ended {
        e.write_indicator(b"...", true, false, false);
        e.write_indent();
    }
}

/// Where a node sits (go-yaml's root/sequence/mapping/simple-key contexts).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Root,
    Sequence,
    /// A mapping value, or a complex (`? `) key.
    Mapping,
    SimpleKey,
}

struct Emitter<'a> {
    out: &'a mut Vec<u8>,
    /// Characters (not bytes) written on the current line.
    column: usize,
    whitespace: bool,
    indention: bool,
    open_ended: bool,
    indent: i64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// What the scalar analysis found (go-yaml's `scalar_data`).
struct Analysis {
    multiline: bool,
    block_plain: bool,
    single_quoted: bool,
    block: bool,
}

impl Emitter<'_> {
    fn put(&mut self, b: u8) {
        self.out.push(b);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push(b'\n');
        self.column = 0;
    }

    /// Copies one character (all its bytes) and counts one column.
    fn write_char(&mut self, s: &[u8], i: &mut usize) {
        let w = utf8_width(s[*i]).max(1);
        self.out.extend_from_slice(&s[*i..(*i + w).min(s.len())]);
        self.column += 1;
        *i += w;
    }

    /// Copies the run of one-byte, one-column characters that `run_at` finds at `i` whole (as
    /// `write_char` would one by one), or one character when the run is shorter than two.
    fn write_run(&mut self, s: &[u8], i: &mut usize, run_at: fn(&[u8]) -> usize) {
        let run = run_at(&s[*i..]);
        if run > 1 {
            self.out.extend_from_slice(&s[*i..*i + run]);
            self.column += run;
            *i += run;
        } else {
            self.write_char(s, i);
        }
    }

    fn write_break_char(&mut self, s: &[u8], i: &mut usize) {
        if s[*i] == b'\n' {
            self.put_break();
            *i += 1;
        } else {
            self.write_char(s, i);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(b' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &[u8], need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(b' ');
        }
        let mut i = 0;
        while i < ind.len() {
            self.write_char(ind, &mut i);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
        self.open_ended = false;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) -> i64 {
        let saved = self.indent;
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
        saved
    }

    fn node(&mut self, value: &Value, ctx: Context) {
        match value {
            Value::Null => self.scalar(b"null", Style::Plain, ctx),
            Value::Bool(b) => self.scalar(if *b { b"true" } else { b"false" }, Style::Plain, ctx),
            Value::Number(n) => self.scalar(number_text(n).as_bytes(), Style::Plain, ctx),
            Value::String(s) => self.scalar(s.as_bytes(), string_style(s), ctx),
            Value::Array(items) if items.is_empty() => self.empty_flow(b"[", b"]"),
            Value::Object(map) if map.is_empty() => self.empty_flow(b"{", b"}"),
            Value::Array(items) => {
                let indentless = ctx == Context::Mapping && !self.indention;
                let saved = self.increase_indent(false, indentless);
                for item in items {
                    self.write_indent();
                    self.write_indicator(b"-", true, false, true);
                    self.node(item, Context::Sequence);
                }
                self.indent = saved;
            }
            Value::Object(map) => {
                let saved = self.increase_indent(false, false);
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_by(|a, b| natural_cmp(a, b));
                for key in keys {
                    self.write_indent();
                    let simple = !key.bytes().any(|b| b == b'\n' || b == b'\r')
                        && !has_unicode_break(key)
                        && key.len() <= 128;
                    if simple {
                        self.node(&Value::String(key.clone()), Context::SimpleKey);
                        self.write_indicator(b":", false, false, false);
                    } else {
                        self.write_indicator(b"?", true, false, true);
                        self.node(&Value::String(key.clone()), Context::Mapping);
                        self.write_indent();
                        self.write_indicator(b":", true, false, true);
                    }
                    self.node(&map[key], Context::Mapping);
                }
                self.indent = saved;
            }
        }
    }

    fn empty_flow(&mut self, open: &[u8], close: &[u8]) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn scalar(&mut self, value: &[u8], requested: Style, ctx: Context) {
        let a = analyze(value);
        let simple_key = ctx == Context::SimpleKey;
        let mut style = requested;
        if simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!a.block_plain || (value.is_empty() && simple_key)) {
            style = Style::Single;
        }
        if style == Style::Single && !a.single_quoted {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block || simple_key) {
            style = Style::Double;
        }
        let saved = self.increase_indent(true, false);
        let breaks = !simple_key;
        match style {
            Style::Plain => self.write_plain(value, breaks, ctx == Context::Root),
            Style::Single => self.write_single(value, breaks),
            Style::Double => self.write_double(value, breaks),
            Style::Literal => self.write_literal(value),
        }
        self.indent = saved;
    }

    fn write_plain(&mut self, value: &[u8], allow_breaks: bool, root: bool) {
        if !self.whitespace {
            self.put(b' ');
        }
        let (mut spaces, mut breaks) = (false, false);
        let mut i = 0;
        while i < value.len() {
            if value[i] == b' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && value.get(i + 1) != Some(&b' ')
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write_char(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break_char(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write_run(value, &mut i, plain_run);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
        if root {
            self.open_ended = true;
        }
    }

    fn write_single(&mut self, value: &[u8], allow_breaks: bool) {
        self.write_indicator(b"'", true, false, false);
        let (mut spaces, mut breaks) = (false, false);
        let mut i = 0;
        while i < value.len() {
            if value[i] == b' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < value.len()
                    && value[i + 1] != b' '
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write_char(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break_char(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if value[i] == b'\'' {
                    self.put(b'\'');
                }
                self.write_char(value, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator(b"'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, value: &[u8], allow_breaks: bool) {
        self.write_indicator(b"\"", true, false, false);
        let bom = value.starts_with(&[0xEF, 0xBB, 0xBF]);
        let mut spaces = false;
        let mut i = 0;
        while i < value.len() {
            if bom
                || !is_printable(value, i)
                || is_break(value, i)
                || value[i] == b'"'
                || value[i] == b'\\'
            {
                let w = utf8_width(value[i]).max(1);
                let c = std::str::from_utf8(&value[i..(i + w).min(value.len())])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .map_or(u32::from(value[i]), u32::from);
                i += w;
                self.put(b'\\');
                self.escape(c);
                spaces = false;
            } else if value[i] == b' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < value.len()
                {
                    self.write_indent();
                    if value[i + 1] == b' ' {
                        self.put(b'\\');
                    }
                    i += 1;
                } else {
                    self.write_char(value, &mut i);
                }
                spaces = true;
            } else {
                self.write_char(value, &mut i);
                spaces = false;
            }
        }
        self.write_indicator(b"\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// The escape after a backslash, as go-yaml writes it.
    fn escape(&mut self, c: u32) {
        let short = match c {
            0x00 => Some(b'0'),
            0x07 => Some(b'a'),
            0x08 => Some(b'b'),
            0x09 => Some(b't'),
            0x0A => Some(b'n'),
            0x0B => Some(b'v'),
            0x0C => Some(b'f'),
            0x0D => Some(b'r'),
            0x1B => Some(b'e'),
            0x22 => Some(b'"'),
            0x5C => Some(b'\\'),
            0x85 => Some(b'N'),
            0xA0 => Some(b'_'),
            0x2028 => Some(b'L'),
            0x2029 => Some(b'P'),
            _ => None,
        };
        if let Some(b) = short {
            self.put(b);
            return;
        }
        let (letter, digits) = if c <= 0xFF {
            (b'x', 2)
        } else if c <= 0xFFFF {
            (b'u', 4)
        } else {
            (b'U', 8)
        };
        self.put(letter);
        for k in (0..digits).rev() {
            let d = ((c >> (k * 4)) & 0xF) as u8;
            self.put(if d < 10 { b'0' + d } else { b'A' + d - 10 });
        }
    }

    fn write_literal(&mut self, value: &[u8]) {
        self.write_indicator(b"|", true, false, false);
        // Block scalar hints: indentation when it starts with a space or break, chomping.
        if value.first() == Some(&b' ') || is_break(value, 0) {
            let hint = [b'0' + BEST_INDENT as u8];
            self.write_indicator(&hint, false, false, false);
        }
        self.open_ended = false;
        let chomp = chomp_hint(value);
        if let Some(h) = chomp {
            if h == b'+' {
                self.open_ended = true;
            }
            self.write_indicator(&[h], false, false, false);
            if h == b'+' {
                self.open_ended = true;
            }
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < value.len() {
            if is_break(value, i) {
                self.write_break_char(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write_run(value, &mut i, line_run);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// `-` without a final break, `+` with more than one, none with exactly one.
fn chomp_hint(value: &[u8]) -> Option<u8> {
    let Some(last) = last_char_start(value, value.len()) else {
        return Some(b'-');
    };
    if !is_break(value, last) {
        return Some(b'-');
    }
    if last == 0 {
        return Some(b'+');
    }
    match last_char_start(value, last) {
        Some(prev) if is_break(value, prev) => Some(b'+'),
        _ => None,
    }
}

fn last_char_start(value: &[u8], end: usize) -> Option<usize> {
    let mut i = end.checked_sub(1)?;
    while i > 0 && value[i] & 0xC0 == 0x80 {
        i -= 1;
    }
    Some(i)
}

fn has_unicode_break(s: &str) -> bool {
    s.contains(['\u{85}', '\u{2028}', '\u{2029}'])
}

/// The style go-yaml's encoder asks for a string (before the emitter's own checks).
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if resolves_to_string(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::Double
    }
}

fn utf8_width(b: u8) -> usize {
    if b & 0x80 == 0 {
        1
    } else if b & 0xE0 == 0xC0 {
        2
    } else if b & 0xF0 == 0xE0 {
        3
    } else if b & 0xF8 == 0xF0 {
        4
    } else {
        0
    }
}

fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn is_break(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    c == b'\r'
        || c == b'\n'
        || (c == 0xC2 && at(b, i + 1) == 0x85)
        || (c == 0xE2 && at(b, i + 1) == 0x80 && matches!(at(b, i + 2), 0xA8 | 0xA9))
}

fn is_blank(b: &[u8], i: usize) -> bool {
    matches!(at(b, i), b' ' | b'\t')
}

fn is_blankz(b: &[u8], i: usize) -> bool {
    is_blank(b, i) || is_break(b, i) || at(b, i) == 0
}

fn is_printable(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    let c1 = at(b, i + 1);
    let c2 = at(b, i + 2);
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (c == 0xC2 && c1 >= 0xA0)
        || (c > 0xC2 && c < 0xED)
        || (c == 0xED && c1 < 0xA0)
        || c == 0xEE
        || (c == 0xEF && !(c1 == 0xBB && c2 == 0xBF) && !(c1 == 0xBF && (c2 == 0xBE || c2 == 0xBF)))
}

/// go-yaml's scalar analysis (which styles can carry the value).
fn analyze(value: &[u8]) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain: true,
            single_quoted: true,
            block: false,
        };
    }
    Scan::of(value).analysis()
}

/// What go-yaml's scalar analysis notices while scanning a non-empty value.
#[derive(Default)]
struct Scan {
    /// An indicator character where it would start YAML syntax.
    block_indicators: bool,
    line_breaks: bool,
    /// A character go-yaml does not print as is.
    special: bool,
    leading_space: bool,
    leading_break: bool,
    trailing_space: bool,
    trailing_break: bool,
    /// A space right after a line break.
    break_space: bool,
    /// A line break right after a space.
    space_break: bool,
}

impl Scan {
    /// Scans `value` character by character, as go-yaml's `yaml_emitter_analyze_scalar`.
    fn of(value: &[u8]) -> Self {
        let mut s = Scan {
            block_indicators: value.starts_with(b"---") || value.starts_with(b"..."),
            ..Scan::default()
        };
        let (mut previous_space, mut previous_break) = (false, false);
        let mut preceded_by_ws = true;
        let mut i = 0;
        while i < value.len() {
            if i > 0 {
                // A run of plain ASCII inside the value changes nothing but the "previous"
                // flags (no indicator, printable, no space or break): skip it whole.
                let run = quiet_run(&value[i..value.len() - 1]);
                if run > 0 {
                    previous_space = false;
                    previous_break = false;
                    preceded_by_ws = false;
                    i += run;
                    continue;
                }
            }
            let w = utf8_width(value[i]).max(1);
            let followed_by_ws = i + w >= value.len() || is_blank(value, i + w);
            let c = value[i];
            if is_indicator(c, i == 0, followed_by_ws, preceded_by_ws) {
                s.block_indicators = true;
            }
            if !is_printable(value, i) {
                s.special = true;
            }
            if c == b' ' {
                s.leading_space |= i == 0;
                s.trailing_space |= i + w == value.len();
                s.break_space |= previous_break;
                previous_space = true;
                previous_break = false;
            } else if is_break(value, i) {
                s.line_breaks = true;
                s.leading_break |= i == 0;
                s.trailing_break |= i + w == value.len();
                s.space_break |= previous_space;
                previous_space = false;
                previous_break = true;
            } else {
                previous_space = false;
                previous_break = false;
            }
            preceded_by_ws = is_blankz(value, i);
            i += w;
        }
        s
    }

    /// Which styles can carry the scanned value.
    fn analysis(&self) -> Analysis {
        let mut a = Analysis {
            multiline: self.line_breaks,
            block_plain: true,
            single_quoted: true,
            block: true,
        };
        if self.leading_space || self.leading_break || self.trailing_space || self.trailing_break {
            a.block_plain = false;
        }
        if self.trailing_space {
            a.block = false;
        }
        if self.break_space {
            a.block_plain = false;
            a.single_quoted = false;
        }
        if self.space_break || self.special {
            a.block_plain = false;
            a.single_quoted = false;
            a.block = false;
        }
        if self.line_breaks || self.block_indicators {
            a.block_plain = false;
        }
        a
    }
}

/// The length of the leading run of printable ASCII that is neither a space nor `:` nor `#`
/// (the only indicators inside a value).
fn quiet_run(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&b| !(0x21..=0x7E).contains(&b) || b == b':' || b == b'#')
        .unwrap_or(bytes.len())
}

/// The length of the leading run of ASCII without a line break: copied as is, one column per
/// byte.
fn line_run(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&b| b >= 0x80 || b == b'\n' || b == b'\r')
        .unwrap_or(bytes.len())
}

/// The length of the leading run of ASCII that is neither a space nor a line break: copied
/// as is, one column per byte.
fn plain_run(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&b| b >= 0x80 || b == b' ' || b == b'\n' || b == b'\r')
        .unwrap_or(bytes.len())
}

/// Whether character `c` is a YAML indicator in its position (first of the value or not).
fn is_indicator(c: u8, first: bool, followed_by_ws: bool, preceded_by_ws: bool) -> bool {
    if first {
        match c {
            b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\''
            | b'"' | b'%' | b'@' | b'`' => true,
            b'?' | b':' | b'-' => followed_by_ws,
            _ => false,
        }
    } else {
        match c {
            b':' => followed_by_ws,
            b'#' => preceded_by_ws,
            _ => false,
        }
    }
}

/// Whether go-yaml would read `s`, unquoted, back as a string.
fn resolves_to_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    let Some(&first) = s.as_bytes().first() else {
        return false;
    };
    let hint = match first {
        b'+' | b'-' | b'0'..=b'9' => b'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        b'.' => b'.',
        b'<' => b'M',
        _ => return true,
    };
    if SPECIAL.contains(&s) {
        return false;
    }
    match hint {
        b'.' => crate::catalog::gonum::parse_float(s).is_none(),
        b'D' => {
            if is_timestamp(s) {
                return false;
            }
            let plain = s.replace('_', "");
            if crate::catalog::gonum::parse_int_base0(&plain) {
                return false;
            }
            if is_yaml_style_float(&plain) && crate::catalog::gonum::parse_float(&plain).is_some() {
                return false;
            }
            if let Some(rest) = plain.strip_prefix("0b") {
                return !crate::catalog::gonum::parse_int_radix(rest, 2);
            }
            if let Some(rest) = plain.strip_prefix("-0b") {
                return !crate::catalog::gonum::parse_int_radix(&format!("-{rest}"), 2);
            }
            true
        }
        _ => true,
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// go-yaml's sexagesimal check: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() {
        return false;
    }
    let c = b[0];
    if !(c == b'+' || c == b'-' || c.is_ascii_digit()) || !s.contains(':') {
        return false;
    }
    let mut i = usize::from(c == b'+' || c == b'-');
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 2 {
            i += 1;
        }
        let n = i - start;
        if n == 0 || (n == 2 && b[start] > b'5') {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml's timestamp check: `YYYY-M-D`, optionally followed by `T`/`t`/space and
/// `h:m:s[.frac]` and, after `T`/`t`, a zone (`Z` or `±hh:mm`); fields in range.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut i = 5;
    let num = |i: &mut usize, max_digits: usize| -> Option<u32> {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - start < max_digits {
            *i += 1;
        }
        (*i > start).then(|| s[start..*i].parse().unwrap_or(u32::MAX))
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    let Some(month) = num(&mut i, 2) else {
        return false;
    };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = num(&mut i, 2) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let sep = b[i];
    if !matches!(sep, b'T' | b't' | b' ') {
        return false;
    }
    i += 1;
    let mut fields = [0u32; 3];
    for (k, f) in fields.iter_mut().enumerate() {
        if k > 0 {
            if b.get(i) != Some(&b':') {
                return false;
            }
            i += 1;
        }
        match num(&mut i, 2) {
            Some(v) => *f = v,
            None => return false,
        }
    }
    if fields[0] > 23 || fields[1] > 59 || fields[2] > 59 {
        return false;
    }
    if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if sep == b' ' {
        return i == b.len();
    }
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let z = &b[i + 1..];
            z.len() == 5
                && z[2] == b':'
                && z[..2].iter().all(u8::is_ascii_digit)
                && z[3..].iter().all(u8::is_ascii_digit)
                && (z[0] - b'0') * 10 + (z[1] - b'0') <= 24
                && (z[3] - b'0') * 10 + (z[4] - b'0') <= 60
        }
        _ => false,
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// How go-yaml prints a number it parsed from Go's JSON text for `n`.
fn number_text(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    // Go's JSON writes integral floats below 1e21 without a fraction: go-yaml reads an int.
    if f.fract() == 0.0
        && f.abs() < 1e21
        && let Some(i) = crate::catalog::gonum::integral_text(f)
    {
        return i;
    }
    crate::catalog::gonum::format_g(f)
}

fn is_go_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

fn digit_value(c: char) -> i64 {
    c.to_digit(10).map_or(0, i64::from)
}

/// go-yaml's map key order for string keys (module docs).
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let less = |x: bool| if x { Ordering::Less } else { Ordering::Greater };
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return less(bl);
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && is_go_digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && is_go_digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(digit_value(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && is_go_digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(digit_value(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(v: &Value) -> String {
        let mut out = Vec::new();
        write_document(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn structure_and_quoting() {
        let v = json!({
            "schema": "olm.bundle",
            "image": "",
            "properties": [{"type": "olm.package", "value": {"packageName": "x", "version": "1.0"}}],
            "relatedImages": [],
            "m": {},
            "t": "2021-07-21T10:00:00Z",
            "colon": "a: b",
            "lead": " x",
            "multi": "a\nb\n",
            "tab": "a\tb",
            "n": 1.5,
            "i": 3,
        });
        assert_eq!(
            yaml(&v),
            "colon: 'a: b'\ni: 3\nimage: \"\"\nlead: ' x'\nm: {}\nmulti: |\n  a\n  b\n\"n\": 1.5\n\
             properties:\n- type: olm.package\n  value:\n    packageName: x\n    version: \"1.0\"\n\
             relatedImages: []\nschema: olm.bundle\nt: \"2021-07-21T10:00:00Z\"\ntab: \"a\\tb\"\n"
        );
    }

    #[test]
    fn folds_long_plain_strings_at_column_80() {
        let words = vec!["word"; 30].join(" ");
        let out = yaml(&json!({ "d": words }));
        let first = out.lines().next().unwrap();
        assert!(first.len() > 80 && first.len() < 90, "{out}");
        assert!(out.lines().nth(1).unwrap().starts_with("  word"), "{out}");
    }

    #[test]
    fn natural_key_order() {
        let mut keys = vec!["a10", "a9", "b", "A", "_x", "a", "a09"];
        keys.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(keys, vec!["_x", "A", "a", "a9", "a09", "a10", "b"]);
    }
}
