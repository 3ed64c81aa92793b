//! JSON bytes exactly as opm's Go code writes a manifest into `olm.bundle.object`: compact,
//! keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped, and numbers as a YAML→JSON→
//! unstructured round trip leaves them (integral floats print as integers).
//!
//! The bytes matter: `olm.bundle.object` stores them base64-encoded and opm sorts properties
//! by their encoded value, so any difference would change both the data and the order.

use serde_json::Value;

/// Encodes `value` the Go way (module docs).
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, value);
    out
}

fn write(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(out, k);
                out.push(b':');
                write(out, v);
            }
            out.push(b'}');
        }
    }
}

fn write_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    if n.is_i64() || n.is_u64() {
        out.extend_from_slice(n.to_string().as_bytes());
        return;
    }
    let f = n.as_f64().unwrap_or(0.0);
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

fn write_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
            }
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes())
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_encoding() {
        let v = json!({"b": 1.0, "a": "<x & y>", "c": [0.25, 1e-7, 1e21, -3]});
        assert_eq!(
            String::from_utf8(to_vec(&v)).unwrap(),
            r#"{"a":"\u003cx \u0026 y\u003e","b":1,"c":[0.25,1e-7,1e+21,-3]}"#
        );
    }
}
