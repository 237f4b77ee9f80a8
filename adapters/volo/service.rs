//! The one shape of every service this adapter wraps around another (the
//! service of each of its layers): a struct with the inner service in its
//! field `inner`, whose `call` does the layer's work around one await of
//! the inner call. The bounds are the same for all of them (the inner
//! service shared between tasks, request and response sent between them),
//! so they are written here once and each layer states only its work.

/// Implements motore's `Service` for `$name<S>` with `call`'s body given
/// as a closure of the service, the context and the request:
///
/// - `wrap_service!($name on $cx, |this, cx, req| { .. })`: a service of
///   volo-grpc calls in context `$cx` (`Request<T>` to `Response<U>`);
/// - `wrap_service!($name, |this, cx, req| { .. })`: any context and
///   request, the inner service's response.
macro_rules! wrap_service {
    ($name:ident on $cx:ty, |$this:ident, $call_cx:ident, $req:pat_param| $body:block) => {
        impl<S, T, U> ::motore::service::Service<$cx, ::volo_grpc::Request<T>> for $name<S>
        where
            S: ::motore::service::Service<
                    $cx,
                    ::volo_grpc::Request<T>,
                    Response = ::volo_grpc::Response<U>,
                > + Sync,
            T: Send,
            U: Send,
        {
            type Response = ::volo_grpc::Response<U>;
            type Error = S::Error;

            async fn call(
                &self,
                $call_cx: &mut $cx,
                $req: ::volo_grpc::Request<T>,
            ) -> Result<::volo_grpc::Response<U>, S::Error> {
                let $this = self;
                $body
            }
        }
    };
    ($name:ident, |$this:ident, $call_cx:ident, $req:pat_param| $body:block) => {
        impl<Cx, Req, S> ::motore::service::Service<Cx, Req> for $name<S>
        where
            S: ::motore::service::Service<Cx, Req> + Sync,
            Cx: Send,
            Req: Send,
        {
            type Response = S::Response;
            type Error = S::Error;

            async fn call(&self, $call_cx: &mut Cx, $req: Req) -> Result<S::Response, S::Error> {
                let $this = self;
                $body
            }
        }
    };
}

pub(super) use wrap_service;
