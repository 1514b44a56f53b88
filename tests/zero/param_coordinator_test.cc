// ParamCoordinator against a fake backend that records every call and
// checks the call protocol (start -> finish -> release) and the live bound
// at each start.
#include "zero/param_coordinator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace zerotrain::zero {
namespace {

struct Event {
  char kind;  // 's' start, 'f' finish, 'r' release
  int group;
  bool operator==(const Event&) const = default;
};

class FakeBackend : public GatherBackend {
 public:
  explicit FakeBackend(std::vector<int64_t> numel) : numel_(std::move(numel)), state_(numel_.size()) {}
  Status start_gather(int g) override {
    EXPECT_EQ(state_[g], 0) << "start of group " << g << " while gathered";
    state_[g] = 1;
    live_ += numel_[g];
    high_ = std::max(high_, live_);
    events.push_back({'s', g});
    return Status();
  }
  Status finish_gather(int g) override {
    EXPECT_EQ(state_[g], 1) << "finish of group " << g << " never started";
    state_[g] = 2;
    events.push_back({'f', g});
    return Status();
  }
  void release(int g) override {
    EXPECT_EQ(state_[g], 2) << "release of group " << g << " before its gather finished";
    state_[g] = 0;
    live_ -= numel_[g];
    events.push_back({'r', g});
  }
  bool readable(int g) const { return state_[g] == 2; }
  int64_t live() const { return live_; }
  int64_t high() const { return high_; }
  int starts(int g) const {
    return static_cast<int>(std::count(events.begin(), events.end(), Event{'s', g}));
  }
  std::vector<Event> events;

 private:
  std::vector<int64_t> numel_;
  std::vector<int> state_;
  int64_t live_ = 0, high_ = 0;
};

// GptModel's shape with L = 2 blocks: groups 0 (embeddings), 1, 2, 3 (ln_f);
// forward 0,1,2,{3,0}; backward {3,0},2,1,{} (the encoder's backward reads
// nothing).
std::vector<TraceStep> gpt_trace() {
  return {{{0}, "f0"}, {{1}, "f1"}, {{2}, "f2"}, {{3, 0}, "f3"},
          {{3, 0}, "b3"}, {{2}, "b2"}, {{1}, "b1"}, {{}, "b0"}};
}
const std::vector<int64_t> kNumel = {30, 100, 100, 5};

// Runs one micro-step, checking before every step that its groups are
// readable; returns the events.
void run_trace(ParamCoordinator& c, FakeBackend& b, const std::vector<TraceStep>& trace) {
  for (int i = 0; i < c.steps(); ++i) {
    ASSERT_TRUE(c.before_step(i).ok());
    for (int g : trace[i].groups) EXPECT_TRUE(b.readable(g)) << trace[i].name << " group " << g;
    ASSERT_TRUE(c.after_step(i).ok());
  }
  EXPECT_EQ(b.live(), 0) << "everything is released at the end of the trace";
  EXPECT_EQ(c.live(), 0);
}

TEST(ParamCoordinator, EveryStepFindsItsGroupsGatheredWithAndWithoutPrefetch) {
  for (int64_t bucket : {int64_t{0}, int64_t{50}, int64_t{1000}}) {
    FakeBackend b(kNumel);
    auto c = ParamCoordinator::create(gpt_trace(), kNumel, {.prefetch_bucket_size = bucket}, &b);
    ASSERT_TRUE(c.ok());
    run_trace(*c, b, gpt_trace());
    // Reuse 0: everything read in both passes is gathered twice, group 0
    // (also read by the head) three times.
    EXPECT_EQ(b.starts(0), 3);
    EXPECT_EQ(b.starts(1), 2);
    EXPECT_EQ(b.starts(3), 2);
    EXPECT_EQ(c->stats().prefetches > 0, bucket > 0) << bucket;
  }
}

TEST(ParamCoordinator, PrefetchStartsTheNextGroupsInOrderWithinTheBucket) {
  const std::vector<TraceStep> trace = {{{0}, "a"}, {{1}, "b"}, {{2}, "c"}, {{3}, "d"}};
  const std::vector<int64_t> numel = {10, 10, 10, 10};
  FakeBackend b(numel);
  auto c = ParamCoordinator::create(trace, numel, {.prefetch_bucket_size = 25}, &b);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->before_step(0).ok());
  // Group 0 on demand, then 1 and 2 ahead (20 <= 25); 3 would make 30.
  const std::vector<Event> want = {{'s', 0}, {'f', 0}, {'s', 1}, {'s', 2}};
  EXPECT_EQ(b.events, want);
  ASSERT_TRUE(c->after_step(0).ok());
  ASSERT_TRUE(c->before_step(1).ok());
  EXPECT_EQ(b.events.back(), (Event{'s', 3})) << "the window moved: 2 (gathered) + 3";
  EXPECT_EQ(c->stats().prefetches, 3);
}

TEST(ParamCoordinator, LiveBoundDefersPrefetchAndIsNeverExceeded) {
  for (int64_t bound : {int64_t{135}, int64_t{140}, int64_t{200}}) {
    FakeBackend b(kNumel);
    auto c = ParamCoordinator::create(
        gpt_trace(), kNumel,
        {.prefetch_bucket_size = 1000, .max_live_parameters = bound, .max_reuse_distance = 1000},
        &b);
    ASSERT_TRUE(c.ok());
    for (int rep = 0; rep < 2; ++rep) run_trace(*c, b, gpt_trace());
    EXPECT_LE(b.high(), bound) << bound;
    EXPECT_EQ(c->stats().live_high_water, b.high());
  }
  // Unbounded, the same run holds every group (235) at once: the bounds bind.
  FakeBackend b(kNumel);
  auto c = ParamCoordinator::create(gpt_trace(), kNumel,
                                    {.prefetch_bucket_size = 1000, .max_reuse_distance = 1000}, &b);
  ASSERT_TRUE(c.ok());
  run_trace(*c, b, gpt_trace());
  EXPECT_EQ(b.high(), 235);
}

TEST(ParamCoordinator, ReuseDistanceKeepsGroupsNeededSoon) {
  struct Case {
    int64_t reuse;
    int starts0, starts2, starts3;
  };
  // reuse 1: the head's groups {3, 0} stay from f3 to b3 (distance 0).
  // 211 > distance of group 2 after f2 (f3 + b3 = 2·35 = 70): kept too.
  // Group 0 after f0: distance 100 + 100 = 200 < 211: kept until b3.
  for (const Case& k : {Case{0, 3, 2, 2}, Case{1, 2, 2, 1}, Case{71, 2, 1, 1}, Case{211, 1, 1, 1}}) {
    FakeBackend b(kNumel);
    auto c = ParamCoordinator::create(gpt_trace(), kNumel, {.max_reuse_distance = k.reuse}, &b);
    ASSERT_TRUE(c.ok());
    run_trace(*c, b, gpt_trace());
    EXPECT_EQ(b.starts(0), k.starts0) << "reuse " << k.reuse;
    EXPECT_EQ(b.starts(2), k.starts2) << "reuse " << k.reuse;
    EXPECT_EQ(b.starts(3), k.starts3) << "reuse " << k.reuse;
  }
}

TEST(ParamCoordinator, AStepsOwnGroupsEvictKeptOnesWhenTheBoundRequires) {
  // Kept for reuse, group 0 (30) and 2 (100) would leave no room for group 1 (100).
  FakeBackend b(kNumel);
  auto c = ParamCoordinator::create(gpt_trace(), kNumel,
                                    {.max_live_parameters = 200, .max_reuse_distance = 1000}, &b);
  ASSERT_TRUE(c.ok());
  run_trace(*c, b, gpt_trace());
  EXPECT_GT(c->stats().evictions, 0);
  EXPECT_LE(b.high(), 200);
}

TEST(ParamCoordinator, AForwardWithoutBackwardIsReleasedByTheNextForward) {
  FakeBackend b(kNumel);
  auto c = ParamCoordinator::create(gpt_trace(), kNumel,
                                    {.prefetch_bucket_size = 1000, .max_reuse_distance = 1}, &b);
  ASSERT_TRUE(c.ok());
  for (int i = 0; i < 4; ++i) {  // evaluation: forward only
    ASSERT_TRUE(c->before_step(i).ok());
    ASSERT_TRUE(c->after_step(i).ok());
  }
  EXPECT_GT(c->live(), 0) << "the head's groups are kept for a backward that never comes";
  run_trace(*c, b, gpt_trace());  // the next micro-step starts clean
  EXPECT_FALSE(c->after_step(2).ok()) << "after_step without its before_step";
}

// DeepSpeed runs configs with stage3_max_live_parameters 0 (axolotl's,
// open-instruct's): the module that runs is always fetched; the bound only
// limits prefetch and what stays gathered. So below the largest step, each
// step gathers exactly what it reads and nothing else stays.
TEST(ParamCoordinator, ALiveBoundBelowTheLargestStepGathersOnlyWhatEachStepReads) {
  for (int64_t bound : {0, 99}) {
    FakeBackend b(kNumel);
    auto c = ParamCoordinator::create(
        gpt_trace(), kNumel,
        {.prefetch_bucket_size = 1000, .max_live_parameters = bound, .max_reuse_distance = 1000},
        &b);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    run_trace(*c, b, gpt_trace());
    EXPECT_EQ(b.high(), 100) << "bound " << bound << ": the largest step's own groups";
    EXPECT_EQ(c->live(), 0) << "bound " << bound;
  }
}

}  // namespace
}  // namespace zerotrain::zero
