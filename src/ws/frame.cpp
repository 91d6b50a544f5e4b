#include "vela/ws/frame.hpp"
