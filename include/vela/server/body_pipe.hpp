#pragma once
// Internal (namespace detail): shared by the server's drivers and vela::testing.
// What the protocol drivers know of bodies streamed from coroutines (stream_body, sse): a
// pulled piece may be "nothing yet", and a driver that drops a body says so.

#include <functional>

#include "vela/base/unique_function.hpp"
#include "vela/http/response.hpp"

namespace vela::detail {

/// When `source` is a producer's pipe with nothing to give now (it returned an empty
/// string): keeps `wake`, run on the loop once data or the end is there, and returns true.
bool body_pending(Response::BodySource& source, UniqueFunction wake);
/// The driver drops `source` (the client went away, the stream was reset, the connection
/// closed): a producer's writes return false from now on.
void body_dropped(Response::BodySource& source) noexcept;
/// Where BodyWriter::draining() looks on this thread (the worker's draining flag).
void set_loop_draining_flag(const bool* flag) noexcept;
/// True when this thread's server worker is draining.
bool loop_draining() noexcept;
/// True while a stream producer runs on this thread.
bool producers_running() noexcept;
/// Called on this thread each time a stream producer returns (nullptr: nothing).
void set_producer_done_hook(std::function<void()> hook);
/// Ends this thread's endless streams (sse()) after what they queued: the worker drains.
void end_streams_for_drain();
/// Destroys this thread's producers still suspended once its loop has stopped (asleep or
/// awaiting something that will never resume them now).
void destroy_suspended_producers() noexcept;

}  // namespace vela::detail
