//! [`include_proto!`](crate::tonic::include_proto): includes
//! tonic-prost-build's output and fails the build, naming the fix, when the
//! [build hook](super::build) did not rewrite it.
//!
//! How the check works: the hook appends to each file it rewrites an import
//! of the module [`__private::rewritten`] under a fixed name. The macro
//! glob-imports [`__private::stock`] under the same name; an import written
//! in the module shadows a glob import, so the fallback is only seen when
//! the marker is missing. The macro then invokes `check!` through that name:
//! `rewritten::check!` expands to nothing, `stock::check!` to a
//! `compile_error!` naming the fix. Both are resolved while macros expand,
//! before rustc checks any type, so the message is the build's first error
//! even when handlers written for full framing no longer match the stock
//! service traits.
//!
//! The check runs at macro expansion on purpose: a `const` assertion is
//! evaluated after type checking, so rustc would first print its own
//! mismatched-signature errors (E0053), whose hints point at stock tonic.

/// What the hook appends to each file of tonic-prost-build's output: the
/// import [`include_proto!`](crate::tonic::include_proto) checks for.
#[cfg(feature = "tonic-build-hook")]
pub(super) const MARKER: &str = "
// Added by grpc_stream_codec::tonic::build: this output was rewritten onto
// grpc-stream-codec's full framing after tonic-prost-build wrote it.
// Checked by grpc_stream_codec::tonic::include_proto!.
#[doc(hidden)]
#[allow(unused_imports)]
use ::grpc_stream_codec::tonic::__private::rewritten as __grpc_stream_codec_tonic_check;
";

/// Support for [`include_proto!`](crate::tonic::include_proto); not an API.
#[doc(hidden)]
pub mod __private {
    /// What the hook's marker imports: the check passes.
    pub mod rewritten {
        pub use crate::__tonic_include_rewritten as check;
    }

    /// The fallback: the check fails, naming the fix.
    pub mod stock {
        pub use crate::__tonic_include_stock as check;
    }

    /// Glob-imported by the macro; the marker's import shadows it.
    pub mod fallback {
        pub use super::stock as __grpc_stream_codec_tonic_check;
    }
}

/// The check of a file the hook rewrote: nothing to say.
#[macro_export]
#[doc(hidden)]
macro_rules! __tonic_include_rewritten {
    ($($any:tt)*) => {};
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
        #[allow(unused_imports)]
        use $crate::tonic::__private::fallback::*;

        include!(concat!(env!("OUT_DIR"), "/", $package, ".rs"));

        // In a block, so that the invocation cannot define the name it is
        // resolved through (rustc refuses to decide that case).
        const _: () = {
            self::__grpc_stream_codec_tonic_check::check!($package);
        };
    };
}
