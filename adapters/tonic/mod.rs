//! The tonic adapter (feature `tonic`).
