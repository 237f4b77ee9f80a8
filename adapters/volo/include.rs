//! [`include_service!`](crate::volo::include_service) and
//! [`include_file!`](crate::volo::include_file): include volo-build's output
//! and fail the build, naming the fix, when the [build hook](super::build)
//! did not rewrite it.
//!
//! How the check works: `src/include_check.rs`.

#[doc(inline)]
pub use crate::__volo_include_file as include_file;
#[doc(inline)]
pub use crate::__volo_include_service as include_service;

/// Includes a file volo-build wrote to `OUT_DIR`, like
/// `volo::include_service!`, and fails the build if grpc-stream-codec's
/// build hook did not rewrite it afterwards.
///
/// ```ignore
/// mod generated {
///     grpc_stream_codec::volo::include_service!("volo_gen.rs");
/// }
/// pub use generated::volo_gen::my::package::*;
/// ```
///
/// Without this check a hook called *before* volo-build in `build.rs`
/// "succeeds" on the previous run's file, which volo-build then overwrites
/// with stock code, and a hook not called at all goes unnoticed just the
/// same; either way the service would run on volo-grpc's own codec. With
/// it, both fail to compile with this as the first error:
///
/// ```text
/// error: grpc-stream-codec: `volo_gen.rs` in OUT_DIR is volo-build's
/// stock output: grpc_stream_codec::volo::build::rewrite_out_dir() did not run after volo-build
/// wrote it. In build.rs, call it after volo-build's `.write()`, not before ...
/// ```
///
/// The path is relative to `OUT_DIR` (a subdirectory is fine:
/// `"adapter/volo_gen.rs"` for a build script that gave volo-build that
/// `out_dir`). Several roots that go into one module (a `volo.yml` with two
/// entries) are named in one call, `include_service!("a.rs", "b.rs")`, or
/// in a call each; every root is checked on its own. Two roots of one
/// module need different file names (the check's names are made from
/// them).
///
/// The other way round, a root the hook rewrote builds only through this
/// macro or [`include_file!`](crate::volo::include_file): with `include!`,
/// `volo::include_service!` or a `mod` item the build fails, its first
/// error naming the line to write instead, e.g.
/// `grpc_stream_codec::volo::include_service!("volo_gen.rs");`.
#[macro_export]
#[doc(hidden)]
macro_rules! __volo_include_service {
    ($($file:literal),+ $(,)?) => {
        $crate::__include_checked!(volo, out_dir, "", [$($file),+]);
    };
}

/// [`include_service!`](crate::volo::include_service) for generated code
/// outside `OUT_DIR`, such as code committed to the repository: takes the
/// root file's path as `include!` does, relative to the file the macro is
/// called in.
///
/// ```ignore
/// // src/lib.rs, with build.rs running volo-build with out_dir "src/gen"
/// // and then grpc_stream_codec::volo::build::rewrite_dir("src/gen")?
/// mod generated {
///     grpc_stream_codec::volo::include_file!("gen/volo_gen.rs");
/// }
/// ```
///
/// A root the hook did not rewrite after volo-build wrote it fails the
/// build with the fix as the first error. Several roots of one module are
/// named in one call or in a call each.
#[macro_export]
#[doc(hidden)]
macro_rules! __volo_include_file {
    ($($file:literal),+ $(,)?) => {
        $crate::__include_checked!(volo, path, "", [$($file),+]);
    };
}
