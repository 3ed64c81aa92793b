//! Push and pull progress on stderr: a bar on a terminal, one plain line per blob otherwise.

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Where progress goes.
#[derive(Debug)]
pub enum Progress {
    /// An indicatif byte bar on stderr.
    Bar(Mutex<Option<ProgressBar>>),
    /// One line per event on stderr, for logs and CI.
    Lines,
    /// Nothing (library callers, tests).
    Quiet,
}

impl Progress {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn auto() -> Self {
        if std::io::stderr().is_terminal() {
            Progress::Bar(Mutex::new(None))
        } else {
            Progress::Lines
        }
    }

    /// Announces a transfer of `blobs` blobs totalling `bytes`.
    pub fn start(&self, what: &str, blobs: usize, bytes: u64) {
        match self {
            Progress::Bar(bar) => {
                let new = ProgressBar::with_draw_target(Some(bytes), ProgressDrawTarget::stderr());
                new.set_style(
                    ProgressStyle::with_template(
                        "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
                new.set_message(what.to_owned());
                *bar.lock().unwrap_or_else(|e| e.into_inner()) = Some(new);
            }
            Progress::Lines => {
                eprintln!("{what}: {blobs} blob(s), {}", human_bytes(bytes));
            }
            Progress::Quiet => {}
        }
    }

    /// One blob done: `action` is what happened to it (`pushed`, `exists`, `pulled`).
    pub fn blob(&self, action: &str, digest: &str, size: u64) {
        match self {
            Progress::Bar(bar) => {
                if let Some(bar) = bar.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                    bar.inc(size);
                }
            }
            Progress::Lines => {
                let short = digest.get(..19).unwrap_or(digest);
                eprintln!("  {action} {short} ({})", human_bytes(size));
            }
            Progress::Quiet => {}
        }
    }

    /// A step without bytes (a manifest, a tag).
    pub fn step(&self, message: &str) {
        match self {
            Progress::Bar(bar) => match bar.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                Some(bar) => bar.println(format!("  {message}")),
                // No transfer running yet (waiting for a lock, say): a plain line.
                None => eprintln!("  {message}"),
            },
            Progress::Lines => eprintln!("  {message}"),
            Progress::Quiet => {}
        }
    }

    /// Ends the transfer.
    pub fn finish(&self) {
        if let Progress::Bar(bar) = self
            && let Some(bar) = bar.lock().unwrap_or_else(|e| e.into_inner()).take()
        {
            bar.finish_and_clear();
        }
    }
}

/// `1536` → `1.5 KiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn human_bytes_uses_binary_units() {
        assert_eq!(super::human_bytes(12), "12 B");
        assert_eq!(super::human_bytes(1536), "1.5 KiB");
        assert_eq!(super::human_bytes(5 * 1024 * 1024), "5.0 MiB");
    }
}
