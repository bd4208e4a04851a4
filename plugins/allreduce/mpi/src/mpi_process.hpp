// Process-wide MPI start-up and shut-down, shared by every instance of the plugin.
//
// MPI can be initialised and finalised only once per process. The first instance initialises it
// if nobody else has (e.g. a host that called MPI_Init itself); MPI_Finalize then runs when the
// last instance that depends on that initialisation is destroyed. Not thread-safe (create/destroy
// aren't either).
#pragma once

namespace strata::allreduce_mpi {

class MpiProcess {
 public:
  MpiProcess();  // throws sdk::Error (STRATA_ERR_COMM) if MPI cannot be (or was) brought up
  ~MpiProcess();
  MpiProcess(const MpiProcess&) = delete;
  MpiProcess& operator=(const MpiProcess&) = delete;

  // False once someone (not us) finalised MPI; MPI calls are then no longer allowed.
  static bool usable();
  // MPI_Query_thread: the thread support MPI actually provides (MPI_THREAD_*).
  static int thread_level();
};

// MPI_Error_string of `code`, for messages.
const char* mpi_error_text(int code, char (&buffer)[512]);

}  // namespace strata::allreduce_mpi
