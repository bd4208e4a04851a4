// The unique id through MPI (plugins/allreduce/nccl/src/mpi_bootstrap.cpp, compiled in), in real
// mpirun jobs: no NCCL call and no device. Every rank ends with rank 0's id, the session's rank
// and size are MPI_COMM_WORLD's, and MPI stays up across sessions until the last one ends (a
// second instance must not find MPI finalised).
#include "mpi_bootstrap.hpp"

#include <gtest/gtest.h>

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace {

using strata::allreduce_nccl::MpiSession;

ncclUniqueId patterned_id(int salt) {
  ncclUniqueId id{};
  for (size_t i = 0; i < sizeof id.internal; ++i) id.internal[i] = static_cast<char>(i * 13 + salt);
  return id;
}

void expect_rank_zeros_id(const MpiSession& session, int salt) {
  ncclUniqueId id = session.rank() == 0 ? patterned_id(salt) : ncclUniqueId{};
  session.broadcast(id);
  const ncclUniqueId expected = patterned_id(salt);
  EXPECT_EQ(std::memcmp(id.internal, expected.internal, sizeof id.internal), 0)
      << "rank " << session.rank();
}

TEST(MpiBootstrap, EveryRankGetsRankZerosIdAcrossSessions) {
  auto first = std::make_unique<MpiSession>();
  EXPECT_EQ(first->rank(), std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")));
  EXPECT_EQ(first->size(), std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE")));
  expect_rank_zeros_id(*first, 1);
  {
    const MpiSession second;  // a second instance while the first lives
    expect_rank_zeros_id(second, 2);
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  EXPECT_EQ(finalized, 0) << "the first session still needs MPI";
  first.reset();
  MPI_Finalized(&finalized);
  EXPECT_EQ(finalized, 1) << "the last session that initialised MPI finalises it";
}

}  // namespace
