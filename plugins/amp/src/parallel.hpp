// Splits large element loops over threads. Threads are started per call rather than pooled: a
// call only goes parallel above kParallelMin elements (a millisecond or more of memory traffic),
// where starting a thread costs a few percent at most, and per-call threads keep cast() safe to
// call from several threads at once with no shared state.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace strata::amp {

inline constexpr std::size_t kParallelMin = std::size_t{1} << 20;  // elements
inline constexpr std::size_t kParallelGrain = std::size_t{1}
                                              << 18;  // elements per thread, at least

// How many threads to pass here is the plugin's choice (amp_plugin.cpp, strata/cpu_threads.hpp).

// Calls body(begin, end) over contiguous pieces covering [0, n), each piece a multiple of `align`
// elements except the last, on up to `threads` threads (the caller's included). Pieces never
// overlap, so bodies that write only their own range need no locking.
template <class Body>
void parallel_for(std::size_t n, unsigned threads, std::size_t align, Body&& body) {
  const std::size_t useful = n < kParallelMin ? 1 : std::max<std::size_t>(1, n / kParallelGrain);
  const std::size_t parts = std::min<std::size_t>(threads, useful);
  if (parts <= 1) {
    body(std::size_t{0}, n);
    return;
  }
  const std::size_t share = (n + parts - 1) / parts;  // rounded up, so parts * piece >= n
  const std::size_t piece = (share + align - 1) / align * align;
  std::vector<std::jthread> workers;  // joined on scope exit, also when a later start throws
  workers.reserve(parts - 1);
  for (std::size_t p = 1; p < parts; ++p) {
    const std::size_t begin = std::min(n, p * piece), end = std::min(n, begin + piece);
    if (begin < end) workers.emplace_back([&body, begin, end] { body(begin, end); });
  }
  body(std::size_t{0}, std::min(n, piece));
}

}  // namespace strata::amp
