//! `ReceiveBudgetLayer` is one type for both frameworks: one layer's clones
//! count the calls it did not bound on either framework in one place.
#![cfg(all(feature = "tonic", feature = "volo"))]

use std::convert::Infallible;

use grpc_stream_codec::budget::{ReceiveBudgetLayer, SharedBudget};
use tower::ServiceExt;

#[tokio::test]
async fn one_layer_counts_unread_budgets_from_both_frameworks() {
    let layer = ReceiveBudgetLayer::new(SharedBudget::new(1 << 20));
    let (for_tonic, for_volo) = (layer.clone(), layer.clone());

    // tonic: an inner service that answers with a message body but never
    // reads the tag, as stock framing would.
    let inner = tower::service_fn(|_: http::Request<()>| async {
        Ok::<_, Infallible>(http::Response::new(()))
    });
    let tonic_service = tower::Layer::layer(&for_tonic, inner);
    let response = tonic_service.oneshot(http::Request::new(())).await;
    drop(response);
    assert_eq!(layer.uncounted_calls(), 1, "the tonic call is not counted");

    // volo-grpc: an inner service that succeeds without creating a
    // `RecvStream`, so no stream takes the budget.
    let inner = motore::service::service_fn(|_: &mut (), _: ()| async { Ok::<_, Infallible>(()) });
    let volo_service = motore::layer::Layer::layer(for_volo, inner);
    motore::service::Service::call(&volo_service, &mut (), ())
        .await
        .unwrap();
    assert_eq!(
        layer.uncounted_calls(),
        2,
        "the volo call adds to the same count"
    );
    assert_eq!(volo_service.uncounted_calls(), 2);
}
