//! What a `skipRange` covers, found without testing every bundle: the versions are sorted
//! once ([`ByVersion::new`], n·log n), and each interval of a range is found by binary search,
//! so a query costs log n plus what it returns. Every catalog algorithm that needs "the
//! entries a range covers" goes through here, which keeps them n·log n in bundles plus the
//! edges they report.
#![warn(missing_docs)]

use std::cmp::Ordering;

use olmpack_model::version::{Bound, Range, Version, cmp_versions};

/// Items ordered by version (blang's order; equal versions keep their given order).
#[derive(Clone, Debug)]
pub struct ByVersion<'a, T> {
    items: Vec<(&'a Version, T)>,
}

impl<'a, T: Copy> ByVersion<'a, T> {
    /// Sorts `items` by version.
    pub fn new(items: impl IntoIterator<Item = (&'a Version, T)>) -> Self {
        let mut items: Vec<(&'a Version, T)> = items.into_iter().collect();
        items.sort_by(|a, b| cmp_versions(a.0, b.0));
        ByVersion { items }
    }

    /// Every item, in version order.
    pub fn items(&self) -> &[(&'a Version, T)] {
        &self.items
    }

    /// Position of the first item whose version is at or above (`inclusive`) or above `v`.
    fn first_from(&self, v: &Version, inclusive: bool) -> usize {
        self.items
            .partition_point(|(x, _)| match cmp_versions(x, v) {
                Ordering::Less => true,
                Ordering::Equal => !inclusive,
                Ordering::Greater => false,
            })
    }

    /// Positions of the items whose version `range` contains and that lie within
    /// `[lo, hi]` (each bound inclusive or not, `None` for open), ascending, each once.
    pub fn covered(&self, range: &Range, lo: &Bound, hi: &Bound) -> Vec<usize> {
        let mut out = Vec::new();
        for (l, h) in range.intervals() {
            let l = tighter_low(l, lo.clone());
            let start = l.as_ref().map_or(0, |(v, inc)| self.first_from(v, *inc));
            for (i, (v, _)) in self.items.iter().enumerate().skip(start) {
                if !below(v, &h) || !below(v, hi) {
                    break;
                }
                if range.contains(v) {
                    out.push(i);
                }
            }
        }
        if range.intervals().len() > 1 {
            out.sort_unstable();
            out.dedup();
        }
        out
    }

    /// [`covered`](Self::covered), without bounds, over the positions not taken yet:
    /// `next_free[i]` (length `n + 1`, `next_free[n] == n`) leads to the first position at or
    /// after `i` that may be free, a skip list the caller updates as it takes positions, so
    /// runs of taken positions cost amortised constant time.
    pub fn covered_free(&self, range: &Range, next_free: &mut [usize]) -> Vec<usize> {
        let mut out = Vec::new();
        for (l, h) in range.intervals() {
            let mut i = l.as_ref().map_or(0, |(v, inc)| self.first_from(v, *inc));
            loop {
                i = first_free(next_free, i);
                let Some((v, _)) = self.items.get(i) else {
                    break;
                };
                if !below(v, &h) {
                    break;
                }
                if range.contains(v) {
                    out.push(i);
                }
                i += 1;
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Positions `start..end` of the items within `[lo, hi]` and within the upper bound
    /// `cap`: two binary searches.
    pub fn span(&self, lo: &Bound, hi: &Bound, cap: &Bound) -> std::ops::Range<usize> {
        let start = lo.as_ref().map_or(0, |(v, inc)| self.first_from(v, *inc));
        let end = self
            .items
            .partition_point(|(x, _)| below(x, hi) && below(x, cap));
        start..end.max(start)
    }

    /// The item at position `i`.
    pub fn get(&self, i: usize) -> (&'a Version, T) {
        self.items[i]
    }

    /// Whether `range` covers any item strictly below `v` (one binary search per interval,
    /// then at most the items a `!=` excludes).
    pub fn covers_any_below(&self, range: &Range, v: &Version) -> bool {
        range.intervals().into_iter().any(|(l, h)| {
            let start = l.as_ref().map_or(0, |(x, inc)| self.first_from(x, *inc));
            self.items[start..]
                .iter()
                .take_while(|(x, _)| cmp_versions(x, v) == Ordering::Less && below(x, &h))
                .any(|(x, _)| range.contains(x))
        })
    }
}

/// The first free position at or after `i` (path halving).
fn first_free(next: &mut [usize], mut i: usize) -> usize {
    while next[i] != i {
        next[i] = next[next[i]];
        i = next[i];
    }
    i
}

/// The higher of two lower bounds.
fn tighter_low(a: Bound, b: Bound) -> Bound {
    match (a, b) {
        (None, b) => b,
        (a, None) => a,
        (Some(a), Some(b)) => match cmp_versions(&a.0, &b.0) {
            Ordering::Equal => Some((a.0, a.1 && b.1)),
            Ordering::Greater => Some(a),
            Ordering::Less => Some(b),
        },
    }
}

/// Whether `v` is within the upper bound `hi`.
fn below(v: &Version, hi: &Bound) -> bool {
    match hi {
        None => true,
        Some((h, inclusive)) => match cmp_versions(v, h) {
            Ordering::Less => true,
            Ordering::Equal => *inclusive,
            Ordering::Greater => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use olmpack_model::version::parse_version;

    #[test]
    fn covered_matches_a_scan() {
        let versions: Vec<Version> = [
            "0.9.0",
            "1.0.0",
            "1.0.1",
            "1.1.0-rc.1",
            "1.1.0",
            "1.2.0",
            "2.0.0",
            "1.0.1",
        ]
        .iter()
        .map(|v| parse_version(v).unwrap())
        .collect();
        let sorted = ByVersion::new(versions.iter().enumerate().map(|(i, v)| (v, i)));
        let own = parse_version("1.2.0").unwrap();
        for text in [
            ">=1.0.0 <1.2.0",
            ">1.0.0 <=1.2.0 !=1.1.0",
            "<1.0.1 || >=1.1.0 <2.0.0",
            "1.x",
            ">=0.0.0",
            "=1.0.1",
            ">=3.0.0",
        ] {
            let range = Range::parse(text).unwrap();
            let mut fast: Vec<usize> = sorted
                .covered(&range, &None, &Some((own.clone(), false)))
                .into_iter()
                .map(|i| sorted.get(i).1)
                .collect();
            fast.sort_unstable();
            let slow: Vec<usize> = (0..versions.len())
                .filter(|&i| {
                    range.contains(&versions[i]) && cmp_versions(&versions[i], &own).is_lt()
                })
                .collect();
            assert_eq!(fast, slow, "{text}");
            assert_eq!(
                sorted.covers_any_below(&range, &own),
                !slow.is_empty(),
                "{text}"
            );
        }
    }
}
