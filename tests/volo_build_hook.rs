//! The volo build hook on volo-build output: what it rewrites, the mark
//! it leaves for include_service!, and what it refuses.
#![cfg(feature = "volo-build-hook")]

use std::fs;
use std::path::PathBuf;

use grpc_stream_codec::build::*;
use grpc_stream_codec::volo::build::*;

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
    // A server's responses: the body records its call itself.
    assert_eq!(
        out.text
            .matches("::grpc_stream_codec::codegen::volo::encode_response(s,")
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
fn a_clients_requests_use_the_plain_encoder() {
    let requests = SEND_IMPL.replace("EchoResponseSend", "EchoRequestSend");
    let both = format!("{requests}{SEND_IMPL}{requests}");
    let out = rewrite_source(&both).unwrap();
    let at = |needle: &str| {
        out.text
            .match_indices(needle)
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
    };
    let plain = at("::grpc_stream_codec::codegen::volo::encode(s,");
    let responses = at("::grpc_stream_codec::codegen::volo::encode_response(s,");
    assert_eq!((plain.len(), responses.len()), (4, 2), "{}", out.text);
    // Each in its own impl: the response's between the two request impls.
    let response_impl = out.text.find("for EchoResponseSend").unwrap();
    let second_request_impl = out.text.rfind("for EchoRequestSend").unwrap();
    assert!(plain[..2].iter().all(|&i| i < response_impl));
    assert!(
        responses
            .iter()
            .all(|&i| response_impl < i && i < second_request_impl)
    );
    assert_eq!(out.encode_paths, 6);
}

#[test]
fn a_file_rewritten_by_an_earlier_hook_gets_the_response_encoder() {
    let earlier = SEND_IMPL.replace(
        "::volo_grpc::codec::encode::encode",
        "::grpc_stream_codec::codegen::volo::encode",
    );
    let out = rewrite_source(&earlier).unwrap();
    assert_eq!(
        out.text
            .matches("::grpc_stream_codec::codegen::volo::encode_response(s,")
            .count(),
        2
    );
    assert_eq!(out.encode_paths, 2);
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
        out.text
            .contains("::volo_grpc::Request<::grpc_stream_codec::volo::RecvStream<EchoRequest>>")
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
    let text = "impl ::volo_grpc::SendEntryMessage for XRequestSend { fn f() { :: volo_grpc ::codec::\n encode :: encode(s, c) } }";
    let out = rewrite_source(text).unwrap();
    assert!(
        out.text
            .contains("{ ::grpc_stream_codec::codegen::volo::encode(s, c) }")
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
        SourceError::MissingPattern {
            adapter: Adapter::Volo,
            expected: "::volo_grpc::codec::encode::encode"
        }
    );
    let recv = RECV_IMPL.replace("RecvStream::new", "RecvStream::from_body");
    assert_eq!(
        rewrite_source(&recv).unwrap_err(),
        SourceError::MissingPattern {
            adapter: Adapter::Volo,
            expected: "::volo_grpc::RecvStream::new"
        }
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
        debug.contains("call grpc_stream_codec::volo::build::rewrite_dir(dir) after"),
        "{debug}"
    );
    assert!(debug.contains("nothing was generated there"), "{debug}");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_pattern_names_the_file() {
    let dir = temp_dir("missing");
    let bad = SEND_IMPL.replace("codec::encode::encode", "codec::encode::encode2");
    fs::write(dir.join("volo_gen.rs"), bad).unwrap();
    let err = rewrite_dir(&dir).unwrap_err();
    match &err {
        RewriteError::Source {
            path,
            error: SourceError::MissingPattern { expected, .. },
        } => {
            assert!(path.ends_with("volo_gen.rs"));
            assert_eq!(*expected, "::volo_grpc::codec::encode::encode");
        }
        other => panic!("unexpected {other}"),
    }
    fs::remove_dir_all(&dir).unwrap();
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
    for path in rs_files(&dir) {
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(
            marked(&text),
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
    let rewritten = rewrite_source(&generated).unwrap().text;
    assert_eq!(
        once.strip_prefix(rewritten.as_str()).map(marked),
        Some(true)
    );
    assert!(marked_once_at_the_end(&once), "{once}");

    let again = rewrite_dir(&dir).unwrap();
    assert_eq!((again.files_rewritten, again.marked_roots), (0, 1));
    assert_eq!(fs::read_to_string(&root).unwrap(), once);

    // volo-build writing stock code over it again (the hook ran before
    // it) leaves no marker: that is what the include macro catches.
    fs::write(&root, &generated).unwrap();
    assert!(!marked(&fs::read_to_string(&root).unwrap()));
    rewrite_dir(&dir).unwrap();
    assert_eq!(fs::read_to_string(&root).unwrap(), once);

    // A mark of an earlier version (a macro resolved by name) is replaced,
    // not followed by a second one.
    let old_mark = "\n// Added by grpc_stream_codec::volo::build: this output was rewritten onto\n\
                    // the adapter after volo-build wrote it.\n\
                    __grpc_stream_codec_volo_mark!();\n";
    fs::write(&root, format!("{rewritten}{old_mark}")).unwrap();
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
    let root = fs::read_to_string(dir.join("volo_gen.rs")).unwrap();
    assert!(marked_once_at_the_end(&root), "{root}");
    fs::remove_dir_all(&dir).unwrap();
}

/// How the line of the hook's mark starts: a call, by its path into the
/// crate, naming the include macro's call for the file (here, outside
/// `OUT_DIR`, `include_file!` with the path from the crate's `src/`).
const MARK_CALL: &str = "\n::grpc_stream_codec::codegen::include_mark!(volo include_file!(\"";

fn marked(text: &str) -> bool {
    text.contains(MARK_CALL)
}

/// Whether the mark is the text's last line, and there once.
fn marked_once_at_the_end(text: &str) -> bool {
    let last = text.trim_end().rsplit('\n').next().unwrap_or("");
    text.matches(MARK_CALL).count() == 1
        && last.starts_with(MARK_CALL.trim_start())
        && last.ends_with("volo_gen.rs\") from \"src/\");")
}

/// Every `.rs` file under `dir`.
fn rs_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(rs_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
    found
}

#[test]
fn hand_written_files_next_to_generated_ones_are_left_alone() {
    let dir = temp_dir("hand-written");
    let generated = format!("pub mod volo_gen {{\n{SEND_IMPL}{RECV_IMPL}{TRAIT}}}\n");
    fs::write(dir.join("volo_gen.rs"), &generated).unwrap();
    let legacy = "pub type Requests<T> = ::volo_grpc::RecvStream<T>;\n";
    fs::write(dir.join("legacy.rs"), legacy).unwrap();

    let report = rewrite_dir(&dir).unwrap();
    assert_eq!(report.skipped_files, [dir.join("legacy.rs")]);
    assert_eq!(fs::read_to_string(dir.join("legacy.rs")).unwrap(), legacy);
    assert!(marked(
        &fs::read_to_string(dir.join("volo_gen.rs")).unwrap()
    ));
    fs::remove_dir_all(&dir).unwrap();
}
