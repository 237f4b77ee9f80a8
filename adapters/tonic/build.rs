//! The build-script half of full framing: rewrites tonic-prost-build's
//! output so the generated servers and clients run on this crate's
//! `server::Grpc`, `client::Grpc`, `Streaming` and `ProstCodec` instead of
//! tonic's framing.
//!
//! This module is plain `std`. A `build.rs` gets it without tonic through the
//! `tonic-build-hook` feature:
//!
//! ```toml
//! [build-dependencies]
//! tonic-prost-build = "0.14"
//! grpc-stream-codec = { version = "0.1", default-features = false, features = ["tonic-build-hook"] }
//! ```
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     tonic_prost_build::configure()
//!         .bytes(".")
//!         .compile_protos(&["proto/echo.proto"], &["proto"])?;
//!     let report = grpc_stream_codec::tonic::build::rewrite_out_dir()?;
//!     println!("cargo:warning=rewrote {} generated files", report.files_rewritten);
//!     Ok(())
//! }
//! # mod tonic_prost_build {
//! #     pub fn configure() -> B { B }
//! #     pub struct B;
//! #     impl B {
//! #         pub fn bytes(self, _: &str) -> Self { self }
//! #         pub fn compile_protos(self, _: &[&str], _: &[&str]) -> std::io::Result<()> { Ok(()) }
//! #     }
//! # }
//! ```
//!
//! With `out_dir(dir)` on the builder, call [`rewrite_dir`]`(dir)` instead
//! (and give it only the directory of the output to rewrite: every `.rs` file
//! below it is rewritten). Setting `codec_path` is not needed; the stock codec
//! is rewritten too. The rewritten code names `::grpc_stream_codec::tonic`, so
//! the crate that includes it depends on `grpc-stream-codec` with the `tonic`
//! feature.
//!
//! What is rewritten, in code only (comments and string literals are left
//! alone), with or without a leading `::` and whatever whitespace sits around
//! the `::`:
//!
//! | tonic-prost-build 0.14 generates        | rewritten to                                                 |
//! |-----------------------------------------|--------------------------------------------------------------|
//! | `tonic::server::Grpc`                   | `::grpc_stream_codec::tonic::server::Grpc`                   |
//! | `tonic::server::ClientStreamingService` | `::grpc_stream_codec::tonic::server::ClientStreamingService` |
//! | `tonic::server::StreamingService`       | `::grpc_stream_codec::tonic::server::StreamingService`       |
//! | `tonic::Streaming`                      | `::grpc_stream_codec::tonic::Streaming`                      |
//! | `tonic::codec::Streaming`               | `::grpc_stream_codec::tonic::Streaming`                      |
//! | `tonic::client::Grpc`                   | `::grpc_stream_codec::tonic::client::Grpc`                   |
//! | `tonic_prost::ProstCodec`               | `::grpc_stream_codec::tonic::ProstCodec`                     |
//!
//! Paths are matched by whole segments from their start: `tonic::client::GrpcService`,
//! `tonic::server::UnaryService`, `tonic::server::ServerStreamingService`,
//! `tonic::server::NamedService`, `tonic::codegen::*`, `tonic::Request`,
//! `tonic::Status`, `tonic::body::Body` and the rest of tonic stay as they
//! are. So the client-streaming and bidi handlers of the generated service
//! trait take `tonic::Request<grpc_stream_codec::tonic::Streaming<T>>`, and
//! the client's streaming calls answer with this crate's `Streaming<T>`.
//!
//! `codec_path("grpc_stream_codec::tonic::ProstCodec")` (or this crate's
//! `ProstCodecWith`) is already right and stays. Any other `codec_path`
//! fails the build: full framing needs this crate's codec.
//!
//! Each file of the output also gets a marker appended, an import that
//! [`include_proto!`](crate::tonic::include_proto) checks for: include the
//! generated code with it (instead of `tonic::include_proto!`), and a file
//! the hook never saw, or one tonic-prost-build wrote after the hook ran (the
//! hook was called before it), fails to compile with a message naming the
//! fix, as the build's first error.
//!
//! The per-file rewrite ([`rewrite_source`]) is idempotent. The hook fails,
//! naming the file, rather than leaving stock framing in place when a file
//! holds a tonic-prost-build client or server but not the paths above that
//! such code contains (tonic-prost-build changed its output); and it fails
//! naming the fix when no file under the directory holds a generated client
//! or server (the hook ran on the wrong directory, before tonic-prost-build
//! on a clean build, or with both `build_client(false)` and
//! `build_server(false)`), or when every generated file there already carries
//! the marker (tonic-prost-build wrote nothing since the last rewrite, so
//! the hook runs before it). Its error's `Debug` form is its `Display` text.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::include::MARKER;
use crate::rewrite::{self, Rule, rule};

const SERVER_GRPC: usize = 0;
const CLIENT_STREAMING_SERVICE: usize = 1;
const STREAMING_SERVICE: usize = 2;
const STREAMING: usize = 3;
const CODEC_STREAMING: usize = 4;
const CLIENT_GRPC: usize = 5;
const PROST_CODEC: usize = 6;

/// The table, indexed by the constants above.
const RULES: &[Rule] = &[
    rule!(any tonic::server::Grpc => tonic::server::Grpc),
    rule!(any tonic::server::ClientStreamingService => tonic::server::ClientStreamingService),
    rule!(any tonic::server::StreamingService => tonic::server::StreamingService),
    rule!(any tonic::Streaming => tonic::Streaming),
    rule!(any tonic::codec::Streaming => tonic::Streaming),
    rule!(any tonic::client::Grpc => tonic::client::Grpc),
    rule!(any tonic_prost::ProstCodec => tonic::ProstCodec),
];

/// The first line of every file prost-build writes.
const PROST_HEADER: &str = "// This file is @generated by prost-build.";
/// Present in every generated server (`impl NamedService for FooServer`).
const NAMED_SERVICE: &[&str] = &["tonic", "server", "NamedService"];
/// Present in every generated client (`T: GrpcService<Body>`).
const GRPC_SERVICE: &[&str] = &["tonic", "client", "GrpcService"];
/// The per-method service traits a server implements that stay tonic's.
const UNARY_SERVICE: &[&str] = &["tonic", "server", "UnaryService"];
const SERVER_STREAMING_SERVICE: &[&str] = &["tonic", "server", "ServerStreamingService"];
/// Every generated client method takes one of these.
const INTO_REQUEST: &[&str] = &["tonic", "IntoRequest"];
const INTO_STREAMING_REQUEST: &[&str] = &["tonic", "IntoStreamingRequest"];
/// The only codec full framing runs on.
const OUR_CODEC: &[&str] = &["grpc_stream_codec", "tonic", "ProstCodec"];
/// This crate's codec with buffer settings from a type; full framing runs it too.
const OUR_CODEC_WITH: &[&str] = &["grpc_stream_codec", "tonic", "ProstCodecWith"];

/// What a rewrite found and changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RewriteReport {
    /// `.rs` files read.
    pub files_scanned: usize,
    /// Files whose text changed and was written back.
    pub files_rewritten: usize,
    /// Files holding a tonic-prost-build server or client.
    pub files_with_services: usize,
    /// Each count below is of paths pointing at this crate after the rewrite
    /// (rewritten now, or already so). `server::Grpc` paths.
    pub server_grpc_paths: usize,
    /// `client::Grpc` paths.
    pub client_grpc_paths: usize,
    /// `server::ClientStreamingService` and `server::StreamingService` paths.
    pub service_trait_paths: usize,
    /// `Streaming` paths (from `tonic::Streaming` and `tonic::codec::Streaming`).
    pub streaming_paths: usize,
    /// `ProstCodec` paths (from `tonic_prost::ProstCodec`, or set with `codec_path`).
    pub codec_paths: usize,
    /// Files that carry the marker
    /// [`include_proto!`](crate::tonic::include_proto) checks (added now, or
    /// by an earlier run to a file tonic-prost-build no longer writes).
    pub marked_files: usize,
}

impl RewriteReport {
    fn add(&mut self, source: &RewrittenSource) {
        self.server_grpc_paths += source.server_grpc_paths;
        self.client_grpc_paths += source.client_grpc_paths;
        self.service_trait_paths += source.service_trait_paths;
        self.streaming_paths += source.streaming_paths;
        self.codec_paths += source.codec_paths;
        if source.has_services {
            self.files_with_services += 1;
        }
    }
}

/// Why a rewrite failed.
///
/// Its `Debug` form is its `Display` text, so a `build.rs` whose `main`
/// returns `Result<(), Box<dyn Error>>` prints what to do, not the variant.
pub enum RewriteError {
    /// `OUT_DIR` is not set: [`rewrite_out_dir`] was called outside a build script.
    NoOutDir,
    /// Reading or writing a file failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// No file under the directory holds a tonic-prost-build server or client.
    NothingGenerated {
        /// The directory searched.
        dir: PathBuf,
    },
    /// Every file of tonic-prost-build's output under the directory was
    /// already rewritten by an earlier run: tonic-prost-build wrote nothing
    /// since (called in the right order, it always has written the file
    /// afresh), so this rewrite runs before it.
    AlreadyRewritten {
        /// The directory searched.
        dir: PathBuf,
    },
    /// A file's generated code is not what the rewrite expects.
    Source {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        error: SourceError,
    },
}

/// Why one file's text cannot be rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceError {
    /// Generated server or client code without a path such code contains.
    MissingPattern {
        /// The stock path that was expected (or its rewritten form), e.g.
        /// `tonic::server::Grpc`.
        expected: &'static str,
    },
    /// The generated code uses a codec other than this crate's `ProstCodec`
    /// (set with `codec_path`).
    ForeignCodec {
        /// The codec path as generated.
        codec: String,
    },
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::MissingPattern { expected } => write!(
                f,
                "holds tonic-prost-build server or client code but no `{expected}`; \
                 its output is not what grpc-stream-codec {} expects (written for \
                 tonic-prost-build 0.14): check that the two versions match",
                env!("CARGO_PKG_VERSION")
            ),
            SourceError::ForeignCodec { codec } => write!(
                f,
                "uses the codec `{codec}`, but full framing runs only on \
                 grpc-stream-codec's: remove the codec_path(..) call from the \
                 tonic_prost_build builder, or set \
                 codec_path(\"grpc_stream_codec::tonic::ProstCodec\")"
            ),
        }
    }
}

impl std::error::Error for SourceError {}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteError::NoOutDir => f.write_str(
                "OUT_DIR is not set; call grpc_stream_codec::tonic::build::rewrite_out_dir \
                 from build.rs after tonic_prost_build has written its output, or \
                 rewrite_dir with the directory given to the builder's out_dir",
            ),
            RewriteError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            RewriteError::NothingGenerated { dir } => write!(
                f,
                "no tonic-prost-build server or client found under {}. In build.rs, call \
                 grpc_stream_codec::tonic::build::rewrite_out_dir() after \
                 tonic_prost_build's compile call (compile_protos or compile_fds), on the \
                 directory it wrote to (OUT_DIR; rewrite_dir(dir) for the builder's \
                 out_dir), with build_server or build_client enabled",
                dir.display()
            ),
            RewriteError::AlreadyRewritten { dir } => write!(
                f,
                "the generated files under {} were rewritten by an earlier build and \
                 tonic_prost_build has not written them since: the rewrite ran before \
                 tonic_prost_build. In build.rs, call \
                 grpc_stream_codec::tonic::build::rewrite_out_dir() after \
                 tonic_prost_build's compile call (compile_protos or compile_fds)",
                dir.display()
            ),
            RewriteError::Source { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl fmt::Debug for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for RewriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RewriteError::Io { source, .. } => Some(source),
            RewriteError::Source { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Rewrites every `.rs` file under `$OUT_DIR`, recursively.
///
/// Call it from `build.rs` after tonic-prost-build has written its output
/// there (no `out_dir` on the builder), and return its error (`?`). On
/// failure it also prints the error as a `cargo::error=` line, so cargo shows
/// the fix as the build's first error rather than under "failed to run
/// custom build command".
pub fn rewrite_out_dir() -> Result<RewriteReport, RewriteError> {
    rewrite::rewrite_out_dir(RewriteError::NoOutDir, rewrite_dir)
}

/// Rewrites every `.rs` file under `dir`, recursively; see the module docs.
///
/// Each file of tonic-prost-build's output (a service, or prost's
/// `@generated` header) also gets the marker
/// [`include_proto!`](crate::tonic::include_proto) checks. Fails with
/// [`RewriteError::AlreadyRewritten`] when every such file has it already
/// (the rewrite runs before tonic-prost-build). Files that need no change
/// are not written. Nothing is written unless every file passes.
pub fn rewrite_dir(dir: impl AsRef<Path>) -> Result<RewriteReport, RewriteError> {
    let dir = dir.as_ref();
    let io = |(path, source)| RewriteError::Io { path, source };
    let files = rewrite::read_sources(dir).map_err(io)?;
    let mut report = RewriteReport::default();
    // Check every file before writing any, so a failed build leaves the
    // generator's output as it was.
    let mut rewritten_files = Vec::with_capacity(files.len());
    let mut already_marked = 0;
    for (path, text) in &files {
        let mut rewritten = rewrite_source(text).map_err(|error| RewriteError::Source {
            path: path.clone(),
            error,
        })?;
        report.files_scanned += 1;
        report.add(&rewritten);
        if rewritten.has_services || text.starts_with(PROST_HEADER) {
            report.marked_files += 1;
            if text.ends_with(MARKER) {
                already_marked += 1;
            } else {
                rewritten.text.push_str(MARKER);
            }
        }
        rewritten_files.push(rewritten.text);
    }
    if report.files_with_services == 0 {
        return Err(RewriteError::NothingGenerated {
            dir: dir.to_path_buf(),
        });
    }
    if already_marked == report.marked_files {
        return Err(RewriteError::AlreadyRewritten {
            dir: dir.to_path_buf(),
        });
    }
    let changes = files
        .iter()
        .zip(&rewritten_files)
        .map(|((path, old), new)| (path.as_path(), old.as_str(), new.as_str()));
    report.files_rewritten = rewrite::write_changed(changes).map_err(io)?;
    Ok(report)
}

/// One file's text after the rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RewrittenSource {
    /// The new text (equal to the input when nothing needed changing).
    pub text: String,
    /// Whether the file holds a tonic-prost-build server or client.
    pub has_services: bool,
    /// `server::Grpc` paths pointing at this crate after the rewrite.
    pub server_grpc_paths: usize,
    /// `client::Grpc` paths pointing at this crate after the rewrite.
    pub client_grpc_paths: usize,
    /// `ClientStreamingService` / `StreamingService` paths pointing at this crate.
    pub service_trait_paths: usize,
    /// `Streaming` paths pointing at this crate after the rewrite.
    pub streaming_paths: usize,
    /// `ProstCodec` paths pointing at this crate after the rewrite.
    pub codec_paths: usize,
}

/// Rewrites one generated file's text; see the module docs.
///
/// ```
/// use grpc_stream_codec::tonic::build::rewrite_source;
///
/// let generated = "pub mod echo_client { pub struct EchoClient<T> { inner: tonic::client::Grpc<T> } \
///     impl<T> EchoClient<T> where T: tonic::client::GrpcService<tonic::body::Body> {} }";
/// let out = rewrite_source(generated).unwrap();
/// assert!(out.text.contains("inner: ::grpc_stream_codec::tonic::client::Grpc<T>"));
/// assert!(out.text.contains("T: tonic::client::GrpcService<tonic::body::Body>"));
/// assert_eq!(rewrite_source(&out.text).unwrap().text, out.text); // idempotent
/// ```
pub fn rewrite_source(text: &str) -> Result<RewrittenSource, SourceError> {
    let rewritten = rewrite::rewrite(text, RULES);
    let count = |rules: &[usize]| {
        rewritten
            .hits
            .iter()
            .filter(|h| rules.contains(&h.rule))
            .count()
    };

    let paths = rewrite::code_paths(text);
    let uses = |names: &[&str]| paths.iter().filter(|p| p.starts_with(text, names)).count();
    let impls = |names: &[&str]| {
        paths
            .iter()
            .filter(|p| p.starts_with(text, names) && rewrite::preceded_by_impl(text, p.start))
            .count()
    };
    let impl_hits = |rule: usize| {
        rewritten
            .hits
            .iter()
            .filter(|h| h.rule == rule && rewrite::preceded_by_impl(text, h.path.start))
            .count()
    };

    let has_server = uses(NAMED_SERVICE) > 0;
    let has_client = uses(GRPC_SERVICE) > 0;
    let streaming_request_methods =
        impl_hits(CLIENT_STREAMING_SERVICE) + impl_hits(STREAMING_SERVICE);
    let server_methods =
        impls(UNARY_SERVICE) + impls(SERVER_STREAMING_SERVICE) + streaming_request_methods;
    let client_methods = uses(INTO_REQUEST) + uses(INTO_STREAMING_REQUEST);
    let server_grpc_paths = count(&[SERVER_GRPC]);
    let client_grpc_paths = count(&[CLIENT_GRPC]);
    let streaming_paths = count(&[STREAMING, CODEC_STREAMING]);
    // `ProstCodecWith` is ours already and never rewritten, so it is not a hit.
    let codec_paths = count(&[PROST_CODEC])
        + paths
            .iter()
            .filter(|p| p.starts_with(text, OUR_CODEC_WITH))
            .count();

    if has_server || has_client {
        check_codecs(text, &paths)?;
        let missing = |expected| Err(SourceError::MissingPattern { expected });
        if has_client && client_grpc_paths == 0 {
            return missing("tonic::client::Grpc");
        }
        if server_methods > 0 && server_grpc_paths == 0 {
            return missing("tonic::server::Grpc");
        }
        if streaming_request_methods > 0 && streaming_paths == 0 {
            return missing("tonic::Streaming");
        }
        if server_methods + client_methods > 0 && codec_paths == 0 {
            return missing("tonic_prost::ProstCodec");
        }
    }
    Ok(RewrittenSource {
        text: rewritten.text,
        has_services: has_server || has_client,
        server_grpc_paths,
        client_grpc_paths,
        service_trait_paths: count(&[CLIENT_STREAMING_SERVICE, STREAMING_SERVICE]),
        streaming_paths,
        codec_paths,
    })
}

/// Every generated method builds its codec as `let codec = <codec_path>::default();`:
/// that path must be the stock codec (rewritten) or this crate's.
fn check_codecs(text: &str, paths: &[rewrite::CodePath]) -> Result<(), SourceError> {
    let stock = RULES[PROST_CODEC].stock;
    let foreign = paths.iter().find(|p| {
        let last = p.segments.len() - 1;
        rewrite::preceded_by_tokens(text, p.start, &["let", "codec", "="])
            && last > 0
            && p.segment(text, last) == Some("default")
            && !p.starts_with(text, stock)
            && !p.starts_with(text, OUR_CODEC)
            && !p.starts_with(text, OUR_CODEC_WITH)
    });
    match foreign {
        Some(codec) => Err(SourceError::ForeignCodec {
            codec: codec_name(text, codec),
        }),
        None => Ok(()),
    }
}

/// The codec's path without the `::default` after it.
fn codec_name(text: &str, codec: &rewrite::CodePath) -> String {
    let count = codec.segments.len() - 1;
    let names: Vec<&str> = (0..count).filter_map(|i| codec.segment(text, i)).collect();
    let lead = if codec.global { "::" } else { "" };
    format!("{lead}{}", names.join("::"))
}
