//! What both adapters' include macros share (`tonic::include_proto!`,
//! `tonic::include_file!`, `volo::include_service!`, `volo::include_file!`):
//! including generated code fails the build, naming the fix, when the
//! adapter's build hook did not rewrite it.
//!
//! How the check works: the hook appends to each file it rewrites (for volo,
//! the root of each generated tree) a call of the adapter's *mark* macro,
//! by its bare name. For each file, the include macro defines that name (a
//! `macro_rules!`, so a later definition shadows an earlier one without a
//! clash) right before it includes the file, to import the adapter's
//! `__include_private::rewritten` under the file's *slot*. It also defines a
//! private module, the file's *fallback*, that holds the slot's name as
//! `__include_private::stock`, and glob-imports it: an import written in the module
//! shadows a glob import, so the fallback is only seen when the file's mark
//! is missing. The macro then invokes `check!` through the slot:
//! `rewritten::check!` expands to nothing, `stock::check!` to a
//! `compile_error!` naming the fix. All of it is resolved while macros
//! expand, before rustc checks any type, so the message is the build's
//! first error, ahead of the mismatched-signature errors (E0053) that
//! handlers written for the adapter get against stock code (a `const`
//! assertion is evaluated after type checking, so it would come after
//! those).
//!
//! The slot and the fallback are named after the file's literal (by
//! `grpc-stream-codec-macros`, as `macro_rules!` cannot make a name), so any
//! number of include calls can share a module, each checking its own files.
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

/// The body of an adapter's include macro: each file checked, under the
/// names `grpc-stream-codec-macros` makes for it. `$at` is `out_dir` (the
/// path is under `OUT_DIR`, `$suffix` appended) or `path` (the path is
/// `include!`'s).
#[macro_export]
#[doc(hidden)]
macro_rules! __include_checked {
    ($adapter:ident, $mark:ident, $at:ident, $suffix:literal, [$($file:literal),+]) => {
        $crate::__macros::include_checked!($crate, $adapter, $mark, $at, $suffix, [$($file),+]);
    };
}

/// One file, with its slot and its fallback module.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_checked_file {
    (
        $adapter:ident, $mark:ident, $at:ident, $suffix:literal, $file:literal,
        $slot:ident, $fallback:ident
    ) => {
        // What the file's mark, at its end, expands to.
        #[allow(unused_macros)]
        macro_rules! $mark {
            () => {
                #[doc(hidden)]
                #[allow(unused_imports)]
                use $crate::__include_private::rewritten as $slot;
            };
        }

        #[doc(hidden)]
        mod $fallback {
            pub(super) use $crate::__include_private::stock as $slot;
        }
        #[allow(unused_imports)]
        use self::$fallback::*;

        $crate::__include_file!($at, $file, $suffix);

        // In a block, so that the invocation cannot define the name it is
        // resolved through (rustc refuses to decide that case).
        const _: () = {
    self::$slot::check!($adapter $at $file $suffix);
        };
    };
}

/// The check of a file without the hook's mark: a `compile_error!` naming
/// the fix in the adapter's words (`$at` as in [`__include_checked!`]).
#[macro_export]
#[doc(hidden)]
macro_rules! __include_stock {
    (tonic $at:ident $file:literal $suffix:literal) => {
        $crate::__include_stock!(
            $at $file $suffix,
            adapter: "tonic",
            generator: "tonic-prost-build",
            writer: "tonic_prost_build",
            after: "tonic_prost_build's compile call (compile_protos or compile_fds)",
            why: ""
        );
    };
    (volo $at:ident $file:literal $suffix:literal) => {
        $crate::__include_stock!(
            $at $file $suffix,
            adapter: "volo",
            generator: "volo-build",
            writer: "volo-build",
            after: "volo-build's `.write()`",
            why: " (the previous run's file is still there then, and volo-build overwrites it)"
        );
    };
    (
        $at:ident $file:literal $suffix:literal,
        adapter: $adapter:literal,
        generator: $generator:literal,
        writer: $writer:literal,
        after: $after:literal,
        why: $why:literal
    ) => {
        compile_error!(concat!(
            "grpc-stream-codec: `",
            $file,
            $suffix,
            $crate::__include_stock!(@where $at),
            "is ",
            $generator,
            "'s stock output: grpc_stream_codec::",
            $adapter,
            "::build::",
            $crate::__include_stock!(@hook $at),
            " did not run after ",
            $writer,
            " wrote it. In build.rs, call it after ",
            $after,
            ", not before",
            $why,
            $crate::__include_stock!(@dir $at),
            ", and return its error: `grpc_stream_codec::",
            $adapter,
            "::build::",
            $crate::__include_stock!(@hook $at),
            "?;`",
            $crate::__include_stock!(@also $at),
        ));
    };
    (@where out_dir) => { "` in OUT_DIR " };
    (@where path) => { "` " };
    (@hook out_dir) => { "rewrite_out_dir()" };
    (@hook path) => { "rewrite_dir(dir)" };
    (@dir out_dir) => { "" };
    (@dir path) => { ", with the directory the generator wrote to" };
    (@also out_dir) => { " (after a builder's out_dir(dir): `rewrite_dir(dir)?`)" };
    (@also path) => { "" };
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
/// `comment`, then the call of `mark`).
macro_rules! include_check {
    (comment: $comment:literal, mark: $mark:ident) => {
        /// What the hook appends to each file it rewrites: the mark the
        /// include macro checks for.
        pub(super) const MARKER: &str = concat!("\n", $comment, stringify!($mark), "!();\n");
    };
}

/// Support for the include macros; not an API. The two ways a file's slot
/// resolves, each to a `check!` macro.
pub mod checks {
    /// What a file's mark imports: the check passes.
    pub mod rewritten {
        pub use crate::__include_rewritten as check;
    }

    /// The fallback: the check fails, naming the fix.
    pub mod stock {
        pub use crate::__include_stock as check;
    }
}
