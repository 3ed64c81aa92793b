//! Which version an installed bundle upgrades to, under OLM v0 and under OLM v1.
//!
//! OLM v0 (a Subscription to one channel): the channel head wins when its `skipRange` covers
//! the installed version (a `skipRange` on any other entry is ignored); otherwise an entry that
//! `replaces` or `skips` the installed bundle, the one closest to the head when there are
//! several.
//!
//! OLM v1 (a ClusterExtension on the channel, `upgradeConstraintPolicy: CatalogProvided`): any
//! entry whose `replaces`, `skips` or `skipRange` (on any entry, not only the head) names the
//! installed bundle; deprecated bundles last, then the highest version. There is no pruning:
//! a bundle skipped by another stays a valid target.
//!
//! Paths repeat the step until no successor is left; they are finite (a visited bundle ends
//! the walk).
#![warn(missing_docs)]

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use serde::Serialize;

use super::cover::ByVersion;
use super::model::{Channel, Package};
use olmpack_model::version::{Range, cmp_versions};

use olmpack_model::upgrade_graph::EdgeKind;

/// One upgrade hop: the bundle upgraded to and the edge that leads there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hop {
    /// The bundle upgraded to.
    pub to: String,
    /// Which kind of edge leads there (replaces, skips, skipRange).
    pub via: EdgeKind,
}

/// The paths an installed copy of one bundle would follow in one channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UpgradePath {
    /// The package.
    pub package: String,
    /// The channel.
    pub channel: String,
    /// The installed bundle the paths start from.
    pub bundle: String,
    /// The hops OLM v0 would take, in order.
    pub v0: Vec<Hop>,
    /// The hops OLM v1 would take, in order.
    pub v1: Vec<Hop>,
}

impl UpgradePath {
    /// True when OLM v0 and OLM v1 would pass through different bundles.
    pub fn differs(&self) -> bool {
        self.v0
            .iter()
            .map(|s| &s.to)
            .ne(self.v1.iter().map(|s| &s.to))
    }
}

/// `a → b (replaces) → c (skipRange)`.
pub fn describe(from: &str, hops: &[Hop]) -> String {
    let mut s = from.to_owned();
    for hop in hops {
        let via = hop.via.as_str();
        s.push_str(&format!(" → {} ({via})", hop.to));
    }
    if hops.is_empty() {
        s.push_str(" (no upgrade)");
    }
    s
}

pub(crate) fn covers(pkg: &Package, range: &str, bundle: &str) -> bool {
    if range.is_empty() {
        return false;
    }
    let (Ok(r), Some(Some(v))) = (
        Range::parse(range),
        pkg.bundles.get(bundle).map(|b| b.version.as_ref()),
    ) else {
        return false;
    };
    r.contains(v)
}

/// Distance of every entry from the head along `replaces`/`skips` edges.
fn distances(ch: &Channel, head: &str) -> BTreeMap<String, usize> {
    let mut dist = BTreeMap::new();
    let mut queue = VecDeque::from([(head.to_owned(), 0usize)]);
    while let Some((name, d)) = queue.pop_front() {
        if dist.contains_key(&name) {
            continue;
        }
        dist.insert(name.clone(), d);
        if let Some(e) = ch.entry(&name) {
            if !e.replaces.is_empty() {
                queue.push_back((e.replaces.clone(), d + 1));
            }
            for s in &e.skips {
                queue.push_back((s.clone(), d + 1));
            }
        }
    }
    dist
}

/// OLM v0's next bundle for `installed` in `ch` (module docs).
pub fn v0_successor(pkg: &Package, ch: &Channel, installed: &str) -> Option<Hop> {
    let head = ch.head()?;
    if head.name == installed {
        return None;
    }
    if covers(pkg, &head.skip_range, installed) {
        return Some(Hop {
            to: head.name.clone(),
            via: EdgeKind::SkipRange,
        });
    }
    let dist = distances(ch, &head.name);
    ch.entries
        .iter()
        .filter_map(|e| {
            if e.replaces == installed {
                Some((e, EdgeKind::Replaces))
            } else if e.skips.iter().any(|s| s == installed) {
                Some((e, EdgeKind::Skips))
            } else {
                None
            }
        })
        .min_by(|(a, _), (b, _)| {
            let da = dist.get(&a.name).copied().unwrap_or(usize::MAX);
            let db = dist.get(&b.name).copied().unwrap_or(usize::MAX);
            da.cmp(&db).then_with(|| a.name.cmp(&b.name))
        })
        .map(|(e, via)| Hop {
            to: e.name.clone(),
            via,
        })
}

/// Every relationship by which entry `to` of `ch` upgrades `from`, in the order replaces,
/// skips, skipRange (empty when `to` is not an entry of `ch` or none holds).
pub fn edges_between(pkg: &Package, ch: &Channel, from: &str, to: &str) -> Vec<EdgeKind> {
    let Some(entry) = ch.entries.iter().find(|e| e.name == to) else {
        return Vec::new();
    };
    let holds = [
        (EdgeKind::Replaces, entry.replaces == from),
        (EdgeKind::Skips, entry.skips.iter().any(|s| s == from)),
        (EdgeKind::SkipRange, covers(pkg, &entry.skip_range, from)),
    ];
    holds
        .into_iter()
        .filter_map(|(kind, holds)| holds.then_some(kind))
        .collect()
}

/// OLM v1's next bundle for `installed` among the entries of `channels` (module docs).
pub fn v1_successor(pkg: &Package, channels: &[&Channel], installed: &str) -> Option<Hop> {
    let mut candidates: BTreeMap<&str, EdgeKind> = BTreeMap::new();
    for ch in channels {
        for e in &ch.entries {
            if e.name == installed {
                continue;
            }
            let via = if e.replaces == installed {
                EdgeKind::Replaces
            } else if e.skips.iter().any(|s| s == installed) {
                EdgeKind::Skips
            } else if covers(pkg, &e.skip_range, installed) {
                EdgeKind::SkipRange
            } else {
                continue;
            };
            candidates.entry(e.name.as_str()).or_insert(via);
        }
    }
    candidates
        .into_iter()
        .max_by(|(a, _), (b, _)| {
            let (ba, bb) = (pkg.bundles.get(*a), pkg.bundles.get(*b));
            let dep = |x: Option<&super::model::Bundle>| x.is_some_and(|b| b.deprecation.is_some());
            // Not deprecated beats deprecated; then the higher version; then the name.
            dep(bb)
                .cmp(&dep(ba))
                .then_with(|| {
                    match (
                        ba.and_then(|b| b.version.as_ref()),
                        bb.and_then(|b| b.version.as_ref()),
                    ) {
                        (Some(x), Some(y)) => cmp_versions(x, y),
                        _ => std::cmp::Ordering::Equal,
                    }
                })
                .then_with(|| b.cmp(a))
        })
        .map(|(name, via)| Hop {
            to: name.to_owned(),
            via,
        })
}

fn walk(start: &str, mut next: impl FnMut(&str) -> Option<Hop>) -> Vec<Hop> {
    let mut seen = BTreeSet::from([start.to_owned()]);
    let mut steps = Vec::new();
    let mut cur = start.to_owned();
    while let Some(step) = next(&cur) {
        if !seen.insert(step.to.clone()) {
            break;
        }
        cur = step.to.clone();
        steps.push(step);
    }
    steps
}

/// The v0 and v1 paths of every entry of every channel of `pkg`, sorted by channel then
/// version. Each channel's successors are computed once ([`Successors`]), so the cost is
/// n·log n in the channel's entries plus the steps of the paths printed.
pub fn package_paths(pkg: &Package) -> Vec<UpgradePath> {
    let order: HashMap<&str, usize> = pkg
        .bundles_by_version()
        .iter()
        .enumerate()
        .map(|(i, b)| (b.name.as_str(), i))
        .collect();
    let mut out = Vec::new();
    for ch in pkg.channels.values() {
        let Some(succ) = Successors::new(pkg, ch) else {
            continue;
        };
        let mut names: Vec<&str> = ch.entries.iter().map(|e| e.name.as_str()).collect();
        names.sort_by_key(|n| order.get(n).copied().unwrap_or(usize::MAX));
        for name in names {
            out.push(UpgradePath {
                package: pkg.name.clone(),
                channel: ch.name.clone(),
                bundle: name.to_owned(),
                v0: walk(name, |cur| succ.v0.get(cur).cloned()),
                v1: walk(name, |cur| succ.v1.get(cur).cloned()),
            });
        }
    }
    out
}

/// The next bundle of every installed bundle of one channel with one head, under OLM v0
/// and OLM v1: the same answers as [`v0_successor`] and [`v1_successor`], all at once.
struct Successors {
    v0: HashMap<String, Hop>,
    v1: HashMap<String, Hop>,
}

impl Successors {
    fn new(pkg: &Package, ch: &Channel) -> Option<Self> {
        let heads = ch.heads();
        let [head] = heads.as_slice() else {
            return None;
        };
        let dist = distances(ch, &head.name);
        let at = |name: &str| dist.get(name).copied().unwrap_or(usize::MAX);
        // Explicit edges: installed → (entry, via), Replaces before Skips for one entry.
        let mut explicit: HashMap<&str, Vec<(&str, EdgeKind)>> = HashMap::new();
        for e in &ch.entries {
            if !e.replaces.is_empty() {
                explicit
                    .entry(e.replaces.as_str())
                    .or_default()
                    .push((e.name.as_str(), EdgeKind::Replaces));
            }
            for s in e.skips.iter().filter(|s| **s != e.replaces) {
                explicit
                    .entry(s.as_str())
                    .or_default()
                    .push((e.name.as_str(), EdgeKind::Skips));
            }
        }
        let head_range = Range::parse(&head.skip_range)
            .ok()
            .filter(|_| !head.skip_range.is_empty());
        let mut v0 = HashMap::new();
        for e in &ch.entries {
            let installed = e.name.as_str();
            if installed == head.name {
                continue;
            }
            let by_range = head_range.as_ref().is_some_and(|r| {
                pkg.bundles
                    .get(installed)
                    .and_then(|b| b.version.as_ref())
                    .is_some_and(|v| r.contains(v))
            });
            let step = if by_range {
                Some((head.name.as_str(), EdgeKind::SkipRange))
            } else {
                explicit.get(installed).and_then(|c| {
                    c.iter()
                        .copied()
                        .min_by(|(a, _), (b, _)| at(a).cmp(&at(b)).then_with(|| a.cmp(b)))
                })
            };
            if let Some((to, via)) = step {
                v0.insert(
                    installed.to_owned(),
                    Hop {
                        to: to.to_owned(),
                        via,
                    },
                );
            }
        }
        let v1 = v1_table(pkg, ch, &explicit);
        Some(Successors { v0, v1 })
    }
}

/// OLM v1's preference among candidates (module docs): not deprecated, then the higher
/// version, then the lower name; `Greater` is preferred.
fn v1_preference(pkg: &Package, a: &str, b: &str) -> std::cmp::Ordering {
    let (ba, bb) = (pkg.bundles.get(a), pkg.bundles.get(b));
    let dep = |x: Option<&super::model::Bundle>| x.is_some_and(|b| b.deprecation.is_some());
    dep(bb)
        .cmp(&dep(ba))
        .then_with(|| {
            match (
                ba.and_then(|b| b.version.as_ref()),
                bb.and_then(|b| b.version.as_ref()),
            ) {
                (Some(x), Some(y)) => cmp_versions(x, y),
                _ => std::cmp::Ordering::Equal,
            }
        })
        .then_with(|| b.cmp(a))
}

/// OLM v1's successor of every entry of `ch`. The best skipRange candidate of each installed
/// version is found by giving every entry, most preferred first, the versions its range
/// covers that no better entry took ([`ByVersion`] ranges, a skip list over taken positions):
/// n·log n however many versions each range covers.
fn v1_table(
    pkg: &Package,
    ch: &Channel,
    explicit: &HashMap<&str, Vec<(&str, EdgeKind)>>,
) -> HashMap<String, Hop> {
    let installed = ByVersion::new(ch.entries.iter().filter_map(|e| {
        let v = pkg.bundles.get(&e.name)?.version.as_ref()?;
        Some((v, e.name.as_str()))
    }));
    let mut ranged: Vec<(&str, Range)> = ch
        .entries
        .iter()
        .filter(|e| !e.skip_range.is_empty())
        .filter_map(|e| Some((e.name.as_str(), Range::parse(&e.skip_range).ok()?)))
        .collect();
    ranged.sort_by(|a, b| v1_preference(pkg, b.0, a.0));
    // next_free[i]: the first position at or after i not taken yet (path-halving skip list).
    let n = installed.items().len();
    let mut next_free: Vec<usize> = (0..=n).collect();
    let mut best_range: HashMap<&str, &str> = HashMap::new();
    for (name, range) in &ranged {
        for i in installed.covered_free(range, &mut next_free) {
            let target = installed.get(i).1;
            if target == *name {
                continue;
            }
            best_range.insert(target, *name);
            take(&mut next_free, i);
        }
    }
    let mut out = HashMap::new();
    for e in &ch.entries {
        let me = e.name.as_str();
        let mut best: Option<(&str, EdgeKind)> = None;
        let candidates = explicit
            .get(me)
            .into_iter()
            .flatten()
            .copied()
            .chain(best_range.get(me).map(|to| (*to, EdgeKind::SkipRange)));
        for (to, via) in candidates.filter(|(to, _)| *to != me) {
            best = match best {
                Some((b, bv)) if b == to => Some((b, bv)),
                Some((b, bv)) if v1_preference(pkg, to, b).is_le() => Some((b, bv)),
                _ => Some((to, via)),
            };
        }
        if let Some((to, via)) = best {
            out.insert(
                me.to_owned(),
                Hop {
                    to: to.to_owned(),
                    via,
                },
            );
        }
    }
    out
}

/// Marks position `i` taken in the skip list.
fn take(next_free: &mut [usize], i: usize) {
    next_free[i] = i + 1;
}

/// Text for `olmpack catalog upgrade-paths`: one block per channel.
pub fn format_text(paths: &[UpgradePath]) -> String {
    let mut out = String::new();
    let mut last: Option<(&str, &str)> = None;
    for p in paths {
        if last != Some((&p.package, &p.channel)) {
            out.push_str(&format!("{} / {}\n", p.package, p.channel));
            last = Some((&p.package, &p.channel));
        }
        out.push_str(&format!("  v0: {}\n", describe(&p.bundle, &p.v0)));
        if p.differs() {
            out.push_str(&format!(
                "  v1: {}   <- differs\n",
                describe(&p.bundle, &p.v1)
            ));
        } else {
            out.push_str("  v1: same\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::load::load_stream;
    use crate::catalog::model::Model;

    /// A small pseudo-random catalog (xorshift from `seed`): entries with random `replaces`,
    /// `skips`, `skipRange`s and deprecations.
    fn random_package(seed: u64) -> Package {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let count = 2 + next(10) as usize;
        let mut entries = Vec::new();
        let mut text = String::from(r#"{"schema":"olm.package","name":"p","defaultChannel":"c"}"#);
        let mut deprecated = Vec::new();
        for i in 0..count {
            let mut e = serde_json::json!({"name": format!("p.v1.{i}.0")});
            if i > 0 && next(4) > 0 {
                e["replaces"] = format!("p.v1.{}.0", next(i as u64)).into();
            }
            if i > 1 && next(3) == 0 {
                e["skips"] = vec![format!("p.v1.{}.0", next(i as u64))].into();
            }
            if next(3) == 0 {
                let lo = next(count as u64);
                let hi = lo + 1 + next(count as u64);
                e["skipRange"] = format!(">=1.{lo}.0 <1.{hi}.0").into();
            }
            if next(6) == 0 {
                deprecated.push(serde_json::json!({"reference":{"schema":"olm.bundle","name":format!("p.v1.{i}.0")},"message":"old"}));
            }
            entries.push(e);
        }
        text.push_str(
            &serde_json::json!({"schema":"olm.channel","package":"p","name":"c","entries":entries})
                .to_string(),
        );
        for i in 0..count {
            text.push_str(&format!(
                r#"{{"schema":"olm.bundle","package":"p","name":"p.v1.{i}.0","image":"x/p:{i}","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"1.{i}.0"}}}}]}}"#
            ));
        }
        if !deprecated.is_empty() {
            text.push_str(
                &serde_json::json!({"schema":"olm.deprecations","package":"p","entries":deprecated})
                    .to_string(),
            );
        }
        let cfg = load_stream(std::path::Path::new("c.json"), text.as_bytes()).config;
        Model::from_config(cfg).0.packages.remove("p").unwrap()
    }

    #[test]
    fn successor_tables_agree_with_the_one_at_a_time_rules() {
        for seed in 0..2000 {
            let pkg = random_package(seed);
            for path in package_paths(&pkg) {
                let ch = &pkg.channels[&path.channel];
                let v0 = walk(&path.bundle, |cur| v0_successor(&pkg, ch, cur));
                let v1 = walk(&path.bundle, |cur| v1_successor(&pkg, &[ch], cur));
                assert_eq!(path.v0, v0, "seed {seed}, v0 from {}", path.bundle);
                assert_eq!(path.v1, v1, "seed {seed}, v1 from {}", path.bundle);
            }
        }
    }
}
