//! Writes this instance made that its reflector stores may not show yet.
//!
//! Reconciles read from the stores, which lag the apiserver by one watch event. A reconcile
//! that runs right after this instance's own write (triggered, say, by a child's event that
//! arrived first) would find the old object, compute the same desired state and send the
//! same write again. [`RecentWrites`] remembers, per object, the digest of what was written
//! and the `resourceVersion` the store showed then: while the store still shows that
//! version, the same write is known to be done and is skipped. Any other version (our write
//! arrived, or someone else changed the object) clears the doubt and the normal comparison
//! decides. Entries are dropped when their WebApp is gone.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

/// Which of a WebApp's writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Write {
    Deployment,
    Service,
    Route,
    Status,
}

impl Write {
    const ALL: [Write; 4] = [
        Write::Deployment,
        Write::Service,
        Write::Route,
        Write::Status,
    ];
}

#[derive(Debug)]
struct Entry {
    /// The `resourceVersion` the store showed before the write (`None`: absent).
    seen: Option<String>,
    digest: u64,
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct RecentWrites {
    entries: Mutex<HashMap<(String, Write), Entry>>,
}

/// A digest of a JSON value (stable within this process).
pub fn digest(value: &serde_json::Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.to_string().hash(&mut hasher);
    hasher.finish()
}

impl RecentWrites {
    /// Whether `write` of WebApp `key` with `digest` was already sent while the store showed
    /// `seen` — and the store still shows `seen`.
    pub fn already_sent(&self, key: &str, write: Write, seen: Option<&str>, digest: u64) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(&(key.to_owned(), write))
            .is_some_and(|e| e.digest == digest && e.seen.as_deref() == seen)
    }

    /// Records that `write` of `key` with `digest` was sent while the store showed `seen`.
    pub fn sent(&self, key: &str, write: Write, seen: Option<&str>, digest: u64) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                (key.to_owned(), write),
                Entry {
                    seen: seen.map(str::to_owned),
                    digest,
                },
            );
    }

    /// Forgets every write of `key` (the WebApp is gone).
    pub fn forget(&self, key: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        for write in Write::ALL {
            entries.remove(&(key.to_owned(), write));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_skipped_only_while_the_store_shows_the_old_version() {
        let memo = RecentWrites::default();
        let d = digest(&serde_json::json!({"a": 1}));
        assert!(!memo.already_sent("ns/a", Write::Status, Some("5"), d));
        memo.sent("ns/a", Write::Status, Some("5"), d);
        assert!(memo.already_sent("ns/a", Write::Status, Some("5"), d));
        assert!(
            !memo.already_sent("ns/a", Write::Status, Some("6"), d),
            "store moved on"
        );
        assert!(
            !memo.already_sent("ns/a", Write::Status, Some("5"), d + 1),
            "other content"
        );
        assert!(
            !memo.already_sent("ns/a", Write::Service, Some("5"), d),
            "other write"
        );
        memo.forget("ns/a");
        assert!(!memo.already_sent("ns/a", Write::Status, Some("5"), d));
    }
}
