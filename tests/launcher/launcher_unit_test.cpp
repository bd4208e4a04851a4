// Unit tests of strata-run's pure parts: host lists and hostfiles, placement, each rank's
// environment, the remote command, the mpirun argv, line splitting, mpirun's tagged output and the
// secret.
#include "environment.hpp"
#include "error.hpp"
#include "hosts.hpp"
#include "mpi_backend.hpp"
#include "mpi_output.hpp"
#include "network.hpp"
#include "options.hpp"
#include "output.hpp"
#include "placement.hpp"
#include "remote.hpp"
#include "secret.hpp"
#include "slurm.hpp"
#include "slurm_step.hpp"
#include "srun_output.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <map>
#include <thread>

namespace strata::run {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "<no error>";
}

std::vector<std::pair<std::string, int>> names_slots(const std::vector<Host>& hosts) {
  std::vector<std::pair<std::string, int>> out;
  for (const Host& h : hosts) out.emplace_back(h.name, h.slots);
  return out;
}

using NS = std::pair<std::string, int>;

TEST(HostList, SlotsDefaultToOne) {
  EXPECT_THAT(names_slots(parse_host_list("host1:2,host2,10.0.0.3:4")),
              ElementsAre(NS{"host1", 2}, NS{"host2", 1}, NS{"10.0.0.3", 4}));
}

TEST(HostList, Errors) {
  EXPECT_THAT(names_slots(parse_host_list("a:2, b")), ElementsAre(NS{"a", 2}, NS{"b", 1}));
  EXPECT_EQ(error_of([] { parse_host_list("a:2,b:x"); }),
            "-H entry 2: expected 'HOST' or 'HOST:SLOTS', got 'b:x'");
  EXPECT_EQ(error_of([] { parse_host_list("a:2,b:0"); }), "-H entry 2: host 'b' has 0 slots (give at least 1)");
  EXPECT_EQ(error_of([] { parse_host_list("a:2,b,a:1"); }),
            "-H entry 3: host 'a' is listed twice (first at -H entry 1)");
  EXPECT_EQ(error_of([] { parse_host_list("a,,b"); }), "-H entry 2: expected 'HOST' or 'HOST:SLOTS', got ''");
  EXPECT_EQ(error_of([] { parse_host_list("a,"); }), "-H 'a,': expected 'HOST[:SLOTS],...'");
}

TEST(Hostfile, DeepSpeedFormat) {
  const auto hosts = parse_hostfile_text("worker-1 slots=4\nworker-2 slots=4\n", "hosts.txt");
  EXPECT_THAT(names_slots(hosts), ElementsAre(NS{"worker-1", 4}, NS{"worker-2", 4}));
  EXPECT_EQ(hosts[1].origin, "hosts.txt:2");
}

TEST(Hostfile, OpenMpiFormatCommentsAndBlankLines) {
  const std::string text =
      "# the cluster\n"
      "\n"
      "node1 slots=2 max_slots=4   # trailing comment\n"
      "   node2\n"
      "\t\n"
      "node3 max_slots=8 slots=3\n";
  EXPECT_THAT(names_slots(parse_hostfile_text(text, "h")),
              ElementsAre(NS{"node1", 2}, NS{"node2", 1}, NS{"node3", 3}));
}

TEST(Hostfile, ErrorsNameFileAndLine) {
  EXPECT_EQ(error_of([] { parse_hostfile_text("node0 slots=1\n\nnode1 slots=x\n", "hosts.txt"); }),
            "hosts.txt:3: expected 'HOST slots=N', got 'node1 slots=x'");
  EXPECT_EQ(error_of([] { parse_hostfile_text("node1 slots=2 gpus=1\n", "hosts.txt"); }),
            "hosts.txt:1: expected 'HOST slots=N', got 'node1 slots=2 gpus=1'");
  EXPECT_EQ(error_of([] { parse_hostfile_text("node1 slots=2 slots=3\n", "h"); }),
            "h:1: expected 'HOST slots=N', got 'node1 slots=2 slots=3'");
  EXPECT_EQ(error_of([] { parse_hostfile_text("node1:2\n", "h"); }), "h:1: expected 'HOST slots=N', got 'node1:2'");
  EXPECT_EQ(error_of([] { parse_hostfile_text("a slots=1\n# x\nb slots=1\na slots=2\n", "hosts.txt"); }),
            "hosts.txt:4: host 'a' is listed twice (first at hosts.txt:1)");
  EXPECT_EQ(error_of([] { parse_hostfile_text("a slots=0\n", "hosts.txt"); }),
            "hosts.txt:1: host 'a' has 0 slots (give at least 1)");
  EXPECT_EQ(error_of([] { parse_hostfile_text("# nothing\n\n", "hosts.txt"); }), "hosts.txt: no hosts in the hostfile");
  EXPECT_EQ(error_of([] { read_hostfile("/nonexistent/hosts.txt"); }),
            "--hostfile /nonexistent/hosts.txt: cannot open the file");
}

TEST(Placement, HostByHostUpToNp) {
  const auto hosts = parse_host_list("a:2,b:2,c:2");
  const Placement p = place_ranks(hosts, 3);
  ASSERT_EQ(p.hosts.size(), 2u);  // c gets no rank and is not used
  EXPECT_THAT(p.local_size, ElementsAre(2, 1));
  ASSERT_EQ(p.ranks.size(), 3u);
  EXPECT_EQ(p.ranks[2].host, 1);
  EXPECT_EQ(p.ranks[2].local_rank, 0);
  EXPECT_EQ(describe_ranks(p, 0), "ranks 0-1");
  EXPECT_EQ(describe_ranks(p, 1), "rank 2");
  EXPECT_EQ(place_ranks(hosts, 0).ranks.size(), 6u);  // default: every slot
}

TEST(Placement, TooManyRanks) {
  EXPECT_EQ(error_of([] { place_ranks(parse_host_list("host1:2,host2:2"), 5); }),
            "-np 5 but the hosts have 4 slots (host1:2, host2:2)");
}

TEST(Environment, PerRank) {
  const Placement p = place_ranks(parse_host_list("a:2,b:2"), 4);
  JobEnv job;
  job.master_addr = master_addr(p, {false, false}, "here");
  job.master_port = 29500;
  job.secret = std::string(64, 'f');
  job.manifest = "/abs/m.json";
  job.network_interface = "10.0.0.0/24";
  job.exports = {{"FOO", "bar"}};
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : rank_env(p, 3, job)) env[k] = v;
  const std::map<std::string, std::string> expected = {
      {"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_SIZE", "2"},
      {"CROSS_RANK", "1"}, {"CROSS_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "29500"},
      {"STRATA_JOB_SECRET", std::string(64, 'f')}, {"STRATA_MANIFEST", "/abs/m.json"},
      {"STRATA_NETWORK_INTERFACE", "10.0.0.0/24"}, {"STRATA_RESTART_COUNT", "0"},
      {"STRATA_PREVIOUS_WORLD_SIZE", "0"}, {"FOO", "bar"}};
  EXPECT_EQ(env, expected);
  // A restarted run (--max-restarts): which run, the sizes before and first, the checkpoints.
  job.restart_count = 2;
  job.previous_world_size = 6;
  job.first_world_size = 8;
  job.checkpoint_dir = "/abs/ck";
  env.clear();
  for (const auto& [k, v] : rank_env(p, 3, job)) env[k] = v;
  EXPECT_EQ(env["STRATA_RESTART_COUNT"], "2");
  EXPECT_EQ(env["STRATA_PREVIOUS_WORLD_SIZE"], "6");
  EXPECT_EQ(env["STRATA_FIRST_WORLD_SIZE"], "8");
  EXPECT_EQ(env["STRATA_CHECKPOINT_DIR"], "/abs/ck");
  EXPECT_EQ(error_of([] { resolve_exports({"STRATA_RESTART_COUNT=1"}, [](const char*) -> const char* { return nullptr; }); }),
            "-x STRATA_RESTART_COUNT=1: strata-run sets STRATA_RESTART_COUNT itself");
}

TEST(Environment, MasterAddr) {
  const Placement p = place_ranks(parse_host_list("localhost:2,b:2"), 4);
  EXPECT_EQ(master_addr(p, {true, true}, "here"), "127.0.0.1");
  // Remote ranks must not be told "localhost": they get this machine's name.
  EXPECT_EQ(master_addr(p, {true, false}, "here"), "here");
  const Placement named = place_ranks(parse_host_list("node1:2,b:2"), 4);
  EXPECT_EQ(master_addr(named, {true, false}, "here"), "node1");
  EXPECT_EQ(master_addr(named, {false, false}, "here"), "node1");
}

const char* fake_lookup(const char* name) { return std::string(name) == "HOME_DIR" ? "/home/x" : nullptr; }

TEST(Environment, Exports) {
  EXPECT_THAT(resolve_exports({"A=1", "HOME_DIR", "B=x=y", "C="}, fake_lookup),
              ElementsAre(std::pair<std::string, std::string>{"A", "1"},
                          std::pair<std::string, std::string>{"HOME_DIR", "/home/x"},
                          std::pair<std::string, std::string>{"B", "x=y"},
                          std::pair<std::string, std::string>{"C", ""}));
  EXPECT_EQ(error_of([] { resolve_exports({"UNSET_ONE"}, fake_lookup); }), "-x UNSET_ONE: UNSET_ONE is not set");
  EXPECT_EQ(error_of([] { resolve_exports({"1X=2"}, fake_lookup); }), "-x 1X=2: '1X' is not a variable name");
  EXPECT_EQ(error_of([] { resolve_exports({"RANK=2"}, fake_lookup); }), "-x RANK=2: strata-run sets RANK itself");
}

TEST(Environment, MergeOverridesTheCallersValue) {
  const char* base[] = {"PATH=/bin", "RANK=9", "X", nullptr};
  EXPECT_THAT(merge_environment(base, {{"RANK", "0"}}), ElementsAre("PATH=/bin", "X", "RANK=0"));
}

TEST(Secret, SixtyFourHexDigitsAndFresh) {
  const std::string a = make_job_secret();
  EXPECT_THAT(a, ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_NE(a, make_job_secret());
}

TEST(Remote, QuotingAndCommand) {
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  const std::string cmd = remote_command("/work dir", {{"RANK", "2"}, {"X", "a'b"}}, {"prog", "--x=1 2"});
  EXPECT_EQ(cmd.rfind("sh -c '", 0), 0u);
  // The secret comes from stdin by name only; the values are quoted (shown quoted twice: once
  // for the inner script, once for sh -c).
  EXPECT_THAT(cmd, HasSubstr("IFS= read -r STRATA_JOB_SECRET"));
  EXPECT_THAT(cmd, HasSubstr("strata-run:started"));
  EXPECT_THAT(remote_command("/d", {}, {"p"}), ::testing::Not(HasSubstr("STRATA_JOB_SECRET=")));
  EXPECT_THAT(agent_argv("ssh -o BatchMode=yes", "nodeB", "CMD"), ElementsAre("ssh", "-o", "BatchMode=yes", "nodeB", "CMD"));
  EXPECT_EQ(default_launch_agent(30), "ssh -o BatchMode=yes -o ConnectTimeout=30");
  // srun runs an argv: the command goes through sh -c.
  EXPECT_THAT(agent_argv("srun --overlap --nodelist", "n1", "CMD"),
              ElementsAre("srun", "--overlap", "--nodelist", "n1", "sh", "-c", "CMD"));
  EXPECT_THAT(agent_argv("/opt/slurm/bin/srun -w", "n1", "CMD"),
              ElementsAre("/opt/slurm/bin/srun", "-w", "n1", "sh", "-c", "CMD"));
  EXPECT_THAT(agent_argv("nosrun", "n1", "CMD"), ElementsAre("nosrun", "n1", "CMD"));
  EXPECT_THAT(srun_launch_agent(), HasSubstr("--ntasks=1"));
  EXPECT_THAT(srun_launch_agent(), HasSubstr("--overlap"));
}

TEST(Slurm, TasksPerNode) {
  EXPECT_EQ(parse_slurm_counts("4", "V"), std::vector<int>({4}));
  EXPECT_EQ(parse_slurm_counts("2(x3),1", "V"), std::vector<int>({2, 2, 2, 1}));
  EXPECT_EQ(parse_slurm_counts("1,8(x2)", "V"), std::vector<int>({1, 8, 8}));
  for (const char* bad : {"", "x", "2(x0)", "0", "2(x3", "2(y3)", "2(x3)z", "-1", "2,,1", " 2(x3)", "+2", "2(x 3)",
                          "99999999999", "2(x1048577)"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(error_of([&] { parse_slurm_counts(bad, "SLURM_TASKS_PER_NODE"); }),
                HasSubstr(std::string("SLURM_TASKS_PER_NODE='") + bad + "': entry"));
  }
}

TEST(Slurm, Hostlists) {
  const auto expand = [](const std::string& list) { return expand_slurm_hostlist(list, "V"); };
  EXPECT_THAT(expand("vm"), ElementsAre("vm"));
  EXPECT_THAT(expand("node[01-03,07],gpu1"), ElementsAre("node01", "node02", "node03", "node07", "gpu1"));
  EXPECT_THAT(expand("r[1-2]n[8-9]x"), ElementsAre("r1n8x", "r1n9x", "r2n8x", "r2n9x"));
  EXPECT_THAT(expand("a[9-11]"), ElementsAre("a9", "a10", "a11"));
  for (const char* bad : {"", "a,,b", "n[1-", "n]1", "n[[1]]", "n[3-1]", "n[a]", "n[]", "n[1-2-3]"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(error_of([&] { expand(bad); }), HasSubstr(std::string("V='") + bad + "': "));
  }
  EXPECT_THAT(error_of([&] { expand("n[0-1999999]"); }), HasSubstr("more than 2^20 nodes"));
}

TEST(Slurm, MasterPortFromTheJob) {
  EXPECT_EQ(slurm_master_port("100", 0), 20000 + (100 * 67 + 1000) % 12000);
  EXPECT_NE(slurm_master_port("100", 1), slurm_master_port("100", 0));
  EXPECT_NE(slurm_master_port("101", 0), slurm_master_port("100", 0));
  for (const char* id : {"1", "4294967295", "99999999999"}) {
    EXPECT_GE(slurm_master_port(id, 3), 20000);
    EXPECT_LT(slurm_master_port(id, 3), 32000);
  }
  EXPECT_EQ(slurm_master_port("12_3", 0), 29500);  // an array job's id as written: not a number
}

TEST(Slurm, HostsPairNodesWithTheirTasks) {
  const auto hosts = slurm_hosts({"n01", "n02", "n03"}, {2, 2, 1}, "77");
  EXPECT_EQ(names_slots(hosts), (std::vector<NS>{{"n01", 2}, {"n02", 2}, {"n03", 1}}));
  EXPECT_EQ(hosts[2].origin, "Slurm allocation 77 node 3");
  EXPECT_THAT(error_of([] { slurm_hosts({"n01", "n02"}, {1 << 20, 1}, "77"); }),
              HasSubstr("Slurm allocation 77: 1048577 tasks in all; strata-run starts at most 2^20 ranks"));
  // -np above the allocation's slots says where the hosts came from.
  EXPECT_THAT(error_of([&] { place_ranks(hosts, 9); }),
              HasSubstr("-np 9 but the hosts have 5 slots (n01:2, n02:2, n03:1); they are Slurm allocation 77's "
                        "nodes and tasks per node: ask salloc or sbatch for more tasks (-n), or give the hosts with "
                        "-H or --hostfile"));
  EXPECT_THAT(error_of([] { slurm_hosts({"n01", "n02"}, {2}, "77"); }),
              HasSubstr("Slurm allocation 77: SLURM_JOB_NODELIST names 2 nodes but its tasks per node count 1"));
}

TEST(Mpi, Argv) {
  MpiJob job;
  job.as_root = true;
  job.np = 4;
  job.hosts = parse_host_list("a:2,b:2");
  job.network_interface = "eth1";
  job.launch_agent = "/x/agent.sh";
  job.exported_names = {"MASTER_ADDR", "MASTER_PORT", "STRATA_JOB_SECRET", "FOO"};
  job.program = {"./train", "--epochs", "2"};
  EXPECT_THAT(mpirun_argv(job),
              ElementsAre("mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "4",
                          "-H", "a:2,b:2", "--mca", "btl_vader_single_copy_mechanism", "none", "--mca",
                          "rtc_hwloc_vmhole", "none", "--mca", "btl_tcp_if_include", "eth1", "--mca", "oob_tcp_if_include", "eth1", "--mca",
                          "plm_rsh_agent", "/x/agent.sh", "-x", "MASTER_ADDR", "-x", "MASTER_PORT", "-x",
                          "STRATA_JOB_SECRET", "-x", "FOO", "--tag-output", "./train", "--epochs", "2"));
  job.as_root = false;
  job.network_interface.reset();
  job.launch_agent.reset();
  job.exported_names.clear();
  EXPECT_THAT(mpirun_argv(job),
              ElementsAre("mpirun", "--oversubscribe", "--bind-to", "none", "-np", "4", "-H", "a:2,b:2", "--mca",
                          "btl_vader_single_copy_mechanism", "none", "--mca", "rtc_hwloc_vmhole", "none",
                          "--tag-output", "./train", "--epochs", "2"));
}

TEST(Output, WholeLinesAndTheLastPartialOne) {
  LineSplitter s;
  std::vector<std::string> lines;
  const auto add = [&](std::string_view l) { lines.emplace_back(l); };
  s.feed("ab", add);
  s.feed("c\nd\n\ne", add);
  EXPECT_THAT(lines, ElementsAre("abc", "d", ""));
  s.finish(add);
  EXPECT_THAT(lines, ElementsAre("abc", "d", "", "e"));
}

// A progress bar redrawn with '\r' and never a '\n' must not grow strata-run's memory: a partial
// line is let out in pieces of kMaxLineBytes. A line of exactly the bound is still one line.
TEST(Output, APartialLineIsBounded) {
  LineSplitter s;
  std::vector<std::string> lines;
  const auto add = [&](std::string_view l) { lines.emplace_back(l); };
  const std::string exact(kMaxLineBytes, 'x');
  s.feed(exact, add);
  EXPECT_TRUE(lines.empty());
  s.feed("\n", add);
  ASSERT_THAT(lines, ElementsAre(exact));
  lines.clear();
  const std::string frame = "\r[=====>    ] 42%";
  for (size_t i = 0; i < 3 * kMaxLineBytes / frame.size(); ++i) s.feed(frame, add);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) EXPECT_EQ(line.size(), kMaxLineBytes);
  s.finish(add);  // what is left of the bar
  lines.clear();
  s.feed(std::string(2 * kMaxLineBytes + 5, 'y') + "\nz", add);  // one feed, several pieces
  s.finish(add);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], std::string(kMaxLineBytes, 'y'));
  EXPECT_EQ(lines[1], std::string(kMaxLineBytes, 'y'));
  EXPECT_EQ(lines[2], "yyyyy");
  EXPECT_EQ(lines[3], "z");
}

// A pipe that refills as fast as it is read (a flooding rank): read_available must come back to
// the caller's loop (signals, deadlines) instead of reading until the flood stops.
TEST(Output, ReadAvailableReturnsWhileThePipeKeepsFilling) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_NONBLOCK), 0);
  const std::string chunk(4096, 'x');
  ASSERT_EQ(write(fds[1], chunk.data(), chunk.size()), static_cast<ssize_t>(chunk.size()));
  int calls = 0;
  const bool open = read_available(fds[0], [&](std::string_view data) {
    if (++calls < 1000) {
      EXPECT_EQ(write(fds[1], data.data(), data.size()), static_cast<ssize_t>(data.size()));
    }
  });
  EXPECT_TRUE(open);
  EXPECT_LE(calls, 16);
  close(fds[0]);
  close(fds[1]);
}

// strata-run's stdout may be non-blocking (a shared terminal or pipe another program set so): a
// full pipe means waiting, not dropping the rest of the line.
TEST(Output, WritingToAFullNonBlockingPipeWaits) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, 0), 0);
  ASSERT_EQ(fcntl(fds[1], F_SETFL, O_NONBLOCK), 0);
  std::string got;
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    char buffer[65536];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) got.append(buffer, static_cast<size_t>(n));
  });
  const std::string line(300000, 'y');
  write_prefixed_line(fds[1], "[7] ", line);
  close(fds[1]);
  reader.join();
  close(fds[0]);
  EXPECT_EQ(got.size(), line.size() + 5);
  EXPECT_TRUE(got == "[7] " + line + "\n");
}

// Lines out of a RankLineParser (MpiOutputParser, SrunOutputParser) as "[R] text" (stdout), "[R]! text" (stderr), "text" (mpirun's own
// line from stdout) or "! text" (from stderr).
struct MarkedLines {
  std::vector<std::string> lines;
  RankLineParser::OnLine on_line() {
    return [this](const RankLine& l) {
      const std::string rank = l.rank ? "[" + std::to_string(*l.rank) + "]" : "";
      const std::string mark = rank + (l.is_stdout ? "" : "!");
      lines.push_back(mark.empty() ? std::string(l.text) : mark + " " + std::string(l.text));
    };
  }
};

// What Open MPI 4.1 printed for two ranks that wrote "rR-ab", slept, then "cd\n" (see
// launcher_test.py's partial modes): a chunk that ends mid-line gets no '\n', so the next rank's
// tag follows on the same line.
TEST(MpiOutput, ChunksEndingMidLineAreJoinedPerRank) {
  MpiOutputParser p(true);
  MarkedLines out;
  p.feed("[1,0]<stdout>:r0-ab[1,1]<stdout>:r1-ab[1,0]<stdout>:cd\n"
         "[1,0]<stdout>:r0-second[1,1]<stdout>:cd\n"
         "[1,1]<stdout>:r1-second[1,0]<stdout>:-end\n",
         out.on_line());
  EXPECT_THAT(out.lines, ElementsAre("[0] r0-abcd", "[1] r1-abcd", "[0] r0-second-end"));
  p.feed("[1,0]<stdout>:r0-nonl[1,1]<stdout>:-end\n[1,1]<stdout>:r1-nonl", out.on_line());
  EXPECT_THAT(out.lines, ElementsAre("[0] r0-abcd", "[1] r1-abcd", "[0] r0-second-end", "[1] r1-second-end"));
  // At EOF the partial lines still pending are lines, by rank.
  p.finish(out.on_line());
  EXPECT_THAT(out.lines, ElementsAre("[0] r0-abcd", "[1] r1-abcd", "[0] r0-second-end", "[1] r1-second-end",
                                     "[0] r0-nonl", "[1] r1-nonl"));
}

TEST(MpiOutput, SeveralLinesInOneChunkAndEmptyLines) {
  MpiOutputParser p(true);
  MarkedLines out;
  // One chunk "a\n\nb\n" of rank 2: a tag after each '\n' but the last.
  p.feed("[1,2]<stdout>:a\n[1,2]<stdout>:\n[1,2]<stdout>:b\n", out.on_line());
  EXPECT_THAT(out.lines, ElementsAre("[2] a", "[2] ", "[2] b"));
}

TEST(MpiOutput, EveryCutOfTheStreamGivesTheSameLines) {
  // Cut anywhere, inside a tag too ("[1,1]<std" + "out>:..."), the stream gives the same lines.
  const std::string stream =
      "[1,0]<stdout>:x[y[1,1]<stdout>:uv[1,0]<stdout>:z]\n[1,1]<stdout>:w\n[1,12]<stdout>:[1,0]\n";
  for (size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= stream.size(); ++cut2) {
      MpiOutputParser p(true);
      MarkedLines out;
      p.feed(std::string_view(stream).substr(0, cut1), out.on_line());
      p.feed(std::string_view(stream).substr(cut1, cut2 - cut1), out.on_line());
      p.feed(std::string_view(stream).substr(cut2), out.on_line());
      p.finish(out.on_line());
      // "[1,0]" alone is not a tag (no stream): text of rank 12.
      ASSERT_THAT(out.lines, ElementsAre("[0] x[yz]", "[1] uvw", "[12] [1,0]")) << cut1 << " " << cut2;
    }
  }
}

TEST(MpiOutput, StderrAndStddiagTagsAreStderrLines) {
  MpiOutputParser p(false);
  MarkedLines out;
  p.feed("[1,0]<stderr>:warn[1,1]<stddiag>:diag\n[1,0]<stderr>:ing\n", out.on_line());
  EXPECT_THAT(out.lines, ElementsAre("[1]! diag", "[0]! warning"));
}

TEST(MpiOutput, MpirunsOwnLinesPassUnchanged) {
  MpiOutputParser p(false);
  MarkedLines out;
  p.feed("-----\nPrimary job  terminated normally, but 1 process returned\n[1,0]<stderr>:oops\n"
         "[1,0]<stderr>:part[not a tag]",
         out.on_line());
  p.feed("\n[Warning] mpirun's own [1,x] text\nno newline", out.on_line());
  p.finish(out.on_line());
  EXPECT_THAT(out.lines, ElementsAre("! -----", "! Primary job  terminated normally, but 1 process returned",
                                     "[0]! oops", "[0]! part[not a tag]", "! [Warning] mpirun's own [1,x] text",
                                     "! no newline"));
}

// Rank 0 draws a progress bar ('\r', never '\n') in many chunks while rank 1 prints whole lines:
// rank 0's partial line comes out in pieces of kMaxLineBytes, rank 1's lines are untouched.
TEST(MpiOutput, APartialLineIsBounded) {
  MpiOutputParser p(true);
  MarkedLines out;
  const std::string frame = "\r[====>   ] 42%";
  for (size_t i = 0; i < 2 * kMaxLineBytes / frame.size() + 1; ++i) {
    p.feed("[1,0]<stdout>:" + frame + "[1,1]<stdout>:line\n", out.on_line());
  }
  size_t pieces = 0;
  for (const std::string& line : out.lines) {
    if (line.rfind("[0] ", 0) == 0) {
      ++pieces;
      EXPECT_EQ(line.size(), 4 + kMaxLineBytes);
    } else {
      EXPECT_EQ(line, "[1] line");
    }
  }
  EXPECT_EQ(pieces, 2u);
}

// A rank that prints "[1," and endless digits: not a tag (Open MPI's numbers are short), so it
// becomes text, bounded like any other, instead of being held as a possible tag forever.
TEST(MpiOutput, EndlessDigitsAreNotATag) {
  MpiOutputParser p(true);
  MarkedLines out;
  p.feed("[1,4]<stdout>:[1,", out.on_line());
  for (int i = 0; i < 20; ++i) p.feed(std::string(kMaxLineBytes / 8, '7'), out.on_line());
  ASSERT_FALSE(out.lines.empty());
  EXPECT_EQ(out.lines.front(), "[4] [1," + std::string(kMaxLineBytes - 3, '7'));
}

TEST(MpiOutput, AnUnfinishedTagAtTheEndIsText) {
  MpiOutputParser p(true);
  MarkedLines out;
  p.feed("[1,3]<stdout>:done [1,3]<std", out.on_line());
  EXPECT_TRUE(out.lines.empty());  // could still be a tag
  p.finish(out.on_line());
  EXPECT_THAT(out.lines, ElementsAre("[3] done [1,3]<std"));
}

TEST(Options, VersionAndNoRankPrefix) {
  Options options;
  int exit_code = -1;
  std::vector<const char*> version = {"strata-run", "--version"};
  testing::internal::CaptureStdout();
  EXPECT_FALSE(parse_options(2, const_cast<char**>(version.data()), options, exit_code));
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "strata-run " STRATA_TEST_VERSION "\n");
  EXPECT_EQ(exit_code, 0);
  std::vector<const char*> bare = {"strata-run", "--no-rank-prefix", "--", "prog"};
  EXPECT_TRUE(parse_options(4, const_cast<char**>(bare.data()), options, exit_code));
  EXPECT_FALSE(options.rank_prefix);
  EXPECT_THAT(options.program, ElementsAre("prog"));
}

TEST(Network, LocalHostsAndInterfaces) {
  EXPECT_TRUE(is_local_host("localhost"));
  EXPECT_TRUE(is_local_host("127.0.1.1"));
  EXPECT_FALSE(is_local_host("fakehost1"));
  EXPECT_TRUE(valid_network_interface("eth0"));
  EXPECT_TRUE(valid_network_interface("10.218.0.0/24"));
  EXPECT_FALSE(valid_network_interface("10.218.0.0/33"));
  EXPECT_FALSE(valid_network_interface("a b"));
  EXPECT_GT(find_free_port(), 0);
}

}  // namespace
}  // namespace strata::run

namespace strata::run {
namespace {

// srun --label: "N: " (right-aligned) marks a task's line; srun's own lines are unmarked.
TEST(SrunOutput, MarkedLinesAreTheTasks) {
  SrunOutputParser p(false);
  MarkedLines out;
  p.feed(" 3: loss 0.5\n12: a", out.on_line());
  p.feed("b: c\nsrun: error: vm: task 2: Killed\n 0:  two blanks\n7:no blank\n", out.on_line());
  p.feed("0: slurmstepd-vm: error: *** STEP 5.0 ON vm CANCELLED AT 2026-12-06T16:56:28 ***\n", out.on_line());
  p.feed("1: no newline", out.on_line());
  p.finish(out.on_line());
  EXPECT_THAT(out.lines, ElementsAre("[3]! loss 0.5", "[12]! ab: c", "! srun: error: vm: task 2: Killed",
                                     "[0]!  two blanks", "! 7:no blank",
                                     "! slurmstepd-vm: error: *** STEP 5.0 ON vm CANCELLED AT 2026-12-06T16:56:28 ***",
                                     "[1]! no newline"));
}

// srun sends a line longer than its 1024-byte messages as several, each marked: joined again, per
// task, whatever comes between.
TEST(SrunOutput, LongLinesAreJoined) {
  SrunOutputParser p(true);
  MarkedLines out;
  const std::string a(kSrunMessageBytes, 'a'), b(kSrunMessageBytes, 'b');
  const std::string stepd = "slurmstepd" + std::string(kSrunMessageBytes - 10, 's');
  p.feed("0: " + a + "\n1: " + b + "\n0: " + a + "\n1: end1\n0: end0\n2: " + a + "\n", out.on_line());
  p.feed("3: " + a + "\n3: " + stepd + "\n3: x\n", out.on_line());  // a piece that starts "slurmstepd"
  p.finish(out.on_line());
  EXPECT_THAT(out.lines, ElementsAre("[1] " + b + "end1", "[0] " + a + a + "end0", "[3] " + a + stepd + "x",
                                     "[2] " + a));
  // A line longer than kMaxLineBytes comes out in pieces of at most that many bytes.
  SrunOutputParser q(true);
  MarkedLines longer;
  for (size_t i = 0; i < 70; ++i) q.feed("4: " + a + "\n", longer.on_line());
  q.feed("4: end\n", longer.on_line());
  q.finish(longer.on_line());
  ASSERT_EQ(longer.lines.size(), 2u);
  EXPECT_LE(longer.lines[0].size(), kMaxLineBytes + 4);
  EXPECT_EQ(longer.lines[0].size() + longer.lines[1].size() - 8, 70 * kSrunMessageBytes + 3);
}

TEST(SrunOutput, FailedTaskAndItsCode) {
  const auto failure = [](std::string_view line) {
    const auto f = failed_task_in_srun_line(line);
    return f ? std::make_pair(f->rank, f->exit_code.value_or(-1)) : std::make_pair(-1, -1);
  };
  EXPECT_EQ(failure("srun: error: vm: task 2: Killed"), std::make_pair(2, 128 + SIGKILL));
  EXPECT_EQ(failure("srun: error: node07: task 13: Exited with exit code 3"), std::make_pair(13, 3));
  EXPECT_EQ(failure("srun: error: vm: tasks 0-1,3: Terminated"), std::make_pair(0, 128 + SIGTERM));
  EXPECT_EQ(failure("srun: error: vm: tasks 4,6: Exited with exit code 1"), std::make_pair(4, 1));
  EXPECT_EQ(failure("srun: error: vm: task 5: Segmentation fault"), std::make_pair(5, 128 + SIGSEGV));
  EXPECT_EQ(failure("srun: error: vm: task 5: Something new"), std::make_pair(5, -1));
  EXPECT_EQ(failure("srun: error: vm: task 1: Aborted (core dumped)"), std::make_pair(1, 128 + SIGABRT));
  EXPECT_EQ(failure("slurmstepd-vm: error: *** STEP 5.0 ON vm CANCELLED ***"), std::make_pair(-1, -1));
  EXPECT_EQ(failure("srun: error: Unable to create step: task 3"), std::make_pair(-1, -1));
  EXPECT_EQ(failure("2: srun: error: vm: task 2: Killed"), std::make_pair(-1, -1));
}

// One step per run: every rank on the placement's host, and the script gives each task its rank's
// variables (run here by sh, as srun's tasks run it).
TEST(SrunStep, ArgvHostfileAndScript) {
  const Placement placement = place_ranks({{"n1", 2, "a"}, {"n2", 1, "b"}}, 3);
  const SrunStep step = srun_step(placement, {"train", "--x", "it's"}, "strata-run-77");
  EXPECT_EQ(step.hostfile, "n1\nn1\nn2\n");
  ASSERT_GE(step.argv.size(), 4u);
  EXPECT_EQ(step.argv.front(), "srun");
  EXPECT_THAT(step.argv, ::testing::Contains("--ntasks=3"));
  EXPECT_THAT(step.argv, ::testing::Contains("--nodes=2"));
  EXPECT_THAT(step.argv, ::testing::Contains("--distribution=arbitrary"));
  for (const char* option : {"--label", "--overlap", "--kill-on-bad-exit=0", "--quiet", "--export=ALL",
                             "--input=none", "--job-name=strata-run-77"}) {
    EXPECT_THAT(step.argv, ::testing::Contains(option));
  }
  ASSERT_EQ(step.stop_argv.size(), 3u);
  EXPECT_THAT(step.stop_argv[2], HasSubstr("--name='strata-run-77'"));
  EXPECT_THAT(step.stop_argv[2], HasSubstr("scancel --signal=TERM"));
  EXPECT_THAT(std::vector<std::string>(step.argv.end() - 4, step.argv.end()),
              ElementsAre("strata-rank", "train", "--x", "it's"));
  const std::string script = srun_rank_script(placement);
  const auto run_task = [&](const std::string& procid) {
    const std::string command = "SLURM_PROCID=" + procid + " sh -c " + shell_quote(script) +
                                " strata-rank sh -c 'echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_SIZE $CROSS_RANK "
                                "$CROSS_SIZE' 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    std::string out;
    char buffer[256];
    while (fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    const int status = pclose(pipe);
    return std::make_pair(status, out);
  };
  EXPECT_EQ(run_task("0"), std::make_pair(0, std::string("0 0 3 2 0 2\n")));
  EXPECT_EQ(run_task("1"), std::make_pair(0, std::string("1 1 3 2 0 2\n")));
  EXPECT_EQ(run_task("2"), std::make_pair(0, std::string("2 0 3 1 1 2\n")));
  const auto beyond = run_task("3");
  EXPECT_NE(beyond.first, 0);
  EXPECT_EQ(beyond.second, "strata-run: srun started task 3; the run has 3 ranks\n");
}

}  // namespace
}  // namespace strata::run
