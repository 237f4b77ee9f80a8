//! [`include_service!`](crate::volo::include_service): includes volo-build's
//! output and fails the build, naming the fix, when the [build hook](super::build)
//! did not rewrite it.
//!
//! How the check works: the hook appends a marker type with
//! `REWRITTEN = true` to each file a user includes (the root of each
//! generated tree). The macro glob-imports a fallback type of the same name
//! with `REWRITTEN = false`; an item defined in the module shadows a glob
//! import, so the fallback is only seen when the marker is missing, and a
//! constant that panics on `false` turns that into a compile error whose
//! text rustc prints as it is.

/// What the hook appends to each root file of volo-build's output: the
/// marker type [`__private`]'s fallback is named after, with
/// `REWRITTEN = true`. Private, so markers of two modules never meet.
pub(super) const MARKER: &str = "
// Added by grpc_stream_codec::volo::build: this output was rewritten onto
// the adapter after volo-build wrote it. Checked by
// grpc_stream_codec::volo::include_service!.
#[doc(hidden)]
#[allow(dead_code, non_camel_case_types)]
struct __grpc_stream_codec_volo_rewritten;
#[allow(dead_code)]
impl __grpc_stream_codec_volo_rewritten {
    const REWRITTEN: bool = true;
}
";

/// Support for [`include_service!`](crate::volo::include_service); not an
/// API.
#[doc(hidden)]
pub mod __private {
    /// The fallback the macro's glob import brings in; the hook's marker
    /// in the included file shadows it.
    #[allow(non_camel_case_types)]
    pub struct __grpc_stream_codec_volo_rewritten;

    impl __grpc_stream_codec_volo_rewritten {
        /// `false`: the included file has no marker.
        pub const REWRITTEN: bool = false;
    }
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
/// it, both fail to compile with:
///
/// ```text
/// error[E0080]: evaluation panicked: grpc-stream-codec: `volo_gen.rs` in OUT_DIR is volo-build's
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
        include!(concat!(env!("OUT_DIR"), "/", $file));

        #[allow(unused_imports)]
        use $crate::volo::__private::*;

        const _: () = if !__grpc_stream_codec_volo_rewritten::REWRITTEN {
            panic!(concat!(
                "grpc-stream-codec: `",
                $file,
                "` in OUT_DIR is volo-build's stock output: ",
                "grpc_stream_codec::volo::build::rewrite_out_dir() did not run after volo-build wrote it. ",
                "In build.rs, call it after volo-build's `.write()`, not before (the previous run's file ",
                "is still there then, and volo-build overwrites it), and return its error: ",
                "`grpc_stream_codec::volo::build::rewrite_out_dir()?;`",
            ));
        };
    };
}
