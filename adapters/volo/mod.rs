//! The volo-grpc adapter (feature `volo`): this crate's batching encoder and
//! frame-fed decoder inside volo-grpc 0.12 services and clients.
//!
//! A build-script hook ([`build::rewrite_out_dir`], after volo-build) points
//! the generated `SendEntryMessage` / `RecvEntryMessage` impls at [`encode`]
//! and [`RecvStream`] (volo-grpc's shapes, so handlers of streaming methods
//! take a `RecvStream<T>` and nothing else changes) and the generated
//! `*ClientBuilder::new` at [`ClientBuilder`]; [`include_service!`] includes
//! the output and fails the build, naming the fix, if the hook did not run.
//! Ready messages leave in batches (up to 32 KiB); each received message's
//! length is checked against a receive limit (default 4 MiB) before anything
//! is allocated, and decompression is bounded by it (`resource_exhausted`,
//! never an abort).
//!
//! Optional layers: [`LimitsLayer`] (per server or client limits; process
//! defaults: [`set_default_limits`], [`set_default_batch_threshold`]),
//! [`ReceiveBudgetLayer`] (a receive budget, [`crate::budget`]),
//! [`BinaryMetadataLayer`] (a server: `-bin` request metadata, which
//! volo-grpc 0.12.2's own scan panics on), [`DeflateNameLayer`] (a server)
//! and [`ClientCompressionLayer`] (a client): deflate under gRPC's name, not
//! volo-grpc's `zlib`.
//!
//! The repository's `docs/volo.md` has the complete set-up, each layer's
//! place and the peer input that panics volo-grpc.

// The files, by job (docs/architecture.md lays them beside tonic's):
// server and client glue: the server's layers (deflate under gRPC's name)
// and the generated clients' builder, whose transport shows the adapter
// the response headers; compression names for clients
#[cfg(feature = "volo")]
pub mod client;
#[cfg(feature = "volo")]
mod client_compression;
#[cfg(feature = "volo")]
mod server;
// receiving: the message stream generated code builds, and a body read
// without the headers
#[cfg(feature = "volo")]
mod recv;
#[cfg(feature = "volo")]
mod trailers_only;
// sending: the encoder generated code calls
#[cfg(feature = "volo")]
mod encode;
// conversions with volo-grpc: status, compression, metadata
#[cfg(feature = "volo")]
mod compression;
#[cfg(feature = "volo")]
mod metadata;
#[cfg(feature = "volo")]
mod status;
// limits and the receive budget, handed to generated code through a
// value scoped to one call
#[cfg(feature = "volo")]
mod budget;
#[cfg(feature = "volo")]
mod limits;
#[cfg(feature = "volo")]
mod scoped;
// the build hook and the include check it pairs with
pub mod build;
mod include;

#[doc(hidden)]
pub use include::__private;

#[doc(inline)]
pub use crate::__volo_include_service as include_service;

#[cfg(feature = "volo")]
pub use budget::{ReceiveBudgetLayer, ReceiveBudgetService, default_budget, set_default_budget};
#[cfg(feature = "volo")]
pub use client::ClientBuilder;
#[cfg(feature = "volo")]
pub use client_compression::{ClientCompressionLayer, ClientCompressionService};
#[cfg(feature = "volo")]
pub use compression::{compression_from_volo, encoding_from_volo, encoding_to_volo};
#[cfg(feature = "volo")]
pub use encode::{PilotaEncoder, encode, encode_with_config};
#[cfg(feature = "volo")]
pub use limits::{
    LimitsLayer, LimitsService, default_batch_threshold, default_limits,
    set_default_batch_threshold, set_default_limits,
};
#[cfg(feature = "volo")]
pub use metadata::{BinaryMetadata, BinaryMetadataLayer, BinaryMetadataService};
#[cfg(feature = "volo")]
pub use recv::{PilotaDecoder, RecvStream};
#[cfg(feature = "volo")]
pub use server::{DeflateName, DeflateNameLayer, rename_request_headers, rename_response_headers};
#[cfg(feature = "volo")]
pub use status::{code_from_volo, code_to_volo};
