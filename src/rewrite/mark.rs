//! The text a build hook adds to what it rewrote: the mark appended to a
//! file (a macro call naming the include macro's call for it), and the line
//! put before a generated file's `include!` of another marked file. What
//! they expand to: `src/include_check.rs`.

use std::path::{Component, Path, PathBuf};

use super::Adapter;
#[cfg(feature = "tonic-build-hook")]
use super::{code_paths, skip_non_code};

/// Where the files that include generated code are: what a mark names.
pub(crate) struct Places {
    /// `OUT_DIR`: a file under it is named by its path there.
    out_dir: Option<PathBuf>,
    /// The crate's `src/`, where `lib.rs` and `main.rs` are: a file
    /// elsewhere (committed code) is named by its path from there.
    src_dir: Option<PathBuf>,
}

impl Places {
    /// Those of the build script running: `OUT_DIR` and
    /// `CARGO_MANIFEST_DIR/src`.
    pub(crate) fn from_env() -> Places {
        Places {
            out_dir: std::env::var_os("OUT_DIR").map(PathBuf::from),
            src_dir: std::env::var_os("CARGO_MANIFEST_DIR")
                .map(|dir| PathBuf::from(dir).join("src")),
        }
    }
}

/// The first line of every mark's comment; what finds a mark again.
const MARK_START: &str = "\n// Added by grpc_stream_codec::";
/// How a mark's call starts: by path, or by the bare names a mark may
/// still carry in a file the hook wrote into earlier (found to be replaced).
const CALL_STARTS: &[&str] = &[
    "::grpc_stream_codec::codegen::include_mark!",
    "::grpc_stream_codec::__include_mark!",
    "__grpc_stream_codec_tonic_mark!",
    "__grpc_stream_codec_volo_mark!",
];

/// The mark of `file`, found under the hook's `dir`: a comment, then the
/// call naming how to include the file.
pub(crate) fn mark(adapter: Adapter, places: &Places, dir: &Path, file: &Path) -> String {
    let comment = match adapter {
        Adapter::Tonic => {
            "// Added by grpc_stream_codec::tonic::build: this output was rewritten onto\n\
             // grpc-stream-codec's full framing after tonic-prost-build wrote it. Include\n\
             // it with the grpc_stream_codec::tonic macro named below, which checks that.\n"
        }
        Adapter::Volo => {
            "// Added by grpc_stream_codec::volo::build: this output was rewritten onto\n\
             // the adapter after volo-build wrote it. Include it with the\n\
             // grpc_stream_codec::volo macro named below, which checks that.\n"
        }
    };
    let adapter_name = match adapter {
        Adapter::Tonic => "tonic",
        Adapter::Volo => "volo",
    };
    let under_out_dir = places
        .out_dir
        .as_deref()
        .and_then(|out_dir| relative_path(out_dir, file))
        .filter(|path| !path.starts_with("../"));
    let call = match (under_out_dir, adapter) {
        (Some(path), Adapter::Tonic) => {
            let package = path.strip_suffix(".rs").unwrap_or(&path);
            format!("include_proto!({package:?})")
        }
        (Some(path), Adapter::Volo) => format!("include_service!({path:?})"),
        (None, _) => {
            let (base, shown) = match &places.src_dir {
                Some(src) => (src.as_path(), "src/".to_string()),
                None => (dir, format!("{}/", dir.display())),
            };
            let path = relative_path(base, file).unwrap_or_else(|| slashed(file));
            format!("include_file!({path:?}) from {shown:?}")
        }
    };
    format!("\n{comment}::grpc_stream_codec::codegen::include_mark!({adapter_name} {call});\n")
}

/// `text` without the mark at its end, if it has one (of either adapter,
/// whatever file it names).
pub(crate) fn strip_mark(text: &str) -> Option<&str> {
    let at = text.rfind(MARK_START)?;
    let mut rest = text[at..].trim_start();
    while rest.starts_with("//") {
        rest = rest
            .split_once('\n')
            .map_or("", |(_, after)| after)
            .trim_start();
    }
    let call = rest.trim_end();
    let is_call = CALL_STARTS.iter().any(|start| call.starts_with(start))
        && call.ends_with(';')
        && call.matches(';').count() == 1;
    is_call.then_some(&text[..at])
}

/// What a hook puts before a generated file's `include!` of `file`, a file
/// it marked.
#[cfg(feature = "tonic-build-hook")]
pub(crate) fn nested_line(file: &Path) -> String {
    let name = file
        .file_name()
        .map_or_else(|| slashed(file), |name| name.to_string_lossy().into_owned());
    format!("::grpc_stream_codec::codegen::include_nested!({name:?});")
}

/// An `include!` in a generated file, as prost-build writes them in its
/// include file.
#[cfg(feature = "tonic-build-hook")]
pub(crate) struct IncludeCall {
    /// Where `include` starts.
    pub start: usize,
    /// The path in it: relative to the including file, or to `OUT_DIR`.
    pub path: String,
    /// Written `include!(concat!(env!("OUT_DIR"), "/path"))`.
    pub out_dir: bool,
}

#[cfg(feature = "tonic-build-hook")]
impl IncludeCall {
    /// The file it includes, `file` being the one it is in.
    pub(crate) fn target(&self, file: &Path, places: &Places) -> PathBuf {
        let here = file.parent().unwrap_or(Path::new(""));
        match (&places.out_dir, self.out_dir) {
            (Some(out_dir), true) => out_dir.join(&self.path),
            _ => here.join(&self.path),
        }
    }
}

/// Every `include!("path")` and `include!(concat!(env!("OUT_DIR"),
/// "/path"))` in the code of `text`.
#[cfg(feature = "tonic-build-hook")]
pub(crate) fn include_calls(text: &str) -> Vec<IncludeCall> {
    code_paths(text)
        .into_iter()
        .filter(|path| {
            !path.global && path.segments.len() == 1 && path.segment(text, 0) == Some("include")
        })
        .filter_map(|path| {
            let after = text[path.segments[0].1..].trim_start().strip_prefix('!')?;
            let arguments = after.trim_start().strip_prefix('(')?;
            let literals = string_literals(arguments)?;
            let out_dir =
                literals.first().is_some_and(|first| first == "OUT_DIR") && literals.len() == 2;
            let relative = match (literals.as_slice(), out_dir) {
                ([_, file], true) => file.trim_start_matches('/').to_string(),
                ([file], false) => file.clone(),
                _ => return None,
            };
            Some(IncludeCall {
                start: path.start,
                path: relative,
                out_dir,
            })
        })
        .collect()
}

/// The string literals up to the `)` that closes `arguments` (which start
/// right after a `(`), or `None` when it is not closed. Only the escapes
/// prost-build's paths need are read.
#[cfg(feature = "tonic-build-hook")]
fn string_literals(arguments: &str) -> Option<Vec<String>> {
    let bytes = arguments.as_bytes();
    let mut literals = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'"' {
            let end = skip_non_code(arguments, i)?;
            let body = arguments.get(i + 1..end.checked_sub(1)?)?;
            literals.push(body.replace("\\\\", "\\").replace("\\\"", "\""));
            i = end;
            continue;
        }
        if let Some(end) = skip_non_code(arguments, i) {
            i = end;
            continue;
        }
        match bytes[i] {
            b'(' => depth += 1,
            b')' if depth == 0 => return Some(literals),
            b')' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// `to` relative to the directory `from`, with `/` between components
/// (`../` up), or `None` when the two have no common root (two drives).
fn relative_path(from: &Path, to: &Path) -> Option<String> {
    let from = normalized(from);
    let to = normalized(to);
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return None;
    }
    let up = std::iter::repeat_n("..".to_string(), from.len() - common);
    let down = to[common..]
        .iter()
        .map(|part| part.as_os_str().to_string_lossy().into_owned());
    Some(up.chain(down).collect::<Vec<_>>().join("/"))
}

/// The path, canonical when it exists (so that a symlinked temporary
/// directory and its target compare equal), else absolute with `.` and
/// `..` resolved.
fn normalized(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            part => out.push(part),
        }
    }
    out
}

/// The path with `/` between its components.
fn slashed(path: &Path) -> String {
    path.components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(root: &Path) -> Places {
        Places {
            out_dir: Some(root.join("target/out")),
            src_dir: Some(root.join("crate/src")),
        }
    }

    #[test]
    fn a_mark_names_the_include_macro_call_for_where_the_file_is() {
        let root = Path::new("/nowhere");
        let places = places(root);
        let out = root.join("target/out");
        let tonic = mark(Adapter::Tonic, &places, &out, &out.join("sub/a.v1.rs"));
        assert!(
            tonic.ends_with(
                "\n::grpc_stream_codec::codegen::include_mark!(tonic include_proto!(\"sub/a.v1\"));\n"
            ),
            "{tonic}"
        );
        assert!(tonic.starts_with("\n// Added by grpc_stream_codec::tonic::build: "));
        let volo = mark(Adapter::Volo, &places, &out, &out.join("volo_gen.rs"));
        assert!(
            volo.ends_with("(volo include_service!(\"volo_gen.rs\"));\n"),
            "{volo}"
        );

        let committed = root.join("crate/src/gen");
        let volo = mark(
            Adapter::Volo,
            &places,
            &committed,
            &committed.join("volo_gen.rs"),
        );
        assert!(
            volo.ends_with("(volo include_file!(\"gen/volo_gen.rs\") from \"src/\");\n"),
            "{volo}"
        );
        let beside = root.join("crate/generated");
        let tonic = mark(Adapter::Tonic, &places, &beside, &beside.join("a.rs"));
        assert!(
            tonic.ends_with("(tonic include_file!(\"../generated/a.rs\") from \"src/\");\n"),
            "{tonic}"
        );
    }

    #[test]
    fn a_mark_is_found_again_whatever_it_names() {
        let root = Path::new("/nowhere");
        let out = root.join("target/out");
        let code = "pub mod a { include!(\"x.rs\"); }\n";
        for file in ["a.rs", "b/c.rs"] {
            let marked = format!(
                "{code}{}",
                mark(Adapter::Tonic, &places(root), &out, &out.join(file))
            );
            assert_eq!(strip_mark(&marked), Some(code));
        }
        let old = format!(
            "{code}\n// Added by grpc_stream_codec::volo::build: x\n// y\n__grpc_stream_codec_volo_mark!();\n"
        );
        assert_eq!(strip_mark(&old), Some(code));
        assert_eq!(strip_mark(code), None);
        let not_a_mark =
            format!("{code}\n// Added by grpc_stream_codec::tonic::build\nfn f() {{}}\n");
        assert_eq!(strip_mark(&not_a_mark), None);
    }

    #[cfg(feature = "tonic-build-hook")]
    #[test]
    fn include_calls_of_prost_include_files() {
        let text = "// This file is @generated by prost-build.\n\
                    include!(concat!(env!(\"OUT_DIR\"), \"/_.default.rs\"));\n\
                    pub mod a {\n    include!(\"a.rs\");\n    // include!(\"no.rs\");\n}\n\
                    const S: &str = \"include!(\\\"no.rs\\\")\";\n";
        let calls = include_calls(text);
        let found: Vec<(&str, bool)> = calls.iter().map(|c| (c.path.as_str(), c.out_dir)).collect();
        assert_eq!(found, [("_.default.rs", true), ("a.rs", false)]);
        assert!(text[calls[1].start..].starts_with("include!(\"a.rs\")"));
        let places = places(Path::new("/nowhere"));
        let file = Path::new("/nowhere/target/out/sub/_includes.rs");
        assert_eq!(
            calls[0].target(file, &places),
            Path::new("/nowhere/target/out/_.default.rs")
        );
        assert_eq!(
            calls[1].target(file, &places),
            Path::new("/nowhere/target/out/sub/a.rs")
        );
        assert_eq!(
            nested_line(&calls[1].target(file, &places)),
            "::grpc_stream_codec::codegen::include_nested!(\"a.rs\");"
        );
    }
}
