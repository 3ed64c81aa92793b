//! `olmpack catalog …`: File-Based Catalogs — validate, render, templates, graphs, upgrade paths.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use olmpack::catalog::declcfg::DeclarativeConfig;
use olmpack::catalog::graph::{self, GraphFormat};
use olmpack::catalog::load::{load_dir, load_stream};
use olmpack::catalog::model::Model;
use olmpack::catalog::render::{MigrateLevel, RenderOptions, render_dir};
use olmpack::catalog::stream::{Blob, render_refs};
use olmpack::catalog::template::{self, DirResolver};
use olmpack::catalog::upgrade;
use olmpack::catalog::validate::{ValidateOptions, validate_dir};
use olmpack::catalog::write::{self, Format};
use olmpack::report::OutputFormat;

use super::CmdResult;

#[derive(Debug, clap::Subcommand)]
pub enum CatalogCommand {
    /// Write the catalog for the release plan: one directory per package, deterministic; the
    /// bundles are generated in memory to render it (see `olmpack generate` for both).
    Generate {
        /// The release plan.
        #[arg(long, default_value = olmpack::plan::DEFAULT_PLAN_FILE)]
        plan: PathBuf,
        /// Output directory [default: `catalog` next to the plan].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write nothing; exit 1 with a diff if the output directory is not up to date.
        #[arg(long)]
        check: bool,
    },
    /// Validate a catalog directory: everything `opm validate` checks, plus upgrade-graph checks.
    Validate {
        /// The catalog directory.
        dir: PathBuf,
        #[arg(long, short, value_enum, default_value_t)]
        output: OutputFormat,
        /// Fail on warnings too (skipRange and reachability problems opm accepts).
        #[arg(long)]
        strict: bool,
        /// Report, as infos, every bundle whose OLM v0 and OLM v1 upgrade paths differ.
        #[arg(long)]
        upgrade_paths: bool,
    },
    /// Render bundle directories to `olm.bundle` blobs and catalog directories to their
    /// normalised content (as `opm render DIR` does).
    Render {
        /// Bundle or catalog directories, or bundle image references (pulled from their
        /// registry, credentials from the usual auth files).
        #[arg(required = true)]
        refs: Vec<PathBuf>,
        #[arg(long, short, value_enum, default_value_t)]
        output: Format,
        /// Migrations to run (as opm's `--migrate-level`).
        #[arg(long, value_enum, default_value_t)]
        migrate_level: MigrateLevel,
        /// Image reference to record for the bundle (only with one directory).
        #[arg(long)]
        image: Option<String>,
    },
    /// Expand an `olm.template.basic` or `olm.semver` template.
    Template {
        /// The template file (`-` for stdin).
        file: PathBuf,
        /// Map a bundle image reference to a local bundle directory: `IMAGE=DIR` (repeatable).
        #[arg(long = "bundle", value_name = "IMAGE=DIR")]
        bundles: Vec<String>,
        #[arg(long, short, value_enum, default_value_t)]
        output: Format,
        #[arg(long, value_enum, default_value_t)]
        migrate_level: MigrateLevel,
    },
    /// Draw the upgrade graph (mermaid or Graphviz dot).
    Graph {
        /// The catalog directory.
        dir: PathBuf,
        #[arg(long, value_enum, default_value_t)]
        format: GraphFormat,
        /// Only this package.
        #[arg(long)]
        package: Option<String>,
    },
    /// The upgrade path every bundle would follow under OLM v0 and OLM v1.
    UpgradePaths {
        /// The catalog directory.
        dir: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: CatalogCommand) -> CmdResult {
    match cmd {
        CatalogCommand::Generate { plan, out, check } => {
            super::release::catalog_only(&plan, out, check)
        }
        CatalogCommand::Validate {
            dir,
            output,
            strict,
            upgrade_paths,
        } => {
            let (report, _) = validate_dir(
                &dir,
                ValidateOptions {
                    strict,
                    upgrade_paths,
                },
            )?;
            print!("{}", report.render(output));
            Ok(ExitCode::from(report.exit_code()))
        }
        CatalogCommand::Render {
            refs,
            output,
            migrate_level,
            image,
        } => {
            if image.is_some() && refs.len() > 1 {
                return Err("--image needs exactly one bundle directory".into());
            }
            let names: Vec<String> = refs
                .iter()
                .map(|r| r.to_string_lossy().into_owned())
                .collect();
            let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            render_refs(
                &names,
                jobs,
                output,
                |i| render_ref(&refs[i], migrate_level, image.as_deref()),
                &mut out,
            )?;
            Ok(ExitCode::SUCCESS)
        }
        CatalogCommand::Template {
            file,
            bundles,
            output,
            migrate_level,
        } => {
            let text = if file.as_os_str() == "-" {
                let mut s = String::new();
                std::io::stdin().read_to_string(&mut s)?;
                s
            } else {
                std::fs::read_to_string(&file)
                    .map_err(|e| format!("failed to read {}: {e}", file.display()))?
            };
            let mut resolver = DirResolver {
                migrate: migrate_level,
                ..DirResolver::default()
            };
            for pair in bundles {
                let (image, dir) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("--bundle {pair:?} is not IMAGE=DIR"))?;
                resolver.dirs.insert(image.to_owned(), PathBuf::from(dir));
            }
            let cfg: DeclarativeConfig = template::render_any(&text, &resolver)?;
            print!("{}", write::to_string(&cfg, output)?);
            Ok(ExitCode::SUCCESS)
        }
        CatalogCommand::Graph {
            dir,
            format,
            package,
        } => {
            let model = load_model(&dir)?;
            if let Some(p) = &package
                && !model.packages.contains_key(p)
            {
                return Err(format!("package {p:?} is not in {}", dir.display()).into());
            }
            print!("{}", graph::render(&model, package.as_deref(), format));
            Ok(ExitCode::SUCCESS)
        }
        CatalogCommand::UpgradePaths { dir, json } => {
            let model = load_model(&dir)?;
            let paths: Vec<_> = model
                .packages
                .values()
                .flat_map(upgrade::package_paths)
                .collect();
            if json {
                println!("{}", serde_json::to_string_pretty(&paths)?);
            } else {
                print!("{}", upgrade::render_text(&paths));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Why one reference of `catalog render` could not be rendered.
#[derive(Debug, thiserror::Error)]
enum RefError {
    #[error(transparent)]
    Bundle(#[from] olmpack::catalog::render::RenderError),
    #[error("{0}")]
    Other(String),
}

/// One reference as `opm render` treats it: a path that does not exist is an image; a
/// directory with `manifests/` and `metadata/` directories is a bundle; any other directory
/// is a catalog.
fn render_ref(
    reference: &std::path::Path,
    migrate: MigrateLevel,
    image: Option<&str>,
) -> Result<Vec<Blob>, RefError> {
    let Ok(meta) = std::fs::metadata(reference) else {
        let bundle = render_image(&reference.to_string_lossy(), migrate)
            .map_err(|e| RefError::Other(error_chain(&*e)))?;
        return Ok(vec![Blob::Bundle(bundle)]);
    };
    if !meta.is_dir() {
        return Err(RefError::Other(format!(
            "{} is a file; only bundle and catalog directories and images can be rendered \
             (sqlite databases are not supported)",
            reference.display()
        )));
    }
    if is_bundle_dir(reference) {
        let options = RenderOptions {
            image: image.unwrap_or_default().to_owned(),
            migrate,
        };
        return Ok(vec![Blob::Bundle(render_dir(reference, &options)?)]);
    }
    let loaded = load_dir(reference).map_err(|e| RefError::Other(error_chain(&e)))?;
    if let Some(p) = loaded.problems.first() {
        return Err(RefError::Other(format!(
            "{}: {}",
            p.file.display(),
            p.message
        )));
    }
    let mut cfg = loaded.config;
    olmpack::catalog::render::normalize_catalog(&mut cfg, migrate);
    let mut blobs: Vec<Blob> = Vec::with_capacity(cfg.len());
    blobs.extend(cfg.packages.into_iter().map(Blob::Package));
    blobs.extend(cfg.channels.into_iter().map(Blob::Channel));
    blobs.extend(cfg.bundles.into_iter().map(Blob::Bundle));
    blobs.extend(cfg.others.into_iter().map(Blob::Other));
    blobs.extend(cfg.deprecations.into_iter().map(Blob::Deprecation));
    Ok(blobs)
}

/// opm's test for a bundle directory: `manifests` and `metadata` entries that are
/// directories themselves (a symlink does not count).
fn is_bundle_dir(dir: &std::path::Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let (mut manifests, mut metadata) = (false, false);
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            match e.file_name().to_str() {
                Some("manifests") => manifests = true,
                Some("metadata") => metadata = true,
                _ => {}
            }
        }
    }
    manifests && metadata
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Loads a catalog directory (or a single file) into the semantic model; load and model
/// problems do not stop drawing — `validate` reports them.
fn load_model(path: &std::path::Path) -> Result<Model, Box<dyn std::error::Error + Send + Sync>> {
    let loaded = if path.is_file() {
        let bytes = std::fs::read(path)?;
        load_stream(path, &bytes)
    } else {
        load_dir(path)?
    };
    Ok(Model::from_config(loaded.config).0)
}

/// Pulls a bundle image and renders it as `opm render <image>` does.
fn render_image(
    reference: &str,
    migrate: MigrateLevel,
) -> Result<olmpack::catalog::declcfg::Bundle, Box<dyn std::error::Error + Send + Sync>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let files = runtime.block_on(olmpack::image::pull::pull_files(
        reference,
        &olmpack::image::RegistryAccess::default(),
    ))?;
    if !files.keys().any(|p| p.starts_with("manifests")) {
        return Err(
            format!("{reference} is not a bundle image: it has no /manifests directory").into(),
        );
    }
    Ok(olmpack::catalog::render::render_files(
        std::path::Path::new(reference),
        &files,
        &RenderOptions {
            image: reference.to_owned(),
            migrate,
        },
    )?)
}
