// Shared set-up for the multi-rank comm plugin tests: the plugin library (comm_backend.hpp), a
// FakeHost that records the plugin's log, and four live instances. For allreduce-mpi: the default
// config (shared memory when every rank is on this host), a tiny chunk_bytes so that MPI
// allreduces are split into many pieces, a shared-memory one with tiny rounds, and an MPI-only
// one. For allreduce-gloo the same four names are other variants (comm_backend_gloo.cpp).
// Instances live for the whole program because MPI can be initialised only once per process.
#pragma once

#include "reference.hpp"

#include <plugin_harness.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace strata::test::comm {

inline constexpr uint64_t kSmallChunkBytes = 4096;

const strata_plugin_descriptor& descriptor();
const strata_comm_ops& ops();
FakeHost& host();
void* instance();          // default config
// allreduce-mpi: {"chunk_bytes": kSmallChunkBytes, "hierarchical": true} (hierarchical only when
// the ranks span hosts); comm_backend_gloo.cpp says what it is for allreduce-gloo.
void* chunked_instance();
// {"shm_min_bytes": 0, "shm_chunk_bytes": kSmallChunkBytes}: every collective through shared
// memory (world >= 2), in rounds of one page per rank, so small counts already take many rounds.
void* shm_instance();
void* mpi_instance();  // {"shm": false}: the MPI path only
// Whether the plugin under test has a shared-memory path at all.
bool has_shm_path();
// Whether create() logged "shm on (" for this instance (one of the four above).
bool uses_shm(void* instance);
int rank();
int world();

enum class Mode { Blocking, Nonblocking };
const char* mode_name(Mode mode);
inline constexpr Mode kModes[] = {Mode::Blocking, Mode::Nonblocking};

// Runs one collective. Blocking passes req = NULL; non-blocking starts it, polls test() until it
// reports done and then waits. Fails the current test with the plugin's message on an error.
using Start = std::function<strata_status(strata_request* req, strata_error* err)>;
void run(Mode mode, void* self, const Start& start);

// Checks that `bytes` is bitwise identical on every rank (gathered with the plugin's allgather).
void expect_same_on_all_ranks(const Bytes& bytes);

inline strata_buffer view(Bytes& bytes, int32_t dtype) {
  return sdk::host_buffer(bytes.empty() ? nullptr : bytes.data(),
                          bytes.size() / sdk::dtype_size(dtype), dtype);
}

inline constexpr int32_t kAllDtypes[] = {STRATA_F32, STRATA_F16, STRATA_BF16, STRATA_F64,
                                         STRATA_I32, STRATA_I64, STRATA_U8};
inline constexpr int32_t kAllOps[] = {STRATA_SUM, STRATA_AVG, STRATA_MIN, STRATA_MAX};
// 0, 1, one not divisible by 2, 3 or 4, and a few thousand.
inline constexpr uint64_t kCounts[] = {0, 1, 7, 3001};

std::string op_label(int32_t op);

// Every line the plugin has logged (all levels), in order. log_mark() is the current count, so
// that a test can read what one call logged: log_since(mark).
size_t log_mark();
std::vector<std::string> log_since(size_t mark);

// The comm ops table called as ABI 1.3 has it: each call puts its arguments into a
// strata_coll_args (built by sdk::Comm::args) exactly as given, NULL and invalid buffers included,
// and returns the plugin's status with its message in *err, so tests check both.
namespace abi {

strata_status create(const char* config_json, void** self, strata_error* err);

inline strata_status allreduce(void* self, const strata_buffer* send, const strata_buffer* recv,
                               int32_t op, strata_request* req, strata_error* err) {
  strata_coll_args args = sdk::Comm::args(send, recv);
  args.op = op;
  return ops().allreduce(self, &args, req, err);
}

inline strata_status allgather(void* self, const strata_buffer* send, const strata_buffer* recv,
                               strata_request* req, strata_error* err) {
  const strata_coll_args args = sdk::Comm::args(send, recv);
  return ops().allgather(self, &args, req, err);
}

inline strata_status allgatherv(void* self, const strata_buffer* send, const strata_buffer* recv,
                                const uint64_t* recv_counts, const uint64_t* displs,
                                strata_request* req, strata_error* err) {
  strata_coll_args args = sdk::Comm::args(send, recv);
  args.recv_counts = recv_counts;
  args.displs = displs;
  return ops().allgatherv(self, &args, req, err);
}

inline strata_status reduce_scatter(void* self, const strata_buffer* send,
                                    const strata_buffer* recv, int32_t op, strata_request* req,
                                    strata_error* err) {
  strata_coll_args args = sdk::Comm::args(send, recv);
  args.op = op;
  return ops().reduce_scatter(self, &args, req, err);
}

// In place on `buf` (args.recv).
inline strata_status broadcast(void* self, const strata_buffer* buf, int32_t root,
                               strata_request* req, strata_error* err) {
  strata_coll_args args = sdk::Comm::args(nullptr, buf);
  args.root = root;
  return ops().broadcast(self, &args, req, err);
}

inline strata_status barrier(void* self, strata_request* req, strata_error* err) {
  const strata_coll_args args = sdk::Comm::args(nullptr, nullptr);
  return ops().barrier(self, &args, req, err);
}

}  // namespace abi

}  // namespace strata::test::comm
