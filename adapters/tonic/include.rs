//! [`include_proto!`](crate::tonic::include_proto) and
//! [`include_file!`](crate::tonic::include_file): include tonic-prost-build's
//! output and fail the build, naming the fix, when the [build hook](super::build)
//! did not rewrite it.
//!
//! How the check works, and why at macro expansion: `src/include_check.rs`.
//! (A `const` assertion would let rustc print its mismatched-signature
//! errors first, whose hints point at stock tonic.)

#[doc(inline)]
pub use crate::__tonic_include_file as include_file;
#[doc(inline)]
pub use crate::__tonic_include_proto as include_proto;

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
/// builder `out_dir(OUT_DIR/dir)`. Several files that go into one module
/// are named in one call, `include_proto!("a.v1", "b.v1")`, or in a call
/// each; every file is checked on its own. Two files of one module need
/// different file names (the check's names are made from them).
///
/// The other way round, a file the hook rewrote builds only through this
/// macro or [`include_file!`](crate::tonic::include_file) (or prost's
/// include file, itself included with one of them): with `include!`,
/// `tonic::include_proto!` or a `mod` item the build fails, its first error
/// naming the line to write instead, e.g.
/// `grpc_stream_codec::tonic::include_proto!("my.package");`. A file the
/// hook left on tonic's framing (another codec than this crate's) has no
/// mark and is included with `include!` or `tonic::include_proto!`.
#[macro_export]
#[doc(hidden)]
macro_rules! __tonic_include_proto {
    ($($package:literal),+ $(,)?) => {
        $crate::__include_checked!(tonic, out_dir, ".rs", [$($package),+]);
    };
}

/// [`include_proto!`](crate::tonic::include_proto) for generated code outside `OUT_DIR`, such as code
/// committed to the repository (the builder's `out_dir("src/pb")`): takes
/// the file's path as `include!` does, relative to the file the macro is
/// called in.
///
/// ```ignore
/// // src/lib.rs, with build.rs running tonic_prost_build with
/// // .out_dir("src/pb") and then grpc_stream_codec::tonic::build::rewrite_dir("src/pb")?
/// pub mod pb {
///     grpc_stream_codec::tonic::include_file!("pb/my.package.rs");
/// }
/// ```
///
/// A file the hook did not rewrite after tonic-prost-build wrote it fails
/// the build with the fix as the first error, as with
/// [`include_proto!`](crate::tonic::include_proto).
/// Several files of one module are named in one call or in a call each.
#[macro_export]
#[doc(hidden)]
macro_rules! __tonic_include_file {
    ($($file:literal),+ $(,)?) => {
        $crate::__include_checked!(tonic, path, "", [$($file),+]);
    };
}
