//! `cargo xtask test --timings`: every test's own time, and the ten slowest at the end.
//!
//! libtest reports a test's time only with `--report-time`, an unstable option of the stable
//! toolchain's harness; the lanes ([`crate::lanes`]) pass it to the test binaries (not the
//! compiler, so nothing is rebuilt) and hand each binary's output here with its name.

/// One test's time.
#[derive(Debug, PartialEq)]
pub struct Timed {
    /// Seconds.
    pub seconds: f64,
    /// The test binary (its file name without cargo's hash).
    pub binary: String,
    /// The test.
    pub test: String,
}

/// The times seen in the test run's output.
#[derive(Debug, Default)]
pub struct Timings {
    binary: String,
    seen: Vec<Timed>,
}

impl Timings {
    /// The binary whose output the next lines are.
    pub fn binary(&mut self, name: &str) {
        name.clone_into(&mut self.binary);
    }

    /// Takes one line of a binary's output.
    pub fn observe(&mut self, line: &str) {
        if let Some((test, seconds)) = parse_result(line) {
            self.seen.push(Timed {
                seconds,
                binary: self.binary.clone(),
                test: test.to_owned(),
            });
        }
    }

    /// The `n` slowest tests, slowest first.
    pub fn slowest(mut self, n: usize) -> Vec<Timed> {
        self.seen.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        self.seen.truncate(n);
        self.seen
    }
}

/// `test NAME ... ok <1.234s>` → (NAME, 1.234).
fn parse_result(line: &str) -> Option<(&str, f64)> {
    let rest = line.strip_prefix("test ")?;
    let (name, outcome) = rest.split_once(" ... ")?;
    let time = outcome.trim_end().strip_suffix("s>")?;
    let (_, seconds) = time.rsplit_once('<')?;
    Some((name, seconds.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_read_with_their_binary() {
        let mut t = Timings::default();
        t.binary("olm_shards");
        for line in [
            "running 2 tests",
            "test merge_shards_writes_all_or_nothing ... ok <0.036s>",
            "test a::b ... FAILED <12.500s>",
            "test slow has been running for over 60 seconds",
            "test ignored_one ... ignored",
        ] {
            t.observe(line);
        }
        t.binary("xtask");
        t.observe("test layout::x ... ok <3.000s>");
        let slowest = t.slowest(2);
        assert_eq!(
            slowest,
            [
                Timed {
                    seconds: 12.5,
                    binary: "olm_shards".into(),
                    test: "a::b".into()
                },
                Timed {
                    seconds: 3.0,
                    binary: "xtask".into(),
                    test: "layout::x".into()
                },
            ]
        );
    }
}
