//! Generates the Echo client (stock tonic codec) the benchmark drives every
//! server with.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let proto = proto_dir.join("echo.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let descriptors = protox::compile([&proto], [&proto_dir])?;
    tonic_prost_build::configure()
        .build_server(false)
        .bytes(".")
        .compile_fds(descriptors)?;
    Ok(())
}
