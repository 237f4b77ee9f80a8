// build.rs: generate as usual, then point the generated code at this crate.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(["proto/echo.proto"], ["proto"])?;
    tonic_prost_build::configure()
        // Optional: every `bytes` field becomes `bytes::Bytes` (not `Vec<u8>`).
        .bytes(".")
        .compile_fds(fds)?;
    grpc_stream_codec::tonic::build::rewrite_out_dir()?;
    Ok(())
}
