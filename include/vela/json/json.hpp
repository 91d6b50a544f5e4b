#pragma once
// vela::json: JSON with struct reflection. See codec.hpp for the entry points and
// docs/json.md for the guide.

#include "vela/json/codec.hpp"
#include "vela/json/options.hpp"
#include "vela/json/reader.hpp"
#include "vela/json/reflect.hpp"
#include "vela/json/types.hpp"
#include "vela/json/validate.hpp"
#include "vela/json/value.hpp"
#include "vela/json/writer.hpp"
