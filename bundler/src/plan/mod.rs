//! The release plan (`olmpack.yaml`). In progress.
