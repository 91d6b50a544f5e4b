#pragma once
// The seam between the server and the application: the server knows this interface and
// nothing about routing. The web layer's App implements it with its router; tests and other
// protocols (HTTP/2 streams later) use the same interface and the same Request/Response.

#include <coroutine>

#include "vela/http/request.hpp"
#include "vela/http/response.hpp"

namespace vela {

/// Where an asynchronous handler delivers its response.
class ResponseSink {
  public:
    /// Destroys the sink.
    virtual ~ResponseSink() = default;
    /// Delivers the response for the request being handled; call exactly once.
    virtual void complete(Response&& r) = 0;
    /// Called by an asynchronous handler right after starting its work, with the coroutine
    /// that will call complete(). If complete() has not run by shutdown's deadline, the server
    /// destroys `work` to abandon the request. (Ignored when complete() already ran.)
    virtual void pending(std::coroutine_handle<> work) { (void)work; }
};

/// What the server calls for every request (App implements it with its router).
class HttpHandler {
  public:
    /// Destroys the handler.
    virtual ~HttpHandler() = default;
    /// Handles `req`. Returns true when `out` holds the response now. Returns false when the
    /// response will be delivered through `sink.complete()` (possibly before this returns);
    /// `req` stays valid until then. Exceptions escaping become a 500.
    virtual bool handle(Request& req, Response& out, ResponseSink& sink) = 0;
    /// Asked when a request's head is in and its body still arriving: true when its route
    /// reads the body as a stream (it is then dispatched at once, with req.body_stream()
    /// fed as bytes arrive). The router may bind path parameters into `req` meanwhile.
    virtual bool streams_body(Request& req) {
        (void)req;
        return false;
    }
};

}  // namespace vela
