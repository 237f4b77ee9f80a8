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
//! // build.rs, in `fn main`, after volo-build has written its output
//! // (volo_build::ConfigBuilder::default().write()?, or Builder::protobuf()...write()?):
//! let report = grpc_stream_codec::volo::build::rewrite_out_dir()?;
//! assert!(report.files_with_entry_impls > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What is rewritten, in code only (comments and string literals are left
//! alone), whatever whitespace rustfmt put around the `::`:
//!
//! | volo-build 0.12 generates            | rewritten to                           |
//! |--------------------------------------|----------------------------------------|
//! | `::volo_grpc::codec::encode::encode` | `::grpc_stream_codec::volo::encode`     |
//! | `::volo_grpc::RecvStream`            | `::grpc_stream_codec::volo::RecvStream` |
//!
//! The second covers `RecvStream::new(..)` in `RecvEntryMessage::from_body`,
//! the `*Recv` enum variants and the `Request<RecvStream<T>>` argument of
//! client-streaming and bidi handlers, so those handlers name this crate's
//! `RecvStream` after the rewrite.
//!
//! The rewrite is idempotent. It fails, rather than leaving stock code in
//! place, when a file implements `SendEntryMessage` or `RecvEntryMessage` but
//! contains neither the stock nor the rewritten call (volo-build changed its
//! output), and when no file under the directory implements either (the hook
//! ran on the wrong directory, or before volo-build wrote anything).

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

const STOCK_ENCODE: &[&str] = &["volo_grpc", "codec", "encode", "encode"];
const STOCK_RECV_STREAM: &[&str] = &["volo_grpc", "RecvStream"];
const ADAPTER_ENCODE: &[&str] = &["grpc_stream_codec", "volo", "encode"];
const ADAPTER_RECV_STREAM: &[&str] = &["grpc_stream_codec", "volo", "RecvStream"];
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
}

/// Why a rewrite failed.
#[derive(Debug)]
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
                 run the rewrite after volo_build has written its output there",
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
/// Call it from `build.rs` after volo-build has written its output.
pub fn rewrite_out_dir() -> Result<RewriteReport, RewriteError> {
    let dir = std::env::var_os("OUT_DIR").ok_or(RewriteError::NoOutDir)?;
    rewrite_dir(dir)
}

/// Rewrites every `.rs` file under `dir`, recursively; see the module docs.
///
/// Files that need no change are not written, so their modification times
/// stay as volo-build left them.
pub fn rewrite_dir(dir: impl AsRef<Path>) -> Result<RewriteReport, RewriteError> {
    let dir = dir.as_ref();
    let mut files = Vec::new();
    collect_rs_files(dir, &mut files)?;
    // A stable order keeps error messages reproducible across runs.
    files.sort();

    let mut report = RewriteReport::default();
    for path in files {
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
        if rewritten.text != text {
            fs::write(&path, &rewritten.text).map_err(|source| RewriteError::Io {
                path: path.clone(),
                source,
            })?;
            report.files_rewritten += 1;
        }
    }
    if report.files_with_entry_impls == 0 {
        return Err(RewriteError::NothingGenerated {
            dir: dir.to_path_buf(),
        });
    }
    Ok(report)
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), RewriteError> {
    let io_err = |source| RewriteError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(io_err)?;
        if kind.is_dir() {
            collect_rs_files(&path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
    Ok(())
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
    let mut out = String::with_capacity(text.len() + 256);
    let mut has_send = false;
    let mut has_recv = false;
    let mut encode_paths = 0;
    let mut recv_stream_paths = 0;
    let mut new_calls = 0;

    let bytes = text.as_bytes();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(end) = skip_non_code(text, i) {
            i = end;
            continue;
        }
        if bytes[i] == b':' && path_may_start(bytes, i) {
            if let Some(end) = match_path(bytes, i, STOCK_ENCODE) {
                out.push_str(&text[copied..i]);
                out.push_str("::grpc_stream_codec::volo::encode");
                copied = end;
                i = end;
                encode_paths += 1;
                continue;
            }
            if let Some(end) = match_path(bytes, i, STOCK_RECV_STREAM) {
                out.push_str(&text[copied..i]);
                out.push_str("::grpc_stream_codec::volo::RecvStream");
                copied = end;
                i = end;
                recv_stream_paths += 1;
                if followed_by_new(bytes, end) {
                    new_calls += 1;
                }
                continue;
            }
            if let Some(end) = match_path(bytes, i, ADAPTER_ENCODE) {
                encode_paths += 1;
                i = end;
                continue;
            }
            if let Some(end) = match_path(bytes, i, ADAPTER_RECV_STREAM) {
                recv_stream_paths += 1;
                if followed_by_new(bytes, end) {
                    new_calls += 1;
                }
                i = end;
                continue;
            }
            if let Some(end) = match_path(bytes, i, SEND_ENTRY) {
                has_send |= preceded_by_impl(bytes, i);
                i = end;
                continue;
            }
            if let Some(end) = match_path(bytes, i, RECV_ENTRY) {
                has_recv |= preceded_by_impl(bytes, i);
                i = end;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);

    if has_send && encode_paths == 0 {
        return Err("::volo_grpc::codec::encode::encode");
    }
    if has_recv && new_calls == 0 {
        return Err("::volo_grpc::RecvStream::new");
    }
    Ok(RewrittenSource {
        text: out,
        has_entry_impls: has_send || has_recv,
        encode_paths,
        recv_stream_paths,
    })
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// A leading `::` only starts a global path when it does not continue a
/// longer path such as `foo::volo_grpc::...` (rustfmt never spaces a path, so
/// `impl ::volo_grpc::X` with a space is a start).
fn path_may_start(bytes: &[u8], i: usize) -> bool {
    i == 0 || !(is_ident_byte(bytes[i - 1]) || bytes[i - 1] == b':')
}

/// Matches `:: seg (:: seg)*` at `i`, whitespace allowed around `::`, and
/// returns the end of the last segment, which must end the identifier.
fn match_path(bytes: &[u8], mut i: usize, segments: &[&str]) -> Option<usize> {
    for segment in segments {
        i = skip_ws(bytes, i);
        if !bytes[i..].starts_with(b"::") {
            return None;
        }
        i = skip_ws(bytes, i + 2);
        if !bytes[i..].starts_with(segment.as_bytes()) {
            return None;
        }
        i += segment.len();
        if i < bytes.len() && is_ident_byte(bytes[i]) {
            return None;
        }
    }
    Some(i)
}

fn followed_by_new(bytes: &[u8], end: usize) -> bool {
    let i = skip_ws(bytes, end);
    if !bytes[i..].starts_with(b"::") {
        return false;
    }
    let i = skip_ws(bytes, i + 2);
    bytes[i..].starts_with(b"new") && !bytes.get(i + 3).copied().is_some_and(is_ident_byte)
}

fn preceded_by_impl(bytes: &[u8], i: usize) -> bool {
    let mut j = i;
    while j > 0 && bytes[j - 1].is_ascii_whitespace() {
        j -= 1;
    }
    // `impl ::x::Trait for`, also `impl<..> ::x::Trait for`.
    let head = &bytes[..j];
    head.ends_with(b"impl") || head.ends_with(b">")
}

/// If a comment, string or char literal starts at `i`, returns its end.
fn skip_non_code(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let rest = &bytes[i..];
    if rest.starts_with(b"//") {
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| i + p);
        return Some(end);
    }
    if rest.starts_with(b"/*") {
        // Rust block comments nest.
        let mut depth = 0usize;
        let mut j = i;
        while j < bytes.len() {
            if bytes[j..].starts_with(b"/*") {
                depth += 1;
                j += 2;
            } else if bytes[j..].starts_with(b"*/") {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    return Some(j);
                }
            } else {
                j += 1;
            }
        }
        return Some(bytes.len());
    }
    let prev_is_ident = i > 0 && is_ident_byte(bytes[i - 1]);
    if !prev_is_ident
        && (rest.starts_with(b"r\"") || rest.starts_with(b"r#") || rest.starts_with(b"br"))
    {
        let start = if rest[0] == b'b' { i + 2 } else { i + 1 };
        let hashes = bytes[start..].iter().take_while(|&&b| b == b'#').count();
        if bytes.get(start + hashes) == Some(&b'"') {
            let mut closing = Vec::with_capacity(hashes + 1);
            closing.push(b'"');
            closing.extend(std::iter::repeat_n(b'#', hashes));
            let body = start + hashes + 1;
            let end = bytes[body..]
                .windows(closing.len())
                .position(|w| w == closing.as_slice())
                .map_or(bytes.len(), |p| body + p + closing.len());
            return Some(end);
        }
    }
    if rest[0] == b'"' {
        let mut j = i + 1;
        while j < bytes.len() {
            match bytes[j] {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
        return Some(bytes.len());
    }
    if rest[0] == b'\'' {
        // A char literal ('x', '\n', '\u{..}'), not a lifetime ('static).
        if rest.get(1) == Some(&b'\\') {
            let end = rest[2..]
                .iter()
                .position(|&b| b == b'\'')
                .map_or(bytes.len(), |p| i + 2 + p + 1);
            return Some(end);
        }
        let ch_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
        if rest.get(1 + ch_len) == Some(&b'\'') {
            return Some(i + 2 + ch_len);
        }
    }
    None
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

        let report = rewrite_dir(&dir).unwrap();
        assert_eq!(report.files_scanned, 4);
        assert_eq!(report.files_rewritten, 3);
        assert_eq!(report.files_with_entry_impls, 2);
        assert_eq!(report.encode_paths, 2);
        assert_eq!(report.recv_stream_paths, 5);
        let trait_text = fs::read_to_string(package.join("service_Echo.rs")).unwrap();
        assert!(trait_text.contains("::grpc_stream_codec::volo::RecvStream<EchoRequest>"));

        let again = rewrite_dir(&dir).unwrap();
        assert_eq!(again.files_rewritten, 0);
        assert_eq!(again.encode_paths, 2);
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
