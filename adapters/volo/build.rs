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
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::include::MARKER;
use crate::rewrite::{self, Rule};

const ENCODE: usize = 0;
const RECV_STREAM: usize = 1;
/// The table, indexed by the constants above. volo-build writes every path
/// with a leading `::`, so only those are matched.
const RULES: &[Rule] = &[
    Rule {
        stock: &["volo_grpc", "codec", "encode", "encode"],
        target: "::grpc_stream_codec::volo::encode",
        global_only: true,
    },
    Rule {
        stock: &["volo_grpc", "RecvStream"],
        target: "::grpc_stream_codec::volo::RecvStream",
        global_only: true,
    },
    // The generated `*ClientBuilder::new`: a client whose transport reads
    // response headers without volo-grpc's panics (`volo::client`).
    Rule {
        stock: &["volo_grpc", "client", "ClientBuilder"],
        target: "::grpc_stream_codec::volo::ClientBuilder",
        global_only: true,
    },
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
    let result = std::env::var_os("OUT_DIR")
        .ok_or(RewriteError::NoOutDir)
        .and_then(rewrite_dir);
    if let Err(error) = &result {
        rewrite::report_to_cargo(error);
    }
    result
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
    let paths =
        rewrite::rs_files(dir).map_err(|(path, source)| RewriteError::Io { path, source })?;

    let mut report = RewriteReport::default();
    let mut files = Vec::with_capacity(paths.len());
    for path in paths {
        let text = fs::read_to_string(&path).map_err(|source| RewriteError::Io {
            path: path.clone(),
            source,
        })?;
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
    for file in &files {
        if file.rewritten.text != file.text {
            fs::write(&file.path, &file.rewritten.text).map_err(|source| RewriteError::Io {
                path: file.path.clone(),
                source,
            })?;
            report.files_rewritten += 1;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    // Shapes volo-build 0.12.3 writes, after pilota-build's rustfmt pass and
    // without it (rustfmt missing on the machine).
    const SEND_IMPL: &str = r#"
impl ::volo_grpc::SendEntryMessage for EchoResponseSend {
    fn into_body(
        self,
        compression_encoding: ::std::option::Option<
            ::volo_grpc::codec::compression::CompressionEncoding,
        >,
    ) -> ::volo_grpc::BoxStream<
        'static,
        ::std::result::Result<
            ::volo_grpc::codegen::Frame<::volo_grpc::codegen::Bytes>,
            ::volo_grpc::Status,
        >,
    > {
        match self {
            Self::Unary(s) => ::volo_grpc::codec::encode::encode(s, compression_encoding),
            Self::Bidi(s) => {
                ::volo_grpc::codec::encode::encode(s,compression_encoding)
            }
        }
    }
}
"#;

    const RECV_IMPL: &str = r#"
pub enum EchoRequestRecv {
    Unary(::volo_grpc::RecvStream<EchoRequest>),
    Bidi(::volo_grpc::RecvStream<EchoRequest>),
}
impl ::volo_grpc::RecvEntryMessage for EchoRequestRecv {
    fn from_body(method: ::std::option::Option<&str>, body: ::volo_grpc::body::BoxBody, kind: ::volo_grpc::codec::decode::Kind,compression_encoding: ::std::option::Option<::volo_grpc::codec::compression::CompressionEncoding>) -> ::std::result::Result<Self, ::volo_grpc::Status> {
        match method {
            Some("/streamcodec.echo.v1.Echo/Unary") => {
                ::std::result::Result::Ok(Self::Unary(::volo_grpc::RecvStream::new(body, kind,compression_encoding)))
            },
            Some("/streamcodec.echo.v1.Echo/Bidi") => {
                ::std::result::Result::Ok(Self::Bidi(
                    ::volo_grpc::RecvStream::new(body, kind, compression_encoding),
                ))
            }
            _ => ::std::result::Result::Err(::volo_grpc::Status::new(::volo_grpc::Code::Unimplemented, "Method not found.")),
        }
    }
}
"#;

    const TRAIT: &str = r#"
pub trait Echo {
    fn bidi(&self, req: ::volo_grpc::Request<::volo_grpc::RecvStream<EchoRequest>>) -> impl ::std::future::Future<Output = ()> + Send;
}
"#;

    #[test]
    fn rewrites_send_impl_calls() {
        let out = rewrite_source(SEND_IMPL).unwrap();
        assert!(!out.text.contains("::volo_grpc::codec::encode::encode"));
        assert_eq!(
            out.text
                .matches("::grpc_stream_codec::volo::encode(s,")
                .count(),
            2
        );
        assert_eq!(out.encode_paths, 2);
        assert!(out.has_entry_impls);
        // Everything else is left as it was.
        assert!(
            out.text
                .contains("::volo_grpc::codec::compression::CompressionEncoding")
        );
        assert!(out.text.contains("::volo_grpc::SendEntryMessage for"));
    }

    #[test]
    fn rewrites_recv_types_and_constructors() {
        let out = rewrite_source(RECV_IMPL).unwrap();
        assert!(!out.text.contains("::volo_grpc::RecvStream"));
        assert_eq!(
            out.text
                .matches("::grpc_stream_codec::volo::RecvStream::new(body, kind")
                .count(),
            2
        );
        assert_eq!(
            out.text
                .matches("(::grpc_stream_codec::volo::RecvStream<EchoRequest>)")
                .count(),
            2
        );
        assert_eq!(out.recv_stream_paths, 4);
        assert!(out.text.contains("::volo_grpc::codec::decode::Kind"));
    }

    #[test]
    fn rewrites_handler_signatures() {
        let out = rewrite_source(TRAIT).unwrap();
        assert!(
            out.text.contains(
                "::volo_grpc::Request<::grpc_stream_codec::volo::RecvStream<EchoRequest>>"
            )
        );
        assert!(!out.has_entry_impls);
    }

    #[test]
    fn idempotent() {
        let all = format!("{SEND_IMPL}{RECV_IMPL}{TRAIT}");
        let once = rewrite_source(&all).unwrap();
        let twice = rewrite_source(&once.text).unwrap();
        assert_eq!(once.text, twice.text);
        assert_eq!(once.encode_paths, twice.encode_paths);
        assert_eq!(once.recv_stream_paths, twice.recv_stream_paths);
    }

    #[test]
    fn whitespace_inside_paths_is_tolerated() {
        let text = "impl ::volo_grpc::SendEntryMessage for X { fn f() { :: volo_grpc ::codec::\n encode :: encode(s, c) } }";
        let out = rewrite_source(text).unwrap();
        assert!(
            out.text
                .contains("{ ::grpc_stream_codec::volo::encode(s, c) }")
        );
    }

    #[test]
    fn longer_paths_comments_and_strings_are_left_alone() {
        let text = concat!(
            "// ::volo_grpc::RecvStream in a comment\n",
            "/* ::volo_grpc::codec::encode::encode /* nested */ ::volo_grpc::RecvStream */\n",
            "const A: &str = \"::volo_grpc::RecvStream\";\n",
            "const B: &str = r#\"::volo_grpc::RecvStream\"#;\n",
            "const C: char = '\"'; fn f<'a>(x: &'a ::volo_grpc::RecvStreamer) {}\n",
            "use foo::volo_grpc::RecvStream;\n",
        );
        let out = rewrite_source(text).unwrap();
        assert_eq!(out.text, text);
        assert_eq!(out.recv_stream_paths, 0);
    }

    #[test]
    fn a_char_literal_quote_does_not_hide_code() {
        let text = "const Q: char = '\"'; type T = ::volo_grpc::RecvStream<u8>;";
        let out = rewrite_source(text).unwrap();
        assert!(
            out.text
                .ends_with("type T = ::grpc_stream_codec::volo::RecvStream<u8>;")
        );
    }

    #[test]
    fn entry_impl_without_expected_call_fails() {
        let send = SEND_IMPL.replace(
            "::volo_grpc::codec::encode::encode",
            "::volo_grpc::codec::encode::encode_v2",
        );
        assert_eq!(
            rewrite_source(&send).unwrap_err(),
            "::volo_grpc::codec::encode::encode"
        );
        let recv = RECV_IMPL.replace("RecvStream::new", "RecvStream::from_body");
        assert_eq!(
            rewrite_source(&recv).unwrap_err(),
            "::volo_grpc::RecvStream::new"
        );
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "grpc-stream-codec-rewrite-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn rewrites_split_layout_recursively() {
        // volo-build 0.12.3 with split_generated_files(true): volo_gen.rs
        // includes <package path>/mod.rs, the service trait is in
        // service_Echo.rs there, and the entry impls in Echo/enum_*.rs.
        let dir = temp_dir("split");
        let package = dir.join("streamcodec").join("echo").join("v1");
        let service = package.join("Echo");
        fs::create_dir_all(&service).unwrap();
        fs::write(
            dir.join("volo_gen.rs"),
            "pub mod volo_gen { include!(\"streamcodec/echo/v1/mod.rs\"); }",
        )
        .unwrap();
        fs::write(service.join("enum_EchoResponseSend.rs"), SEND_IMPL).unwrap();
        fs::write(service.join("enum_EchoRequestRecv.rs"), RECV_IMPL).unwrap();
        fs::write(package.join("service_Echo.rs"), TRAIT).unwrap();

        fs::write(
            package.join("mod.rs"),
            "include!(\"service_Echo.rs\");\npub mod Echo { include!(\"Echo/mod.rs\"); }\n",
        )
        .unwrap();
        fs::write(
            service.join("mod.rs"),
            "include!(\"enum_EchoResponseSend.rs\");\ninclude!(\"enum_EchoRequestRecv.rs\");\n",
        )
        .unwrap();

        let report = rewrite_dir(&dir).unwrap();
        assert_eq!(report.files_scanned, 6);
        // The three with volo-grpc paths, and the root for its marker.
        assert_eq!(report.files_rewritten, 4);
        assert_eq!(report.files_with_entry_impls, 2);
        assert_eq!(report.encode_paths, 2);
        assert_eq!(report.recv_stream_paths, 5);
        assert_eq!(report.marked_roots, 1);
        let trait_text = fs::read_to_string(package.join("service_Echo.rs")).unwrap();
        assert!(trait_text.contains("::grpc_stream_codec::volo::RecvStream<EchoRequest>"));
        // Only the root carries the marker: the others are included into
        // modules that hold several of them.
        for path in rewrite::rs_files(&dir).unwrap() {
            let text = fs::read_to_string(&path).unwrap();
            assert_eq!(
                text.contains(MARKER),
                path == dir.join("volo_gen.rs"),
                "{}",
                path.display()
            );
        }

        let again = rewrite_dir(&dir).unwrap();
        assert_eq!(again.files_rewritten, 0);
        assert_eq!(again.encode_paths, 2);
        assert_eq!(again.marked_roots, 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_root_gets_the_marker_once_and_nothing_else_changes() {
        let dir = temp_dir("marker");
        let generated = format!("pub mod volo_gen {{\n{SEND_IMPL}{RECV_IMPL}{TRAIT}}}\n");
        let root = dir.join("volo_gen.rs");
        fs::write(&root, &generated).unwrap();

        let report = rewrite_dir(&dir).unwrap();
        assert_eq!((report.files_rewritten, report.marked_roots), (1, 1));
        let once = fs::read_to_string(&root).unwrap();
        // Byte for byte the per-file rewrite, then the marker.
        let expected = format!("{}{MARKER}", rewrite_source(&generated).unwrap().text);
        assert_eq!(once, expected);
        assert_eq!(
            once.matches("as __grpc_stream_codec_volo_check;").count(),
            1
        );

        let again = rewrite_dir(&dir).unwrap();
        assert_eq!((again.files_rewritten, again.marked_roots), (0, 1));
        assert_eq!(fs::read_to_string(&root).unwrap(), once);

        // volo-build writing stock code over it again (the hook ran before
        // it) leaves no marker: that is what the include macro catches.
        fs::write(&root, &generated).unwrap();
        assert!(!fs::read_to_string(&root).unwrap().contains(MARKER));
        rewrite_dir(&dir).unwrap();
        assert_eq!(fs::read_to_string(&root).unwrap(), once);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn roots_without_volo_service_code_are_not_marked() {
        // Another generator's file next to volo-build's in the same OUT_DIR.
        let dir = temp_dir("other-root");
        fs::write(dir.join("volo_gen.rs"), SEND_IMPL).unwrap();
        let other = "pub mod tonic_gen { pub struct NotVolo; }\n";
        fs::write(dir.join("other.rs"), other).unwrap();

        let report = rewrite_dir(&dir).unwrap();
        assert_eq!(report.marked_roots, 1);
        assert_eq!(fs::read_to_string(dir.join("other.rs")).unwrap(), other);
        assert!(
            fs::read_to_string(dir.join("volo_gen.rs"))
                .unwrap()
                .ends_with(MARKER)
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_without_generated_services_is_an_error() {
        let dir = temp_dir("empty");
        fs::write(dir.join("other.rs"), "pub struct NotVolo;").unwrap();
        let err = rewrite_dir(&dir).unwrap_err();
        assert!(
            matches!(err, RewriteError::NothingGenerated { .. }),
            "{err}"
        );
        // A build script's `main` returning the error prints its Debug
        // form: the text that says what to do.
        let debug = format!("{err:?}");
        assert_eq!(debug, err.to_string());
        assert!(
            debug.contains("run grpc_stream_codec::volo::build::rewrite_out_dir() after"),
            "{debug}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_pattern_names_the_file() {
        let dir = temp_dir("missing");
        let bad = SEND_IMPL.replace("codec::encode::encode", "codec::encode::encode2");
        fs::write(dir.join("volo_gen.rs"), bad).unwrap();
        let err = rewrite_dir(&dir).unwrap_err();
        match &err {
            RewriteError::MissingPattern { path, expected } => {
                assert!(path.ends_with("volo_gen.rs"));
                assert_eq!(*expected, "::volo_grpc::codec::encode::encode");
            }
            other => panic!("unexpected {other}"),
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
