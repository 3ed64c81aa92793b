//! [`ReferrersRegistry`]: a real OCI registry with the referrers API of the OCI distribution
//! spec 1.1 (olareg), for the paths Debian's docker-registry 2.8 cannot show.
//!
//! Guarantees: listens on plain HTTP on 127.0.0.1, stores everything in its own temp directory
//! (`$TMPDIR/olmpack-olareg-*`), is killed and its directory removed on drop; anonymous.

use std::time::Duration;

use crate::registry::{RegistryError, answers_v2};
use olmpack_envtest::binaries::Tool;
use olmpack_envtest::process::{ChildProcess, free_port, wait_until};

const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running olareg. See the module docs.
#[derive(Debug)]
pub struct ReferrersRegistry {
    process: ChildProcess,
    port: u16,
    _dir: tempfile::TempDir,
}

impl ReferrersRegistry {
    /// Starts olareg and waits until it answers `/v2/`.
    pub async fn start() -> Result<Self, RegistryError> {
        let bin = Tool::Olareg.path()?;
        let dir = tempfile::Builder::new()
            .prefix("olmpack-olareg-")
            .tempdir()?;
        let storage = dir.path().join("storage");
        std::fs::create_dir_all(&storage)?;
        let port = free_port()?;
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
            "--api-referrer=true",
        ]
        .map(str::to_owned);
        let mut process =
            ChildProcess::start("olareg", &bin, &args, &dir.path().join("olareg.log"))?;
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
}
