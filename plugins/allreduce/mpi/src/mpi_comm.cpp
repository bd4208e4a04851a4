#include "mpi_comm.hpp"

#include "mpi_channel.hpp"
#include "mpi_process.hpp"
#include "polite_wait.hpp"

#include <strata/plugin.hpp>
#include <strata_common/config_agreement.hpp>

#include <cstdlib>
#include <string>

namespace strata::allreduce_mpi {

void MpiComm::check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[512];
  sdk::fail(STRATA_ERR_COMM, std::string(what) + " failed: " + mpi_error_text(rc, text));
}

// A process started by a launcher that is not MPI's (strata-run --backend gloo, torchrun) gets an
// MPI singleton: a world of one. Four such ranks would each train alone and finish "successfully";
// say what happened instead.
void MpiComm::refuse_singleton_in_a_larger_job() const {
  const char* env = std::getenv("WORLD_SIZE");
  if (size_ != 1 || env == nullptr) return;
  const long launched = std::strtol(env, nullptr, 10);
  if (launched <= 1) return;
  sdk::fail(STRATA_ERR_COMM,
            "this process was started with WORLD_SIZE=" + std::string(env) +
                " (by strata-run --backend gloo, torchrun or the like), but MPI sees a world of "
                "1 process: start the job with mpirun or strata-run --backend mpi, or use a comm "
                "library that does not need MPI (strata_allreduce_gloo)");
}

void MpiComm::learn_ranks() {
  check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MPI_Comm MpiComm::learn_local_ranks() {
  MPI_Comm node = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  return node;
}

MpiComm::MpiComm(Adopt, MPI_Comm split) : comm_(split) {
  // A sub-group of one in a larger job is ordinary: no singleton check here.
  try {
    learn_ranks();
    MPI_Comm node = learn_local_ranks();
    MPI_Comm_free(&node);
  } catch (...) {
    MPI_Comm_free(&comm_);  // the destructor does not run for a throwing constructor
    throw;
  }
}

MpiComm::MpiComm(const Config& config) {
  check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup(MPI_COMM_WORLD)");
  // A constructor that throws runs no destructor: what set_up made is freed here.
  try {
    set_up(config);
  } catch (...) {
    free_communicators();
    throw;
  }
}

void MpiComm::set_up(const Config& config) {
  const Config::Hierarchy hierarchy = config.hierarchical;
  learn_ranks();
  refuse_singleton_in_a_larger_job();
  // Before the splits below, which ranks given different configs would enter differently.
  const MpiChannel channel(comm_, "comparing the ranks' configs");
  common::config::require_same_on_every_rank(
      "allreduce-mpi", wire_summary(config), size_,
      [&](const void* mine, void* all, size_t bytes) { channel.allgather(mine, all, bytes); });
  MPI_Comm node = learn_local_ranks();
  // On one host there is nothing to save (and the shared-memory path takes the work). The test
  // must give every rank the same answer, since MPI_Comm_split below is collective: local_size_
  // equals size_ on all ranks or on none. A host with one rank takes part with a node
  // communicator of one.
  // Flat: the node communicator goes; `why` says why "auto" stayed flat across hosts.
  const auto stay_flat = [&](const char* why) {
    declined_ = why;
    MPI_Comm_free(&node);
  };
  if (hierarchy == Config::Hierarchy::off || local_size_ == size_) return stay_flat("");
  const bool automatic = hierarchy == Config::Hierarchy::automatic;
  // "auto" takes only the two levels, which need the host's shared memory.
  if (automatic && !config.shm.enabled) return stay_flat("shm false");
  int sizes[2] = {local_size_, -local_size_};  // the largest and the smallest host
  const int rc = MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, comm_);
  if (rc != MPI_SUCCESS) stay_flat("");
  check(rc, "MPI_Allreduce(host sizes)");
  const bool even = sizes[0] == -sizes[1];
  if (automatic && !even) return stay_flat("the hosts hold different numbers of ranks");
  if (automatic && local_size_ == 1) return stay_flat("one rank per host");
  node_ = node;
  check(MPI_Comm_set_errhandler(node_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  two_level_ = even;
  through_leaders_ = hierarchy == Config::Hierarchy::on;
  // Two-level: every local rank allreduces across hosts with its namesakes. Uneven hosts: only
  // the hosts' first ranks do; the others get no cross communicator.
  const int color = two_level_ ? local_rank_ : (local_rank_ == 0 ? 0 : MPI_UNDEFINED);
  check(MPI_Comm_split(comm_, color, rank_, &cross_), "MPI_Comm_split(across hosts)");
  if (cross_ != MPI_COMM_NULL) {
    check(MPI_Comm_set_errhandler(cross_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_size(cross_, &hosts_), "MPI_Comm_size(across hosts)");
  }
  // Every rank learns the number of hosts (the non-leaders of uneven hosts have no cross_).
  check(MPI_Bcast(&hosts_, 1, MPI_INT, 0, comm_), "MPI_Bcast(hosts)");
  if (two_level_) learn_host_grid();
}

// Which global rank holds each (local rank, host) place: reduce_scatter's and allgather's blocks
// belong to global ranks, whatever order the launcher placed them in.
void MpiComm::learn_host_grid() {
  int place[2] = {local_rank_, 0};
  check(MPI_Comm_rank(cross_, &place[1]), "MPI_Comm_rank(across hosts)");
  std::vector<int> places(2 * static_cast<size_t>(size_));
  check(MPI_Allgather(place, 2, MPI_INT, places.data(), 2, MPI_INT, comm_),
        "MPI_Allgather(host grid)");
  host_grid_.assign(static_cast<size_t>(size_), -1);
  for (int g = 0; g < size_; ++g) {
    host_grid_[static_cast<size_t>(places[2 * g]) * hosts_ + places[2 * g + 1]] = g;
  }
}

MpiComm::~MpiComm() { free_communicators(); }

void MpiComm::free_communicators() {
  if (!MpiProcess::usable()) return;
  for (MPI_Comm* c : {&cross_, &node_, &comm_}) {
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
}

// Reduce to the host's first rank, allreduce among the hosts' first ranks, broadcast on the host.
// MPI_IN_PLACE means the input is in `recv`; only a root may pass it to MPI_Reduce.
void MpiComm::hierarchical_allreduce(const void* send, void* recv, int count, MPI_Datatype type,
                                     MPI_Op op) const {
  const bool host_root = local_rank_ == 0;
  const void* input = send == MPI_IN_PLACE && !host_root ? recv : send;
  check(MPI_Reduce(input, host_root ? recv : nullptr, count, type, op, 0, node_),
        "MPI_Reduce(host)");
  if (host_root) {
    check(MPI_Allreduce(MPI_IN_PLACE, recv, count, type, op, cross_), "MPI_Allreduce(hosts)");
  }
  check(MPI_Bcast(recv, count, type, 0, node_), "MPI_Bcast(host)");
}

void MpiComm::allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                        Pending pending) const {
  if (pending == nullptr) {
    if (hierarchical() && through_leaders_) {
      return hierarchical_allreduce(send, recv, count, type, op);
    }
    check(MPI_Allreduce(send, recv, count, type, op, comm_), "MPI_Allreduce");
    return;
  }
  // Three chained steps cannot be one MPI request: a non-blocking allreduce (only where MPI's
  // thread support leaves no progress thread to run blocking calls on) stays flat.
  check(MPI_Iallreduce(send, recv, count, type, op, comm_, &pending->emplace_back()),
        "MPI_Iallreduce");
}

void MpiComm::allreduce_across_hosts(void* data, int count, MPI_Datatype type, MPI_Op op) const {
  check(MPI_Allreduce(MPI_IN_PLACE, data, count, type, op, cross_), "MPI_Allreduce(across hosts)");
}

void MpiComm::reduce_scatter_across_hosts(const void* send, void* recv, int count,
                                          MPI_Datatype type, MPI_Op op) const {
  check(MPI_Reduce_scatter_block(send, recv, count, type, op, cross_),
        "MPI_Reduce_scatter_block(across hosts)");
}

void MpiComm::allgather_across_hosts(const void* send, void* recv, int count,
                                     MPI_Datatype type) const {
  check(MPI_Allgather(send, count, type, recv, count, type, cross_), "MPI_Allgather(across hosts)");
}

void MpiComm::allgather(const void* send, int count, MPI_Datatype type, void* recv,
                        Pending pending) const {
  if (pending == nullptr) {
    check(MPI_Allgather(send, count, type, recv, count, type, comm_), "MPI_Allgather");
    return;
  }
  check(MPI_Iallgather(send, count, type, recv, count, type, comm_, &pending->emplace_back()),
        "MPI_Iallgather");
}

void MpiComm::allgatherv(const void* send, int count, MPI_Datatype type, void* recv,
                         const int* counts, const int* displs, Pending pending) const {
  if (pending == nullptr) {
    check(MPI_Allgatherv(send, count, type, recv, counts, displs, type, comm_), "MPI_Allgatherv");
    return;
  }
  check(MPI_Iallgatherv(send, count, type, recv, counts, displs, type, comm_,
                        &pending->emplace_back()),
        "MPI_Iallgatherv");
}

void MpiComm::reduce_scatter_block(const void* send, void* recv, int count, MPI_Datatype type,
                                   MPI_Op op, Pending pending) const {
  if (pending == nullptr) {
    check(MPI_Reduce_scatter_block(send, recv, count, type, op, comm_), "MPI_Reduce_scatter_block");
    return;
  }
  check(MPI_Ireduce_scatter_block(send, recv, count, type, op, comm_, &pending->emplace_back()),
        "MPI_Ireduce_scatter_block");
}

void MpiComm::broadcast(void* buffer, int count, MPI_Datatype type, int root,
                        Pending pending) const {
  if (pending == nullptr) {
    check(MPI_Bcast(buffer, count, type, root, comm_), "MPI_Bcast");
    return;
  }
  check(MPI_Ibcast(buffer, count, type, root, comm_, &pending->emplace_back()), "MPI_Ibcast");
}

void MpiComm::barrier(Pending pending) const {
  if (pending == nullptr) {
    check(MPI_Barrier(comm_), "MPI_Barrier");
    return;
  }
  check(MPI_Ibarrier(comm_, &pending->emplace_back()), "MPI_Ibarrier");
}

void MpiComm::alltoallv(const void* send, const int* send_counts, const int* send_displs,
                        void* recv, const int* recv_counts, const int* recv_displs,
                        MPI_Datatype type, Pending pending) const {
  if (pending == nullptr) {
    check(MPI_Alltoallv(send, send_counts, send_displs, type, recv, recv_counts, recv_displs, type,
                        comm_),
          "MPI_Alltoallv");
    return;
  }
  check(MPI_Ialltoallv(send, send_counts, send_displs, type, recv, recv_counts, recv_displs, type,
                       comm_, &pending->emplace_back()),
        "MPI_Ialltoallv");
}

MPI_Comm MpiComm::split(int color, int key) const {
  MPI_Comm child = MPI_COMM_NULL;
  check(MPI_Comm_split(comm_, color, key, &child), "MPI_Comm_split");
  return child;
}

void MpiComm::arrival_gate() const {
  MPI_Request arrived = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comm_, &arrived), "MPI_Ibarrier (arrival gate)");
  check(wait_politely(1, &arrived), "MPI_Testall (arrival gate)");
}

void MpiComm::wait_all(std::vector<MPI_Request>& requests) const {
  if (requests.empty()) return;
  check(wait_politely(static_cast<int>(requests.size()), requests.data()), "MPI_Testall");
}

bool MpiComm::test_all(std::vector<MPI_Request>& requests) const {
  if (requests.empty()) return true;
  int done = 0;
  check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
        "MPI_Testall");
  return done != 0;
}

}  // namespace strata::allreduce_mpi
