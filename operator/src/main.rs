//! `webapp-operator`: `run` the operator, or print a release's `manifests`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use webapp_operator::controller::client::ApiLimits;
use webapp_operator::controller::{self, LeaderElection, Settings, crash};
use webapp_operator::manifests;
use webapp_operator::releases::{OperatorRelease, RELEASES};
use webapp_operator::run::{Options, TlsFiles};
use webapp_operator::webhook::server::WebhookServer;
use webapp_operator::webhook::tls_reload::ReloadingCert;

#[derive(Debug, Parser)]
#[command(
    name = "webapp-operator",
    version,
    about = "The WebApp reference operator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the operator: controller (behind leader election), webhooks, metrics.
    Run(RunArgs),
    /// Serve only the webhooks (conversion, validation, defaulting) on 127.0.0.1, no cluster
    /// access: what `olmpack upgrade test --webhook-command` starts, with the certificate, key
    /// and port in its OLMPACK_WEBHOOK_* environment variables.
    Webhook(WebhookArgs),
    /// Print a release's deploy manifests as a multi-document YAML stream.
    Manifests {
        /// Release to print (default: the newest).
        #[arg(long)]
        release: Option<String>,
        /// Namespace the operator is deployed to.
        #[arg(long, default_value = manifests::DEFAULT_NAMESPACE)]
        namespace: String,
        /// Print every release version, oldest first, one per line, and exit.
        #[arg(long, conflicts_with = "release")]
        list_releases: bool,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Kubeconfig file; default: in-cluster config, else $KUBECONFIG or ~/.kube/config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Directory with the webhook serving certificate `apiserver.crt` and key `apiserver.key`
    /// (where OLM mounts them). Without it (and without --tls-cert-file) no webhook server runs.
    #[arg(long)]
    cert_dir: Option<PathBuf>,
    /// Serving certificate file (overrides --cert-dir).
    #[arg(long, requires = "tls_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// Serving key file (overrides --cert-dir).
    #[arg(long, requires = "tls_cert_file")]
    tls_key_file: Option<PathBuf>,
    /// How often the certificate files are checked for rotation, in seconds.
    #[arg(long, default_value_t = 10)]
    cert_poll_seconds: u64,
    /// Address of the HTTPS webhook server.
    #[arg(long, default_value = "0.0.0.0")]
    bind_address: IpAddr,
    #[arg(long, default_value_t = manifests::WEBHOOK_PORT as u16)]
    webhook_port: u16,
    /// Port of /metrics, /healthz, /readyz (plain HTTP).
    #[arg(long, default_value_t = manifests::METRICS_PORT as u16)]
    metrics_port: u16,
    /// The operator's namespace (Lease, routing entries).
    #[arg(long, env = "POD_NAMESPACE", default_value = manifests::DEFAULT_NAMESPACE)]
    namespace: String,
    /// Watch WebApps only in this namespace (default: all namespaces).
    #[arg(long)]
    watch_namespace: Option<String>,
    /// Elect a leader on a Lease; only the leader reconciles.
    #[arg(long)]
    leader_elect: bool,
    /// Identity in the Lease (default: $POD_NAME, else the host name and process id).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Lease duration in seconds.
    #[arg(long, default_value_t = 15)]
    lease_duration_seconds: u64,
    /// Renew this many seconds before the Lease expires.
    #[arg(long, default_value_t = 5)]
    lease_grace_seconds: u64,
    /// Reconciles running at once at most (further WebApps wait in the controller's queue).
    #[arg(long, default_value_t = controller::DEFAULT_CONCURRENCY, value_parser = clap::value_parser!(u16).range(1..))]
    concurrency: u16,
    /// Sustained API requests per second of the work client (the Lease has its own client).
    #[arg(long, default_value_t = ApiLimits::default().qps)]
    api_qps: f64,
    /// API requests the work client may send at once after an idle period.
    #[arg(long, default_value_t = ApiLimits::default().burst)]
    api_burst: u32,
    /// On SIGTERM, how long running reconciles may take to finish before they are abandoned
    /// (the Lease is released after).
    #[arg(long, default_value_t = controller::DEFAULT_SHUTDOWN_TIMEOUT.as_secs())]
    shutdown_timeout_seconds: u64,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Debug, clap::Args)]
struct WebhookArgs {
    /// Serving certificate file (PEM).
    #[arg(long, env = "OLMPACK_WEBHOOK_CERT_FILE")]
    tls_cert_file: PathBuf,
    /// Serving key file (PEM).
    #[arg(long, env = "OLMPACK_WEBHOOK_KEY_FILE")]
    tls_key_file: PathBuf,
    /// Port on --bind-address.
    #[arg(long, env = "OLMPACK_WEBHOOK_PORT")]
    port: u16,
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

async fn kube_config(path: Option<&PathBuf>) -> Result<kube::Config, Box<dyn std::error::Error>> {
    Ok(match path {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?
        }
        None => kube::Config::infer().await?,
    })
}

async fn terminated() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}

fn run(args: RunArgs) -> ExitCode {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    init_logging(args.log_format);
    let crash = match std::env::var(crash::CRASH_ENV) {
        Ok(value) => match value.parse() {
            Ok(point) => Some(point),
            Err(err) => return report(&err),
        },
        Err(_) => None,
    };
    let tls = match (&args.tls_cert_file, &args.tls_key_file, &args.cert_dir) {
        (Some(cert), Some(key), _) => Some((cert.clone(), key.clone())),
        (_, _, Some(dir)) => Some((dir.join("apiserver.crt"), dir.join("apiserver.key"))),
        _ => None,
    }
    .map(|(cert, key)| TlsFiles {
        cert,
        key,
        poll: Duration::from_secs(args.cert_poll_seconds.max(1)),
    });
    let identity = args.identity.clone().unwrap_or_else(|| {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        format!("{}-{}", host.trim(), std::process::id())
    });
    let options = Options {
        settings: Settings {
            operator_namespace: args.namespace.clone(),
            watch_namespace: args.watch_namespace.clone(),
            leader_election: args.leader_elect.then_some(LeaderElection {
                identity,
                duration_secs: args.lease_duration_seconds,
                grace_secs: args.lease_grace_seconds,
            }),
            crash,
            concurrency: args.concurrency,
            api_limits: ApiLimits {
                qps: args.api_qps,
                burst: args.api_burst,
            },
            shutdown_timeout: Duration::from_secs(args.shutdown_timeout_seconds),
        },
        webhook_addr: SocketAddr::new(args.bind_address, args.webhook_port),
        tls,
        metrics_addr: SocketAddr::new(args.bind_address, args.metrics_port),
        controller: true,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => return report(&err),
    };
    runtime.block_on(async move {
        let config = match kube_config(args.kubeconfig.as_ref()).await {
            Ok(config) => config,
            Err(err) => return report(err.as_ref()),
        };
        let running = match webapp_operator::run::start(options, config).await {
            Ok(running) => running,
            Err(err) => return report(&err),
        };
        tracing::info!(
            webhook = ?running.webhook_addr,
            metrics = %running.metrics_addr,
            "operator started"
        );
        match running.run_until(terminated()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => report(&err),
        }
    })
}

/// Serves the webhooks until SIGTERM or Ctrl-C.
fn webhook(args: WebhookArgs) -> ExitCode {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    init_logging(LogFormat::Text);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => return report(&err),
    };
    runtime.block_on(async move {
        let cert = match ReloadingCert::load(&args.tls_cert_file, &args.tls_key_file) {
            Ok(cert) => cert,
            Err(err) => return report(&err),
        };
        let watcher = cert.spawn_watcher(Duration::from_secs(10));
        let (shutdown, shutdown_rx) = tokio::sync::watch::channel(false);
        let addr = SocketAddr::new(args.bind_address, args.port);
        let metrics = std::sync::Arc::new(webapp_operator::metrics::Metrics::default());
        let server = match WebhookServer::start(addr, cert, metrics, shutdown_rx).await {
            Ok(server) => server,
            Err(err) => return report(&err),
        };
        tracing::info!(addr = %server.addr(), "webhook server started");
        terminated().await;
        let _ = shutdown.send(true);
        server.stopped().await;
        watcher.abort();
        ExitCode::SUCCESS
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(args),
        Command::Webhook(args) => webhook(args),
        Command::Manifests {
            release,
            namespace,
            list_releases,
        } => {
            if list_releases {
                for release in RELEASES {
                    println!("{}", release.version);
                }
                return ExitCode::SUCCESS;
            }
            let release = match release.as_deref() {
                None => OperatorRelease::latest(),
                Some(name) => match OperatorRelease::find(name) {
                    Some(r) => r,
                    None => {
                        eprintln!("error: unknown release {name}; known: {}", known());
                        return ExitCode::from(2);
                    }
                },
            };
            match manifests::to_yaml(release, &namespace) {
                Ok(yaml) => {
                    print!("{yaml}");
                    ExitCode::SUCCESS
                }
                Err(err) => report(&err),
            }
        }
    }
}

fn known() -> String {
    RELEASES
        .iter()
        .map(|r| r.version)
        .collect::<Vec<_>>()
        .join(", ")
}

fn report(err: &dyn std::error::Error) -> ExitCode {
    let mut message = format!("error: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    eprintln!("{message}");
    ExitCode::FAILURE
}
