//! Go's number syntax and formatting where opm's output depends on it: `strconv.ParseInt`
//! with base 0, `strconv.ParseFloat`, and `strconv.FormatFloat(f, 'g', -1, 64)`.
#![warn(missing_docs)]

/// Go's `strconv.ParseFloat(s, 64)` for decimal syntax: `None` on a syntax error or overflow.
pub fn parse_float(s: &str) -> Option<f64> {
    let lower = s.trim_start_matches(['+', '-']).to_ascii_lowercase();
    if lower.starts_with("inf") || lower.starts_with("nan") || lower.starts_with("0x") {
        // Not reachable from the YAML resolver's callers (they pass decimal text).
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Whether Go's `strconv.ParseInt(s, 0, 64)` or `strconv.ParseUint(s, 0, 64)` accepts `s`
/// (no underscores: the caller removed them).
pub fn parse_int_base0(s: &str) -> bool {
    let (sign, body) = match s.as_bytes().first() {
        Some(b'+') => (1, &s[1..]),
        Some(b'-') => (-1, &s[1..]),
        _ => (0, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    magnitude_fits(sign, digits, radix)
}

/// Whether `ParseInt(s, radix, 64)` or `ParseUint(s, radix, 64)` accepts `s`.
pub fn parse_int_radix(s: &str, radix: u32) -> bool {
    let (sign, body) = match s.as_bytes().first() {
        Some(b'+') => (1, &s[1..]),
        Some(b'-') => (-1, &s[1..]),
        _ => (0, s),
    };
    magnitude_fits(sign, body, radix)
}

fn magnitude_fits(sign: i32, digits: &str, radix: u32) -> bool {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return false;
    }
    let Ok(m) = u64::from_str_radix(digits, radix) else {
        return false;
    };
    match sign {
        -1 => m <= 1 << 63,
        1 => m < 1 << 63,
        _ => true,
    }
}

/// The integer text go-yaml prints for an integral float Go's JSON wrote without fraction,
/// when it fits Go's int64 / uint64 (else go-yaml reads it as a float).
pub fn integral_text(f: f64) -> Option<String> {
    if f >= 0.0 && f <= u64::MAX as f64 && f < 18446744073709551616.0 {
        Some(format!("{}", f as u64))
    } else if (-9223372036854775808.0..0.0).contains(&f) {
        Some(format!("{}", f as i64))
    } else {
        None
    }
}

/// Shortest decimal digits of `f` and the decimal point position (`0.d1d2… × 10^dp`).
fn shortest_digits(f: f64) -> (String, i32) {
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (digits, exp + 1)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`.
pub fn format_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let neg = f.is_sign_negative();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return out;
    }
    let (digits, dp) = shortest_digits(f);
    let nd = digits.len() as i32;
    let exp = dp - 1;
    // Shortest formatting decides between %e and %f with precision 6.
    if !(-4..6).contains(&exp) {
        // %e with all shortest digits.
        out.push_str(&digits[..1]);
        if nd > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push('0');
        }
        out.push_str(&a.to_string());
        return out;
    }
    // %f with exactly the shortest digits.
    if dp <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-dp) as usize));
        out.push_str(&digits);
    } else if dp >= nd {
        out.push_str(&digits);
        out.push_str(&"0".repeat((dp - nd) as usize));
    } else {
        out.push_str(&digits[..dp as usize]);
        out.push('.');
        out.push_str(&digits[dp as usize..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_formats() {
        for (f, want) in [
            (1.5, "1.5"),
            (1234567.5, "1.2345675e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e21, "1e+21"),
            (123456.0, "123456"),
            (-2.5e-7, "-2.5e-07"),
        ] {
            assert_eq!(format_g(f), want, "{f}");
        }
        assert!(parse_int_base0("0x1F") && parse_int_base0("-9223372036854775808"));
        assert!(!parse_int_base0("08") && !parse_int_base0("+18446744073709551615"));
        assert!(parse_int_base0("18446744073709551615"));
        assert_eq!(parse_float("1e400"), None);
        assert_eq!(parse_float(".5"), Some(0.5));
    }
}
