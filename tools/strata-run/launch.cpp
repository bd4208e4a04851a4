#include "launch.hpp"

#include "environment.hpp"
#include "error.hpp"
#include "hosts.hpp"
#include "mpi_backend.hpp"
#include "launcher_process.hpp"
#include "network.hpp"
#include "placement.hpp"
#include "remote.hpp"
#include "secret.hpp"
#include "slurm.hpp"
#include "slurm_step.hpp"
#include "supervisor.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <optional>

extern char** environ;

namespace strata::run {
namespace {

const char* lookup_env(const char* name) { return std::getenv(name); }

std::string quoted_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(arg);
  }
  return out;
}

// A variable the launcher sets for its ranks unless the caller chose it: `exported` when a -x
// already passes it on, else `value` is the launcher's own environment's (empty counts as unset),
// which is passed on explicitly so that remote ranks get it too.
struct CallerChoice {
  bool exported = false;
  std::optional<std::string> value;
};

CallerChoice caller_choice(const EnvVars& exports, const char* name) {
  if (std::any_of(exports.begin(), exports.end(),
                  [&](const auto& var) { return var.first == name; })) {
    return {true, std::nullopt};
  }
  const char* value = lookup_env(name);
  if (value == nullptr || *value == '\0') return {};
  return {false, value};
}

// STRATA_LIBRARY for the ranks, when the caller chose none. A C++ host finds libstrata through its
// own link; a Python host loads it at run time, and the one beside this strata-run (bin/ -> lib/,
// in a build tree and an installed prefix alike) is the one that matches the plugins the job will
// load.
std::optional<std::string> library_beside_launcher() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  for (const std::filesystem::path libdir : {"lib", STRATA_RUN_INSTALL_LIBDIR}) {
    const std::filesystem::path lib = exe.parent_path().parent_path() / libdir / "libstrata.so";
    if (std::filesystem::exists(lib, ec)) return lib.lexically_normal().string();
  }
  return std::nullopt;
}

// The job's variables, common to both backends.
JobEnv job_env_of(const Options& options, const Placement& placement,
                  const std::vector<bool>& hosts_local, const RunNumber& run) {
  JobEnv job;
  job.secret = make_job_secret();
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  job.master_addr = master_addr(placement, hosts_local, name);
  if (options.master_port != 0) {
    job.master_port = options.master_port;
  } else {
    // Rank 0 runs on the first host; only when that is this machine can a free port be found.
    // Elsewhere on an allocation: from the job id, not 29500 for every job that shares the node.
    job.master_port = hosts_local.front()             ? find_free_port()
                      : on_slurm_allocation(options) ? slurm_master_port(*slurm_job_id(), run.restart_count)
                                                     : 29500;
  }
  job.restart_count = run.restart_count;
  job.previous_world_size = run.previous_world_size;
  job.first_world_size = run.first_world_size;
  if (!options.network_interface.empty()) {
    if (!valid_network_interface(options.network_interface)) {
      throw UsageError("--network-interface '" + options.network_interface +
                       "': expected an interface name (eth0) or an IPv4 CIDR (10.0.0.0/24)");
    }
    job.network_interface = options.network_interface;
  }
  if (!options.manifest.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(options.manifest, ec)) {
      throw UsageError("--manifest " + options.manifest + ": no such file");
    }
    job.manifest = std::filesystem::absolute(options.manifest).lexically_normal().string();
  }
  job.exports = resolve_exports(options.exports, lookup_env);
  // Ranks started without MPI cannot use the MPI plugin the embedded default manifest names: the
  // runtime takes the comm library from STRATA_COMM_LIBRARY over the manifest.
  if (options.backend == "gloo") {
    const CallerChoice comm = caller_choice(job.exports, "STRATA_COMM_LIBRARY");
    if (!comm.exported) job.comm_library = comm.value.value_or("strata_allreduce_gloo");
  }
  const CallerChoice library = caller_choice(job.exports, "STRATA_LIBRARY");
  if (!library.exported) job.library = library.value ? library.value : library_beside_launcher();
  if (!options.checkpoint_dir.empty()) {
    job.checkpoint_dir = std::filesystem::absolute(options.checkpoint_dir).lexically_normal().string();
  }
  return job;
}

// A local rank's program (or mpirun) must exist here: say so once, before any rank starts, rather
// than as N failed ranks. (A remote host may have programs this one lacks, so remote ranks are not checked.)
void check_program_runs_here(const std::string& program) {
  const auto runnable = [](const std::string& path) { return access(path.c_str(), X_OK) == 0; };
  if (program.find('/') != std::string::npos) {
    if (!runnable(program)) throw UsageError("cannot run '" + program + "': no such executable file");
    return;
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', begin), dirs.size());
    const std::string dir = end > begin ? dirs.substr(begin, end - begin) : ".";
    if (runnable(dir + "/" + program)) return;
    begin = end + 1;
  }
  throw UsageError("cannot run '" + program + "': not found in PATH");
}

JobOutcome run_mpi(const Options& options, const Placement& placement, const JobEnv& job) {
  MpiJob mpi;
  mpi.mpirun = options.mpirun;
  mpi.as_root = geteuid() == 0;
  mpi.np = static_cast<int>(placement.ranks.size());
  mpi.hosts = placement.hosts;
  mpi.network_interface = job.network_interface;
  if (!options.launch_agent.empty()) mpi.launch_agent = options.launch_agent;
  // The values go into strata-run's own environment, which mpirun inherits and forwards by name.
  for (const auto& [name, value] : job_env(job)) {
    setenv(name.c_str(), value.c_str(), 1);
    mpi.exported_names.push_back(name);
  }
  mpi.program = options.program;
  const std::vector<std::string> argv = mpirun_argv(mpi);
  if (options.verbose) std::fprintf(stderr, "strata-run: %s\n", quoted_command(argv).c_str());
  std::fflush(stderr);
  check_program_runs_here(mpi.mpirun);
  return run_launcher(Launcher::mpirun, argv, {}, options.rank_prefix);
}

JobOutcome run_gloo(const Options& options, const Placement& placement, const JobEnv& job,
             const std::vector<bool>& hosts_local) {
  const std::string cwd = std::filesystem::current_path().string();
  const std::string agent = launch_agent_of(options);
  for (const bool local : hosts_local) {
    if (local) {
      check_program_runs_here(options.program.front());
      break;
    }
  }
  std::vector<RankTask> tasks;
  for (const RankPlace& place : placement.ranks) {
    RankTask task;
    task.rank = place.rank;
    task.host = placement.hosts[static_cast<size_t>(place.host)].name;
    task.host_ranks = describe_ranks(placement, place.host);
    const EnvVars env = rank_env(placement, place.rank, job);
    if (hosts_local[static_cast<size_t>(place.host)]) {
      task.argv = options.program;
      task.envp = merge_environment(environ, env);
    } else {
      EnvVars without_secret;
      for (const auto& var : env) {
        if (var.first != "STRATA_JOB_SECRET") without_secret.push_back(var);
      }
      task.remote = true;
      task.argv = agent_argv(agent, task.host, remote_command(cwd, without_secret, options.program));
      task.envp = merge_environment(environ, {});
      task.stdin_line = job.secret + "\n";
    }
    if (options.verbose) {
      std::fprintf(stderr, "strata-run: rank %d: %s\n", place.rank, quoted_command(task.argv).c_str());
    }
    tasks.push_back(std::move(task));
  }
  SupervisorOptions supervisor;
  supervisor.connect_timeout_s = options.connect_timeout;
  supervisor.rank_prefix = options.rank_prefix;
  return supervise(tasks, supervisor);
}

// SLURM_HOSTFILE for one step: a file of its own under TMPDIR, removed when the run ends.
class StepHostfile {
 public:
  explicit StepHostfile(const std::string& text) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/strata-run-hosts-XXXXXX";
    const int fd = mkstemp(path_.data());
    if (fd < 0) throw UsageError("cannot create a hostfile for srun in " + path_.substr(0, path_.rfind('/')));
    const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    if (!written) {
      unlink(path_.c_str());
      throw UsageError("cannot write srun's hostfile " + path_);
    }
  }
  ~StepHostfile() { unlink(path_.c_str()); }
  StepHostfile(const StepHostfile&) = delete;
  StepHostfile& operator=(const StepHostfile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The gloo backend on a Slurm allocation: the run is one srun step (slurm_step.hpp). The job's
// variables, the secret among them, reach the ranks through srun's environment (--export=ALL), which
// Slurm sends to the nodes' slurmd over its RPC (authenticated by munge, not encrypted).
JobOutcome run_srun(const Options& options, const Placement& placement, const JobEnv& job) {
  check_program_runs_here("srun");
  // Named after this strata-run, so that a stop signal finds this step of the allocation alone.
  const SrunStep step = srun_step(placement, options.program, "strata-run-" + std::to_string(getpid()));
  const StepHostfile hostfile(step.hostfile);
  EnvVars env = job_env(job);
  env.emplace_back("SLURM_HOSTFILE", hostfile.path());
  if (options.verbose) std::fprintf(stderr, "strata-run: %s\n", quoted_command(step.argv).c_str());
  std::fflush(stderr);
  return run_launcher(Launcher::srun, step.argv, env, options.rank_prefix, step.stop_argv);
}

}  // namespace

std::vector<Host> hosts_of(const Options& options, int np) {
  if (!options.host_list.empty()) return parse_host_list(options.host_list);
  if (!options.hostfile.empty()) return read_hostfile(options.hostfile);
  if (const auto job = slurm_job_id()) return slurm_allocation_hosts(*job);
  return {Host{"localhost", np > 0 ? np : 1, "default"}};
}

bool on_slurm_allocation(const Options& options) {
  return options.host_list.empty() && options.hostfile.empty() && slurm_job_id().has_value();
}

std::string launch_agent_of(const Options& options) {
  if (!options.launch_agent.empty()) return options.launch_agent;
  return on_slurm_allocation(options) ? srun_launch_agent() : default_launch_agent(options.connect_timeout);
}

JobOutcome run_once(const Options& options, const Placement& placement, const RunNumber& run) {
  std::vector<bool> hosts_local;
  for (const Host& host : placement.hosts) hosts_local.push_back(is_local_host(host.name));
  const JobEnv job = job_env_of(options, placement, hosts_local, run);
  if (options.backend == "mpi") return run_mpi(options, placement, job);
  if (on_slurm_allocation(options) && options.launch_agent.empty()) return run_srun(options, placement, job);
  return run_gloo(options, placement, job, hosts_local);
}

}  // namespace strata::run
