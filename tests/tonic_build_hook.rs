//! The tonic build hook on trimmed tonic-prost-build output: what it
//! rewrites, what it leaves alone, and what it refuses.
#![cfg(feature = "tonic-build-hook")]

use std::path::PathBuf;

use grpc_stream_codec::build::*;
use grpc_stream_codec::tonic::build::*;

// Trimmed from tonic-prost-build 0.14 output.
const SERVER: &str = r#"
pub mod echo_server {
    use tonic::codegen::*;
    pub trait Echo: std::marker::Send + std::marker::Sync + 'static {
        /// Takes a tonic::Streaming<T>.
        async fn client_stream(
            &self,
            request: tonic::Request<tonic::Streaming<super::Ping>>,
        ) -> std::result::Result<tonic::Response<super::Pong>, tonic::Status>;
    }
    impl<T, B> tonic::codegen::Service<http::Request<B>> for EchoServer<T> {
        fn call(&mut self, req: http::Request<B>) -> Self::Future {
            match req.uri().path() {
                "/alpha.Echo/ClientStream" => {
                    struct ClientStreamSvc<T: Echo>(pub Arc<T>);
                    impl<
                        T: Echo,
                    > tonic::server::ClientStreamingService<super::Ping>
                    for ClientStreamSvc<T> {
                        fn call(
                            &mut self,
                            request: tonic::Request<tonic::Streaming<super::Ping>>,
                        ) -> Self::Future { todo!() }
                    }
                    let fut = async move {
                        let codec = tonic_prost::ProstCodec::default();
                        let mut grpc = tonic::server::Grpc::new(codec)
                            .apply_compression_config(a, b);
                        let res = grpc.client_streaming(method, req).await;
                        Ok(res)
                    };
                    Box::pin(fut)
                }
                _ => todo!(),
            }
        }
    }
    impl<T> tonic::server::NamedService for EchoServer<T> {
        const NAME: &'static str = "tonic::server::Grpc";
    }
}
"#;

const CLIENT: &str = r#"
pub mod echo_client {
    pub struct EchoClient<T> {
        inner: tonic::client::Grpc<T>,
    }
    impl<T> EchoClient<T>
    where
        T: tonic::client::GrpcService<tonic::body::Body>,
    {
        pub async fn server_stream(
            &mut self,
            request: impl tonic::IntoRequest<super::Ping>,
        ) -> std::result::Result<
            tonic::Response<tonic::codec::Streaming<super::Pong>>,
            tonic::Status,
        > {
            let codec = tonic_prost::ProstCodec::default();
            self.inner.server_streaming(req, path, codec).await
        }
    }
}
"#;

#[test]
fn rewrites_the_table_and_nothing_else() {
    let out = rewrite_source(&format!("{SERVER}{CLIENT}")).unwrap();
    for stock in [
        "tonic::server::Grpc::new",
        "tonic::server::ClientStreamingService<",
        "tonic::Request<tonic::Streaming",
        "<tonic::codec::Streaming",
        "tonic::client::Grpc<T>",
        "= tonic_prost::ProstCodec",
    ] {
        // Not counting the tail of `::grpc_stream_codec::tonic::..`.
        let left = out
            .text
            .match_indices(stock)
            .filter(|&(at, _)| !out.text[..at].ends_with(':'))
            .count();
        assert_eq!(left, 0, "{stock} left");
    }
    assert_eq!(
        out.text
            .matches("tonic::Request<::grpc_stream_codec::tonic::Streaming<super::Ping>>")
            .count(),
        2
    );
    assert!(
        out.text
            .contains("tonic::Response<::grpc_stream_codec::tonic::Streaming<super::Pong>>")
    );
    assert!(
        out.text
            .contains("inner: ::grpc_stream_codec::codegen::tonic::client::Grpc<T>,")
    );
    assert!(
        out.text
            .contains("> ::grpc_stream_codec::codegen::tonic::server::ClientStreamingService<")
    );
    assert_eq!(
        out.text
            .matches("let codec = ::grpc_stream_codec::tonic::ProstCodec::default();")
            .count(),
        2
    );
    // Left alone: the marker traits, the rest of tonic, comments, strings.
    for kept in [
        "impl<T> tonic::server::NamedService for",
        "T: tonic::client::GrpcService<tonic::body::Body>",
        "tonic::codegen::Service<http::Request<B>>",
        "/// Takes a tonic::Streaming<T>.",
        "\"tonic::server::Grpc\"",
    ] {
        assert!(out.text.contains(kept), "{kept} changed");
    }
    assert!(out.has_services);
    assert_eq!(
        (
            out.server_grpc_paths,
            out.client_grpc_paths,
            out.service_trait_paths,
            out.streaming_paths,
            out.codec_paths
        ),
        (1, 1, 1, 3, 2)
    );
    assert_eq!(rewrite_source(&out.text).unwrap(), out);
}

#[test]
fn leading_colons_and_spaces_are_matched() {
    let text = format!(
        "{CLIENT} fn f() {{ let g = :: tonic :: server :: Grpc :: new(c); \
             let s: ::tonic::Streaming<u8>; }}"
    );
    let out = rewrite_source(&text).unwrap();
    assert!(
        out.text
            .contains("let g = ::grpc_stream_codec::codegen::tonic::server::Grpc :: new(c);")
    );
    assert!(
        out.text
            .contains("let s: ::grpc_stream_codec::tonic::Streaming<u8>;")
    );
}

#[test]
fn a_server_without_methods_needs_no_grpc() {
    let text = "impl<T> tonic::server::NamedService for QuietServer<T> {}";
    let out = rewrite_source(text).unwrap();
    assert!(out.has_services);
    assert_eq!(out.text, text);
}

#[test]
fn our_codec_path_stays_and_others_keep_tonic_framing() {
    let ours = CLIENT.replace("tonic_prost::", "grpc_stream_codec::tonic::");
    let out = rewrite_source(&ours).unwrap();
    assert!(
        out.text
            .contains("let codec = grpc_stream_codec::tonic::ProstCodec::default();")
    );
    assert_eq!(out.codec_paths, 1);

    // Another codec: the file stays as generated, on tonic's framing.
    let foreign = CLIENT.replace("tonic_prost::ProstCodec", "::my::Codec");
    let out = rewrite_source(&foreign).unwrap();
    assert_eq!(out.text, foreign);
    assert_eq!(out.foreign_codec.as_deref(), Some("::my::Codec"));
    assert!(out.has_services);
    // Our crate's codec with buffer settings from a type runs too.
    let with = CLIENT.replace(
        "tonic_prost::ProstCodec",
        "grpc_stream_codec::tonic::ProstCodecWith",
    );
    let out = rewrite_source(&with).unwrap();
    assert!(
        out.text
            .contains("grpc_stream_codec::tonic::ProstCodecWith::default()")
    );
}

#[test]
fn generated_code_without_expected_paths_fails() {
    let missing = |text: &str| match rewrite_source(text) {
        Err(SourceError::MissingPattern {
            adapter: Adapter::Tonic,
            expected,
        }) => expected,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        missing(&SERVER.replace("tonic::server::Grpc::new", "tonic::server::Grpc2::new")),
        "tonic::server::Grpc"
    );
    assert_eq!(
        missing(&SERVER.replace("tonic::Streaming<", "tonic::Stream<")),
        "tonic::Streaming"
    );
    assert_eq!(
        missing(&CLIENT.replace("tonic::client::Grpc<", "tonic::client::Channel<")),
        "tonic::client::Grpc"
    );
    assert_eq!(
        missing(&CLIENT.replace("tonic_prost::ProstCodec::default()", "make()")),
        "tonic_prost::ProstCodec"
    );
}

#[test]
fn errors_say_what_to_do() {
    let err = RewriteError::Source {
        path: PathBuf::from("out/alpha.rs"),
        error: SourceError::MissingPattern {
            adapter: Adapter::Tonic,
            expected: "tonic::server::Grpc",
        },
    };
    let text = err.to_string();
    assert!(
        text.starts_with("out/alpha.rs: holds tonic-prost-build server or client code"),
        "{text}"
    );
    let out_dir = HookCall {
        adapter: Adapter::Tonic,
        entry: Entry::RewriteOutDir,
    };
    let dir = HookCall {
        adapter: Adapter::Tonic,
        entry: Entry::RewriteDir,
    };
    let text = RewriteError::NoOutDir { call: out_dir }.to_string();
    assert!(text.contains("rewrite_dir"), "{text}");
    // A build script's `main` returning the error prints its Debug form,
    // which names the function it called.
    for (call, name) in [
        (
            out_dir,
            "grpc_stream_codec::tonic::build::rewrite_out_dir()",
        ),
        (dir, "grpc_stream_codec::tonic::build::rewrite_dir(dir)"),
    ] {
        for err in [
            RewriteError::NothingGenerated {
                dir: "out".into(),
                call,
            },
            RewriteError::AlreadyRewritten {
                dir: "out".into(),
                call,
            },
        ] {
            let debug = format!("{err:?}");
            assert_eq!(debug, err.to_string());
            assert!(debug.contains(&format!("call {name} after")), "{debug}");
            assert!(debug.contains("in this build"), "{debug}");
            assert!(debug.contains("cargo feature"), "{debug}");
        }
    }
}

#[test]
fn only_generated_files_are_rewritten() {
    let dir = std::env::temp_dir().join(format!(
        "grpc-stream-codec-tonic-skip-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let generated = format!("// This file is @generated by prost-build.\n{SERVER}{CLIENT}");
    let legacy = "pub type StockStream<T> = tonic::Streaming<T>;\n";
    std::fs::write(dir.join("alpha.rs"), &generated).unwrap();
    std::fs::write(dir.join("legacy.rs"), legacy).unwrap();

    let report = rewrite_dir(&dir).unwrap();
    assert_eq!(report.skipped_files, [dir.join("legacy.rs")]);
    assert_eq!(report.files_rewritten, 1);
    assert_eq!(
        std::fs::read_to_string(dir.join("legacy.rs")).unwrap(),
        legacy
    );
    let alpha = std::fs::read_to_string(dir.join("alpha.rs")).unwrap();
    assert!(alpha.contains("::grpc_stream_codec::codegen::tonic::server::Grpc::new"));
    std::fs::remove_dir_all(&dir).unwrap();
}
