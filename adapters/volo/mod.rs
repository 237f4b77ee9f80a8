//! The volo-grpc adapter (feature `volo`): this crate's batching encoder and
//! frame-fed decoder inside volo-grpc 0.12 services and clients.
//!
//! volo-build generates `SendEntryMessage` / `RecvEntryMessage` impls that
//! call `volo_grpc::codec::encode::encode` and `volo_grpc::RecvStream::new`.
//! This module has both with the same shapes ([`encode`], [`RecvStream`]),
//! and a build-script hook ([`build`]) rewrites the generated code to call
//! them. What changes for the service:
//!
//! - ready streamed messages leave in batches (up to 32 KiB) instead of one
//!   frame per message and per node; `None` and `Some(Identity)` send flag 0;
//! - each received message's length is checked against a receive limit
//!   (default 4 MiB) before anything is allocated, and decompression is
//!   bounded by it: too large is `resource_exhausted`, never an abort;
//! - volo-grpc's `zlib` is gRPC's `deflate`.
//!
//! # Turning it on
//!
//! 1. `Cargo.toml`:
//!
//!    ```toml
//!    [dependencies]
//!    grpc-stream-codec = { version = "0.1", features = ["volo"] }
//!
//!    [build-dependencies]
//!    volo-build = "0.12"
//!    # The hook alone: plain std, no volo-grpc in the build script.
//!    grpc-stream-codec = { version = "0.1", default-features = false, features = ["volo-build-hook"] }
//!    ```
//!
//! 2. `build.rs`: after volo-build has written its output, rewrite it (every
//!    `.rs` file under `OUT_DIR`, also with `split_generated_files(true)`):
//!
//!    ```no_run
//!    // build.rs, in `fn main`:
//!    // volo_build::ConfigBuilder::default().write()?; (or Builder::protobuf()...write()?)
//!    grpc_stream_codec::volo::build::rewrite_out_dir()?;
//!    # Ok::<(), Box<dyn std::error::Error>>(())
//!    ```
//!
//!    and include the output with [`include_service!`] instead of
//!    `volo::include_service!`, so a hook called before volo-build, or not
//!    at all, fails the build with a message naming the fix:
//!
//!    ```ignore
//!    mod generated {
//!        grpc_stream_codec::volo::include_service!("volo_gen.rs");
//!    }
//!    ```
//!
//! 3. Handlers of client-streaming and bidi methods now take
//!    `volo_grpc::Request<grpc_stream_codec::volo::RecvStream<T>>` (it is a
//!    `Stream<Item = Result<T, volo_grpc::Status>>` with `message()` and
//!    `trailers()`, like volo-grpc's). Nothing else in the service changes.
//!
//! 4. Clients need nothing more. The hook also points the generated
//!    `*ClientBuilder::new` at this module's [`ClientBuilder`]: volo-grpc's
//!    builder, same methods, whose transport hands the response headers to
//!    the adapter's stream (so a *trailers-only* `OK`, grpcio's and
//!    grpc-go's answer to a call with no messages, ends the stream `OK`) and
//!    reads them without volo-grpc's panics ([`client`]).
//!    [`ClientCompressionLayer`] is only for compression under gRPC's names
//!    (below).
//!
//! 5. Optionally, a [`LimitsLayer`] gives one server (`layer_front`) or one
//!    client (`layer_inner`) its own receive and send limits;
//!    [`set_default_limits`] at start-up changes them for every other
//!    stream, and [`set_default_batch_threshold`] the batch threshold of
//!    every response (0: one message per batch).
//!
//! 6. Optionally, a receive budget bounds what all streams together hold
//!    for received messages ([`crate::budget`]): `layer_front(ReceiveBudgetLayer::new(budget))`
//!    on a server, `layer_inner(..)` on a client ([`ReceiveBudgetLayer`]),
//!    [`set_default_budget`] for the whole process, or
//!    [`RecvStream::with_budget`] per stream.
//!
//! The rewrite fails the build, naming the file, if volo-build's output does
//! not have the calls it expects, rather than leaving a service on the stock
//! path without saying so.
//!
//! # Peer input that panics volo-grpc 0.12.2
//!
//! - Server: volo-grpc's metadata scan panics (`unreachable!()`,
//!   `server/meta.rs`) on any request with binary (`-bin`) metadata, which
//!   other gRPC clients send freely, before any generated code runs. A
//!   server adds `Server::new().layer_tower(BinaryMetadataLayer)`
//!   ([`BinaryMetadataLayer`]): valid entries move into a [`BinaryMetadata`]
//!   request extension (decoded by [`BinaryMetadata::get_bin`]), a value
//!   that is not base64 is answered `internal`. This is the one guard the
//!   adapter cannot install itself: volo-grpc's `Server` is not generated.
//! - Client: binary response headers (`unreachable!()`, `client/meta.rs`)
//!   and a trailers-only response with an invalid `grpc-status-details-bin`
//!   (`.expect`, `status.rs`). Clients generated through the hook are
//!   shielded by construction: their [`ClientBuilder`] reads the response
//!   headers first ([`client`]).
//!
//! # Deflate with other gRPC implementations
//!
//! volo-grpc 0.12 calls deflate `zlib` in `grpc-encoding` and
//! `grpc-accept-encoding`, and reads those headers itself before the adapter
//! sees a message, so on its own it neither understands nor is understood by
//! grpcio, grpc-go or tonic, which say `deflate`. One line on each side
//! fixes it:
//!
//! - server: `Server::new().layer_front(grpc_stream_codec::volo::DeflateNameLayer)`
//!   renames the headers on the way in and out ([`DeflateNameLayer`]); the
//!   service must list volo-grpc's `Zlib` in its send/accept compressions;
//! - client: `.layer_inner(grpc_stream_codec::volo::ClientCompressionLayer::new(send, accept))`
//!   on the client builder, *instead of* `send_compressions`/`accept_compressions`
//!   ([`ClientCompressionLayer`]; volo-grpc's client writes those headers
//!   after every layer, so the layer takes the compression over).

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

#[cfg(all(test, feature = "volo"))]
mod tests;
