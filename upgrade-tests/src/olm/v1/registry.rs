//! [`LocalRegistry`]: the OCI registry OLM v1 pulls bundle and catalog images from — olareg
//! (a pinned tool, so the tools image carries it; it also serves the referrers API of OCI
//! distribution 1.1), anonymous, plain HTTP on 127.0.0.1, its
//! blobs in a temp directory removed with it, garbage collection off (the catalog names bundle
//! images by digest).

use std::time::Duration;

use crate::binaries::Tool;
use crate::process::{ChildProcess, free_port, wait_until};

use super::OlmError;

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
    pub async fn start() -> Result<Self, OlmError> {
        let bin = Tool::Olareg.path()?;
        let dir = tempfile::Builder::new()
            .prefix("olmpack-olmv1-registry-")
            .tempdir()
            .map_err(|source| OlmError::Write {
                path: std::env::temp_dir(),
                source,
            })?;
        let storage = dir.path().join("storage");
        std::fs::create_dir_all(&storage).map_err(|source| OlmError::Write {
            path: storage.clone(),
            source,
        })?;
        let port = free_port().map_err(OlmError::Port)?;
        let args = [
            "serve",
            "--addr",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--dir",
            &storage.display().to_string(),
            "--store-type",
            "dir",
            // A frequency that is not positive turns olareg's garbage collection off.
            "--gc-frequency=-1s",
        ]
        .map(str::to_owned);
        let mut process =
            ChildProcess::start("olareg", &bin, &args, &dir.path().join("registry.log"))?;
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

    /// The end of the registry's log, for failure messages.
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }

    /// The registry process's PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }
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
