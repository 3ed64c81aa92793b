//! Reading from a registry with every response bounded: manifests, config blobs, layers,
//! token answers and error bodies.
//!
//! Contract:
//! - Each kind of response has a size cap ([`caps`]): a response that declares more, or sends
//!   more, is refused and not read further. An error body is read only up to
//!   [`caps::ERROR_BODY`] bytes, for its message.
//! - A blob is read only up to the size its descriptor declares; more is refused as soon as it
//!   arrives, fewer is a truncated answer (retried), and the digest is checked at the end.
//!   A manifest fetched by digest must hash to that digest; one fetched by tag is named by the
//!   digest of the bytes received, never by the registry's `Docker-Content-Digest` header.
//! - A small answer (manifest, config, token) that is not complete within the per-request
//!   timeout ([`super::registry::RegistryAccess::read_timeout`]) fails and is retried, so a
//!   registry sending a byte now and then cannot hold olmpack; every operation also ends at
//!   its overall deadline ([`super::registry::RegistryAccess::deadline`]).
//! - `Retry-After` on 429 and 503 is honoured (in seconds) when the pause ends before the
//!   deadline; otherwise the request fails at once, saying so.
//! - Tokens: the registry's challenge (`WWW-Authenticate`) names the token service; the
//!   service's answer is bounded like any other and must be JSON with `token` or
//!   `access_token`. Credentials go there only as [`super::realm`] allows.

use std::time::Duration;

use oci_client::secrets::RegistryAuth;
use sha2::{Digest as _, Sha256};

use super::digest::format_digest;
use super::registry::{Failure, RegistryClient, RegistryError};

/// How much of each kind of registry answer olmpack reads, in bytes.
pub mod caps {
    const MIB: u64 = 1024 * 1024;
    /// A manifest or index (containerd's limit).
    pub const MANIFEST: u64 = 4 * MIB;
    /// An image config blob.
    pub const CONFIG: u64 = 8 * MIB;
    /// A token service's answer.
    pub const TOKEN: u64 = MIB;
    /// The part of an error answer read for its message.
    pub const ERROR_BODY: u64 = 4096;
}

/// A blob to read: its digest and the size its descriptor declares.
#[derive(Clone, Copy, Debug)]
pub struct Expected<'a> {
    /// `sha256:…`
    pub digest: &'a str,
    /// Bytes, as declared.
    pub size: u64,
}

impl RegistryClient {
    /// The manifest `reference` (a tag or a digest) of `repository`, with its digest (the
    /// hash of the bytes received, checked against a requested digest).
    pub async fn get_manifest(
        &self,
        repository: &str,
        reference: &str,
        accept: &[&str],
        what: String,
    ) -> Result<(Vec<u8>, String), RegistryError> {
        let url = format!("{}/v2/{repository}/manifests/{reference}", self.url);
        let accept = accept.join(", ");
        self.retrying(what.clone(), true, || async {
            let response = self.send(&url, repository, Some(&accept), &what).await?;
            let bytes = self.read_capped(response, caps::MANIFEST, &what).await?;
            let digest = format_digest(&Sha256::digest(&bytes));
            if reference.starts_with("sha256:") && digest != reference {
                return Err(Failure::permanent(RegistryError::Mismatch {
                    what: what.clone(),
                    registry: self.url.clone(),
                    problem: format!("the answer's digest is {digest}, not {reference}"),
                }));
            }
            Ok((bytes, digest))
        })
        .await
    }

    /// A small blob (a config) of `repository`, whole, its size and digest checked.
    pub async fn get_small_blob(
        &self,
        repository: &str,
        expected: Expected<'_>,
        what: String,
    ) -> Result<Vec<u8>, RegistryError> {
        if expected.size > caps::CONFIG {
            return Err(RegistryError::TooLarge {
                what,
                registry: self.url.clone(),
                limit: caps::CONFIG,
            });
        }
        let mut bytes = Vec::new();
        self.get_blob(repository, expected, what, |chunk| {
            bytes.extend_from_slice(chunk);
            Ok(())
        })
        .await?;
        Ok(bytes)
    }

    /// Streams a blob of `repository` into `sink`, never past its declared size, its digest
    /// checked at the end. A retry starts over: `sink` is called with an empty chunk first
    /// on every attempt so it can drop what an earlier attempt gave it.
    pub async fn get_blob(
        &self,
        repository: &str,
        expected: Expected<'_>,
        what: String,
        mut sink: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<(), RegistryError> {
        let url = format!("{}/v2/{repository}/blobs/{}", self.url, expected.digest);
        let sink = tokio::sync::Mutex::new(&mut sink);
        self.retrying(what.clone(), false, || async {
            let mut sink = sink.lock().await;
            (*sink)(&[]).map_err(|e| self.local(&what, &e))?;
            let response = self.send(&url, repository, None, &what).await?;
            self.stream_blob(response, expected, &what, &mut **sink)
                .await
        })
        .await
    }

    async fn stream_blob(
        &self,
        mut response: reqwest::Response,
        expected: Expected<'_>,
        what: &str,
        sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<(), Failure> {
        let lie = |problem: String| {
            Failure::permanent(RegistryError::Mismatch {
                what: what.to_owned(),
                registry: self.url.clone(),
                problem,
            })
        };
        if let Some(length) = response.content_length()
            && length > expected.size
        {
            return Err(lie(format!(
                "it announces {length} bytes, more than the {} bytes its descriptor declares",
                expected.size
            )));
        }
        let mut hasher = Sha256::new();
        let mut received = 0u64;
        while let Some(chunk) = response.chunk().await.map_err(|e| self.broken(what, &e))? {
            received += chunk.len() as u64;
            if received > expected.size {
                return Err(lie(format!(
                    "it sends more than the {} bytes its descriptor declares",
                    expected.size
                )));
            }
            hasher.update(&chunk);
            sink(&chunk).map_err(|e| self.local(what, &e))?;
        }
        if received < expected.size {
            return Err(Failure::transient(
                RegistryError::Failed {
                    what: what.to_owned(),
                    attempts: 0,
                    problem: format!(
                        "{} ended the answer after {received} of {} bytes",
                        self.url, expected.size
                    ),
                },
                None,
            ));
        }
        let digest = format_digest(&hasher.finalize());
        if digest != expected.digest {
            return Err(lie(format!("its content has the digest {digest}")));
        }
        Ok(())
    }

    /// Reads a whole answer of at most `cap` bytes.
    pub(crate) async fn read_capped(
        &self,
        mut response: reqwest::Response,
        cap: u64,
        what: &str,
    ) -> Result<Vec<u8>, Failure> {
        let too_large = || {
            Failure::permanent(RegistryError::TooLarge {
                what: what.to_owned(),
                registry: self.url.clone(),
                limit: cap,
            })
        };
        if response.content_length().is_some_and(|n| n > cap) {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.broken(what, &e))? {
            if bytes.len() as u64 + chunk.len() as u64 > cap {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    /// Sends a GET for `url` with the credentials of `repository`, fetching a token once when
    /// the registry asks for one; answers other than 2xx become failures.
    async fn send(
        &self,
        url: &str,
        repository: &str,
        accept: Option<&str>,
        what: &str,
    ) -> Result<reqwest::Response, Failure> {
        let mut asked_for_token = false;
        loop {
            let mut request = self.http.get(url);
            if let Some(accept) = accept {
                request = request.header(reqwest::header::ACCEPT, accept);
            }
            request = self.with_credentials(request);
            let response = request.send().await.map_err(|e| self.broken(what, &e))?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            if status.as_u16() == 401 && !asked_for_token {
                asked_for_token = true;
                if self.answer_challenge(&response, repository, what).await? {
                    continue;
                }
            }
            return Err(self.status_failure(response, what).await);
        }
    }

    /// The request with the registry credentials olmpack holds for this operation.
    fn with_credentials(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let token = self.token.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match (&token, &self.auth) {
            (Some(token), _) => request.bearer_auth(token.expose()),
            (None, RegistryAuth::Basic(user, password)) if self.basic_challenge() => {
                request.basic_auth(user, Some(password))
            }
            (None, RegistryAuth::Bearer(token)) => request.bearer_auth(token),
            _ => request,
        }
    }

    fn basic_challenge(&self) -> bool {
        *self.basic_asked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answers a 401 challenge: fetches a token (Bearer) or notes that Basic credentials are
    /// wanted. False when there is nothing to answer with.
    async fn answer_challenge(
        &self,
        response: &reqwest::Response,
        repository: &str,
        what: &str,
    ) -> Result<bool, Failure> {
        let header = response
            .headers()
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect::<Vec<_>>();
        if let Some(challenge) = header.iter().find_map(|h| super::realm::challenge(h)) {
            let token = self.fetch_token(&challenge, repository, what).await?;
            *self.token.lock().unwrap_or_else(|p| p.into_inner()) = Some(token);
            return Ok(true);
        }
        let basic = header.iter().any(|h| {
            h.trim_start()
                .get(..5)
                .is_some_and(|s| s.eq_ignore_ascii_case("basic"))
        });
        if basic && matches!(self.auth, RegistryAuth::Basic(..)) {
            *self.basic_asked.lock().unwrap_or_else(|p| p.into_inner()) = true;
            return Ok(true);
        }
        Ok(false)
    }

    /// Asks the token service of `challenge` for a pull token of `repository`.
    async fn fetch_token(
        &self,
        challenge: &super::realm::Challenge,
        repository: &str,
        what: &str,
    ) -> Result<super::auth::Secret, Failure> {
        let mut request = self
            .http
            .get(&challenge.realm)
            .query(&[("scope", format!("repository:{repository}:pull"))]);
        if let Some(service) = &challenge.service {
            request = request.query(&[("service", service)]);
        }
        if let RegistryAuth::Basic(user, password) = &self.auth {
            super::realm::check_realm(&self.url, &challenge.realm).map_err(|refusal| {
                Failure::permanent(RegistryError::CredentialsRefused {
                    registry: self.registry.clone(),
                    realm: refusal.realm,
                    why: refusal.why,
                })
            })?;
            request = request.basic_auth(user, Some(password));
        }
        let token_what = format!("{what}: getting a token from {}", challenge.realm);
        if !is_full_url(&challenge.realm) {
            return Err(Failure::permanent(RegistryError::Failed {
                what: token_what,
                attempts: 0,
                problem: format!(
                    "{} names the token service {:?}, which is not a full http(s) URL (WWW-Authenticate realm)",
                    self.url, challenge.realm
                ),
            }));
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.broken(&token_what, &e))?;
        if !response.status().is_success() {
            return Err(self.status_failure(response, &token_what).await);
        }
        let body = self.read_capped(response, caps::TOKEN, &token_what).await?;
        parse_token(&body).ok_or_else(|| {
            Failure::permanent(RegistryError::BadToken {
                what: what.to_owned(),
                realm: challenge.realm.clone(),
            })
        })
    }

    /// A failure for an answer other than 2xx, with the start of its body as detail.
    async fn status_failure(&self, response: reqwest::Response, what: &str) -> Failure {
        let status = response.status().as_u16();
        let retry_after = retry_after(&response);
        let url = response.url().to_string();
        let detail = error_detail(response).await;
        let error = if status == 401 || status == 403 {
            RegistryError::Denied {
                what: what.to_owned(),
                registry: self.registry.clone(),
                status,
                source: None,
            }
        } else {
            RegistryError::Status {
                what: what.to_owned(),
                url,
                status,
                detail,
            }
        };
        if status >= 500 || status == 408 || status == 429 {
            Failure::transient(error, retry_after)
        } else {
            Failure::permanent(error)
        }
    }
}

/// Whether `url` is an absolute `http://` or `https://` URL with a host.
fn is_full_url(url: &str) -> bool {
    reqwest::Url::parse(url)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

/// The `Retry-After` of a 429 or 503 answer, in seconds.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let status = response.status().as_u16();
    if status != 429 && status != 503 {
        return None;
    }
    let value = response.headers().get(reqwest::header::RETRY_AFTER)?;
    let seconds: u64 = value.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

/// The first message of an OCI error answer, read from at most [`caps::ERROR_BODY`] bytes,
/// control characters escaped; empty when there is none.
async fn error_detail(mut response: reqwest::Response) -> String {
    let mut prefix = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = caps::ERROR_BODY as usize - prefix.len();
        prefix.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if prefix.len() >= caps::ERROR_BODY as usize {
            break;
        }
    }
    let message = serde_json::from_slice::<serde_json::Value>(&prefix)
        .ok()
        .and_then(|v| {
            let first = v.get("errors")?.get(0)?;
            let text = first
                .get("message")
                .and_then(|m| m.as_str())
                .filter(|m| !m.is_empty())
                .or_else(|| first.get("code").and_then(|c| c.as_str()))?;
            Some(text.to_owned())
        });
    match message {
        Some(text) => {
            let short: String = text.chars().take(200).collect();
            format!(": {}", short.escape_default())
        }
        None => String::new(),
    }
}

/// The token of a token service's JSON answer (`token`, else `access_token`).
fn parse_token(body: &[u8]) -> Option<super::auth::Secret> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let token = ["token", "access_token"]
        .iter()
        .find_map(|k| value.get(k)?.as_str().filter(|t| !t.is_empty()))?;
    Some(super::auth::Secret::new(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_token_or_access_token() {
        let got = |body: &str| parse_token(body.as_bytes()).map(|s| s.expose().to_owned());
        assert_eq!(got(r#"{"token":"a"}"#).as_deref(), Some("a"));
        assert_eq!(got(r#"{"access_token":"b"}"#).as_deref(), Some("b"));
        assert_eq!(got(r#"{"token":""}"#), None);
        assert_eq!(got("<html>"), None);
    }
}
