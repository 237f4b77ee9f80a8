// build.rs: generate with volo-build, then point the generated code at
// grpc-stream-codec. Returning the error prints its Display text (what to do).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/echo.proto");
    // Or volo_build::ConfigBuilder::default().write()? with a volo.yml.
    volo_build::Builder::protobuf()
        .add_service("proto/echo.proto")
        .include_dirs(vec!["proto".into()])
        .write()?;
    // After volo-build has written: include_service! checks that it ran then.
    grpc_stream_codec::volo::build::rewrite_out_dir()?;
    Ok(())
}
