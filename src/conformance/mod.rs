//! The conformance harness (in progress).
