#include <cuda_runtime_api.h>

#include <string>
#include <strata_common/cuda/kernels.hpp>
#include <strata/plugin.hpp>
#include <vector>

#include "device_ops.hpp"

namespace strata::offload::device {
namespace {

void check(int code, const std::string& what) {
  if (code == 0) return;
  sdk::fail(STRATA_ERR_INTERNAL, what + ": " + cuda::error_string(code));
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

strata_dtype model_dtype_of(HalfType t) { return t == HalfType::bf16 ? STRATA_BF16 : STRATA_F16; }

// The one model dtype of the arrays' copies (f16 when none has a copy).
template <class Arrays>
strata_dtype copy_dtype(std::span<const Arrays> arrays) {
  HalfType seen = HalfType::none;
  for (const Arrays& a : arrays) {
    if (a.copy.data == nullptr || a.copy.type == HalfType::none) continue;
    if (seen != HalfType::none && seen != a.copy.type) {
      sdk::fail(STRATA_ERR_UNSUPPORTED,
                "shards: the device step writes one model dtype, but the shards ask for both f16 "
                "and bf16 copies");
    }
    seen = a.copy.type;
  }
  return model_dtype_of(seen);
}

template <class Arrays>
void* copy_of(const Arrays& a) {
  return a.copy.type == HalfType::none ? nullptr : a.copy.data;
}

}  // namespace

void copy_async(void* dst, const void* src, size_t bytes, void* stream, const char* what) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)), what);
}

void copy(void* dst, const void* src, size_t bytes, void* stream, const char* what) {
  copy_async(dst, src, bytes, stream, what);
  check(cudaStreamSynchronize(as_stream(stream)), what);
}

void fill_zero(void* dst, size_t bytes, void* stream, const char* what) {
  check(cuda::fill_zero(dst, bytes, stream), what);
}

void adam_step(const AdamScalars& s, std::span<const AdamArrays> arrays, void* stream) {
  std::vector<cuda::AdamTensor> t;
  t.reserve(arrays.size());
  for (const AdamArrays& a : arrays) {
    t.push_back({a.param, a.grad, a.exp_avg, a.exp_avg_sq, copy_of(a), a.count});
  }
  check(cuda::adam_step(s, t.data(), t.size(), STRATA_F32, copy_dtype(arrays), stream),
        "offload: fused Adam on the device");
}

void sgd_step(const SgdScalars& s, std::span<const SgdArrays> arrays, void* stream) {
  std::vector<cuda::SgdTensor> t;
  t.reserve(arrays.size());
  for (const SgdArrays& a : arrays) {
    t.push_back({a.param, a.grad, a.momentum_buffer, copy_of(a), a.count});
  }
  check(cuda::sgd_step(s, t.data(), t.size(), STRATA_F32, copy_dtype(arrays), stream),
        "offload: fused SGD on the device");
}

void lion_step(const LionScalars& s, std::span<const LionArrays> arrays, void* stream) {
  std::vector<cuda::LionTensor> t;
  t.reserve(arrays.size());
  for (const LionArrays& a : arrays) t.push_back({a.param, a.grad, a.exp_avg, copy_of(a), a.count});
  check(cuda::lion_step(s, t.data(), t.size(), STRATA_F32, copy_dtype(arrays), stream),
        "offload: fused Lion on the device");
}

struct CopyPipe::Impl {
  cudaStream_t down = nullptr, up = nullptr;
  std::vector<cudaEvent_t> down_done, up_done;
  cudaEvent_t start = nullptr, finish = nullptr;

  ~Impl() {
    for (cudaEvent_t e : down_done) if (e != nullptr) cudaEventDestroy(e);
    for (cudaEvent_t e : up_done) if (e != nullptr) cudaEventDestroy(e);
    if (start != nullptr) cudaEventDestroy(start);
    if (finish != nullptr) cudaEventDestroy(finish);
    if (down != nullptr) cudaStreamDestroy(down);
    if (up != nullptr) cudaStreamDestroy(up);
  }
};

CopyPipe::CopyPipe(size_t buffers) : impl_(new Impl) {
  try {
    check(cudaStreamCreateWithFlags(&impl_->down, cudaStreamNonBlocking), "offload: copy stream");
    check(cudaStreamCreateWithFlags(&impl_->up, cudaStreamNonBlocking), "offload: copy stream");
    const auto event = [](cudaEvent_t* e) {
      check(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "offload: copy event");
    };
    event(&impl_->start);
    event(&impl_->finish);
    impl_->down_done.assign(buffers, nullptr);
    impl_->up_done.assign(buffers, nullptr);
    for (size_t b = 0; b < buffers; ++b) {
      event(&impl_->down_done[b]);
      event(&impl_->up_done[b]);
    }
  } catch (...) {
    delete impl_;  // the destructor does not run for a constructor that throws
    throw;
  }
}

CopyPipe::~CopyPipe() {
  // Copies still queued read and write buffers their owners are about to free.
  if (impl_->down != nullptr) cudaStreamSynchronize(impl_->down);
  if (impl_->up != nullptr) cudaStreamSynchronize(impl_->up);
  delete impl_;
}

void CopyPipe::begin(void* host_stream) {
  check(cudaEventRecord(impl_->start, as_stream(host_stream)), "offload: ordering after the host");
  check(cudaStreamWaitEvent(impl_->down, impl_->start, 0), "offload: ordering after the host");
  check(cudaStreamWaitEvent(impl_->up, impl_->start, 0), "offload: ordering after the host");
}

void CopyPipe::down(void* dst, const void* src, size_t bytes) {
  copy_async(dst, src, bytes, impl_->down, "offload: gradient download");
}
void CopyPipe::down_done(size_t b) {
  check(cudaEventRecord(impl_->down_done[b], impl_->down), "offload: download event");
}
void CopyPipe::wait_down(size_t b) {
  check(cudaEventSynchronize(impl_->down_done[b]), "offload: gradient download");
}
void CopyPipe::up(void* dst, const void* src, size_t bytes) {
  copy_async(dst, src, bytes, impl_->up, "offload: parameter upload");
}
void CopyPipe::up_done(size_t b) {
  check(cudaEventRecord(impl_->up_done[b], impl_->up), "offload: upload event");
}
void CopyPipe::wait_up(size_t b) {
  check(cudaEventSynchronize(impl_->up_done[b]), "offload: parameter upload");
}

void CopyPipe::end(void* host_stream) {
  check(cudaEventRecord(impl_->finish, impl_->up), "offload: upload event");
  check(cudaEventSynchronize(impl_->finish), "offload: parameter upload");
  check(cudaStreamWaitEvent(as_stream(host_stream), impl_->finish, 0),
        "offload: ordering the host after the uploads");
}

}  // namespace strata::offload::device
