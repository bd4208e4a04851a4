#include "mpi_bootstrap.hpp"

#include <strata/plugin.hpp>

#include <mpi.h>

#include <string>

namespace strata::allreduce_nccl {
namespace {

// Live instances relying on our own MPI_Init_thread.
int g_owned_sessions = 0;

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return text;
}

void check_mpi(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    sdk::fail(STRATA_ERR_COMM, std::string("allreduce-nccl: ") + what + ": " + mpi_error(code));
  }
}

}  // namespace

MpiSession::MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    sdk::fail(STRATA_ERR_COMM,
              "allreduce-nccl: bootstrap mpi: MPI was already finalized in this "
              "process; it cannot be initialised again");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
              "MPI_Init_thread");
    owned_ = true;
    ++g_owned_sessions;
  } else if (g_owned_sessions > 0) {
    owned_ = true;  // initialised by an earlier instance of ours: keep it up for this one too
    ++g_owned_sessions;
  }
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiSession::~MpiSession() {
  if (!owned_ || --g_owned_sessions > 0) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiSession::broadcast(ncclUniqueId& id) const {
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD),
            "MPI_Bcast of the NCCL unique id");
}

}  // namespace strata::allreduce_nccl
