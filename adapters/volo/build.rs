//! The build-script half of the adapter: rewrites volo-build's output so the
//! generated `SendEntryMessage` / `RecvEntryMessage` impls (and the handler
//! signatures) use this crate's encoder and [`RecvStream`](super::RecvStream).
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
//! | volo-build 0.12 generates            | rewritten to                                 |
//! |--------------------------------------|----------------------------------------------|
//! | `::volo_grpc::codec::encode::encode` | `::grpc_stream_codec::codegen::volo::encode` |
//! | the same, in a `*ResponseSend` impl  | `::grpc_stream_codec::codegen::volo::encode_response` |
//! | `::volo_grpc::RecvStream`            | `::grpc_stream_codec::volo::RecvStream`      |
//! | `::volo_grpc::client::ClientBuilder` | `::grpc_stream_codec::volo::ClientBuilder`   |
//!
//! A server's responses (`*ResponseSend`) get the encoder that also
//! records the call when a meter is installed; a client's requests
//! (`*RequestSend`) get the plain one. `codegen` is the crate's hidden
//! module of what only generated code names; the types handlers and
//! callers name stay in [`volo`](crate::volo).
//!
//! The second covers `RecvStream::new(..)` in `RecvEntryMessage::from_body`,
//! the `*Recv` enum variants and the `Request<RecvStream<T>>` argument of
//! client-streaming and bidi handlers, so those handlers name this crate's
//! `RecvStream` after the rewrite.
//!
//! Only files volo-build wrote are touched (a root `pub mod name { .. }`, a
//! file with entry impls, and the files they include); any other file
//! under the directory, such as hand-written code next to generated code
//! committed to the repository, is left as it is and listed in
//! [`RewriteReport::skipped_files`]. For output outside `OUT_DIR`, call
//! [`rewrite_dir`]`(dir)` and include the root with
//! [`include_file!`](crate::volo::include_file).
//!
//! Each root file of the output (one no other file includes, e.g.
//! `volo_gen.rs`) also gets a mark appended: a call of a macro of this
//! crate, by its path, naming the include macro's call for the root
//! (`include_service!("volo_gen.rs")` under `OUT_DIR`, else `include_file!`
//! with its path from the crate's `src/`).
//! [`include_service!`](crate::volo::include_service) checks for it: a file
//! volo-build wrote after the hook ran (the hook was called before it) or
//! that the hook never saw has none, and the crate including it fails to
//! compile with a message naming the fix. The mark checks the other way
//! round: a rewritten root included with `include!`,
//! `volo::include_service!` or as a `mod` item fails to compile with the
//! line to write as the first error.
//!
//! The rewrite is idempotent: a second run changes nothing, and a file's
//! bytes are the per-file rewrite plus, for a root, the mark. It fails,
//! rather than leaving stock code in
//! place, when a file implements `SendEntryMessage` or `RecvEntryMessage` but
//! contains neither the stock nor the rewritten call (volo-build changed its
//! output), and when no file under the directory implements either (nothing
//! was generated there: the hook ran on the wrong directory, before
//! volo-build wrote anything, or generation is behind a cfg the hook is
//! not). Either entry point prints its error as a `cargo::error=` line too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::build::{Adapter, HookCall, RewriteError, SourceError};
use crate::rewrite::{self, Rule, rule};

const ENCODE: usize = 0;
const RECV_STREAM: usize = 1;
/// The table, indexed by the constants above. volo-build writes every path
/// with a leading `::`, so only those are matched.
const RULES: &[Rule] = &[
    rule!(global volo_grpc::codec::encode::encode => codegen::volo::encode),
    rule!(global volo_grpc::RecvStream => volo::RecvStream),
    // The generated `*ClientBuilder::new`: a client whose transport reads
    // response headers without volo-grpc's panics (`volo::ClientBuilder`).
    rule!(global volo_grpc::client::ClientBuilder => volo::ClientBuilder),
];
const SEND_ENTRY: &[&str] = &["volo_grpc", "SendEntryMessage"];
const RECV_ENTRY: &[&str] = &["volo_grpc", "RecvEntryMessage"];
/// The `encode` [`RULES`] point at.
const OUR_ENCODE: &[&str] = &["grpc_stream_codec", "codegen", "volo", "encode"];
/// The `encode` of a server's responses, which records the call.
const OUR_ENCODE_RESPONSE: &[&str] = &["grpc_stream_codec", "codegen", "volo", "encode_response"];

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
    /// the mark [`include_service!`](crate::volo::include_service)
    /// checks (added now or already there).
    pub marked_roots: usize,
    /// Files under the directory volo-build did not write (neither a
    /// generated root, `pub mod name { .. }`, nor one with entry impls, nor
    /// included by one of those): left as they are.
    pub skipped_files: Vec<PathBuf>,
}

rewrite::entry_points!(Volo, "volo-build",
    out_dir: /// The per-service directories of `split_generated_files(true)` are
    /// covered.
    , dir:
    /// Each root of the generated output (a file no other file under `dir`
    /// `include!`s, e.g. `volo_gen.rs`) that holds volo-grpc service code
    /// also gets the mark [`include_service!`](crate::volo::include_service)
    /// and [`include_file!`](crate::volo::include_file) check. Files
    /// volo-build did not write are never written
    /// ([`RewriteReport::skipped_files`]); files that need no change are not
    /// written, so their modification times stay as volo-build left them.
);

fn rewrite(dir: &Path, call: HookCall) -> Result<RewriteReport, RewriteError> {
    let sources = rewrite::read_sources(dir)?;

    let mut report = RewriteReport::default();
    let mut files = Vec::with_capacity(sources.len());
    for (path, text) in sources {
        let rewritten = rewrite_source(&text).map_err(|error| RewriteError::Source {
            path: path.clone(),
            error,
        })?;
        report.files_scanned += 1;
        files.push(GeneratedFile {
            path,
            text,
            rewritten,
        });
    }
    let generated = generated_files(&files);
    let mut kept = Vec::with_capacity(files.len());
    for (file, generated) in files.into_iter().zip(generated) {
        if generated {
            report.encode_paths += file.rewritten.encode_paths;
            report.recv_stream_paths += file.rewritten.recv_stream_paths;
            if file.rewritten.has_entry_impls {
                report.files_with_entry_impls += 1;
            }
            kept.push(file);
        } else {
            report.skipped_files.push(file.path);
        }
    }
    let files = kept;
    if report.files_with_entry_impls == 0 {
        return Err(RewriteError::NothingGenerated {
            dir: dir.to_path_buf(),
            call,
        });
    }

    let roots = include_roots(&files);
    let changes = files.iter().enumerate().map(|(i, file)| rewrite::Change {
        path: &file.path,
        old: &file.text,
        code: rewrite::unmarked(&file.rewritten.text).to_string(),
        marked: roots.contains(&i),
    });
    let places = rewrite::Places::from_env();
    report.marked_roots = roots.len();
    report.files_rewritten = rewrite::write_marked(Adapter::Volo, dir, &places, changes)?;
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

/// Which files volo-build wrote: a root as pilota-build writes it (the
/// file is one `pub mod name { .. }`), a file with entry impls, and every
/// file such a file includes, transitively. A hand-written file that only
/// names volo-grpc's types is none of these.
fn generated_files(files: &[GeneratedFile]) -> Vec<bool> {
    let index = path_index(files);
    let mut generated = vec![false; files.len()];
    let mut stack: Vec<usize> = (0..files.len())
        .filter(|&i| files[i].rewritten.has_entry_impls || is_generated_root(&files[i].text))
        .collect();
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut generated[i], true) {
            continue;
        }
        stack.extend(
            files[i]
                .includes()
                .filter_map(|path| index.get(path.as_path()).copied()),
        );
    }
    generated
}

/// Whether `text` is one `pub mod name { .. }` (with the hook's mark
/// after it once rewritten), as each root file pilota-build writes.
fn is_generated_root(text: &str) -> bool {
    let code = rewrite::unmarked(text).trim();
    let Some(rest) = code.strip_prefix("pub mod ") else {
        return false;
    };
    let name_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    name_end > 0 && rest[name_end..].trim_start().starts_with('{') && code.ends_with('}')
}

fn path_index(files: &[GeneratedFile]) -> HashMap<&Path, usize> {
    files
        .iter()
        .enumerate()
        .map(|(i, file)| (file.path.as_path(), i))
        .collect()
}

/// The indices of the files no other file includes whose tree (the file and
/// what it includes, transitively) holds service code: the files a user
/// includes, and so the ones that carry the mark.
fn include_roots(files: &[GeneratedFile]) -> Vec<usize> {
    let index = path_index(files);
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

/// One file's text after the rewrite.
// Hidden, with `rewrite_source`: for the hook's tests; build scripts call
// the entry points.
#[doc(hidden)]
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

/// How many `encode` calls of a server's responses [`encode_responses`]
/// found.
struct Responses {
    /// Already `encode_response` (a file rewritten before).
    already: usize,
}

/// `text` with the `encode` calls in `impl SendEntryMessage for
/// *ResponseSend` blocks (a server's responses; a client's requests are
/// `*RequestSend`) pointed at `encode_response`, whose body records its
/// call itself.
fn encode_responses(text: &str) -> (String, Responses) {
    let paths = rewrite::code_paths(text);
    let mut out = String::with_capacity(text.len() + 64);
    let mut copied = 0;
    let mut already = 0;
    // Whether the entry impl the paths are in is a response's. Generated
    // `encode` calls are in `SendEntryMessage` impls only, so the impl a
    // call belongs to is the last one before it.
    let mut in_response = false;
    for (index, path) in paths.iter().enumerate() {
        if !path.global {
            continue;
        }
        let is_impl =
            |names| path.starts_with(text, names) && rewrite::preceded_by_impl(text, path.start);
        if is_impl(SEND_ENTRY) || is_impl(RECV_ENTRY) {
            // The type after `for`, the next path.
            let for_type = paths
                .get(index + 1)
                .and_then(|ty| ty.segment(text, ty.segments.len() - 1));
            in_response =
                is_impl(SEND_ENTRY) && for_type.is_some_and(|ty| ty.ends_with("ResponseSend"));
            continue;
        }
        if !in_response || path.segments.len() != OUR_ENCODE.len() {
            continue;
        }
        if path.starts_with(text, OUR_ENCODE_RESPONSE) {
            already += 1;
        } else if let (true, Some(&(_, end))) =
            (path.starts_with(text, OUR_ENCODE), path.segments.last())
        {
            out.push_str(&text[copied..end]);
            out.push_str("_response");
            copied = end;
        }
    }
    out.push_str(&text[copied..]);
    (out, Responses { already })
}

/// Rewrites one generated file's text.
///
/// On failure names the path the file should have contained.
///
/// ```
/// use grpc_stream_codec::volo::build::rewrite_source;
///
/// let generated = "impl ::volo_grpc::SendEntryMessage for EchoResponseSend { fn into_body(..) { \
///     match self { Self::Bidi(s) => { ::volo_grpc::codec::encode::encode(s, compression_encoding) } } } }";
/// let out = rewrite_source(generated).unwrap();
/// assert!(out.text.contains("::grpc_stream_codec::codegen::volo::encode_response(s, compression_encoding)"));
/// assert_eq!(rewrite_source(&out.text).unwrap().text, out.text); // idempotent
/// ```
#[doc(hidden)]
pub fn rewrite_source(text: &str) -> Result<RewrittenSource, SourceError> {
    let rewritten = rewrite::rewrite(text, RULES);
    let count = |rule| rewritten.hits.iter().filter(|h| h.rule == rule).count();
    let (out, responses) = encode_responses(&rewritten.text);
    let encode_paths = count(ENCODE) + responses.already;
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

    let missing = |expected| SourceError::missing(Adapter::Volo, expected);
    if has_send && encode_paths == 0 {
        return missing("::volo_grpc::codec::encode::encode");
    }
    if has_recv && new_calls == 0 {
        return missing("::volo_grpc::RecvStream::new");
    }
    Ok(RewrittenSource {
        text: out,
        has_entry_impls: has_send || has_recv,
        encode_paths,
        recv_stream_paths,
    })
}
