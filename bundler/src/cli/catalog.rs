//! `olmpack catalog …`: File-Based Catalogs — validate, render, templates, graphs, upgrade paths.

use std::path::PathBuf;
use std::process::ExitCode;

use olmpack::catalog::declcfg::DeclarativeConfig;
use olmpack::catalog::graph::{self, GraphFormat};
use olmpack::catalog::load::{
    LoadOptions, LoadProblem, LoadedCatalog, for_each_file, load_dir_with, parse_file_noting,
};
use olmpack::catalog::model::{Model, for_each_package};
use olmpack::catalog::render::{MigrateLevel, RenderError, RenderOptions, render_dir_reporting};
use olmpack::catalog::serialize::{self, Format};
use olmpack::catalog::stream::{Blob, Emitter, StreamError, render_refs};
use olmpack::catalog::template::{self, DirResolver};
use olmpack::catalog::upgrade;
use olmpack::catalog::validate::{ValidateOptions, validate_dir};
use olmpack_model::report::OutputFormat;
use olmpack_oci::input::{Limits, Policy};

use super::{CmdResult, Failure, Invalid};
use olmpack::refusal::{CommandError, Refusal};

#[derive(Debug, clap::Subcommand)]
pub enum CatalogCommand {
    /// Write the catalog for the release plan: one directory per package, deterministic; the
    /// bundles are generated in memory to render it (see `olmpack generate` for both).
    Generate {
        /// The release plan.
        #[arg(long, default_value = olmpack_model::plan::DEFAULT_PLAN_FILE)]
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
        #[arg(long, short, value_parser = super::choice::<OutputFormat>(), default_value = "text")]
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
        #[arg(long, short, value_parser = super::choice::<Format>(), default_value = "json")]
        output: Format,
        /// Migrations to run (as opm's `--migrate-level`).
        #[arg(long, value_parser = super::choice::<MigrateLevel>(), default_value = "none")]
        migrate_level: MigrateLevel,
        /// Image reference to record for the bundle (only with one directory).
        #[arg(long)]
        image: Option<String>,
        #[command(flatten)]
        net: super::image::NetArgs,
    },
    /// Expand an `olm.template.basic` or `olm.semver` template.
    Template {
        /// The template file (`-` for stdin).
        file: PathBuf,
        /// Map a bundle image reference to a local bundle directory: `IMAGE=DIR` (repeatable).
        #[arg(long = "bundle", value_name = "IMAGE=DIR")]
        bundles: Vec<String>,
        #[arg(long, short, value_parser = super::choice::<Format>(), default_value = "json")]
        output: Format,
        #[arg(long, value_parser = super::choice::<MigrateLevel>(), default_value = "none")]
        migrate_level: MigrateLevel,
    },
    /// Draw the upgrade graph (mermaid or Graphviz dot).
    Graph {
        /// The catalog directory.
        dir: PathBuf,
        #[arg(long, value_parser = super::choice::<GraphFormat>(), default_value = "mermaid")]
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

pub fn run(cmd: CatalogCommand, policy: &Policy) -> CmdResult {
    let limits = policy.limits;
    match cmd {
        CatalogCommand::Generate { plan, out, check } => {
            super::jobs::generate::catalog_only(&plan, out, check, policy)
        }
        CatalogCommand::Validate {
            dir,
            output,
            strict,
            upgrade_paths,
        } => validate(&dir, output, strict, upgrade_paths, limits),
        CatalogCommand::Render {
            refs,
            output,
            migrate_level,
            image,
            net,
        } => render(
            &refs,
            output,
            migrate_level,
            image.as_deref(),
            (limits, net),
        ),
        CatalogCommand::Template {
            file,
            bundles,
            output,
            migrate_level,
        } => expand_template(&file, &bundles, output, migrate_level, limits),
        CatalogCommand::Graph {
            dir,
            format,
            package,
        } => draw_graph(&dir, format, package.as_deref(), limits),
        CatalogCommand::UpgradePaths { dir, json } => upgrade_paths(&dir, json, limits),
    }
}

/// `catalog validate`: the report, exit 1 on errors (or warnings with `--strict`).
fn validate(
    dir: &std::path::Path,
    output: OutputFormat,
    strict: bool,
    upgrade_paths: bool,
    limits: Limits,
) -> CmdResult {
    let report = validate_dir(
        dir,
        ValidateOptions {
            strict,
            upgrade_paths,
            limits,
        },
    )?;
    print!("{}", report.format(output));
    Ok(ExitCode::from(report.exit_code()))
}

/// `catalog render`: every reference rendered on all cores, streamed to stdout in opm's order.
fn render(
    refs: &[PathBuf],
    output: Format,
    migrate_level: MigrateLevel,
    image: Option<&str>,
    (limits, net): (Limits, super::image::NetArgs),
) -> CmdResult {
    if image.is_some() && refs.len() > 1 {
        return Err(Failure("--image needs exactly one bundle directory".into()).into());
    }
    let names: Vec<String> = refs
        .iter()
        .map(|r| r.to_string_lossy().into_owned())
        .collect();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let warnings = render_refs(
        &names,
        jobs,
        output,
        |i, emit| render_ref(&refs[i], migrate_level, image, (limits, net), emit),
        &mut out,
    )
    .map_err(stream_error)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `catalog template`: the template (a file or stdin) expanded with local bundle directories.
fn expand_template(
    file: &std::path::Path,
    bundles: &[String],
    output: Format,
    migrate_level: MigrateLevel,
    limits: Limits,
) -> CmdResult {
    let text = if file.as_os_str() == "-" {
        olmpack_oci::input::stdin_text("the template", &limits)?
    } else {
        olmpack_oci::input::text_keeping_bom(file, &limits)?
    };
    let mut resolver = DirResolver {
        migrate: migrate_level,
        limits,
        ..DirResolver::default()
    };
    for pair in bundles {
        let (image, dir) = pair
            .split_once('=')
            .ok_or_else(|| Failure(format!("--bundle {pair:?} is not IMAGE=DIR")))?;
        resolver.dirs.insert(image.to_owned(), PathBuf::from(dir));
    }
    let cfg: DeclarativeConfig = template::expand_any(&text, &resolver).map_err(|e| {
        // The template or a bundle it names is invalid, unless a file could not be read.
        let message = format!(
            "{}: {}",
            file.display(),
            olmpack_model::report::error_chain(&e)
        );
        match e {
            template::TemplateError::Resolve { ref source, .. } if !source.refuses_input() => {
                CommandError::Failed(Box::new(e))
            }
            _ => CommandError::from(Invalid(message)),
        }
    })?;
    print!("{}", serialize::to_string(&cfg, output)?);
    Ok(ExitCode::SUCCESS)
}

/// `catalog graph`: the upgrade graph of one package or all, drawn one package at a time
/// (memory is the objects read plus the largest package's model), each package written out
/// as it is drawn unless only one is asked for.
fn draw_graph(
    dir: &std::path::Path,
    format: GraphFormat,
    package: Option<&str>,
    limits: Limits,
) -> CmdResult {
    use std::io::Write as _;
    let loaded = load_catalog(dir, limits, true)?;
    let mut drawing = graph::Drawing::new(format);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let (mut found, mut written) = (false, Ok(()));
    let mut errors: Vec<String> = Vec::new();
    for_each_package(loaded.config, |pkg, findings| {
        let drawn = pkg
            .as_ref()
            .is_none_or(|p| package.is_none_or(|n| n == p.name));
        if drawn {
            errors.extend(
                (findings.iter())
                    .filter(|f| f.severity == olmpack_model::report::Severity::Error)
                    .map(|f| f.message.clone()),
            );
        }
        let Some(pkg) = pkg.filter(|p| package.is_none_or(|n| n == p.name)) else {
            return;
        };
        found = true;
        drawing.package(&pkg);
        if package.is_none() && written.is_ok() {
            written = out.write_all(drawing.take().as_bytes());
        }
    });
    if let Some(p) = package
        && !found
    {
        return Err(Failure(format!("package {p:?} is not in {}", dir.display())).into());
    }
    written?;
    out.write_all(drawing.finish().as_bytes())?;
    out.flush()?;
    if let Some(first) = errors.first() {
        eprintln!(
            "warning: {}: {} error(s), so `olmpack catalog validate` refuses it (first: {first}); the graph shows the catalog as read",
            dir.display(),
            errors.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `catalog upgrade-paths`: every bundle's upgrade path under OLM v0 and OLM v1.
fn upgrade_paths(dir: &std::path::Path, json: bool, limits: Limits) -> CmdResult {
    let model = load_model(dir, limits)?;
    let paths: Vec<_> = model
        .packages
        .values()
        .flat_map(upgrade::package_paths)
        .collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&paths)?);
    } else {
        print!("{}", upgrade::format_text(&paths));
    }
    Ok(ExitCode::SUCCESS)
}

/// Why one reference of `catalog render` could not be rendered.
#[derive(Debug, thiserror::Error)]
enum RefError {
    #[error(transparent)]
    Bundle(RenderError),
    /// Anything else, its exit code decided.
    #[error("{}", .0.error())]
    Stopped(CommandError),
}

impl<E: Refusal + std::error::Error + Send + Sync + 'static> From<E> for RefError {
    fn from(err: E) -> Self {
        RefError::Stopped(err.into())
    }
}

/// The error a failed `catalog render` stops with (see [`render_error`]).
fn stream_error(err: StreamError<RefError>) -> CommandError {
    match err {
        StreamError::Render { source, .. } => match source {
            RefError::Bundle(e) => render_error(e),
            RefError::Stopped(e) => e,
        },
        StreamError::Encode { .. } | StreamError::Io(_) => CommandError::Failed(Box::new(err)),
    }
}

/// One reference as `opm render` treats it: a path that does not exist is an image; a bundle
/// directory renders to one bundle; any other directory is a catalog, rendered normalised one
/// file at a time.
fn render_ref(
    reference: &std::path::Path,
    migrate: MigrateLevel,
    image: Option<&str>,
    (limits, net): (Limits, super::image::NetArgs),
    emit: &mut Emitter<'_, '_, RefError>,
) -> Result<(), RefError> {
    let meta = match std::fs::metadata(reference) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && is_image_reference(reference) => {
            let bundle = render_image(&reference.to_string_lossy(), migrate, limits, &net)
                .map_err(RefError::Stopped)?;
            emit.blob(&Blob::Bundle(bundle));
            return Ok(());
        }
        Err(e) => {
            return Err(olmpack_oci::input::InputError::Io {
                path: reference.to_owned(),
                problem: olmpack_oci::input::describe_io(&e),
                kind: e.kind(),
            }
            .into());
        }
    };
    if !meta.is_dir() {
        return Err(Invalid(format!(
            "{}: is a file; only bundle and catalog directories and bundle images can be rendered \
             (sqlite databases are not supported)",
            reference.display()
        ))
        .into());
    }
    if is_bundle_dir(reference) {
        let options = RenderOptions {
            image: image.unwrap_or_default().to_owned(),
            migrate,
            limits,
        };
        let rendered = render_dir_reporting(reference, &options).map_err(RefError::Bundle)?;
        for s in &rendered.skipped {
            emit.warn(format!("{}: {s}", reference.display()));
        }
        for l in &rendered.lenient {
            emit.warn(format!("{}: {l}", reference.display()));
        }
        emit.blob(&Blob::Bundle(rendered.bundle));
        return Ok(());
    }
    let (problems, lenient) = for_each_file(reference, &limits, |mut cfg| {
        olmpack::catalog::render::normalize_catalog(&mut cfg, migrate);
        let blobs = (cfg.packages.into_iter().map(Blob::Package))
            .chain(cfg.channels.into_iter().map(Blob::Channel))
            .chain(cfg.bundles.into_iter().map(Blob::Bundle))
            .chain(cfg.others.into_iter().map(Blob::Other))
            .chain(cfg.deprecations.into_iter().map(Blob::Deprecation));
        for blob in blobs {
            emit.blob(&blob);
        }
        !emit.stopped()
    })
    .map_err(RefError::from)?;
    for note in &lenient {
        emit.warn(describe_problem(reference, note));
    }
    refuse_problems(reference, &problems)?;
    Ok(())
}

/// Whether a reference that is no file could be an image: not a path (`/…`, `./…`, `../…`)
/// and a valid image reference. Anything else is a missing file, said so, not pulled.
fn is_image_reference(reference: &std::path::Path) -> bool {
    let text = reference.to_string_lossy();
    let path_like = text.starts_with('/') || text.starts_with("./") || text.starts_with("../");
    !path_like && olmpack_model::pullspec::check(&text).is_ok()
}

/// Whether `dir` is a bundle directory: it has `manifests` (whatever it is: a bundle with a
/// broken `manifests` is still a bundle, and is reported as one) or
/// `metadata/annotations.yaml`.
fn is_bundle_dir(dir: &std::path::Path) -> bool {
    std::fs::symlink_metadata(dir.join("manifests")).is_ok()
        || std::fs::symlink_metadata(dir.join("metadata/annotations.yaml")).is_ok()
}

/// A catalog that did not load whole is invalid input: every problem is named, exit 1.
fn refuse_problems(path: &std::path::Path, problems: &[LoadProblem]) -> Result<(), Invalid> {
    if problems.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = problems.iter().map(|p| describe_problem(path, p)).collect();
    Err(Invalid(format!(
        "the catalog does not load ({} problem(s); `olmpack catalog validate` lists them all):\n  {}",
        lines.len(),
        lines.join("\n  ")
    )))
}

/// `<file>: [document <i>: ]<message>` for a problem or lenient read of the catalog at `path`.
fn describe_problem(path: &std::path::Path, p: &LoadProblem) -> String {
    let file = if path.is_file() {
        path.to_path_buf()
    } else {
        path.join(&p.file)
    };
    match p.index {
        Some(i) => format!("{}: document {i}: {}", file.display(), p.message),
        None => format!("{}: {}", file.display(), p.message),
    }
}

/// A bundle that cannot be rendered because it is invalid is exit 1; one that cannot be read
/// at all keeps its error (exit 2, or 1 when the reader refused it).
fn render_error(err: RenderError) -> CommandError {
    match err {
        RenderError::Load(load) => load.into(),
        invalid => Invalid(olmpack_model::report::error_chain(&invalid)).into(),
    }
}

/// Loads a catalog directory (or a single catalog file) into the semantic model. A catalog
/// that does not load whole is refused (exit 1); model problems do not stop drawing —
/// `validate` reports them.
fn load_model(path: &std::path::Path, limits: Limits) -> Result<Model, CommandError> {
    Ok(Model::from_config(load_catalog(path, limits, false)?.config).0)
}

/// Loads a catalog directory (or a single catalog file), `lean` or not
/// ([`LoadOptions::lean`]); one that does not load whole, or holds no package, is refused
/// (exit 1).
fn load_catalog(
    path: &std::path::Path,
    limits: Limits,
    lean: bool,
) -> Result<LoadedCatalog, CommandError> {
    let options = LoadOptions { lean, limits };
    let loaded = if std::fs::metadata(path).is_ok_and(|m| !m.is_dir()) {
        let bytes = olmpack_oci::input::read(path, &limits)?;
        let (config, problems, lenient) = parse_file_noting(path, &bytes, options);
        LoadedCatalog {
            config,
            problems,
            files: vec![path.to_path_buf()],
            lenient,
        }
    } else {
        load_dir_with(path, options)?
    };
    refuse_problems(path, &loaded.problems)?;
    if loaded.config.packages.is_empty() {
        return Err(Invalid(format!(
            "{}: holds no package (no `olm.package` blob); nothing to draw",
            path.display()
        ))
        .into());
    }
    Ok(loaded)
}

/// Pulls a bundle image and renders it as `opm render <image>` does.
fn render_image(
    reference: &str,
    migrate: MigrateLevel,
    limits: Limits,
    net: &super::image::NetArgs,
) -> Result<olmpack::catalog::declcfg::Bundle, CommandError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let files = runtime.block_on(olmpack_oci::image::pull::pull_files(
        reference,
        &net.access(),
        &limits,
    ))?;
    if !files.keys().any(|p| p.starts_with("manifests")) {
        return Err(Failure(format!(
            "{reference} is not a bundle image: it has no /manifests directory"
        ))
        .into());
    }
    Ok(olmpack::catalog::render::render_files(
        std::path::Path::new(reference),
        &files,
        &RenderOptions {
            image: reference.to_owned(),
            migrate,
            limits,
        },
    )?)
}
