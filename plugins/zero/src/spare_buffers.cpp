#include "spare_buffers.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace strata::zero {

SpareBuffers::SpareBuffers(const sdk::Host& host) : host_(host) {
  const char* env = std::getenv("STRATA_ZERO_SPARE_BUFFERS");
  keep_ = env == nullptr || std::strcmp(env, "0") != 0;
}

Buffer<unsigned char> SpareBuffers::take(uint64_t bytes, strata_mem_category category,
                                         bool zeroed) {
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  for (auto it = spares_.begin(); it != spares_.end(); ++it) {
    if (it->buffer.size() != bytes || it->category != category) continue;
    Buffer<unsigned char> found = std::move(it->buffer);
    spares_.erase(it);
    spare_ -= bytes;
    if (zeroed) Memory(host_).zero(found.data(), bytes);
    return found;
  }
  trim();  // what is in use grew: the spares shrink to stay within the peak
  if (zeroed) return Buffer<unsigned char>(host_, bytes, category);
  return Buffer<unsigned char>(host_, bytes, category, Uninitialized{});
}

void SpareBuffers::give(Buffer<unsigned char> buffer, strata_mem_category category) {
  if (buffer.data() == nullptr) return;
  const uint64_t bytes = buffer.size();
  used_ -= std::min(used_, bytes);
  if (!keep_ || used_ + spare_ + bytes > peak_) return;  // freed here
  spare_ += bytes;
  spares_.push_back({std::move(buffer), category});
}

void SpareBuffers::trim() {
  size_t drop = 0;  // the oldest spares go first
  while (drop < spares_.size() && used_ + spare_ > peak_) {
    spare_ -= spares_[drop].buffer.size();
    ++drop;
  }
  spares_.erase(spares_.begin(), spares_.begin() + static_cast<std::ptrdiff_t>(drop));
}

void SpareBuffers::clear() {
  spares_.clear();
  spare_ = 0;
}

}  // namespace strata::zero
