//! What both adapters' include macros share (`tonic::include_proto!`,
//! `tonic::include_file!`, `volo::include_service!`, `volo::include_file!`):
//! including generated code fails the build, naming the fix, when the
//! adapter's build hook did not rewrite it.
//!
//! How the check works: the hook appends to each file it rewrites (for volo,
//! the root of each generated tree) a call of the adapter's *mark* macro,
//! by its bare name. The include macro defines that name (a `macro_rules!`,
//! so a later definition shadows an earlier one without a clash) right
//! before it includes the file, to import the adapter's
//! `__private::rewritten` under the file's *slot*: the n-th file of one
//! macro call gets the n-th of a fixed list of names. The macro also
//! glob-imports `__private::fallback`, which holds every slot name as
//! `__private::stock`; an import written in the module shadows a glob
//! import, so the fallback is only seen when the file's mark is missing.
//! The macro then invokes `check!` through the slot: `rewritten::check!`
//! expands to nothing, `stock::check!` to a `compile_error!` naming the fix.
//! All of it is resolved while macros expand, before rustc checks any type,
//! so the message is the build's first error, ahead of the
//! mismatched-signature errors (E0053) that handlers written for the adapter
//! get against stock code (a `const` assertion is evaluated after type
//! checking, so it would come after those).
//!
//! Slots are per macro call, so several files included into one module are
//! named in one call (`include_service!("a.rs", "b.rs")`); two calls in one
//! module give both files the first slot: when both are rewritten, rustc's
//! first error (E0252) names that slot, whose name says what to write
//! instead, and when only one is, the other's check sees its slot filled
//! and passes (a macro call cannot tell which file filled a name in its
//! module, so only one call per module checks every file).
//!
//! The mark is a macro call rather than an item so that a file carries no
//! name of its own: a name in each file would be defined twice in a module
//! that includes two of them.

/// The check of a file the hook rewrote: nothing to say.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_rewritten {
    ($($any:tt)*) => {};
}

/// The body of an adapter's include macro: the fallback glob import, then
/// each file with its slot. `$at` is `out_dir` (the path is under
/// `OUT_DIR`, `$suffix` appended) or `path` (the path is `include!`'s).
#[macro_export]
#[doc(hidden)]
macro_rules! __include_checked {
    ($adapter:ident, $mark:ident, $at:ident, $suffix:literal, [$($file:literal),+]) => {
        #[allow(unused_imports)]
        use $crate::$adapter::__private::fallback::*;

        $crate::__include_each!(
            $adapter, $mark, $at, $suffix, [$($file)+],
            [
                grpc_stream_codec__one_include_call_per_module__list_all_its_files_in_it
                __grpc_stream_codec_file_2 __grpc_stream_codec_file_3
                __grpc_stream_codec_file_4 __grpc_stream_codec_file_5
                __grpc_stream_codec_file_6 __grpc_stream_codec_file_7
                __grpc_stream_codec_file_8 __grpc_stream_codec_file_9
                __grpc_stream_codec_file_10 __grpc_stream_codec_file_11
                __grpc_stream_codec_file_12 __grpc_stream_codec_file_13
                __grpc_stream_codec_file_14 __grpc_stream_codec_file_15
                __grpc_stream_codec_file_16
            ]
        );
    };
}

/// One file after another, each with the next slot.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_each {
    ($adapter:ident, $mark:ident, $at:ident, $suffix:literal, [], [$($slots:ident)*]) => {};
    ($adapter:ident, $mark:ident, $at:ident, $suffix:literal, [$file:literal $($rest:literal)*], []) => {
        compile_error!(
            "grpc-stream-codec: at most 16 files in one include macro call; \
             include the others in a module of their own"
        );
    };
    (
        $adapter:ident, $mark:ident, $at:ident, $suffix:literal,
        [$file:literal $($rest:literal)*], [$slot:ident $($slots:ident)*]
    ) => {
        // What the file's mark, at its end, expands to.
        #[allow(unused_macros)]
        macro_rules! $mark {
            () => {
                #[doc(hidden)]
                #[allow(unused_imports)]
                use $crate::$adapter::__private::rewritten as $slot;
            };
        }

        $crate::__include_file!($at, $file, $suffix);

        // In a block, so that the invocation cannot define the name it is
        // resolved through (rustc refuses to decide that case).
        const _: () = {
            self::$slot::check!($at $file);
        };

        $crate::__include_each!($adapter, $mark, $at, $suffix, [$($rest)*], [$($slots)*]);
    };
}

/// `include!` of a file under `OUT_DIR` or at a path.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_file {
    (out_dir, $file:literal, $suffix:literal) => {
        include!(concat!(env!("OUT_DIR"), "/", $file, $suffix));
    };
    (path, $file:literal, $suffix:literal) => {
        include!($file);
    };
}

/// An adapter's half of the check: `MARKER`, what its hook appends (the
/// `comment`, then the call of `mark`), and the `__private` module the
/// include macro names, whose `stock::check!` is the adapter's `stock`
/// macro.
macro_rules! include_check {
    (comment: $comment:literal, mark: $mark:ident, stock: $stock:ident) => {
        /// What the hook appends to each file it rewrites: the mark the
        /// include macro checks for.
        pub(super) const MARKER: &str = concat!("\n", $comment, stringify!($mark), "!();\n");

        /// Support for the adapter's include macros; not an API.
        #[doc(hidden)]
        pub mod __private {
            /// What a file's mark imports: the check passes.
            pub mod rewritten {
                pub use crate::__include_rewritten as check;
            }

            /// The fallback: the check fails, naming the fix.
            pub mod stock {
                pub use crate::$stock as check;
            }

            /// Glob-imported by the macro; a file's mark shadows its slot.
            pub mod fallback {
                pub use super::stock as grpc_stream_codec__one_include_call_per_module__list_all_its_files_in_it;
                pub use super::stock as __grpc_stream_codec_file_2;
                pub use super::stock as __grpc_stream_codec_file_3;
                pub use super::stock as __grpc_stream_codec_file_4;
                pub use super::stock as __grpc_stream_codec_file_5;
                pub use super::stock as __grpc_stream_codec_file_6;
                pub use super::stock as __grpc_stream_codec_file_7;
                pub use super::stock as __grpc_stream_codec_file_8;
                pub use super::stock as __grpc_stream_codec_file_9;
                pub use super::stock as __grpc_stream_codec_file_10;
                pub use super::stock as __grpc_stream_codec_file_11;
                pub use super::stock as __grpc_stream_codec_file_12;
                pub use super::stock as __grpc_stream_codec_file_13;
                pub use super::stock as __grpc_stream_codec_file_14;
                pub use super::stock as __grpc_stream_codec_file_15;
                pub use super::stock as __grpc_stream_codec_file_16;
            }
        }
    };
}
