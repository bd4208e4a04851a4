// A private duplicate of MPI_COMM_WORLD (or a sub-group's communicator from split()) with
// MPI_ERRORS_RETURN, so that MPI failures become strata errors instead of aborting the job, and thin
// wrappers over the collectives.
//
// Each collective wrapper either blocks (`pending == nullptr`) or starts the MPI_I* variant and
// appends its request to *pending. Failures throw sdk::Error(STRATA_ERR_COMM) with MPI's text.
#pragma once

#include "config.hpp"

#include <mpi.h>

#include <string>
#include <vector>

namespace strata::allreduce_mpi {

class MpiComm {
 public:
  // MPI must be initialised. config.hierarchical on, with ranks on several hosts: node() is this
  // host's ranks and cross() the ranks of the same local rank on the other hosts, for the two-level
  // allreduce (Collectives: reduce-scatter within the host, every local rank allreduces its slice
  // across hosts, allgather within the host). Where the hosts hold different numbers of ranks the
  // slices would not line up: cross() then exists on each host's first rank only, and blocking
  // allreduces reduce to that rank, allreduce among the hosts' first ranks and broadcast within
  // the host (hierarchical_allreduce). Auto: the same where every host holds the same number of
  // ranks, more than one, and shm is not false (else flat, declined() saying why), and allreduces
  // that do not take the two levels stay flat instead of going through the hosts' first ranks.
  // The config's wire-relevant keys (wire_summary) are checked to be the same on every rank
  // before anything depends on them.
  explicit MpiComm(const Config& config);
  // A sub-group's communicator (split()), already made: this object owns and frees it, also when
  // the constructor throws. Sets MPI_ERRORS_RETURN on it and learns its local ranks with
  // MPI_Comm_split_type; never hierarchical. The tag keeps it apart from the other constructor.
  struct Adopt {};
  MpiComm(Adopt, MPI_Comm split);
  ~MpiComm();
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // Whether allreduce runs hierarchically (asked for, and ranks on more than one host).
  bool hierarchical() const { return node_ != MPI_COMM_NULL; }
  // Why "auto" stayed flat across hosts ("shm false", "the hosts hold different numbers of
  // ranks", "one rank per host"), or "".
  const std::string& declined() const { return declined_; }
  // Hierarchical with the same number of ranks on every host: every rank has a cross().
  bool two_level() const { return two_level_; }
  int hosts() const { return hosts_; }
  MPI_Comm handle() const { return comm_; }
  MPI_Comm node() const { return node_; }
  MPI_Comm cross() const { return cross_; }
  // Two-level only: the global rank of local rank l on the j-th host (in cross()'s order) is
  // host_grid()[l * hosts() + j]. Empty otherwise.
  const std::vector<int>& host_grid() const { return host_grid_; }

  using Pending = std::vector<MPI_Request>*;
  void allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                 Pending pending) const;
  void allgather(const void* send, int count, MPI_Datatype type, void* recv, Pending pending) const;
  void allgatherv(const void* send, int count, MPI_Datatype type, void* recv, const int* counts,
                  const int* displs, Pending pending) const;
  void reduce_scatter_block(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                            Pending pending) const;
  void broadcast(void* buffer, int count, MPI_Datatype type, int root, Pending pending) const;
  void barrier(Pending pending) const;
  void alltoallv(const void* send, const int* send_counts, const int* send_displs, void* recv,
                 const int* recv_counts, const int* recv_displs, MPI_Datatype type,
                 Pending pending) const;
  // MPI_Comm_split of handle() (collective over it, blocking): the new communicator of the ranks
  // that passed the same color (>= 0), ranked by key, or MPI_COMM_NULL for MPI_UNDEFINED.
  MPI_Comm split(int color, int key) const;
  // Blocking, over cross(): the two-level collectives' steps across hosts (allreduce in place).
  void allreduce_across_hosts(void* data, int count, MPI_Datatype type, MPI_Op op) const;
  void reduce_scatter_across_hosts(const void* send, void* recv, int count, MPI_Datatype type,
                                   MPI_Op op) const;
  void allgather_across_hosts(const void* send, void* recv, int count, MPI_Datatype type) const;

  // Returns once every rank has called it (a barrier), sleeping between polls while some rank has
  // not (polite_wait.hpp). Blocking collectives pass it first when the arrival_gate config option
  // is on: Open MPI's blocking collectives busy-poll for as long as a peer is missing, but once all
  // ranks have arrived they run at full speed, which the MPI_I* variants don't
  // (progress_thread.hpp).
  void arrival_gate() const;

  // MPI_Waitall without its busy-polling (polite_wait.hpp).
  void wait_all(std::vector<MPI_Request>& requests) const;
  bool test_all(std::vector<MPI_Request>& requests) const;

 private:
  // The constructor's work after MPI_Comm_dup; on a throw the constructor frees what it made.
  void set_up(const Config& config);
  // Frees the communicators this object holds (while MPI is usable).
  void free_communicators();
  void refuse_singleton_in_a_larger_job() const;
  // MPI_ERRORS_RETURN on comm_, and its rank and size.
  void learn_ranks();
  // The local ranks, from MPI_Comm_split_type of comm_; returns that node communicator (the
  // caller frees or keeps it).
  MPI_Comm learn_local_ranks();
  void learn_host_grid();
  void hierarchical_allreduce(const void* send, void* recv, int count, MPI_Datatype type,
                              MPI_Op op) const;
  // Throws with "<what> failed: <MPI_Error_string>" unless rc == MPI_SUCCESS.
  static void check(int rc, const char* what);

  MPI_Comm comm_ = MPI_COMM_NULL;
  // Hierarchical allreduce only: this host's ranks, and the ranks of this local rank on every host
  // (uneven hosts: on each host's first rank only). MPI_COMM_NULL otherwise.
  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Comm cross_ = MPI_COMM_NULL;
  bool two_level_ = false;
  // Blocking allreduces outside the two levels go through the hosts' first ranks (hierarchy on)
  // rather than flat (auto).
  bool through_leaders_ = false;
  std::string declined_;
  std::vector<int> host_grid_;
  int hosts_ = 1;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
};

}  // namespace strata::allreduce_mpi
