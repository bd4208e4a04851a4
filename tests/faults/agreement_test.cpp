// The pure parts of issue 10's fault handling: what must agree across ranks and how a difference is
// named, the activity record that heartbeats carry, and the stall report built from them.
#include "faults/activity.hpp"
#include "manifest/manifest_agreement.hpp"
#include "faults/stall_report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace strata::rt {
namespace {

using nlohmann::json;

const std::vector<PluginIdentity> kPlugins{{"comm", "allreduce-mpi", "0.1.0", std::string(64, 'a')},
                                           {"precision", "amp", "0.2.0", std::string(64, 'b')}};

AgreementEntries entries(const std::string& manifest, std::vector<PluginIdentity> plugins = kPlugins) {
  return agreement_entries(json::parse(manifest), plugins);
}

TEST(Agreement, FlattensKeysAndReplacesLibrariesByIdentity) {
  const AgreementEntries e = entries(
      R"({"optimizer": {"params": {"lr": 0.001, "betas": [0.9, 0.99]}},
          "precision": {"library": "/opt/strata/libstrata_amp.so", "sha256": "00", "config": {"x": 1}}})");
  const AgreementEntries want{
      {"comm.library", "\"allreduce-mpi 0.1.0, sha256 aaaaaaaaaaaa\""},
      {"optimizer.params.betas[0]", "0.9"},
      {"optimizer.params.betas[1]", "0.99"},
      {"optimizer.params.lr", "0.001"},
      {"precision.config.x", "1"},
      {"precision.library", "\"amp 0.2.0, sha256 bbbbbbbbbbbb\""}};
  EXPECT_EQ(e, want);
}

TEST(Agreement, NvmePathsMayDifferPerRank) {
  EXPECT_TRUE(may_differ_per_rank("zero_optimization.offload_optimizer.nvme_path"));
  EXPECT_TRUE(may_differ_per_rank("offload.config.offload_param.nvme_path"));
  EXPECT_FALSE(may_differ_per_rank("zero_optimization.offload_optimizer.device"));
  const std::string a = R"({"zero_optimization": {"offload_optimizer": {"device": "nvme", "nvme_path": "/local/a"}}})";
  const std::string b = R"({"zero_optimization": {"offload_optimizer": {"device": "nvme", "nvme_path": "/local/b"}}})";
  EXPECT_EQ(first_difference({entries(a), entries(b)}), "");
}

TEST(Agreement, NamesTheFirstDifferingKeyWithValuesAndRanks) {
  const auto lr = [](const char* v) {
    return entries(std::string(R"({"optimizer": {"params": {"lr": )") + v + "}}, \"train_batch_size\": 8}");
  };
  EXPECT_EQ(first_difference({lr("0.001"), lr("0.05")}),
            "optimizer.params.lr: rank 0 has 0.001, rank 1 has 0.05");
  EXPECT_EQ(first_difference({lr("0.001"), lr("0.05"), lr("0.001"), lr("0.001")}),
            "optimizer.params.lr: ranks 0, 2-3 have 0.001, rank 1 has 0.05");
  EXPECT_EQ(first_difference({lr("0.001"), lr("0.001")}), "");
}

TEST(Agreement, AKeySetOnOneRankOnlyIsADifference) {
  EXPECT_EQ(first_difference({entries("{}"), entries(R"({"gradient_clipping": 1.0})")}),
            "gradient_clipping: rank 0 has (not set), rank 1 has 1.0");
}

TEST(Agreement, APluginFileThatDiffersIsNamedByItsHash) {
  std::vector<PluginIdentity> other = kPlugins;
  other[1].sha256 = std::string(64, 'c');
  EXPECT_EQ(first_difference({entries("{}"), entries("{}", other)}),
            "precision.library: rank 0 has \"amp 0.2.0, sha256 bbbbbbbbbbbb\", rank 1 has \"amp "
            "0.2.0, sha256 cccccccccccc\"");
}

TEST(Agreement, LongValuesAreShortened) {
  const std::string long_value(500, 'x');
  const std::string message = first_difference(
      {entries(R"({"k": "a"})"), entries(std::string(R"({"k": ")") + long_value + "\"}")});
  EXPECT_LT(message.size(), 140u) << message;
  EXPECT_NE(message.find("..."), std::string::npos);
}

TEST(Agreement, EntriesSurviveTheWireFormat) {
  const AgreementEntries e = entries(R"({"a": {"b": "text with | and spaces"}, "c": [1, {"d": null}]})");
  EXPECT_EQ(decode_entries(encode_entries(e)), e);
}

TEST(Activity, SnapshotSurvivesTheWireFormat) {
  ActivitySnapshot s;
  s.call = ApiCall::Step;
  s.last_call = ApiCall::GradReady;
  s.call_arg = 7;
  s.step = 14;
  s.micro_step = 57;
  s.collectives = 311;
  s.collective = "reduce_scatter";
  s.waiting = true;
  s.seconds = 2.5;
  const ActivitySnapshot t = ActivitySnapshot::decode(s.encode());
  EXPECT_EQ(t.call, s.call);
  EXPECT_EQ(t.last_call, s.last_call);
  EXPECT_EQ(t.call_arg, 7);
  EXPECT_EQ(t.step, 14u);
  EXPECT_EQ(t.micro_step, 57u);
  EXPECT_EQ(t.collectives, 311u);
  EXPECT_EQ(t.collective, "reduce_scatter");
  EXPECT_TRUE(t.waiting);
  EXPECT_DOUBLE_EQ(t.seconds, 2.5);
  EXPECT_THROW(ActivitySnapshot::decode("garbage"), std::invalid_argument);
  EXPECT_THROW(ActivitySnapshot::decode("99|0|-1|0|0|0|0|0|x"), std::invalid_argument);
  // Every call a heartbeat may name survives, the last one (strata_join) included.
  for (int call = 0; call <= static_cast<int>(kLastApiCall); ++call) {
    s.call = s.last_call = static_cast<ApiCall>(call);
    EXPECT_EQ(ActivitySnapshot::decode(s.encode()).call, s.call) << api_call_name(s.call);
  }
}

TEST(Activity, BoardTracksCallsCollectivesAndWaits) {
  ActivityBoard board;
  int64_t since = 0;
  EXPECT_FALSE(board.waiting(&since));
  board.enter_call(ApiCall::Step);
  EXPECT_EQ(board.start_collective("allreduce"), 1u);
  board.begin_wait();
  board.begin_wait();  // nested (a wait inside a blocking call) keeps the first start
  EXPECT_TRUE(board.waiting(&since));
  const int64_t first = since;
  board.end_wait();
  EXPECT_TRUE(board.waiting(&since));
  EXPECT_EQ(since, first);
  board.end_wait();
  EXPECT_FALSE(board.waiting(&since));
  board.set_progress(3, 6);
  board.leave_call();
  const ActivitySnapshot s = board.snapshot();
  EXPECT_EQ(s.call, ApiCall::None);
  EXPECT_EQ(s.last_call, ApiCall::Step);
  EXPECT_EQ(s.collective, "allreduce");
  EXPECT_EQ(s.collectives, 1u);
  EXPECT_EQ(s.step, 3u);
  EXPECT_FALSE(s.waiting);
}

ActivitySnapshot waiting_in_step(uint64_t collectives) {
  ActivitySnapshot s;
  s.call = ApiCall::Step;
  s.step = 14;
  s.micro_step = 14;
  s.collectives = collectives;
  s.collective = "allreduce";
  s.waiting = true;
  s.seconds = 6.0;
  return s;
}

TEST(StallReport, NamesWhoHasNotArrivedAndWhatEachLastDid) {
  const ActivityNames names{{"fc1.weight", "fc2.weight"}, {"fc1", "fc2"}};
  std::vector<PeerState> peers(3);
  peers[0].rank = 1;  // arrived
  peers[0].heard = true;
  peers[0].last = waiting_in_step(57);
  peers[1].rank = 2;  // stopped: silent for 6 s, last seen in host code after a grad_ready
  peers[1].heard = true;
  peers[1].last.last_call = ApiCall::GradReady;
  peers[1].last.call_arg = 1;
  peers[1].last.step = 14;
  peers[1].last.collectives = 56;
  peers[1].last.seconds = 0.2;
  peers[1].seconds_since_heard = 6.0;
  peers[2].rank = 3;  // behind: computing, still answering
  peers[2].heard = true;
  peers[2].last.step = 13;
  peers[2].last.collectives = 50;
  peers[2].last.seconds = 5.5;
  const std::string report = stall_report(0, waiting_in_step(57), 6.0, peers, 3.0, names);
  EXPECT_EQ(report,
            "stall: rank 0 has waited 6.0 s on allreduce #57 in strata_step (steps done: 14, "
            "micro-batches: 14, collectives: 57, last allreduce). Not arrived: rank 2: not "
            "responding for 6.0 s (stopped, swapped out or hung?); its last report: in host code "
            "for 0.2 s after strata_grad_ready('fc2.weight') (steps done: 14, micro-batches: 0, "
            "collectives: 56); rank 3: in host code for 5.5 s (steps done: 13, micro-batches: 0, "
            "collectives: 50). Arrived and waiting: rank 1.");
}

TEST(StallReport, GoneAndDepartedPeersAreSaidSo) {
  std::vector<PeerState> peers(2);
  peers[0].rank = 1;
  peers[0].lost = "connection closed without a goodbye";
  peers[1].rank = 2;
  peers[1].heard = true;
  peers[1].left = true;
  const std::string report = stall_report(0, waiting_in_step(5), 61.0, peers, 3.0, {});
  EXPECT_NE(report.find("rank 1: gone (connection closed without a goodbye)"), std::string::npos) << report;
  EXPECT_NE(report.find("rank 2: has left (strata_destroy)"), std::string::npos) << report;
}

TEST(StallReport, EveryoneWaitingPointsAtDifferentCollectives) {
  std::vector<PeerState> peers(1);
  peers[0].rank = 1;
  peers[0].heard = true;
  peers[0].last = waiting_in_step(9);
  const std::string report = stall_report(0, waiting_in_step(9), 61.0, peers, 3.0, {});
  EXPECT_NE(report.find("the ranks may have called different collectives"), std::string::npos) << report;
}

TEST(StallReport, RankLists) {
  EXPECT_EQ(rank_list({3}), "rank 3");
  EXPECT_EQ(rank_list({0, 1, 2, 5, 7, 8}), "ranks 0-2, 5, 7-8");
}

}  // namespace
}  // namespace strata::rt
