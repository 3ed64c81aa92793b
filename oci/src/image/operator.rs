//! Operator images: a static binary packed onto a minimal base without a container engine (as
//! `ko` does for Go), one image per platform and an index when there are several.
//!
//! Contract:
//! - **No base (default):** a "scratch" image of two layers: the same base-files layer on every
//!   platform (`/etc/passwd` and `/etc/group` with `root` and `nonroot` (uid/gid 65532), and
//!   `/home/nonroot/`), then the binary at [`DEFAULT_ENTRYPOINT`] (mode 0755). A scratch image
//!   has no C library, so a dynamically linked binary (an ELF with a `PT_INTERP` interpreter)
//!   is refused: the container runtime could not start it.
//! - **On a base:** the base must be named by digest (`repo@sha256:…`) so the build is
//!   reproducible; each binary goes onto the base's image of its platform (its layers, `Env`
//!   and other settings kept), as one more layer.
//! - Every image runs as the numeric user `65532:65532` (numeric, so the kubelet can enforce
//!   `runAsNonRoot`), with the binary as `Entrypoint` and no `Cmd` (the Deployment's `args`
//!   follow the entrypoint).
//! - Every binary must be an ELF executable for the architecture of the platform it is given
//!   for; anything else is refused before a layout is written.
//! - `created` and every file time is the source date epoch, so the digest depends only on the
//!   binaries, the base and the options.

use crate::RefusesInput;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::base::{self, BaseImage, PlatformImage};
use super::build::{self, BuildError, BuildOptions, BuiltLayer};
use super::layer::{Entries, Entry};
use super::layout::{Descriptor, ImageIndex, LayoutWriter, Platform};
use super::media_type;
use super::progress::Progress;
use super::registry::RegistryAccess;

/// Where the binary lands, and the image's entrypoint.
pub const DEFAULT_ENTRYPOINT: &str = "/manager";
/// The uid and gid the image runs as (distroless' `nonroot`).
pub const NONROOT_ID: u32 = 65532;

const PASSWD: &str = "root:x:0:0:root:/root:/sbin/nologin\n\
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n";
const GROUP: &str = "root:x:0:\nnonroot:x:65532:\n";

/// Failure to build an operator image.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// No binary was given, so there is nothing to pack.
    #[error("an operator image needs at least one binary")]
    NoBinary,
    /// Two binaries are given for the same platform; an image index holds one image per
    /// platform.
    #[error("two binaries are given for platform {platform}; give one per platform")]
    DuplicatePlatform {
        /// The platform, as `os/arch[/variant]`.
        platform: String,
    },
    /// A binary file cannot be read.
    #[error("failed to read the binary {path}")]
    ReadBinary {
        /// The binary given.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: std::io::Error,
    },
    /// A binary is not an ELF executable, so a Linux container runtime cannot start it.
    #[error("{path} is not an executable for Linux (not an ELF file: {problem})")]
    NotElf {
        /// The binary given.
        path: PathBuf,
        /// What is wrong with its header.
        problem: String,
    },
    /// A binary is built for another CPU architecture than the platform it is given for;
    /// the container would fail to start on nodes of that platform.
    #[error(
        "{path} is built for {found}, but is given for platform {platform}; the container runtime could not run it"
    )]
    WrongArchitecture {
        /// The binary given.
        path: PathBuf,
        /// The architecture its ELF header names (OCI name, e.g. `arm64`).
        found: String,
        /// The platform it is given for, as `os/arch[/variant]`.
        platform: String,
    },
    /// A dynamically linked binary is to go onto the scratch image, which has no loader or C
    /// library, so the container could not start.
    #[error(
        "{path} is dynamically linked (it needs the loader {interpreter}), and an image without a base has no C library to run it; build it statically (e.g. for the *-unknown-linux-musl target) or give --base"
    )]
    Dynamic {
        /// The binary given.
        path: PathBuf,
        /// The program interpreter its ELF header asks for, e.g. `/lib64/ld-linux-x86-64.so.2`.
        interpreter: String,
    },
    /// The base image is named by tag; the build would not be reproducible, so it is refused.
    #[error(
        "the base image {reference} is not named by digest; name it as repository@sha256:… so the image is reproducible"
    )]
    BaseNotByDigest {
        /// The base image reference, as given.
        reference: String,
    },
    /// The base image has no image for the platform of one of the binaries.
    #[error("the base image {reference} has no image for platform {platform}")]
    BaseMissingPlatform {
        /// The base image reference, as given.
        reference: String,
        /// The platform lacking, as `os/arch[/variant]`.
        platform: String,
    },
    /// Pulling the base, writing layers or writing the OCI layout failed.
    #[error(transparent)]
    Build(#[from] BuildError),
}

/// What building the image answers; a binary or base image olmpack cannot use is a bad
/// argument (exit 2).
impl RefusesInput for OperatorError {
    fn refuses_input(&self) -> bool {
        match self {
            OperatorError::Build(build) => build.refuses_input(),
            _ => false,
        }
    }
}

/// One binary and the platform it runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorBinary {
    /// The platform whose image the binary goes into; its architecture must match the binary's.
    pub platform: Platform,
    /// The binary file (an ELF executable).
    pub path: PathBuf,
}

/// Settings of an operator image build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorOptions {
    /// Source date epoch and tag (the build's `platform` is unused: each binary has its own).
    pub build: BuildOptions,
    /// Where the binary lands; the image's entrypoint.
    pub entrypoint: String,
}

impl Default for OperatorOptions {
    fn default() -> Self {
        Self {
            build: BuildOptions::default(),
            entrypoint: DEFAULT_ENTRYPOINT.to_owned(),
        }
    }
}

/// `os/arch[/variant]`.
pub fn platform_name(platform: &Platform) -> String {
    match &platform.variant {
        Some(variant) => format!("{}/{}/{variant}", platform.os, platform.architecture),
        None => format!("{}/{}", platform.os, platform.architecture),
    }
}

/// What an ELF header says about a binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfInfo {
    /// The OCI (Go) name of the machine, e.g. `amd64`, or `machine 0x…` when unknown.
    pub architecture: String,
    /// The program interpreter of a dynamically linked binary.
    pub interpreter: Option<String>,
}

/// Reads the ELF header and program headers of `bytes`.
pub fn inspect_elf(bytes: &[u8]) -> Result<ElfInfo, String> {
    if bytes.len() < 52 || &bytes[..4] != b"\x7fELF" {
        return Err("no ELF magic number".into());
    }
    let wide = match bytes[4] {
        1 => false,
        2 => true,
        other => return Err(format!("unknown ELF class {other}")),
    };
    let little = match bytes[5] {
        1 => true,
        2 => false,
        other => return Err(format!("unknown ELF byte order {other}")),
    };
    let read = |at: usize, len: usize| -> Result<u64, String> {
        let slice = bytes
            .get(at..at + len)
            .ok_or_else(|| "truncated ELF header".to_owned())?;
        let mut value = 0u64;
        for i in 0..len {
            let byte = if little { slice[len - 1 - i] } else { slice[i] };
            value = (value << 8) | u64::from(byte);
        }
        Ok(value)
    };
    let machine = read(18, 2)?;
    let architecture = match (machine, wide, little) {
        (0x3e, true, _) => "amd64",
        (0x03, false, _) => "386",
        (0xb7, true, _) => "arm64",
        (0x28, false, _) => "arm",
        (0x15, true, true) => "ppc64le",
        (0x15, true, false) => "ppc64",
        (0x16, true, false) => "s390x",
        (0xf3, true, _) => "riscv64",
        _ => "",
    };
    let architecture = if architecture.is_empty() {
        format!("machine {machine:#x}")
    } else {
        architecture.to_owned()
    };
    let (phoff, phentsize, phnum) = if wide {
        (read(32, 8)?, read(54, 2)?, read(56, 2)?)
    } else {
        (read(28, 4)?, read(42, 2)?, read(44, 2)?)
    };
    let mut interpreter = None;
    for i in 0..phnum {
        let at = usize::try_from(phoff + i * phentsize).map_err(|_| "bad program header")?;
        if read(at, 4)? != 3 {
            continue; // not PT_INTERP
        }
        let (offset, size) = if wide {
            (read(at + 8, 8)?, read(at + 32, 8)?)
        } else {
            (read(at + 4, 4)?, read(at + 16, 4)?)
        };
        let start = usize::try_from(offset).map_err(|_| "bad interpreter offset")?;
        let end = start.saturating_add(usize::try_from(size).unwrap_or(usize::MAX));
        let raw = bytes.get(start..end).ok_or("truncated interpreter path")?;
        let text = String::from_utf8_lossy(raw);
        interpreter = Some(text.trim_end_matches('\0').to_owned());
    }
    Ok(ElfInfo {
        architecture,
        interpreter,
    })
}

/// Reads a binary and checks it can run on its platform (on scratch: statically linked).
fn read_binary(binary: &OperatorBinary, on_scratch: bool) -> Result<Vec<u8>, OperatorError> {
    let bytes = std::fs::read(&binary.path).map_err(|source| OperatorError::ReadBinary {
        path: binary.path.clone(),
        source,
    })?;
    let info = inspect_elf(&bytes).map_err(|problem| OperatorError::NotElf {
        path: binary.path.clone(),
        problem,
    })?;
    if info.architecture != binary.platform.architecture {
        return Err(OperatorError::WrongArchitecture {
            path: binary.path.clone(),
            found: info.architecture,
            platform: platform_name(&binary.platform),
        });
    }
    if on_scratch && let Some(interpreter) = info.interpreter {
        return Err(OperatorError::Dynamic {
            path: binary.path.clone(),
            interpreter,
        });
    }
    Ok(bytes)
}

/// Builds the operator image of `binaries` into an OCI layout at `out`, on `base` (a
/// reference by digest, pulled with `access`) when given.
pub async fn build_operator_image(
    binaries: &[OperatorBinary],
    out: &Path,
    options: &OperatorOptions,
    base: Option<(&str, &RegistryAccess)>,
    progress: &Progress,
) -> Result<Descriptor, OperatorError> {
    check_inputs(binaries, base)?;
    // Every binary is checked before anything is written.
    let contents = binaries
        .iter()
        .map(|b| read_binary(b, base.is_none()))
        .collect::<Result<Vec<_>, _>>()?;
    let writer = LayoutWriter::create(out).map_err(BuildError::from)?;
    let build = &options.build;
    let foundation = foundation(&writer, base, build, progress).await?;
    let mut manifests = Vec::new();
    for (binary, bytes) in binaries.iter().zip(contents) {
        manifests.push(platform_manifest(
            &writer,
            &foundation,
            binary,
            bytes,
            options,
        )?);
    }
    let root = if manifests.len() == 1 {
        let mut only = manifests.remove(0);
        only.platform = None;
        only
    } else {
        writer
            .put_json(media_type::INDEX, &ImageIndex::new(manifests))
            .map_err(BuildError::from)?
    };
    writer
        .finish(&root, build.tag.as_deref())
        .map_err(BuildError::from)?;
    Ok(root)
}

/// Refuses no binaries, two for one platform, and a base not named by digest.
fn check_inputs(
    binaries: &[OperatorBinary],
    base: Option<(&str, &RegistryAccess)>,
) -> Result<(), OperatorError> {
    if binaries.is_empty() {
        return Err(OperatorError::NoBinary);
    }
    let mut seen = std::collections::BTreeSet::new();
    for binary in binaries {
        if !seen.insert(platform_name(&binary.platform)) {
            return Err(OperatorError::DuplicatePlatform {
                platform: platform_name(&binary.platform),
            });
        }
    }
    if let Some((reference, _)) = base
        && !reference.contains("@sha256:")
    {
        return Err(OperatorError::BaseNotByDigest {
            reference: reference.to_owned(),
        });
    }
    Ok(())
}

/// What every platform's image starts from: the fetched base image, or the base-files layer
/// of an image without one.
async fn foundation<'a>(
    writer: &LayoutWriter,
    base: Option<(&'a str, &RegistryAccess)>,
    build: &BuildOptions,
    progress: &Progress,
) -> Result<Foundation<'a>, OperatorError> {
    Ok(match base {
        Some((reference, access)) => Foundation::Base {
            image: base::fetch(reference, access, writer, progress)
                .await
                .map_err(|source| BuildError::Base {
                    reference: reference.to_owned(),
                    source: Box::new(source),
                })?,
            reference,
        },
        None => Foundation::Scratch(Box::new(build::write_entries(
            writer,
            &base_files(),
            "/etc",
            build,
        )?)),
    })
}

/// The image manifest of one platform: the foundation's layers and config plus the binary.
fn platform_manifest(
    writer: &LayoutWriter,
    foundation: &Foundation<'_>,
    binary: &OperatorBinary,
    bytes: Vec<u8>,
    options: &OperatorOptions,
) -> Result<Descriptor, OperatorError> {
    let build = &options.build;
    let binary_layer = binary_layer(writer, &options.entrypoint, bytes, build)?;
    let (mut config, mut layers) = match foundation {
        Foundation::Base { image, reference } => {
            let platform_image = base_for(image, &binary.platform, reference)?;
            (platform_image.config.clone(), platform_image.layers.clone())
        }
        Foundation::Scratch(files) => (
            scratch_config(&binary.platform, files, build),
            vec![files.descriptor.clone()],
        ),
    };
    add_binary(&mut config, &binary_layer, &options.entrypoint, build);
    layers.push(binary_layer.descriptor.clone());
    let mut descriptor =
        build::write_manifest(writer, &config, layers).map_err(BuildError::from)?;
    descriptor.platform = Some(binary.platform.clone());
    Ok(descriptor)
}

/// What the binaries go onto.
enum Foundation<'a> {
    Base {
        image: BaseImage,
        reference: &'a str,
    },
    /// The base-files layer of an image without a base.
    Scratch(Box<BuiltLayer>),
}

/// `/etc/passwd`, `/etc/group` and the non-root user's home.
fn base_files() -> Entries {
    let mut entries = BTreeMap::new();
    entries.insert("etc/".to_owned(), Entry::Dir);
    let file = |text: &str| Entry::Content {
        data: text.as_bytes().to_vec(),
        mode: 0o644,
    };
    entries.insert("etc/group".to_owned(), file(GROUP));
    entries.insert("etc/passwd".to_owned(), file(PASSWD));
    entries.insert("home/".to_owned(), Entry::Dir);
    entries.insert("home/nonroot/".to_owned(), Entry::Dir);
    entries
}

fn binary_layer(
    writer: &LayoutWriter,
    entrypoint: &str,
    bytes: Vec<u8>,
    options: &BuildOptions,
) -> Result<BuiltLayer, BuildError> {
    let path = entrypoint.trim_start_matches('/');
    let mut entries = BTreeMap::new();
    let mut parent = String::new();
    if let Some((dirs, _)) = path.rsplit_once('/') {
        for part in dirs.split('/').filter(|p| !p.is_empty()) {
            parent.push_str(part);
            parent.push('/');
            entries.insert(parent.clone(), Entry::Dir);
        }
    }
    entries.insert(
        path.to_owned(),
        Entry::Content {
            data: bytes,
            mode: 0o755,
        },
    );
    build::write_entries(writer, &entries, entrypoint, options)
}

/// The base's image for `platform`: the matching entry of an index, or the only image when
/// its config names that platform.
fn base_for<'a>(
    base: &'a BaseImage,
    platform: &Platform,
    reference: &str,
) -> Result<&'a PlatformImage, OperatorError> {
    let matches = |p: &Platform| {
        p.os == platform.os
            && p.architecture == platform.architecture
            && (platform.variant.is_none() || p.variant == platform.variant)
    };
    base.images
        .iter()
        .find(|image| match &image.platform {
            Some(p) => matches(p),
            None => {
                let field = |name: &str| image.config.get(name).and_then(Value::as_str);
                field("os") == Some(platform.os.as_str())
                    && field("architecture") == Some(platform.architecture.as_str())
            }
        })
        .ok_or_else(|| OperatorError::BaseMissingPlatform {
            reference: reference.to_owned(),
            platform: platform_name(platform),
        })
}

fn scratch_config(platform: &Platform, files: &BuiltLayer, options: &BuildOptions) -> Value {
    let mut config = json!({
        "architecture": platform.architecture,
        "os": platform.os,
        "created": build::rfc3339(options.source_date_epoch),
        "config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [files.diff_id]},
        "history": [build::history_entry("COPY passwd group /etc/", options)],
    });
    if let Some(variant) = &platform.variant {
        config["variant"] = json!(variant);
    }
    config
}

/// Appends the binary's layer and sets user, entrypoint and command.
fn add_binary(config: &mut Value, layer: &BuiltLayer, entrypoint: &str, options: &BuildOptions) {
    let Some(root) = config.as_object_mut() else {
        return;
    };
    root.insert(
        "created".into(),
        json!(build::rfc3339(options.source_date_epoch)),
    );
    let runtime = root.entry("config").or_insert_with(|| json!({}));
    if !runtime.is_object() {
        *runtime = json!({});
    }
    if let Some(runtime) = runtime.as_object_mut() {
        runtime.insert("User".into(), json!(format!("{NONROOT_ID}:{NONROOT_ID}")));
        runtime.insert("Entrypoint".into(), json!([entrypoint]));
        runtime.remove("Cmd");
    }
    let rootfs = root
        .entry("rootfs")
        .or_insert_with(|| json!({"type": "layers", "diff_ids": []}));
    if let Some(ids) = rootfs.get_mut("diff_ids").and_then(Value::as_array_mut) {
        ids.push(json!(layer.diff_id));
    }
    if let Some(entries) = root.get_mut("history").and_then(Value::as_array_mut) {
        entries.push(build::history_entry(
            &format!("COPY binary {entrypoint}"),
            options,
        ));
        entries.push(json!({
            "created": build::rfc3339(options.source_date_epoch),
            "created_by": format!("USER {NONROOT_ID}:{NONROOT_ID} ENTRYPOINT [\"{entrypoint}\"]"),
            "comment": "olmpack",
            "empty_layer": true,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 64-bit little-endian ELF with `machine` and, optionally, a PT_INTERP.
    pub(crate) fn elf(machine: u16, interpreter: Option<&str>) -> Vec<u8> {
        let mut bytes = vec![0u8; 64 + 56];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 2;
        bytes[5] = 1;
        bytes[18..20].copy_from_slice(&machine.to_le_bytes());
        bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
        bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
        bytes[56..58].copy_from_slice(&1u16.to_le_bytes());
        let ph = 64;
        if let Some(path) = interpreter {
            let offset = bytes.len() as u64;
            let data = format!("{path}\0");
            bytes[ph..ph + 4].copy_from_slice(&3u32.to_le_bytes());
            bytes[ph + 8..ph + 16].copy_from_slice(&offset.to_le_bytes());
            bytes[ph + 32..ph + 40].copy_from_slice(&(data.len() as u64).to_le_bytes());
            bytes.extend_from_slice(data.as_bytes());
        } else {
            bytes[ph..ph + 4].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        }
        bytes
    }

    #[test]
    fn elf_headers_give_architecture_and_interpreter() {
        let cases = [
            (elf(0x3e, None), "amd64", None),
            (elf(0xb7, None), "arm64", None),
            (
                elf(0x3e, Some("/lib64/ld-linux-x86-64.so.2")),
                "amd64",
                Some("/lib64/ld-linux-x86-64.so.2"),
            ),
            (elf(0x9999, None), "machine 0x9999", None),
        ];
        for (bytes, arch, interp) in cases {
            let info = inspect_elf(&bytes).unwrap();
            assert_eq!(info.architecture, arch);
            assert_eq!(info.interpreter.as_deref(), interp);
        }
        assert_eq!(
            inspect_elf(b"#!/bin/sh\necho hi\n").unwrap_err(),
            "no ELF magic number"
        );
        assert_eq!(
            inspect_elf(&elf(0x3e, None)[..60]).unwrap_err(),
            "truncated ELF header"
        );
    }

    #[test]
    fn scratch_config_runs_the_binary_as_numeric_nonroot() {
        let files = BuiltLayer {
            descriptor: Descriptor::new(media_type::LAYER_GZIP, "sha256:f".into(), 1),
            diff_id: "sha256:files".into(),
        };
        let binary = BuiltLayer {
            descriptor: Descriptor::new(media_type::LAYER_GZIP, "sha256:b".into(), 1),
            diff_id: "sha256:bin".into(),
        };
        let options = BuildOptions::default();
        let mut platform = Platform::linux_amd64();
        platform.architecture = "arm64".into();
        platform.variant = Some("v8".into());
        let mut config = scratch_config(&platform, &files, &options);
        add_binary(&mut config, &binary, DEFAULT_ENTRYPOINT, &options);
        insta::assert_json_snapshot!(config);
    }
}
