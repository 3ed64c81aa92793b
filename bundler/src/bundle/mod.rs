//! registry+v1 bundles (issue: olmpack bundle). In progress.
