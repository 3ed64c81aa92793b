//! [`Registry`]: a real OCI registry (CNCF distribution, Debian's `docker-registry`) per test.
//!
//! Guarantees: listens on plain HTTP on 127.0.0.1 (clients treat loopback as insecure-allowed),
//! stores blobs in its own temp directory (`$TMPDIR/olmpack-registry-*`), and is killed and
//! its directory removed on drop. With [`RegistryAuth::Htpasswd`] every request needs HTTP basic
//! auth with the given user (bcrypt htpasswd, as distribution requires).

use std::path::Path;
use std::time::Duration;

use olmpack_envtest::binaries::{Tool, ToolNotFound};
use olmpack_envtest::process::{ChildProcess, ProcessError, free_port, wait_until};

const START_TIMEOUT: Duration = Duration::from_secs(30);
const START_ATTEMPTS: usize = 3;

/// Failure to start a registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(transparent)]
    ToolNotFound(#[from] ToolNotFound),
    #[error("failed to prepare the registry's directory")]
    Io(#[from] std::io::Error),
    #[error("failed to hash the registry password")]
    Hash(#[from] bcrypt::BcryptError),
    #[error(transparent)]
    Process(#[from] ProcessError),
}

/// Who may use the registry.
#[derive(Clone, Debug, Default)]
pub enum RegistryAuth {
    /// Anyone may push and pull.
    #[default]
    Anonymous,
    /// Only this user, with HTTP basic auth.
    Htpasswd { username: String, password: String },
}

/// A running registry. See the module docs.
#[derive(Debug)]
pub struct Registry {
    process: ChildProcess,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// Starts a registry and waits until it answers `/v2/`.
    pub async fn start(auth: RegistryAuth) -> Result<Self, RegistryError> {
        let mut last = None;
        for _ in 0..START_ATTEMPTS {
            match Self::try_start(&auth).await {
                Ok(registry) => return Ok(registry),
                Err(err @ RegistryError::ToolNotFound(_)) => return Err(err),
                Err(err) => last = Some(err),
            }
        }
        Err(last.expect("at least one attempt ran"))
    }

    async fn try_start(auth: &RegistryAuth) -> Result<Self, RegistryError> {
        let bin = Tool::Registry.path()?;
        let dir = tempfile::Builder::new()
            .prefix("olmpack-registry-")
            .tempdir()?;
        let port = free_port()?;
        let config = config_yaml(dir.path(), port, auth)?;
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config)?;
        let mut process = ChildProcess::start(
            "docker-registry",
            &bin,
            &["serve".to_owned(), config_path.display().to_string()],
            &dir.path().join("registry.log"),
        )?;
        wait_until(&mut process, START_TIMEOUT, || answers_v2(port)).await?;
        Ok(Self {
            process,
            port,
            _dir: dir,
        })
    }

    /// `127.0.0.1:<port>`: the registry part of an image reference.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Where the registry keeps its blobs and manifests (its filesystem storage driver's root),
    /// for tests that damage what it serves.
    pub fn storage(&self) -> std::path::PathBuf {
        self._dir.path().join("storage")
    }

    /// The registry process's PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The end of the registry's log, for failure messages.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }
}

fn config_yaml(dir: &Path, port: u16, auth: &RegistryAuth) -> Result<String, RegistryError> {
    let storage = dir.join("storage");
    std::fs::create_dir_all(&storage)?;
    let mut config = format!(
        "version: 0.1\n\
         log:\n  level: warn\n  accesslog:\n    disabled: true\n\
         storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
         http:\n  addr: 127.0.0.1:{port}\n  secret: olmpack-test-secret\n",
        storage.display()
    );
    if let RegistryAuth::Htpasswd { username, password } = auth {
        let htpasswd = dir.join("htpasswd");
        // distribution accepts only bcrypt entries.
        let hash = bcrypt::hash(password, 5)?;
        std::fs::write(&htpasswd, format!("{username}:{hash}\n"))?;
        config.push_str(&format!(
            "auth:\n  htpasswd:\n    realm: olmpack-test\n    path: {}\n",
            htpasswd.display()
        ));
    }
    Ok(config)
}

/// True once `/v2/` answers 200 (anonymous) or 401 (auth required).
pub(crate) async fn answers_v2(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        stream
            .write_all(b"GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await.ok()?;
        let status = response.lines().next()?.to_owned();
        Some(status.contains(" 200") || status.contains(" 401"))
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), probe).await,
        Ok(Some(true))
    )
}
