//! A user's crate built by a test: a fixture directory (a crate outside the
//! workspace, depending on grpc-stream-codec by a relative path) copied
//! under the test's temporary directory with the repository's absolute path
//! and the workspace's Cargo.lock (so versions match and `--offline`
//! works), then built with nested `cargo build` runs in the workspace's
//! target directory, where the dependencies are already compiled: only the
//! fixture itself is built anew. The outer `cargo test` does not hold that
//! directory's lock while tests run; nested builds of tests running side by
//! side take turns on it.

use std::cell::Cell;
use std::fs;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// How the fixtures' manifests name the repository's root.
const RELATIVE_ROOT: &str = "path = \"../../../../..\"";

/// A copied fixture.
pub struct Fixture {
    /// The copy's directory (its `Cargo.toml` is there).
    pub dir: PathBuf,
    target: PathBuf,
    step: Cell<u32>,
}

impl Fixture {
    /// Copies `source` (every file below it) to `<tmp>/<name>-<checkout>`,
    /// `tmp` being the test's `CARGO_TARGET_TMPDIR` and `root` the
    /// repository's root, and names the copy's package `name`. One copy per
    /// checkout: worktrees of the repository may share a target directory.
    /// One package name per copy: cargo keys a path package's build script
    /// output and fingerprints by its name and its path within its
    /// workspace, so two copies of one name would share them.
    pub fn copy(source: &Path, root: &Path, tmp: &Path, name: &str) -> Fixture {
        let root = root.canonicalize().expect("the repository's root");
        let checkout = BuildHasherDefault::<DefaultHasher>::default().hash_one(&root);
        let dir = tmp.join(format!("{name}-{checkout:016x}"));
        let _ = fs::remove_dir_all(&dir);
        copy_dir(source, &dir);
        let manifest = dir.join("Cargo.toml");
        let text = fs::read_to_string(&manifest).expect("the fixture's Cargo.toml");
        assert!(text.contains(RELATIVE_ROOT), "{text}");
        let absolute = format!("path = {:?}", root.display().to_string());
        let text = text.replace(RELATIVE_ROOT, &absolute);
        fs::write(&manifest, renamed(&text, name)).expect("write Cargo.toml");
        fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
        Fixture {
            dir,
            target: tmp
                .parent()
                .expect("CARGO_TARGET_TMPDIR is <target>/tmp")
                .to_path_buf(),
            step: Cell::new(0),
        }
    }

    /// `cargo build --offline` of the copy with `vars` set. `FIXTURE_STEP`
    /// takes a new value each time, so a build script that reads it runs
    /// every time.
    pub fn build(&self, vars: &[(&str, &str)]) -> Output {
        self.cargo("build", vars)
    }

    /// `cargo run --offline` of the copy with `vars` set: builds it as
    /// [`Fixture::build`] does, then runs its binary.
    pub fn run(&self, vars: &[(&str, &str)]) -> Output {
        self.cargo("run", vars)
    }

    fn cargo(&self, subcommand: &str, vars: &[(&str, &str)]) -> Output {
        self.step.set(self.step.get() + 1);
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command
            // Not `--quiet`: it would hide the build script's warnings.
            .args([subcommand, "--offline", "--color", "never"])
            .arg("--manifest-path")
            .arg(self.dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&self.target)
            .env("FIXTURE_STEP", self.step.get().to_string())
            // What the outer build set for the test must not steer the
            // nested one.
            .env_remove("OUT_DIR")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET_DIR");
        for (name, value) in vars {
            command.env(name, value);
        }
        command.output().expect("run cargo")
    }
}

/// `manifest` with its package's `name = ".."` line naming `name`.
fn renamed(manifest: &str, name: &str) -> String {
    let mut done = false;
    let lines: Vec<String> = manifest
        .lines()
        .map(|line| {
            if !done && line.trim_start().starts_with("name = ") {
                done = true;
                format!("name = {name:?}")
            } else {
                line.to_string()
            }
        })
        .collect();
    assert!(done, "no package name in {manifest}");
    lines.join("\n") + "\n"
}

/// The build's stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The first line of a failed build's stderr that starts with `error`
/// (panics, showing stderr, if the build succeeded or has none).
pub fn first_error(output: &Output) -> String {
    let text = stderr(output);
    assert!(!output.status.success(), "the build succeeded:\n{text}");
    match text.lines().find(|line| line.starts_with("error")) {
        Some(line) => line.to_string(),
        None => panic!("no error line:\n{text}"),
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create the copy's directory");
    for entry in fs::read_dir(from).expect("read the fixture") {
        let path = entry.expect("a fixture entry").path();
        let target = to.join(path.file_name().expect("a file name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).expect("copy a fixture file");
        }
    }
}
