// Setting up the shared-memory group at create(): whether the job can use one, and if so the
// segment every rank maps. Collective over the communicator: every rank calls it, and every rank
// comes out with a group or every rank without one (a rank that cannot map the segment turns the
// path off for all, so no rank takes a path its peers do not).
#pragma once

#include "config.hpp"
#include "mpi_comm.hpp"
#include <strata_common/shm_group.hpp>

#include <strata/plugin.hpp>

#include <memory>
#include <string>
#include <utility>

namespace strata::allreduce_mpi {

// The shared-memory group is plugins/common/shm's.
namespace shm = common::shm;

// Bytes recorded in the host's memory report (STRATA_MEM_COMM_BUFFERS) while alive: each rank
// records its share of the segment (its size / ranks), so the job's report sums to the segment.
class AccountedBytes {
 public:
  AccountedBytes() = default;
  AccountedBytes(const sdk::Host& host, int64_t bytes) : host_(host), bytes_(bytes) {
    host_.account(STRATA_MEM_COMM_BUFFERS, STRATA_MEM_HOST, bytes_);
  }
  AccountedBytes(AccountedBytes&& other) noexcept
      : host_(other.host_), bytes_(std::exchange(other.bytes_, 0)) {}
  AccountedBytes& operator=(AccountedBytes&&) = delete;
  ~AccountedBytes() {
    if (bytes_ != 0) host_.account(STRATA_MEM_COMM_BUFFERS, STRATA_MEM_HOST, -bytes_);
  }

 private:
  sdk::Host host_;
  int64_t bytes_ = 0;
};

struct ShmSetup {
  std::unique_ptr<shm::ShmGroup> group;  // nullptr: the collectives use MPI only
  std::string summary;                   // for the create() log line: why not, or what
  AccountedBytes accounted;              // this rank's share of the segment
};

// Throws sdk::Error (STRATA_ERR_COMM) only when MPI itself fails; a segment that cannot be made
// or mapped turns the path off (logged as a warning on the rank that saw why).
ShmSetup set_up_shm(const MpiComm& comm, const Config& config, const sdk::Host& host);

}  // namespace strata::allreduce_mpi
