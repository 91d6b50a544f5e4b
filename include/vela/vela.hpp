#pragma once
// vela: everything a typical application includes.

#include "vela/async/task.hpp"
#include "vela/base/log.hpp"
#include "vela/http/method.hpp"
#include "vela/http/request.hpp"
#include "vela/http/response.hpp"
#include "vela/http/status.hpp"
#include "vela/json/json.hpp"
#include "vela/net/readiness.hpp"
#include "vela/reactor/loop.hpp"
#include "vela/server/server.hpp"
#include "vela/server/stream.hpp"
#include "vela/server/websocket.hpp"
#include "vela/tls/context.hpp"
#include "vela/web/app.hpp"
#include "vela/web/compression.hpp"
#include "vela/web/extract.hpp"
