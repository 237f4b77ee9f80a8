//! [`include_proto!`](crate::tonic::include_proto): includes
//! tonic-prost-build's output and fails the build, naming the fix, when the
//! [build hook](super::build) did not rewrite it.
//!
//! How the check works, and why at macro expansion: `src/include_check.rs`.
//! (A `const` assertion would let rustc print its mismatched-signature
//! errors first, whose hints point at stock tonic.)

include_check! {
    adapter: "tonic",
    comment: "// Added by grpc_stream_codec::tonic::build: this output was rewritten onto
// grpc-stream-codec's full framing after tonic-prost-build wrote it.
// Checked by grpc_stream_codec::tonic::include_proto!.
",
    name: __grpc_stream_codec_tonic_check,
    stock: __tonic_include_stock
}

/// The check of a file without the hook's marker.
#[macro_export]
#[doc(hidden)]
macro_rules! __tonic_include_stock {
    ($package:literal) => {
        compile_error!(concat!(
            "grpc-stream-codec: `",
            $package,
            ".rs` in OUT_DIR is tonic-prost-build's stock output: ",
            "grpc_stream_codec::tonic::build::rewrite_out_dir() did not run after tonic_prost_build wrote it. ",
            "In build.rs, call it after tonic_prost_build's compile call (compile_protos or compile_fds), ",
            "not before, and return its error: `grpc_stream_codec::tonic::build::rewrite_out_dir()?;` ",
            "(with the builder's out_dir(dir): `rewrite_dir(dir)?`)",
        ));
    };
}

/// Includes the code tonic-prost-build generated for a proto package, like
/// `tonic::include_proto!`, and fails the build if grpc-stream-codec's
/// build hook did not rewrite it afterwards.
///
/// ```ignore
/// pub mod pb {
///     grpc_stream_codec::tonic::include_proto!("my.package");
/// }
/// ```
///
/// Without this check, a hook left out of `build.rs`, or called before
/// tonic-prost-build (which then writes stock code over what it rewrote),
/// builds stock tonic without a word when the service has only unary and
/// server-streaming methods, and otherwise fails with rustc hints that lead
/// back to stock tonic. With it, both fail to compile with this as the
/// first error:
///
/// ```text
/// error: grpc-stream-codec: `my.package.rs` in OUT_DIR is tonic-prost-build's stock output:
/// grpc_stream_codec::tonic::build::rewrite_out_dir() did not run after tonic_prost_build wrote it.
/// In build.rs, call it after tonic_prost_build's compile call ...
/// ```
///
/// The argument is the file's path under `OUT_DIR` without `.rs`: the
/// package name, or `"dir/my.package"` for a build script that gave the
/// builder `out_dir(OUT_DIR/dir)`. Include each file in a module of its
/// own (as with tonic's macro): the file's marker is an import in the
/// module it is included into.
#[macro_export]
#[doc(hidden)]
macro_rules! __tonic_include_proto {
    ($package:literal) => {
        $crate::__include_checked!(tonic, __grpc_stream_codec_tonic_check, $package, ".rs");
    };
}
