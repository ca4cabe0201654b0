//! loom models of podq's concurrent core.
//!
//! The protocol files of `crates/podq/src` that only use `crate::sync` are compiled here a
//! second time with `sync` pointing at loom, so `cargo test --workspace` explores their
//! interleavings without a special `--cfg loom` build.
