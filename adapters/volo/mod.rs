//! The volo-grpc adapter (feature `volo`): this crate's batching encoder and
//! frame-fed decoder inside volo-grpc 0.12 services and clients.
//!
//! A build-script hook ([`build::rewrite_out_dir`], after volo-build) points
//! the generated `SendEntryMessage` / `RecvEntryMessage` impls at this
//! crate's encoder and [`RecvStream`] (volo-grpc's shapes, so handlers of
//! streaming methods take a `RecvStream<T>` and nothing else changes) and
//! the generated `*ClientBuilder::new` at [`ClientBuilder`];
//! [`include_service!`] includes the output and fails the build, naming the
//! fix, if the hook did not run.
//! Ready messages leave in batches (up to 32 KiB); each received message's
//! length is checked against a receive limit (default 4 MiB) before anything
//! is allocated, and decompression is bounded by it (`resource_exhausted`,
//! never an abort).
//!
//! Optional layers: [`LimitsLayer`] (per server or client limits; process
//! defaults: [`set_default_limits`],
//! [`set_default_batch_threshold`](crate::encode::set_default_batch_threshold)),
//! [`ReceiveBudgetLayer`](crate::budget::ReceiveBudgetLayer) (a receive budget),
//! [`BinaryMetadataLayer`] (a server: `-bin` request metadata, which
//! volo-grpc 0.12.2's own scan panics on, and deflate under gRPC's name),
//! [`DeflateNameLayer`] (a server, the renaming alone) and
//! [`ClientCompressionLayer`] (a client): deflate under gRPC's name, not
//! volo-grpc's `zlib`.
//!
//! The repository's `docs/volo.md` has the complete set-up, each layer's
//! place and the peer input that panics volo-grpc.

// The files, by job (docs/architecture.md lays them beside tonic's). The
// build hook and the include check it pairs with build without volo-grpc:
pub mod build;

#[doc(inline)]
pub use crate::{__volo_include_file as include_file, __volo_include_service as include_service};

with_feature! {"volo",
    // server and client glue: the server's layers (deflate under gRPC's
    // name) and the generated clients' builder, whose transport shows the
    // adapter the response headers; compression names for clients
    mod call_scope;
    mod client;
    mod client_compression;
    mod client_connect;
    mod client_transport;
    mod server;
    // receiving: the message stream generated code builds, and a body read
    // without the headers
    pub(crate) mod recv;
    mod trailers_only;
    // sending: the encoder generated code calls
    pub(crate) mod encode;
    // conversions with volo-grpc: status, compression, metadata
    mod compression;
    mod call_guard;
    mod metadata;
    mod status;
    // limits and the receive budget, handed to generated code through a
    // value scoped to one call
    mod budget;
    mod limits;
    mod scoped;
    // the shape every layer's service has
    mod service;

    pub use budget::{default_budget, set_default_budget};
    pub use client::ClientBuilder;
    pub use client_compression::{ClientCompressionLayer, ClientCompressionService};
    pub use compression::{compression_from_volo, encoding_from_volo, encoding_to_volo};
    pub use limits::{LimitsLayer, LimitsService, default_limits, set_default_limits};
    pub use metadata::{BinaryMetadata, BinaryMetadataLayer, BinaryMetadataService};
    pub use recv::RecvStream;
    pub use server::{DeflateName, DeflateNameLayer};
    pub use status::{code_from_volo, code_to_volo};
}
