//! The string formats kube-apiserver enforces in custom resources, as its OpenAPI validator
//! reads them (format names compare without `-`, so `date-time` is `datetime`).
//!
//! Checked: `datetime` (a full date, `T`, then `hh:mm:ss`, an optional fraction and `Z` or
//! an offset), `date` (`YYYY-MM-DD`, a real day), `uuid`/`uuid3`/`uuid4`/`uuid5`, `ipv4`
//! (leading zeros tolerated, as the apiserver does), `ipv6` and `cidr`. Every other format
//! (`uri`, `email`, `hostname`, `byte`, `duration`, `mac`, …, and names the apiserver does
//! not know) passes here: a value this check lets through may still be refused, never the
//! other way round.

use std::net::Ipv6Addr;

/// Whether `text` is valid in `format` as far as this check knows (see the module docs).
pub fn valid(format: &str, text: &str) -> bool {
    match format.replace('-', "").as_str() {
        "datetime" => date_time(text),
        "date" => date(text),
        "uuid" => uuid(text, None),
        "uuid3" => uuid(text, Some('3')),
        "uuid4" => uuid(text, Some('4')),
        "uuid5" => uuid(text, Some('5')),
        "ipv4" => text.contains('.') && ip(text),
        "ipv6" => text.contains(':') && ip(text),
        "cidr" => cidr(text),
        _ => true,
    }
}

fn digits(text: &str, n: usize) -> Option<u32> {
    (text.len() == n && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD` with a day the month has.
fn date(text: &str) -> bool {
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(year), Some(month), Some(day)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// A date, `t` (either case), then `hh:mm:ss`, an optional fraction (any one character, then
/// digits), `z` or `±hh:mm`; what follows a second `t` is not read (as the apiserver's check
/// does not).
fn date_time(text: &str) -> bool {
    let lower = text.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(day), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if text.len() < 4 || !date(day) {
        return false;
    }
    let clock = match time.strip_suffix('z') {
        Some(clock) => clock,
        None => {
            let Some(at) = time
                .len()
                .checked_sub(6)
                .filter(|at| time.is_char_boundary(*at))
            else {
                return false;
            };
            let (clock, zone) = time.split_at(at);
            let zone = zone.as_bytes();
            let zone_ok = matches!(zone[0], b'+' | b'-')
                && zone[1..3].iter().all(u8::is_ascii_digit)
                && zone[3] == b':'
                && zone[4..6].iter().all(u8::is_ascii_digit);
            if !zone_ok {
                return false;
            }
            clock
        }
    };
    let (Some(hms), Some(fraction)) = (clock.get(..8), clock.get(8..)) else {
        return false;
    };
    let mut rest = fraction.chars();
    let fraction_ok = fraction.is_empty()
        || (rest.next().is_some()
            && !rest.as_str().is_empty()
            && rest.as_str().bytes().all(|b| b.is_ascii_digit()));
    let fields: Vec<&str> = hms.split(':').collect();
    let clock_ok = fields.len() == 3
        && fields.iter().all(|f| digits(f, 2).is_some())
        && fields[0] <= "23"
        && fields[1] <= "59"
        && fields[2] <= "59";
    fraction_ok && clock_ok
}

/// A UUID, hyphens optional, any case; `version` is the digit that starts its third group
/// (and then the fourth starts with 8, 9, a or b) for uuid3/4/5.
fn uuid(text: &str, version: Option<char>) -> bool {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    let groups = [8, 4, 4, 4, 12];
    let mut rest = text;
    for (i, size) in groups.iter().enumerate() {
        if i > 0 {
            rest = rest.strip_prefix('-').unwrap_or(rest);
        }
        let Some(group) = rest.get(..*size) else {
            return false;
        };
        if !group.chars().all(|c| c.is_ascii_hexdigit()) {
            return false;
        }
        rest = &rest[*size..];
    }
    if !rest.is_empty() || hex.len() != 32 {
        return false;
    }
    let lower = hex.to_lowercase();
    match version {
        None => true,
        Some('3') => lower.as_bytes()[12] == b'3',
        Some(v) => {
            lower.as_bytes()[12] == v as u8
                && matches!(lower.as_bytes()[16], b'8' | b'9' | b'a' | b'b')
        }
    }
}

/// An IPv4 address with up to three digits per part (leading zeros allowed) or an IPv6
/// address (an IPv4 tail included).
fn ip(text: &str) -> bool {
    ipv4(text) || text.parse::<Ipv6Addr>().is_ok()
}

fn ipv4(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// `ADDRESS/PREFIX` with a prefix the address family allows.
fn cidr(text: &str) -> bool {
    let Some((address, prefix)) = text.split_once('/') else {
        return false;
    };
    let bits = if ipv4(address) {
        32
    } else if address.parse::<Ipv6Addr>().is_ok() {
        128
    } else {
        return false;
    };
    !prefix.is_empty()
        && prefix.len() <= 3
        && prefix.bytes().all(|b| b.is_ascii_digit())
        && prefix.parse::<u32>().is_ok_and(|p| p <= bits)
}

#[cfg(test)]
mod tests {
    use super::valid;

    #[test]
    fn formats_as_the_apiserver_reads_them() {
        let cases = [
            ("date-time", "2024-02-29T23:59:59Z", true),
            ("date-time", "2024-02-29T23:59:59.123+02:00", true),
            ("datetime", "2024-02-29t10:00:00z", true),
            ("date-time", "2023-02-29T10:00:00Z", false),
            ("date-time", "2024-01-01 10:00:00Z", false),
            ("date-time", "2024-01-01T24:00:00Z", false),
            ("date-time", "2024-01-01T10:00:00", false),
            ("date-time", "2024-01-01T10:00:00-5z", true),
            ("date-time", "2024-01-01T10:00:00+aé00", false),
            ("date-time", "2024-01-01T10:00:00é5Z", true),
            ("date-time", "2024-01-01T10:00:00.Z", false),
            ("date", "2024-12-31", true),
            ("date", "2024-13-01", false),
            ("date", "24-01-01", false),
            ("uuid", "123E4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567e89b12d3a456426614174000", true),
            ("uuid", "123e4567-e89b-12d3-a456-42661417400", false),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-42d3-c456-426614174000", false),
            ("uuid3", "123e4567-e89b-32d3-c456-426614174000", true),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "010.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv4", "::1", false),
            ("ipv6", "fe80::1", true),
            ("ipv6", "10.0.0.1", false),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "fd00::/64", true),
            ("cidr", "10.0.0.0/33", false),
            ("cidr", "10.0.0.0", false),
            ("uri", "not a uri", true),
            ("int32", "x", true),
        ];
        let wrong: Vec<_> = cases
            .iter()
            .filter(|(format, text, want)| valid(format, text) != *want)
            .collect();
        assert!(wrong.is_empty(), "{wrong:?}");
    }
}
