//! Building and starting the example servers as separate processes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::arms::Arm;
use crate::workspace_root;

/// Builds the example server binaries in release mode, one package per
/// cargo invocation: built together, cargo would unify their dependencies'
/// features, and volo-grpc's turn on `tracing`'s `log` feature, which costs
/// every tonic arm about 7% more CPU per stream (callgrind) than a tonic
/// service built on its own, as users build theirs. With `feature_off`, each
/// example server is first built with its `exporter` feature in place of its
/// defaults (the same Prometheus exporter, without the crate's
/// `opentelemetry` feature) and copied aside ([`crate::arms::VOLO_OFF`],
/// [`crate::arms::TONIC_OFF`]).
pub fn build_servers(feature_off: bool) {
    let build = |args: &[&str]| {
        assert!(cargo_release("build", args), "building {args:?} failed");
    };
    if feature_off {
        eprintln!("building the example servers without metrics (release)...");
        let off = [
            ("tonic-echo", "tonic-echo-server", crate::arms::TONIC_OFF),
            ("volo-echo", "volo-echo-server", crate::arms::VOLO_OFF),
        ];
        for (package, binary, copy) in off {
            let mut args = vec!["-p", package, "--bin", binary];
            args.extend(FEATURE_OFF);
            build(&args);
            copy_binary(binary, copy);
        }
    }
    eprintln!("building the example servers (release)...");
    let builds: [&[&str]; 3] = [
        &["-p", "tonic-echo", "--bins"],
        &["-p", "volo-echo", "--bins"],
        &["-p", "e2e-bench", "--bin", "bare-echo-server"],
    ];
    for package in builds {
        build(package);
    }
}

/// The cargo flags of a server built without the crate's `opentelemetry`
/// feature: the example's `exporter` feature in place of its defaults, so
/// both builds link the OpenTelemetry SDK and its Prometheus exporter (the
/// application's own code, which moves where the hot code falls: 0.4 MB
/// here) and differ only by the feature (docs/observability.md).
const FEATURE_OFF: [&str; 3] = ["--no-default-features", "--features", "exporter"];

/// Runs `cargo <subcommand> --release <args>` in the workspace; whether it
/// succeeded.
fn cargo_release(subcommand: &str, args: &[&str]) -> bool {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    Command::new(cargo)
        .current_dir(workspace_root())
        .args([subcommand, "--release"])
        .args(args)
        .status()
        .unwrap_or_else(|err| panic!("run cargo {subcommand}: {err}"))
        .success()
}

/// Copies the built `binary` aside as `copy`, in the same directory.
fn copy_binary(binary: &str, copy: &str) {
    let dir = crate::bin_dir();
    std::fs::copy(dir.join(binary), dir.join(copy))
        .unwrap_or_else(|err| panic!("copy {binary} to {copy}: {err}"));
}

/// The example servers `--layouts` relinks: (package, binary, whether
/// built as the feature-off arm ([`FEATURE_OFF`]), the name of its copy).
const LAID_OUT: [(&str, &str, bool, &str); 5] = [
    (
        "tonic-echo",
        "tonic-echo-server",
        false,
        "tonic-echo-server",
    ),
    ("volo-echo", "volo-echo-server", false, "volo-echo-server"),
    ("e2e-bench", "bare-echo-server", false, "bare-echo-server"),
    (
        "tonic-echo",
        "tonic-echo-server",
        true,
        crate::arms::TONIC_OFF,
    ),
    ("volo-echo", "volo-echo-server", true, crate::arms::VOLO_OFF),
];

/// The copy of `binary` linked in layout `seed`.
pub fn laid_out(binary: &str, seed: u32) -> String {
    format!("{binary}-layout-{seed}")
}

/// Relinks every example server (and, with `feature_off`, its build
/// without the metrics feature) once per layout seed `1..=count`, each time
/// with its sections in the order lld shuffles them into by that seed, and
/// copies each to [`laid_out`]'s name. Only the binary's own crate is
/// rebuilt: the flag goes to its `rustc` alone. Run before
/// [`build_servers`], which puts the usual binaries back.
pub fn build_layouts(count: u32, feature_off: bool) {
    for seed in 1..=count {
        eprintln!("relinking the example servers in layout {seed} of {count}...");
        for (package, binary, without_defaults, copy) in LAID_OUT {
            if without_defaults && !feature_off {
                continue;
            }
            let shuffle = format!("link-arg=-Wl,--shuffle-sections=*={seed}");
            let mut args = vec!["-p", package, "--bin", binary];
            if without_defaults {
                args.extend(FEATURE_OFF);
            }
            args.extend(["--", "-C", &shuffle]);
            assert!(
                cargo_release("rustc", &args),
                "relinking {binary} in layout {seed} failed (lld, the default linker of \
                 x86_64 Linux since Rust 1.90, is needed)"
            );
            copy_binary(binary, &laid_out(copy, seed));
        }
    }
}

/// A running server process.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    /// `127.0.0.1:PORT` the server listens on.
    pub addr: String,
}

impl Server {
    /// Starts the arm's server on an ephemeral port, pinned to CPU 0 with one
    /// runtime worker thread, and waits until it listens.
    pub fn start(arm: Arm) -> Server {
        let (binary, flags) = arm.command();
        Server::spawn(binary, flags)
    }

    /// [`Server::start`], with the arm's binary as linked in layout `seed`
    /// by [`build_layouts`] when there is one.
    pub fn start_laid_out(arm: Arm, seed: Option<u32>) -> Server {
        let (binary, flags) = arm.command();
        match seed {
            Some(seed) => Server::spawn(&laid_out(binary, seed), flags),
            None => Server::spawn(binary, flags),
        }
    }

    /// Starts `binary` (a binary of this workspace) with `flags`, as
    /// [`Server::start`] does.
    pub fn spawn<S: AsRef<std::ffi::OsStr>>(binary: &str, flags: &[S]) -> Server {
        let path = crate::bin_dir().join(binary);
        let mut command = if crate::measure::cpu_count() > 1 {
            let mut command = Command::new("taskset");
            command.arg("-c").arg("0").arg(&path);
            command
        } else {
            Command::new(&path)
        };
        command
            .args(flags)
            .args(["--listen", "127.0.0.1:0", "--report-memory"])
            .env("TOKIO_WORKER_THREADS", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command
            .spawn()
            .unwrap_or_else(|err| panic!("start {}: {err}", path.display()));
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let addr = loop {
            let mut line = String::new();
            if stdout.read_line(&mut line).expect("read server stdout") == 0 {
                panic!("{binary} exited before listening");
            }
            if let Some(addr) = line.trim().strip_prefix("listening on ") {
                break addr.to_owned();
            }
        };
        Server {
            child,
            stdin,
            stdout,
            addr,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Live heap bytes as the server's counting allocator reports them, if
    /// the server supports `--report-memory`.
    pub fn live_bytes(&mut self) -> Option<u64> {
        let stdin = self.stdin.as_mut()?;
        writeln!(stdin, "memory").ok()?;
        stdin.flush().ok()?;
        let mut line = String::new();
        self.stdout.read_line(&mut line).ok()?;
        line.trim().strip_prefix("live_bytes ")?.parse().ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
