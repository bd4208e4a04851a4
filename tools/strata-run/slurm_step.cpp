#include "slurm_step.hpp"

#include "environment.hpp"
#include "remote.hpp"

namespace strata::run {

std::string srun_rank_script(const Placement& placement) {
  std::string script = "case \"$SLURM_PROCID\" in\n";
  for (const RankPlace& place : placement.ranks) {
    script += std::to_string(place.rank) + ") export";
    for (const auto& [name, value] : place_env(placement, place.rank)) script += " " + name + "=" + shell_quote(value);
    script += ";;\n";
  }
  script += "*) echo \"strata-run: srun started task $SLURM_PROCID; the run has " +
            std::to_string(placement.ranks.size()) + " ranks\" >&2; exit 1;;\nesac\nexec \"$@\"\n";
  return script;
}

SrunStep srun_step(const Placement& placement, const std::vector<std::string>& program, const std::string& name) {
  SrunStep step;
  for (const RankPlace& place : placement.ranks) {
    step.hostfile += placement.hosts.at(static_cast<size_t>(place.host)).name + "\n";
  }
  // --overlap: the step may share CPUs with the allocation's other steps (the last run's, ending).
  // --kill-on-bad-exit=0 (whatever the site's default): strata-run ends the step when a rank
  // fails, with SIGTERM and 3 s of grace as on the gloo backend; srun would SIGKILL the others.
  // --label: each line marked with its task, read back as the rank's (srun_output.hpp).
  // --quiet: srun's progress lines would read as the launcher's errors.
  // --export=ALL: the job's variables reach the ranks even where the site or the batch script
  // set SLURM_EXPORT_ENV=NONE. --input=none: the ranks' stdin is /dev/null, as on the other paths.
  step.argv = {"srun",
               "--ntasks=" + std::to_string(placement.ranks.size()),
               "--nodes=" + std::to_string(placement.hosts.size()),
               "--distribution=arbitrary",
               "--overlap",
               "--kill-on-bad-exit=0",
               "--label",
               "--quiet",
               "--export=ALL",
               "--input=none",
               "--job-name=" + name,
               "sh",
               "-c",
               srun_rank_script(placement),
               "strata-rank"};
  step.argv.insert(step.argv.end(), program.begin(), program.end());
  // After SIGTERM srun may end before the ranks do, and strata-run's end ends an salloc and its
  // allocation, which kills them: the stop command waits (at most 5 s) until the step is gone.
  const std::string list = "squeue --steps --noheader --format=%i --jobs=\"$SLURM_JOB_ID\" --name=" + shell_quote(name);
  // A signal just after srun started may come before the step is listed: looked up for 1 s.
  step.stop_argv = {"sh", "-c",
                    "i=0; while steps=$(" + list + ") && [ -z \"$steps\" ] && [ $i -lt 5 ]; do sleep 0.2; "
                    "i=$((i + 1)); done; [ -n \"$steps\" ] && scancel --signal=TERM $steps || exit 0; i=0; "
                    "while [ $i -lt 15 ] && [ -n \"$(" + list + ")\" ]; do sleep 0.3; i=$((i + 1)); done"};
  return step;
}

}  // namespace strata::run
