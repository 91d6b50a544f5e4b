#pragma once
// vela_bench_app --redis (redis_routes.cpp).

#include <memory>
#include <string>

#include <vela/server/websocket.hpp>
#include <vela/web/app.hpp>

/// Attaches a RedisBackplane to `hub` and adds GET /limited/local (vela::rate_limit) and
/// GET /limited/redis (vela::RedisRateLimiter); what it returns must outlive app.run().
/// Throws what the Redis client throws for a bad URL.
std::shared_ptr<void> attach_redis(vela::App& app, vela::Hub& hub, const std::string& url);
