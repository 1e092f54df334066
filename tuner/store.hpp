// Result stores: append-only, one finished trial per record, durable per trial, replayed to
// resume. Stores register by name; "dir" is the study directory README.md describes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tuner/registry.hpp"
#include "tuner/value.hpp"

namespace acceltune {

class ResultStore {
 public:
  virtual ~ResultStore() = default;
  virtual std::string location() const = 0;
  // Takes the study for this process: a second writer is refused with a clear message. Held
  // until the store is destroyed (or the process dies).
  virtual Status lock() = 0;
  // Appends one structured event (a JSON object) to the study's log.
  virtual void log(const Json& event) = 0;
  // True when a study was created here before.
  virtual bool has_study() const = 0;
  // Starts a new study; fails when the location cannot be written.
  virtual Status create(const Json& study) = 0;
  virtual Expected<Json> read_study() const = 0;
  // Every finished trial, in order. A torn last record (a crash mid-write) is skipped and
  // counted in `torn`.
  virtual Expected<std::vector<Json>> read_trials(int* torn) const = 0;
  // Appends one finished trial; returns only once it is durable.
  virtual Status append(const Json& trial) = 0;
  virtual Status write_best(const Json& best) = 0;
  virtual Expected<Json> read_best() const = 0;
};

struct StoreInfo {
  std::string description;
  std::function<Expected<std::unique_ptr<ResultStore>>(const std::string& location)> open;
};
using StoreRegistry = Registry<StoreInfo>;

Expected<std::unique_ptr<ResultStore>> open_store(const std::string& kind, const std::string& location);

}  // namespace acceltune
