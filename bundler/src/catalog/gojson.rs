//! JSON bytes exactly as opm's Go code writes a manifest into `olm.bundle.object`: compact,
//! keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped, and numbers as a YAML→JSON→
//! unstructured round trip leaves them (integral floats print as integers).
//!
//! The bytes matter: `olm.bundle.object` stores them base64-encoded and opm sorts properties
//! by their encoded value, so any difference would change both the data and the order.

use std::io::Write as _;

use serde_json::Value;

/// Encodes `value` the Go way (module docs).
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    append(&mut out, value);
    out
}

/// [`to_vec`] appending to `out`, so that a caller encoding many values reuses one buffer.
pub fn append(out: &mut Vec<u8>, value: &Value) {
    write(out, value, true);
}

/// [`to_vec`] without escaping `<`, `>` and `&` (Go's encoder with `SetEscapeHTML(false)`, as
/// opm builds its own property values).
pub fn to_vec_unescaped(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, value, false);
    out
}

fn write(out: &mut Vec<u8>, value: &Value, html: bool) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s, html),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, item, html);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(out, k, html);
                out.push(b':');
                write(out, v, html);
            }
            out.push(b'}');
        }
    }
}

fn write_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    if n.is_i64() || n.is_u64() {
        // serde_json prints integers as Go does; written in place, without a String.
        let _ = write!(out, "{n}");
        return;
    }
    write_float(out, n.as_f64().unwrap_or(0.0));
}

fn write_float(out: &mut Vec<u8>, f: f64) {
    let abs = f.abs();
    if f.fract() == 0.0 && abs < 1e21 {
        // An integral float survives YAML→JSON→unstructured as an int64.
        out.extend_from_slice(format!("{f:.0}").as_bytes());
    } else if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        let s = match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        };
        out.extend_from_slice(s.as_bytes());
    } else {
        out.extend_from_slice(format!("{f}").as_bytes());
    }
}

/// Whether Go's encoder may not copy `b` as it is: control characters, `"`, `\`, `<`, `>`,
/// `&`, and 0xE2, the first byte of U+2028 and U+2029 (and of other characters, copied as
/// they are). Plain comparisons, which the compiler vectorizes over a block.
fn might_escape(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\') | (b == b'<') | (b == b'>') | (b == b'&') | (b == 0xE2)
}

/// Go's escape for U+2028 or U+2029 (E2 80 A8 / E2 80 A9 in UTF-8) when one starts at `i`.
fn line_separator_escape(bytes: &[u8], i: usize) -> Option<&'static [u8]> {
    if bytes.get(i..i + 2) != Some(&[0xE2, 0x80][..]) {
        return None;
    }
    match bytes.get(i + 2) {
        Some(0xA8) => Some(b"\\u2028"),
        Some(0xA9) => Some(b"\\u2029"),
        _ => None,
    }
}

fn write_string(out: &mut Vec<u8>, s: &str, html: bool) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Runs of bytes Go prints as they are are copied whole; only the bytes below escape.
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Blocks without a byte that might escape are passed at once.
        while let Some(block) = bytes.get(i..i + 16)
            && !block.iter().fold(false, |any, &b| any | might_escape(b))
        {
            i += 16;
        }
        let Some(&b) = bytes.get(i) else {
            break;
        };
        if !might_escape(b)
            || (b == 0xE2 && line_separator_escape(bytes, i).is_none())
            || (!html && matches!(b, b'<' | b'>' | b'&'))
        {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            0xE2 => {
                out.extend_from_slice(line_separator_escape(bytes, i).unwrap_or_default());
                i += 2;
            }
            _ => out.extend_from_slice(format!("\\u{:04x}", b).as_bytes()),
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

thread_local! {
    /// Set while an [`HtmlEscaped`] value is being written: [`write_indented`] then escapes
    /// `<`, `>` and `&` as Go's default encoder does.
    static ESCAPE_HTML: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A value whose bytes Go holds HTML-escaped (see
/// [`super::declcfg::Property::html_escaped`]): [`write_indented`] writes its `<`, `>` and
/// `&` as `\u003c`, `\u003e` and `\u0026`. Other serializers see the plain value.
#[derive(Debug)]
pub struct HtmlEscaped<'a>(pub &'a Value);

impl serde::Serialize for HtmlEscaped<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// Restores the flag however serialization ends.
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                ESCAPE_HTML.with(|f| f.set(self.0));
            }
        }
        let _restore = Restore(ESCAPE_HTML.with(|f| f.replace(true)));
        self.0.serialize(serializer)
    }
}

/// Writes `value` as Go's `json.Encoder` with `SetIndent("", "    ")` and
/// `SetEscapeHTML(false)` does (what `opm render -o json` prints per blob), newline included.
/// Struct fields keep their declaration order; maps are sorted, as Go sorts map keys.
pub fn write_indented<T: serde::Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    let mut ser = serde_json::Serializer::with_formatter(&mut *out, GoFormatter::default());
    value.serialize(&mut ser)?;
    out.push(b'\n');
    Ok(())
}

/// serde_json's pretty printer with four spaces, plus Go's escaping of U+2028/U+2029 and its
/// float format.
struct GoFormatter {
    pretty: serde_json::ser::PrettyFormatter<'static>,
}

impl Default for GoFormatter {
    fn default() -> Self {
        Self {
            pretty: serde_json::ser::PrettyFormatter::with_indent(b"    "),
        }
    }
}

impl serde_json::ser::Formatter for GoFormatter {
    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, f: f64) -> std::io::Result<()> {
        let mut buf = Vec::new();
        write_float(&mut buf, f);
        w.write_all(&buf)
    }
    fn write_f32<W: ?Sized + std::io::Write>(&mut self, w: &mut W, f: f32) -> std::io::Result<()> {
        self.write_f64(w, f64::from(f))
    }
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        // U+2028 and U+2029 are E2 80 A8 and E2 80 A9 in UTF-8.
        let html = ESCAPE_HTML.with(std::cell::Cell::get);
        let bytes = fragment.as_bytes();
        let next = |rest: &[u8]| {
            if html {
                rest.iter()
                    .position(|&b| matches!(b, 0xE2 | b'<' | b'>' | b'&'))
            } else {
                memchr::memchr(0xE2, rest)
            }
        };
        let mut start = 0;
        let mut i = 0;
        while let Some(pos) = next(&bytes[i..]) {
            let at = i + pos;
            i = at + 1;
            let escape: Option<&[u8]> = match bytes[at] {
                b'<' => Some(b"\\u003c"),
                b'>' => Some(b"\\u003e"),
                b'&' => Some(b"\\u0026"),
                _ => line_separator_escape(bytes, at),
            };
            if let Some(escape) = escape {
                w.write_all(&bytes[start..at])?;
                w.write_all(escape)?;
                i = at + if bytes[at] == 0xE2 { 3 } else { 1 };
                start = i;
            }
        }
        w.write_all(&bytes[start..])
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.pretty.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.pretty.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.pretty.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_bytes_go_escapes_might_escape() {
        let escaped: Vec<u8> = (0..=255u8).filter(|&b| might_escape(b)).collect();
        let mut want: Vec<u8> = (0..0x20).collect();
        want.extend([b'"', b'&', b'<', b'>', b'\\', 0xE2]);
        assert_eq!(escaped, want);
    }

    #[test]
    fn escapes_after_long_plain_runs() {
        let long = "a".repeat(40);
        let v = json!(format!("{long}<{long}\u{2028}{long}\"{}", "b".repeat(17)));
        assert_eq!(
            String::from_utf8(to_vec(&v)).unwrap(),
            format!("\"{long}\\u003c{long}\\u2028{long}\\\"{}\"", "b".repeat(17))
        );
    }

    #[test]
    fn go_encoding() {
        let v = json!({"b": 1.0, "a": "<x & y>", "c": [0.25, 1e-7, 1e21, -3]});
        assert_eq!(
            String::from_utf8(to_vec(&v)).unwrap(),
            r#"{"a":"\u003cx \u0026 y\u003e","b":1,"c":[0.25,1e-7,1e+21,-3]}"#
        );
    }

    #[test]
    fn escapes_inside_long_runs() {
        let v = json!("abc\u{2028}d\"e\\f\u{1}g\u{2029}h\u{e9}\u{2027}<&>\n\t\u{8}\u{c}\r");
        assert_eq!(
            String::from_utf8(to_vec(&v)).unwrap(),
            "\"abc\\u2028d\\\"e\\\\f\\u0001g\\u2029h\u{e9}\u{2027}\\u003c\\u0026\\u003e\\n\\t\\b\\f\\r\""
        );
    }

    #[test]
    fn indented_like_go_encoder() {
        let v = json!({"b": [], "a": {"x": 1.0, "s": "<\u{2028}>"}, "c": {}});
        let mut out = Vec::new();
        write_indented(&mut out, &v).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n    \"a\": {\n        \"s\": \"<\\u2028>\",\n        \"x\": 1\n    },\n    \"b\": [],\n    \"c\": {}\n}\n"
        );
    }
}
