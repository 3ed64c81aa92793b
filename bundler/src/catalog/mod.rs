//! File-Based Catalogs (issue: olmpack catalog). Not built yet.
