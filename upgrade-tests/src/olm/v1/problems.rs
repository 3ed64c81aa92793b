//! OLM v1's words as the set of problems they list, not the order they list them in.
//!
//! operator-controller joins several problems into one condition message, one per line, in
//! an order that changes from one reconcile to the next (it walks Go maps: the CRD upgrade
//! safety preflight's versions and properties, the objects of a failed apply). Seen live:
//! one refusal read in six different orders six times, 2 s apart. The shapes it writes:
//! - `error for resolved bundle "B" with version "V": ` before every error about a resolved
//!   bundle, once, on the first line;
//! - `validating upgrade for CRD "C": PROBLEM` then one problem per line; a further CRD's
//!   problems start with their own `validating upgrade for CRD "D": `;
//! - `N errors occurred:` then one `\t* PROBLEM` line each (and a blank line at the end).
//!
//! [`canonical`] parses a message into (context, problem) pairs, a context being the heads
//! that apply to the problem (each a leading `…": ` segment of a line, or a line ending in
//! `:` that opens a list), and writes them back sorted, each head once: the same words for
//! every order operator-controller may print, in the shape it prints them.

use std::collections::BTreeSet;

/// The head operator-controller puts once before every error of a resolved bundle.
const BUNDLE_HEAD: &str = "error for resolved bundle ";

/// One problem and the heads that apply to it, outermost first.
type Record = (Vec<String>, String);

/// `message` with its problems in sorted order (module docs); a message of one line is
/// returned as it is, less trailing whitespace.
pub fn canonical(message: &str) -> String {
    let records = records(message);
    let mut out = String::new();
    let mut previous: &[String] = &[];
    for (i, (context, problem)) in records.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let shared = previous
            .iter()
            .zip(context)
            .take_while(|(a, b)| a == b)
            .count();
        for head in &context[shared..] {
            out.push_str(head);
        }
        out.push_str(problem);
        previous = context;
    }
    out
}

/// The (context, problem) pairs of `message`, sorted, each once. A line that opens a list no
/// item follows is a problem of its own.
fn records(message: &str) -> BTreeSet<Record> {
    let mut outer: Vec<String> = Vec::new();
    let mut list: Option<String> = None;
    let mut unused_list: Option<Record> = None;
    let mut inline: Vec<String> = Vec::new();
    let mut found = BTreeSet::new();
    let lines = message
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty());
    for (n, line) in lines.enumerate() {
        let (mut heads, rest) = heads(line);
        if n == 0 && heads.first().is_some_and(|h| h.starts_with(BUNDLE_HEAD)) {
            outer.push(heads.remove(0));
        }
        if rest.is_empty() || rest.ends_with(':') {
            // A line that opens a list: its items follow, one a line.
            found.extend(unused_list.take());
            let opened = format!("{}{rest}", heads.concat());
            unused_list = Some((outer.clone(), opened.clone()));
            list = Some(format!("{opened}\n"));
            inline.clear();
            continue;
        }
        unused_list = None;
        if !heads.is_empty() {
            inline = heads;
        }
        let mut context = outer.clone();
        context.extend(list.clone());
        context.extend(inline.iter().cloned());
        found.insert((context, rest.to_owned()));
    }
    found.extend(unused_list);
    found
}

/// The leading `…": ` segments of `line` (a quoted name and what it is about), and the rest.
fn heads(line: &str) -> (Vec<String>, &str) {
    let mut heads = Vec::new();
    let mut rest = line;
    while let Some(end) = rest.find("\": ") {
        let (head, after) = rest.split_at(end + 3);
        heads.push(head.to_owned());
        rest = after;
    }
    (heads, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seen live (olmpack's guestbook test): OLM v1's preflight refusing two lowered
    /// maximums of one CRD, in both orders it printed them.
    const PREFLIGHT: [&str; 2] = [
        "error for resolved bundle \"guestbook-operator.v1.1.1\" with version \"1.1.1\": validating upgrade for CRD \"guestbooks.demo.olmpack.dev\": v1alpha1: ^.spec.size: maximum: maximum decreased : 10 -> 5\nv1: ^.spec.replicas: maximum: maximum decreased : 10 -> 5",
        "error for resolved bundle \"guestbook-operator.v1.1.1\" with version \"1.1.1\": validating upgrade for CRD \"guestbooks.demo.olmpack.dev\": v1: ^.spec.replicas: maximum: maximum decreased : 10 -> 5\nv1alpha1: ^.spec.size: maximum: maximum decreased : 10 -> 5",
    ];

    /// Seen live (cert-manager v1.4.0 under load): a failed apply's go-multierror list.
    const ALREADY_EXISTS: [&str; 2] = [
        "error for resolved bundle \"cert-manager.v1.4.0\" with version \"1.4.0\": 3 errors occurred:\n\t* serviceaccounts \"cert-manager-cainjector\" already exists\n\t* serviceaccounts \"cert-manager\" already exists\n\t* serviceaccounts \"cert-manager-webhook\" already exists\n\n",
        "error for resolved bundle \"cert-manager.v1.4.0\" with version \"1.4.0\": 3 errors occurred:\n\t* serviceaccounts \"cert-manager-webhook\" already exists\n\t* serviceaccounts \"cert-manager\" already exists\n\t* serviceaccounts \"cert-manager-cainjector\" already exists\n\n",
    ];

    /// Two CRDs refused by the preflight (the corpus' words: a removed field, a changed
    /// default), CRDs and their problems in either order.
    const TWO_CRDS: [&str; 3] = [
        "error for resolved bundle \"edp-keycloak-operator.v1.17.0\" with version \"1.17.0\": validating upgrade for CRD \"keycloakclients.v1.edp.epam.com\": existingFieldRemoval: removed field : v1.^.spec.serviceAccount\nv1: ^.spec.public: default: default value changed : false -> true\nvalidating upgrade for CRD \"keycloakrealms.v1.edp.epam.com\": existingFieldRemoval: removed field : v1.^.spec.users\nv1: ^.spec.id: type: type changed : \"string\" -> \"integer\"",
        "error for resolved bundle \"edp-keycloak-operator.v1.17.0\" with version \"1.17.0\": validating upgrade for CRD \"keycloakrealms.v1.edp.epam.com\": v1: ^.spec.id: type: type changed : \"string\" -> \"integer\"\nexistingFieldRemoval: removed field : v1.^.spec.users\nvalidating upgrade for CRD \"keycloakclients.v1.edp.epam.com\": v1: ^.spec.public: default: default value changed : false -> true\nexistingFieldRemoval: removed field : v1.^.spec.serviceAccount",
        "error for resolved bundle \"edp-keycloak-operator.v1.17.0\" with version \"1.17.0\": validating upgrade for CRD \"keycloakclients.v1.edp.epam.com\": v1: ^.spec.public: default: default value changed : false -> true\nexistingFieldRemoval: removed field : v1.^.spec.serviceAccount\nvalidating upgrade for CRD \"keycloakrealms.v1.edp.epam.com\": existingFieldRemoval: removed field : v1.^.spec.users\nv1: ^.spec.id: type: type changed : \"string\" -> \"integer\"",
    ];

    #[test]
    fn every_order_of_the_same_problems_reads_the_same() {
        let cases: [(&str, &[&str], &str); 3] = [
            (
                "one CRD, two versions",
                &PREFLIGHT,
                "error for resolved bundle \"guestbook-operator.v1.1.1\" with version \"1.1.1\": validating upgrade for CRD \"guestbooks.demo.olmpack.dev\": v1: ^.spec.replicas: maximum: maximum decreased : 10 -> 5\nv1alpha1: ^.spec.size: maximum: maximum decreased : 10 -> 5",
            ),
            (
                "a multierror list",
                &ALREADY_EXISTS,
                "error for resolved bundle \"cert-manager.v1.4.0\" with version \"1.4.0\": 3 errors occurred:\n\t* serviceaccounts \"cert-manager\" already exists\n\t* serviceaccounts \"cert-manager-cainjector\" already exists\n\t* serviceaccounts \"cert-manager-webhook\" already exists",
            ),
            (
                "two CRDs",
                &TWO_CRDS,
                "error for resolved bundle \"edp-keycloak-operator.v1.17.0\" with version \"1.17.0\": validating upgrade for CRD \"keycloakclients.v1.edp.epam.com\": existingFieldRemoval: removed field : v1.^.spec.serviceAccount\nv1: ^.spec.public: default: default value changed : false -> true\nvalidating upgrade for CRD \"keycloakrealms.v1.edp.epam.com\": existingFieldRemoval: removed field : v1.^.spec.users\nv1: ^.spec.id: type: type changed : \"string\" -> \"integer\"",
            ),
        ];
        for (case, orders, want) in cases {
            for order in orders {
                assert_eq!(canonical(order), want, "{case}: {order:?}");
            }
        }
    }

    #[test]
    fn different_problems_stay_different() {
        let cases = [
            (
                "another value",
                PREFLIGHT[0],
                PREFLIGHT[0].replace("10 -> 5", "10 -> 4"),
            ),
            (
                "one problem fewer",
                PREFLIGHT[0],
                PREFLIGHT[0]
                    .split_once('\n')
                    .map(|(first, _)| first.to_owned())
                    .unwrap(),
            ),
            (
                "the same problem under another CRD",
                TWO_CRDS[0],
                TWO_CRDS[0].replace(
                    "removed field : v1.^.spec.users",
                    "removed field : v1.^.spec.serviceAccount",
                ),
            ),
        ];
        for (case, a, b) in cases {
            assert_ne!(canonical(a), canonical(&b), "{case}");
        }
    }

    #[test]
    fn a_message_of_one_line_is_kept_as_it_is() {
        let cases = [
            "no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"",
            "error for resolved bundle \"cert-utils-operator.v1.0.7\" with version \"1.0.7\": unable to build manifest: resource mapping not found for name: \"x\" namespace: \"\" from \"\": no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"",
            "validating upgrade for CRD \"a\": existingFieldRemoval: removed field : v1.^.status.connectionSecrets",
            "",
            "a list no item follows:",
        ];
        for message in cases {
            assert_eq!(canonical(message), message);
        }
        assert_eq!(canonical("no bundles found \n\n"), "no bundles found");
    }
}
