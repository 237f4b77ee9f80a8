//! What both build hooks (`tonic::build`, `volo::build`) return on failure: one error type,
//! which says what the hook found in this build and names the function the
//! build script called, with the adapter's generator in the text. Plain
//! `std`, like the hooks.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Which adapter's hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adapter {
    /// `grpc_stream_codec::tonic::build`, after tonic-prost-build.
    Tonic,
    /// `grpc_stream_codec::volo::build`, after volo-build.
    Volo,
}

/// The hook function a build script called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `rewrite_out_dir()`.
    RewriteOutDir,
    /// `rewrite_dir(dir)`.
    RewriteDir,
}

/// Which hook a build script called, and how: what an error names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookCall {
    /// The adapter.
    pub adapter: Adapter,
    /// The function.
    pub entry: Entry,
}

impl HookCall {
    /// The call as a build script writes it, by its full path.
    fn function(self) -> String {
        let call = match self.entry {
            Entry::RewriteOutDir => "rewrite_out_dir()",
            Entry::RewriteDir => "rewrite_dir(dir)",
        };
        format!(
            "grpc_stream_codec::{}::build::{call}",
            self.adapter.words().module
        )
    }
}

/// What an error says of an adapter's hook.
struct AdapterWords {
    /// The adapter's module under `grpc_stream_codec`.
    module: &'static str,
    /// The generator's call the hook runs after.
    generate_call: &'static str,
    /// What the hook looks for, in words.
    generated_code: &'static str,
    /// The generator, with the version the hook knows.
    generator: &'static str,
}

impl Adapter {
    fn words(self) -> &'static AdapterWords {
        const TONIC: AdapterWords = AdapterWords {
            module: "tonic",
            generate_call: "tonic_prost_build's compile call (compile_protos or compile_fds)",
            generated_code: "tonic-prost-build server or client",
            generator: "tonic-prost-build 0.14",
        };
        const VOLO: AdapterWords = AdapterWords {
            module: "volo",
            generate_call: "volo-build's `.write()`",
            generated_code: "volo-grpc SendEntryMessage/RecvEntryMessage impl",
            generator: "volo-build 0.12",
        };
        match self {
            Adapter::Tonic => &TONIC,
            Adapter::Volo => &VOLO,
        }
    }
}

/// Why a rewrite failed.
///
/// Its `Debug` form is its `Display` text, so a `build.rs` whose `main`
/// returns `Result<(), Box<dyn Error>>` prints what to do, not the variant.
pub enum RewriteError {
    /// `OUT_DIR` is not set: `rewrite_out_dir` was called outside a build script.
    NoOutDir {
        /// The call.
        call: HookCall,
    },
    /// Reading or writing a file failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// No file under the directory holds generated service code, written in
    /// this build or in an earlier one.
    NothingGenerated {
        /// The directory searched.
        dir: PathBuf,
        /// The call.
        call: HookCall,
    },
    /// Every generated file under the directory was rewritten by an earlier
    /// build and not written since: nothing was generated in this build
    /// before the hook ran (it runs before the generator, or generation did
    /// not run in this build). tonic only: volo-build writes its files anew
    /// on every run, and the include check catches the order.
    AlreadyRewritten {
        /// The directory searched.
        dir: PathBuf,
        /// The call.
        call: HookCall,
    },
    /// A generated file is not what the rewrite expects.
    Source {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        error: SourceError,
    },
}

/// Why one generated file's text cannot be rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceError {
    /// Generated service code without a path such code contains: the
    /// generator's output changed.
    MissingPattern {
        /// Whose generator.
        adapter: Adapter,
        /// The stock path that was expected (or its rewritten form), e.g.
        /// `tonic::server::Grpc`.
        expected: &'static str,
    },
}

impl SourceError {
    /// The error of `adapter`'s output that lacks the path `expected`.
    pub(crate) fn missing<T>(adapter: Adapter, expected: &'static str) -> Result<T, SourceError> {
        Err(SourceError::MissingPattern { adapter, expected })
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::MissingPattern { adapter, expected } => write!(
                f,
                "holds {} code but no `{expected}`; its output is not what \
                 grpc-stream-codec {} expects (written for {}): check that the two \
                 versions match",
                adapter.words().generated_code,
                env!("CARGO_PKG_VERSION"),
                adapter.words().generator,
            ),
        }
    }
}

impl std::error::Error for SourceError {}

impl fmt::Display for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewriteError::NoOutDir { call } => write!(
                f,
                "OUT_DIR is not set: {} runs in build.rs, after {}; for output the \
                 builder wrote elsewhere, call rewrite_dir(dir) with that directory",
                call.function(),
                call.adapter.words().generate_call,
            ),
            RewriteError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            RewriteError::NothingGenerated { dir, call } => write!(
                f,
                "no {} found under {}: nothing was generated there, in this build or \
                 an earlier one. In build.rs, call {} after {}, on the directory it \
                 wrote to, and in the same branch as the generator when that is behind \
                 a cfg or a cargo feature{}",
                call.adapter.words().generated_code,
                dir.display(),
                call.function(),
                call.adapter.words().generate_call,
                match call.adapter {
                    Adapter::Tonic => ", with build_server or build_client enabled",
                    Adapter::Volo => "",
                },
            ),
            RewriteError::AlreadyRewritten { dir, call } => write!(
                f,
                "the generated files under {} were rewritten by an earlier build and \
                 nothing was generated in this build before this call: the rewrite ran \
                 before the generator, or the generator did not run. In build.rs, call \
                 {} after {}, not before, and in the same branch as the generator when \
                 that is behind a cfg or a cargo feature",
                dir.display(),
                call.function(),
                call.adapter.words().generate_call,
            ),
            RewriteError::Source { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl fmt::Debug for RewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for RewriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RewriteError::Io { source, .. } => Some(source),
            RewriteError::Source { error, .. } => Some(error),
            _ => None,
        }
    }
}
