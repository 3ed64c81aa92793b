//! Kubernetes name rules (DNS-1123), with the messages Kubernetes and opm give.

/// DNS-1123 label: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
pub fn dns1123_label_problem(name: &str) -> Option<String> {
    let b = name.as_bytes();
    if b.len() > 63 {
        return Some("[must be no more than 63 characters]".to_owned());
    }
    let ok = !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-';
    (!ok).then(|| {
        "[a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
         and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
         regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]"
            .to_owned()
    })
}

/// DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
pub fn is_dns1123_label(s: &str) -> bool {
    dns1123_label_problem(s).is_none()
}

/// DNS-1123 subdomain: dot-separated labels, at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(is_dns1123_label("a-b1"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label("A"));
        assert!(!is_dns1123_label(""));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1123_subdomain("webapps.apps.olmpack.dev"));
        assert!(!is_dns1123_subdomain("a..b"));
    }
}
