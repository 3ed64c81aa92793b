//! Where a registry's credentials may go. A registry that wants a bearer token names its token
//! service in `WWW-Authenticate: Bearer realm="…"`, and the client sends the user's credentials
//! there. olmpack sends them only over HTTPS or to a loopback address, as it does to registries:
//! a realm on plain HTTP to another host is refused before anything is sent (an HTTPS registry
//! must not turn a password into clear text on the network). A realm on plain HTTP on the
//! registry's own host is accepted only when the registry itself is reached over plain HTTP
//! (loopback or `--insecure-http`). A realm on another host over HTTPS is followed, as Docker's
//! clients do; redirects never carry the credentials to another host (the HTTP client drops
//! them).

use std::time::Duration;

use super::reference::is_loopback;

/// Why credentials are not sent to a realm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The realm as the registry named it.
    pub realm: String,
    /// What is wrong with it, in our words, naming its host.
    pub why: String,
}

/// The `realm` of a `WWW-Authenticate` header value when it is a Bearer challenge.
pub fn bearer_realm(header: &str) -> Option<String> {
    let (scheme, params) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    params.split(',').find_map(|param| {
        let (name, value) = param.trim().split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("realm")
            .then(|| value.trim().trim_matches('"').to_owned())
    })
}

/// A Bearer challenge: where the token service is and which service to ask it for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    /// The token service's URL.
    pub realm: String,
    /// The `service` parameter, when the registry names one.
    pub service: Option<String>,
}

/// The Bearer challenge of a `WWW-Authenticate` header value.
pub fn challenge(header: &str) -> Option<Challenge> {
    let realm = bearer_realm(header)?;
    let (_, params) = header.trim().split_once(' ')?;
    let service = params.split(',').find_map(|param| {
        let (name, value) = param.trim().split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("service")
            .then(|| value.trim().trim_matches('"').to_owned())
    });
    Some(Challenge { realm, service })
}

/// Whether the credentials for the registry at `registry_url` (`https://host[:port]`, or
/// `http://…` when it is reached over plain HTTP) may be sent to `realm`.
pub fn check_realm(registry_url: &str, realm: &str) -> Result<(), Refusal> {
    let refuse = |why: String| {
        Err(Refusal {
            realm: realm.to_owned(),
            why,
        })
    };
    let Ok(url) = reqwest::Url::parse(realm) else {
        return refuse("it is not an absolute http or https URL".to_owned());
    };
    let host = url.host_str().unwrap_or_default();
    let host_port = url
        .port()
        .map_or(host.to_owned(), |p| format!("{host}:{p}"));
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(host) => Ok(()),
        "http" if registry_url.starts_with("http://") && same_host(registry_url, host) => Ok(()),
        "http" => refuse(format!(
            "it is plain HTTP to {host_port}, which is not a loopback address; credentials go only over HTTPS or to loopback"
        )),
        other => refuse(format!(
            "its scheme {other:?} is neither https nor http (host {host_port:?})"
        )),
    }
}

/// True when `registry_url`'s host (without its port) is `host`.
fn same_host(registry_url: &str, host: &str) -> bool {
    reqwest::Url::parse(registry_url)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.eq_ignore_ascii_case(host)))
        .unwrap_or(false)
}

/// Asks the registry at `registry_url` (without credentials, as every client's first request
/// does) which token service it uses, and checks it. A registry that cannot be asked is left
/// to the request that follows, which reports it.
pub async fn probe(registry_url: &str, timeout: Duration) -> Result<(), Refusal> {
    let Ok(client) = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(timeout)
        .timeout(timeout)
        .build()
    else {
        return Ok(());
    };
    let Ok(response) = client.get(format!("{registry_url}/v2/")).send().await else {
        return Ok(());
    };
    let realm = response
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(bearer_realm);
    match realm {
        Some(realm) => check_realm(registry_url, &realm),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn realms_get_credentials_only_over_https_or_loopback() {
        let https = "https://quay.io";
        let cases: &[(&str, &str, Option<&str>)] = &[
            (https, "https://auth.quay.io/token", None),
            (https, "https://other.example/token", None),
            (https, "http://127.0.0.1:5001/token", None),
            (https, "http://localhost/token", None),
            (
                https,
                "http://quay.io/token",
                Some(
                    "it is plain HTTP to quay.io, which is not a loopback address; credentials go only over HTTPS or to loopback",
                ),
            ),
            (
                https,
                "http://token.example:8080/t",
                Some(
                    "it is plain HTTP to token.example:8080, which is not a loopback address; credentials go only over HTTPS or to loopback",
                ),
            ),
            ("http://reg.lan:5000", "http://reg.lan:5001/token", None),
            (
                "http://reg.lan:5000",
                "http://other.lan/token",
                Some(
                    "it is plain HTTP to other.lan, which is not a loopback address; credentials go only over HTTPS or to loopback",
                ),
            ),
            (
                https,
                "/token",
                Some("it is not an absolute http or https URL"),
            ),
            (
                https,
                "ftp://quay.io/t",
                Some("its scheme \"ftp\" is neither https nor http (host \"quay.io\")"),
            ),
        ];
        for (registry, realm, refused) in cases {
            let got = check_realm(registry, realm).err().map(|r| r.why);
            assert_eq!(got.as_deref(), *refused, "{registry} → {realm}");
        }
    }

    #[test]
    fn the_realm_is_read_from_a_bearer_challenge_only() {
        assert_eq!(
            bearer_realm(r#"Bearer realm="http://a/token",service="r",scope="x""#).as_deref(),
            Some("http://a/token")
        );
        assert_eq!(
            bearer_realm(r#"bearer service="r", realm="https://b/t""#).as_deref(),
            Some("https://b/t")
        );
        assert_eq!(bearer_realm(r#"Basic realm="registry""#), None);
    }
}
