//! Generates the Echo service twice from the repo's `proto/echo.proto`:
//! `$OUT_DIR/stock/volo_gen.rs` exactly as volo-build writes it, and
//! `$OUT_DIR/adapter/volo_gen.rs` rewritten to grpc-stream-codec's adapter.
//! A user's build.rs needs only the second half (generate, then rewrite).

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let proto_dir = manifest.join("../../proto");
    let proto = proto_dir.join("echo.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));

    for flavour in ["stock", "adapter"] {
        let dir = out.join(flavour);
        volo_build::Builder::protobuf()
            .add_service(&proto)
            .include_dirs(vec![proto_dir.clone()])
            .out_dir(&dir)
            .write()
            .expect("volo-build generates the Echo service");
    }

    // The same, split into one file per item (split_generated_files), to
    // check the rewrite on that layout too; compiled by `lib.rs`.
    let split = out.join("adapter_split");
    volo_build::Builder::protobuf()
        .add_service(&proto)
        .include_dirs(vec![proto_dir.clone()])
        .out_dir(&split)
        .split_generated_files(true)
        .write()
        .expect("volo-build generates the split Echo service");
    if let Err(err) = grpc_stream_codec::volo::build::rewrite_dir(&split) {
        panic!("rewriting the split Echo service: {err}");
    }

    // A user's build.rs calls `rewrite_out_dir()`; this one keeps a stock
    // copy next to the rewritten one, so it names the directory.
    if let Err(err) = grpc_stream_codec::volo::build::rewrite_dir(out.join("adapter")) {
        panic!("rewriting the generated Echo service: {err}");
    }
}
