//! `olmpack image …`: build bundle and catalog images into OCI layouts, push them, resolve
//! tags to digests. Digests go to stdout, progress and errors to stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use olmpack_oci::image::auth::AuthFiles;
use olmpack_oci::image::layout::{Descriptor, Platform};
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::{
    auth::Credentials, auth::Secret, build::BuildOptions, operator::OperatorBinary,
    operator::OperatorOptions, registry::RegistryAccess,
};

use super::CmdResult;
use olmpack_oci::input::{Limits, Policy};

#[derive(Debug, clap::Subcommand)]
pub enum ImageCommand {
    /// Build a bundle or catalog image into an OCI image layout (no container engine needed).
    #[command(subcommand)]
    Build(Box<BuildCommand>),
    /// Push an image from an OCI layout to a registry; prints the pushed digest.
    Push {
        /// The layout directory, optionally with the tag of one image in it: LAYOUT[:TAG].
        source: String,
        /// Where to push: host/repository[:tag] (the tag defaults to `latest`).
        target: String,
        #[command(flatten)]
        registry: Box<RegistryArgs>,
    },
    /// Print the digest an image reference resolves to now.
    Resolve {
        /// An image reference: host/repository:tag or host/repository@sha256:….
        reference: String,
        #[command(flatten)]
        registry: Box<RegistryArgs>,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum BuildCommand {
    /// A registry+v1 bundle directory (manifests/, metadata/, tests/scorecard/).
    Bundle {
        /// The bundle directory.
        dir: PathBuf,
        #[command(flatten)]
        output: BuildArgs,
        #[command(flatten)]
        platform: ContentArgs,
    },
    /// An operator image: static binaries (one per platform) on no base (a non-root user
    /// 65532 and nothing else) or on a base image named by digest.
    Operator {
        /// The operator binary; repeat once per platform, in the order of --platform.
        #[arg(long = "binary", value_name = "PATH", required = true)]
        binaries: Vec<PathBuf>,
        /// The platforms of the binaries, as OS/ARCH[/VARIANT], comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "linux/amd64", value_parser = parse_platform)]
        platform: Vec<Platform>,
        /// Build on this image (repository@sha256:…) instead of on nothing.
        #[arg(long, value_name = "REF")]
        base: Option<String>,
        /// Where the binary lands in the image; the image's entrypoint.
        #[arg(long, default_value = olmpack_oci::image::operator::DEFAULT_ENTRYPOINT)]
        entrypoint: String,
        #[command(flatten)]
        output: BuildArgs,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// A File-Based Catalog directory, placed at /configs.
    Catalog {
        /// The catalog directory.
        dir: PathBuf,
        #[command(flatten)]
        output: BuildArgs,
        #[command(flatten)]
        platform: ContentArgs,
        /// Build on this image (e.g. quay.io/operator-framework/opm:v1.74.0), keeping its
        /// layers and every platform of an index; runs `opm serve /configs`.
        #[arg(long, value_name = "REF")]
        base: Option<String>,
        #[command(flatten)]
        registry: RegistryArgs,
    },
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The OCI image layout directory to write (replaced whole if it is a layout already).
    #[arg(long, value_name = "OUT")]
    layout: PathBuf,
    /// Name the image in the layout (`org.opencontainers.image.ref.name`).
    #[arg(long)]
    tag: Option<String>,
    /// File mtimes and the image's creation time, in seconds since the Unix epoch (empty
    /// means 0).
    #[arg(long, env = "SOURCE_DATE_EPOCH", default_value = "0", value_parser = parse_epoch)]
    source_date_epoch: u64,
}

/// Settings of images built from a directory (bundle, catalog).
#[derive(Debug, clap::Args)]
pub struct ContentArgs {
    /// The platform recorded for images without a base, as OS/ARCH[/VARIANT].
    #[arg(long, default_value = "linux/amd64", value_parser = parse_platform)]
    platform: Platform,
    /// Package the directory even if olmpack cannot load it (by default a bundle or catalog
    /// with a file that does not parse is refused, exit 1, so no image ships content that
    /// `validate` rejects as unreadable).
    #[arg(long)]
    as_is: bool,
}

#[derive(Debug, clap::Args)]
pub struct RegistryArgs {
    /// Registry user name; without it, credentials come from the Docker/Podman auth files
    /// (REGISTRY_AUTH_FILE, DOCKER_CONFIG, ~/.docker/config.json).
    #[arg(long, env = "OLMPACK_REGISTRY_USERNAME", hide_env_values = true)]
    username: Option<String>,
    /// Read the registry password (or a token, with --username) from stdin.
    #[arg(long, requires = "username")]
    password_stdin: bool,
    /// The registry password (prefer --password-stdin).
    #[arg(
        long,
        env = "OLMPACK_REGISTRY_PASSWORD",
        hide_env_values = true,
        hide = true
    )]
    password: Option<String>,
    /// Allow plain HTTP to a registry that is not on a loopback address.
    #[arg(long)]
    insecure_http: bool,
    #[command(flatten)]
    net: NetArgs,
}

/// How patiently olmpack talks to registries: every command that reads or writes one.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct NetArgs {
    /// Tries per registry request before giving up.
    #[arg(long, default_value_t = 6)]
    attempts: u32,
    /// Seconds a registry response may stall (a manifest, config or token answer: may take
    /// in all) before it is retried.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Seconds one registry operation (resolving, pulling or pushing one image) may take in
    /// all, retries and pauses included.
    #[arg(long, default_value_t = 600)]
    deadline: u64,
}

impl NetArgs {
    /// Registry access with these settings and credentials from the auth files.
    pub fn access(&self) -> RegistryAccess {
        let mut access = RegistryAccess::default();
        self.apply(&mut access);
        access
    }

    fn apply(&self, access: &mut RegistryAccess) {
        access.read_timeout = Duration::from_secs(self.timeout.max(1));
        access.deadline = Duration::from_secs(self.deadline.max(1));
        access.retry.attempts = self.attempts.max(1);
    }
}

pub(super) fn parse_epoch(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(0);
    }
    text.parse()
        .map_err(|_| format!("{text:?} is not a number of seconds since the Unix epoch"))
}

pub(super) fn parse_platform(text: &str) -> Result<Platform, String> {
    let parts: Vec<&str> = text.split('/').collect();
    match parts.as_slice() {
        [os, arch] | [os, arch, _] if !os.is_empty() && !arch.is_empty() => Ok(Platform {
            os: (*os).to_owned(),
            architecture: (*arch).to_owned(),
            variant: parts.get(2).map(|v| (*v).to_owned()),
            os_version: None,
            os_features: None,
        }),
        _ => Err(format!("{text:?} is not OS/ARCH[/VARIANT]")),
    }
}

impl RegistryArgs {
    pub(super) fn access(&self) -> Result<RegistryAccess, olmpack::refusal::CommandError> {
        let credentials = match &self.username {
            None => Credentials::FromAuthFiles,
            Some(username) => {
                let password = if self.password_stdin {
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line)?;
                    line.trim_end_matches(['\r', '\n']).to_owned()
                } else {
                    self.password.clone().ok_or_else(|| {
                        crate::cli::Failure(
                            "--username needs --password-stdin or OLMPACK_REGISTRY_PASSWORD".into(),
                        )
                    })?
                };
                Credentials::Basic {
                    username: username.clone(),
                    password: Secret::new(password),
                }
            }
        };
        let mut access = RegistryAccess {
            credentials,
            auth_files: AuthFiles::from_env(),
            insecure_http: self.insecure_http,
            ..Default::default()
        };
        self.net.apply(&mut access);
        Ok(access)
    }
}

impl BuildArgs {
    /// The layout directory to write.
    pub(super) fn layout(&self) -> &std::path::Path {
        &self.layout
    }

    pub(super) fn options(&self, platform: &Platform, limits: &Limits) -> BuildOptions {
        BuildOptions {
            source_date_epoch: self.source_date_epoch,
            tag: self.tag.clone(),
            platform: platform.clone(),
            limits: *limits,
        }
    }
}

/// Runs one `olmpack image` command.
pub fn run(cmd: ImageCommand, policy: &Policy) -> CmdResult {
    let limits = &policy.limits;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let progress = Progress::auto();
    match cmd {
        ImageCommand::Build(build) => {
            let root = run_build(*build, &runtime, &progress, limits)?;
            println!("{}", root.digest);
        }
        ImageCommand::Push {
            source,
            target,
            registry,
        } => {
            let access = registry.access()?;
            let report = runtime.block_on(olmpack_oci::image::push::push_layout(
                &source, &target, &access, &progress,
            ))?;
            eprintln!(
                "pushed {} ({} blob(s) sent, {} already there)",
                report.pinned, report.blobs_pushed, report.blobs_present
            );
            println!("{}", report.digest);
        }
        ImageCommand::Resolve {
            reference,
            registry,
        } => {
            let access = registry.access()?;
            let digest = runtime.block_on(olmpack_oci::image::resolve::resolve_digest(
                &reference, &access,
            ))?;
            println!("{digest}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An error of a command step, for `?` into [`CmdResult`].
type StepError = olmpack::refusal::CommandError;

/// Builds the image `cmd` asks for; returns the root of its layout.
fn run_build(
    cmd: BuildCommand,
    runtime: &tokio::runtime::Runtime,
    progress: &Progress,
    limits: &Limits,
) -> Result<Descriptor, StepError> {
    Ok(match cmd {
        BuildCommand::Bundle {
            dir,
            output,
            platform,
        } => {
            if !platform.as_is && dir.is_dir() {
                check_bundle_loads(&dir, limits)?;
            }
            let options = output.options(&platform.platform, limits);
            olmpack::image::build::build_bundle_image(&dir, &output.layout, &options)?
        }
        BuildCommand::Catalog {
            dir,
            output,
            platform,
            base,
            registry,
        } => {
            if !platform.as_is && dir.is_dir() {
                check_catalog_loads(&dir, limits)?;
            }
            let access = registry.access()?;
            runtime.block_on(olmpack::image::build::build_catalog_image(
                &dir,
                &output.layout,
                &output.options(&platform.platform, limits),
                base.as_deref().map(|b| (b, &access)),
                progress,
            ))?
        }
        BuildCommand::Operator {
            binaries,
            platform,
            base,
            entrypoint,
            output,
            registry,
        } => {
            let binaries = pair_binaries(binaries, platform)?;
            let options = OperatorOptions {
                build: output.options(&Platform::linux_amd64(), limits),
                entrypoint,
            };
            let access = registry.access()?;
            runtime.block_on(olmpack_oci::image::operator::build_operator_image(
                &binaries,
                &output.layout,
                &options,
                base.as_deref().map(|b| (b, &access)),
                progress,
            ))?
        }
    })
}

/// Each `--binary` with its `--platform`, in order; their counts must match.
fn pair_binaries(
    binaries: Vec<PathBuf>,
    platforms: Vec<Platform>,
) -> Result<Vec<OperatorBinary>, StepError> {
    if binaries.len() != platforms.len() {
        return Err(crate::cli::Failure(format!(
            "{} --binary for {} --platform; give one binary per platform, in the same order",
            binaries.len(),
            platforms.len()
        ))
        .into());
    }
    Ok(platforms
        .into_iter()
        .zip(binaries)
        .map(|(platform, path)| OperatorBinary { platform, path })
        .collect())
}

/// Refuses (exit 1) a bundle with a file olmpack cannot parse: its image would ship it.
fn check_bundle_loads(
    dir: &std::path::Path,
    limits: &Limits,
) -> Result<(), olmpack::refusal::CommandError> {
    let loaded = olmpack::bundle::load::load_dir_with(dir, limits)?;
    let lines: Vec<String> = loaded
        .problems
        .iter()
        .map(|p| format!("{}: {}", dir.join(&p.file).display(), p.message))
        .collect();
    refuse_unloadable(dir, &lines)
}

/// Refuses (exit 1) a catalog with a file olmpack cannot load: its image would ship it.
fn check_catalog_loads(
    dir: &std::path::Path,
    limits: &Limits,
) -> Result<(), olmpack::refusal::CommandError> {
    let options = olmpack::catalog::load::LoadOptions {
        limits: *limits,
        ..Default::default()
    };
    let loaded = olmpack::catalog::load::load_dir_with(dir, options)?;
    let lines: Vec<String> = loaded
        .problems
        .iter()
        .map(|p| match p.index {
            Some(i) => format!(
                "{}: document {i}: {}",
                dir.join(&p.file).display(),
                p.message
            ),
            None => format!("{}: {}", dir.join(&p.file).display(), p.message),
        })
        .collect();
    refuse_unloadable(dir, &lines)
}

fn refuse_unloadable(
    dir: &std::path::Path,
    lines: &[String],
) -> Result<(), olmpack::refusal::CommandError> {
    if lines.is_empty() {
        return Ok(());
    }
    Err(super::Invalid(format!(
        "{}: not packaged, {} file problem(s) (fix them, or pass --as-is to package the directory anyway):\n  {}",
        dir.display(),
        lines.len(),
        lines.join("\n  ")
    ))
    .into())
}
