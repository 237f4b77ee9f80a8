//! Support for the include macros of
//! [grpc-stream-codec](https://crates.io/crates/grpc-stream-codec)
//! (`tonic::include_proto!`, `tonic::include_file!`,
//! `volo::include_service!`, `volo::include_file!`) and for the mark its
//! build hooks leave in generated files. Not an API: use those.
//!
//! What a `macro_rules!` macro cannot do, and the include check needs: names
//! of its own for each included file. The include macro and the file's mark
//! make them apart, from the file's name alone, so they must agree without
//! seeing each other's literal. How the names are used: grpc-stream-codec's
//! `src/include_check.rs`.

#![warn(missing_docs)]

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// `file_names!(callback, suffix, ["file", ..], args..)`: for each file,
/// `callback!(args.., "file", included, unincluded, stock, slot);`, the
/// four names made from the file's name (the last component of the
/// literal's value with `suffix` appended), so that the include macro and
/// the mark of one file name the same items, and two files of one module
/// different ones.
#[proc_macro]
pub fn file_names(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(output) => output,
        Err(message) => compile_error(message),
    }
}

fn expand(input: TokenStream) -> Result<TokenStream, &'static str> {
    const USAGE: &str = "grpc-stream-codec: file_names!(callback, suffix, [files], args..)";
    let mut arguments = split_commas(input).into_iter();
    let (Some(callback), Some(suffix), Some(files)) =
        (arguments.next(), arguments.next(), arguments.next())
    else {
        return Err(USAGE);
    };
    let suffix = match suffix.as_slice() {
        [TokenTree::Literal(literal)] => string_value(&literal.to_string()).ok_or(USAGE)?,
        _ => return Err(USAGE),
    };
    let files = match files.as_slice() {
        [TokenTree::Group(group)] if group.delimiter() == Delimiter::Bracket => group.stream(),
        _ => return Err(USAGE),
    };
    let leading: Vec<Vec<TokenTree>> = arguments.filter(|argument| !argument.is_empty()).collect();
    let mut output = TokenStream::new();
    for file in flatten(files) {
        let TokenTree::Literal(literal) = file else {
            if matches!(&file, TokenTree::Punct(comma) if comma.as_char() == ',') {
                continue;
            }
            return Err(NOT_A_STRING);
        };
        let value = string_value(&literal.to_string()).ok_or(NOT_A_STRING)?;
        let key = file_key(&value, &suffix);
        let names = ["included", "unincluded", "stock", "file"]
            .map(|role| TokenTree::Ident(Ident::new(&item_name(role, &key), Span::call_site())));
        let mut call = TokenStream::new();
        for argument in &leading {
            call.extend(argument.iter().cloned());
            call.extend([punct(',')]);
        }
        call.extend([TokenTree::Literal(literal)]);
        for name in names {
            call.extend([punct(','), name]);
        }
        output.extend(callback.iter().cloned());
        output.extend([
            punct('!'),
            TokenTree::Group(Group::new(Delimiter::Parenthesis, call)),
            punct(';'),
        ]);
    }
    Ok(output)
}

const NOT_A_STRING: &str = "grpc-stream-codec: the include macros take string literals";

/// The file's name: what follows the last `/` (or `\`) of `value` with
/// `suffix` appended. The hook writes a mark's path relative to where it
/// expects the including file, a user may include from elsewhere: the name
/// is what both have in common.
fn file_key(value: &str, suffix: &str) -> String {
    let path = format!("{value}{suffix}");
    match path.rfind(['/', '\\']) {
        Some(at) => path[at + 1..].to_string(),
        None => path,
    }
}

/// A name of the file's: its role, the characters of its name that may
/// stand in an identifier, then a hash of the whole name (`a.v1.rs` and
/// `a_v1.rs` differ).
fn item_name(role: &str, key: &str) -> String {
    let readable: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(48)
        .collect();
    format!(
        "__grpc_stream_codec_{role}_{readable}_{:016x}",
        fnv1a(key.as_bytes())
    )
}

/// FNV-1a, 64 bits: stable across builds and platforms, unlike std's
/// hashers, so a file keeps its names.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The value of a string literal's source text (`"a\"b"`, `r#"a"b"#`),
/// or `None` if the text is not one.
fn string_value(text: &str) -> Option<String> {
    if let Some(raw) = text.strip_prefix('r') {
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        let body = raw[hashes..].strip_prefix('"')?;
        let body = body.strip_suffix(&raw[..hashes])?.strip_suffix('"')?;
        return Some(body.to_string());
    }
    let body = text.strip_prefix('"')?.strip_suffix('"')?;
    let mut value = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            value.push(c);
            continue;
        }
        match chars.next()? {
            'n' => value.push('\n'),
            'r' => value.push('\r'),
            't' => value.push('\t'),
            '0' => value.push('\0'),
            c @ ('\\' | '\'' | '"') => value.push(c),
            'x' => {
                let digits: String = [chars.next()?, chars.next()?].iter().collect();
                value.push(char::from(u8::from_str_radix(&digits, 16).ok()?));
            }
            'u' => {
                if chars.next()? != '{' {
                    return None;
                }
                let mut digits = String::new();
                loop {
                    match chars.next()? {
                        '}' => break,
                        '_' => {}
                        digit => digits.push(digit),
                    }
                }
                value.push(char::from_u32(u32::from_str_radix(&digits, 16).ok()?)?);
            }
            // A line continuation: the newline and the whitespace after it
            // are not part of the value.
            '\n' => while chars.next_if(|c| c.is_whitespace()).is_some() {},
            _ => return None,
        }
    }
    Some(value)
}

/// The tokens, with the invisible groups forwarded fragments arrive in
/// opened.
fn flatten(input: TokenStream) -> Vec<TokenTree> {
    let mut tokens = Vec::new();
    for token in input {
        match token {
            TokenTree::Group(group) if group.delimiter() == Delimiter::None => {
                tokens.extend(flatten(group.stream()));
            }
            token => tokens.push(token),
        }
    }
    tokens
}

/// The arguments between top-level commas.
fn split_commas(input: TokenStream) -> Vec<Vec<TokenTree>> {
    let mut arguments = vec![Vec::new()];
    for token in flatten(input) {
        match &token {
            TokenTree::Punct(punct) if punct.as_char() == ',' => arguments.push(Vec::new()),
            _ => {
                if let Some(last) = arguments.last_mut() {
                    last.push(token);
                }
            }
        }
    }
    arguments
}

fn punct(c: char) -> TokenTree {
    TokenTree::Punct(Punct::new(c, Spacing::Alone))
}

/// `compile_error!("message");`
fn compile_error(message: &str) -> TokenStream {
    let argument = TokenStream::from(TokenTree::Literal(Literal::string(message)));
    TokenStream::from_iter([
        TokenTree::Ident(Ident::new("compile_error", Span::call_site())),
        punct('!'),
        TokenTree::Group(Group::new(Delimiter::Parenthesis, argument)),
        punct(';'),
    ])
}

#[cfg(test)]
mod tests {
    use super::{file_key, item_name, string_value};

    #[test]
    fn names_differ_where_the_file_names_do() {
        let names = ["a.v1.rs", "a_v1.rs", "b.v1.rs"].map(|key| item_name("file", key));
        for (i, name) in names.iter().enumerate() {
            assert!(name.starts_with("__grpc_stream_codec_file_"), "{name}");
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{name}"
            );
            for other in &names[i + 1..] {
                assert_ne!(name, other);
            }
        }
        assert_ne!(item_name("file", "a.rs"), item_name("stock", "a.rs"));
    }

    #[test]
    fn the_include_macro_and_the_mark_name_a_file_alike() {
        // include_proto!("a.v1") under OUT_DIR, include_proto!("sub/a.v1")
        // under a subdirectory, include_file!("pb/a.v1.rs") from src/.
        for (value, suffix) in [("a.v1", ".rs"), ("sub/a.v1", ".rs"), ("pb/a.v1.rs", "")] {
            assert_eq!(file_key(value, suffix), "a.v1.rs");
        }
        assert_eq!(file_key(r"..\gen\volo_gen.rs", ""), "volo_gen.rs");
    }

    #[test]
    fn string_literals_are_read_as_rustc_reads_them() {
        assert_eq!(string_value(r#""pb/a.rs""#).as_deref(), Some("pb/a.rs"));
        assert_eq!(string_value(r#"r"pb\a.rs""#).as_deref(), Some(r"pb\a.rs"));
        assert_eq!(
            string_value(r###"r#"a"b.rs"#"###).as_deref(),
            Some("a\"b.rs")
        );
        assert_eq!(
            string_value(
                r#""a\\b\x41\u{42}\"\
                 c.rs""#
            )
            .as_deref(),
            Some("a\\bAB\"c.rs")
        );
        assert_eq!(string_value("b\"a\""), None);
        assert_eq!(string_value("1"), None);
        assert_eq!(string_value(r#""\q""#), None);
    }

    #[test]
    fn the_hash_is_fnv1a_so_a_file_keeps_its_names_across_builds() {
        // FNV-1a's published 64-bit test vectors.
        assert_eq!(super::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
