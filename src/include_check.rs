//! What both adapters' include macros share (`tonic::include_proto!`,
//! `tonic::include_file!`, `volo::include_service!`, `volo::include_file!`),
//! and what the mark their build hooks append to a rewritten file expands
//! to. Two checks, each failing the build with the fix as its first error:
//!
//! - an include macro's file must carry the mark: a file the hook did not
//!   rewrite after the generator wrote it has none;
//! - a file with the mark must be included by an include macro (or by a
//!   generated file the hook marked, prost's include file): included
//!   with `include!`, the framework's macro or a `mod` item, nothing would
//!   notice the day the hook stops running, so the mark names the macro
//!   and the line to write instead.
//!
//! How: each check is a macro path, `self::<name>::check!`, whose first
//! segment resolves to one of two modules of this crate
//! ([`checks`]): one whose `check!` expands to nothing, one whose `check!`
//! is a `compile_error!`. The failing one is glob-imported, the passing
//! one imported by name, which shadows a glob import in the same module.
//! For the first check the include macro glob-imports `stock` (fails) and
//! the mark imports `rewritten` (passes) by name; for the second the mark
//! glob-imports `unincluded` (fails, naming the macro) and the include
//! macro, or the including generated file, imports `included` (passes) by
//! name. Glob imports of one module may repeat, an import by name may
//! not; each lives in a private module named after the file.
//!
//! The names are made from the file's name (by `grpc-stream-codec-macros`,
//! as `macro_rules!` cannot make a name) on both sides: the include macro
//! sees its argument, the mark its own, and the file name is what those
//! have in common. Any number of files can then share a module, each
//! checked on its own. The mark resolves by a path into this crate
//! (`::grpc_stream_codec::codegen::include_mark!`), which every crate including
//! rewritten code depends on, so it always resolves: a mark resolved by
//! name in the including scope would fail with rustc's "cannot find macro"
//! instead, which names no fix.
//!
//! Everything is resolved while macros expand, before rustc checks any type,
//! so the message is the build's first error, ahead of the
//! mismatched-signature errors (E0053) that handlers written for the
//! adapter get against stock code (a `const` assertion is evaluated after
//! type checking, so it would come after those). A textual `macro_rules!`
//! would not do for the second check: one defined by an include macro is
//! visible in the modules nested in the including one, where a file's
//! glob-imported fallback makes rustc refuse the name as ambiguous.

/// The check that passes: a file the hook rewrote, or a marked file
/// included as it must be.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_pass {
    ($($any:tt)*) => {};
}

/// The body of an adapter's include macro: each file checked, under the
/// names `grpc-stream-codec-macros` makes for it. `$at` is `out_dir` (the
/// path is under `OUT_DIR`, `$suffix` appended) or `path` (the path is
/// `include!`'s).
#[macro_export]
#[doc(hidden)]
macro_rules! __include_checked {
    ($adapter:ident, $at:ident, $suffix:literal, [$($file:literal),+]) => {
        $crate::codegen::macros::file_names!(
            $crate::__include_checked_file, $suffix, [$($file),+], $adapter, $at, $suffix
        );
    };
}

/// One file of an include macro.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_checked_file {
    (
        $adapter:ident, $at:ident, $suffix:literal, $file:literal,
        $included:ident, $unincluded:ident, $stock:ident, $slot:ident
    ) => {
        #[doc(hidden)]
        mod $stock {
            pub(super) use $crate::codegen::include::stock as $slot;
        }
        #[allow(unused_imports)]
        use self::$stock::*;
        // Tells the file's mark that it is included through this macro.
        #[doc(hidden)]
        #[allow(unused_imports)]
        use $crate::codegen::include::included as $included;

        $crate::__include_file!($at, $file, $suffix);

        // In a block, so that the invocation cannot define the name it is
        // resolved through (rustc refuses to decide that case).
        const _: () = {
    self::$slot::check!($adapter $at $file $suffix);
        };
    };
}

/// The mark a build hook appends to a file it rewrote, naming the include
/// macro's call for it: `__include_mark!(tonic include_proto!("a.v1"))`,
/// `__include_mark!(volo include_file!("gen/volo_gen.rs") from "src/")`
/// (the path as seen from `from`).
#[macro_export]
#[doc(hidden)]
macro_rules! __include_mark {
    (tonic include_proto!($file:literal)) => {
        $crate::__include_mark!(@names tonic out_dir ".rs" "" $file);
    };
    (tonic include_file!($file:literal) from $base:literal) => {
        $crate::__include_mark!(@names tonic path "" $base $file);
    };
    (volo include_service!($file:literal)) => {
        $crate::__include_mark!(@names volo out_dir "" "" $file);
    };
    (volo include_file!($file:literal) from $base:literal) => {
        $crate::__include_mark!(@names volo path "" $base $file);
    };
    (@names $adapter:ident $at:ident $suffix:literal $base:literal $file:literal) => {
        $crate::codegen::macros::file_names!(
            $crate::__include_mark_file, $suffix, [$file], $adapter, $at, $suffix, $base
        );
    };
}

/// The mark of one file: the name that tells the include macro the file
/// was rewritten, and the check that the file is included by one.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_mark_file {
    (
        $adapter:ident, $at:ident, $suffix:literal, $base:literal, $file:literal,
        $included:ident, $unincluded:ident, $stock:ident, $slot:ident
    ) => {
        #[doc(hidden)]
        mod $unincluded {
            pub(super) use $crate::codegen::include::unincluded as $included;
        }
        #[allow(unused_imports)]
        use self::$unincluded::*;
        #[doc(hidden)]
        #[allow(unused_imports)]
        use $crate::codegen::include::rewritten as $slot;

        const _: () = {
    self::$included::check!($adapter $at $file $suffix $base);
        };
    };
}

/// What a build hook puts before a generated file's `include!` of another
/// file it marked (prost's include file): that file is included as it
/// must be.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_nested {
    ($file:literal) => {
        $crate::codegen::macros::file_names!($crate::__include_nested_file, "", [$file]);
    };
}

/// [`__include_nested!`] of one file.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_nested_file {
    ($file:literal, $included:ident, $unincluded:ident, $stock:ident, $slot:ident) => {
        #[doc(hidden)]
        #[allow(unused_imports)]
        use $crate::codegen::include::included as $included;
    };
}

/// The check of an include macro's file without the hook's mark: a
/// `compile_error!` naming the fix in the adapter's words (`$at` as in
/// [`__include_checked!`]).
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
            why: "",
            kept: ". A generated file whose services run another codec than this crate's keeps \
                   tonic's framing and has no mark (the hook's cargo warning names it): include \
                   it with `include!` or `tonic::include_proto!`"
        );
    };
    (volo $at:ident $file:literal $suffix:literal) => {
        $crate::__include_stock!(
            $at $file $suffix,
            adapter: "volo",
            generator: "volo-build",
            writer: "volo-build",
            after: "volo-build's `.write()`",
            why: " (the previous run's file is still there then, and volo-build overwrites it)",
            kept: ""
        );
    };
    (
        $at:ident $file:literal $suffix:literal,
        adapter: $adapter:literal,
        generator: $generator:literal,
        writer: $writer:literal,
        after: $after:literal,
        why: $why:literal,
        kept: $kept:literal
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
            $kept,
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

/// The check of a marked file included without an include macro: a
/// `compile_error!` whose first words are the line to write instead.
/// `$file` is the include macro's argument, `$base` the directory a `path`
/// is seen from.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_unincluded {
    (tonic out_dir $file:literal $suffix:literal $base:literal) => {
        $crate::__include_unincluded!(
            @out_dir "tonic", "include_proto", $file, $suffix,
            "`include!` or `tonic::include_proto!`", "tonic-prost-build"
        );
    };
    (volo out_dir $file:literal $suffix:literal $base:literal) => {
        $crate::__include_unincluded!(
            @out_dir "volo", "include_service", $file, $suffix,
            "`include!` or `volo::include_service!`", "volo-build"
        );
    };
    (tonic path $file:literal $suffix:literal $base:literal) => {
        $crate::__include_unincluded!(@path "tonic", $file, $base, "tonic-prost-build");
    };
    (volo path $file:literal $suffix:literal $base:literal) => {
        $crate::__include_unincluded!(@path "volo", $file, $base, "volo-build");
    };
    (
        @out_dir $adapter:literal, $macro:literal, $file:literal, $suffix:literal,
        $instead:literal, $generator:literal
    ) => {
        compile_error!(concat!(
            "grpc-stream-codec: write `grpc_stream_codec::", $adapter, "::", $macro, "!(\"",
            $file, "\");` to include `", $file, $suffix, "` of OUT_DIR, in place of ",
            $instead, ": grpc_stream_codec::", $adapter, "::build rewrote that file, and only ",
            "its include macros check that the hook ran after ", $generator, " wrote it",
        ));
    };
    (@path $adapter:literal, $file:literal, $base:literal, $generator:literal) => {
        compile_error!(concat!(
            "grpc-stream-codec: write `grpc_stream_codec::", $adapter, "::include_file!(\"",
            $file, "\");` to include this file (the path as seen from ", $base, "; from the ",
            "file that includes it, as `include!` takes it), in place of `include!`, or of a ",
            "`mod` item as `mod name { grpc_stream_codec::", $adapter, "::include_file!(\"",
            $file, "\"); }`: grpc_stream_codec::", $adapter, "::build rewrote this file, and ",
            "only its include macros check that the hook ran after ", $generator, " wrote it",
        ));
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

/// The modules a check's first segment resolves to, each with a `check!`.
pub mod checks {
    /// What a file's mark imports for the include macro: the file was
    /// rewritten.
    pub mod rewritten {
        pub use crate::__include_pass as check;
    }

    /// The include macro's fallback: the file has no mark.
    pub mod stock {
        pub use crate::__include_stock as check;
    }

    /// What an include macro (or a generated file including another)
    /// imports for the file's mark: the file is included as it must be.
    pub mod included {
        pub use crate::__include_pass as check;
    }

    /// The mark's fallback: the file is included some other way.
    pub mod unincluded {
        pub use crate::__include_unincluded as check;
    }
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
/// The argument is the file's path under `OUT_DIR` without `.rs`: the
/// package name, or `"dir/my.package"` after the builder's
/// `out_dir(OUT_DIR/dir)`. Files that go into one module are named in one
/// call, `include_proto!("a.v1", "b.v1")`, or in a call each, and need
/// different file names; each is checked on its own.
///
/// A file the hook did not rewrite after tonic-prost-build wrote it (the
/// hook left out of `build.rs`, or called before the generator) fails to
/// compile, the first error naming the fix:
///
/// ```text
/// error: grpc-stream-codec: `my.package.rs` in OUT_DIR is tonic-prost-build's stock output:
/// grpc_stream_codec::tonic::build::rewrite_out_dir() did not run after tonic_prost_build wrote it. ...
/// ```
///
/// The other way round, a rewritten file builds only through this macro or
/// [`include_file!`](crate::tonic::include_file): with `include!`,
/// `tonic::include_proto!` or a `mod` item the first error is the line to
/// write instead. A file the hook left on tonic's framing (another codec
/// than this crate's) has no mark and is included with `include!` or
/// `tonic::include_proto!`. [`build`](crate::tonic::build) has the whole
/// story.
#[cfg(feature = "tonic-build-hook")]
#[macro_export]
#[doc(hidden)]
macro_rules! __tonic_include_proto {
    ($($package:literal),+ $(,)?) => {
        $crate::__include_checked!(tonic, out_dir, ".rs", [$($package),+]);
    };
}

/// [`include_proto!`](crate::tonic::include_proto) for generated code
/// outside `OUT_DIR` (the builder's `out_dir("src/pb")`, code committed to
/// the repository): takes each file's path as `include!` does, relative to
/// the file the macro is called in, and checks it the same way.
///
/// ```ignore
/// // build.rs: tonic_prost_build with .out_dir("src/pb"), then
/// // grpc_stream_codec::tonic::build::rewrite_dir("src/pb")?
/// pub mod pb {
///     grpc_stream_codec::tonic::include_file!("pb/my.package.rs");
/// }
/// ```
#[cfg(feature = "tonic-build-hook")]
#[macro_export]
#[doc(hidden)]
macro_rules! __tonic_include_file {
    ($($file:literal),+ $(,)?) => {
        $crate::__include_checked!(tonic, path, "", [$($file),+]);
    };
}

/// Includes a root file volo-build wrote to `OUT_DIR`, like
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
/// The path is relative to `OUT_DIR` (`"adapter/volo_gen.rs"` for a
/// volo-build `out_dir` below it). Roots that go into one module (a
/// `volo.yml` with two entries) are named in one call,
/// `include_service!("a.rs", "b.rs")`, or in a call each, and need
/// different file names; each is checked on its own.
///
/// A hook called *before* volo-build "succeeds" on the previous run's
/// file, which volo-build then overwrites with stock code; a hook not
/// called at all would go unnoticed the same way. Either fails to compile,
/// the first error naming the fix:
///
/// ```text
/// error: grpc-stream-codec: `volo_gen.rs` in OUT_DIR is volo-build's stock output:
/// grpc_stream_codec::volo::build::rewrite_out_dir() did not run after volo-build wrote it. ...
/// ```
///
/// The other way round, a rewritten root builds only through this macro or
/// [`include_file!`](crate::volo::include_file): with `include!`,
/// `volo::include_service!` or a `mod` item the first error is the line to
/// write instead. [`build`](crate::volo::build) has the whole story.
#[cfg(feature = "volo-build-hook")]
#[macro_export]
#[doc(hidden)]
macro_rules! __volo_include_service {
    ($($file:literal),+ $(,)?) => {
        $crate::__include_checked!(volo, out_dir, "", [$($file),+]);
    };
}

/// [`include_service!`](crate::volo::include_service) for generated code
/// outside `OUT_DIR` (code committed to the repository): takes each root's
/// path as `include!` does, relative to the file the macro is called in,
/// and checks it the same way.
///
/// ```ignore
/// // build.rs: volo-build with out_dir "src/gen", then
/// // grpc_stream_codec::volo::build::rewrite_dir("src/gen")?
/// mod generated {
///     grpc_stream_codec::volo::include_file!("gen/volo_gen.rs");
/// }
/// ```
#[cfg(feature = "volo-build-hook")]
#[macro_export]
#[doc(hidden)]
macro_rules! __volo_include_file {
    ($($file:literal),+ $(,)?) => {
        $crate::__include_checked!(volo, path, "", [$($file),+]);
    };
}
