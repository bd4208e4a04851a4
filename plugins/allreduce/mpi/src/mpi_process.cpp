#include "mpi_process.hpp"

#include <strata/plugin.hpp>

#include <mpi.h>

#include <cstdio>
#include <string>

namespace strata::allreduce_mpi {
namespace {

// Live instances relying on our own MPI_Init_thread; 0 when MPI was started by someone else.
int g_owned_instances = 0;
bool g_we_initialised = false;

}  // namespace

const char* mpi_error_text(int code, char (&buffer)[512]) {
  int length = 0;
  if (MPI_Error_string(code, buffer, &length) != MPI_SUCCESS) {
    std::snprintf(buffer, sizeof buffer, "MPI error code %d", code);
  }
  return buffer;
}

MpiProcess::MpiProcess() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    sdk::fail(STRATA_ERR_COMM,
              "MPI was already finalized in this process; it cannot be initialised again");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // SERIALIZED: the runtime serialises calls but may make them from different threads.
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
      char text[512];
      sdk::fail(STRATA_ERR_COMM,
                std::string("MPI_Init_thread failed: ") + mpi_error_text(rc, text));
    }
    if (provided < MPI_THREAD_FUNNELED) {
      MPI_Finalize();
      sdk::fail(STRATA_ERR_COMM, "MPI_Init_thread: expected at least MPI_THREAD_FUNNELED, got " +
                                     std::to_string(provided));
    }
    g_we_initialised = true;
  }
  if (g_we_initialised) ++g_owned_instances;
}

MpiProcess::~MpiProcess() {
  if (!g_we_initialised) return;
  if (--g_owned_instances == 0 && usable()) MPI_Finalize();
}

bool MpiProcess::usable() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized == 0;
}

int MpiProcess::thread_level() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided;
}

}  // namespace strata::allreduce_mpi
