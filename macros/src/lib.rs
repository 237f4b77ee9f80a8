//! Support for the include macros of
//! [grpc-stream-codec](https://crates.io/crates/grpc-stream-codec)
//! (`tonic::include_proto!`, `tonic::include_file!`,
//! `volo::include_service!`, `volo::include_file!`). Not an API: use those.
//!
//! What a `macro_rules!` macro cannot do, and these include checks need: a
//! name of its own for each included file, so that any number of include
//! calls can share one module. How the names are used:
//! grpc-stream-codec's `src/include_check.rs`.

#![warn(missing_docs)]

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// `include_checked!($crate, adapter, mark, at, suffix, ["file", ..])`: for
/// each file, grpc-stream-codec's `__include_checked_file!` with the file's
/// two names (its slot and its fallback module), made from the file's
/// literal so that no two files of a module share them.
#[proc_macro]
pub fn include_checked(input: TokenStream) -> TokenStream {
    match expand(input) {
        Ok(output) => output,
        Err(message) => compile_error(message),
    }
}

fn expand(input: TokenStream) -> Result<TokenStream, &'static str> {
    const USAGE: &str =
        "grpc-stream-codec: include_checked!($crate, adapter, mark, at, suffix, [files])";
    let arguments = split_commas(input);
    let [krate, adapter, mark, at, suffix, files] = arguments.as_slice() else {
        return Err(USAGE);
    };
    let files = match files.as_slice() {
        [TokenTree::Group(group)] if group.delimiter() == Delimiter::Bracket => group.stream(),
        _ => return Err(USAGE),
    };
    let mut output = TokenStream::new();
    for file in flatten(files) {
        let TokenTree::Literal(literal) = file else {
            if matches!(&file, TokenTree::Punct(comma) if comma.as_char() == ',') {
                continue;
            }
            return Err("grpc-stream-codec: the include macros take string literals");
        };
        let text = literal.to_string();
        let [slot, fallback] = ["file", "stock"]
            .map(|role| TokenTree::Ident(Ident::new(&file_name(role, &text), Span::call_site())));
        // `$crate::__include_checked_file!(adapter, mark, at, suffix, "file", slot)`
        output.extend(krate.iter().cloned());
        output.extend(path_tail("__include_checked_file"));
        let mut call = TokenStream::new();
        for part in [adapter, mark, at, suffix] {
            call.extend(part.iter().cloned());
            call.extend([punct(',')]);
        }
        call.extend([
            TokenTree::Literal(literal),
            punct(','),
            slot,
            punct(','),
            fallback,
        ]);
        output.extend([
            TokenTree::Group(Group::new(Delimiter::Parenthesis, call)),
            punct(';'),
        ]);
    }
    Ok(output)
}

/// A name of the file's: its role, the characters of the literal's text
/// that may stand in a name, then a hash of the whole text (`a.v1` and
/// `a_v1` differ).
fn file_name(role: &str, text: &str) -> String {
    let readable: String = text
        .chars()
        .filter(|c| *c != '"')
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(48)
        .collect();
    format!(
        "__grpc_stream_codec_{role}_{readable}_{:016x}",
        fnv1a(text.as_bytes())
    )
}

/// FNV-1a, 64 bits: stable across builds and platforms, unlike std's
/// hashers, so a file keeps its slot.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
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

/// `::name!`
fn path_tail(name: &str) -> [TokenTree; 4] {
    [
        TokenTree::Punct(Punct::new(':', Spacing::Joint)),
        punct(':'),
        TokenTree::Ident(Ident::new(name, Span::call_site())),
        punct('!'),
    ]
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
    use super::file_name;

    #[test]
    fn names_differ_where_the_literals_do() {
        let names = [r#""a.v1""#, r#""a_v1""#, r#""pb/a.v1.rs""#, r#""a.v1.rs""#]
            .map(|text| file_name("file", text));
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
        assert_ne!(file_name("file", r#""a""#), file_name("stock", r#""a""#));
    }

    #[test]
    fn the_hash_is_fnv1a_so_a_file_keeps_its_name_across_builds() {
        // FNV-1a's published 64-bit test vectors.
        assert_eq!(super::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
