//! The tools image: `olmpack tools pack` turns a tool cache into an OCI image the same way
//! every time, `olmpack image push` puts it in a real registry (the Distribution registry), and
//! `olmpack tools install` unpacks it into an empty cache — refusing damaged blobs, leaving
//! nothing half-written, waiting while another install holds the cache, and installing once
//! when two installs run at the same time.
//!
//! The cache packed here holds small stand-in binaries at the paths and versions olmpack pins
//! (the real tools go through the same code in `byo_operator_tools_image_*`).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use olmpack::tools::{ARTIFACT_TOOLS, artifact_dirs, dirs_for};
use olmpack_testkit::registry::{Registry, RegistryAuth};

fn olmpack(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(args)
        .env("OLMPACK_TOOLS_DIR", cache)
        .env_remove("OLMPACK_TOOLS_IMAGE")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A tool cache as `cargo xtask setup` lays it out, with a script per pinned binary.
fn fake_cache(root: &Path) {
    for tool in ARTIFACT_TOOLS {
        let binary = root.join(tool.cache_binary().unwrap());
        std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
        std::fs::write(&binary, format!("#!/bin/sh\necho {}\n", tool.file_name())).unwrap();
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for (dir, markers) in artifact_dirs() {
        // Another Kubernetes minor's binaries (the tools' are written above).
        for name in markers.iter().filter_map(|m| m.strip_prefix("bin/")) {
            let binary = root.join(&dir).join("bin").join(name);
            if !binary.exists() {
                std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
                std::fs::write(
                    &binary,
                    format!("#!/bin/sh\necho {name} {}\n", dir.display()),
                )
                .unwrap();
                std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        for marker in markers.iter().filter(|m| !m.starts_with("bin/")) {
            // A data directory (OpenShift's API kinds): one CRD file in it.
            let data = root.join(&dir).join(marker);
            std::fs::create_dir_all(&data).unwrap();
            std::fs::write(
                data.join("routes.crd.yaml"),
                "kind: CustomResourceDefinition\n",
            )
            .unwrap();
        }
        std::fs::write(root.join(&dir).join(".complete"), "setup stamp\n").unwrap();
    }
    let olm = root.join(
        olmpack_envtest::binaries::ToolData::OlmCrds
            .cache_dir()
            .unwrap(),
    );
    std::fs::create_dir_all(&olm).unwrap();
    std::fs::write(
        olm.join("subscriptions.crd.yaml"),
        "kind: CustomResourceDefinition\n",
    )
    .unwrap();
}

/// Every file under `dir` with its mode and contents, keyed by relative path.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_owned();
                out.insert(
                    rel,
                    (
                        meta.permissions().mode() & 0o777,
                        std::fs::read(&path).unwrap(),
                    ),
                );
            }
        }
    }
    out
}

/// [`tree`] of a cache `tools install` filled with `dirs`, after checking each of them
/// carries olmpack's owner marker, without the markers.
fn installed_tree(
    cache: &Path,
    dirs: &[(PathBuf, Vec<String>)],
) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let mut found = tree(cache);
    for (dir, _) in dirs {
        let owner = found.remove(&dir.join(olmpack::tools::OWNER));
        assert!(owner.is_some(), "{} has no owner marker", dir.display());
    }
    found
}

fn pack(cache: &Path, out: &Path) -> String {
    let packed = olmpack(
        &["tools", "pack", "--layout", &out.display().to_string()],
        cache,
    );
    assert!(packed.status.success(), "{}", text(&packed));
    // Progress on stderr, one line per tool as its layer is written.
    let stderr = String::from_utf8_lossy(&packed.stderr);
    let tools = olmpack::tools::artifact_dirs().len();
    let done = stderr
        .lines()
        .filter(|l| l.starts_with("olmpack tools pack: packed "))
        .count();
    assert_eq!(done, tools, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "olmpack tools pack: packing {tools} tool directories"
        )),
        "{stderr}"
    );
    String::from_utf8_lossy(&packed.stdout).trim().to_owned()
}

/// Packs `cache` and pushes it; returns the reference by digest.
fn pushed(registry: &Registry, cache: &Path, work: &Path) -> String {
    let layout = work.join("layout");
    let digest = pack(cache, &layout);
    let target = format!("{}/olmpack-tools:test", registry.host());
    let push = olmpack(
        &["image", "push", &layout.display().to_string(), &target],
        cache,
    );
    assert!(push.status.success(), "{}", text(&push));
    assert_eq!(String::from_utf8_lossy(&push.stdout).trim(), digest);
    format!("{}/olmpack-tools@{digest}", registry.host())
}

fn registry() -> (tokio::runtime::Runtime, Registry) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = runtime
        .block_on(Registry::start(RegistryAuth::Anonymous))
        .expect("the Distribution registry starts (cargo xtask setup installs it)");
    (runtime, registry)
}

#[test]
fn tools_image_is_reproducible_and_installs_whole_tool_directories() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    fake_cache(&source);
    let first = pack(&source, &work.path().join("a"));
    assert_eq!(
        pack(&source, &work.path().join("b")),
        first,
        "same tools, same digest"
    );
    assert!(first.starts_with("sha256:"), "{first}");

    let (_runtime, registry) = registry();
    let reference = pushed(&registry, &source, work.path());
    let cache = work.path().join("empty");
    let install = olmpack(&["tools", "install", "--from", &reference], &cache);
    assert!(install.status.success(), "{}", text(&install));
    // Without --kubernetes: every tool, and of the Kubernetes minors only the default one.
    let base = dirs_for(&[]);
    let others: Vec<(PathBuf, Vec<String>)> = artifact_dirs()
        .into_iter()
        .filter(|d| !base.contains(d))
        .collect();
    assert!(!others.is_empty(), "tools.toml pins more than one minor");
    let names = |dirs: &[(PathBuf, Vec<String>)]| {
        let names: Vec<String> = dirs.iter().map(|(d, _)| d.display().to_string()).collect();
        names.join(", ")
    };
    let said = format!("installed {} into {}", names(&base), cache.display());
    assert!(text(&install).contains(&said), "{}", text(&install));
    let mut packed = tree(&source);
    let without_others = |t: &BTreeMap<PathBuf, (u32, Vec<u8>)>| {
        let mut t = t.clone();
        t.retain(|p, _| !others.iter().any(|(d, _)| p.starts_with(d)));
        t
    };
    assert_eq!(
        installed_tree(&cache, &base),
        without_others(&packed),
        "the installed cache is the packed one, without the other minors"
    );
    // The other minors, when asked for: only they are installed.
    let more = olmpack(
        &[
            "tools",
            "install",
            "--from",
            &reference,
            "--kubernetes",
            "all",
        ],
        &cache,
    );
    let said = format!("installed {} into {}", names(&others), cache.display());
    assert!(text(&more).contains(&said), "{}", text(&more));
    assert_eq!(
        installed_tree(&cache, &artifact_dirs()),
        std::mem::take(&mut packed),
        "the installed cache is the packed one"
    );
    let unknown = olmpack(
        &[
            "tools",
            "install",
            "--from",
            &reference,
            "--kubernetes",
            "1.2",
        ],
        &cache,
    );
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(
        text(&unknown).contains("error: --kubernetes \"1.2\": olmpack pins Kubernetes 1.27, "),
        "{}",
        text(&unknown)
    );
    let etcd = olmpack_envtest::binaries::Tool::Etcd
        .cache_binary()
        .unwrap();
    assert_eq!(tree(&cache)[&etcd].0, 0o755, "binaries stay executable");
    let openshift = olmpack_envtest::binaries::ToolData::OpenShiftCrds
        .cache_dir()
        .unwrap();
    assert_eq!(
        tree(&cache)[&openshift.join("routes.crd.yaml")].0,
        0o644,
        "OpenShift's API kinds (--platform openshift) come with the tools"
    );

    let again = olmpack(&["tools", "install", "--from", &reference], &cache);
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains(&format!("tools already installed in {}", cache.display())),
        "{}",
        text(&again)
    );
    let list = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["tools", "list"])
        .env_clear()
        .env("PATH", "/nonexistent")
        .env("OLMPACK_TOOLS_DIR", &cache)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&list.stdout).contains(&format!(
            "{} (from tool cache)",
            cache.join(&etcd).display()
        )),
        "{}",
        text(&list)
    );
}

/// The blob files of the registry's storage, largest first.
fn blobs(storage: &Path) -> Vec<PathBuf> {
    let mut found: Vec<(u64, PathBuf)> = tree(&storage.join("docker/registry/v2/blobs"))
        .keys()
        .filter(|p| p.ends_with("data"))
        .map(|p| {
            let path = storage.join("docker/registry/v2/blobs").join(p);
            (std::fs::metadata(&path).unwrap().len(), path)
        })
        .collect();
    found.sort_by_key(|b| std::cmp::Reverse(b.0));
    found.into_iter().map(|(_, p)| p).collect()
}

#[test]
fn tools_install_refuses_a_tampered_or_truncated_blob_and_leaves_the_cache_alone() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    fake_cache(&source);
    let (_runtime, registry) = registry();
    let reference = pushed(&registry, &source, work.path());
    let layer = blobs(&registry.storage()).remove(0);
    let original = std::fs::read(&layer).unwrap();

    let mut flipped = original.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x01;
    let truncated = original[..original.len() - 7].to_vec();
    let url = format!("http://{}", registry.host());
    let (n, cut) = (original.len(), original.len() - 7);
    let rows = [
        (
            "tampered",
            flipped,
            format!("{url} answered with something else: its content has the digest sha256:"),
        ),
        (
            "truncated",
            truncated,
            format!("failed after 6 attempt(s): {url} ended the answer after {cut} of {n} bytes"),
        ),
    ];
    for (damage, bytes, message) in rows {
        std::fs::write(&layer, &bytes).unwrap();
        let cache = work.path().join(damage);
        let all = ["--kubernetes", "all"];
        let install = olmpack(
            &[&["tools", "install", "--from", &reference], &all[..]].concat(),
            &cache,
        );
        let shown = text(&install);
        assert_eq!(install.status.code(), Some(2), "{damage}: {shown}");
        assert!(
            shown.contains(&format!("failed to pull the tools image {reference}"))
                && shown.contains("pulling blob sha256:")
                && shown.contains(&message),
            "{damage}: {shown}"
        );
        let left: Vec<_> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{damage}: the cache holds {left:?}");
    }
    std::fs::write(&layer, &original).unwrap();
}

/// `olmpack tools install --from REFERENCE` into `cache`, started with its output piped.
fn install(reference: &str, cache: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args([
            "tools",
            "install",
            "--from",
            reference,
            "--kubernetes",
            "all",
        ])
        .env("OLMPACK_TOOLS_DIR", cache)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn tools_install_run_twice_at_once_installs_once() {
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    fake_cache(&source);
    let (_runtime, registry) = registry();
    let reference = pushed(&registry, &source, work.path());
    let cache = work.path().join("shared");
    let (a, b) = (install(&reference, &cache), install(&reference, &cache));
    let outputs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let shown: Vec<String> = outputs.iter().map(text).collect();
    assert!(outputs.iter().all(|o| o.status.success()), "{shown:#?}");
    let installed = shown
        .iter()
        .filter(|s| s.contains("installed etcd/"))
        .count();
    let already = shown
        .iter()
        .filter(|s| s.contains("tools already installed"))
        .count();
    assert_eq!((installed, already), (1, 1), "{shown:#?}");
    assert_eq!(installed_tree(&cache, &artifact_dirs()), tree(&source));
}

/// An install finds the cache locked (as by another install): it says it waits, writes
/// nothing while the lock is held, and installs once it is released.
#[test]
fn tools_install_waits_while_the_cache_is_locked() {
    use std::io::BufRead as _;
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    fake_cache(&source);
    let (_runtime, registry) = registry();
    let reference = pushed(&registry, &source, work.path());
    let cache = work.path().join("locked");
    std::fs::create_dir_all(&cache).unwrap();
    let lock = std::fs::File::open(&cache).unwrap();
    lock.lock().unwrap();
    let mut child = install(&reference, &cache);
    let (lines, seen) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let _ = lines.send(line.unwrap());
        }
    });
    let waiting = format!("waiting for another tools install into {}", cache.display());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut said = Vec::new();
    while !said.iter().any(|l: &String| l.contains(&waiting)) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match seen.recv_timeout(left) {
            Ok(line) => said.push(line),
            Err(_) => panic!("the install did not wait for the lock: {said:#?}"),
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(child.try_wait().unwrap().is_none(), "{said:#?}");
    let written: Vec<_> = std::fs::read_dir(&cache).unwrap().collect();
    assert!(written.is_empty(), "written under the lock: {written:?}");
    drop(lock);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    said.extend(seen.try_iter());
    assert!(status.success(), "{said:#?}");
    assert_eq!(installed_tree(&cache, &artifact_dirs()), tree(&source));
}

#[test]
fn tools_install_refuses_an_image_that_is_not_a_tools_image() {
    let work = tempfile::tempdir().unwrap();
    let (_runtime, registry) = registry();
    let bundle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundle/0.1.0");
    let layout = work.path().join("bundle-layout");
    let build = olmpack(
        &[
            "image",
            "build",
            "bundle",
            &bundle.display().to_string(),
            "--layout",
            &layout.display().to_string(),
        ],
        work.path(),
    );
    assert!(build.status.success(), "{}", text(&build));
    let target = format!("{}/not-tools:v1", registry.host());
    let push = olmpack(
        &["image", "push", &layout.display().to_string(), &target],
        work.path(),
    );
    assert!(push.status.success(), "{}", text(&push));
    let cache = work.path().join("cache");
    let install = olmpack(&["tools", "install", "--from", &target], &cache);
    assert_eq!(install.status.code(), Some(2), "{}", text(&install));
    assert!(
        text(&install).contains(&format!(
            "{target} is not an olmpack tools image for linux/amd64 (no io.olmpack.tools label)"
        )),
        "{}",
        text(&install)
    );
}

#[test]
fn tools_install_without_a_known_image_says_how_to_name_one() {
    let work = tempfile::tempdir().unwrap();
    let install = olmpack(&["tools", "install"], work.path());
    assert_eq!(install.status.code(), Some(1), "{}", text(&install));
    assert!(
        text(&install).contains(
            "no tools image known to this build of olmpack: give --from host/repository@sha256:… or set OLMPACK_TOOLS_IMAGE"
        ),
        "{}",
        text(&install)
    );
}

#[test]
fn tools_pack_refuses_an_incomplete_cache() {
    use olmpack_envtest::binaries::{Tool, ToolData};
    let etcd = Tool::Etcd.cache_dir().unwrap();
    let openshift = ToolData::OpenShiftCrds.cache_dir().unwrap();
    let scheduler = Tool::KubeScheduler.cache_binary().unwrap();
    let kubernetes = Tool::KubeScheduler.cache_dir().unwrap();
    // (what is broken, the tool directory named, what it lacks): a tool's stamp, one binary
    // of a directory several tools share (kube-apiserver's is there), and a data directory
    // the image carries (OpenShift's API kinds), checked the same way.
    let table = [
        (etcd.join(".complete"), etcd.clone(), ".complete stamp"),
        (scheduler, kubernetes, "bin/kube-scheduler"),
        (
            openshift.clone(),
            openshift.parent().unwrap().to_owned(),
            "crds",
        ),
    ];
    for (broken, dir, marker) in table {
        let work = tempfile::tempdir().unwrap();
        let source = work.path().join("source");
        fake_cache(&source);
        let broken = source.join(broken);
        if broken.is_dir() {
            std::fs::remove_dir_all(&broken).unwrap();
        } else {
            std::fs::remove_file(&broken).unwrap();
        }
        let layout = work.path().join("l").display().to_string();
        let out = olmpack(&["tools", "pack", "--layout", &layout], &source);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            text(&out).contains(&format!(
                "{}: not a complete tool directory (no {marker})",
                source.join(&dir).display()
            )),
            "{}",
            text(&out)
        );
        assert!(!work.path().join("l").exists());
    }
}

/// Every path under `dir`, relative: a directory as `dir`, a symbolic link as `-> target`, a
/// file as its contents — what "left as it was" compares.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().to_owned();
            let what = if meta.is_symlink() {
                format!("-> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path);
                "dir".to_owned()
            } else {
                String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned()
            };
            out.insert(rel, what);
        }
    }
    out
}

#[test]
fn hostile_tools_install_touches_only_what_olmpack_owns_in_the_cache() {
    use olmpack_envtest::binaries::Tool;
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    fake_cache(&source);
    let (_runtime, registry) = registry();
    let reference = pushed(&registry, &source, work.path());
    let etcd = Tool::Etcd.cache_dir().unwrap();
    let etcd_top = etcd.components().next().unwrap().as_os_str().to_owned();
    let opm = Tool::Opm.cache_dir().unwrap();
    let victim = work.path().join("victim");
    type Setup = fn(&Path, &Path, &Path, &Path);
    let rows: [(&str, Setup, String); 3] = [
        (
            "a symlinked tool directory",
            |cache, victim, etcd, _| {
                let top = etcd.components().next().unwrap();
                std::fs::create_dir_all(victim.join("keep")).unwrap();
                std::fs::write(victim.join("keep/data"), "not olmpack's\n").unwrap();
                std::os::unix::fs::symlink(victim, cache.join(top)).unwrap();
            },
            format!(
                "{}: is a symbolic link (to {}); olmpack does not follow symbolic links in the tool cache; nothing was installed",
                Path::new("CACHE").join(&etcd_top).display(),
                victim.display()
            ),
        ),
        (
            "an incomplete tool directory olmpack did not install",
            |cache, _, _, opm| {
                std::fs::create_dir_all(cache.join(opm)).unwrap();
                std::fs::write(cache.join(opm).join("notes.txt"), "mine\n").unwrap();
            },
            format!(
                "{}: is an incomplete tool directory olmpack did not install (no .olmpack-installed marker); remove it, or install into another cache (OLMPACK_TOOLS_DIR); nothing was installed",
                Path::new("CACHE").join(&opm).display()
            ),
        ),
        (
            "a file where a tool directory goes",
            |cache, _, _, opm| {
                std::fs::create_dir_all(cache.join(opm).parent().unwrap()).unwrap();
                std::fs::write(cache.join(opm), "a file\n").unwrap();
            },
            format!(
                "{}: is not a directory; nothing was installed",
                Path::new("CACHE").join(&opm).display()
            ),
        ),
    ];
    for (what, setup, message) in rows {
        let cache = work.path().join(format!("cache-{}", what.len()));
        std::fs::create_dir_all(&cache).unwrap();
        let _ = std::fs::remove_dir_all(&victim);
        setup(&cache, &victim, &etcd, &opm);
        let before = (snapshot(&cache), std::fs::exists(&victim).unwrap());
        let victim_before = before.1.then(|| snapshot(&victim));
        let install = olmpack(&["tools", "install", "--from", &reference], &cache);
        assert_eq!(install.status.code(), Some(2), "{what}: {}", text(&install));
        let message = message.replace("CACHE", &cache.display().to_string());
        assert!(
            text(&install).contains(&message),
            "{what}: {}",
            text(&install)
        );
        assert_eq!(snapshot(&cache), before.0, "{what}: the cache changed");
        if let Some(victim_before) = victim_before {
            assert_eq!(
                snapshot(&victim),
                victim_before,
                "{what}: the link's target changed"
            );
        }
    }
}

#[test]
fn hostile_tools_install_replaces_only_its_own_leftovers() {
    use olmpack_envtest::binaries::Tool;
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    fake_cache(&source);
    let (_runtime, registry) = registry();
    let reference = pushed(&registry, &source, work.path());
    let cache = work.path().join("cache");
    // An incomplete tool directory an earlier install left (its owner marker, no binary), a
    // killed install's staging directory (its marker), and a directory of the same name
    // pattern that olmpack did not make.
    let opm = cache.join(Tool::Opm.cache_dir().unwrap());
    std::fs::create_dir_all(&opm).unwrap();
    std::fs::write(opm.join(olmpack::tools::OWNER), "installed by olmpack\n").unwrap();
    let killed = cache.join(".tools-install-killed");
    std::fs::create_dir_all(killed.join("tree")).unwrap();
    std::fs::write(killed.join(olmpack::tools::STAGING_OWNER), "staging\n").unwrap();
    let foreign = cache.join(".tools-install-not-ours");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("data"), "keep\n").unwrap();

    let install = olmpack(&["tools", "install", "--from", &reference], &cache);
    assert!(install.status.success(), "{}", text(&install));
    assert!(
        !killed.exists(),
        "the killed install's staging directory is left"
    );
    assert_eq!(
        std::fs::read_to_string(foreign.join("data")).unwrap(),
        "keep\n"
    );
    assert!(
        opm.join("bin/opm").is_file(),
        "the leftover tool directory is replaced"
    );
    let left: Vec<String> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert_eq!(
        left,
        [".tools-install-not-ours"],
        "staging data is left in the cache"
    );
}

/// A tool cache path that is a file is said to be a file (exit 2), not "already exists",
/// before anything is pulled.
#[test]
fn a_tool_cache_that_is_a_file_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::write(&cache, "not a directory").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args([
            "tools",
            "install",
            "--from",
            "127.0.0.1:9/olmpack/tools:none",
        ])
        .env("OLMPACK_TOOLS_DIR", &cache)
        .env_remove("OLMPACK_TOOLS_IMAGE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{}: is a file, not a directory", cache.display()))
            && !stderr.contains("already exists"),
        "{stderr}"
    );
}
