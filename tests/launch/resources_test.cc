// Tests for launch/resources: hostfile and --include/--exclude parsing
// (DeepSpeed's documented examples), selection rules, CUDA_VISIBLE_DEVICES.
#include "launch/resources.h"

#include <gtest/gtest.h>

namespace zerotrain::launch {
namespace {

using Nodes = std::vector<NodeSlots>;

HostFacts two_hosts() {
  HostFacts f;
  f.hostfile = std::vector<HostfileEntry>{{"worker-0", 4}, {"worker-1", 4}};
  f.hostfile_path = "hosts.txt";
  f.hostname = "login";
  return f;
}

HostFacts cpu_host() {
  HostFacts f;
  f.hostname = "box";
  f.local_cpu_count = 2;
  return f;
}

HostFacts gpu_host(int gpus) {
  HostFacts f = cpu_host();
  f.local_gpu_count = gpus;
  return f;
}

Nodes select_ok(const HostFacts& f, SelectionArgs a) {
  StatusOr<Selection> s = select_resources(f, a);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? s->nodes : Nodes{};
}

std::string select_error(const HostFacts& f, SelectionArgs a) {
  StatusOr<Selection> s = select_resources(f, a);
  EXPECT_FALSE(s.ok());
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  return s.status().message();
}

TEST(NodeSpecs, ParsesDeepSpeedDocumentedExamples) {
  auto a = parse_node_specs("localhost:1", "--include");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<NodeSpec>{{"localhost", {1}}}));
  auto b = parse_node_specs("worker-0:0,1@worker-1:2", "--include");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<NodeSpec>{{"worker-0", {0, 1}}, {"worker-1", {2}}}));
  auto c = parse_node_specs("worker-0@worker-1:0,2", "--include");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<NodeSpec>{{"worker-0", {}}, {"worker-1", {0, 2}}}));
  EXPECT_TRUE(parse_node_specs("", "--include")->empty());
}

TEST(NodeSpecs, BadSyntaxNamesTheFlagAndTheToken) {
  auto expect_bad = [](const char* text, const char* needle) {
    auto r = parse_node_specs(text, "--exclude");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("--exclude"), std::string::npos);
  };
  expect_bad("worker-0:a", "slot 'a' of host 'worker-0'");
  expect_bad("worker-0:", "slot '' of host 'worker-0'");
  expect_bad("worker-0:1,,2", "slot ''");
  expect_bad("worker-0:-1", "slot '-1'");
  expect_bad("a@@b", "empty host name");
  expect_bad(":1", "empty host name");
  expect_bad("a:1:2", "more than one ':'");
}

TEST(Hostfile, ParsesSlotsCommentsAndBlankLines) {
  auto r = parse_hostfile("# cluster\n\nworker-0 slots=4\n  worker-1   slots = 2  # spare\n",
                          "hosts.txt");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].host, "worker-0");
  EXPECT_EQ((*r)[0].slots, 4);
  EXPECT_EQ((*r)[1].host, "worker-1");
  EXPECT_EQ((*r)[1].slots, 2);
}

// Open MPI's `host slots=N`, MPICH/Hydra's `host:N` (what MPIJob writes for
// Intel MPI and MPICH), bare hosts (one slot each: `scontrol show
// hostnames` output), FQDNs and IPv6 addresses.
TEST(Hostfile, TheFormatsClustersWrite) {
  auto r = parse_hostfile(
      "job-worker-0.job-worker.ns.svc slots=2\nnode3:4\nnode4\nfe80::1 slots=2\n# c\n", "hf");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].host, "job-worker-0.job-worker.ns.svc");
  EXPECT_EQ((*r)[0].slots, 2);
  EXPECT_EQ((*r)[1].host, "node3");
  EXPECT_EQ((*r)[1].slots, 4);
  EXPECT_EQ((*r)[2].host, "node4");
  EXPECT_EQ((*r)[2].slots, 1);
  EXPECT_EQ((*r)[3].host, "fe80::1");
  EXPECT_EQ((*r)[3].slots, 2);
}

TEST(Hostfile, ErrorsNameFileAndLine) {
  auto dup = parse_hostfile("a slots=1\n# c\nb slots=2\na slots=3\n", "hf");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("hf:4: host 'a' is listed twice"), std::string::npos)
      << dup.status().message();
  auto bad = parse_hostfile("a slots=1\n\nb gpus=2\n", "hf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hf:3: expected 'HOST slots=N'"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(parse_hostfile("a slots=x\n", "hf").ok());
  EXPECT_FALSE(parse_hostfile("a slots=0\n", "hf").ok());
  EXPECT_FALSE(parse_hostfile("a:0\n", "hf").ok());
  EXPECT_FALSE(parse_hostfile("a:x\n", "hf").ok());
  EXPECT_FALSE(parse_hostfile(":2\n", "hf").ok());
  auto empty = parse_hostfile("# nothing\n", "hf");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("lists no hosts"), std::string::npos);
  auto missing = read_hostfile("/nonexistent/hostfile");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(Select, IncludeFollowsDeepSpeedExamples) {
  HostFacts f = two_hosts();
  EXPECT_EQ(select_ok(f, {.include = "worker-0:0,1@worker-1:2"}),
            (Nodes{{"worker-0", {0, 1}}, {"worker-1", {2}}}));
  EXPECT_EQ(select_ok(f, {.include = "worker-0@worker-1:0,2"}),
            (Nodes{{"worker-0", {0, 1, 2, 3}}, {"worker-1", {0, 2}}}));
  // Hostfile order decides rank order, slots are sorted and deduplicated.
  EXPECT_EQ(select_ok(f, {.include = "worker-1:3,1,1@worker-0:2"}),
            (Nodes{{"worker-0", {2}}, {"worker-1", {1, 3}}}));
  // Naming a host twice unions its slots.
  EXPECT_EQ(select_ok(f, {.include = "worker-0:0@worker-0:3"}), (Nodes{{"worker-0", {0, 3}}}));
}

TEST(Select, ExcludeRemovesSlotsAndWholeHosts) {
  HostFacts f = two_hosts();
  EXPECT_EQ(select_ok(f, {.exclude = "worker-1:0"}),
            (Nodes{{"worker-0", {0, 1, 2, 3}}, {"worker-1", {1, 2, 3}}}));
  EXPECT_EQ(select_ok(f, {.exclude = "worker-0"}), (Nodes{{"worker-1", {0, 1, 2, 3}}}));
  EXPECT_NE(select_error(f, {.exclude = "worker-0@worker-1"}).find("no slots left"),
            std::string::npos);
}

TEST(Select, NonexistentHostsAndSlotsAreNamed) {
  HostFacts f = two_hosts();
  EXPECT_NE(select_error(f, {.include = "worker-2:0"})
                .find("--include names host 'worker-2', which is not in the hostfile hosts.txt"),
            std::string::npos);
  std::string slot = select_error(f, {.include = "worker-1:4"});
  EXPECT_NE(slot.find("slot 4 on host 'worker-1', which does not exist"), std::string::npos)
      << slot;
  EXPECT_NE(slot.find("slots=4"), std::string::npos) << slot;
  EXPECT_NE(select_error(f, {.exclude = "worker-0:7"}).find("slot 7 on host 'worker-0'"),
            std::string::npos);
  EXPECT_NE(select_error(cpu_host(), {.include = "worker-0"}).find("without a hostfile"),
            std::string::npos);
}

TEST(Select, FlagCombinationsFollowDeepSpeed) {
  HostFacts f = two_hosts();
  EXPECT_NE(select_error(f, {.include = "worker-0", .exclude = "worker-1"})
                .find("--include and --exclude are mutually exclusive"),
            std::string::npos);
  EXPECT_NE(select_error(f, {.include = "worker-0", .num_gpus = 1})
                .find("cannot combine --num_nodes/--num_gpus with --include/--exclude"),
            std::string::npos);
  EXPECT_NE(select_error(f, {.exclude = "worker-0", .num_nodes = 1}).find("cannot combine"),
            std::string::npos);
  EXPECT_NE(select_error(f, {.num_gpus = 0}).find("--num_gpus must be at least 1"),
            std::string::npos);
}

TEST(Select, NumNodesAndNumGpusTakeFirstHostsAndSlots) {
  HostFacts f = two_hosts();
  EXPECT_EQ(select_ok(f, {}), (Nodes{{"worker-0", {0, 1, 2, 3}}, {"worker-1", {0, 1, 2, 3}}}));
  EXPECT_EQ(select_ok(f, {.num_nodes = 1}), (Nodes{{"worker-0", {0, 1, 2, 3}}}));
  EXPECT_EQ(select_ok(f, {.num_gpus = 2}), (Nodes{{"worker-0", {0, 1}}, {"worker-1", {0, 1}}}));
  EXPECT_EQ(select_ok(f, {.num_gpus = 1, .num_nodes = 1}), (Nodes{{"worker-0", {0}}}));
  EXPECT_NE(select_error(f, {.num_nodes = 3}).find("--num_nodes 3 but there are 2 host(s)"),
            std::string::npos);
  EXPECT_NE(select_error(f, {.num_gpus = 5}).find("--num_gpus 5 but host 'worker-0' has only 4"),
            std::string::npos);
}

TEST(Select, CpuHostDefaultsToOneWorkerAndAcceptsAnyCount) {
  EXPECT_EQ(select_ok(cpu_host(), {}), (Nodes{{"localhost", {0}}}));
  EXPECT_EQ(select_ok(cpu_host(), {.num_gpus = 4}), (Nodes{{"localhost", {0, 1, 2, 3}}}));
  EXPECT_EQ(select_ok(cpu_host(), {.include = "localhost:1"}), (Nodes{{"localhost", {1}}}));
  EXPECT_EQ(select_ok(cpu_host(), {.include = "localhost:5,7"}), (Nodes{{"localhost", {5, 7}}}));
  StatusOr<Selection> many = select_resources(cpu_host(), {.num_gpus = 3});
  ASSERT_TRUE(many.ok());
  ASSERT_EQ(many->notes.size(), 1u);
  EXPECT_NE(many->notes[0].find("3 CPU workers on a host with 2 cores"), std::string::npos);
  EXPECT_NE(select_error(cpu_host(), {.num_nodes = 2}).find("--num_nodes 2"), std::string::npos);
}

TEST(Select, GpuHostSlotsAreDeviceIds) {
  EXPECT_EQ(select_ok(gpu_host(2), {}), (Nodes{{"localhost", {0, 1}}}));
  EXPECT_EQ(select_ok(gpu_host(2), {.include = "localhost:1"}), (Nodes{{"localhost", {1}}}));
  std::string e = select_error(gpu_host(2), {.include = "localhost:2"});
  EXPECT_NE(e.find("slot 2 on host 'localhost'"), std::string::npos) << e;
  EXPECT_NE(e.find("2 GPUs"), std::string::npos) << e;
  EXPECT_NE(select_error(gpu_host(2), {.num_gpus = 3}).find("has only 2 slot(s)"),
            std::string::npos);
}

TEST(VisibleDevices, WithoutFlagsBecomesTheInclude) {
  HostFacts f = gpu_host(4);
  f.cuda_visible_devices = "0,2";
  StatusOr<Selection> s = select_resources(f, {});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->nodes, (Nodes{{"localhost", {0, 2}}}));
  ASSERT_EQ(s->notes.size(), 1u);
  EXPECT_EQ(s->notes[0], "CUDA_VISIBLE_DEVICES=0,2 is set: using --include=localhost:0,2");
  // An empty value counts as unset.
  f.cuda_visible_devices = "";
  EXPECT_EQ(select_ok(f, {}), (Nodes{{"localhost", {0, 1, 2, 3}}}));
}

TEST(VisibleDevices, NumGpusTakesTheFirstNOfTheList) {
  HostFacts f = gpu_host(4);
  f.cuda_visible_devices = "3,1,2";
  EXPECT_EQ(select_ok(f, {.num_gpus = 2}), (Nodes{{"localhost", {3, 1}}}));
  EXPECT_NE(
      select_error(f, {.num_gpus = 4}).find("has only 3 slot(s) (CUDA_VISIBLE_DEVICES=3,1,2)"),
      std::string::npos);
  HostFacts cpu = cpu_host();  // on a CPU host the list still pins the slots
  cpu.cuda_visible_devices = "5,6";
  EXPECT_EQ(select_ok(cpu, {.num_gpus = 1}), (Nodes{{"localhost", {5}}}));
}

TEST(VisibleDevices, IncludeMustNameAListedDevice) {
  HostFacts f = gpu_host(4);
  f.cuda_visible_devices = "0,2";
  EXPECT_EQ(select_ok(f, {.include = "localhost:2"}), (Nodes{{"localhost", {2}}}));
  std::string e = select_error(f, {.include = "localhost:1"});
  EXPECT_NE(e.find("slot 1 on host 'localhost'"), std::string::npos) << e;
  EXPECT_NE(e.find("CUDA_VISIBLE_DEVICES=0,2"), std::string::npos) << e;
  EXPECT_EQ(select_ok(f, {.exclude = "localhost:0"}), (Nodes{{"localhost", {2}}}));
}

TEST(VisibleDevices, RejectsIdsThatDoNotExistOrAreNotIntegers) {
  HostFacts f = gpu_host(2);
  f.cuda_visible_devices = "0,5";
  EXPECT_NE(select_error(f, {}).find("device 5 does not exist on host 'localhost'"),
            std::string::npos);
  f.cuda_visible_devices = "GPU-1234";
  EXPECT_NE(select_error(f, {}).find("only comma-separated integer device ids"), std::string::npos);
  f.cuda_visible_devices = "1,1";
  EXPECT_NE(select_error(f, {}).find("lists device 1 twice"), std::string::npos);
}

TEST(VisibleDevices, HostfileWithOtherHostsIsRefusedLocalOnlyIsApplied) {
  HostFacts f = two_hosts();
  f.cuda_visible_devices = "1";
  std::string e = select_error(f, {});
  EXPECT_NE(e.find("CUDA_VISIBLE_DEVICES=1 is set but the hostfile hosts.txt names the other "
                   "host 'worker-0'"),
            std::string::npos)
      << e;
  HostFacts local;
  local.hostname = "box";
  local.hostfile = std::vector<HostfileEntry>{{"box", 4}};
  local.hostfile_path = "hf";
  local.cuda_visible_devices = "1,3";
  EXPECT_EQ(select_ok(local, {}), (Nodes{{"box", {1, 3}}}));
  local.cuda_visible_devices = "4";
  EXPECT_NE(select_error(local, {}).find("slots=4"), std::string::npos);
}

TEST(LocalHost, RecognisesLoopbackAndOwnNames) {
  EXPECT_TRUE(is_local_host("localhost", "node1.cluster"));
  EXPECT_TRUE(is_local_host("127.0.0.1", ""));
  EXPECT_TRUE(is_local_host("node1", "node1.cluster"));
  EXPECT_TRUE(is_local_host("node1.cluster", "node1"));
  EXPECT_TRUE(is_local_host("node1.cluster", "node1.cluster"));
  EXPECT_FALSE(is_local_host("node10", "node1"));
  EXPECT_FALSE(is_local_host("node1.other", "node1.cluster"));
  EXPECT_FALSE(is_local_host("worker-0", ""));
  EXPECT_EQ(format_node_slots({{"a", {0, 2}}, {"b", {1}}}), "a:0,2@b:1");
}

}  // namespace
}  // namespace zerotrain::launch
