//! `olmpack bundle …`: generate bundles from the release plan, validate any bundle.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use olmpack::bundle::generate::{self, GenerateError};
use olmpack::bundle::{load, validate};
use olmpack::upgrade::olm::platform::Platform;
use olmpack_model::openshift::OpenShiftRelease;
use olmpack_model::plan;
use olmpack_model::report::{OutputFormat, Report};
use olmpack_oci::input::{Limits, Policy};

use super::CmdResult;

#[derive(Debug, clap::Subcommand)]
pub enum BundleCommand {
    /// Generate bundle/<version>/ for every release of the plan, validate each, and replace
    /// the output directory in one step (nothing is written when anything fails).
    ///
    /// createdAt comes from the plan or SOURCE_DATE_EPOCH, never the clock: the output is
    /// byte-identical on every run.
    ///
    /// cert-manager objects in the manifests (kubebuilder's dist/install.yaml): webhook
    /// serving Certificates and their Issuers are left out, since OLM creates, mounts and
    /// rotates webhook certificates itself (info). Any other Certificate whose Secret a
    /// Deployment mounts (kubebuilder's metrics certificate) is an error unless the plan sets
    /// `certManagerCertificates: drop`: then it is left out with a warning, and the Secret's
    /// volume, its volumeMounts and the container args pointing into them (e.g.
    /// --metrics-cert-path) are removed from the Deployments, each removal named.
    ///
    /// A ClusterServiceVersion in the manifests (operator-sdk's bundle/manifests/ or `kustomize
    /// build config/manifests`) is imported: its install strategy becomes the deployments,
    /// RBAC and webhooks, and its metadata fills what the plan leaves unset (the plan wins;
    /// an info finding per field group taken). `helm template` output: Helm hooks are left out
    /// with a warning (test, delete, rollback) or refused (install, upgrade: OLM never runs
    /// them; the plan's `helmHooks: drop` leaves them out with a warning instead); the chart's
    /// own webhook certificate Secret is left out (info).
    Generate {
        /// The release plan.
        #[arg(long, default_value = plan::DEFAULT_PLAN_FILE)]
        plan: PathBuf,
        /// Output directory [default: the plan's `output.bundles`, `bundle` next to it].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write nothing; exit 1 with a diff if the output directory is not up to date.
        #[arg(long)]
        check: bool,
        /// Pin every image (relatedImages, containers, RELATED_IMAGE_* values) to the digest
        /// its registry serves now.
        #[arg(long)]
        pin_digests: bool,
        #[command(flatten)]
        net: super::image::NetArgs,
    },
    /// Validate a bundle directory, or a directory of bundle directories.
    ///
    /// Exit codes: 0 no errors (warnings allowed), 1 errors found, 2 the bundle could not be
    /// read at all.
    Validate {
        /// A bundle (with manifests/ and metadata/) or a directory of bundles.
        dir: PathBuf,
        /// Report format.
        #[arg(long, short, value_parser = super::choice::<OutputFormat>(), default_value = "text")]
        output: OutputFormat,
        /// Kubernetes version the bundle must install on: APIs removed by then are errors.
        #[arg(long, value_name = "MAJOR.MINOR", default_value = "1.37", value_parser = parse_kube_version)]
        kube_version: (u64, u64),
        /// Apply OperatorHub's publishing rules strictly (operatorhub/ findings become errors).
        #[arg(long)]
        operatorhub: bool,
        /// Treat every warning as an error.
        #[arg(long)]
        strict: bool,
        /// Judge OpenShift's own version gates against this release (`openshift-4.N`, or
        /// `openshift`: the release olmpack pins): `openshift/catalog` when the bundle's
        /// com.redhat.openshift.versions leaves 4.N out of the releases whose catalogs carry
        /// it, `openshift/versions` when that value is not one Red Hat's pipeline reads, and
        /// `openshift/max-version` when its olm.maxOpenShiftVersion makes OpenShift's OLM block
        /// the cluster's upgrade to 4.(N+1). All are warnings: nobody refuses the bundle.
        #[arg(long, value_name = "PLATFORM", value_parser = parse_openshift)]
        platform: Option<OpenShiftRelease>,
    },
}

/// `--platform` of `bundle validate`: an OpenShift release (Kubernetes has `--kube-version`).
fn parse_openshift(text: &str) -> Result<OpenShiftRelease, String> {
    let platform: Platform = text.parse()?;
    platform.as_openshift().ok_or_else(|| {
        format!(
            "{text:?}: bundle validate judges only OpenShift releases by --platform (openshift, openshift-4.N); name a Kubernetes version with --kube-version"
        )
    })
}

fn parse_kube_version(s: &str) -> Result<(u64, u64), String> {
    let s = s.trim_start_matches('v');
    let mut parts = s.split('.');
    match (parts.next().map(str::parse), parts.next().map(str::parse)) {
        (Some(Ok(major)), Some(Ok(minor))) => Ok((major, minor)),
        _ => Err(format!("{s:?} is not MAJOR.MINOR (e.g. 1.33)")),
    }
}

pub fn run(cmd: BundleCommand, policy: &Policy) -> CmdResult {
    match cmd {
        BundleCommand::Generate {
            plan,
            out,
            check,
            pin_digests,
            net,
        } => generate(&plan, out, check, pin_digests.then_some(&net), policy),
        BundleCommand::Validate {
            dir,
            output,
            kube_version,
            operatorhub,
            strict,
            platform,
        } => validate_cmd(
            &dir,
            output,
            &policy.limits,
            validate::Options {
                kube_version,
                operatorhub,
                strict,
                openshift: platform,
            },
        ),
    }
}

fn generate(
    plan_path: &Path,
    out: Option<PathBuf>,
    check: bool,
    pin_digests: Option<&super::image::NetArgs>,
    policy: &Policy,
) -> CmdResult {
    let loaded = olmpack::plan::load(plan_path, policy)?;
    let out = out.unwrap_or_else(|| loaded.bundles_dir());
    let options = super::generate_options(pin_digests, policy)?;
    let generated = match generate::generate(&loaded, &options) {
        Ok(generated) => generated,
        Err(GenerateError::Invalid(findings)) => {
            return Ok(super::report_invalid(plan_path, findings));
        }
        Err(other) => return Err(other.into()),
    };
    super::report_warnings(&generated.reports);
    if check {
        let drifts = generated.tree.check_against(&out, &policy.limits)?;
        if drifts.is_empty() {
            println!(
                "{} is up to date ({} files)",
                out.display(),
                generated.tree.len()
            );
            return Ok(ExitCode::SUCCESS);
        }
        for drift in &drifts {
            println!("{drift}");
        }
        eprintln!(
            "olmpack: {} is stale ({} difference(s)); run `olmpack bundle generate`",
            out.display(),
            drifts.len()
        );
        return Ok(ExitCode::from(1));
    }
    generated.tree.write_to(&out)?;
    println!(
        "wrote {} bundle(s), {} files, to {}",
        generated.reports.len(),
        generated.tree.len(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Validates `dir` as one bundle, or each subdirectory that looks like a bundle.
fn validate_cmd(
    dir: &Path,
    output: OutputFormat,
    limits: &Limits,
    options: validate::Options,
) -> CmdResult {
    let bundles: Vec<PathBuf> =
        if dir.join("manifests").is_dir() || dir.join("metadata").is_dir() || !dir.is_dir() {
            vec![dir.to_path_buf()]
        } else {
            let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("manifests").is_dir() || p.join("metadata").is_dir())
                .collect();
            subdirs.sort();
            if subdirs.is_empty() {
                vec![dir.to_path_buf()]
            } else {
                subdirs
            }
        };
    let mut combined = Report::new(dir.display().to_string());
    for bundle_dir in &bundles {
        let loaded = load::load_dir_with(bundle_dir, limits)?;
        let report = validate::validate(&loaded, &options);
        let prefix = bundle_dir
            .strip_prefix(dir)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        combined.extend(report.findings.into_iter().map(|mut f| {
            if !prefix.as_os_str().is_empty() {
                f.file = Some(prefix.join(f.file.unwrap_or_default()));
            }
            f
        }));
    }
    combined.normalize();
    print!("{}", combined.format(output));
    Ok(ExitCode::from(combined.exit_code()))
}
