//! The repository's copy of the Echo proto must stay byte-for-byte equal to
//! the shared one that outside checks drive servers with.

use std::path::Path;

#[test]
fn echo_proto_matches_the_shared_copy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ours = std::fs::read(root.join("proto/echo.proto")).expect("proto/echo.proto exists");
    assert!(ours.starts_with(b"// The Echo service"));
    let shared = root.join("../shared/proto/echo.proto");
    match std::fs::read(&shared) {
        Ok(theirs) => assert!(ours == theirs, "proto/echo.proto differs from {shared:?}"),
        Err(_) => eprintln!("{shared:?} not present; compared nothing"),
    }
}
