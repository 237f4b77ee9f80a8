//! A fault soak against the volo adapter's server with a 4 MiB receive
//! budget: normal client-streaming calls mixed with cancelled and reset
//! streams, connections dropped mid-message and stalled uploads, for 8 s.
//! Afterwards the budget holds nothing and the heap is back where it was;
//! the server reports the same when stopped with SIGTERM.

#[test]
fn a_fault_soak_leaves_the_budget_empty_and_the_heap_where_it_was() {
    test_support::soak::soak_test(
        env!("CARGO_BIN_EXE_volo-echo-server"),
        &["--receive-budget", "4194304"],
        std::time::Duration::from_secs(8),
    );
}
