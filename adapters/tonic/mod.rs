//! The tonic adapter (feature `tonic`).

pub mod guard;
