//! The volo build hook and include macros on each way users lay out
//! generated code, as a user's crate would: `tests/fixtures/layouts` is a
//! crate of its own whose `build.rs` generates with volo-build laid out as
//! `LAYOUT` says, built here with nested `cargo build --offline` runs in the
//! workspace's target directory (as `hook_order.rs` does: only the fixture
//! itself is compiled anew). A layout that includes a rewritten root
//! another way than through an include macro must fail with the line to
//! write as its first error.
//!
//! Each test works on a copy of its own, so the tests can run side by side
//! (their builds take turns on the target directory's lock).

use std::fs;
use std::path::Path;

use test_support::fixture::{Fixture, first_error, stderr};

fn fixture(case: &str) -> Fixture {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    Fixture::copy(
        &manifest.join("tests/fixtures/layouts"),
        &manifest.join("../.."),
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &format!("volo-layouts-{case}"),
    )
}

#[test]
fn two_roots_are_included_into_one_module() {
    let fixture = fixture("two-roots");
    let built = fixture.build(&[("LAYOUT", "two-roots")]);
    assert!(built.status.success(), "{}", stderr(&built));

    // One call per root in one module: each call checks its own root.
    let two_calls = fixture.build(&[("LAYOUT", "two-calls")]);
    assert!(two_calls.status.success(), "{}", stderr(&two_calls));

    // The second root written after the hook: its call names it, though the
    // module's other root carries the mark.
    let between = fixture.build(&[("LAYOUT", "two-calls"), ("HOOK", "between")]);
    let first = first_error(&between);
    assert!(
        first.contains("`hook_gen.rs` in OUT_DIR is volo-build's stock output"),
        "{}",
        stderr(&between)
    );
}

#[test]
fn committed_code_is_checked_and_hand_written_files_are_left_alone() {
    let fixture = fixture("committed");
    let legacy = fixture.dir.join("src/gen/legacy.rs");
    let hand_written = fs::read_to_string(&legacy).unwrap();

    let none = fixture.build(&[("LAYOUT", "committed"), ("HOOK", "none")]);
    let first = first_error(&none);
    assert!(
        first.contains(
            "`gen/volo_gen.rs` is volo-build's stock output: \
             grpc_stream_codec::volo::build::rewrite_dir(dir) did not run after volo-build wrote it"
        ),
        "{}",
        stderr(&none)
    );

    let after = fixture.build(&[("LAYOUT", "committed")]);
    assert_eq!(fs::read_to_string(&legacy).unwrap(), hand_written);
    assert!(after.status.success(), "{}", stderr(&after));
}

#[test]
fn rewritten_roots_included_another_way_name_the_macro_first() {
    let fixture = fixture("other-ways");
    // `include!(concat!(env!("OUT_DIR"), "/flow_gen.rs"))`, what
    // volo::include_service! writes: each root's mark names the line to
    // write, as the first error.
    let include = fixture.build(&[("LAYOUT", "include")]);
    let first = first_error(&include);
    let names = |root: &str| {
        first.contains(&format!(
            "write `grpc_stream_codec::volo::include_service!(\"{root}\");`"
        ))
    };
    assert!(
        names("flow_gen.rs") || names("hook_gen.rs"),
        "{}",
        stderr(&include)
    );

    // Committed code with `include!`, and as a `mod` item of its own.
    for layout in ["committed-include", "committed-mod"] {
        let built = fixture.build(&[("LAYOUT", layout)]);
        let first = first_error(&built);
        assert!(
            first.contains("write `grpc_stream_codec::volo::include_file!(\"gen/volo_gen.rs\");`")
                && first.contains(
                    "mod name { grpc_stream_codec::volo::include_file!(\"gen/volo_gen.rs\"); }"
                ),
            "{layout}: {}",
            stderr(&built)
        );
    }
    // The line they name builds.
    let checked = fixture.build(&[("LAYOUT", "committed")]);
    assert!(checked.status.success(), "{}", stderr(&checked));
}

#[test]
fn nothing_generated_names_the_call_as_the_first_error() {
    let fixture = fixture("no-generation");
    let none = fixture.build(&[("LAYOUT", "committed"), ("GENERATE", "0")]);
    let first = first_error(&none);
    assert!(
        first.contains("nothing was generated there, in this build or an earlier one")
            && first.contains("call grpc_stream_codec::volo::build::rewrite_dir(dir) after"),
        "{}",
        stderr(&none)
    );
}
