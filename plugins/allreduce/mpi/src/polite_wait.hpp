// Waiting for MPI requests without spinning a core.
//
// Why: Open MPI 4.1 completes requests only by polling (opal_progress); its blocking collectives
// and MPI_Wait* busy-poll until the peers have done their part. When a peer is stopped (SIGSTOP,
// a hung NFS read, a swapped-out node), every rank waiting for it burns a full core, and with more
// ranks than cores the waiting ranks take the CPU from those that could still make progress.
// wait_politely polls MPI_Testall for a short busy phase, so that a healthy exchange costs only
// its own latency, and then sleeps between polls with a growing interval, so that a rank whose
// peer is late costs one poll every millisecond or so instead of a core.
#pragma once

#include <mpi.h>

namespace strata::allreduce_mpi {

// Completes every request of `requests[0, count)` (they become MPI_REQUEST_NULL) as MPI_Waitall
// would, without MPI_Waitall's busy-polling. Returns MPI_Testall's code (MPI_SUCCESS once done).
int wait_politely(int count, MPI_Request* requests);

}  // namespace strata::allreduce_mpi
