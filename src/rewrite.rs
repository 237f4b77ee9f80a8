//! The code-only path rewriter behind both build hooks
//! (`volo::build`, `tonic::build`).
//!
//! Generated code names framework types by path (`tonic::server::Grpc`,
//! `::volo_grpc::RecvStream`); a hook swaps some of those paths for this
//! crate's. This module finds every path in the *code* of a Rust source —
//! comments, string, raw string and char literals are skipped — as a list of
//! whole segments, whatever whitespace sits around the `::`, and replaces the
//! leading segments that match a rule. Each adapter keeps only its table of
//! rules and its own checks of what the generator must have written.
//!
//! Matching is on whole segments at the start of a path, so
//! `tonic::client::Grpc` does not match inside `tonic::client::GrpcService`
//! nor inside `my::tonic::client::Grpc`. A rewritten path starts with
//! `::grpc_stream_codec`, which no stock rule matches, so rewriting twice
//! changes nothing.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

mod mark;
use crate::build::{Adapter, Entry, HookCall, RewriteError};
pub(crate) use mark::{Places, mark, strip_mark};
#[cfg(feature = "tonic-build-hook")]
pub(crate) use mark::{include_calls, nested_line};

/// One stock path and what it becomes.
pub(crate) struct Rule {
    /// The generator's path, segment by segment: `["tonic", "server", "Grpc"]`.
    pub stock: &'static [&'static str],
    /// The replacement, an absolute path: `"::grpc_stream_codec::tonic::server::Grpc"`.
    pub target: &'static str,
    /// Match only paths written with a leading `::` (volo-build writes every
    /// path that way; tonic-build writes none).
    pub global_only: bool,
}

impl Rule {
    /// Rewrites `stock` written with or without a leading `::` (the tonic
    /// hook's rules).
    #[cfg(feature = "tonic-build-hook")]
    pub(crate) const fn any(stock: &'static [&'static str], target: &'static str) -> Rule {
        Rule {
            stock,
            target,
            global_only: false,
        }
    }

    /// Rewrites `stock` only where it is written with a leading `::` (the
    /// volo hook's rules).
    #[cfg(feature = "volo-build-hook")]
    pub(crate) const fn global(stock: &'static [&'static str], target: &'static str) -> Rule {
        Rule {
            stock,
            target,
            global_only: true,
        }
    }
}

/// A [`Rule`] from a stock path to this crate's (under `::grpc_stream_codec`),
/// `kind` being `any` or `global`:
/// `rule!(any tonic::server::Grpc => tonic::server::Grpc)`.
macro_rules! rule {
    ($kind:ident $($stock:ident)::+ => $($ours:ident)::+) => {
        $crate::rewrite::Rule::$kind(
            &[$(stringify!($stock)),+],
            concat!("::grpc_stream_codec", $("::", stringify!($ours)),+),
        )
    };
}
pub(crate) use rule;

/// A path in code: byte ranges into the source it was found in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CodePath {
    /// Where the path starts: its leading `::`, or its first segment.
    pub start: usize,
    /// Written with a leading `::`.
    pub global: bool,
    /// `(start, end)` of each segment's identifier.
    pub segments: Vec<(usize, usize)>,
}

impl CodePath {
    /// The name of segment `index`.
    pub fn segment<'t>(&self, text: &'t str, index: usize) -> Option<&'t str> {
        self.segments.get(index).map(|&(s, e)| &text[s..e])
    }

    /// Whether the first segments are exactly `names`.
    pub fn starts_with(&self, text: &str, names: &[&str]) -> bool {
        names.len() <= self.segments.len()
            && names
                .iter()
                .enumerate()
                .all(|(i, name)| self.segment(text, i) == Some(name))
    }

    /// The byte just past segment `count - 1`.
    fn end_of(&self, count: usize) -> usize {
        self.segments[count - 1].1
    }
}

/// A path a rule matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    /// Index of the rule in the table.
    pub rule: usize,
    /// It was the stock path (now rewritten); otherwise it already was the target.
    pub stock: bool,
    /// The whole path, in the input text.
    pub path: CodePath,
    /// How many of its segments the rule matched.
    pub matched: usize,
}

#[cfg(feature = "volo-build-hook")]
impl Hit {
    /// The segment right after the matched ones (`new` in `RecvStream::new`).
    pub fn next_segment<'t>(&self, input: &'t str) -> Option<&'t str> {
        self.path.segment(input, self.matched)
    }
}

/// A source after [`rewrite`].
pub(crate) struct Rewritten {
    /// The new text (equal to the input when no stock path was found).
    pub text: String,
    /// Every path a rule matched, stock or already rewritten, in order.
    pub hits: Vec<Hit>,
}

/// Replaces every stock path of `rules` in the code of `text`. The first rule
/// that matches a path wins; paths that already are a rule's target are
/// reported as hits with `stock == false`.
pub(crate) fn rewrite(text: &str, rules: &[Rule]) -> Rewritten {
    let targets: Vec<Vec<&str>> = rules
        .iter()
        .map(|rule| rule.target.trim_start_matches("::").split("::").collect())
        .collect();
    let mut out = String::with_capacity(text.len() + 1024);
    let mut hits = Vec::new();
    let mut copied = 0;
    for path in code_paths(text) {
        for (index, rule) in rules.iter().enumerate() {
            if rule.global_only && !path.global {
                continue;
            }
            if path.starts_with(text, rule.stock) {
                let matched = rule.stock.len();
                out.push_str(&text[copied..path.start]);
                out.push_str(rule.target);
                copied = path.end_of(matched);
                hits.push(Hit {
                    rule: index,
                    stock: true,
                    path,
                    matched,
                });
                break;
            }
            if path.starts_with(text, &targets[index]) {
                let matched = targets[index].len();
                hits.push(Hit {
                    rule: index,
                    stock: false,
                    path,
                    matched,
                });
                break;
            }
        }
    }
    out.push_str(&text[copied..]);
    Rewritten { text: out, hits }
}

/// A hook's two entry points, `rewrite_out_dir()` and `rewrite_dir(dir)`,
/// over its `rewrite(dir, call)` in scope, each with the docs both share
/// and the adapter's own (`$generator` names its generator).
macro_rules! entry_points {
    ($adapter:ident, $generator:literal, out_dir: $(#[$out_dir:meta])*, dir: $(#[$dir:meta])*) => {
        #[doc = concat!("Rewrites ", $generator, "'s output under `$OUT_DIR`, recursively.")]
        ///
        #[doc = concat!("Call it from `build.rs` after ", $generator, " has written its output")]
        /// there, and return its error (`?`). On failure it also prints the
        /// error as a `cargo::error=` line, so cargo shows the fix as the
        /// build's first error rather than under "failed to run custom build
        /// command".
        $(#[$out_dir])*
        pub fn rewrite_out_dir() -> Result<RewriteReport, crate::build::RewriteError> {
            crate::rewrite::run_out_dir(crate::build::Adapter::$adapter, rewrite)
        }

        #[doc = concat!("Rewrites ", $generator, "'s output under `dir`, recursively; see the")]
        /// module docs. Like [`rewrite_out_dir`], it prints its error as a
        /// `cargo::error=` line too.
        ///
        $(#[$dir])*
        pub fn rewrite_dir(
            dir: impl AsRef<std::path::Path>,
        ) -> Result<RewriteReport, crate::build::RewriteError> {
            crate::rewrite::run_dir(crate::build::Adapter::$adapter, dir.as_ref(), rewrite)
        }
    };
}
pub(crate) use entry_points;

/// `rewrite_out_dir()` of either hook: `rewrite` on `OUT_DIR`, the
/// failure reported to cargo.
pub(crate) fn run_out_dir<R>(
    adapter: Adapter,
    rewrite: impl FnOnce(&Path, HookCall) -> Result<R, RewriteError>,
) -> Result<R, RewriteError> {
    let call = HookCall {
        adapter,
        entry: Entry::RewriteOutDir,
    };
    reported(match std::env::var_os("OUT_DIR") {
        Some(dir) => rewrite(Path::new(&dir), call),
        None => Err(RewriteError::NoOutDir { call }),
    })
}

/// `rewrite_dir(dir)` of either hook: `rewrite` on `dir`, the failure
/// reported to cargo.
pub(crate) fn run_dir<R>(
    adapter: Adapter,
    dir: &Path,
    rewrite: impl FnOnce(&Path, HookCall) -> Result<R, RewriteError>,
) -> Result<R, RewriteError> {
    let call = HookCall {
        adapter,
        entry: Entry::RewriteDir,
    };
    reported(rewrite(dir, call))
}

fn reported<R>(result: Result<R, RewriteError>) -> Result<R, RewriteError> {
    if let Err(error) = &result {
        report_to_cargo(error);
    }
    result
}

/// Every `.rs` file under `dir` (see [`rs_files`]) with its text.
pub(crate) fn read_sources(dir: &Path) -> Result<Vec<(PathBuf, String)>, RewriteError> {
    let read = |path: PathBuf| match fs::read_to_string(&path) {
        Ok(text) => Ok((path, text)),
        Err(source) => Err((path, source)),
    };
    rs_files(dir)
        .and_then(|files| files.into_iter().map(read).collect())
        .map_err(|(path, source)| RewriteError::Io { path, source })
}

/// A generated file as read, and what the hook makes of it.
pub(crate) struct Change<'a> {
    pub path: &'a Path,
    /// The text as read.
    pub old: &'a str,
    /// The rewritten code, without a mark.
    pub code: String,
    /// Whether the file gets the mark of `adapter`'s include macros.
    pub marked: bool,
}

/// Writes each file whose new text (its code, and its mark when it gets
/// one) differs from the old one, the others keeping their modification
/// times; returns how many it wrote.
pub(crate) fn write_marked<'a>(
    adapter: Adapter,
    dir: &Path,
    places: &Places,
    changes: impl IntoIterator<Item = Change<'a>>,
) -> Result<usize, RewriteError> {
    let mut written = 0;
    for Change {
        path,
        old,
        mut code,
        marked,
    } in changes
    {
        if marked {
            code.push_str(&mark(adapter, places, dir, path));
        }
        if old != code {
            fs::write(path, code).map_err(|source| RewriteError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            written += 1;
        }
    }
    Ok(written)
}

/// `text` without the mark at its end, if it has one.
pub(crate) fn unmarked(text: &str) -> &str {
    strip_mark(text).unwrap_or(text)
}

/// Prints a build hook's error as a `cargo::error=` line (on one line), so
/// cargo shows it as the build's first error.
fn report_to_cargo(error: &dyn std::fmt::Display) {
    let text = error.to_string().replace(['\n', '\r'], " ");
    println!("cargo::error={text}");
}

/// Prints one `cargo::warning=` line.
#[cfg(feature = "tonic-build-hook")]
pub(crate) fn warn_cargo(text: &str) {
    println!("cargo::warning={}", text.replace(['\n', '\r'], " "));
}

/// Whether the code before `start` ends in `impl` or `impl<..>`, i.e. the
/// path at `start` names the trait of an impl block.
pub(crate) fn preceded_by_impl(text: &str, start: usize) -> bool {
    let head = text[..start].trim_end();
    head.ends_with("impl") || head.ends_with('>')
}

/// Every `.rs` file under `dir`, recursively (volo-build's
/// `split_generated_files` writes per-service directories), sorted so that
/// errors name the same file on every run. On failure, the path it concerns.
pub(crate) fn rs_files(dir: &Path) -> Result<Vec<PathBuf>, (PathBuf, io::Error)> {
    let mut files = Vec::new();
    collect_rs_files(dir, &mut files)?;
    files.sort();
    Ok(files)
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), (PathBuf, io::Error)> {
    let io_err = |source| (dir.to_path_buf(), source);
    for entry in fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        let path = entry.path();
        let kind = entry.file_type().map_err(io_err)?;
        if kind.is_dir() {
            collect_rs_files(&path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Whether the code before `start` ends with the tokens `words` (identifiers
/// or punctuation, any whitespace between them).
#[cfg(feature = "tonic-build-hook")]
pub(crate) fn preceded_by_tokens(text: &str, start: usize, words: &[&str]) -> bool {
    let mut head = &text[..start];
    for word in words.iter().rev() {
        head = head.trim_end();
        let Some(rest) = head.strip_suffix(word) else {
            return false;
        };
        let word_is_ident = word.bytes().all(is_ident_byte);
        if word_is_ident && rest.bytes().next_back().is_some_and(is_ident_byte) {
            return false;
        }
        head = rest;
    }
    true
}

/// Every path in the code of `text`, in order. A single identifier counts as
/// a one-segment path; keywords (other than `self`, `Self`, `super`, `crate`)
/// are not paths.
pub(crate) fn code_paths(text: &str) -> Vec<CodePath> {
    let bytes = text.as_bytes();
    let mut paths = Vec::new();
    // A `::` that did not lead into a segment, as in `a:: /* .. */ b`: the
    // identifier after it continues a path we could not follow, so it does
    // not start one.
    let mut dangling_colons = false;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(end) = skip_non_code(text, i) {
            i = end;
            continue;
        }
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let after_colons = std::mem::take(&mut dangling_colons);
        if b == b'\'' {
            // A lifetime or label (char literals were skipped above): its
            // name is not a path.
            i = ident_end(bytes, i + 1);
            continue;
        }
        if b.is_ascii_digit() {
            i = ident_end(bytes, i);
            continue;
        }
        if let Some((start, end)) = ident_at(bytes, i) {
            if is_keyword(&text[start..end]) {
                i = end;
                continue;
            }
            let path = extend(
                bytes,
                CodePath {
                    start: i,
                    global: false,
                    segments: vec![(start, end)],
                },
            );
            i = path.end_of(path.segments.len());
            if !after_colons {
                paths.push(path);
            }
            continue;
        }
        if bytes[i..].starts_with(b"::") {
            if global_may_start(bytes, i) && !after_colons {
                let first = skip_ws(bytes, i + 2);
                if let Some(segment) = ident_at(bytes, first)
                    && !is_keyword(&text[segment.0..segment.1])
                {
                    let path = extend(
                        bytes,
                        CodePath {
                            start: i,
                            global: true,
                            segments: vec![segment],
                        },
                    );
                    i = path.end_of(path.segments.len());
                    paths.push(path);
                    continue;
                }
            }
            dangling_colons = true;
            i += 2;
            continue;
        }
        i += 1;
    }
    paths
}

/// Follows `:: segment` pairs (whitespace allowed around `::`) after the
/// path's last segment.
fn extend(bytes: &[u8], mut path: CodePath) -> CodePath {
    loop {
        let after = skip_ws(bytes, path.end_of(path.segments.len()));
        if !bytes[after..].starts_with(b"::") {
            return path;
        }
        let next = skip_ws(bytes, after + 2);
        match ident_at(bytes, next) {
            Some(segment) => path.segments.push(segment),
            None => return path, // `::<` (turbofish) or `::{` (use group)
        }
    }
}

/// A leading `::` starts a path unless it continues one, as in `foo::bar`
/// (identifier right before) or `a::::b` (not Rust).
fn global_may_start(bytes: &[u8], i: usize) -> bool {
    i == 0 || !(is_ident_byte(bytes[i - 1]) || bytes[i - 1] == b':')
}

/// The identifier (or raw identifier `r#x`) starting at `i`.
fn ident_at(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    let first = *bytes.get(i)?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    if first == b'r' && bytes.get(i + 1) == Some(&b'#') {
        let end = ident_end(bytes, i + 2);
        if end > i + 2 {
            return Some((i, end));
        }
    }
    Some((i, ident_end(bytes, i)))
}

fn ident_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && is_ident_byte(bytes[i]) {
        i += 1;
    }
    i
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Keywords that cannot be a path segment, so `impl ::x::Y` or `as :: x`
/// start a new path rather than continue one.
fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "as" | "async"
            | "await"
            | "break"
            | "const"
            | "continue"
            | "dyn"
            | "else"
            | "enum"
            | "extern"
            | "false"
            | "fn"
            | "for"
            | "if"
            | "impl"
            | "in"
            | "let"
            | "loop"
            | "match"
            | "mod"
            | "move"
            | "mut"
            | "pub"
            | "ref"
            | "return"
            | "static"
            | "struct"
            | "trait"
            | "true"
            | "type"
            | "unsafe"
            | "use"
            | "where"
            | "while"
            | "yield"
    )
}

/// If a comment, string or char literal starts at `i`, returns its end.
fn skip_non_code(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let rest = &bytes[i..];
    if rest.starts_with(b"//") {
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| i + p);
        return Some(end);
    }
    if rest.starts_with(b"/*") {
        // Rust block comments nest.
        let mut depth = 0usize;
        let mut j = i;
        while j < bytes.len() {
            if bytes[j..].starts_with(b"/*") {
                depth += 1;
                j += 2;
            } else if bytes[j..].starts_with(b"*/") {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    return Some(j);
                }
            } else {
                j += 1;
            }
        }
        return Some(bytes.len());
    }
    let prev_is_ident = i > 0 && is_ident_byte(bytes[i - 1]);
    if !prev_is_ident
        && (rest.starts_with(b"r\"") || rest.starts_with(b"r#") || rest.starts_with(b"br"))
    {
        let start = if rest[0] == b'b' { i + 2 } else { i + 1 };
        let hashes = bytes[start..].iter().take_while(|&&b| b == b'#').count();
        if bytes.get(start + hashes) == Some(&b'"') {
            let mut closing = Vec::with_capacity(hashes + 1);
            closing.push(b'"');
            closing.extend(std::iter::repeat_n(b'#', hashes));
            let body = start + hashes + 1;
            let end = bytes[body..]
                .windows(closing.len())
                .position(|w| w == closing.as_slice())
                .map_or(bytes.len(), |p| body + p + closing.len());
            return Some(end);
        }
    }
    if rest[0] == b'"' {
        let mut j = i + 1;
        while j < bytes.len() {
            match bytes[j] {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
        return Some(bytes.len());
    }
    if rest[0] == b'\'' {
        // A char literal ('x', '\n', '\u{..}'), not a lifetime ('static).
        if rest.get(1) == Some(&b'\\') {
            let end = rest[2..]
                .iter()
                .position(|&b| b == b'\'')
                .map_or(bytes.len(), |p| i + 2 + p + 1);
            return Some(end);
        }
        let ch_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
        if rest.get(1 + ch_len) == Some(&b'\'') {
            return Some(i + 2 + ch_len);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        code_paths(text)
            .iter()
            .map(|p| {
                let segs: Vec<&str> = (0..p.segments.len())
                    .map(|i| p.segment(text, i).unwrap())
                    .collect();
                format!("{}{}", if p.global { "::" } else { "" }, segs.join("::"))
            })
            .collect()
    }

    #[test]
    fn finds_paths_with_and_without_leading_colons() {
        assert_eq!(
            names("let g = tonic::server::Grpc::new(c); impl ::a::B for C {}"),
            ["g", "tonic::server::Grpc::new", "c", "::a::B", "C"]
        );
    }

    #[test]
    fn whitespace_around_colons_joins_segments() {
        assert_eq!(
            names("x = tonic :: server ::\n  Grpc :: new (codec)"),
            ["x", "tonic::server::Grpc::new", "codec"]
        );
    }

    #[test]
    fn keywords_before_colons_do_not_continue_a_path() {
        assert_eq!(
            names("impl :: a :: B for C { fn f() -> Box<dyn ::e::E> { return ::s::t() } }"),
            ["::a::B", "C", "f", "Box", "::e::E", "::s::t"]
        );
        // `self`, `super`, `crate` and `Self` are segments.
        assert_eq!(names("crate :: x; self::y"), ["crate::x", "self::y"]);
    }

    #[test]
    fn lifetimes_numbers_and_turbofish() {
        assert_eq!(
            names("&'a ::x::Y; 0x1fu8; v.collect::<Vec<_>>(); Foo::<T>::bar"),
            ["::x::Y", "v", "collect", "Vec", "_", "Foo", "T", "::bar"]
        );
    }

    #[test]
    fn comments_strings_and_chars_are_not_code() {
        let text = concat!(
            "// a::b\n/* c::d /* nested */ e::f */\n",
            "\"g::h\"; r#\"i::j\"#; br\"k::l\"; '\"'; b'm'; real::path\n",
        );
        assert_eq!(names(text), ["b", "real::path"]);
    }

    #[test]
    fn a_path_continued_past_a_comment_does_not_start_a_new_one() {
        assert_eq!(names("a:: /* x */ tonic::server"), ["a"]);
    }

    const RULES: &[Rule] = &[
        Rule::any(&["tonic", "client", "Grpc"], "::ours::client::Grpc"),
        Rule::global(&["v", "Recv"], "::ours::Recv"),
    ];

    #[test]
    fn rewrites_whole_leading_segments_only() {
        let text = "a: tonic::client::Grpc<T>, b: tonic::client::GrpcService<B>, \
                    c: my::tonic::client::Grpc, d: ::tonic :: client :: Grpc::new(x)";
        let out = rewrite(text, RULES);
        assert_eq!(
            out.text,
            "a: ::ours::client::Grpc<T>, b: tonic::client::GrpcService<B>, \
             c: my::tonic::client::Grpc, d: ::ours::client::Grpc::new(x)"
        );
        assert_eq!(out.hits.len(), 2);
        assert!(out.hits.iter().all(|h| h.stock && h.rule == 0));
        assert_eq!(out.hits[1].path.segment(text, 3), Some("new"));
    }

    #[test]
    fn global_only_rules_skip_relative_paths_and_second_runs_change_nothing() {
        let text = "v::Recv::new(); ::v::Recv::new()";
        let once = rewrite(text, RULES);
        assert_eq!(once.text, "v::Recv::new(); ::ours::Recv::new()");
        let twice = rewrite(&once.text, RULES);
        assert_eq!(twice.text, once.text);
        assert_eq!(twice.hits.len(), 1);
        assert!(!twice.hits[0].stock);
        assert_eq!(twice.hits[0].path.segment(&once.text, 2), Some("new"));
    }

    #[cfg(feature = "tonic-build-hook")]
    #[test]
    fn token_lookbehind() {
        let text = "let codec = x::C::default(); let mycodec = y;";
        let paths = code_paths(text);
        assert!(preceded_by_tokens(text, paths[0].start, &["let"]));
        assert!(preceded_by_tokens(
            text,
            paths[1].start,
            &["let", "codec", "="]
        ));
        assert!(!preceded_by_tokens(
            text,
            paths[3].start,
            &["let", "codec", "="]
        ));
        assert!(preceded_by_impl("impl<T: X> ::a::B", 11));
    }
}
