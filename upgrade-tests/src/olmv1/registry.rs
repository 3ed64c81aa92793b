//! [`LocalRegistry`]: the OCI registry OLM v1 pulls bundle and catalog images from — CNCF
//! distribution (Debian's `docker-registry`), anonymous, plain HTTP on 127.0.0.1, its blobs in
//! a temp directory removed with it.

use std::path::Path;
use std::time::Duration;

use crate::binaries::Tool;
use crate::process::{ChildProcess, free_port, wait_until};

use super::OlmV1Error;

/// How long the registry may take to answer `/v2/`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running registry; killed, and its storage removed, on drop.
#[derive(Debug)]
pub struct LocalRegistry {
    process: ChildProcess,
    port: u16,
    _dir: tempfile::TempDir,
}

impl LocalRegistry {
    /// Starts a registry and waits until it answers `/v2/`.
    pub async fn start() -> Result<Self, OlmV1Error> {
        let bin = Tool::Registry.path()?;
        let dir = tempfile::Builder::new()
            .prefix("olmpack-olmv1-registry-")
            .tempdir()
            .map_err(|source| OlmV1Error::Write {
                path: std::env::temp_dir(),
                source,
            })?;
        let port = free_port().map_err(OlmV1Error::Port)?;
        let config_path = dir.path().join("config.yml");
        write_config(dir.path(), &config_path, port)?;
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

    /// The registry process's PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
}

fn write_config(dir: &Path, config_path: &Path, port: u16) -> Result<(), OlmV1Error> {
    let storage = dir.join("storage");
    std::fs::create_dir_all(&storage).map_err(|source| OlmV1Error::Write {
        path: storage.clone(),
        source,
    })?;
    let config = format!(
        "version: 0.1\n\
         log:\n  level: warn\n  accesslog:\n    disabled: true\n\
         storage:\n  filesystem:\n    rootdirectory: {}\n\
         http:\n  addr: 127.0.0.1:{port}\n  secret: olmpack-olmv1\n",
        storage.display()
    );
    std::fs::write(config_path, config).map_err(|source| OlmV1Error::Write {
        path: config_path.to_owned(),
        source,
    })
}

/// True once `/v2/` answers 200; reads at most one small response.
async fn answers_v2(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        stream
            .write_all(b"GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .ok()?;
        let mut response = Vec::new();
        (&mut stream)
            .take(4096)
            .read_to_end(&mut response)
            .await
            .ok()?;
        let text = String::from_utf8_lossy(&response);
        Some(text.lines().next()?.contains(" 200"))
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), probe).await,
        Ok(Some(true))
    )
}
