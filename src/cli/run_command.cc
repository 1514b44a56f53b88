// `zerotrain run`: DeepSpeed launcher flags mapped onto launch::LaunchOptions.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "launch/launcher.h"

namespace zerotrain::cli {

Runner add_run_command(CLI::App& app) {
  auto opts = std::make_shared<launch::LaunchOptions>();
  CLI::App* run = app.add_subcommand(
      "run", "start one worker per selected slot and supervise them (like `deepspeed`)");
  run->add_option("-i,--include", opts->include,
                  "slots to use, DeepSpeed syntax: localhost:1 or worker-0:0,1@worker-1:2");
  run->add_option("-e,--exclude", opts->exclude, "slots to leave out, same syntax as --include");
  run->add_option("--num_gpus,--num_accelerators", opts->num_gpus,
                  "workers per host (slots 0..N-1); on a host without GPUs, CPU workers");
  run->add_option("--num_nodes", opts->num_nodes, "use the first N hosts of the hostfile");
  run->add_option("-H,--hostfile", opts->hostfile, "MPI-style hostfile: `host slots=N` lines");
  run->add_option("--master_addr", opts->master_addr,
                  "address of rank 0's rendezvous store (default: 127.0.0.1, or the first host)");
  run->add_option("--master_port", opts->master_port,
                  "port of the rendezvous store (default: a free port for local jobs, else 29500)");
  run->add_option("--grace_period", opts->grace_period_s,
                  "seconds between SIGTERM and SIGKILL when stopping workers")
      ->capture_default_str();
  run->add_option("--nnodes", opts->nnodes,
                  "per-node agent mode: nodes in the job; run the same command on every node "
                  "(default from PET_NNODES or SKYPILOT_NUM_NODES)");
  run->add_option("--node_rank,--node-rank", opts->node_rank,
                  "per-node agent mode: this node's index (PET_NODE_RANK, SKYPILOT_NODE_RANK)");
  run->add_option("--nproc_per_node,--nproc-per-node", opts->nproc_per_node,
                  "per-node agent mode: workers on this node (PET_NPROC_PER_NODE, "
                  "SKYPILOT_NUM_GPUS_PER_NODE; default 1)");
  run->add_flag("--no_ssh,--no-ssh", opts->no_ssh,
                "per-node agent mode from the hostfile (DeepSpeed's --no_ssh): with --node_rank, "
                "this host's slots, the first host as master");
  run->add_option("--max_restarts,--max-restarts", opts->max_restarts,
                  "after a worker fails, restart all workers up to N times (each gets "
                  "ZEROTRAIN_RESTART_COUNT; `zerotrain train --save DIR` then resumes DIR's latest "
                  "checkpoint)")
      ->capture_default_str();
  run->add_option("--launcher", opts->launcher,
                  "how remote workers start: ssh (one per worker), or the whole job through "
                  "pdsh, openmpi, mpich, impi or slurm")
      ->capture_default_str();
  run->add_option("--launcher_args,--launcher-args", opts->launcher_args,
                  "extra arguments for that launcher (e.g. \"--oversubscribe\")");
  run->add_option("--ssh_port,--ssh-port", opts->ssh_port, "ssh -p PORT for remote workers");
  run->add_flag("--force_multi,--force-multi", opts->force_multi,
                "use --launcher even when every host is this one");
  run->add_flag("--dry-run,--dry_run", opts->dry_run,
                "print the command line and environment of every worker, run nothing");
  // Everything from the program name on belongs to the program, with or
  // without a `--` before it, as with `deepspeed train.py --flag`.
  run->prefix_command();
  return [run, opts]() {
    opts->command = run->remaining();
    if (!opts->command.empty() && opts->command.front() == kDashDashMarker)
      opts->command.erase(opts->command.begin());
    for (std::string& arg : opts->command)
      if (arg == kDashDashMarker) arg = "--";
    if (opts->command.empty()) {
      std::cerr << "zerotrain run: no program given (usage: zerotrain run [flags] -- PROG ARGS)\n";
      return 2;
    }
    return launch::run_launcher(*opts);
  };
}

}  // namespace zerotrain::cli
