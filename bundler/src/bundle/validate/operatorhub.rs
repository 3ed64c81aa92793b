//! `operatorhub/` rules: what OperatorHub shows — provider, maintainers, links, icon,
//! description, capability level and categories.

use super::Context;
use super::csv::non_null;
use olmpack_model::decode::text;
use olmpack_model::report::Finding;

pub const CAPABILITIES: [&str; 5] = [
    "Basic Install",
    "Seamless Upgrades",
    "Full Lifecycle",
    "Deep Insights",
    "Auto Pilot",
];
pub const CATEGORIES: [&str; 16] = [
    "AI/Machine Learning",
    "Application Runtime",
    "Big Data",
    "Cloud Provider",
    "Developer Tools",
    "Database",
    "Integration & Delivery",
    "Logging & Tracing",
    "Monitoring",
    "Modernization & Migration",
    "Networking",
    "OpenShift Optional",
    "Security",
    "Storage",
    "Streaming & Messaging",
    "Observability",
];
const ICON_TYPES: [&str; 4] = ["image/gif", "image/jpeg", "image/png", "image/svg+xml"];

pub(super) fn check(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let spec = &ctx.spec;
    if text(spec.provider.as_ref().map_or(&None, |p| &p.name))
        .trim()
        .is_empty()
    {
        out.push(ctx.at(
            Finding::error("operatorhub/provider", "provider.name is required"),
            "spec.provider.name",
        ));
    }
    if text(&spec.description).trim().is_empty() {
        out.push(ctx.at(
            Finding::warning("operatorhub/description", "spec.description is empty"),
            "spec.description",
        ));
    }
    check_maintainers(ctx, out);
    check_links(ctx, out);
    check_icon(ctx, out);
    check_capabilities(ctx, out);
    check_categories(ctx, out);
    if spec.keywords.is_none() && !non_null(&spec.extra, "keywords") {
        out.push(ctx.at(
            Finding::info(
                "operatorhub/keywords",
                "no keywords: the operator is harder to find",
            ),
            "spec.keywords",
        ));
    }
}

/// Every maintainer has a name and a plausible email address.
fn check_maintainers(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    for (i, m) in ctx.spec.maintainers.iter().flatten().enumerate() {
        let email = text(&m.email);
        if text(&m.name).is_empty() || email.is_empty() {
            out.push(ctx.at(
                Finding::error(
                    "operatorhub/maintainer",
                    "a maintainer needs a name and an email",
                ),
                format!("spec.maintainers[{i}]"),
            ));
        } else if !valid_email(email) {
            out.push(ctx.at(
                Finding::error(
                    "operatorhub/maintainer",
                    format!("{email:?} is not an email address"),
                ),
                format!("spec.maintainers[{i}].email"),
            ));
        }
    }
}

/// Every link has a name and an absolute http(s) URL.
fn check_links(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    for (i, l) in ctx.spec.links.iter().flatten().enumerate() {
        let url = text(&l.url);
        if text(&l.name).is_empty() || url.is_empty() {
            out.push(ctx.at(
                Finding::error("operatorhub/link", "a link needs a name and a url"),
                format!("spec.links[{i}]"),
            ));
        } else if !(url.starts_with("https://") || url.starts_with("http://"))
            || url.len() < 10
            || url.contains(char::is_whitespace)
        {
            out.push(ctx.at(
                Finding::error(
                    "operatorhub/link",
                    format!("{url:?} is not an absolute http(s) URL"),
                ),
                format!("spec.links[{i}].url"),
            ));
        }
    }
}

/// Exactly one icon, with data and a media type OperatorHub shows.
fn check_icon(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let icons = ctx.spec.icon.as_deref().unwrap_or_default();
    match icons.len() {
        0 => out.push(ctx.at(
            Finding::warning("operatorhub/icon", "no icon: consoles show a placeholder"),
            "spec.icon",
        )),
        1 => {
            let icon = &icons[0];
            let mediatype = text(&icon.mediatype);
            if text(&icon.base64data).is_empty() || mediatype.is_empty() {
                out.push(ctx.at(
                    Finding::error(
                        "operatorhub/icon",
                        "the icon needs base64data and mediatype",
                    ),
                    "spec.icon[0]",
                ));
            } else if !ICON_TYPES.contains(&mediatype) {
                out.push(ctx.at(
                    Finding::error(
                        "operatorhub/icon",
                        format!(
                            "icon mediatype {:?} is not one of {}",
                            mediatype,
                            ICON_TYPES.join(", ")
                        ),
                    ),
                    "spec.icon[0].mediatype",
                ));
            }
        }
        n => out.push(ctx.at(
            Finding::error(
                "operatorhub/icon",
                format!("{n} icons; OperatorHub takes exactly one"),
            ),
            "spec.icon",
        )),
    }
}

/// The `capabilities` annotation is set to one of OperatorHub's levels.
fn check_capabilities(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    match ctx.annotation("capabilities") {
        None => out.push(ctx.at(
            Finding::warning("operatorhub/capabilities", "no capabilities annotation"),
            "metadata.annotations.capabilities",
        )),
        Some(level) if !CAPABILITIES.contains(&level) => out.push(ctx.at(
            Finding::error(
                "operatorhub/capabilities",
                format!(
                    "capabilities {level:?} is not one of {}",
                    CAPABILITIES.join(", ")
                ),
            ),
            "metadata.annotations.capabilities",
        )),
        Some(_) => {}
    }
}

/// Every category in the `categories` annotation is one of OperatorHub's.
fn check_categories(ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(categories) = ctx.annotation("categories") else {
        return;
    };
    for category in categories
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        if !CATEGORIES.contains(&category) {
            out.push(ctx.at(
                Finding::warning(
                    "operatorhub/categories",
                    format!("category {category:?} is not one of OperatorHub's"),
                ),
                "metadata.annotations.categories",
            ));
        }
    }
}

/// A pragmatic RFC 5322 check: one `@`, a non-empty local part, a dotted domain.
fn valid_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.contains(char::is_whitespace)
}
