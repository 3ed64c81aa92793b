//! olmpack: OLM bundles and File-Based Catalogs from one release plan.
