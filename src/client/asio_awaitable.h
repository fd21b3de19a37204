// Includes Asio's coroutine support (awaitable, co_spawn, io_context) portably: Boost 1.74's awaitable.hpp
// uses std::exchange without including <utility>, so <utility> must come first. Client headers include this
// instead of those Asio headers.
#pragma once

// clang-format off
#include <utility>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
// clang-format on
