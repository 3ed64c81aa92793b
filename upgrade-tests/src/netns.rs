//! A network of its own for each operator process: how a released kubebuilder manager serves
//! webhooks with none of olmpack's flags.
//!
//! controller-runtime's webhook server listens on port 9443 unless the program says
//! otherwise, and most released kubebuilder managers offer no flag to say otherwise (v4.0 to
//! v4.15 have no `--webhook-port`). Several such processes at once — the releases of an edge
//! side by side, `--jobs N`, parallel runs on one machine — would all want 127.0.0.1:9443
//! (and `:8081` for the health probe). So each process gets a network namespace with only a
//! loopback interface ([`NetNs`]), where every port is its own, and olmpack relays:
//! - inward, from a port of this machine's network (the one the apiserver is given) to
//!   127.0.0.1:9443 inside the namespace ([`ProcessNetwork::connect`]);
//! - outward, from 127.0.0.1:`P` inside the namespace to 127.0.0.1:`P` outside, for every
//!   loopback server of the process's kubeconfig (the apiserver), so the process reaches it
//!   at the very address its kubeconfig names.
//!
//! Creating a network namespace needs `CAP_SYS_ADMIN` (root). Without it, or when the
//! process's apiserver is not on loopback (a cluster given with `--kubeconfig` elsewhere), the
//! process shares this machine's network and must listen where `$OLMPACK_WEBHOOK_PORT` says
//! ([`ProcessNetwork::Shared`]).
//!
//! A namespace lives as long as its [`NetNs`] handle or a process in it; sockets are made in
//! it by a short-lived thread that enters it (`setns` changes only the calling thread's
//! namespace) and keep their namespace when handed back.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The port controller-runtime's webhook server listens on by default, and so the port a
/// process in a namespace of its own is told (`$OLMPACK_WEBHOOK_PORT`).
pub const CONTROLLER_RUNTIME_WEBHOOK_PORT: u16 = 9443;

/// A network namespace with its loopback interface up.
#[derive(Debug)]
pub struct NetNs {
    file: File,
}

impl NetNs {
    /// Creates a namespace (needs `CAP_SYS_ADMIN`).
    pub fn new() -> std::io::Result<Arc<Self>> {
        let file = on_new_thread(|| {
            unshare_net()?;
            loopback_up()?;
            File::open("/proc/thread-self/ns/net")
        })?;
        Ok(Arc::new(Self { file }))
    }

    /// The descriptor a child enters with `setns` between fork and exec.
    pub fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Connects to `127.0.0.1:port` inside the namespace.
    pub async fn connect(self: &Arc<Self>, port: u16) -> std::io::Result<TcpStream> {
        let ns = self.clone();
        let stream = run_inside(ns, move || {
            let stream = std::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
            stream.set_nonblocking(true)?;
            Ok(stream)
        })
        .await?;
        TcpStream::from_std(stream)
    }

    /// Listens on `127.0.0.1:port` inside the namespace.
    pub async fn listen(self: &Arc<Self>, port: u16) -> std::io::Result<TcpListener> {
        let ns = self.clone();
        let listener = run_inside(ns, move || {
            let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))?;
            listener.set_nonblocking(true)?;
            Ok(listener)
        })
        .await?;
        TcpListener::from_std(listener)
    }
}

/// Runs `f` on a new thread that first enters `ns`; the thread ends with `f`.
async fn run_inside<T: Send + 'static>(
    ns: Arc<NetNs>,
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("olmpack-netns".into())
        .spawn(move || {
            let _ = tx.send(enter(ns.raw_fd()).and_then(|()| f()));
        })?;
    rx.await
        .map_err(|_| std::io::Error::other("the namespace thread ended without an answer"))?
}

/// Runs `f` on a new thread and waits for it (for calls that change the thread's namespace).
fn on_new_thread<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    std::thread::Builder::new()
        .name("olmpack-netns".into())
        .spawn(f)?
        .join()
        .map_err(|_| std::io::Error::other("the namespace thread panicked"))?
}

#[allow(unsafe_code)]
fn unshare_net() -> std::io::Result<()> {
    // SAFETY: unshare(2) changes only this thread's network namespace; no memory is shared.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Enters the network namespace `fd` (the calling thread only). Async-signal-safe: also
/// called between fork and exec.
#[allow(unsafe_code)]
pub(crate) fn enter(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: setns(2) on a descriptor we own; it changes only the calling thread.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Brings the `lo` interface of the calling thread's namespace up. (The request numbers are
/// cast to `Ioctl`: glibc's ioctl takes an unsigned long, musl's an int.)
#[allow(unsafe_code, clippy::unnecessary_cast)]
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: a datagram socket for two interface ioctls on a zeroed, NUL-terminated ifreq;
    // the socket is closed before returning.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let mut result = libc::ioctl(sock, libc::SIOCGIFFLAGS as libc::Ioctl, &mut req);
        if result == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            result = libc::ioctl(sock, libc::SIOCSIFFLAGS as libc::Ioctl, &req);
        }
        let err = std::io::Error::last_os_error();
        libc::close(sock);
        if result != 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// Where an operator process listens, and how olmpack reaches it: in a namespace of its own
/// on 9443 (with its apiserver's ports relayed in), or on this machine's network on the port
/// it is told. Relays stop when it drops.
#[derive(Debug)]
pub struct ProcessNetwork {
    ns: Option<Arc<NetNs>>,
    port: u16,
    relays: Vec<JoinHandle<()>>,
}

impl Drop for ProcessNetwork {
    fn drop(&mut self) {
        self.relays.iter().for_each(JoinHandle::abort);
    }
}

impl ProcessNetwork {
    /// This machine's network: the process listens on `port` (told as
    /// `$OLMPACK_WEBHOOK_PORT`) on 127.0.0.1 or every interface.
    pub fn shared(port: u16) -> Self {
        Self {
            ns: None,
            port,
            relays: Vec::new(),
        }
    }

    /// A private namespace for a process whose kubeconfig (if any) names only loopback
    /// servers, with those servers relayed into it; otherwise (or when namespaces cannot be
    /// made here) the shared network on `shared_port`, with the reason.
    pub async fn for_process(
        kubeconfig: Option<&Path>,
        shared_port: u16,
    ) -> (Self, Option<String>) {
        let shared = |why: String| (Self::shared(shared_port), Some(why));
        let ports = match kubeconfig.map(loopback_server_ports).transpose() {
            Ok(ports) => ports.unwrap_or_default(),
            Err(why) => return shared(why),
        };
        let ns = match NetNs::new() {
            Ok(ns) => ns,
            Err(err) => {
                return shared(format!(
                    "olmpack may not create network namespaces here ({err}; it needs root or \
                     CAP_SYS_ADMIN), so the process shares this machine's network and must \
                     listen on $OLMPACK_WEBHOOK_PORT"
                ));
            }
        };
        let mut network = Self {
            ns: Some(ns.clone()),
            port: CONTROLLER_RUNTIME_WEBHOOK_PORT,
            relays: Vec::new(),
        };
        for port in ports {
            match ns.listen(port).await {
                Ok(listener) => network.relays.push(relay(listener, Target::Host(port))),
                Err(err) => {
                    return shared(format!(
                        "the apiserver's port {port} could not be relayed into the process's \
                         network namespace ({err})"
                    ));
                }
            }
        }
        (network, None)
    }

    /// The port the process is told to listen on (`$OLMPACK_WEBHOOK_PORT`).
    pub fn listen_port(&self) -> u16 {
        self.port
    }

    /// The namespace a process is started in (none: this machine's).
    pub fn namespace(&self) -> Option<&NetNs> {
        self.ns.as_deref()
    }

    /// Connects to the process's webhook port.
    pub async fn connect(&self) -> std::io::Result<TcpStream> {
        self.target().connect().await
    }

    /// Whether the process accepts connections on its webhook port.
    pub async fn accepting(&self) -> bool {
        self.connect().await.is_ok()
    }

    /// Relays `listener`'s connections to the process's webhook port for as long as this
    /// network lives.
    pub fn relay_in(&mut self, listener: TcpListener) {
        let task = relay(listener, self.target());
        self.relays.push(task);
    }

    fn target(&self) -> Target {
        match &self.ns {
            None => Target::Host(self.port),
            Some(ns) => Target::Inside(ns.clone()),
        }
    }
}

/// Where a relay connects: a port of this machine's loopback, or 9443 inside a namespace.
#[derive(Clone, Debug)]
enum Target {
    Host(u16),
    Inside(Arc<NetNs>),
}

impl Target {
    async fn connect(&self) -> std::io::Result<TcpStream> {
        match self {
            Target::Host(port) => TcpStream::connect((Ipv4Addr::LOCALHOST, *port)).await,
            Target::Inside(ns) => ns.connect(CONTROLLER_RUNTIME_WEBHOOK_PORT).await,
        }
    }
}

/// Relays every connection `listener` accepts to `target`, until the task is aborted.
fn relay(listener: TcpListener, target: Target) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                continue;
            };
            let target = target.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = target.connect().await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    })
}

/// The ports of the kubeconfig's servers, all of which must be on loopback (else why not).
fn loopback_server_ports(kubeconfig: &Path) -> Result<Vec<u16>, String> {
    let text = std::fs::read_to_string(kubeconfig).map_err(|err| {
        format!(
            "the kubeconfig {} is unreadable ({err})",
            kubeconfig.display()
        )
    })?;
    let config: Kubeconfig = serde_saphyr::from_str(&text).map_err(|err| {
        format!(
            "the kubeconfig {} is not valid ({err})",
            kubeconfig.display()
        )
    })?;
    let mut ports = Vec::new();
    for cluster in config.clusters {
        let server = cluster.cluster.server;
        match loopback_port(&server) {
            Some(port) => ports.push(port),
            None => {
                return Err(format!(
                    "the process's apiserver {server} is not on this machine's loopback, so it \
                     cannot be relayed into a network namespace; the process shares this \
                     machine's network and must listen on $OLMPACK_WEBHOOK_PORT"
                ));
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    Ok(ports)
}

/// The port of an `https://<loopback>:<port>` server URL.
fn loopback_port(server: &str) -> Option<u16> {
    let rest = server.strip_prefix("https://")?;
    let authority = rest.split('/').next()?;
    let addr: SocketAddr = authority.replace("localhost:", "127.0.0.1:").parse().ok()?;
    (addr.ip().is_loopback() && addr.ip() == IpAddr::V4(Ipv4Addr::LOCALHOST)).then_some(addr.port())
}

#[derive(serde::Deserialize)]
struct Kubeconfig {
    #[serde(default)]
    clusters: Vec<NamedCluster>,
}

#[derive(serde::Deserialize)]
struct NamedCluster {
    cluster: Cluster,
}

#[derive(serde::Deserialize)]
struct Cluster {
    server: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A namespace, or `None` where this machine refuses one (said loudly; a failure under
    /// `CI=true`, where the suite runs as root).
    fn namespace_or_not_run(test: &str) -> Option<Arc<NetNs>> {
        match NetNs::new() {
            Ok(ns) => Some(ns),
            Err(err) if std::env::var_os("CI").is_none() => {
                eprintln!("{test}: NOT RUN: no network namespace here ({err})");
                None
            }
            Err(err) => panic!("{test}: no network namespace under CI ({err})"),
        }
    }

    async fn echo_once(listener: TcpListener, reply: &'static [u8]) {
        let (mut stream, _) = listener.accept().await.unwrap();
        stream.write_all(reply).await.unwrap();
    }

    async fn read_all(mut stream: TcpStream) -> Vec<u8> {
        let mut out = Vec::new();
        stream.read_to_end(&mut out).await.unwrap();
        out
    }

    /// Two namespaces both listen on 9443, and each connection reaches its own.
    #[tokio::test]
    async fn two_namespaces_each_have_their_own_port_9443() {
        let test = "two_namespaces_each_have_their_own_port_9443";
        let (Some(a), Some(b)) = (namespace_or_not_run(test), namespace_or_not_run(test)) else {
            return;
        };
        let port = CONTROLLER_RUNTIME_WEBHOOK_PORT;
        let serve_a = tokio::spawn(echo_once(a.listen(port).await.unwrap(), b"a"));
        let serve_b = tokio::spawn(echo_once(b.listen(port).await.unwrap(), b"b"));
        assert_eq!(read_all(b.connect(port).await.unwrap()).await, b"b");
        assert_eq!(read_all(a.connect(port).await.unwrap()).await, b"a");
        serve_a.await.unwrap();
        serve_b.await.unwrap();
    }

    /// A process started in the namespace is in it, and reaches its kubeconfig's loopback
    /// server at the address the kubeconfig names (relayed out of the namespace).
    #[tokio::test]
    async fn a_process_runs_inside_and_reaches_its_apiserver_port() {
        let test = "a_process_runs_inside_and_reaches_its_apiserver_port";
        if namespace_or_not_run(test).is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let apiserver = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = apiserver.local_addr().unwrap().port();
        let kubeconfig = dir.path().join("kubeconfig");
        let text =
            format!("clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n");
        std::fs::write(&kubeconfig, text).unwrap();
        let (network, why) = ProcessNetwork::for_process(Some(&kubeconfig), 1).await;
        assert_eq!(why, None);
        assert_eq!(network.listen_port(), 9443);
        let ns = network.namespace().unwrap();
        let served = tokio::spawn(echo_once(apiserver, b"apiserver"));
        let inside = ns_arc(&network).connect(port).await.unwrap();
        assert_eq!(read_all(inside).await, b"apiserver");
        served.await.unwrap();

        let log = dir.path().join("log");
        let mut child = crate::process::ChildProcess::start_group_in(
            "readlink",
            Path::new("sh"),
            &["-c".to_owned(), "readlink /proc/self/ns/net".to_owned()],
            &[],
            &log,
            Some(ns),
        )
        .unwrap();
        let started = std::time::Instant::now();
        while child.check_running().is_ok() {
            assert!(started.elapsed().as_secs() < 10, "readlink did not exit");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        use std::os::unix::fs::MetadataExt as _;
        let inode = ns.file.metadata().unwrap().ino();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap().trim(),
            format!("net:[{inode}]")
        );
    }

    fn ns_arc(network: &ProcessNetwork) -> Arc<NetNs> {
        network.ns.clone().unwrap()
    }

    /// A kubeconfig naming a server elsewhere keeps the process on this machine's network,
    /// and says why.
    #[tokio::test]
    async fn a_remote_apiserver_keeps_the_shared_network() {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let text = "clusters:\n- name: c\n  cluster:\n    server: https://api.example.com:6443\n";
        std::fs::write(&kubeconfig, text).unwrap();
        let (network, why) = ProcessNetwork::for_process(Some(&kubeconfig), 4242).await;
        assert!(network.namespace().is_none());
        assert_eq!(network.listen_port(), 4242);
        assert_eq!(
            why.as_deref(),
            Some(
                "the process's apiserver https://api.example.com:6443 is not on this machine's \
                 loopback, so it cannot be relayed into a network namespace; the process shares \
                 this machine's network and must listen on $OLMPACK_WEBHOOK_PORT"
            )
        );
    }

    #[test]
    fn loopback_servers_are_recognised_by_their_port() {
        for (server, port) in [
            ("https://127.0.0.1:6443", Some(6443)),
            ("https://localhost:443/", Some(443)),
            ("https://127.0.0.1:38001/prefix", Some(38001)),
            ("https://10.0.0.1:6443", None),
            ("https://[::1]:6443", None),
            ("http://127.0.0.1:8080", None),
            ("https://api.example.com:6443", None),
        ] {
            assert_eq!(loopback_port(server), port, "{server}");
        }
    }
}
