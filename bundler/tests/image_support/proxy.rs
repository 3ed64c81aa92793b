//! A TCP proxy in front of a test registry that injects faults per request.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does with one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    Pass,
    /// Reset the connection before the registry sees the request.
    Reset,
    /// Let the registry handle the request, then reset instead of answering.
    ResetAfterForward,
    /// Answer 500 without asking the registry.
    Error500,
    /// Never answer.
    Stall,
    /// Answer without asking the registry: [`EMPTY_INDEX`], its `Docker-Content-Digest`
    /// header [`LYING_DIGEST`] (not the body's digest).
    LyingIndex,
}

/// The body a [`Fault::LyingIndex`] answer carries: an image index listing nothing.
pub const EMPTY_INDEX: &str =
    r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;

/// The digest a [`Fault::LyingIndex`] answer claims.
pub const LYING_DIGEST: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

pub type Rule = dyn Fn(usize, &str, &str) -> Fault + Send + Sync;

/// A TCP proxy in front of the registry that handles one request per connection (it forces
/// `Connection: close`) and applies `rule(request number, method, path)` to each.
pub struct FaultProxy {
    port: u16,
    pub log: Arc<Mutex<Vec<(String, String, Fault)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    pub async fn start(upstream: String, rule: Arc<Rule>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let counter = Arc::new(AtomicUsize::new(0));
        let task_log = log.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let (upstream, rule, log, counter) = (
                    upstream.clone(),
                    rule.clone(),
                    task_log.clone(),
                    counter.clone(),
                );
                tokio::spawn(async move {
                    let _ = handle(client, &upstream, &*rule, &log, &counter).await;
                });
            }
        });
        Self { port, log, task }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn faults(&self) -> Vec<Fault> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|(_, _, f)| *f)
            .filter(|f| *f != Fault::Pass)
            .collect()
    }
}

async fn handle(
    mut client: TcpStream,
    upstream: &str,
    rule: &Rule,
    log: &Mutex<Vec<(String, String, Fault)>>,
    counter: &AtomicUsize,
) -> std::io::Result<()> {
    // Read the request head.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut first = text.lines().next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_owned();
    let path = first.next().unwrap_or_default().to_owned();
    let n = counter.fetch_add(1, Ordering::SeqCst);
    let fault = rule(n, &method, &path);
    log.lock().unwrap().push((method, path, fault));
    match fault {
        Fault::Reset => {
            client.set_zero_linger()?;
            drop(client);
            return Ok(());
        }
        Fault::Error500 => {
            client
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .await?;
            return Ok(());
        }
        Fault::Stall => {
            tokio::time::sleep(Duration::from_secs(120)).await;
            return Ok(());
        }
        Fault::LyingIndex => {
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.index.v1+json\r\nDocker-Content-Digest: {LYING_DIGEST}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{EMPTY_INDEX}",
                EMPTY_INDEX.len()
            );
            client.write_all(answer.as_bytes()).await?;
            return Ok(());
        }
        Fault::Pass | Fault::ResetAfterForward => {}
    }
    // One request per upstream connection: rewrite the Connection header to close.
    let mut rewritten = String::new();
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        if !line.to_ascii_lowercase().starts_with("connection:") {
            rewritten.push_str(line);
            rewritten.push_str("\r\n");
        }
    }
    rewritten.push_str("Connection: close\r\n\r\n");
    let mut server = TcpStream::connect(upstream).await?;
    server.write_all(rewritten.as_bytes()).await?;
    if fault == Fault::ResetAfterForward {
        // Send the body, let the registry answer in full, then reset the client.
        {
            let (mut client_read, _) = client.split();
            let (mut server_read, mut server_write) = server.split();
            let mut answer = Vec::new();
            let body = tokio::io::copy(&mut client_read, &mut server_write);
            tokio::select! {
                _ = body => {}
                _ = server_read.read_to_end(&mut answer) => {}
            }
            let _ = server_read.read_to_end(&mut answer).await;
        }
        client.set_zero_linger()?;
        return Ok(());
    }
    tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    Ok(())
}
