//! The tonic build hook and include macros on each way users lay out
//! generated code, as a user's crate would: `tests/fixtures/layouts` is a
//! crate of its own whose `build.rs` generates with tonic-prost-build (and
//! tonic-build's manual builder) laid out as `LAYOUT` says, built here with
//! nested `cargo build --offline` runs in the workspace's target directory
//! (as `build_hook.rs` does: only the fixture itself is compiled anew), and
//! run: its binary serves the layout's services and calls each. A layout
//! that includes rewritten files another way than through an include macro
//! must fail with the line to write as its first error.
//!
//! Each test works on a copy of its own, so the tests can run side by side
//! (their builds take turns on the target directory's lock).

use std::fs;
use std::path::Path;
use std::process::Output;

use test_support::fixture::{Fixture, first_error, stderr};

fn fixture(case: &str) -> Fixture {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    Fixture::copy(
        &manifest.join("tests/fixtures/layouts"),
        &manifest.join("../.."),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &format!("tonic-layouts-{case}"),
    )
}

/// The fixture's binary ran and every call of the layout's services
/// answered (src/main.rs).
fn assert_answers(run: &Output) {
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success() && stdout.contains("every call answered"),
        "{stdout}\n{}",
        stderr(run)
    );
}

#[test]
fn several_packages_are_included_into_one_module() {
    let fixture = fixture("two-in-one");
    assert_answers(&fixture.run(&[("LAYOUT", "two-in-one")]));
    assert_answers(&fixture.run(&[("LAYOUT", "include-file")]));
    // One call per file in one module: each call checks its own file.
    assert_answers(&fixture.run(&[("LAYOUT", "two-calls")]));

    // The second package written after the hook: its call names it, though
    // the module's other file carries the mark.
    let between = fixture.build(&[("LAYOUT", "two-calls"), ("HOOK", "between")]);
    let first = first_error(&between);
    assert!(
        first.contains("`layout.plain.rs` in OUT_DIR is tonic-prost-build's stock output"),
        "{}",
        stderr(&between)
    );
}

#[test]
fn committed_code_is_checked_and_hand_written_files_are_left_alone() {
    let fixture = fixture("committed");
    let legacy = fixture.dir.join("src/pb/legacy.rs");
    let hand_written = fs::read_to_string(&legacy).unwrap();

    // A forgotten hook on code generated outside OUT_DIR: the include
    // check's fix is the first error (a unary-only service compiles on
    // stock tonic otherwise).
    let none = fixture.build(&[("LAYOUT", "committed"), ("HOOK", "none")]);
    let first = first_error(&none);
    // (Each file of the call has its error; rustc orders them.)
    assert!(
        first.contains(
            ".rs` is tonic-prost-build's stock output: \
             grpc_stream_codec::tonic::build::rewrite_dir(dir) did not run after \
             tonic_prost_build wrote it"
        ) && first.contains("`pb/layout."),
        "{}",
        stderr(&none)
    );

    // Misplaced: the hook before the generator, on the stock files of the
    // build above. The hook rewrites them, the generator writes stock code
    // over them, and the include check names the fix.
    let before = fixture.build(&[("LAYOUT", "committed"), ("HOOK", "before")]);
    let first = first_error(&before);
    assert!(
        first.contains("grpc_stream_codec::tonic::build::rewrite_dir(dir) did not run after"),
        "{}",
        stderr(&before)
    );

    let after = fixture.run(&[("LAYOUT", "committed")]);
    assert_eq!(fs::read_to_string(&legacy).unwrap(), hand_written);
    assert_answers(&after);
    let generated = fs::read_to_string(fixture.dir.join("src/pb/layout.flow.rs")).unwrap();
    assert!(generated.contains("::grpc_stream_codec::tonic::Streaming"));
}

#[test]
fn committed_code_included_with_include_or_as_a_module_names_the_macro_first() {
    let fixture = fixture("committed-other");
    // tonic's docs after `out_dir`: `include!` of each file. The file's
    // mark names the line to write, as the first error.
    let include = fixture.build(&[("LAYOUT", "committed-include")]);
    assert_first_error_names_include_file(&include);
    // `#[path = ".."] mod name;` of each file: the same.
    let module = fixture.build(&[("LAYOUT", "committed-mod")]);
    assert_first_error_names_include_file(&module);
    // The line it names builds (the files are the same).
    assert_answers(&fixture.run(&[("LAYOUT", "committed")]));
}

/// The first error names grpc-stream-codec's `include_file!` with the path
/// of one of the committed files, the line to write.
fn assert_first_error_names_include_file(build: &Output) {
    let first = first_error(build);
    let names = |file: &str| {
        first.contains(&format!(
            "write `grpc_stream_codec::tonic::include_file!(\"pb/{file}\");`"
        ))
    };
    assert!(
        names("layout.plain.rs") || names("layout.flow.rs"),
        "{}",
        stderr(build)
    );
    assert!(first.contains("mod name { grpc_stream_codec::tonic::include_file!("));
}

#[test]
fn out_dir_code_included_with_include_names_the_macro_first() {
    let fixture = fixture("out-dir-other");
    // `include!(concat!(env!("OUT_DIR"), "/layout.plain.rs"))`, what
    // tonic::include_proto! writes.
    let include = fixture.build(&[("LAYOUT", "out-dir-include")]);
    let first = first_error(&include);
    let names = |package: &str| {
        first.contains(&format!(
            "write `grpc_stream_codec::tonic::include_proto!(\"{package}\");`"
        ))
    };
    assert!(
        names("layout.plain") || names("layout.flow"),
        "{}",
        stderr(&include)
    );

    // prost's include file, with `include!`: the include file names
    // itself; the files it includes are included as they must be.
    let include_file = fixture.build(&[("LAYOUT", "include-file-include")]);
    let first = first_error(&include_file);
    assert!(
        first.contains("write `grpc_stream_codec::tonic::include_proto!(\"_includes\");`"),
        "{}",
        stderr(&include_file)
    );
    assert_eq!(
        stderr(&include_file)
            .matches("error: grpc-stream-codec")
            .count(),
        1,
        "{}",
        stderr(&include_file)
    );
}

#[test]
fn a_mixed_directory_builds_and_names_the_services_left_on_tonic() {
    let fixture = fixture("mixed");
    // Both services answer, from one server: the prost one on full
    // framing, the JSON one on tonic's, its file included with `include!`
    // as tonic's examples do (it carries nothing of grpc-stream-codec).
    let built = fixture.run(&[("LAYOUT", "mixed")]);
    assert_answers(&built);
    let text = stderr(&built);
    let warnings: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("keep tonic's framing"))
        .collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(
        warnings[0]
            .contains("layout.json.Echo in layout.json.Echo.rs (codec crate::codec::JsonCodec)"),
        "{text}"
    );
    assert!(
        warnings[0].contains("include their files with `include!` or `tonic::include_proto!`"),
        "{text}"
    );
    assert!(!warnings[0].contains("layout.plain"), "{text}");

    // grpc-stream-codec's include_proto! of the JSON file: it has no mark,
    // and the error says why it may not.
    let checked = fixture.build(&[("LAYOUT", "mixed-checked")]);
    let first = first_error(&checked);
    assert!(
        first.contains("`layout.json.Echo.rs` in OUT_DIR is tonic-prost-build's stock output")
            && first.contains(
                "keeps tonic's framing and has no mark (the hook's cargo warning names it): \
                 include it with `include!` or `tonic::include_proto!`"
            ),
        "{}",
        stderr(&checked)
    );
}

#[test]
fn hook_errors_say_what_happened_in_this_build_and_name_the_call() {
    let fixture = fixture("no-generation");

    // Nothing generated, now or before (codegen behind a feature that is
    // off, the hook outside it).
    let none = fixture.build(&[("LAYOUT", "committed"), ("GENERATE", "0")]);
    let first = first_error(&none);
    assert!(
        first.contains("nothing was generated there, in this build or an earlier one")
            && first.contains("call grpc_stream_codec::tonic::build::rewrite_dir(dir) after")
            && first.contains("cargo feature"),
        "{}",
        stderr(&none)
    );

    // Generated (and rewritten) by an earlier build, not in this one.
    let generated = fixture.build(&[("LAYOUT", "committed")]);
    assert!(generated.status.success(), "{}", stderr(&generated));
    let earlier = fixture.build(&[("LAYOUT", "committed"), ("GENERATE", "0")]);
    let first = first_error(&earlier);
    assert!(
        first
            .contains("were rewritten by an earlier build and nothing was generated in this build")
            && first.contains("call grpc_stream_codec::tonic::build::rewrite_dir(dir) after"),
        "{}",
        stderr(&earlier)
    );
}
