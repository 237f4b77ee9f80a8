//! The receive budget as instruments: gauges and counters read from
//! [`Budget::stats`] when the meter collects, so the budget's own paths do
//! no more work than they do unobserved.

use opentelemetry::KeyValue;
use opentelemetry::metrics::Meter;

use crate::budget::Budget;

/// The budget's instrument names, in the crate's own namespace beside
/// A66's.
pub mod budget_names {
    /// Bytes counted against the budget now (gauge, `By`).
    pub const IN_USE: &str = "grpc_stream_codec.receive_budget.in_use";
    /// The most bytes ever counted at once (gauge, `By`).
    pub const PEAK: &str = "grpc_stream_codec.receive_budget.peak";
    /// The budget's capacity (gauge, `By`).
    pub const CAPACITY: &str = "grpc_stream_codec.receive_budget.capacity";
    /// Streams waiting for memory now (gauge, `{stream}`).
    pub const WAITING: &str = "grpc_stream_codec.receive_budget.waiting";
    /// Grants that had to wait, since the budget was made (counter,
    /// `{wait}`).
    pub const WAITS: &str = "grpc_stream_codec.receive_budget.waits";
    /// Waits that ended in `RESOURCE_EXHAUSTED` (counter, `{wait}`).
    pub const TIMED_OUT: &str = "grpc_stream_codec.receive_budget.timed_out";
    /// The attribute naming the budget, as the application called it.
    pub const BUDGET: &str = "grpc_stream_codec.budget";
}

/// Reports `budget` on `meter` under `name` (attribute
/// `grpc_stream_codec.budget`) for as long as the meter's provider lives:
/// bytes in use, peak, capacity, streams waiting, waits and time-outs.
///
/// ```
/// use grpc_stream_codec::budget::{Budget, SharedBudget};
/// use opentelemetry::metrics::MeterProvider as _;
/// # let provider = opentelemetry::metrics::noop::NoopMeterProvider::new();
///
/// let budget: Budget = SharedBudget::new(256 << 20).into();
/// grpc_stream_codec::observe::observe_budget(&provider.meter("grpc-stream-codec"), "requests", &budget);
/// ```
pub fn observe_budget(meter: &Meter, name: &'static str, budget: &Budget) {
    let attributes = [KeyValue::new(budget_names::BUDGET, name)];
    macro_rules! observed {
        ($kind:ident, $name:expr, $unit:literal, $description:literal, |$stats:ident| $value:expr) => {{
            let budget = budget.clone();
            let attributes = attributes.clone();
            meter
                .$kind($name)
                .with_unit($unit)
                .with_description($description)
                .with_callback(move |observer| {
                    let $stats = budget.stats();
                    observer.observe($value as u64, &attributes);
                })
                .build();
        }};
    }
    observed!(
        u64_observable_gauge,
        budget_names::IN_USE,
        "By",
        "Bytes counted against the receive budget",
        |stats| stats.in_use
    );
    observed!(
        u64_observable_gauge,
        budget_names::PEAK,
        "By",
        "Most bytes counted against the receive budget at once",
        |stats| stats.peak
    );
    observed!(
        u64_observable_gauge,
        budget_names::CAPACITY,
        "By",
        "The receive budget's capacity",
        |stats| stats.capacity
    );
    observed!(
        u64_observable_gauge,
        budget_names::WAITING,
        "{stream}",
        "Streams waiting for the receive budget",
        |stats| stats.waiting
    );
    observed!(
        u64_observable_counter,
        budget_names::WAITS,
        "{wait}",
        "Grants that waited for the receive budget",
        |stats| stats.waits
    );
    observed!(
        u64_observable_counter,
        budget_names::TIMED_OUT,
        "{wait}",
        "Waits for the receive budget that timed out",
        |stats| stats.timed_out
    );
}
