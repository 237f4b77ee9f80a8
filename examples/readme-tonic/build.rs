// build.rs: generate the service with this crate's codec; no system protoc.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(["proto/echo.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .codec_path("grpc_stream_codec::tonic::ProstCodec")
        // Optional: every `bytes` field becomes `bytes::Bytes` (not `Vec<u8>`).
        .bytes(".")
        .compile_fds(fds)?;
    Ok(())
}
