//! [`include_service!`](crate::volo::include_service): includes volo-build's
//! output and fails the build, naming the fix, when the [build hook](super::build)
//! did not rewrite it.
//!
//! How the check works: `src/include_check.rs`.

include_check! {
    adapter: "volo",
    comment: "// Added by grpc_stream_codec::volo::build: this output was rewritten onto
// the adapter after volo-build wrote it. Checked by
// grpc_stream_codec::volo::include_service!.
",
    name: __grpc_stream_codec_volo_check,
    stock: __volo_include_stock
}

/// The check of a file without the hook's marker.
#[macro_export]
#[doc(hidden)]
macro_rules! __volo_include_stock {
    ($file:literal) => {
        compile_error!(concat!(
            "grpc-stream-codec: `",
            $file,
            "` in OUT_DIR is volo-build's stock output: ",
            "grpc_stream_codec::volo::build::rewrite_out_dir() did not run after volo-build wrote it. ",
            "In build.rs, call it after volo-build's `.write()`, not before (the previous run's file ",
            "is still there then, and volo-build overwrites it), and return its error: ",
            "`grpc_stream_codec::volo::build::rewrite_out_dir()?;`",
        ));
    };
}

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
/// `out_dir`). Include each file in a module of its own: the file defines
/// its marker (and volo-build its `volo_gen` module) in the module it is
/// included into.
#[macro_export]
#[doc(hidden)]
macro_rules! __volo_include_service {
    ($file:literal) => {
        $crate::__include_checked!(volo, __grpc_stream_codec_volo_check, $file, "");
    };
}
