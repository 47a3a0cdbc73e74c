//===- PlanTrafficTest.cpp - A plan's traffic and its picture -------------===//

#include "PlanTraffic.h"
#include "PlanPicture.h"

#include "m2n/plan_writer.h"
#include "plan_internal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace m2n::driver {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

/// Four ranks and a U8 [12] tensor that rank 0 holds whole. Rank 0 copies
/// it locally (three runs of 4 bytes); rank 1 receives bytes 0:6 in two
/// steps and forwards 0:4 to rank 3, which gets 4:6 from rank 0; rank 2
/// receives 6:12.
///   step 0: 0 -> 1 4 bytes, 0 -> 2 6 bytes
///   step 1: 0 -> 1 2 bytes, 1 -> 3 4 bytes, 0 -> 3 2 bytes
std::vector<uint8_t> relayPlan() {
  PlanWriter writer;
  writer.setWorldSize(4);
  writer.setStepCount(2);
  writer.setStagingBudget(1 << 20);
  writer.setSummary(18, 12, 5, 2000, 1000);
  uint32_t w = writer.addTensor("w", M2N_DTYPE_U8, {12});
  uint32_t source = writer.addBinding(0, w, M2N_ROLE_SOURCE, {0}, {12});
  uint32_t whole = writer.addBinding(0, w, M2N_ROLE_DESTINATION, {0}, {12});
  uint32_t first = writer.addBinding(1, w, M2N_ROLE_DESTINATION, {0}, {6});
  uint32_t second = writer.addBinding(2, w, M2N_ROLE_DESTINATION, {6}, {6});
  uint32_t forwarded = writer.addBinding(3, w, M2N_ROLE_DESTINATION, {0}, {6});

  PlanRuns copy;
  copy.fromBinding = source;
  copy.toBinding = whole;
  copy.runBytes = 4;
  copy.count = {3};
  copy.fromStride = {4};
  copy.toStride = {4};
  writer.copy(0, copy);

  writer.step(0, 0);
  writer.sendDirect(0, 1, source, 0, 4);
  writer.sendDirect(0, 2, source, 6, 6);
  writer.step(1, 0);
  writer.recvDirect(1, 0, first, 0, 4);
  writer.step(2, 0);
  writer.recvDirect(2, 0, second, 0, 6);

  writer.step(0, 1);
  writer.sendDirect(0, 1, source, 4, 2);
  writer.sendDirect(0, 3, source, 4, 2);
  writer.step(1, 1);
  writer.recvDirect(1, 0, first, 4, 2);
  writer.sendDirect(1, 3, first, 0, 4);
  writer.step(3, 1);
  writer.recvDirect(3, 1, forwarded, 0, 4);
  writer.recvDirect(3, 0, forwarded, 4, 2);

  writer.setTraffic(0, 14, 0);
  writer.setTraffic(1, 4, 6);
  writer.setTraffic(2, 0, 6);
  writer.setTraffic(3, 0, 6);
  return writer.finish();
}

class PlanTraffic : public ::testing::Test {
protected:
  void SetUp() override {
    std::vector<uint8_t> bytes = relayPlan();
    m2n_status_t status =
        m2n_plan_load_memory(bytes.data(), bytes.size(), &plan_);
    ASSERT_EQ(status, nullptr) << m2n_status_message(status);
  }
  void TearDown() override { m2n_plan_destroy(plan_); }

  const LoadedPlan &plan() const { return plan_->plan; }

  m2n_plan_t plan_ = nullptr;
};

TEST_F(PlanTraffic, SumsEveryPairOverAllSteps) {
  Traffic traffic = trafficOf(plan());
  ASSERT_EQ(traffic.size, 4u);
  EXPECT_THAT(traffic.bytes, ElementsAre(0, 6, 6, 2, //
                                         0, 0, 0, 4, //
                                         0, 0, 0, 0, //
                                         0, 0, 0, 0));
  EXPECT_EQ(traffic.pairMessages(0, 1), 2u);
  EXPECT_EQ(traffic.pairMessages(1, 3), 1u);
  EXPECT_EQ(traffic.wireBytes, 18u);
  EXPECT_EQ(traffic.messageCount, 5u);
}

TEST_F(PlanTraffic, TotalsEachRank) {
  Traffic traffic = trafficOf(plan());
  EXPECT_THAT(traffic.sendBytes, ElementsAre(14, 4, 0, 0));
  EXPECT_THAT(traffic.receiveBytes, ElementsAre(0, 6, 6, 6));
  EXPECT_THAT(traffic.sendMessages, ElementsAre(4, 1, 0, 0));
  EXPECT_THAT(traffic.receiveMessages, ElementsAre(0, 2, 1, 2));
}

TEST_F(PlanTraffic, KeepsLocalCopiesOffTheWire) {
  Traffic traffic = trafficOf(plan());
  EXPECT_THAT(traffic.localCopyBytes, ElementsAre(12, 0, 0, 0));
  EXPECT_EQ(traffic.localCopyTotal, 12u);
  EXPECT_EQ(traffic.pairBytes(0, 0), 0u);
}

TEST_F(PlanTraffic, SummarizesEachStep) {
  Traffic traffic = trafficOf(plan());
  ASSERT_EQ(traffic.steps.size(), 2u);
  const StepTraffic &first = traffic.steps[0];
  EXPECT_EQ(first.messages, 2u);
  EXPECT_EQ(first.bytes, 10u);
  EXPECT_EQ(first.largestMessage, 6u);
  EXPECT_EQ(first.busiestSender, 0u);
  EXPECT_EQ(first.busiestSenderBytes, 10u);
  EXPECT_EQ(first.busiestReceiver, 2u);
  EXPECT_EQ(first.busiestReceiverBytes, 6u);
  // Ranks 0 and 1 both send 4 bytes in step 1: the lower rank is named.
  const StepTraffic &second = traffic.steps[1];
  EXPECT_EQ(second.messages, 3u);
  EXPECT_EQ(second.bytes, 8u);
  EXPECT_EQ(second.largestMessage, 4u);
  EXPECT_EQ(second.busiestSender, 0u);
  EXPECT_EQ(second.busiestSenderBytes, 4u);
  EXPECT_EQ(second.busiestReceiver, 3u);
  EXPECT_EQ(second.busiestReceiverBytes, 6u);
}

TEST_F(PlanTraffic, SumsBlocksOfRanks) {
  // Blocks of 3: ranks 0-2 and rank 3.
  Traffic blocks = inBlocks(trafficOf(plan()), 3);
  ASSERT_EQ(blocks.size, 2u);
  EXPECT_THAT(blocks.bytes, ElementsAre(12, 6, 0, 0));
  EXPECT_THAT(blocks.messages, ElementsAre(3, 2, 0, 0));
  EXPECT_THAT(blocks.sendBytes, ElementsAre(18, 0));
  EXPECT_THAT(blocks.receiveBytes, ElementsAre(12, 6));
  EXPECT_THAT(blocks.localCopyBytes, ElementsAre(12, 0));
  EXPECT_EQ(blocks.wireBytes, 18u);
  EXPECT_TRUE(blocks.steps.empty());
}

TEST(PictureBlockSize, DrawsUpTo128RanksOneByOne) {
  EXPECT_EQ(pictureBlockSize(1), 1u);
  EXPECT_EQ(pictureBlockSize(128), 1u);
  EXPECT_EQ(pictureBlockSize(129), 2u);
  EXPECT_EQ(pictureBlockSize(384), 3u);
  EXPECT_EQ(pictureBlockSize(385), 4u);
}

size_t occurrences(const std::string &text, const std::string &what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++count;
  return count;
}

TEST_F(PlanTraffic, DrawsACellPerPairAndTheImbalance) {
  std::string svg = drawSvg("relay.m2n", plan().header(), trafficOf(plan()));
  EXPECT_EQ(occurrences(svg, "class=\"cell\""), 4u);
  EXPECT_EQ(occurrences(svg, "class=\"send\""), 2u);
  EXPECT_EQ(occurrences(svg, "class=\"receive\""), 3u);
  EXPECT_THAT(svg, HasSubstr("<title>rank 0 to rank 1: 6 bytes in 2 "
                             "messages</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>rank 0 sends 14 bytes in 4 messages, "
                             "copies 12 bytes locally</title>"));
  // Rank 0 sends 14 bytes against an average of 9 over the two senders.
  EXPECT_THAT(svg, HasSubstr("busiest sender: rank 0, 14 B, 1.56x the "
                             "average of 2 senders"));
  EXPECT_THAT(svg, HasSubstr("local copies 12 B within ranks (not drawn)"));
}

TEST(PlanPicture, DrawsManyRanksInBlocks) {
  // 129 ranks: rank 0 sends 4 bytes to rank 128, alone in the last block.
  PlanWriter writer;
  writer.setWorldSize(129);
  writer.setStepCount(1);
  uint32_t u = writer.addTensor("u", M2N_DTYPE_U8, {4});
  uint32_t source = writer.addBinding(0, u, M2N_ROLE_SOURCE, {0}, {4});
  uint32_t destination =
      writer.addBinding(128, u, M2N_ROLE_DESTINATION, {0}, {4});
  writer.step(0, 0);
  writer.sendDirect(0, 128, source, 0, 4);
  writer.step(128, 0);
  writer.recvDirect(128, 0, destination, 0, 4);
  writer.setTraffic(0, 4, 0);
  writer.setTraffic(128, 0, 4);
  std::vector<uint8_t> bytes = writer.finish();
  m2n_plan_t plan = nullptr;
  ASSERT_EQ(m2n_plan_load_memory(bytes.data(), bytes.size(), &plan), nullptr);
  std::string svg =
      drawSvg("wide.m2n", plan->plan.header(), trafficOf(plan->plan));
  m2n_plan_destroy(plan);
  EXPECT_THAT(svg, HasSubstr("129 ranks drawn in 65 blocks of 2 (the last of "
                             "1): each cell and bar is a block's total"));
  EXPECT_EQ(occurrences(svg, "class=\"cell\""), 1u);
  EXPECT_THAT(svg, HasSubstr("<title>ranks 0-1 to rank 128: 4 bytes in 1 "
                             "message</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>ranks 0-1 send 4 bytes in 1 message"
                             "</title>"));
}

TEST_F(PlanTraffic, EscapesTheName) {
  std::string svg =
      drawSvg("a<b>&\"c\".m2n", plan().header(), trafficOf(plan()));
  EXPECT_THAT(svg, HasSubstr("a&lt;b&gt;&amp;&quot;c&quot;.m2n"));
  EXPECT_THAT(svg, ::testing::Not(HasSubstr("a<b>")));
}

} // namespace
} // namespace m2n::driver
