//! Bundle and catalog images without a container engine (issue: olmpack image). Not built yet.
