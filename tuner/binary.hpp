// The acceltune binary, for every place that starts it again in a hidden mode: trial workers,
// the ranks a kernel launches (nccl, mpi-coll), a kernel's far end. One setting, read by every
// such place. A kernel never asks /proc/self/exe: inside a test program that is the test
// program itself, whose "ranks" would rerun the whole suite and never connect. The command line
// sets it to its own path at start; test programs point it at the built acceltune.
#pragma once

#include <string>

#include "tuner/expected.hpp"

namespace acceltune {

void set_acceltune_binary(std::string path);

// The path set above, or a runtime error saying that none was set (a program that embeds the
// kernels must call set_acceltune_binary before it measures a kernel that launches processes).
Expected<std::string> acceltune_binary();

// A program the project builds beside the acceltune binary (the plain clients of delivered
// gains): the path in the variable `env_var` when set, else `name` beside acceltune_binary(). A
// missing one is a runtime error that says how to build it or point `env_var` at it; `what` names
// it there ("the MPI client").
Expected<std::string> companion_binary(const std::string& name, const std::string& env_var, const std::string& what);

// The path of the running program (/proc/self/exe), for the command line to set as above.
std::string running_program();

}  // namespace acceltune
