//! The Echo messages (`proto/echo.proto`) and the stock tonic client the
//! default workloads drive every server with.

#![allow(clippy::all, missing_docs)]

tonic::include_proto!("streamcodec.echo.v1");
