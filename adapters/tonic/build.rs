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
//! and include the files with [`include_file!`](crate::tonic::include_file)
//! (code committed to the repository, e.g. `out_dir("src/pb")`). Only files
//! tonic-build generated are touched: those starting with prost-build's
//! `@generated` header, and tonic-build's manual services (its
//! "Generated server/client implementations." modules); every other file
//! under the directory, hand-written code next to committed generated code
//! included, is left as it is and listed in
//! [`RewriteReport::skipped_files`]. Setting `codec_path` is not needed;
//! the stock codec is rewritten too. The rewritten code names
//! `::grpc_stream_codec::tonic`, so the crate that includes it depends on
//! `grpc-stream-codec` with the `tonic` feature.
//!
//! What is rewritten, in code only (comments and string literals are left
//! alone), with or without a leading `::` and whatever whitespace sits around
//! the `::`:
//!
//! | tonic-prost-build 0.14 generates        | rewritten to                                                          |
//! |-----------------------------------------|-----------------------------------------------------------------------|
//! | `tonic::server::Grpc`                   | `::grpc_stream_codec::codegen::tonic::server::Grpc`                   |
//! | `tonic::server::ClientStreamingService` | `::grpc_stream_codec::codegen::tonic::server::ClientStreamingService` |
//! | `tonic::server::StreamingService`       | `::grpc_stream_codec::codegen::tonic::server::StreamingService`       |
//! | `tonic::Streaming`                      | `::grpc_stream_codec::tonic::Streaming`                               |
//! | `tonic::codec::Streaming`               | `::grpc_stream_codec::tonic::Streaming`                               |
//! | `tonic::client::Grpc`                   | `::grpc_stream_codec::codegen::tonic::client::Grpc`                   |
//! | `tonic_prost::ProstCodec`               | `::grpc_stream_codec::tonic::ProstCodec`                              |
//!
//! `codegen` is the crate's hidden module of what only generated code
//! names (tonic's API over this crate's framing); the types handlers and
//! callers name stay in [`tonic`](crate::tonic).
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
//! `ProstCodecWith`) is already right and stays. A generated file whose
//! codec is another one (tonic-build's manual services with a JSON codec,
//! a builder with another `codec_path`) is left on tonic's framing, exactly
//! as generated: full framing runs only this crate's codec. It gets no
//! mark, so it is included with `include!` or `tonic::include_proto!` as
//! without the hook, and one `cargo::warning=` line names its services
//! ([`RewriteReport::foreign_codec_files`]).
//!
//! Each other file of the output gets a mark appended: a call of a macro
//! of this crate, by its path, naming the include macro's call for the
//! file (`include_proto!("my.package")` under `OUT_DIR`, else
//! `include_file!` with the file's path from the crate's `src/`).
//! [`include_proto!`](crate::tonic::include_proto) and
//! [`include_file!`](crate::tonic::include_file) check for it: include the
//! generated code with them (instead of `tonic::include_proto!`), and a file
//! the hook never saw, or one tonic-prost-build wrote after the hook ran (the
//! hook was called before it), fails to compile with a message naming the
//! fix, as the build's first error. The mark checks the other way round:
//! a rewritten file included with `include!`, `tonic::include_proto!` or as
//! a `mod` item fails to compile with the line to write as the first
//! error. In prost's include file (the builder's `include_file`), each
//! `include!` of a marked file gets a line before it that lets that file's
//! mark pass: the include file's own mark checks how it is included.
//!
//! The per-file rewrite ([`rewrite_source`]) is idempotent. The hook fails,
//! naming the file, rather than leaving stock framing in place when a file
//! holds a tonic-prost-build client or server but not the paths above that
//! such code contains (tonic-prost-build changed its output); and it fails
//! naming the fix and the function called when no file under the directory
//! holds a generated client or server (nothing was generated there: the
//! hook ran on the wrong directory, before tonic-prost-build on a clean
//! build, with both `build_client(false)` and `build_server(false)`, or
//! generation is behind a cfg the hook is not), or when every generated
//! file there already carries the mark (generated and rewritten by an
//! earlier build, nothing generated in this one before the hook). Either
//! entry point prints its error as a `cargo::error=` line too. Its error's
//! `Debug` form is its `Display` text.

use std::path::{Path, PathBuf};

use crate::build::{Adapter, HookCall, RewriteError};
use crate::rewrite;

mod source;

// One file's rewrite, for the hook's tests: build scripts call the entry
// points, so it is not part of the surface users are offered.
#[doc(hidden)]
pub use source::{RewrittenSource, rewrite_source};

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
    /// Files that carry the mark
    /// [`include_proto!`](crate::tonic::include_proto) checks, whichever run
    /// of the hook added it: every generated file but those in
    /// `foreign_codec_files`.
    pub marked_files: usize,
    /// Files under the directory tonic-build did not write (no prost-build
    /// header, no generated service): left as they are.
    pub skipped_files: Vec<PathBuf>,
    /// Generated files whose services run another codec than this crate's:
    /// left on tonic's framing as generated, without a mark (and named in
    /// a cargo warning).
    pub foreign_codec_files: Vec<PathBuf>,
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

rewrite::entry_points!(Tonic, "tonic-prost-build",
    out_dir: /// No `out_dir` on the builder: with one, call [`rewrite_dir`].
    , dir:
    /// Each file of tonic-build's output (a service, or prost's `@generated`
    /// header) but those left on tonic's framing also gets the mark
    /// [`include_proto!`](crate::tonic::include_proto) and
    /// [`include_file!`](crate::tonic::include_file) check. Fails with
    /// [`AlreadyRewritten`](crate::build::RewriteError::AlreadyRewritten)
    /// when every such file has it already (nothing was generated in this
    /// build before the call). Other files are not read past their text and
    /// never written. Files that need no change are not written. Nothing is
    /// written unless every file passes.
);

fn rewrite(dir: &Path, call: HookCall) -> Result<RewriteReport, RewriteError> {
    let files = rewrite::read_sources(dir)?;
    let places = rewrite::Places::from_env();
    let mut report = RewriteReport::default();
    // Check every file before writing any, so a failed build leaves the
    // generator's output as it was.
    let mut changes = Vec::with_capacity(files.len());
    let mut already_marked = 0;
    let mut foreign = Vec::new();
    for (path, text) in &files {
        report.files_scanned += 1;
        if !source::is_generated(text) {
            report.skipped_files.push(path.clone());
            continue;
        }
        let rewritten = rewrite_source(text).map_err(|error| RewriteError::Source {
            path: path.clone(),
            error,
        })?;
        report.add(&rewritten);
        if let Some(codec) = &rewritten.foreign_codec {
            // Left as generated, with nothing of this crate: it builds
            // with a plain `include!`, since tonic's framing serves it.
            report.foreign_codec_files.push(path.clone());
            foreign.push(source::describe_foreign(path, text, codec));
            continue;
        }
        report.marked_files += 1;
        let code = rewrite::unmarked(&rewritten.text);
        // Shorter: it carried a mark, from an earlier run of the hook.
        already_marked += usize::from(code.len() < rewritten.text.len());
        changes.push((path.as_path(), text.as_str(), code.to_string()));
    }
    if report.files_with_services == 0 {
        return Err(RewriteError::NothingGenerated {
            dir: dir.to_path_buf(),
            call,
        });
    }
    if report.marked_files > 0 && already_marked == report.marked_files {
        return Err(RewriteError::AlreadyRewritten {
            dir: dir.to_path_buf(),
            call,
        });
    }
    let marked: Vec<&Path> = changes.iter().map(|(path, ..)| *path).collect();
    let changes = changes.iter().map(|(path, old, code)| rewrite::Change {
        path,
        old,
        code: with_nested_includes(code, path, &marked, &places),
        marked: true,
    });
    report.files_rewritten = rewrite::write_marked(Adapter::Tonic, dir, &places, changes)?;
    if !foreign.is_empty() {
        rewrite::warn_cargo(&format!(
            "grpc-stream-codec: these services keep tonic's framing, their codec not \
             being grpc_stream_codec::tonic::ProstCodec (include their files with \
             `include!` or `tonic::include_proto!`): {}",
            foreign.join("; ")
        ));
    }
    Ok(report)
}

/// `code` with the line that tells a marked file it is included as it must
/// be before each `include!` of one (prost's include file): the file is
/// checked through the file that includes it.
fn with_nested_includes(
    code: &str,
    path: &Path,
    marked: &[&Path],
    places: &rewrite::Places,
) -> String {
    let mut out = String::with_capacity(code.len());
    let mut copied = 0;
    for include in rewrite::include_calls(code) {
        let target = include.target(path, places);
        if !marked.iter().any(|file| same_file(file, &target)) {
            continue;
        }
        let line = rewrite::nested_line(&target);
        let head = &code[..include.start];
        if head.trim_end().ends_with(&line) {
            continue;
        }
        let indent = &head[head.trim_end_matches([' ', '\t']).len()..];
        out.push_str(&code[copied..include.start]);
        out.push_str(&line);
        out.push('\n');
        out.push_str(indent);
        copied = include.start;
    }
    out.push_str(&code[copied..]);
    out
}

/// Whether two paths name one file, as written or once resolved.
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (a.canonicalize(), b.canonicalize()),
            (Ok(a), Ok(b)) if a == b
        )
}
