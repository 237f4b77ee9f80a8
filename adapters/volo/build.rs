//! The build-script half of the adapter: rewrites volo-build's output so the
//! generated `SendEntryMessage` / `RecvEntryMessage` impls (and the handler
//! signatures) use [`encode`](super) and `RecvStream` from this crate.
//!
//! This module is plain `std`. A `build.rs` gets it without volo-grpc through
//! the `volo-build-hook` feature:
//!
//! ```toml
//! [build-dependencies]
//! volo-build = "0.12"
//! grpc-stream-codec = { version = "0.1", default-features = false, features = ["volo-build-hook"] }
//! ```
//!
//! ```no_run
//! // build.rs, in `fn main() -> Result<(), Box<dyn std::error::Error>>`,
//! // after volo-build has written its output
//! // (volo_build::ConfigBuilder::default().write()?, or Builder::protobuf()...write()?):
//! let report = grpc_stream_codec::volo::build::rewrite_out_dir()?;
//! assert!(report.files_with_entry_impls > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Return its error (`?`) rather than `unwrap()` it: cargo then prints the
//! error's `Display` text, which says what to do.
//!
//! What is rewritten, in code only (comments and string literals are left
//! alone), whatever whitespace rustfmt put around the `::`:
//!
//! | volo-build 0.12 generates            | rewritten to                           |
//! |--------------------------------------|----------------------------------------|
//! | `::volo_grpc::codec::encode::encode` | `::grpc_stream_codec::volo::encode`     |
//! | `::volo_grpc::RecvStream`            | `::grpc_stream_codec::volo::RecvStream` |
//! | `::volo_grpc::client::ClientBuilder` | `::grpc_stream_codec::volo::ClientBuilder` |
//!
//! The second covers `RecvStream::new(..)` in `RecvEntryMessage::from_body`,
//! the `*Recv` enum variants and the `Request<RecvStream<T>>` argument of
//! client-streaming and bidi handlers, so those handlers name this crate's
//! `RecvStream` after the rewrite.
//!
//! Each root file of the output (one no other file includes, e.g.
//! `volo_gen.rs`) also gets a marker appended, an import that
//! [`include_service!`](crate::volo::include_service) checks for: a file
//! volo-build wrote after the hook ran (the hook was called before it) or
//! that the hook never saw has none, and the crate including it fails to
//! compile with a message naming the fix.
//!
//! The rewrite is idempotent: a second run changes nothing, and a file's
//! bytes are the per-file rewrite plus, for a root, the marker. It fails,
//! rather than leaving stock code in
//! place, when a file implements `SendEntryMessage` or `RecvEntryMessage` but
//! contains neither the stock nor the rewritten call (volo-build changed its
//! output), and when no file under the directory implements either (the hook
//! ran on the wrong directory, or before volo-build wrote anything).

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::include::MARKER;
use crate::rewrite::{self, Rule, rule};

const ENCODE: usize = 0;
const RECV_STREAM: usize = 1;
/// The table, indexed by the constants above. volo-build writes every path
/// with a leading `::`, so only those are matched.
const RULES: &[Rule] = &[
    rule!(global volo_grpc::codec::encode::encode => volo::encode),
    rule!(global volo_grpc::RecvStream => volo::RecvStream),
    // The generated `*ClientBuilder::new`: a client whose transport reads
    // response headers without volo-grpc's panics (`volo::ClientBuilder`).
    rule!(global volo_grpc::client::ClientBuilder => volo::ClientBuilder),
];
const SEND_ENTRY: &[&str] = &["volo_grpc", "SendEntryMessage"];
const RECV_ENTRY: &[&str] = &["volo_grpc", "RecvEntryMessage"];

/// What a rewrite found and changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RewriteReport {
    /// `.rs` files read.
    pub files_scanned: usize,
    /// Files whose text changed and was written back.
    pub files_rewritten: usize,
    /// Files that implement `SendEntryMessage` or `RecvEntryMessage`.
    pub files_with_entry_impls: usize,
    /// `encode` paths now pointing at the adapter (rewritten or already so).
    pub encode_paths: usize,
    /// `RecvStream` paths now pointing at the adapter (rewritten or already so).
    pub recv_stream_paths: usize,
    /// Root files (included by no other file, e.g. `volo_gen.rs`) that carry
    /// the marker [`include_service!`](crate::volo::include_service)
    /// checks (added now or already there).
    pub marked_roots: usize,
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
    /// No file under the directory implements volo-grpc's entry traits.
    NothingGenerated {
        /// The directory searched.
        dir: PathBuf,
    },
    /// A file implements an entry trait without the call the rewrite expects.
    MissingPattern {
        /// The file.
        path: PathBuf,
        /// The path that was expected (stock or rewritten), e.g.
        /// `::volo_grpc::codec::encode::encode`.
        expected: &'static str,
    },
}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteError::NoOutDir => f.write_str(
                "OUT_DIR is not set; call rewrite_out_dir from build.rs after volo_build, \
                 or use rewrite_dir with the generator's out_dir",
            ),
            RewriteError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            RewriteError::NothingGenerated { dir } => write!(
                f,
                "no volo-grpc SendEntryMessage/RecvEntryMessage impl found under {}; \
                 in build.rs, run grpc_stream_codec::volo::build::rewrite_out_dir() after \
                 volo-build's `.write()` has written its output there",
                dir.display()
            ),
            RewriteError::MissingPattern { path, expected } => write!(
                f,
                "{} implements a volo-grpc entry trait but contains no `{expected}`; \
                 volo-build's output is not what grpc-stream-codec {} expects",
                path.display(),
                env!("CARGO_PKG_VERSION")
            ),
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
            _ => None,
        }
    }
}

/// Rewrites every `.rs` file under `$OUT_DIR` (recursively, so the
/// per-service directories of `split_generated_files(true)` are covered).
///
/// Call it from `build.rs` after volo-build has written its output, and
/// return its error (`?`). On failure it also prints the error as a
/// `cargo::error=` line, so cargo shows the fix as the build's first error
/// rather than under "failed to run custom build command".
pub fn rewrite_out_dir() -> Result<RewriteReport, RewriteError> {
    rewrite::rewrite_out_dir(RewriteError::NoOutDir, rewrite_dir)
}

/// Rewrites every `.rs` file under `dir`, recursively; see the module docs.
///
/// Each root of the generated output (a file no other file under `dir`
/// `include!`s, e.g. `volo_gen.rs`) that holds volo-grpc service code also
/// gets the marker [`include_service!`](crate::volo::include_service) checks.
/// Files that need no change are not written, so their modification times
/// stay as volo-build left them.
pub fn rewrite_dir(dir: impl AsRef<Path>) -> Result<RewriteReport, RewriteError> {
    let dir = dir.as_ref();
    let io = |(path, source)| RewriteError::Io { path, source };
    let sources = rewrite::read_sources(dir).map_err(io)?;

    let mut report = RewriteReport::default();
    let mut files = Vec::with_capacity(sources.len());
    for (path, text) in sources {
        let rewritten = rewrite_source(&text).map_err(|expected| RewriteError::MissingPattern {
            path: path.clone(),
            expected,
        })?;
        report.files_scanned += 1;
        report.encode_paths += rewritten.encode_paths;
        report.recv_stream_paths += rewritten.recv_stream_paths;
        if rewritten.has_entry_impls {
            report.files_with_entry_impls += 1;
        }
        files.push(GeneratedFile {
            path,
            text,
            rewritten,
        });
    }
    if report.files_with_entry_impls == 0 {
        return Err(RewriteError::NothingGenerated {
            dir: dir.to_path_buf(),
        });
    }

    for root in include_roots(&files) {
        let file = &mut files[root];
        if !has_marker(&file.rewritten.text) {
            file.rewritten.text.push_str(MARKER);
        }
        report.marked_roots += 1;
    }
    let changes = files.iter().map(|file| {
        let GeneratedFile {
            path,
            text,
            rewritten,
        } = file;
        (path.as_path(), text.as_str(), rewritten.text.as_str())
    });
    report.files_rewritten = rewrite::write_changed(changes).map_err(io)?;
    Ok(report)
}

/// A file under the directory, as read and as rewritten.
struct GeneratedFile {
    path: PathBuf,
    text: String,
    rewritten: RewrittenSource,
}

impl GeneratedFile {
    /// Whether the file holds code the hook rewrites (entry impls, or the
    /// `RecvStream` of a service trait).
    fn has_service_code(&self) -> bool {
        self.rewritten.has_entry_impls
            || self.rewritten.encode_paths > 0
            || self.rewritten.recv_stream_paths > 0
    }

    /// The files this one `include!`s, resolved as `include!` does, against
    /// the file's own directory. volo-build writes them as plain
    /// `include!("relative/path.rs");`.
    fn includes(&self) -> impl Iterator<Item = PathBuf> + '_ {
        let base = self.path.parent().unwrap_or(Path::new(""));
        self.text
            .split("include!(\"")
            .skip(1)
            .filter_map(move |rest| {
                let end = rest.find('"')?;
                Some(base.join(&rest[..end]))
            })
    }
}

/// The indices of the files no other file includes whose tree (the file and
/// what it includes, transitively) holds service code: the files a user
/// includes, and so the ones that carry the marker.
fn include_roots(files: &[GeneratedFile]) -> Vec<usize> {
    let index: HashMap<&Path, usize> = files
        .iter()
        .enumerate()
        .map(|(i, file)| (file.path.as_path(), i))
        .collect();
    let children: Vec<Vec<usize>> = files
        .iter()
        .map(|file| {
            file.includes()
                .filter_map(|path| index.get(path.as_path()).copied())
                .collect()
        })
        .collect();
    let mut included = vec![false; files.len()];
    for &child in children.iter().flatten() {
        included[child] = true;
    }
    (0..files.len())
        .filter(|&root| !included[root])
        .filter(|&root| {
            // Depth-first over the includes; `seen` also stops a cycle.
            let mut seen = vec![false; files.len()];
            let mut stack = vec![root];
            while let Some(i) = stack.pop() {
                if std::mem::replace(&mut seen[i], true) {
                    continue;
                }
                if files[i].has_service_code() {
                    return true;
                }
                stack.extend(&children[i]);
            }
            false
        })
        .collect()
}

/// Whether `text` already ends with the marker a previous run appended.
fn has_marker(text: &str) -> bool {
    text.ends_with(MARKER)
}

/// One file's text after the rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RewrittenSource {
    /// The new text (equal to the input when nothing needed changing).
    pub text: String,
    /// Whether the file implements `SendEntryMessage` or `RecvEntryMessage`.
    pub has_entry_impls: bool,
    /// `encode` paths pointing at the adapter after the rewrite.
    pub encode_paths: usize,
    /// `RecvStream` paths pointing at the adapter after the rewrite.
    pub recv_stream_paths: usize,
}

/// Rewrites one generated file's text.
///
/// On failure returns the path the file should have contained.
///
/// ```
/// use grpc_stream_codec::volo::build::rewrite_source;
///
/// let generated = "impl ::volo_grpc::SendEntryMessage for EchoResponseSend { fn into_body(..) { \
///     match self { Self::Bidi(s) => { ::volo_grpc::codec::encode::encode(s, compression_encoding) } } } }";
/// let out = rewrite_source(generated).unwrap();
/// assert!(out.text.contains("::grpc_stream_codec::volo::encode(s, compression_encoding)"));
/// assert_eq!(rewrite_source(&out.text).unwrap().text, out.text); // idempotent
/// ```
pub fn rewrite_source(text: &str) -> Result<RewrittenSource, &'static str> {
    let rewritten = rewrite::rewrite(text, RULES);
    let count = |rule| rewritten.hits.iter().filter(|h| h.rule == rule).count();
    let encode_paths = count(ENCODE);
    let recv_stream_paths = count(RECV_STREAM);
    let new_calls = rewritten
        .hits
        .iter()
        .filter(|h| h.rule == RECV_STREAM && h.next_segment(text) == Some("new"))
        .count();
    let implements = |trait_path| {
        rewrite::code_paths(text).iter().any(|p| {
            p.global && p.starts_with(text, trait_path) && rewrite::preceded_by_impl(text, p.start)
        })
    };
    let has_send = implements(SEND_ENTRY);
    let has_recv = implements(RECV_ENTRY);

    if has_send && encode_paths == 0 {
        return Err("::volo_grpc::codec::encode::encode");
    }
    if has_recv && new_calls == 0 {
        return Err("::volo_grpc::RecvStream::new");
    }
    Ok(RewrittenSource {
        text: rewritten.text,
        has_entry_impls: has_send || has_recv,
        encode_paths,
        recv_stream_paths,
    })
}
