// Everything a command starts dies with it, however the command ends (exit, crash, SIGKILL).
//
// The command marks its environment with a variable of its own (ACCELTUNE_GUARD_<random hex>)
// that every process it starts inherits: trial workers, mpirun and the ranks it starts, peers,
// tools. It also starts a guardian: the acceltune binary (binary.hpp) in the hidden mode
// __guardian, in a process group of its own (a terminal's Ctrl-C does not reach it), holding the
// read end of a pipe whose write end only the command holds. When the command ends for any
// reason, the pipe closes and the guardian kills every process whose environment carries the
// mark, until none is left, then exits. A process group is not enough: mpirun puts each rank in
// a group of its own, and a parent-death signal reaches only the direct child.
//
// The command also gets a scratch folder of its own, $TMPDIR/acceltune-XXXXXX, set as TMPDIR for
// itself and everything it starts (MPI job FIFOs, Open MPI's session folders, the tools' files);
// the guardian removes it after the sweep, so a killed command leaves no files behind either.
//
// Processes forked without exec keep the environment they were started with, so they do not
// carry the mark; the kernel that forks (the UCX far end) gives it a parent-death signal instead.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tuner/expected.hpp"

namespace acceltune {

class ProcessGuard {
 public:
  // Marks this process's environment and starts the guardian. Fails when the acceltune binary
  // is not set or cannot be started.
  static Expected<std::unique_ptr<ProcessGuard>> start();
  // Closes the pipe, waits (a few seconds at most) for the guardian's sweep, and removes the mark.
  ~ProcessGuard();
  ProcessGuard(const ProcessGuard&) = delete;
  ProcessGuard& operator=(const ProcessGuard&) = delete;

  const std::string& variable() const { return variable_; }
  const std::string& scratch() const { return scratch_; }
  pid_t guardian_pid() const { return guardian_; }

 private:
  ProcessGuard() = default;
  std::string variable_;
  std::string scratch_;
  std::optional<std::string> old_tmpdir_;
  int pipe_write_ = -1;
  pid_t guardian_ = -1;
};

// Kills (SIGKILL) every process but this one whose environment holds `variable`, again and
// again until none is left or `seconds` have passed; returns how many it killed.
int kill_marked_processes(const std::string& variable, double seconds);

// The pids of the processes (this one excluded) whose environment holds `variable`.
std::vector<pid_t> marked_processes(const std::string& variable);

}  // namespace acceltune
