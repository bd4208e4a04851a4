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

// Scratch that an instance keeps from create() to destroy() for a step every call of some
// collective takes (one at a time, by the instance's thread rules): `bytes` allocated once, so
// each call writes pages already faulted in. A fresh allocation per call costs a page fault per
// 4 KiB page and the kernel's zeroing of it (measured in bench/allreduce's 2 x 2 run, 2026-12-08:
// about a tenth of a two-level 1 MiB allreduce's CPU time). The kept size never changes, so the
// instance's STRATA_MEM_COMM_BUFFERS is the same between calls from create() to destroy(); a call
// that needs more gets a buffer of its own for the call (lease()).
class KeptScratch {
 public:
  // `bytes` may be 0: every lease is then a buffer of its own. The Host's table must outlive it.
  // Throws sdk::Error (STRATA_ERR_OUT_OF_MEMORY) when the host refuses the allocation.
  KeptScratch(const Host& host, size_t bytes)
      : host_(host), kept_(bytes > 0 ? Scratch(host, bytes) : Scratch()), bytes_(bytes) {}

  // `bytes` of scratch for one call: the kept buffer when it is that large, else one freed with
  // the lease. One lease of the kept buffer at a time (the caller's collectives run one at a time):
  // a second while the first lives throws sdk::Error (STRATA_ERR_INTERNAL).
  class Lease {
   public:
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() {
      if (owner_ != nullptr) owner_->leased_ = false;
    }
    void* data() const { return data_; }

   private:
    friend class KeptScratch;
    Lease(const KeptScratch& owner, size_t bytes) {
      if (bytes <= owner.bytes_) {
        if (owner.leased_) fail(STRATA_ERR_INTERNAL, "KeptScratch: leased again while leased");
        owner.leased_ = true;
        owner_ = &owner;
        data_ = owner.kept_.data();
      } else {
        own_ = Scratch(owner.host_, bytes);
        data_ = own_.data();
      }
    }
    const KeptScratch* owner_ = nullptr;
    Scratch own_;
    void* data_ = nullptr;
  };
  Lease lease(size_t bytes) const { return Lease(*this, bytes); }
  size_t bytes() const { return bytes_; }

 private:
  Host host_;
  Scratch kept_;
  size_t bytes_ = 0;
  mutable bool leased_ = false;
};

}  // namespace strata::sdk::comm
