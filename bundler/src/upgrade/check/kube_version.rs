//! Kubernetes' version priority for API version names (`v1` > `v1beta2` > `v1alpha1` > `foo`).

use std::cmp::Ordering;

/// `(major, stability, minor)`: stability 2 = GA, 1 = beta, 0 = alpha.
fn parse(name: &str) -> Option<(u64, u8, u64)> {
    let rest = name.strip_prefix('v')?;
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let major = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((major, 2, 0));
    }
    let (stability, minor) = if let Some(m) = tail.strip_prefix("beta") {
        (1, m)
    } else {
        (0, tail.strip_prefix("alpha")?)
    };
    if minor.is_empty() || !minor.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((major, stability, minor.parse().ok()?))
}

/// Compares two version names by priority: `Greater` when `a` has the higher priority.
/// Kubernetes-style names beat others; GA beats beta beats alpha; then higher numbers win;
/// other names order alphabetically, the earlier one first (as the apiserver sorts them).
pub fn cmp_priority(a: &str, b: &str) -> Ordering {
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => (sa, ma, na).cmp(&(sb, mb, nb)),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_order() {
        let mut names = vec![
            "foo10",
            "v1",
            "v3beta1",
            "v11alpha2",
            "v10",
            "foo1",
            "v2",
            "v12alpha1",
            "v10beta3",
            "v11beta2",
        ];
        names.sort_by(|a, b| cmp_priority(b, a));
        assert_eq!(
            names,
            vec![
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v12alpha1",
                "v11alpha2",
                "foo1",
                "foo10"
            ]
        );
    }
}
