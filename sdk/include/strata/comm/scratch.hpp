// strata/comm/scratch.hpp — header-only scratch memory for comm plugins: uninitialised bytes from
// the host's allocator, accounted as STRATA_MEM_COMM_BUFFERS, freed when the owner goes (e.g. the
// f32 accumulation buffer of a half-precision reduction, kept in the request until it completes).
// C++17 or later.
#pragma once

#include <strata/plugin.hpp>

#include <cstddef>
#include <utility>

namespace strata::sdk::comm {

// Move-only owner of `bytes` bytes from host.alloc(); empty when default-constructed or moved
// from. The Host's table must outlive it. Not thread-safe (one owner at a time); the memory itself
// may be used from any thread.
class Scratch {
 public:
  Scratch() = default;
  // Throws sdk::Error (STRATA_ERR_OUT_OF_MEMORY) when the host refuses the allocation.
  Scratch(const Host& host, size_t bytes)
      : host_(host), data_(host.alloc(bytes, STRATA_MEM_COMM_BUFFERS)) {}
  Scratch(Scratch&& other) noexcept
      : host_(other.host_), data_(std::exchange(other.data_, nullptr)) {}
  Scratch& operator=(Scratch&& other) noexcept {
    if (this != &other) {
      if (data_ != nullptr) host_.free(data_);
      host_ = other.host_;
      data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (data_ != nullptr) host_.free(data_);
  }

  void* data() const { return data_; }
  float* floats() const { return static_cast<float*>(data_); }

 private:
  Host host_;
  void* data_ = nullptr;
};

}  // namespace strata::sdk::comm
