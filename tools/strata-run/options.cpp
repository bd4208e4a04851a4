#include "options.hpp"

#include "error.hpp"

#include <CLI/CLI.hpp>

#include <cstring>

namespace strata::run {

bool parse_options(int argc, char** argv, Options& options, int& exit_code) {
  CLI::App app{"Start a Strata job: N ranks on one or more hosts.\n"
               "usage: strata-run [options] -- PROGRAM [ARGS...]"};
  // Parse errors read like every other strata-run error: one "error: " line.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("error: ") + e.what() + " (see strata-run --help)\n";
  });
  CLI::Option* np = app.add_option("--np", options.np, "number of ranks (default: every slot); -np works too");
  app.add_option("-H,--hosts", options.host_list, "hosts as HOST[:SLOTS],... (no :SLOTS = 1)");
  app.add_option("--hostfile", options.hostfile,
                 "a hostfile: 'HOST slots=N' lines (DeepSpeed, Open MPI), '#' comments");
  app.add_option("--backend", options.backend, "mpi: start the ranks with mpirun; gloo: start them itself")
      ->check(CLI::IsMember({"mpi", "gloo"}));
  app.add_option("--manifest", options.manifest, "exported to every rank as STRATA_MANIFEST (absolute path)");
  app.add_option("-x", options.exports, "VAR or VAR=VALUE: set in every rank's environment (repeatable)")
      ->allow_extra_args(false);  // one variable per -x, as mpirun takes it
  app.add_option("--network-interface", options.network_interface,
                 "interface name or IPv4 CIDR the ranks talk over (STRATA_NETWORK_INTERFACE)");
  app.add_option("--launch-agent", options.launch_agent,
                 "command that starts a process on another host, run as 'CMD HOST COMMAND' "
                 "(default: ssh -o BatchMode=yes -o ConnectTimeout=<connect-timeout>)");
  app.add_option("--master-port", options.master_port,
                 "MASTER_PORT (default: a free local port when the first host is local, else 29500)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--connect-timeout", options.connect_timeout,
                 "seconds a remote host has to start its ranks")
      ->check(CLI::Range(1, 3600));
  app.add_flag("--verbose", options.verbose, "print the mpirun command (gloo: each rank's command) before running it");
  app.add_option("--mpirun", options.mpirun, "the mpirun to run (mpi backend)");
  // Named for what it drops: the "[R] " every rank line gets by default, on both backends.
  app.add_flag_callback("--no-rank-prefix", [&options] { options.rank_prefix = false; },
                        "print the ranks' whole lines without the '[R] ' prefix (both backends)");
  app.add_option("--max-restarts", options.max_restarts,
                     "restart the job after a failure, at most N times, on the hosts and slots left, "
                     "from its latest checkpoint (needs --checkpoint-dir); 0: end at the first failure")
      ->check(CLI::Range(0, 1000000));
  CLI::Option* min_np = app.add_option("--min-np", options.min_np,
                                       "with --max-restarts: the fewest ranks a restart may run at")
                            ->check(CLI::Range(1, 1 << 20));
  CLI::Option* max_np = app.add_option("--max-np", options.max_np,
                                       "with --max-restarts: the most ranks a restart may run at")
                            ->check(CLI::Range(1, 1 << 20));
  CLI::Option* checkpoint_dir =
      app.add_option("--checkpoint-dir", options.checkpoint_dir,
                     "the job's checkpoint folder, exported to every rank as STRATA_CHECKPOINT_DIR "
                     "(absolute); a restarted job resumes from its latest checkpoint");
  CLI::Option* startup = app.add_option("--startup-seconds", options.startup_seconds,
                                        "with --max-restarts: a rank that fails this soon after "
                                        "its job started takes its whole host out of the restarts")
                             ->check(CLI::Range(0, 86400));
  app.set_version_flag("--version", std::string("strata-run ") + STRATA_VERSION_TEXT,
                       "print strata-run's version and exit");

  // Everything after the first "--" is the program, untouched by CLI11. Before it, the launcher
  // spelling "-np" (one dash, two letters, as mpirun and horovodrun take it) becomes "--np".
  std::vector<const char*> args = {argv[0]};
  int i = 1;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    args.push_back(std::strcmp(argv[i], "-np") == 0 ? "--np" : argv[i]);
  }
  for (int j = i + 1; j < argc; ++j) options.program.emplace_back(argv[j]);
  try {
    app.parse(static_cast<int>(args.size()), const_cast<char**>(args.data()));
  } catch (const CLI::ParseError& e) {
    // --help and --version are 0; every parse error is 1, like strata-run's other errors (not
    // CLI11's codes).
    exit_code = app.exit(e) == 0 ? 0 : 1;
    return false;
  }
  if (i == argc || options.program.empty()) {
    throw UsageError("no program: usage: strata-run [options] -- PROGRAM [ARGS...]");
  }
  if (np->count() > 0 && options.np < 1) throw UsageError("-np " + std::to_string(options.np) + ": expected at least 1 rank");
  if (options.max_restarts == 0) {
    for (const CLI::Option* option : {min_np, max_np, startup}) {
      if (option->count() > 0) throw UsageError(option->get_name() + " needs --max-restarts N (N >= 1)");
    }
  } else if (checkpoint_dir->count() == 0 || options.checkpoint_dir.empty()) {
    throw UsageError("--max-restarts " + std::to_string(options.max_restarts) +
                     ": a restarted job resumes from its latest checkpoint; give the job's checkpoint "
                     "folder with --checkpoint-dir DIR");
  }
  if (max_np->count() > 0 && options.max_np < options.min_np) {
    throw UsageError("--min-np " + std::to_string(options.min_np) + " is above --max-np " +
                     std::to_string(options.max_np));
  }
  if (!options.host_list.empty() && !options.hostfile.empty()) {
    throw UsageError("-H and --hostfile cannot be used together: give the hosts one way");
  }
  return true;
}

}  // namespace strata::run
