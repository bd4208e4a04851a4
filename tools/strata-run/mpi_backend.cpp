#include "mpi_backend.hpp"

namespace strata::run {

std::vector<std::string> mpirun_argv(const MpiJob& job) {
  std::vector<std::string> argv = {job.mpirun};
  if (job.as_root) argv.push_back("--allow-run-as-root");
  // strata-run has already checked -np against the slots, so oversubscription here only means
  // "more ranks than cores", which Open MPI would otherwise refuse on a small machine.
  argv.insert(argv.end(), {"--oversubscribe", "--bind-to", "none"});
  argv.insert(argv.end(), {"-np", std::to_string(job.np)});
  std::string hosts;
  for (const Host& host : job.hosts) {
    if (!hosts.empty()) hosts += ",";
    hosts += host.name + ":" + std::to_string(host.slots);
  }
  argv.insert(argv.end(), {"-H", hosts});
  // As the tests' STRATA_MPIRUN: CMA single copy fails in containers without ptrace rights.
  argv.insert(argv.end(), {"--mca", "btl_vader_single_copy_mechanism", "none"});
  // Open MPI 4.1's daemons (orted, one on every host but mpirun's) share the hwloc topology with
  // their ranks by mapping it at a hole they pick in their own address space; a daemon once
  // crashed in hwloc_shmem_topology_write (SIGSEGV) and the job ended before any rank started.
  // "none" skips that sharing (rtc_hwloc.c returns before it): each rank reads the topology
  // itself, a start-up cost only.
  argv.insert(argv.end(), {"--mca", "rtc_hwloc_vmhole", "none"});
  if (job.network_interface) {
    argv.insert(argv.end(), {"--mca", "btl_tcp_if_include", *job.network_interface,
                             "--mca", "oob_tcp_if_include", *job.network_interface});
  }
  if (job.launch_agent) argv.insert(argv.end(), {"--mca", "plm_rsh_agent", *job.launch_agent});
  for (const std::string& name : job.exported_names) argv.insert(argv.end(), {"-x", name});
  argv.push_back("--tag-output");
  argv.insert(argv.end(), job.program.begin(), job.program.end());
  return argv;
}

}  // namespace strata::run
