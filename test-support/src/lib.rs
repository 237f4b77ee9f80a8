//! What the workspace's tests, benches and example servers share, in one
//! place: the counting allocator ([`alloc`]), a raw HTTP/2 gRPC peer for
//! sending what no framework would ([`raw_h2`]), and waiting for counters
//! to come to rest ([`settle`]); a server task a test owns ([`running`]) and
//! a source of message bursts ([`burst`]); a server binary a test starts
//! ([`process`]); the process's resident memory, which sees C allocations
//! ([`rss`]); compressible payloads ([`data`]); what an example server
//! reports about its heap and budget, on request and at exit ([`reports`]);
//! a fault soak against a budgeted server ([`soak`]); a user's crate a test
//! builds with cargo ([`fixture`]); one behaviour suite, its cases defined
//! once and run against either adapter's server and client ([`behaviour`]);
//! with the `metrics` feature, what an OpenTelemetry meter recorded
//! ([`metrics`]); with `metrics-listen`, the example servers' Prometheus
//! endpoint and its scraper ([`metrics_listen`]).
//!
//! It knows nothing of grpc-stream-codec, tonic or volo-grpc, so every
//! crate of the workspace can use it without a dependency cycle.
#![warn(missing_docs)]

pub mod alloc;
pub mod behaviour;
pub mod burst;
pub mod data;
#[cfg(feature = "events")]
pub mod events;
pub mod fixture;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "metrics-listen")]
pub mod metrics_listen;
pub mod process;
pub mod raw_h2;
pub mod reports;
pub mod rss;
pub mod running;
pub mod settle;
pub mod small_frames;
pub mod soak;
