//! Child processes that cannot outlive their test.
//!
//! Guarantees:
//! - A [`ChildProcess`] is killed (SIGKILL) and reaped when it is dropped, including while a
//!   test unwinds from a panic.
//! - If the test process itself dies without unwinding (SIGKILL, `abort`, a harness timeout),
//!   the kernel kills the children too: every child is started with `PR_SET_PDEATHSIG`
//!   from one long-lived spawner thread (the signal fires when the *thread* that forked the
//!   child exits, so children are never forked from short-lived test threads).
//! - Output goes to a log file next to the process's data, so a failed start can show why.
//! - A process started with [`ChildProcess::start_group`] leads a process group of its own,
//!   and stopping it kills the whole group: a shell and every program it started. (The
//!   parent-death signal reaches only the group leader; the others are killed on drop.)
//! - The tools started with [`ChildProcess::start`] or [`ChildProcess::start_with_env`] are
//!   Go programs that live for seconds to minutes: they collect garbage less often
//!   ([`TOOL_GC`]), unless olmpack's own environment sets `GOGC` or `GOMEMLIMIT`. Programs
//!   of a [`ChildProcess::start_group`] (the user's commands) get the environment unchanged.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

/// Failure to start or watch a child process.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("failed to create log file {path}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to start {program}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name} exited during start-up ({status}); last output:\n{log_tail}")]
    Exited {
        name: String,
        status: String,
        log_tail: String,
    },
    #[error("{name} was not ready after {waited:?}; last output:\n{log_tail}")]
    NotReady {
        name: String,
        waited: Duration,
        log_tail: String,
    },
}

/// The Go runtime's settings for the tools: the collector runs when the heap has grown by
/// 400 % rather than 100 % (about a fifth less CPU to bring up an OLM environment, for about
/// half as much memory again at its peak), and more often than that only near a soft limit
/// of 2 GiB per process.
pub const TOOL_GC: [(&str, &str); 2] = [("GOGC", "400"), ("GOMEMLIMIT", "2GiB")];

/// Environment variables as `(name, value)` pairs.
type EnvPairs = &'static [(&'static str, &'static str)];

/// [`TOOL_GC`], or nothing when olmpack's own environment already tunes Go's collector (then
/// the tools inherit that).
fn tool_gc() -> EnvPairs {
    tool_gc_unless(|name| std::env::var_os(name).is_some())
}

/// [`TOOL_GC`], or nothing when `is_set` says one of its variables is already set.
fn tool_gc_unless(is_set: impl Fn(&str) -> bool) -> EnvPairs {
    if TOOL_GC.iter().any(|(name, _)| is_set(name)) {
        &[]
    } else {
        &TOOL_GC
    }
}

/// How a child is started: its own process group or not, the network namespace it
/// enters (a descriptor of [`crate::netns::NetNs`], kept open by the caller until spawned)
/// and the mounts of a mount namespace of its own ([`crate::container::Mounts`]).
#[derive(Clone, Debug, Default)]
struct Placement {
    group: bool,
    netns: Option<std::os::fd::RawFd>,
    mounts: Option<std::sync::Arc<crate::container::Mounts>>,
}

type SpawnRequest = (Command, Placement, mpsc::Sender<std::io::Result<Child>>);

/// Sends commands to the one thread that forks every child (see the module docs).
fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("upgrade-tests-spawner".into())
            .spawn(move || {
                for (mut cmd, placement, reply) in rx {
                    let _ = reply.send(spawn_with_parent_death_signal(&mut cmd, placement));
                }
            })
            .expect("the OS refused to start the spawner thread");
        Mutex::new(tx)
    })
}

#[allow(unsafe_code)]
fn spawn_with_parent_death_signal(
    cmd: &mut Command,
    placement: Placement,
) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    if placement.group {
        cmd.process_group(0);
    }
    // SAFETY: the closure runs between fork and exec and calls only prctl, getppid, setns,
    // unshare, mount and chdir, all async-signal-safe; it allocates nothing and takes no
    // locks.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = placement.netns {
                crate::netns::enter(fd)?;
            }
            if let Some(mounts) = &placement.mounts {
                mounts.apply()?;
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() == 1 {
                return Err(std::io::Error::other("parent exited during spawn"));
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// A running child process, killed on drop.
#[derive(Debug)]
pub struct ChildProcess {
    name: String,
    child: Child,
    log: PathBuf,
    /// Where the log's lines of interest start ([`ChildProcess::mark_log`]).
    log_from: u64,
    /// Leads its own process group (killed as a whole).
    group: bool,
}

impl ChildProcess {
    /// Starts `program args…` with stdout and stderr appended to `log`.
    pub fn start(
        name: &str,
        program: &Path,
        args: &[String],
        log: &Path,
    ) -> Result<Self, ProcessError> {
        Self::start_with_env(name, program, args, &[], log)
    }

    /// Like [`ChildProcess::start`], with extra environment variables.
    pub fn start_with_env(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        log: &Path,
    ) -> Result<Self, ProcessError> {
        Self::spawn(name, program, args, env, log, Placement::default())
    }

    /// Like [`ChildProcess::start_with_env`], as the leader of a new process group that is
    /// killed as a whole (for `sh -c SCRIPT`, whose programs are the shell's children).
    pub fn start_group(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        log: &Path,
    ) -> Result<Self, ProcessError> {
        Self::start_group_in(name, program, args, env, log, None)
    }

    /// Like [`ChildProcess::start_group`], inside the network namespace `netns` (this
    /// machine's network when `None`).
    pub fn start_group_in(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        log: &Path,
        netns: Option<&crate::netns::NetNs>,
    ) -> Result<Self, ProcessError> {
        let placement = Placement {
            group: true,
            netns: netns.map(crate::netns::NetNs::raw_fd),
            mounts: None,
        };
        Self::spawn(name, program, args, env, log, placement)
    }

    /// Like [`ChildProcess::start_group_in`], also in a mount namespace of its own with
    /// `mounts` applied (a pod's volumes and working directory; see [`crate::container`]).
    pub fn start_container(
        name: &str,
        command: (&Path, &[String]),
        env: &[(String, String)],
        log: &Path,
        netns: Option<&crate::netns::NetNs>,
        mounts: crate::container::Mounts,
    ) -> Result<Self, ProcessError> {
        let placement = Placement {
            group: true,
            netns: netns.map(crate::netns::NetNs::raw_fd),
            mounts: (!mounts.is_empty()).then(|| std::sync::Arc::new(mounts)),
        };
        Self::spawn(name, command.0, command.1, env, log, placement)
    }

    fn spawn(
        name: &str,
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        log: &Path,
        placement: Placement,
    ) -> Result<Self, ProcessError> {
        let file = File::create(log).map_err(|source| ProcessError::Log {
            path: log.to_owned(),
            source,
        })?;
        let err_file = file.try_clone().map_err(|source| ProcessError::Log {
            path: log.to_owned(),
            source,
        })?;
        let mut cmd = Command::new(program);
        let group = placement.group;
        if !group {
            cmd.envs(tool_gc().iter().copied());
        }
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err_file);
        let (tx, rx) = mpsc::channel();
        let spawn_err = |source| ProcessError::Spawn {
            program: program.display().to_string(),
            source,
        };
        spawner()
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .send((cmd, placement, tx))
            .map_err(|_| spawn_err(std::io::Error::other("spawner thread is gone")))?;
        let child = rx
            .recv()
            .map_err(|_| spawn_err(std::io::Error::other("spawner thread is gone")))?
            .map_err(spawn_err)?;
        Ok(Self {
            name: name.to_owned(),
            child,
            log: log.to_owned(),
            log_from: 0,
            group,
        })
    }

    /// The operating-system process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log file that receives the process's output.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// An error if the process has exited (with the end of its log).
    pub fn check_running(&mut self) -> Result<(), ProcessError> {
        match self.child.try_wait() {
            Ok(Some(status)) => Err(ProcessError::Exited {
                name: self.name.clone(),
                status: status.to_string(),
                log_tail: self.log_tail(),
            }),
            _ => Ok(()),
        }
    }

    /// A not-ready error carrying the end of the log.
    pub fn not_ready(&self, waited: Duration) -> ProcessError {
        ProcessError::NotReady {
            name: self.name.clone(),
            waited,
            log_tail: self.log_tail(),
        }
    }

    /// The last 4 KiB of the process's output (since [`ChildProcess::mark_log`]).
    pub fn log_tail(&self) -> String {
        log_tail(&self.log, 4096, self.log_from)
    }

    /// From now on, [`ChildProcess::log_tail`] and [`ChildProcess::log_lines_containing`]
    /// read only what the process writes after this call (for a process that serves one
    /// user after another).
    pub fn mark_log(&mut self) {
        self.log_from = std::fs::metadata(&self.log).map_or(0, |m| m.len());
    }

    /// The last `last` lines of the log (since [`ChildProcess::mark_log`]) that contain
    /// `needle` (none when the log cannot be read).
    pub fn log_lines_containing(&self, needle: &str, last: usize) -> Vec<String> {
        let text = read_tail(&self.log, u64::MAX, self.log_from);
        let text = String::from_utf8_lossy(&text);
        let found: Vec<&str> = text.lines().filter(|l| l.contains(needle)).collect();
        found[found.len().saturating_sub(last)..]
            .iter()
            .map(|l| (*l).to_owned())
            .collect()
    }

    /// Kills the process (its whole group, when it leads one) and waits for it; idempotent.
    pub fn stop(&mut self) {
        if self.group {
            kill_group(self.child.id());
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// SIGKILL to every process of group `leader` (the group outlives its leader's exit).
#[allow(unsafe_code)]
fn kill_group(leader: u32) {
    let Ok(pgid) = libc::pid_t::try_from(leader) else {
        return;
    };
    // SAFETY: kill(2) with a negative pid signals that process group; no memory is shared.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// The last 4 KiB of the log file at `path` (empty when it cannot be read), e.g. of a
/// process that has already been stopped.
pub fn log_tail_of(path: &Path) -> String {
    log_tail(path, 4096, 0)
}

/// The last `max` bytes of the file at `path`, none before offset `from`.
fn log_tail(path: &Path, max: u64, from: u64) -> String {
    String::from_utf8_lossy(&read_tail(path, max, from)).into_owned()
}

/// The last `max` bytes of the file at `path`, none before offset `from` (empty when it
/// cannot be read).
fn read_tail(path: &Path, max: u64, from: u64) -> Vec<u8> {
    let Ok(mut file) = File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(max).max(from)));
    let mut buf = Vec::new();
    let _ = file.read_to_end(&mut buf);
    buf
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
///
/// Another process may take it before ours binds it; callers retry their start-up on a
/// bind failure (see [`crate::control_plane::TestEnv`]).
pub fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

/// Polls `probe` every 100 ms until it returns true, the process exits, or `timeout` passes.
pub async fn wait_until<F, Fut>(
    process: &mut ChildProcess,
    timeout: Duration,
    mut probe: F,
) -> Result<(), ProcessError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = std::time::Instant::now();
    loop {
        process.check_running()?;
        if probe().await {
            return Ok(());
        }
        if started.elapsed() > timeout {
            return Err(process.not_ready(timeout));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After `mark_log`, the tail and the searched lines hold only what came later.
    #[test]
    fn a_marked_log_is_read_from_the_mark_on() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let script = "echo 'first: level=error'; exec sleep 300";
        let mut process = ChildProcess::start(
            "shell",
            Path::new("sh"),
            &["-c".to_owned(), script.to_owned()],
            &log,
        )
        .unwrap();
        let started = std::time::Instant::now();
        while process.log_lines_containing("level=error", 5).is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nothing logged"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        process.mark_log();
        assert_eq!(process.log_tail(), "");
        assert!(process.log_lines_containing("level=error", 5).is_empty());
        let mut later = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        later.write_all(b"second: level=error\n").unwrap();
        assert_eq!(process.log_tail(), "second: level=error\n");
        assert_eq!(
            process.log_lines_containing("level=error", 5),
            ["second: level=error"]
        );
    }

    /// `sh -c` with two programs: stopping the group leader kills both, not only the shell.
    #[test]
    fn stopping_a_group_kills_every_program_of_the_shell() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let script = format!(
            "sleep 300 & echo $! > '{0}'; sleep 301 & echo $! >> '{0}'; wait",
            pids.display()
        );
        let mut shell = ChildProcess::start_group(
            "shell",
            Path::new("sh"),
            &["-c".to_owned(), script],
            &[],
            &dir.path().join("log"),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let children: Vec<i32> = loop {
            let text = std::fs::read_to_string(&pids).unwrap_or_default();
            let found: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if found.len() == 2 {
                break found;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "{text:?}");
            std::thread::sleep(Duration::from_millis(20));
        };
        shell.stop();
        for pid in children {
            let gone = (0..100).any(|_| {
                std::thread::sleep(Duration::from_millis(20));
                !alive(pid)
            });
            assert!(gone, "process {pid} of the shell outlived stop()");
        }
    }

    /// What `sh -c 'echo "$GOGC $GOMEMLIMIT"'` printed, started as a tool or as a group.
    fn go_settings_seen(group: bool) -> String {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let args = ["-c".to_owned(), r#"echo "$GOGC $GOMEMLIMIT""#.to_owned()];
        let mut child = match group {
            false => ChildProcess::start("sh", Path::new("sh"), &args, &log),
            true => ChildProcess::start_group("sh", Path::new("sh"), &args, &[], &log),
        }
        .unwrap();
        child.child.wait().unwrap();
        std::fs::read_to_string(&log).unwrap().trim().to_owned()
    }

    /// Either variable set by the user means the tools get neither from olmpack.
    #[test]
    fn a_user_setting_of_either_variable_wins() {
        let table: [(&[&str], EnvPairs); 4] = [
            (&[], &[("GOGC", "400"), ("GOMEMLIMIT", "2GiB")]),
            (&["GOGC"], &[]),
            (&["GOMEMLIMIT"], &[]),
            (&["GOGC", "GOMEMLIMIT"], &[]),
        ];
        for (set, want) in table {
            assert_eq!(tool_gc_unless(|name| set.contains(&name)), want, "{set:?}");
        }
    }

    /// Tools get the lazier collector; the user's commands get olmpack's environment as is.
    #[test]
    fn tools_collect_garbage_less_often_and_user_commands_are_left_alone() {
        let own = |name| std::env::var(name).unwrap_or_default();
        let inherited = format!("{} {}", own("GOGC"), own("GOMEMLIMIT"));
        let tools = match tool_gc().is_empty() {
            true => {
                eprintln!(
                    "NOT RUN: the tools' own GC settings (GOGC or GOMEMLIMIT is set here); only inheritance is checked"
                );
                inherited.clone()
            }
            false => "400 2GiB".to_owned(),
        };
        assert_eq!(go_settings_seen(false), tools.trim());
        assert_eq!(go_settings_seen(true), inherited.trim());
    }

    /// Whether `pid` exists and is not a zombie.
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(false)
    }
}
