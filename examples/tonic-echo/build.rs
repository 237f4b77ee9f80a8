//! Compiles the Echo proto twice without a system `protoc`: once with
//! grpc-stream-codec's tonic codec and once with tonic's stock prost codec,
//! so the same service can be served (and called) either way; and a third
//! time for grpc-stream-codec's full framing, rewritten by its build hook.

use std::io;
use std::path::PathBuf;

const PROTO: &str = "../../proto/echo.proto";

fn main() -> io::Result<()> {
    println!("cargo:rerun-if-changed={PROTO}");
    let out_dir = PathBuf::from(
        std::env::var_os("OUT_DIR").ok_or_else(|| io::Error::other("OUT_DIR unset"))?,
    );
    let descriptors = protox::compile([PROTO], ["../../proto"]).map_err(io::Error::other)?;

    let adapter = out_dir.join("adapter");
    std::fs::create_dir_all(&adapter)?;
    tonic_prost_build::configure()
        .codec_path("grpc_stream_codec::tonic::ProstCodec")
        .bytes(".")
        .out_dir(&adapter)
        .compile_fds(descriptors.clone())?;

    let stock = out_dir.join("stock");
    std::fs::create_dir_all(&stock)?;
    // The stock services reuse the adapter module's message types, so one
    // service implementation and one client helper serve both.
    tonic_prost_build::configure()
        .extern_path(".streamcodec.echo.v1", "crate::adapter")
        .out_dir(&stock)
        .compile_fds(descriptors.clone())?;

    // Full framing: the same generated code, pointed at grpc-stream-codec's
    // `Grpc`, `Streaming` and service traits by the build hook.
    let full = out_dir.join("full");
    std::fs::create_dir_all(&full)?;
    tonic_prost_build::configure()
        .codec_path("grpc_stream_codec::tonic::ProstCodec")
        .extern_path(".streamcodec.echo.v1", "crate::adapter")
        .out_dir(&full)
        .compile_fds(descriptors)?;
    grpc_stream_codec::tonic::build::rewrite_dir(&full).map_err(io::Error::other)?;
    Ok(())
}
