//! The volo build hook misused, as a user's crate would: `tests/fixtures/hook-order`
//! is a crate of its own with a real volo-build `build.rs`, built here with a
//! nested `cargo build --offline`. Its `Hook` service has only unary and
//! server-streaming methods, so nothing but `include_service!`'s check tells
//! stock code from rewritten code; with FIXTURE_PROTOS=all it also has a
//! `Flow` service whose handler takes the adapter's `RecvStream`, so stock
//! code also gets rustc's own errors (E0053), which must come after the
//! check's: the first error line names the fix.
//!
//! One test, builds in a row over the same target directory (and so the
//! same `OUT_DIR`), because that sequence is how the "before" bug appears:
//!
//! 1. hook not called: volo-build's stock file, never marked, must fail
//!    (unary only, then with the streaming service);
//! 2. hook after volo-build: builds;
//! 3. hook before volo-build: the hook "succeeds" on step 2's rewritten file,
//!    volo-build then writes stock code over it; must fail (both services).
//!
//! The nested builds share the workspace's target directory: the outer
//! `cargo test` does not hold its lock while tests run, and the fixture's
//! build dependencies (syn, serde, pilota-build's parsers, ...) are mostly
//! the workspace's own units. Its first build still compiles the volo-grpc
//! stack with the fixture's features (about 75 s of CPU after a workspace build,
//! against 180 s in a directory of its own); later runs build only the
//! fixture, a few seconds. A `cargo build`, not `cargo check`: tests/layouts.rs
//! builds and runs its fixture on the same units, and checked here, CI's test
//! step took 2 minutes longer in all.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The text `include_service!` fails with; the fix it names.
const FIX: &str = "grpc_stream_codec::volo::build::rewrite_out_dir() did not run after volo-build wrote it. \
                   In build.rs, call it after volo-build's `.write()`, not before";

#[test]
fn the_hook_run_before_volo_build_or_not_at_all_fails_the_build_naming_the_fix() {
    let fixture = Fixture::copy();

    let none = fixture.build("none", "unary");
    assert_fails_naming_the_fix(&none, "hook not called");
    // The check's error is the only one: the service compiles against
    // stock code, which is why the check is needed.
    assert!(
        stderr(&none).contains("due to 1 previous error"),
        "unary only: expected exactly the include check's error:\n{}",
        stderr(&none)
    );

    let none = fixture.build("none", "all");
    assert_fails_naming_the_fix(&none, "hook not called, streaming");
    assert!(
        stderr(&none).contains("error[E0053]"),
        "the streaming handler should not match stock code:\n{}",
        stderr(&none)
    );

    let after = fixture.build("after", "all");
    assert!(
        after.status.success(),
        "hook after volo-build must build:\n{}",
        stderr(&after)
    );

    let before = fixture.build("before", "all");
    let text = stderr(&before);
    // The hook itself was happy: it found last run's rewritten file.
    assert!(
        !text.contains("failed to run custom build command"),
        "the hook should have succeeded on the old file:\n{text}"
    );
    assert_fails_naming_the_fix(&before, "hook before volo-build");
}

fn assert_fails_naming_the_fix(output: &Output, case: &str) {
    let text = stderr(output);
    assert!(!output.status.success(), "{case}: the build succeeded");
    let first = text
        .lines()
        .find(|line| line.starts_with("error"))
        .unwrap_or_else(|| panic!("{case}: no error line:\n{text}"));
    assert!(
        first.contains(FIX),
        "{case}: the first error line does not name the fix:\n{text}"
    );
    assert!(
        first.contains("`volo_gen.rs` in OUT_DIR is volo-build's stock output"),
        "{case}: the first error line does not name the file:\n{text}"
    );
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The fixture copied under `target/tmp`, with the repository's absolute path
/// and the workspace's Cargo.lock (so versions match and `--offline` works),
/// built in the workspace's target directory.
struct Fixture {
    dir: PathBuf,
    target: PathBuf,
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
        let dir = tmp.join(format!("volo-hook-order-{:016x}", {
            use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
            BuildHasherDefault::<DefaultHasher>::default().hash_one(&root)
        }));
        let _ = fs::remove_dir_all(&dir);
        for file in [
            "build.rs",
            "src/lib.rs",
            "proto/hook.proto",
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
        }
    }

    fn build(&self, order: &str, protos: &str) -> Output {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        Command::new(cargo)
            .args(["build", "--offline", "--quiet", "--color", "never"])
            .arg("--manifest-path")
            .arg(self.dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&self.target)
            .env("HOOK_ORDER", order)
            .env("FIXTURE_PROTOS", protos)
            // What the outer build set for this test must not steer the
            // nested one.
            .env_remove("OUT_DIR")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET_DIR")
            .output()
            .unwrap()
    }
}
