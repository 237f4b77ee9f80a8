//! README.md and docs/ show no user code that CI does not compile: every `rust` and
//! `toml` block is preceded by a marker naming the compiled file it is taken
//! from, and must equal that file (or a marked region of it).
//!
//! ```text
//! <!-- snippet: examples/readme-tonic/build.rs -->          whole file
//! <!-- snippet: examples/readme-tonic/src/main.rs#guard --> region `guard`
//! ```
//!
//! A region in a `.rs` file lies between `// snippet NAME` and
//! `// end snippet`, in a `.toml` file between `# snippet NAME` and
//! `# end snippet`; the marker lines are left out and the region's common
//! indentation removed. In `.toml` sources a `path = "..."` dependency is
//! shown in README as `version = "MAJOR.MINOR"` of this crate, so the
//! README's dependency blocks are exactly what a compiled example uses.

use std::path::{Path, PathBuf};

const MARKER_START: &str = "<!-- snippet: ";
const MARKER_END: &str = " -->";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fenced block of README.md and the marker before it, if any.
struct Block {
    line: usize,
    info: String,
    body: String,
    source: Option<String>,
}

fn blocks(readme: &str) -> Vec<Block> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let open = i;
        let mut body = String::new();
        i += 1;
        while i < lines.len() && !lines[i].starts_with("```") {
            body.push_str(lines[i]);
            body.push('\n');
            i += 1;
        }
        let source = lines[..open]
            .iter()
            .rev()
            .find(|line| !line.trim().is_empty())
            .and_then(|line| line.trim().strip_prefix(MARKER_START))
            .and_then(|rest| rest.strip_suffix(MARKER_END))
            .map(str::to_owned);
        out.push(Block {
            line: open + 1,
            info: info.trim().to_owned(),
            body,
            source,
        });
        i += 1;
    }
    out
}

/// The text a marker names: a whole file, or one region of it.
fn snippet(source: &str) -> Result<String, String> {
    let (path, region) = match source.split_once('#') {
        Some((path, region)) => (path, Some(region)),
        None => (source, None),
    };
    let full = repo_root().join(path);
    let text = std::fs::read_to_string(&full).map_err(|err| format!("{path}: {err}"))?;
    let is_toml = Path::new(path).extension().is_some_and(|ext| ext == "toml");
    let text = match region {
        None => text,
        Some(name) => extract_region(&text, name, if is_toml { "#" } else { "//" })
            .ok_or_else(|| format!("{path}: no region `{name}`"))?,
    };
    Ok(if is_toml {
        path_to_version(&text)
    } else {
        text
    })
}

fn extract_region(text: &str, name: &str, comment: &str) -> Option<String> {
    let start = format!("{comment} snippet {name}");
    let end = format!("{comment} end snippet");
    let mut lines = text.lines();
    lines.by_ref().find(|line| line.trim() == start)?;
    let mut region = Vec::new();
    for line in lines {
        if line.trim() == end {
            return Some(dedent(&region));
        }
        region.push(line);
    }
    None
}

fn dedent(lines: &[&str]) -> String {
    let indent = lines
        .iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for line in lines {
        out.push_str(line.get(indent..).unwrap_or("").trim_end());
        out.push('\n');
    }
    out
}

/// `path = "../.."` becomes `version = "0.1"` (this crate's major.minor).
fn path_to_version(text: &str) -> String {
    let version = env!("CARGO_PKG_VERSION");
    let shown: String = version.split('.').take(2).collect::<Vec<_>>().join(".");
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("path = \"") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "path = \"".len()..];
        let Some(close) = after.find('"') else {
            out.push_str(&rest[at..]);
            return out;
        };
        out.push_str(&format!("version = \"{shown}\""));
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

fn shows_code(info: &str) -> bool {
    let lang = info.split(',').next().unwrap_or("");
    matches!(lang, "rust" | "toml")
}

/// README.md and every page under docs/.
fn documents() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repo_root().join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    pages.insert(0, repo_root().join("README.md"));
    pages
}

#[test]
fn every_code_block_in_readme_and_docs_is_compiled_source() {
    let mut failures = Vec::new();
    let mut checked_in_readme = 0;
    for path in documents() {
        let text = std::fs::read_to_string(&path).expect("document");
        let name = path
            .strip_prefix(repo_root())
            .unwrap_or(&path)
            .display()
            .to_string();
        for block in blocks(&text) {
            match (&block.source, shows_code(&block.info)) {
                (None, false) => {}
                (None, true) => failures.push(format!(
                    "{name}:{}: a `{}` block without a `{MARKER_START}PATH{MARKER_END}` line before it",
                    block.line, block.info
                )),
                (Some(source), _) => match snippet(source) {
                    Err(err) => failures.push(format!("{name}:{}: {err}", block.line)),
                    Ok(expected) if expected != block.body => failures.push(format!(
                        "{name}:{}: differs from {source}\n--- {name}\n{}--- {source}\n{}",
                        block.line, block.body, expected
                    )),
                    Ok(_) if name == "README.md" => checked_in_readme += 1,
                    Ok(_) => {}
                },
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(checked_in_readme > 0, "README.md has no compiled snippets");
}

#[test]
fn regions_and_paths_are_read_as_documented() {
    let rust = "fn main() {\n    // snippet demo\n    let a = 1;\n        let b = 2;\n    // end snippet\n}\n";
    assert_eq!(
        extract_region(rust, "demo", "//").as_deref(),
        Some("let a = 1;\n    let b = 2;\n")
    );
    assert_eq!(extract_region(rust, "other", "//"), None);
    let unterminated = "// snippet demo\nlet a = 1;\n";
    assert_eq!(extract_region(unterminated, "demo", "//"), None);
    let toml = r#"grpc-stream-codec = { path = "../..", features = ["tonic"] }"#;
    let major_minor: Vec<&str> = env!("CARGO_PKG_VERSION").split('.').take(2).collect();
    assert_eq!(
        path_to_version(toml),
        format!(
            r#"grpc-stream-codec = {{ version = "{}", features = ["tonic"] }}"#,
            major_minor.join(".")
        )
    );
}

#[test]
fn a_marker_is_found_across_blank_lines_and_only_right_before_its_block() {
    let readme = "<!-- snippet: a.rs -->\n\n```rust\nx\n```\n\ntext\n\n```toml\ny\n```\n";
    let found = blocks(readme);
    assert_eq!(found.len(), 2);
    assert_eq!(found[0].source.as_deref(), Some("a.rs"));
    assert_eq!(found[0].body, "x\n");
    assert_eq!(found[1].source, None);
}
