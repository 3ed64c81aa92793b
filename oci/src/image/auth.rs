//! Registry credentials: given explicitly or found in a Docker/Podman auth file.
//!
//! Contract:
//! - [`Secret`] never shows its value through `Debug` or `Display`; nothing in olmpack logs a
//!   password, token or `auth` string.
//! - Auth files are searched in this order, the first file with an entry for the registry
//!   wins: `$REGISTRY_AUTH_FILE`, `$XDG_RUNTIME_DIR/containers/auth.json`,
//!   `$DOCKER_CONFIG/config.json` (else `~/.docker/config.json`). An entry is `auths.<key>`
//!   where the key is the registry host, optionally with an `http://` or `https://` scheme and
//!   a trailing path (Docker Hub's key is `https://index.docker.io/v1/`); it holds `auth`
//!   (base64 of `user:password`) or `username` and `password`, or `identitytoken`, which is
//!   sent as a bearer token.
//! - Credential helpers are run as Docker runs them (`docker-credential-<name> get`, the
//!   registry host on stdin): `credHelpers.<host>` first, then an `auths` entry with
//!   credentials, then `credsStore`. A helper that has nothing for the host counts as no entry.
//! - No entry anywhere means anonymous access.

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::Deserialize;

/// A value that must not be printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a password or token so it is hidden from `Debug` output.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// How to authenticate to a registry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Credentials {
    /// Look the registry up in the auth files (see the module docs); anonymous if absent.
    #[default]
    FromAuthFiles,
    /// Send no credentials.
    Anonymous,
    /// Use this user name and password.
    Basic {
        /// The registry user name.
        username: String,
        /// The password or token.
        password: Secret,
    },
    /// A registry bearer token (or an identity token from an auth file).
    Bearer(Secret),
}

/// Failure to read credentials.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// Reading an auth file failed.
    #[error("failed to read the registry auth file {path}")]
    Read {
        /// The auth file.
        path: PathBuf,
        /// The I/O error from the file system.
        #[source]
        source: std::io::Error,
    },
    /// An auth file is not the JSON of a Docker/Podman `config.json` / `auth.json`.
    #[error("{path} is not a valid registry auth file")]
    Json {
        /// The auth file.
        path: PathBuf,
        /// The JSON parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// An `auth` entry cannot be decoded to a user name and password.
    #[error("{path}: auths.{key}.auth is not base64 of user:password")]
    BadAuthField {
        /// The auth file.
        path: PathBuf,
        /// The registry key of the bad entry.
        key: String,
    },
    /// Running a credential helper failed (not installed, or it crashed).
    #[error("failed to run the credential helper docker-credential-{helper} for {registry}")]
    Helper {
        /// The helper's name, without the `docker-credential-` prefix.
        helper: String,
        /// The registry credentials were asked for.
        registry: String,
        /// The I/O error from starting or talking to the helper.
        #[source]
        source: std::io::Error,
    },
    /// A credential helper answered, but not with the JSON of `Username` and `Secret`.
    #[error(
        "the credential helper docker-credential-{helper} gave unreadable output for {registry}"
    )]
    HelperOutput {
        /// The helper's name, without the `docker-credential-` prefix.
        helper: String,
        /// The registry credentials were asked for.
        registry: String,
    },
}

/// Where auth files are looked for; [`AuthFiles::from_env`] reads the process environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthFiles {
    /// In search order.
    pub paths: Vec<PathBuf>,
    /// Where `docker-credential-*` helpers are; `None` searches `PATH`.
    pub helper_dir: Option<PathBuf>,
}

impl AuthFiles {
    /// The standard locations, from `REGISTRY_AUTH_FILE`, `XDG_RUNTIME_DIR`, `DOCKER_CONFIG`
    /// and `HOME`.
    pub fn from_env() -> Self {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let mut paths = Vec::new();
        if let Some(file) = var("REGISTRY_AUTH_FILE") {
            paths.push(PathBuf::from(file));
        }
        if let Some(dir) = var("XDG_RUNTIME_DIR") {
            paths.push(PathBuf::from(dir).join("containers/auth.json"));
        }
        if let Some(dir) = var("DOCKER_CONFIG") {
            paths.push(PathBuf::from(dir).join("config.json"));
        } else if let Some(home) = var("HOME") {
            paths.push(PathBuf::from(home).join(".docker/config.json"));
        }
        Self {
            paths,
            helper_dir: None,
        }
    }

    /// The credentials for `registry` (a host, with port if any), or anonymous.
    pub fn lookup(&self, registry: &str) -> Result<Credentials, AuthError> {
        for path in &self.paths {
            // A credentials file is small: bounded as every key file is, whatever the flags.
            let text = match crate::input::read_secret_io(path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(AuthError::Read {
                        path: path.clone(),
                        source,
                    });
                }
            };
            let found = match credentials_in(path, &text, registry)? {
                Some(Found::Credentials(credentials)) => Some(credentials),
                Some(Found::Helper(helper)) => self.run_helper(&helper, registry)?,
                None => None,
            };
            if let Some(credentials) = found {
                return Ok(credentials);
            }
        }
        Ok(Credentials::Anonymous)
    }
}

impl AuthFiles {
    /// Asks `docker-credential-<helper>` for the registry's credentials.
    fn run_helper(&self, helper: &str, registry: &str) -> Result<Option<Credentials>, AuthError> {
        use std::io::Write;
        let program = format!("docker-credential-{helper}");
        let program = match &self.helper_dir {
            Some(dir) => dir.join(program),
            None => PathBuf::from(program),
        };
        let failed = |source| AuthError::Helper {
            helper: helper.to_owned(),
            registry: registry.to_owned(),
            source,
        };
        let mut child = std::process::Command::new(program)
            .arg("get")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(failed)?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(registry.as_bytes()).map_err(failed)?;
        }
        let output = child.wait_with_output().map_err(failed)?;
        if !output.status.success() {
            // "credentials not found in native keychain" and the like.
            return Ok(None);
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct HelperAnswer {
            username: String,
            secret: String,
        }
        let answer: HelperAnswer =
            serde_json::from_slice(&output.stdout).map_err(|_| AuthError::HelperOutput {
                helper: helper.to_owned(),
                registry: registry.to_owned(),
            })?;
        Ok(Some(if answer.username == "<token>" {
            Credentials::Bearer(Secret::new(answer.secret))
        } else {
            Credentials::Basic {
                username: answer.username,
                password: Secret::new(answer.secret),
            }
        }))
    }
}

/// What an auth file says about a registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// Use these credentials, found inline in the file (`auth`, `identitytoken`).
    Credentials(Credentials),
    /// Ask this credential helper (`docker-credential-<name>`).
    Helper(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthFile {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, AuthEntry>,
    #[serde(default)]
    cred_helpers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    creds_store: Option<String>,
}

#[derive(Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// What one auth file's content says about `registry`, if anything.
pub fn credentials_in(
    path: &Path,
    text: &[u8],
    registry: &str,
) -> Result<Option<Found>, AuthError> {
    let file: AuthFile = serde_json::from_slice(text).map_err(|source| AuthError::Json {
        path: path.to_owned(),
        source,
    })?;
    let wanted = normalize_host(registry);
    if let Some(helper) = file
        .cred_helpers
        .iter()
        .find(|(key, _)| normalize_host(key) == wanted)
        .map(|(_, helper)| helper)
    {
        return Ok(Some(Found::Helper(helper.clone())));
    }
    let entry = file
        .auths
        .iter()
        .find(|(key, _)| normalize_host(key) == wanted);
    if let Some((key, entry)) = entry
        && let Some(credentials) = entry_credentials(path, key, entry)?
    {
        return Ok(Some(Found::Credentials(credentials)));
    }
    Ok(file
        .creds_store
        .filter(|store| !store.is_empty())
        .map(Found::Helper))
}

fn entry_credentials(
    path: &Path,
    key: &str,
    entry: &AuthEntry,
) -> Result<Option<Credentials>, AuthError> {
    if let Some(token) = entry.identitytoken.as_deref().filter(|t| !t.is_empty()) {
        return Ok(Some(Credentials::Bearer(Secret::new(token))));
    }
    if let Some(auth) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let bad = || AuthError::BadAuthField {
            path: path.to_owned(),
            key: key.to_owned(),
        };
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| bad())?;
        let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
        let (username, password) = decoded.split_once(':').ok_or_else(bad)?;
        return Ok(Some(Credentials::Basic {
            username: username.to_owned(),
            password: Secret::new(password),
        }));
    }
    match (&entry.username, &entry.password) {
        (Some(username), Some(password)) => Ok(Some(Credentials::Basic {
            username: username.clone(),
            password: Secret::new(password.clone()),
        })),
        _ => Ok(None),
    }
}

/// `https://index.docker.io/v1/`, `docker.io`, `registry-1.docker.io` → `docker.io`;
/// otherwise the host without scheme and path.
fn normalize_host(key: &str) -> String {
    let without_scheme = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = without_scheme
        .split('/')
        .next()
        .unwrap_or(without_scheme)
        .to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_owned(),
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(json: &str, registry: &str) -> Result<Option<Found>, String> {
        credentials_in(Path::new("/cfg.json"), json.as_bytes(), registry).map_err(|e| e.to_string())
    }

    fn basic(user: &str, pass: &str) -> Option<Found> {
        Some(Found::Credentials(Credentials::Basic {
            username: user.into(),
            password: Secret::new(pass),
        }))
    }

    fn creds(found: Option<Found>) -> Credentials {
        match found {
            Some(Found::Credentials(c)) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn finds_entries_by_host_in_every_documented_form() {
        // base64("alice:pa:ss") — passwords may contain ':'.
        let alice = "YWxpY2U6cGE6c3M=";
        type Case = (String, &'static str, Result<Option<Found>, String>);
        let cases: Vec<Case> = vec![
            (
                format!(r#"{{"auths":{{"127.0.0.1:5000":{{"auth":"{alice}"}}}}}}"#),
                "127.0.0.1:5000",
                Ok(basic("alice", "pa:ss")),
            ),
            (
                format!(r#"{{"auths":{{"https://quay.io/v2/":{{"auth":"{alice}"}}}}}}"#),
                "quay.io",
                Ok(basic("alice", "pa:ss")),
            ),
            (
                format!(r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{alice}"}}}}}}"#),
                "docker.io",
                Ok(basic("alice", "pa:ss")),
            ),
            (
                r#"{"auths":{"ghcr.io":{"username":"bob","password":"pw"}}}"#.into(),
                "ghcr.io",
                Ok(basic("bob", "pw")),
            ),
            (
                r#"{"auths":{"ghcr.io":{"identitytoken":"tok"}}}"#.into(),
                "ghcr.io",
                Ok(Some(Found::Credentials(Credentials::Bearer(Secret::new(
                    "tok",
                ))))),
            ),
            (
                format!(r#"{{"auths":{{"quay.io":{{"auth":"{alice}"}}}}}}"#),
                "quay.io:443",
                Ok(None),
            ),
            (r#"{"auths":{"quay.io":{}}}"#.into(), "quay.io", Ok(None)),
            (
                r#"{"credsStore":"desktop","auths":{"quay.io":{}}}"#.into(),
                "quay.io",
                Ok(Some(Found::Helper("desktop".into()))),
            ),
            (
                format!(
                    r#"{{"credsStore":"desktop","credHelpers":{{"quay.io":"ecr"}},"auths":{{"quay.io":{{"auth":"{alice}"}}}}}}"#
                ),
                "quay.io",
                Ok(Some(Found::Helper("ecr".into()))),
            ),
            (
                format!(r#"{{"credsStore":"desktop","auths":{{"quay.io":{{"auth":"{alice}"}}}}}}"#),
                "quay.io",
                Ok(basic("alice", "pa:ss")),
            ),
            (
                r#"{"auths":{"quay.io":{"auth":"bm8tY29sb24="}}}"#.into(),
                "quay.io",
                Err("/cfg.json: auths.quay.io.auth is not base64 of user:password".into()),
            ),
            (
                r#"{"auths":{"quay.io":{"auth":"%%%"}}}"#.into(),
                "quay.io",
                Err("/cfg.json: auths.quay.io.auth is not base64 of user:password".into()),
            ),
            (
                "{\"auths\": 1}".into(),
                "quay.io",
                Err("/cfg.json is not a valid registry auth file".into()),
            ),
        ];
        for (json, registry, expected) in cases {
            assert_eq!(lookup(&json, registry), expected, "{json} for {registry}");
        }
    }

    #[test]
    fn secrets_do_not_print() {
        let creds = Credentials::Basic {
            username: "alice".into(),
            password: Secret::new("hunter2"),
        };
        let shown = format!("{creds:?} {:?}", Credentials::Bearer(Secret::new("tok")));
        assert!(
            !shown.contains("hunter2") && !shown.contains("tok\""),
            "{shown}"
        );
    }

    #[test]
    fn the_first_file_with_an_entry_wins_and_missing_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("auth.json");
        let second = dir.path().join("config.json");
        std::fs::write(&first, r#"{"auths":{"other.io":{"auth":"YTpi"}}}"#).unwrap();
        std::fs::write(&second, r#"{"auths":{"quay.io":{"auth":"Yzpk"}}}"#).unwrap();
        let files = AuthFiles {
            paths: vec![dir.path().join("missing.json"), first, second],
            helper_dir: None,
        };
        assert_eq!(files.lookup("quay.io").unwrap(), creds(basic("c", "d")));
        assert_eq!(files.lookup("other.io").unwrap(), creds(basic("a", "b")));
        assert_eq!(files.lookup("nowhere.io").unwrap(), Credentials::Anonymous);
    }

    #[cfg(unix)]
    #[test]
    fn credential_helpers_are_asked_for_the_host() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        // A helper that knows one registry (with a password) and one token registry.
        let script = "#!/bin/sh\nread host\ncase \"$host\" in\n  \
            quay.io) echo '{\"ServerURL\":\"quay.io\",\"Username\":\"h\",\"Secret\":\"s\"}' ;;\n  \
            ghcr.io) echo '{\"ServerURL\":\"ghcr.io\",\"Username\":\"<token>\",\"Secret\":\"t\"}' ;;\n  \
            *) echo 'credentials not found in native keychain'; exit 1 ;;\nesac\n";
        let helper = dir.path().join("docker-credential-fake");
        std::fs::write(&helper, script).unwrap();
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = dir.path().join("config.json");
        std::fs::write(&config, r#"{"credsStore":"fake"}"#).unwrap();
        let files = AuthFiles {
            paths: vec![config],
            helper_dir: Some(dir.path().to_owned()),
        };
        assert_eq!(files.lookup("quay.io").unwrap(), creds(basic("h", "s")));
        assert_eq!(
            files.lookup("ghcr.io").unwrap(),
            Credentials::Bearer(Secret::new("t"))
        );
        assert_eq!(files.lookup("docker.io").unwrap(), Credentials::Anonymous);

        let missing = AuthFiles {
            helper_dir: Some(dir.path().join("nowhere")),
            ..files
        };
        assert_eq!(
            missing.lookup("quay.io").unwrap_err().to_string(),
            "failed to run the credential helper docker-credential-fake for quay.io"
        );
    }
}
