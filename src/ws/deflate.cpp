#include "vela/ws/deflate.hpp"
