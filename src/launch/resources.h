// Resource selection for `zerotrain run`: hostfiles, --include/--exclude
// (DeepSpeed's syntax), --num_nodes/--num_gpus, and CUDA_VISIBLE_DEVICES.
// Everything here is a pure function of its arguments (no processes, no
// environment reads), so the rules are unit-tested exhaustively.
//
//   HostFacts facts;                       // what the machine looks like
//   facts.local_gpu_count = 0;             // CPU host
//   SelectionArgs args;
//   args.include = "localhost:1";
//   ZT_ASSIGN_OR_RETURN(Selection sel, select_resources(facts, args));
//   // sel.nodes == {{"localhost", {1}}}
//
// Rules (DeepSpeed's runner.py, plus the points marked "zerotrain"):
//  * Hostfile lines are `HOST slots=N`; `#` starts a comment; blank lines are
//    skipped; a duplicate host or malformed line is an error naming file:line.
//    A host's slots are the ids [0, N).
//  * Without a hostfile the only host is "localhost". With G > 0 GPUs
//    (counted from /proc/driver/nvidia/gpus) its slots are [0, G). With no
//    GPU it is a CPU host (zerotrain): the default is 1 worker, --num_gpus N
//    means N workers, and --include localhost:K accepts any K >= 0.
//  * include and exclude are mutually exclusive; --num_nodes/--num_gpus
//    cannot be combined with either. --num_nodes N keeps the first N hosts;
//    --num_gpus N keeps the first N slots of every host. A host, slot or
//    count that does not exist is an error naming it (DeepSpeed silently
//    takes fewer).
//  * A host named twice in --include gets the union of the slots (DeepSpeed:
//    the last one wins). Slots are sorted and deduplicated.
//  * CUDA_VISIBLE_DEVICES (integer ids only; empty counts as unset), when
//    the job is local-only (no hostfile, or a hostfile whose only host is
//    this machine), becomes that host's slot list: no flags = use exactly
//    those devices; --num_gpus N = the first N of them; --include/--exclude
//    may only name ids in it. With a hostfile naming any other host it is
//    refused as ambiguous (DeepSpeed ignores it there). Every decision is
//    reported in Selection::notes.
//
// Thread-safety: pure functions; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace zerotrain::launch {

struct HostfileEntry {
  std::string host;
  int slots = 0;
};

// Parses hostfile text; `path` only labels errors ("hosts.txt:3: ...").
StatusOr<std::vector<HostfileEntry>> parse_hostfile(std::string_view text, std::string_view path);
// Reads and parses a file; NotFound when it does not exist.
StatusOr<std::vector<HostfileEntry>> read_hostfile(const std::string& path);

// One host and the slot (device) ids used on it, in order.
struct NodeSlots {
  std::string host;
  std::vector<int> slots;
  bool operator==(const NodeSlots&) const = default;
};

// One element of NODE_SPEC[@NODE_SPEC...]: NAME[:SLOT[,SLOT...]].
struct NodeSpec {
  std::string host;
  std::vector<int> slots;  // empty = every slot of the host
  bool operator==(const NodeSpec&) const = default;
};

// Parses --include/--exclude text; `flag` ("--include") labels errors.
StatusOr<std::vector<NodeSpec>> parse_node_specs(std::string_view text, std::string_view flag);

// What the launcher found out about the machine (gathered by launcher.cc).
struct HostFacts {
  std::optional<std::vector<HostfileEntry>> hostfile;  // nullopt = no hostfile
  std::string hostfile_path;                           // for messages
  int local_gpu_count = 0;
  int local_cpu_count = 0;  // for the "more CPU workers than cores" note; 0 = unknown
  std::optional<std::string> cuda_visible_devices;  // the user's value, if set
  std::string hostname;                             // this machine's name
};

// CUDA_VISIBLE_DEVICES as device ids; InvalidArgument for anything but
// distinct comma-separated integers.
StatusOr<std::vector<int>> parse_device_list(std::string_view cvd);

struct SelectionArgs {
  std::string include{}, exclude{};
  int num_gpus = -1, num_nodes = -1;  // -1 = not given
};

struct Selection {
  std::vector<NodeSlots> nodes;    // hosts in rank order, each with its slots
  std::vector<std::string> notes;  // decisions worth printing (CVD handling)
};

// Applies all the rules above. InvalidArgument names the offending flag,
// host or slot.
StatusOr<Selection> select_resources(const HostFacts& facts, const SelectionArgs& args);

// True for "localhost", "127.0.0.1", "::1" and `hostname` (also when one of
// them is the short form of the other: "node1" vs "node1.cluster").
bool is_local_host(std::string_view host, std::string_view hostname);

// "localhost:0,2@worker-1:1" — the selection in --include syntax.
std::string format_node_slots(const std::vector<NodeSlots>& nodes);

}  // namespace zerotrain::launch
