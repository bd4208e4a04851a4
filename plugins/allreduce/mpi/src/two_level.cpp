// The two-level allreduce across hosts (config hierarchical, the same number of ranks L on every
// host; MpiComm::two_level): NCCL's and Horovod's split of the work, where every local rank carries
// 1/L of the message across the network instead of one leader per host carrying all of it.
//  1. reduce-scatter within the host through shared memory: local rank r ends with block r of the
//     host's sum (blocks of count / L elements);
//  2. every local rank allreduces its block with the same local rank on the other hosts (L
//     cross-host allreduces in parallel, each over MpiComm::cross());
//  3. allgather of the blocks within the host through shared memory.
// The count % L elements after the last whole block are reduced within the host, across hosts by
// local rank 0 and broadcast within the host. Every rank ends with the same bits: each block is
// one cross-host allreduce's result, copied. The sum order differs from the flat ring's (within
// the host in rank order, then across hosts in MPI's order), so floating-point results equal the
// flat ones up to rounding; integer results and MIN/MAX exactly.
#include "collectives.hpp"
#include "dtypes.hpp"
#include "mpi_process.hpp"

#include <string>
#include <vector>

namespace strata::allreduce_mpi {
namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[512];
  sdk::fail(STRATA_ERR_COMM, std::string(what) + " failed: " + mpi_error_text(rc, text));
}

}  // namespace

void Collectives::two_level_allreduce(void* data, uint64_t count, int32_t dtype, int32_t op) const {
  shm::ShmGroup& host = *host_shm_;
  const int local = host.local_size();
  const size_t element_size = sdk::dtype_size(dtype);
  // AVG is summed here and divided once at the end (the request's epilogue), as on the flat path.
  const int32_t fold = op == STRATA_AVG ? STRATA_SUM : op;
  const MPI_Datatype type = transfer_type(dtype);
  const MPI_Op mpi = mpi_op(op);
  const uint64_t block = count / static_cast<uint64_t>(local);
  char* bytes = static_cast<char*>(data);
  if (block > 0) {
    Scratch slice(host_, block * element_size);
    host.reduce_scatter(data, slice.data(), block, dtype, fold);
    check(MPI_Allreduce(MPI_IN_PLACE, slice.data(), static_cast<int>(block), type, mpi,
                        comm_.cross()),
          "MPI_Allreduce(across hosts)");
    std::vector<uint64_t> counts(static_cast<size_t>(local), block), displs(counts.size());
    for (size_t r = 0; r < displs.size(); ++r) displs[r] = r * block;
    host.allgatherv(slice.data(), data, counts.data(), displs.data(), dtype);
  }
  const uint64_t rest = count - block * static_cast<uint64_t>(local);
  if (rest == 0) return;
  void* tail = bytes + block * static_cast<uint64_t>(local) * element_size;
  host.allreduce(tail, tail, rest, dtype, fold);
  if (host.local_rank() == 0) {
    check(MPI_Allreduce(MPI_IN_PLACE, tail, static_cast<int>(rest), type, mpi, comm_.cross()),
          "MPI_Allreduce(across hosts)");
  }
  host.broadcast(tail, rest, dtype, 0);
}

}  // namespace strata::allreduce_mpi
