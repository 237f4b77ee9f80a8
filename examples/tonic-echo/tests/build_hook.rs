//! `grpc_stream_codec::tonic::build` on real tonic-prost-build 0.14 output,
//! generated here into temporary directories (protox, no `protoc`).
//!
//! The oracle is independent of the hook: syn parses the generated file
//! before and after the rewrite, every path in the code is listed, and the
//! contract's table (written out again below) is applied to the "before"
//! list. The "after" list must equal it exactly, so every stock path is gone,
//! every rewritten path appears as often as its stock path did, and every
//! other path is intact. String literals and doc comments (which mention the
//! stock paths, see the protos) must be unchanged.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use grpc_stream_codec::build::{Adapter, RewriteError, SourceError};
use grpc_stream_codec::tonic::build::{RewriteReport, rewrite_dir, rewrite_source};
use syn::visit::Visit;

const ALPHA: &str = r#"
syntax = "proto3";
package alpha.v1;

// Mentions tonic::Streaming, which must stay in this doc comment.
message Ping {
  bytes payload = 1;
  string note = 2;
}
message Pong { bytes payload = 1; }

// Served by tonic::server::Grpc and called by tonic::client::Grpc with
// tonic_prost::ProstCodec.
service Echo {
  // One tonic::server::UnaryService call.
  rpc Unary(Ping) returns (Pong);
  // Answers tonic::codec::Streaming<Pong>.
  rpc ServerStream(Ping) returns (stream Pong);
  // Takes tonic::Streaming<Ping> through tonic::server::ClientStreamingService.
  rpc ClientStream(stream Ping) returns (Pong);
  // tonic::server::StreamingService both ways.
  rpc Bidi(stream Ping) returns (stream Pong);
}

// No methods: a server without a single tonic::server::Grpc.
service Quiet {}
"#;

const BETA: &str = r#"
syntax = "proto3";
package beta;
import "alpha/v1/echo.proto";

service Relay {
  rpc Collect(stream alpha.v1.Ping) returns (alpha.v1.Pong);
  rpc Chat(stream alpha.v1.Ping) returns (stream alpha.v1.Pong);
  rpc Fetch(alpha.v1.Ping) returns (alpha.v1.Pong);
}

service Mirror {
  rpc Watch(alpha.v1.Ping) returns (stream alpha.v1.Pong);
}
"#;

// A package with messages only: its file holds no service.
const GAMMA: &str = r#"
syntax = "proto3";
package gamma;
message Note { string text = 1; bytes blob = 2; }
"#;

/// Methods over all services: one `tonic::server::Grpc::new` each on the
/// server side, one codec each on either side.
const METHODS: usize = 8;

/// The contract (brief tonic-full-framing-api.md), independent of the hook.
const TABLE: &[(&str, &str)] = &[
    (
        "tonic::server::Grpc",
        "::grpc_stream_codec::codegen::tonic::server::Grpc",
    ),
    (
        "tonic::server::ClientStreamingService",
        "::grpc_stream_codec::codegen::tonic::server::ClientStreamingService",
    ),
    (
        "tonic::server::StreamingService",
        "::grpc_stream_codec::codegen::tonic::server::StreamingService",
    ),
    ("tonic::Streaming", "::grpc_stream_codec::tonic::Streaming"),
    (
        "tonic::codec::Streaming",
        "::grpc_stream_codec::tonic::Streaming",
    ),
    (
        "tonic::client::Grpc",
        "::grpc_stream_codec::codegen::tonic::client::Grpc",
    ),
    (
        "tonic_prost::ProstCodec",
        "::grpc_stream_codec::tonic::ProstCodec",
    ),
];

/// Paths the hook must not touch (a sample of what generated code uses).
const SERVER_LEFT_ALONE: &[&str] = &[
    "tonic::server::UnaryService",
    "tonic::server::ServerStreamingService",
    "tonic::server::NamedService",
    "tonic::Request",
    "tonic::Status",
    "tonic::body::Body",
    "tonic::codegen::Service",
];
const CLIENT_LEFT_ALONE: &[&str] = &[
    "tonic::client::GrpcService",
    "tonic::IntoRequest",
    "tonic::IntoStreamingRequest",
    "tonic::Response",
];

type Builder = tonic_prost_build::Builder;

/// A generated build: `root` is what the hook is pointed at, the generator
/// wrote into a directory below it (the hook must recurse).
struct Generated {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn generate(configure: impl FnOnce(Builder) -> Builder) -> Generated {
    let dir = tempfile::tempdir().unwrap();
    let protos = dir.path().join("proto");
    for (name, text) in [
        ("alpha/v1/echo.proto", ALPHA),
        ("beta/relay.proto", BETA),
        ("gamma/notes.proto", GAMMA),
    ] {
        let path = protos.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    let fds = protox::compile(
        [
            "alpha/v1/echo.proto",
            "beta/relay.proto",
            "gamma/notes.proto",
        ],
        [&protos],
    )
    .unwrap();
    let root = dir.path().join("out");
    let out = root.join("generated");
    fs::create_dir_all(&out).unwrap();
    configure(
        tonic_prost_build::configure()
            .bytes(".")
            .emit_rerun_if_changed(false)
            .out_dir(&out),
    )
    .compile_fds(fds)
    .unwrap();
    Generated { _dir: dir, root }
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&path).unwrap();
                files.insert(path, text);
            }
        }
    }
    files
}

/// Every path in the code of a file (as `a::b::c`, generic arguments left
/// out, `::` kept when written) and every string literal, doc comments
/// included, as syn reads them.
#[derive(Default)]
struct Code {
    paths: Vec<String>,
    strings: Vec<String>,
}

impl<'ast> Visit<'ast> for Code {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let lead = if path.leading_colon.is_some() {
            "::"
        } else {
            ""
        };
        self.paths.push(format!("{lead}{}", names.join("::")));
        syn::visit::visit_path(self, path);
    }

    fn visit_lit_str(&mut self, lit: &'ast syn::LitStr) {
        self.strings.push(lit.value());
    }
}

fn read_code(text: &str) -> Code {
    let file = syn::parse_file(text).expect("the file parses as Rust");
    let mut code = Code::default();
    code.visit_file(&file);
    code
}

/// `path` is `prefix` or starts with `prefix::` (whole segments).
fn has_prefix(path: &str, prefix: &str) -> bool {
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with("::"))
}

/// What the contract says a path becomes.
fn contract(path: &str) -> String {
    let bare = path.trim_start_matches("::");
    for (stock, target) in TABLE {
        if has_prefix(bare, stock) {
            return format!("{target}{}", &bare[stock.len()..]);
        }
    }
    path.to_string()
}

fn count(paths: &[String], prefix: &str) -> usize {
    paths
        .iter()
        .filter(|p| has_prefix(p.trim_start_matches("::"), prefix.trim_start_matches("::")))
        .filter(|p| !prefix.starts_with("::") || p.starts_with("::"))
        .count()
}

/// All paths and strings of a set of files, after checking each file
/// against the contract.
struct Checked {
    before: Vec<String>,
    after: Vec<String>,
    docs_mention_stock: bool,
}

fn check_against_contract(
    before: &BTreeMap<PathBuf, String>,
    after: &BTreeMap<PathBuf, String>,
) -> Checked {
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    let mut all_before = Vec::new();
    let mut all_after = Vec::new();
    let mut docs_mention_stock = false;
    for (path, old) in before {
        let new = &after[path];
        let old_code = read_code(old);
        let new_code = read_code(new);
        let mut expected: Vec<String> = old_code.paths.iter().map(|p| contract(p)).collect();
        let mut got = new_code.paths.clone();
        expected.sort();
        got.sort();
        assert_eq!(
            got,
            expected,
            "{}: paths differ from the contract",
            path.display()
        );
        assert_eq!(
            new_code.strings,
            old_code.strings,
            "{}: a string literal or doc comment changed",
            path.display()
        );
        docs_mention_stock |= old_code
            .strings
            .iter()
            .any(|s| s.contains("tonic::server::Grpc"));
        all_before.extend(old_code.paths);
        all_after.extend(new_code.paths);
    }
    for (stock, _) in TABLE {
        assert_eq!(count(&all_after, stock), 0, "{stock} left in code");
    }
    Checked {
        before: all_before,
        after: all_after,
        docs_mention_stock,
    }
}

fn assert_left_alone(checked: &Checked, paths: &[&str]) {
    for path in paths {
        let before = count(&checked.before, path);
        assert!(before > 0, "{path} should be in the generated code");
        assert_eq!(count(&checked.after, path), before, "{path} changed");
    }
}

fn assert_report_matches(report: &RewriteReport, checked: &Checked) {
    let ours = |path: &str| count(&checked.after, path);
    assert_eq!(
        report.server_grpc_paths,
        ours("::grpc_stream_codec::codegen::tonic::server::Grpc")
    );
    assert_eq!(
        report.client_grpc_paths,
        ours("::grpc_stream_codec::codegen::tonic::client::Grpc")
    );
    assert_eq!(
        report.service_trait_paths,
        ours("::grpc_stream_codec::codegen::tonic::server::ClientStreamingService")
            + ours("::grpc_stream_codec::codegen::tonic::server::StreamingService")
    );
    assert_eq!(
        report.streaming_paths,
        ours("::grpc_stream_codec::tonic::Streaming")
    );
    // With or without the leading `::` (a user-set codec_path has none).
    assert_eq!(
        report.codec_paths,
        ours("grpc_stream_codec::tonic::ProstCodec")
    );
}

/// How the call of the mark the hook appends to each generated file
/// starts: a path into the crate, naming the include macro's call for the
/// file (`include_file!`, these files being outside `OUT_DIR`), which
/// checks for it.
const MARK_CALL: &str = "::grpc_stream_codec::codegen::include_mark!(tonic include_file!(\"";

/// Each file without the mark the hook appended (checked to be there,
/// once, at the end, naming the file).
fn without_markers(files: &BTreeMap<PathBuf, String>) -> BTreeMap<PathBuf, String> {
    files
        .iter()
        .map(|(path, text)| {
            let at = text
                .rfind("\n// Added by grpc_stream_codec::tonic::build")
                .unwrap_or_else(|| panic!("{}: no marker", path.display()));
            let tail = &text[at..];
            assert_eq!(text.matches(MARK_CALL).count(), 1, "{}", path.display());
            let name = path.file_name().unwrap().to_str().unwrap();
            let last = tail.trim_end().rsplit('\n').next().unwrap();
            assert!(
                last.starts_with(MARK_CALL)
                    && last.ends_with(&format!("/{name}\") from \"src/\");")),
                "{}: {tail}",
                path.display()
            );
            (path.clone(), text[..at].to_string())
        })
        .collect()
}

/// Rewrites `generated`, checks the result against the contract, and checks
/// a second run (the hook called again with nothing newly generated, as
/// when it runs before tonic-prost-build) fails and changes nothing.
fn rewrite_and_check(generated: &Generated) -> (RewriteReport, Checked) {
    let before = snapshot(&generated.root);
    let report = rewrite_dir(&generated.root).unwrap();
    let after = snapshot(&generated.root);
    let checked = check_against_contract(&before, &without_markers(&after));
    assert_report_matches(&report, &checked);
    assert_eq!(report.files_scanned, before.len());
    // Every file is tonic-prost-build's, services or not.
    assert_eq!(report.marked_files, before.len());
    assert_eq!(report.files_rewritten, before.len());

    let err = rewrite_dir(&generated.root).unwrap_err();
    assert!(
        matches!(&err, RewriteError::AlreadyRewritten { dir, .. } if *dir == generated.root),
        "{err}"
    );
    assert_eq!(snapshot(&generated.root), after, "a second run wrote files");
    (report, checked)
}

#[test]
fn server_and_client_with_the_stock_codec() {
    let generated = generate(|b| b);
    let (report, checked) = rewrite_and_check(&generated);
    // alpha.v1.rs and beta.rs; gamma.rs has messages only (and is marked).
    assert_eq!(report.files_scanned, 3);
    assert_eq!(report.files_with_services, 2);
    assert_eq!(report.files_rewritten, 3);
    for (stock, _) in TABLE {
        assert!(count(&checked.before, stock) > 0, "{stock} not generated");
    }
    assert_eq!(report.server_grpc_paths, METHODS);
    assert_eq!(report.codec_paths, 2 * METHODS);
    assert!(report.service_trait_paths > 0 && report.streaming_paths > 0);
    assert_left_alone(&checked, SERVER_LEFT_ALONE);
    assert_left_alone(&checked, CLIENT_LEFT_ALONE);
    assert!(checked.docs_mention_stock);
}

#[test]
fn codec_path_set_arc_self_default_stubs_without_transport() {
    let generated = generate(|b| {
        b.codec_path("grpc_stream_codec::tonic::ProstCodec")
            .use_arc_self(true)
            .generate_default_stubs(true)
            .build_transport(false)
    });
    let before = snapshot(&generated.root);
    let text: String = before.values().cloned().collect();
    // The options took effect.
    assert!(text.contains("self: std::sync::Arc<Self>"));
    assert!(text.contains("Not yet implemented"));
    let paths: Vec<String> = before.values().flat_map(|t| read_code(t).paths).collect();
    assert_eq!(count(&paths, "tonic::transport"), 0);
    assert_eq!(count(&paths, "tonic_prost::ProstCodec"), 0);

    let (report, checked) = rewrite_and_check(&generated);
    assert_eq!(report.server_grpc_paths, METHODS);
    // The user's codec path is already right: kept as written, counted.
    assert_eq!(report.codec_paths, 2 * METHODS);
    assert_eq!(
        count(&checked.after, "grpc_stream_codec::tonic::ProstCodec"),
        count(&checked.before, "grpc_stream_codec::tonic::ProstCodec")
    );
    assert_eq!(
        count(&checked.after, "::grpc_stream_codec::tonic::ProstCodec"),
        0
    );
    for (stock, _) in &TABLE[..6] {
        assert!(count(&checked.before, stock) > 0, "{stock} not generated");
    }
    assert_left_alone(&checked, SERVER_LEFT_ALONE);
    assert_left_alone(&checked, CLIENT_LEFT_ALONE);
}

#[test]
fn server_only_and_client_only_builds() {
    let server = generate(|b| b.build_client(false));
    let (report, checked) = rewrite_and_check(&server);
    assert_eq!(report.files_with_services, 2);
    assert_eq!(report.server_grpc_paths, METHODS);
    assert_eq!(report.client_grpc_paths, 0);
    assert_eq!(report.codec_paths, METHODS);
    assert!(report.service_trait_paths > 0 && report.streaming_paths > 0);
    assert_left_alone(&checked, SERVER_LEFT_ALONE);

    let client = generate(|b| b.build_server(false));
    let (report, checked) = rewrite_and_check(&client);
    assert_eq!(report.files_with_services, 2);
    assert_eq!(report.server_grpc_paths, 0);
    assert_eq!(report.service_trait_paths, 0);
    assert!(report.client_grpc_paths > 0);
    assert_eq!(report.codec_paths, METHODS);
    // Client side: only the response streams (`tonic::codec::Streaming`).
    assert_eq!(
        report.streaming_paths,
        count(&checked.before, "tonic::codec::Streaming")
    );
    assert!(report.streaming_paths > 0);
    assert_left_alone(&checked, CLIENT_LEFT_ALONE);
}

#[test]
fn whitespace_around_colons_in_real_output() {
    // The same output as token text, `tonic :: server :: Grpc :: new (codec)`,
    // doc comments as `# [doc = "..."]`.
    let generated = generate(|b| b);
    let mut spaced_files = 0;
    for (path, text) in snapshot(&generated.root) {
        let spaced = text
            .parse::<proc_macro2::TokenStream>()
            .unwrap()
            .to_string();
        let out = rewrite_source(&spaced).unwrap();
        let one = |p: &PathBuf, t: &str| BTreeMap::from([(p.clone(), t.to_string())]);
        check_against_contract(&one(&path, &spaced), &one(&path, &out.text));
        if spaced.contains("tonic :: server :: Grpc :: new") {
            spaced_files += 1;
            assert!(out.server_grpc_paths > 0);
            assert!(
                out.text
                    .contains("::grpc_stream_codec::codegen::tonic::server::Grpc :: new")
            );
        }
        assert_eq!(rewrite_source(&out.text).unwrap().text, out.text);
    }
    assert_eq!(spaced_files, 2);
}

#[test]
fn a_foreign_codec_keeps_tonic_framing_and_gets_no_mark() {
    let generated = generate(|b| b.codec_path("my_codecs::JsonCodec"));
    let before = snapshot(&generated.root);
    let report = rewrite_dir(&generated.root).unwrap();
    // alpha.v1.rs and beta.rs hold services, on the foreign codec.
    assert_eq!(report.foreign_codec_files.len(), 2, "{report:?}");
    assert_eq!(report.server_grpc_paths, 0);
    // gamma.rs (messages only) is marked; the two foreign files are left
    // exactly as generated, so `include!` of them builds as without the
    // hook.
    assert_eq!(report.marked_files, 1);
    let after = snapshot(&generated.root);
    for file in &report.foreign_codec_files {
        assert_eq!(after[file], before[file], "{}", file.display());
    }
    // With every file foreign, there is nothing to mark and nothing to
    // refuse on a second run.
    fs::remove_file(generated.root.join("generated").join("gamma.rs")).unwrap();
    let again = rewrite_dir(&generated.root).unwrap();
    assert_eq!((again.marked_files, again.files_rewritten), (0, 0));
}

#[test]
fn prost_include_file_tells_each_file_it_includes_that_it_is_included() {
    let generated = generate(|b| b.include_file("_includes.rs"));
    let out = generated.root.join("generated");
    let stock_alpha = fs::read_to_string(out.join("alpha.v1.rs")).unwrap();
    let report = rewrite_dir(&generated.root).unwrap();
    // The three packages and the include file.
    assert_eq!(report.marked_files, 4);
    let includes = fs::read_to_string(out.join("_includes.rs")).unwrap();
    let check = |includes: &str| {
        for file in ["alpha.v1.rs", "beta.rs", "gamma.rs"] {
            let nested = format!("::grpc_stream_codec::codegen::include_nested!(\"{file}\");");
            assert_eq!(includes.matches(&nested).count(), 1, "{includes}");
            let at = includes.find(&nested).unwrap() + nested.len();
            assert!(
                includes[at..]
                    .trim_start()
                    .starts_with(&format!("include!(\"{file}\");")),
                "{includes}"
            );
        }
    };
    check(&includes);
    assert!(includes.contains(MARK_CALL));

    // One package written anew (the include file unchanged, as prost-build
    // leaves it when its text is the same): nothing is added twice.
    fs::write(out.join("alpha.v1.rs"), stock_alpha).unwrap();
    rewrite_dir(&generated.root).unwrap();
    assert_eq!(
        fs::read_to_string(out.join("_includes.rs")).unwrap(),
        includes
    );
}

#[test]
fn nothing_generated_is_an_error() {
    let messages_only = generate(|b| b.build_server(false).build_client(false));
    let err = rewrite_dir(&messages_only.root).unwrap_err();
    assert!(
        matches!(&err, RewriteError::NothingGenerated { dir, .. } if *dir == messages_only.root),
        "{err}"
    );
    assert!(err.to_string().contains("build_server or build_client"));

    let empty = tempfile::tempdir().unwrap();
    let err = rewrite_dir(empty.path()).unwrap_err();
    assert!(
        matches!(err, RewriteError::NothingGenerated { .. }),
        "{err}"
    );
    let missing = empty.path().join("not-there");
    let err = rewrite_dir(&missing).unwrap_err();
    assert!(
        matches!(&err, RewriteError::Io { path, .. } if *path == missing),
        "{err}"
    );
}

/// Real output edited as if tonic-prost-build had renamed something the
/// hook relies on: the rewrite fails naming the file and the path.
#[test]
fn output_lacking_expected_paths_fails_naming_the_file() {
    struct Case {
        name: &'static str,
        configure: fn(Builder) -> Builder,
        edit: fn(&str) -> String,
        expected: &'static str,
    }
    let cases = [
        Case {
            name: "server Grpc renamed",
            configure: |b| b,
            edit: |t| t.replace("tonic::server::Grpc::new(", "tonic::server::GrpcV2::new("),
            expected: "tonic::server::Grpc",
        },
        Case {
            name: "client Grpc renamed",
            configure: |b| b.build_server(false),
            edit: |t| {
                t.replace("tonic::client::Grpc<", "tonic::client::Channel<")
                    .replace("tonic::client::Grpc::", "tonic::client::Channel::")
            },
            expected: "tonic::client::Grpc",
        },
        Case {
            name: "Streaming renamed",
            configure: |b| b.build_client(false),
            edit: |t| t.replace("tonic::Streaming<", "tonic::RequestStream<"),
            expected: "tonic::Streaming",
        },
        Case {
            name: "codec built another way",
            configure: |b| b.build_client(false),
            edit: |t| {
                t.replace(
                    "let codec = tonic_prost::ProstCodec::default();",
                    "let codec = self.codec.clone();",
                )
            },
            expected: "tonic_prost::ProstCodec",
        },
    ];
    for Case {
        name,
        configure,
        edit,
        expected: expected_path,
    } in cases
    {
        let generated = generate(configure);
        let file = generated.root.join("generated").join("beta.rs");
        let text = fs::read_to_string(&file).unwrap();
        let edited = edit(&text);
        assert_ne!(
            edited, text,
            "{name}: the edit does not apply to real output"
        );
        fs::write(&file, edited).unwrap();
        let before = snapshot(&generated.root);
        let err = rewrite_dir(&generated.root).unwrap_err();
        match &err {
            RewriteError::Source {
                path,
                error:
                    SourceError::MissingPattern {
                        adapter: Adapter::Tonic,
                        expected,
                    },
            } => {
                assert_eq!(path, &file, "{name}");
                assert_eq!(*expected, expected_path, "{name}");
            }
            other => panic!("{name}: unexpected {other}"),
        }
        let message = err.to_string();
        assert!(message.contains("beta.rs"), "{name}: {message}");
        assert!(
            message.contains(&format!("`{expected_path}`")),
            "{name}: {message}"
        );
        assert_eq!(snapshot(&generated.root), before, "{name}: wrote files");
    }
}

/// The hook misused, as a user's crate would: `tests/fixtures/hook-order` is
/// a crate of its own with a real tonic-prost-build `build.rs`, built here
/// with nested `cargo build --offline` runs over one target directory (and
/// so one `OUT_DIR`), in the order that makes each misuse appear. Each
/// misuse must fail the build with the fix named on the first error line.
///
/// The nested builds share the workspace's target directory (the outer
/// `cargo test` does not hold its lock while tests run). The first compiles
/// the tonic stack with the fixture's features; later ones only the fixture.
#[test]
fn a_missing_or_misplaced_hook_fails_the_build_naming_the_fix_first() {
    let fixture = Fixture::copy();

    // Forgotten hook, a service with only unary and server-streaming
    // methods: stock code would compile against the handlers.
    let none = fixture.build("none", "unary", true);
    assert_first_error_names(&none, "hook not called, unary only", INCLUDE_FIX);

    // Forgotten hook with handlers that take grpc-stream-codec's Streaming:
    // rustc's own signature errors exist, and come after the check's.
    let none = fixture.build("none", "all", false);
    assert_first_error_names(&none, "hook not called, streaming", INCLUDE_FIX);
    let text = stderr(&none);
    assert!(
        text.contains("error[E0053]"),
        "the handlers should not match stock code:\n{text}"
    );

    // Hook before tonic-prost-build on a clean OUT_DIR: nothing to rewrite.
    let before_clean = fixture.build("before", "all", true);
    assert_first_error_names(&before_clean, "hook before, clean OUT_DIR", HOOK_FIX);
    assert!(stderr(&before_clean).contains("no tonic-prost-build server or client found"));

    let after = fixture.build("after", "all", false);
    assert!(
        after.status.success(),
        "hook after tonic-prost-build must build:\n{}",
        stderr(&after)
    );

    // Hook before tonic-prost-build on the OUT_DIR of that good build: the
    // files are the last run's, already rewritten.
    let before_built = fixture.build("before", "all", false);
    assert_first_error_names(&before_built, "hook before, built OUT_DIR", HOOK_FIX);
    assert!(stderr(&before_built).contains("were rewritten by an earlier build"));

    // Stale output: OUT_DIR holds stock files (a build without the hook);
    // the hook placed before tonic-prost-build rewrites them and succeeds,
    // then tonic-prost-build writes stock code over them.
    let none = fixture.build("none", "unary", false);
    assert!(!none.status.success());
    let stale = fixture.build("before", "unary", false);
    let text = stderr(&stale);
    assert!(
        !text.contains("failed to run custom build command"),
        "the hook should have succeeded on the stock files:\n{text}"
    );
    assert_first_error_names(&stale, "hook before, stock OUT_DIR", INCLUDE_FIX);

    // Put in the right place, the hook builds from that state (tonic-prost-build
    // then leaves the identical stock file unwritten).
    let fixed = fixture.build("after", "unary", false);
    assert!(fixed.status.success(), "{}", stderr(&fixed));
}

/// What `include_proto!`'s check says: the fix.
const INCLUDE_FIX: &str = "grpc_stream_codec::tonic::build::rewrite_out_dir() did not run after \
                           tonic_prost_build wrote it. In build.rs, call it after tonic_prost_build's \
                           compile call (compile_protos or compile_fds), not before";
/// What the hook's own errors say: the fix.
const HOOK_FIX: &str = "In build.rs, call grpc_stream_codec::tonic::build::rewrite_out_dir() after \
                        tonic_prost_build's compile call";

fn assert_first_error_names(output: &std::process::Output, case: &str, fix: &str) {
    let text = stderr(output);
    assert!(!output.status.success(), "{case}: the build succeeded");
    let first = text
        .lines()
        .find(|line| line.starts_with("error"))
        .unwrap_or_else(|| panic!("{case}: no error line:\n{text}"));
    assert!(
        first.contains(fix),
        "{case}: the first error line does not name the fix:\n{text}"
    );
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The fixture copied under `target/tmp`, with the repository's absolute path
/// and the workspace's Cargo.lock (so versions match and `--offline` works),
/// built in the workspace's target directory.
struct Fixture {
    dir: PathBuf,
    target: PathBuf,
    step: std::cell::Cell<u32>,
}

impl Fixture {
    fn copy() -> Self {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = manifest.join("../..").canonicalize().unwrap();
        let source = manifest.join("tests/fixtures/hook-order");
        // `<target>/tmp`, which cargo makes for integration tests.
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        // One copy per checkout: worktrees of this repository may share a
        // target directory, and a test in another must not overwrite it.
        let dir = tmp.join(format!("tonic-hook-order-{:016x}", {
            use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
            BuildHasherDefault::<DefaultHasher>::default().hash_one(&root)
        }));
        let _ = fs::remove_dir_all(&dir);
        for file in [
            "build.rs",
            "src/lib.rs",
            "proto/plain.proto",
            "proto/flow.proto",
        ] {
            let to = dir.join(file);
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            fs::copy(source.join(file), &to).unwrap();
        }
        let cargo_toml = fs::read_to_string(source.join("Cargo.toml")).unwrap();
        let relative = "path = \"../../../../..\"";
        assert_eq!(cargo_toml.matches(relative).count(), 2, "{cargo_toml}");
        let absolute = format!("path = {:?}", root.display().to_string());
        fs::write(
            dir.join("Cargo.toml"),
            cargo_toml.replace(relative, &absolute),
        )
        .unwrap();
        fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        Fixture {
            dir,
            target: tmp
                .parent()
                .expect("CARGO_TARGET_TMPDIR is <target>/tmp")
                .to_path_buf(),
            step: std::cell::Cell::new(0),
        }
    }

    fn build(&self, order: &str, protos: &str, clean: bool) -> std::process::Output {
        // A new value each time, so cargo runs the build script every time.
        self.step.set(self.step.get() + 1);
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        std::process::Command::new(cargo)
            .args(["build", "--offline", "--quiet", "--color", "never"])
            .arg("--manifest-path")
            .arg(self.dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&self.target)
            .env("HOOK_ORDER", order)
            .env("FIXTURE_PROTOS", protos)
            .env("FIXTURE_CLEAN", if clean { "1" } else { "0" })
            .env("FIXTURE_STEP", self.step.get().to_string())
            // What the outer build set for this test must not steer the
            // nested one.
            .env_remove("OUT_DIR")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET_DIR")
            .output()
            .unwrap()
    }
}
