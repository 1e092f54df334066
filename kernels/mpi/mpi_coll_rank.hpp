// mpi-coll's rank engine as the kernel (mpi_coll.cpp) uses it: the collectives' names, the lookup of
// MPI_T control variables, the Engine that every rank runs, and MPI's start and end. The
// definitions, with the watchdog of a rank and the `acceltune __mpi-rank` mode, are in
// mpi_coll_rank.cpp.
#pragma once

// The C API only: the deprecated C++ bindings need a library this binary does not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tuner/collectives.hpp"
#include "tuner/expected.hpp"
#include "tuner/measurement.hpp"
#include "tuner/value.hpp"

namespace acceltune::mpi_coll {

// ---------------------------------------------------------------------------------------------
// Collectives: the rows of tuner/collectives.hpp with an MPI name, found by it.

std::string collective_names();

// ---------------------------------------------------------------------------------------------
// MPI_T control variables: find, check and write one by name, with enum names mapped to values.

struct CvarInfo {
  int index = -1;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_enum enumtype = MPI_T_ENUM_NULL;
  int scope = 0, bind = 0;
};

Expected<CvarInfo> find_cvar(const std::string& name);
// Whether a numeric or boolean control variable is non-zero; read-only ones included.
std::optional<bool> cvar_is_set(const std::string& name);

// Ends a rank whose collective hangs or whose launcher is gone (mpi_coll_rank.cpp).
class Watchdog;

// ---------------------------------------------------------------------------------------------
// The engine: every rank executes the same requests; rank 0 receives them (from the study or
// from the FIFO of a launched job) and broadcasts them.

class Engine {
 public:
  explicit Engine(bool watch_parent);
  ~Engine();
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Rank 0: hands a request to every rank and executes it; returns the measurements.
  Json lead(const Json& request);
  void stop();
  // Ranks != 0: executes rank 0's requests until "stop".
  void follow();

 private:
  std::string broadcast(const std::string& text);

  // Every rank reports a state code (0 ok, 1 invalid, 2 failed) and an error text; all ranks
  // adopt the worst, and rank 0 gets every failing rank's text.
  std::pair<State, std::string> agree(State local, const std::string& error, MPI_Comm comm);

  Json execute(const Json& req);

  // Every rank returns the state the ranks agreed on; `local` is what this rank saw itself.
  Measurement measure_size(const CollectiveRow& coll, uint64_t bytes, const MeasureSettings& ms, int exit_rank,
                           MPI_Comm comm, State& local);

  std::string validate(const CollectiveRow& coll, const std::vector<float>& recv, size_t block) const;

  // Each rank's view of every outcome, for checking that the ranks agree: the state it returns
  // (the agreed one) and the one it saw itself.
  void trace(int64_t trial, uint64_t bytes, State local, State returned) const;

  int rank_ = 0, size_ = 1;
  bool stopped_ = false;
  std::string trace_prefix_;
  std::unique_ptr<Watchdog> watchdog_;
};

void init_mpi();
void finish_mpi();

}  // namespace acceltune::mpi_coll
