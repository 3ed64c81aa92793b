//! Image pull specs, checked with the grammar opm uses (`reference.ParseNormalizedNamed` from
//! the container distribution library): `[domain[:port]/]path[:tag][@algorithm:hex]`.

/// Why a pull spec is not valid (`Ok` for an empty string: opm allows empty images).
pub fn check(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Ok(());
    }
    let (name_tag, digest) = match spec.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (spec, None),
    };
    if let Some(d) = digest {
        check_digest(d)?;
    }
    // The tag is after the last ':' that follows the last '/'.
    let slash = name_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_tag[slash..].rfind(':') {
        Some(i) => (&name_tag[..slash + i], Some(&name_tag[slash + i + 1..])),
        None => (name_tag, None),
    };
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && tag
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && tag
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !ok {
            return Err("invalid reference format".to_owned());
        }
    }
    if name.is_empty() {
        return Err("invalid reference format".to_owned());
    }
    if name.len() > 255 {
        return Err("repository name must not be more than 255 characters".to_owned());
    }
    let (domain, path) = match name.split_once('/') {
        Some((first, rest))
            if first.contains('.')
                || first.contains(':')
                || first == "localhost"
                || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            (Some(first), rest)
        }
        _ => (None, name),
    };
    if let Some(domain) = domain {
        check_domain(domain)?;
    }
    if path.chars().any(|c| c.is_ascii_uppercase()) {
        return Err("invalid reference format: repository name must be lowercase".to_owned());
    }
    if domain.is_none()
        && !path.contains('/')
        && path.len() == 64
        && path.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
    {
        return Err(format!(
            "invalid repository name ({path}), cannot specify 64-byte hexadecimal strings"
        ));
    }
    for component in path.split('/') {
        if !path_component_ok(component) {
            return Err("invalid reference format".to_owned());
        }
    }
    Ok(())
}

fn path_component_ok(c: &str) -> bool {
    let b = c.as_bytes();
    if b.is_empty() || !is_lower_alnum(b[0]) || !is_lower_alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if is_lower_alnum(b[i]) {
            i += 1;
            continue;
        }
        // A separator: '.', '_', '__', or a run of '-'.
        let start = i;
        if b[i] == b'-' {
            while i < b.len() && b[i] == b'-' {
                i += 1;
            }
        } else if b[i] == b'_' && b.get(i + 1) == Some(&b'_') {
            i += 2;
        } else if b[i] == b'.' || b[i] == b'_' {
            i += 1;
        } else {
            return false;
        }
        if i == start || i >= b.len() || !is_lower_alnum(b[i]) {
            return false;
        }
    }
    true
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn check_domain(domain: &str) -> Result<(), String> {
    let (host, port) = if let Some(rest) = domain.strip_prefix('[') {
        match rest.split_once(']') {
            Some((ip6, after))
                if !ip6.is_empty() && ip6.chars().all(|c| c.is_ascii_hexdigit() || c == ':') =>
            {
                (None, after.strip_prefix(':'))
            }
            _ => return Err("invalid reference format".to_owned()),
        }
    } else {
        match domain.rsplit_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(domain), None),
        }
    };
    if let Some(port) = port
        && (port.is_empty() || !port.chars().all(|c| c.is_ascii_digit()))
    {
        return Err("invalid reference format".to_owned());
    }
    if let Some(host) = host {
        let ok = !host.is_empty()
            && host.split('.').all(|label| {
                let b = label.as_bytes();
                !b.is_empty()
                    && b[0].is_ascii_alphanumeric()
                    && b[b.len() - 1].is_ascii_alphanumeric()
                    && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
            });
        if !ok {
            return Err("invalid reference format".to_owned());
        }
    }
    Ok(())
}

fn check_digest(d: &str) -> Result<(), String> {
    let Some((alg, hex)) = d.split_once(':') else {
        return Err("invalid reference format".to_owned());
    };
    let alg_ok = alg.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && alg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-' | '_'));
    if !alg_ok || hex.len() < 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err("invalid reference format".to_owned());
    }
    let expected = match alg {
        "sha256" => Some(64),
        "sha384" => Some(96),
        "sha512" => Some(128),
        _ => None,
    };
    match expected {
        Some(n) if hex.len() != n => Err("invalid checksum digest length".to_owned()),
        Some(_) if hex.chars().any(|c| c.is_ascii_uppercase()) => {
            Err("invalid checksum digest format".to_owned())
        }
        Some(_) => Ok(()),
        None => Err("unsupported digest algorithm".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn pull_specs() {
        for ok in [
            "",
            "nginx",
            "quay.io/org/op-bundle:v1.0.0",
            "localhost:5000/a/b@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "registry.example.com:443/a__b/c-d.e:latest",
            "127.0.0.1:5000/x:1",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        for bad in [
            "Quay.io/Org/X",
            "quay.io/org/X:1",
            "quay.io/org/x:",
            "quay.io/org/x@sha256:abc",
            "quay.io//x",
            "-x",
            "quay.io/org/x:bad tag",
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }
}
