//! What both adapters' include macros share (`tonic::include_proto!`,
//! `volo::include_service!`): including the generated code fails the build,
//! naming the fix, when the adapter's build hook did not rewrite it.
//!
//! How the check works: the hook appends to each file it rewrites (for volo,
//! the root of each generated tree) an import of the adapter's
//! `__private::rewritten` under a fixed name. The macro glob-imports
//! `__private::stock` under the same name; an import written in the module
//! shadows a glob import, so the fallback is only seen when the marker is
//! missing. The macro then invokes `check!` through that name:
//! `rewritten::check!` expands to nothing, `stock::check!` to a
//! `compile_error!` naming the fix. Both are resolved while macros expand,
//! before rustc checks any type, so the message is the build's first error,
//! ahead of the mismatched-signature errors (E0053) that handlers written for
//! the adapter get against stock code (a `const` assertion is evaluated after
//! type checking, so it would come after those).

/// The check of a file the hook rewrote: nothing to say.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_rewritten {
    ($($any:tt)*) => {};
}

/// The body of an adapter's include macro: the fallback glob import, the
/// file (`OUT_DIR/{file}{suffix}`), and the check through `name`.
#[macro_export]
#[doc(hidden)]
macro_rules! __include_checked {
    ($adapter:ident, $name:ident, $file:literal, $suffix:literal) => {
        #[allow(unused_imports)]
        use $crate::$adapter::__private::fallback::*;

        include!(concat!(env!("OUT_DIR"), "/", $file, $suffix));

        // In a block, so that the invocation cannot define the name it is
        // resolved through (rustc refuses to decide that case).
        const _: () = {
            self::$name::check!($file);
        };
    };
}

/// An adapter's half of the check: `MARKER`, what its hook appends (the
/// `comment`, then the import of `adapter::__private::rewritten` as
/// `name`), and the `__private` module the marker and the include macro
/// name, whose `stock::check!` is the adapter's `stock` macro.
macro_rules! include_check {
    (adapter: $adapter:literal, comment: $comment:literal, name: $name:ident, stock: $stock:ident) => {
        /// What the hook appends to each file it rewrites: the import the
        /// include macro checks for.
        pub(super) const MARKER: &str = concat!(
            "\n",
            $comment,
            "#[doc(hidden)]\n#[allow(unused_imports)]\nuse ::grpc_stream_codec::",
            $adapter,
            "::__private::rewritten as ",
            stringify!($name),
            ";\n",
        );

        /// Support for the adapter's include macro; not an API.
        #[doc(hidden)]
        pub mod __private {
            /// What the hook's marker imports: the check passes.
            pub mod rewritten {
                pub use crate::__include_rewritten as check;
            }

            /// The fallback: the check fails, naming the fix.
            pub mod stock {
                pub use crate::$stock as check;
            }

            /// Glob-imported by the macro; the marker's import shadows it.
            pub mod fallback {
                pub use super::stock as $name;
            }
        }
    };
}
