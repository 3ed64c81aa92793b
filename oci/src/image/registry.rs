//! One registry connection: oci-client configured for the host, with credentials and retries.
//!
//! Contract:
//! - Plain HTTP is used only for loopback registries (`localhost`, `127.0.0.0/8`, `::1`) or
//!   when [`RegistryAccess::insecure_http`] is set; every other registry is HTTPS.
//! - Every request is retried with exponential backoff (doubling from
//!   [`RetryPolicy::initial_backoff`] up to [`RetryPolicy::max_backoff`], with jitter) on
//!   connection errors, timeouts (a response stalled longer than
//!   [`RegistryAccess::read_timeout`]), HTTP 5xx, 408 and 429. Client errors such as 401, 403
//!   or 404 are not retried. One loop ([`RegistryClient::retrying`]) retries every request,
//!   the bounded reads of [`super::fetch`] and the client library's requests alike, within
//!   the operation's deadline ([`RegistryAccess::deadline`]); the bounded reads also honour
//!   `Retry-After`.
//! - Credentials go to oci-client only; errors and logs name the registry, never a secret.

use std::future::Future;
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};

use super::auth::{AuthError, AuthFiles, Credentials};
use super::reference::is_loopback;

/// How olmpack talks to registries.
#[derive(Clone, Debug)]
pub struct RegistryAccess {
    /// Which credentials to send.
    pub credentials: Credentials,
    /// Where [`Credentials::FromAuthFiles`] looks.
    pub auth_files: AuthFiles,
    /// Allow plain HTTP to registries that are not on a loopback address.
    pub insecure_http: bool,
    /// How failed requests are retried.
    pub retry: RetryPolicy,
    /// A response that sends nothing for this long fails (and is retried).
    pub read_timeout: Duration,
    /// Connecting that takes longer than this fails (and is retried).
    pub connect_timeout: Duration,
    /// Blobs uploaded or downloaded at once.
    pub max_concurrent: usize,
    /// One registry operation (resolving, pulling or pushing one image) ends after this
    /// long in total, retries and pauses included.
    pub deadline: Duration,
}

impl Default for RegistryAccess {
    fn default() -> Self {
        Self {
            credentials: Credentials::FromAuthFiles,
            auth_files: AuthFiles::from_env(),
            insecure_http: false,
            retry: RetryPolicy::default(),
            read_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(15),
            max_concurrent: 4,
            deadline: Duration::from_secs(600),
        }
    }
}

/// How often and how patiently to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries per request, the first included.
    pub attempts: u32,
    /// Wait before the first retry; each further retry waits twice as long.
    pub initial_backoff: Duration,
    /// Longest wait between two retries.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 6,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
        }
    }
}

impl RetryPolicy {
    /// The pause before retry number `retry` (1-based), without jitter.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// A registry request that failed for good.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Looking up the credentials for a registry failed.
    #[error("failed to read credentials for {registry}")]
    Credentials {
        /// The registry host.
        registry: String,
        /// Why the lookup failed.
        #[source]
        source: AuthError,
    },
    /// The registry client could not be created (e.g. bad TLS settings).
    #[error("failed to set up the registry client for {registry}")]
    Client {
        /// The registry host.
        registry: String,
        /// The client library's error.
        #[source]
        source: OciDistributionError,
    },
    /// The registry answered 401 or 403: the credentials are missing or lack the permission.
    #[error("{what}: {registry} denied access (HTTP {status}); check the registry credentials")]
    Denied {
        /// What was attempted, e.g. "authenticating to quay.io".
        what: String,
        /// The registry host.
        registry: String,
        /// The HTTP status code.
        status: u16,
        /// The client library's error, when the client library made the request.
        #[source]
        source: Option<OciDistributionError>,
    },
    /// The registry could not be reached at all (refused, unresolvable, timed out) until
    /// the retries ran out. The HTTP client's own chain of errors is left out: it names the
    /// client, not the problem.
    #[error("{what}: cannot connect to {registry}: {problem} (after {attempts} attempt(s))")]
    Unreachable {
        /// What was attempted, e.g. "authenticating to quay.io".
        what: String,
        /// The registry's URL (`https://quay.io`; `http://` for plain HTTP).
        registry: String,
        /// What went wrong, in our words, e.g. "connection refused".
        problem: String,
        /// How many attempts were made.
        attempts: u32,
    },
    /// The registry named a token service that olmpack does not send credentials to (see
    /// [`super::realm`]); nothing was sent.
    #[error(
        "{registry}: refusing to send credentials to the token service {realm} the registry names: {why}"
    )]
    CredentialsRefused {
        /// The registry host.
        registry: String,
        /// The token service's URL as the registry named it.
        realm: String,
        /// Why, naming the token service's host.
        why: String,
    },
    /// An answer is larger than olmpack reads for its kind (see [`super::fetch::caps`]).
    #[error("{what}: {registry} sends more than {limit} bytes, the most olmpack reads for it")]
    TooLarge {
        /// What was attempted.
        what: String,
        /// The registry's URL.
        registry: String,
        /// The cap in bytes.
        limit: u64,
    },
    /// An answer contradicts what was asked for (size or digest).
    #[error("{what}: {registry} answered with something else: {problem}")]
    Mismatch {
        /// What was attempted.
        what: String,
        /// The registry's URL.
        registry: String,
        /// How the answer differs, in our words.
        problem: String,
    },
    /// The registry answered with an HTTP error status.
    #[error("{what}: {url} answered HTTP {status}{detail}")]
    Status {
        /// What was attempted.
        what: String,
        /// The URL asked.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// `: ` and the registry's own message (escaped), or empty.
        detail: String,
    },
    /// A request kept failing until the retries ran out; `problem` is the last failure.
    #[error("{what} failed after {attempts} attempt(s): {problem}")]
    Failed {
        /// What was attempted.
        what: String,
        /// How many attempts were made.
        attempts: u32,
        /// The last failure, in our words.
        problem: String,
    },
    /// A token service answered with something that is not a token.
    #[error(
        "{what}: the token service {realm} answered with something other than a token (JSON with \"token\" or \"access_token\")"
    )]
    BadToken {
        /// What was attempted.
        what: String,
        /// The token service's URL.
        realm: String,
    },
    /// The operation ran out of time (`--deadline`).
    #[error("{what}: {registry} did not finish within the deadline of {seconds} s (--deadline)")]
    Deadline {
        /// What was attempted.
        what: String,
        /// The registry's URL.
        registry: String,
        /// The deadline in seconds.
        seconds: u64,
    },
    /// The registry asked to retry later than the deadline allows.
    #[error(
        "{what}: {registry} asks to retry after {seconds} s (Retry-After), past the deadline (--deadline)"
    )]
    RetryAfterDeadline {
        /// What was attempted.
        what: String,
        /// The registry's URL.
        registry: String,
        /// The pause the registry asked for.
        seconds: u64,
    },
    /// Storing what was read failed on this machine.
    #[error("{what}: failed to store what {registry} sent: {problem}")]
    Local {
        /// What was attempted.
        what: String,
        /// The registry's URL.
        registry: String,
        /// The local failure, in our words.
        problem: String,
    },
    /// A request kept failing (network or server errors) until the retries ran out. The
    /// client library's error is told in our words ([`oci_words`]), not chained.
    #[error("{what} failed after {attempts} attempt(s): {problem}")]
    Request {
        /// What was attempted, e.g. "pulling blob sha256:…".
        what: String,
        /// How many attempts were made.
        attempts: u32,
        /// The last attempt's failure, in our words, naming the URL or the registry.
        problem: String,
    },
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::RefusesInput for RegistryError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// An authenticated connection to one registry.
pub struct RegistryClient {
    pub(crate) client: Client,
    pub(crate) auth: RegistryAuth,
    pub(super) registry: String,
    /// `https://REGISTRY`, or `http://REGISTRY` when plain HTTP is used, for messages.
    pub(super) url: String,
    retry: RetryPolicy,
    /// How long the token-service probe of [`Self::authenticate`] may take, and how long
    /// one small answer ([`super::fetch`]) may take whole.
    probe_timeout: Duration,
    /// The HTTP client of the bounded reads of [`super::fetch`].
    pub(super) http: reqwest::Client,
    /// The pull token [`super::fetch`] got from the registry's token service.
    pub(super) token: std::sync::Mutex<Option<super::auth::Secret>>,
    /// The registry asked for Basic credentials.
    pub(super) basic_asked: std::sync::Mutex<bool>,
    /// When the operation this client serves must end.
    deadline: tokio::time::Instant,
    /// The deadline's length, for messages.
    deadline_secs: u64,
}

/// One failed attempt of a bounded read: the error, and whether another try may succeed.
#[derive(Debug)]
pub struct Failure {
    error: RegistryError,
    transient: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    /// A failure another attempt will not fix.
    pub fn permanent(error: RegistryError) -> Self {
        Self {
            error,
            transient: false,
            retry_after: None,
        }
    }

    /// A failure another attempt may not hit; `retry_after` is the pause the registry asked for.
    pub fn transient(error: RegistryError, retry_after: Option<Duration>) -> Self {
        Self {
            error,
            transient: true,
            retry_after,
        }
    }
}

impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryClient")
            .field("registry", &self.registry)
            .field("auth", &self.auth)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl RegistryClient {
    /// A client for the registry of `reference`.
    pub fn new(reference: &Reference, access: &RegistryAccess) -> Result<Self, RegistryError> {
        let registry = reference.resolve_registry().to_owned();
        let plain = access.insecure_http || is_loopback(&registry);
        let url = format!("{}://{registry}", if plain { "http" } else { "https" });
        let protocol = if plain {
            ClientProtocol::HttpsExcept(vec![registry.clone()])
        } else {
            ClientProtocol::Https
        };
        let config = ClientConfig {
            protocol,
            use_monolithic_push: true,
            read_timeout: Some(access.read_timeout),
            connect_timeout: Some(access.connect_timeout),
            max_concurrent_upload: access.max_concurrent.max(1),
            max_concurrent_download: access.max_concurrent.max(1),
            user_agent: concat!("olmpack/", env!("CARGO_PKG_VERSION")),
            ..Default::default()
        };
        let client = Client::try_from(config).map_err(|source| RegistryError::Client {
            registry: registry.clone(),
            source,
        })?;
        let credentials =
            match &access.credentials {
                Credentials::FromAuthFiles => access
                    .auth_files
                    .lookup(reference.registry())
                    .map_err(|source| RegistryError::Credentials {
                        registry: registry.clone(),
                        source,
                    })?,
                other => other.clone(),
            };
        let auth = match credentials {
            Credentials::FromAuthFiles | Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic { username, password } => {
                RegistryAuth::Basic(username, password.expose().to_owned())
            }
            Credentials::Bearer(token) => RegistryAuth::Bearer(token.expose().to_owned()),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(access.connect_timeout)
            .read_timeout(access.read_timeout)
            .redirect(reqwest::redirect::Policy::limited(5))
            .user_agent(concat!("olmpack/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| RegistryError::Unreachable {
                what: "setting up the HTTP client".to_owned(),
                registry: url.clone(),
                problem: e.to_string(),
                attempts: 0,
            })?;
        Ok(Self {
            client,
            auth,
            registry,
            url,
            retry: access.retry,
            probe_timeout: access.read_timeout,
            http,
            token: std::sync::Mutex::new(None),
            basic_asked: std::sync::Mutex::new(false),
            deadline: tokio::time::Instant::now() + access.deadline,
            deadline_secs: access.deadline.as_secs(),
        })
    }

    /// The registry host this client talks to.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// Authenticates for `operation` on `reference`'s repository (fetching a bearer token
    /// when the registry asks for one). With credentials, the registry's token service is
    /// checked first: credentials go only over HTTPS or to loopback ([`super::realm`]).
    pub async fn authenticate(
        &self,
        reference: &Reference,
        operation: RegistryOperation,
    ) -> Result<(), RegistryError> {
        if !matches!(self.auth, RegistryAuth::Anonymous) {
            super::realm::probe(&self.url, self.probe_timeout)
                .await
                .map_err(|refusal| RegistryError::CredentialsRefused {
                    registry: self.registry.clone(),
                    realm: refusal.realm,
                    why: refusal.why,
                })?;
        }
        if matches!(operation, RegistryOperation::Pull) {
            // Reads go through [`super::fetch`], which answers the registry's challenge
            // itself, its token answer bounded.
            return Ok(());
        }
        self.with_retries(format!("authenticating to {}", self.registry), || async {
            self.client
                .auth(reference, &self.auth, operation)
                .await
                .map(|_| ())
        })
        .await
    }

    /// Runs `attempt` (a bounded read of [`super::fetch`]) until it succeeds, fails for good,
    /// or the attempts run out, within the operation's deadline; a `small` answer must be
    /// complete within the per-request timeout. Pauses honour `Retry-After`.
    pub(super) async fn retrying<T, F, Fut>(
        &self,
        what: String,
        small: bool,
        mut attempt: F,
    ) -> Result<T, RegistryError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let run = async {
            let mut tries = 0;
            loop {
                tries += 1;
                let outcome = match small {
                    true => self.whole_in_time(&what, attempt()).await,
                    false => attempt().await,
                };
                let failure = match outcome {
                    Ok(value) => return Ok(value),
                    Err(failure) => failure,
                };
                if !failure.transient || tries >= self.retry.attempts {
                    return Err(self.final_error(failure.error, tries));
                }
                let pause = self.pause(&what, tries, failure.retry_after)?;
                tracing::info!(what = %what, attempt = tries, error = %failure.error,
                    pause_ms = pause.as_millis() as u64, "registry request failed; retrying");
                tokio::time::sleep(pause).await;
            }
        };
        self.within_deadline(&what, run).await
    }

    /// Runs `attempt` (a request of the registry client library) as [`Self::retrying`] runs a
    /// bounded read: its failure told in our words ([`Self::oci_error`]), retried when
    /// [`is_transient`].
    pub async fn with_retries<T, F, Fut>(
        &self,
        what: String,
        mut attempt: F,
    ) -> Result<T, RegistryError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, OciDistributionError>>,
    {
        let label = what.clone();
        self.retrying(what, false, || {
            let request = attempt();
            let label = &label;
            async move {
                request.await.map_err(|source| {
                    let transient = is_transient(&source);
                    let error = self.oci_error(label, source);
                    match transient {
                        true => Failure::transient(error, None),
                        false => Failure::permanent(error),
                    }
                })
            }
        })
        .await
    }

    /// The pause before the next try: the backoff, or the registry's `Retry-After` when
    /// longer; an error when that pause would end past the deadline.
    fn pause(
        &self,
        what: &str,
        tries: u32,
        retry_after: Option<Duration>,
    ) -> Result<Duration, RegistryError> {
        let backoff = with_jitter(self.retry.backoff(tries));
        let Some(asked) = retry_after else {
            return Ok(backoff);
        };
        if tokio::time::Instant::now() + asked > self.deadline {
            return Err(RegistryError::RetryAfterDeadline {
                what: what.to_owned(),
                registry: self.url.clone(),
                seconds: asked.as_secs(),
            });
        }
        Ok(backoff.max(asked))
    }

    /// The error to report once retrying is over: a transient failure names the attempts.
    fn final_error(&self, error: RegistryError, tries: u32) -> RegistryError {
        match error {
            RegistryError::Unreachable {
                what,
                registry,
                problem,
                ..
            } => RegistryError::Unreachable {
                what,
                registry,
                problem,
                attempts: tries,
            },
            RegistryError::Failed { what, problem, .. } => RegistryError::Failed {
                what,
                attempts: tries,
                problem,
            },
            RegistryError::Request { what, problem, .. } => RegistryError::Request {
                what,
                attempts: tries,
                problem,
            },
            RegistryError::Status {
                what,
                url,
                status,
                detail,
            } if tries > 1 => RegistryError::Failed {
                what,
                attempts: tries,
                problem: format!("{url} answered HTTP {status}{detail}"),
            },
            other => other,
        }
    }

    /// `run` cut off at the operation's deadline.
    async fn within_deadline<T>(
        &self,
        what: &str,
        run: impl Future<Output = Result<T, RegistryError>>,
    ) -> Result<T, RegistryError> {
        match tokio::time::timeout_at(self.deadline, run).await {
            Ok(result) => result,
            Err(_) => Err(RegistryError::Deadline {
                what: what.to_owned(),
                registry: self.url.clone(),
                seconds: self.deadline_secs,
            }),
        }
    }

    /// `attempt` bounded by the per-request timeout, and a second more when it is not over:
    /// the HTTP client's own read timeout runs out within it when the server accepted the
    /// connection and then sent nothing, and says so ([`Self::silent`]); a server still
    /// sending (a drip) is cut off as too slow.
    async fn whole_in_time<T>(
        &self,
        what: &str,
        attempt: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        let mut attempt = std::pin::pin!(attempt);
        if let Ok(outcome) = tokio::time::timeout(self.probe_timeout, &mut attempt).await {
            return outcome;
        }
        match tokio::time::timeout(Duration::from_secs(1), attempt).await {
            Ok(outcome) => outcome,
            Err(_) => Err(self.too_slow(what)),
        }
    }

    /// A server that accepted the connection and then sent nothing for the per-request
    /// timeout (the HTTP client's read timeout: a timeout that is not the connection's),
    /// named as such: it is there, it does not answer. `None` for other failures.
    fn silent(&self, what: &str, err: &reqwest::Error, server: &str) -> Option<RegistryError> {
        (err.is_timeout() && !err.is_connect() && err.status().is_none()).then(|| {
            RegistryError::Failed {
                what: what.to_owned(),
                attempts: 0,
                problem: format!(
                    "{server} accepted the connection, then sent nothing for {} s (--timeout)",
                    self.probe_timeout.as_secs()
                ),
            }
        })
    }

    fn too_slow(&self, what: &str) -> Failure {
        Failure::transient(
            RegistryError::Failed {
                what: what.to_owned(),
                attempts: 0,
                problem: format!(
                    "{} did not send its whole answer within {} s (--timeout)",
                    self.url,
                    self.probe_timeout.as_secs()
                ),
            },
            None,
        )
    }

    /// A failure of the HTTP request or of reading its answer, naming the server the request
    /// went to (the registry, or the token service it names).
    pub(super) fn broken(&self, what: &str, err: &reqwest::Error) -> Failure {
        let server = err
            .url()
            .map(|u| u.origin().ascii_serialization())
            .filter(|origin| origin != "null")
            .unwrap_or_else(|| self.url.clone());
        if let Some(error) = self.silent(what, err, &server) {
            return Failure::transient(error, None);
        }
        if let Some(problem) = http_problem(err)
            && (err.is_connect() || (err.is_timeout() && err.status().is_none()))
        {
            return Failure::transient(
                RegistryError::Unreachable {
                    what: what.to_owned(),
                    registry: server,
                    problem,
                    attempts: 0,
                },
                None,
            );
        }
        let problem = http_problem(err).unwrap_or_else(|| {
            if err.is_redirect() {
                "it redirects too often (more than 5 times)".to_owned()
            } else if err.is_body() || err.is_decode() {
                "the answer broke off".to_owned()
            } else if closed_early(err) {
                "it closed the connection before answering".to_owned()
            } else {
                "the request failed".to_owned()
            }
        });
        let error = RegistryError::Failed {
            what: what.to_owned(),
            attempts: 0,
            problem: format!("{server}: {problem}"),
        };
        if err.is_redirect() || err.is_builder() {
            Failure::permanent(error)
        } else {
            Failure::transient(error, None)
        }
    }

    /// A failure to store what was read.
    pub(super) fn local(&self, what: &str, err: &std::io::Error) -> Failure {
        Failure::permanent(RegistryError::Local {
            what: what.to_owned(),
            registry: self.url.clone(),
            problem: crate::input::describe_io(err),
        })
    }

    /// A failed request of the registry client library: denied, unreachable, or another
    /// failure told in our words ([`Self::final_error`] fills in the attempts).
    fn oci_error(&self, what: &str, source: OciDistributionError) -> RegistryError {
        if let Some(status) = denied_status(&source) {
            return RegistryError::Denied {
                what: what.to_owned(),
                registry: self.registry.clone(),
                status,
                source: None,
            };
        }
        // The server the request went to: a redirect may have led elsewhere.
        let server = match &source {
            OciDistributionError::RequestError(e) => e.url(),
            _ => None,
        };
        let server = (server.map(|u| u.origin().ascii_serialization()))
            .filter(|o| o != "null")
            .unwrap_or_else(|| self.url.clone());
        if let OciDistributionError::RequestError(e) = &source
            && let Some(error) = self.silent(what, e, &server)
        {
            return error;
        }
        if let Some(problem) = connection_problem(&source) {
            return RegistryError::Unreachable {
                what: what.to_owned(),
                registry: server,
                problem,
                attempts: 0,
            };
        }
        let problem = oci_words(&source);
        let problem = match problem.starts_with("http") {
            true => problem,
            false => format!("{}: {problem}", self.url),
        };
        RegistryError::Request {
            what: what.to_owned(),
            attempts: 0,
            problem,
        }
    }
}

/// A failure of the registry client library in our words: what the registry did, never
/// the library's own terms (`Server error`, `Digest error`, `client error (SendRequest)`).
fn oci_words(err: &OciDistributionError) -> String {
    use OciDistributionError as E;
    let text = |s: &str| {
        olmpack_model::report::safe_line(s.chars().take(200).collect::<String>().as_str())
    };
    match err {
        E::RequestError(e) => request_words(e),
        E::ServerError { code, url, message } => {
            let redirect = if (300..400).contains(code) {
                " (a redirect without a Location olmpack can follow)"
            } else {
                ""
            };
            let detail = match message.trim() {
                "" => String::new(),
                m => format!(": {}", text(m)),
            };
            format!("{} answered HTTP {code}{redirect}{detail}", text(url))
        }
        E::RegistryError { envelope, url } => {
            let said: Vec<String> = (envelope.errors.iter())
                .map(|e| format!("{:?}: {}", e.code, text(&e.message)))
                .collect();
            format!("{} answered with the error {}", text(url), said.join("; "))
        }
        E::DigestError(oci_client::errors::DigestError::VerificationError { expected, actual }) => {
            format!("what it sent has the digest {}, not {}", text(actual), text(expected))
        }
        E::DigestError(_) => "it sent a digest olmpack cannot read (a sha256:<hex> digest is expected)".to_owned(),
        E::RegistryTokenDecodeError(_) => {
            "its token service answered with something other than a token (JSON with \"token\" or \"access_token\")".to_owned()
        }
        E::IoError(io) => crate::input::describe_io(io),
        E::RegistryNoLocationError => "its answer to an upload names no Location to continue at".to_owned(),
        E::RegistryNoDigestError => "its answer names no digest (Docker-Content-Digest)".to_owned(),
        E::HeaderValueError(_) => "it sent a header that is not text".to_owned(),
        E::UnauthorizedError { .. } | E::AuthenticationFailure(_) => "it denied access".to_owned(),
        E::JsonError(_) | E::ManifestEncodingError(_) | E::ManifestParsingError(_) | E::VersionedParsingError(_) => {
            "it answered with something that is not the JSON document asked for".to_owned()
        }
        _ => "it answered with something olmpack cannot use".to_owned(),
    }
}

/// A failed HTTP request in our words (see [`oci_words`]).
fn request_words(e: &reqwest::Error) -> String {
    if let Some(problem) = http_problem(e) {
        problem
    } else if e.is_redirect() {
        "it redirects too often (more than 5 times)".to_owned()
    } else if e.is_builder() {
        "it names a URL that is not a full http(s) URL".to_owned()
    } else if let Some(status) = e.status() {
        format!("it answered HTTP {}", status.as_u16())
    } else if e.is_body() || e.is_decode() {
        "the answer broke off".to_owned()
    } else if closed_early(e) {
        "it closed the connection before answering".to_owned()
    } else {
        "the request failed".to_owned()
    }
}

/// Whether the HTTP client's chain says the server closed the connection before a whole
/// answer (hyper's "connection closed before message completed").
fn closed_early(err: &reqwest::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(c) = cause {
        if c.to_string()
            .contains("connection closed before message completed")
        {
            return true;
        }
        cause = c.source();
    }
    false
}

/// A network I/O error in our words: a host name that does not resolve is said so (the
/// system's resolver words it "failed to lookup address information").
fn network_words(io: &std::io::Error) -> String {
    // The TLS library's error sits inside one or more I/O errors.
    let mut inner = io.get_ref();
    while let Some(e) = inner {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return tls_words(tls);
        }
        inner = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref());
    }
    if io
        .to_string()
        .contains("failed to lookup address information")
    {
        return "no such host (its name does not resolve)".to_owned();
    }
    crate::input::describe_io(io)
}

/// A failed TLS handshake in our words (the TLS library names its own message types, e.g.
/// "received corrupt message of type InvalidContentType" for a server that answers plain HTTP).
fn tls_words(err: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let words = match err {
        rustls::Error::InvalidMessage(_) => {
            "it does not speak TLS there (an https URL on a port that answers plain HTTP or another protocol)"
        }
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => "its TLS certificate is not for this host name",
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "its TLS certificate has expired"
        }
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => {
            "its TLS certificate is not signed by an authority this machine trusts"
        }
        rustls::Error::InvalidCertificate(_) => "its TLS certificate is refused",
        rustls::Error::AlertReceived(_) => "it broke off the TLS handshake",
        _ => "the TLS handshake failed",
    };
    words.to_owned()
}

/// Why a request failed before an answer, in our words (the system's error at the end of
/// the HTTP client's chain), or a timeout; `None` for other failures.
fn http_problem(e: &reqwest::Error) -> Option<String> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut found = None;
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            found = Some(network_words(io));
        }
        cause = c.source();
    }
    found.or_else(|| {
        if e.is_timeout() {
            Some("timed out".to_owned())
        } else if e.is_connect() {
            Some("the connection failed (no such host, or nothing listens there)".to_owned())
        } else {
            None
        }
    })
}

/// Why a request never reached the registry, in our words (the system's error at the end
/// of the HTTP client's chain), or `None` when it did reach it.
fn connection_problem(err: &OciDistributionError) -> Option<String> {
    let OciDistributionError::RequestError(e) = err else {
        return None;
    };
    if !(e.is_connect() || e.is_timeout()) {
        return None;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut found = None;
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            found = Some(network_words(io));
        }
        cause = c.source();
    }
    Some(found.unwrap_or_else(|| {
        if e.is_timeout() {
            "timed out".to_owned()
        } else {
            "the connection failed (no such host, or nothing listens there)".to_owned()
        }
    }))
}

/// The HTTP status of an authentication or authorization refusal (401, 403).
fn denied_status(err: &OciDistributionError) -> Option<u16> {
    match err {
        OciDistributionError::UnauthorizedError { .. } => Some(401),
        OciDistributionError::AuthenticationFailure(_) => Some(401),
        OciDistributionError::RequestError(e) => e
            .status()
            .map(|s| s.as_u16())
            .filter(|s| *s == 401 || *s == 403),
        OciDistributionError::ServerError { code, .. } if *code == 401 || *code == 403 => {
            Some(*code)
        }
        OciDistributionError::RegistryError { envelope, .. } => {
            envelope.errors.iter().find_map(|e| match e.code {
                OciErrorCode::Unauthorized => Some(401),
                OciErrorCode::Denied => Some(403),
                _ => None,
            })
        }
        _ => None,
    }
}

fn transient_status(code: u16) -> bool {
    code >= 500 || code == 408 || code == 429
}

/// True for failures that another try may not hit: the connection, a timeout, the server.
pub fn is_transient(err: &OciDistributionError) -> bool {
    match err {
        OciDistributionError::RequestError(e) => match e.status() {
            Some(status) => transient_status(status.as_u16()),
            None => !e.is_builder() && !e.is_redirect(),
        },
        OciDistributionError::ServerError { code, .. } => transient_status(*code),
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::Toomanyrequests
                    | OciErrorCode::BlobUploadUnknown
                    | OciErrorCode::BlobUploadInvalid
            )
        }),
        // A truncated body or a reset mid-response surfaces as an I/O error.
        OciDistributionError::IoError(_) => true,
        // A reset between the headers and the body of an upload answer can leave the
        // registry's reply without the headers oci-client expects.
        OciDistributionError::RegistryNoLocationError
        | OciDistributionError::RegistryNoDigestError => true,
        _ => false,
    }
}

/// Adds up to 25% of `pause`, derived from the clock (retries need spread, not secrecy).
fn with_jitter(pause: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let quarter = pause.as_millis() as u64 / 4;
    let extra = if quarter == 0 {
        0
    } else {
        u64::from(nanos) % quarter
    };
    pause + Duration::from_millis(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy {
            attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(700),
        };
        let pauses: Vec<u128> = (1..=5).map(|n| policy.backoff(n).as_millis()).collect();
        assert_eq!(pauses, [100, 200, 400, 700, 700]);
    }

    /// A client for a registry nobody talks to: `attempt` is the only request.
    fn quick_client(attempts: u32) -> RegistryClient {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let access = RegistryAccess {
            credentials: Credentials::Anonymous,
            retry: RetryPolicy {
                attempts,
                initial_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(2),
            },
            ..RegistryAccess::default()
        };
        let reference: Reference = "127.0.0.1:9/demo/x:v1"
            .parse()
            .unwrap_or_else(|e| unreachable!("a valid reference: {e}"));
        RegistryClient::new(&reference, &access).unwrap_or_else(|e| unreachable!("{e}"))
    }

    /// Runs `with_retries` on a request answering `code` every time: the error and the tries.
    fn retried(attempts: u32, code: u16) -> (String, u32) {
        let client = quick_client(attempts);
        let tries = std::sync::atomic::AtomicU32::new(0);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap_or_else(|e| unreachable!("{e}"));
        let result: Result<(), _> = runtime.block_on(client.with_retries("asking".into(), || {
            tries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                Err(OciDistributionError::ServerError {
                    code,
                    url: "http://127.0.0.1:9/v2/".into(),
                    message: String::new(),
                })
            }
        }));
        let error = result.err().map(|e| e.to_string()).unwrap_or_default();
        (error, tries.into_inner())
    }

    #[test]
    fn client_library_requests_retry_in_the_one_loop_and_name_the_attempts() {
        assert_eq!(
            retried(3, 503),
            (
                "asking failed after 3 attempt(s): http://127.0.0.1:9/v2/ answered HTTP 503".into(),
                3
            )
        );
        assert_eq!(
            retried(3, 404),
            (
                "asking failed after 1 attempt(s): http://127.0.0.1:9/v2/ answered HTTP 404".into(),
                1
            )
        );
    }

    /// The client library's failures that no hostile registry row reaches through a command
    /// of its own (its digest checks serve only the referrers fallback of `release --push`).
    #[test]
    fn client_library_failures_in_our_words() {
        use oci_client::errors::DigestError;
        let url = "http://127.0.0.1:9/v2/demo/x/blobs/uploads/".to_owned();
        let cases = [
            (
                OciDistributionError::ServerError {
                    code: 307,
                    url: url.clone(),
                    message: String::new(),
                },
                "http://127.0.0.1:9/v2/demo/x/blobs/uploads/ answered HTTP 307 (a redirect without a Location olmpack can follow)",
            ),
            (
                OciDistributionError::ServerError {
                    code: 502,
                    url,
                    message: "bad\ngateway".into(),
                },
                "http://127.0.0.1:9/v2/demo/x/blobs/uploads/ answered HTTP 502: bad<U+000A>gateway",
            ),
            (
                OciDistributionError::DigestError(DigestError::VerificationError {
                    expected: "sha256:aa".into(),
                    actual: "sha256:bb".into(),
                }),
                "what it sent has the digest sha256:bb, not sha256:aa",
            ),
            (
                OciDistributionError::DigestError(DigestError::MissingAlgorithm),
                "it sent a digest olmpack cannot read (a sha256:<hex> digest is expected)",
            ),
        ];
        for (error, words) in cases {
            assert_eq!(oci_words(&error), words);
        }
    }

    #[test]
    fn tls_failures_in_our_words() {
        use rustls::{AlertDescription, CertificateError, Error, InvalidMessage};
        let cases = [
            (
                Error::InvalidMessage(InvalidMessage::InvalidContentType),
                "it does not speak TLS there (an https URL on a port that answers plain HTTP or another protocol)",
            ),
            (
                Error::InvalidCertificate(CertificateError::NotValidForName),
                "its TLS certificate is not for this host name",
            ),
            (
                Error::InvalidCertificate(CertificateError::Expired),
                "its TLS certificate has expired",
            ),
            (
                Error::InvalidCertificate(CertificateError::UnknownIssuer),
                "its TLS certificate is not signed by an authority this machine trusts",
            ),
            (
                Error::InvalidCertificate(CertificateError::BadSignature),
                "its TLS certificate is refused",
            ),
            (
                Error::AlertReceived(AlertDescription::HandshakeFailure),
                "it broke off the TLS handshake",
            ),
            (Error::HandshakeNotComplete, "the TLS handshake failed"),
        ];
        for (error, words) in cases {
            // As the HTTP client reports it: an I/O error around the TLS library's.
            let io = std::io::Error::new(std::io::ErrorKind::InvalidData, error);
            let io = std::io::Error::other(io);
            assert_eq!(network_words(&io), words);
        }
    }

    #[test]
    fn server_errors_are_transient_client_errors_are_not() {
        let server = |code| OciDistributionError::ServerError {
            code,
            url: "u".into(),
            message: String::new(),
        };
        assert!(is_transient(&server(500)));
        assert!(is_transient(&server(503)));
        assert!(is_transient(&server(429)));
        assert!(!is_transient(&server(404)));
        assert!(!is_transient(&OciDistributionError::UnauthorizedError {
            url: "u".into()
        }));
    }
}
