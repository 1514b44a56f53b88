// File rendezvous: for launchers that give no address (plain mpirun across
// hosts, Slurm without a node list in reach), rank 0 publishes where its
// store listens in a file on a file system every rank shares, and the
// others wait for it (../shared/reference/clusters.md §5):
//
//   ZEROTRAIN_RDZV_FILE=/shared/run1.rdzv ZEROTRAIN_RDZV_ID=run1 mpirun -x ... zerotrain train
//
// The record is one line, `zerotrain-rdzv v1 <job id> <world size> <host>
// <port>`, written atomically (temporary file, fsync, rename) by rank 0. A
// file from another job id or world size is an old run's: waiting ranks
// ignore it until rank 0 replaces it, reopening it by name on every poll
// (100 ms, backing off to 1 s), so NFS attribute caching cannot pin an old
// answer. The wait is bounded by the comm timeout and its error names the
// file. The job secret is never written there.
//
// Thread-safety: one caller per path.
#pragma once

#include <chrono>
#include <string>

#include "core/status.h"

namespace zerotrain::comm {

struct RdzvRecord {
  std::string job_id;
  int world_size = 0;
  std::string host;
  int port = 0;
};

std::string format_rdzv_record(const RdzvRecord& r);
// InvalidArgument when the text is not a record.
StatusOr<RdzvRecord> parse_rdzv_record(std::string_view text);

// Rank 0: writes the record atomically over `path`.
Status publish_rdzv(const std::string& path, const RdzvRecord& record);

// Other ranks: the record for (job_id, world_size) once `path` holds it;
// Timeout naming the path (and what it held) after `timeout`.
StatusOr<RdzvRecord> await_rdzv(const std::string& path, const std::string& job_id, int world_size,
                                std::chrono::milliseconds timeout);

}  // namespace zerotrain::comm
