//! Generates `grpc.testing` (grpc's interop protos, vendored in `proto/`)
//! twice, without a system `protoc`:
//!
//! - `$OUT_DIR/tonic/`: tonic-prost-build's output, rewritten by
//!   grpc-stream-codec's tonic build hook onto its full framing;
//! - `$OUT_DIR/volo/volo_gen.rs`: volo-build's output, rewritten by the
//!   volo build hook onto the volo adapter.

use std::io;
use std::path::{Path, PathBuf};

const PROTO_ROOT: &str = "proto";
const PROTOS: [&str; 3] = [
    "src/proto/grpc/testing/test.proto",
    "src/proto/grpc/testing/messages.proto",
    "src/proto/grpc/testing/empty.proto",
];

fn main() -> io::Result<()> {
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={PROTO_ROOT}/{proto}");
    }
    let out_dir = PathBuf::from(
        std::env::var_os("OUT_DIR").ok_or_else(|| io::Error::other("OUT_DIR unset"))?,
    );

    let tonic_dir = out_dir.join("tonic");
    std::fs::create_dir_all(&tonic_dir)?;
    let descriptors = protox::compile([PROTOS[0]], [PROTO_ROOT]).map_err(io::Error::other)?;
    tonic_prost_build::configure()
        .bytes(".")
        .out_dir(&tonic_dir)
        .compile_fds(descriptors)?;
    grpc_stream_codec::tonic::build::rewrite_dir(&tonic_dir).map_err(io::Error::other)?;

    let volo_dir = out_dir.join("volo");
    let root = Path::new(PROTO_ROOT);
    volo_build::Builder::protobuf()
        .add_service(root.join(PROTOS[0]))
        .include_dirs(vec![root.to_path_buf()])
        .out_dir(&volo_dir)
        .write()
        .map_err(|err| io::Error::other(format!("volo-build: {err}")))?;
    grpc_stream_codec::volo::build::rewrite_dir(&volo_dir).map_err(io::Error::other)?;
    Ok(())
}
