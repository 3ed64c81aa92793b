//! Finding where each top-level JSON value of a catalog stream ends, without parsing it, so a
//! large catalog file is read one document at a time ([`super::load`]).
//!
//! Contract:
//! - [`Splitter::scan`] looks only at brackets, strings and escapes: it finds the end of a
//!   top-level object or array that begins after optional whitespace. It never judges the
//!   document; the JSON parser does, on exactly the bytes found.
//! - Whatever the scanner does not expect — a top-level string, number or literal, a closing
//!   bracket at the top — is [`Scan::Unsure`]: the caller reads the file whole instead, so
//!   the problems reported (and their line and column) are the whole-file parser's.
//! - The scan resumes where it stopped when more bytes arrive: each byte is looked at once.
#![warn(missing_docs)]

/// What a scan found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scan {
    /// The document ends just before this offset (from the start of the bytes scanned).
    Complete(usize),
    /// The bytes end before the document does (or hold only whitespace).
    NeedMore,
    /// Not a stream of objects and arrays: read the file whole.
    Unsure,
}

/// The scanner's state within one document.
#[derive(Clone, Debug, Default)]
pub struct Splitter {
    /// Offset of the next byte to look at.
    pos: usize,
    depth: usize,
    in_string: bool,
}

impl Splitter {
    /// Scans `bytes` (the document's bytes so far, from its start) from where the last scan
    /// stopped. After [`Scan::Complete`] start a new splitter for the next document.
    pub fn scan(&mut self, bytes: &[u8]) -> Scan {
        while self.pos < bytes.len() {
            if self.in_string {
                match memchr::memchr2(b'"', b'\\', &bytes[self.pos..]) {
                    None => self.pos = bytes.len(),
                    Some(i) if bytes[self.pos + i] == b'"' => {
                        self.in_string = false;
                        self.pos += i + 1;
                    }
                    Some(i) if self.pos + i + 1 < bytes.len() => self.pos += i + 2,
                    // A backslash as the last byte: look at it again with its escaped byte.
                    Some(i) => {
                        self.pos += i;
                        return Scan::NeedMore;
                    }
                }
                continue;
            }
            let b = bytes[self.pos];
            self.pos += 1;
            match b {
                b'"' if self.depth > 0 => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' if self.depth > 0 => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        return Scan::Complete(self.pos);
                    }
                }
                b' ' | b'\t' | b'\n' | b'\r' => {}
                _ if self.depth > 0 => {}
                _ => return Scan::Unsure,
            }
        }
        Scan::NeedMore
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every document end of `text`, scanning it in pieces of `piece` bytes as a reader
    /// would hand them over; `None` when the scanner is unsure.
    fn ends(text: &str, piece: usize) -> Option<Vec<usize>> {
        let bytes = text.as_bytes();
        let (mut out, mut start, mut have) = (Vec::new(), 0, 0);
        let mut s = Splitter::default();
        loop {
            match s.scan(&bytes[start..have]) {
                Scan::Complete(end) => {
                    start += end;
                    out.push(start);
                    s = Splitter::default();
                }
                Scan::Unsure => return None,
                Scan::NeedMore if have == bytes.len() => return Some(out),
                Scan::NeedMore => have = (have + piece).min(bytes.len()),
            }
        }
    }

    #[test]
    fn document_ends_whatever_the_pieces() {
        let text = r#" {"a":"}{\"\\","b":[1,{"c":"]"}]}
[1,2]{"x":"\u007d"}  "#;
        for piece in [1, 2, 3, 7, 1000] {
            assert_eq!(
                ends(text, piece),
                Some(vec![33, 39, 53]),
                "pieces of {piece}"
            );
        }
    }

    #[test]
    fn unsure_at_the_top_level() {
        for text in [
            r#"{"a":1} 5"#,
            r#"{"a":1} "s""#,
            "} {",
            r#"{"a":1}]"#,
            "true",
        ] {
            assert_eq!(ends(text, 3), None, "{text}");
        }
    }

    #[test]
    fn unfinished_documents_need_more() {
        assert_eq!(ends(r#"{"a":1} {"b":"#, 4), Some(vec![7]));
        assert_eq!(ends("  \n ", 1), Some(vec![]));
        let mut s = Splitter::default();
        assert_eq!(s.scan(br#"{"a":"x\"#), Scan::NeedMore);
        assert_eq!(s.scan(br#"{"a":"x\""}"#), Scan::Complete(11));
    }
}
