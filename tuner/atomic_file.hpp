// A whole file replaced so that a reader sees the old file or the new one, never half of one: the
// content goes to a temporary file beside the target, is flushed to the disk (fsync), and is renamed
// over the target, whose folder is then flushed so that the rename survives a crash too. Every file
// acceltune rewrites (best.json, reports, exports, the plan's files, a bundle's files) goes
// through it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "tuner/expected.hpp"

namespace acceltune {

struct AtomicWrite {
  // The file in an error: "PATH: cannot write the page: WHY" (empty: "PATH: cannot write: WHY").
  std::string what{};
  // Mode 0777 less the umask instead of 0666 less the umask (a script).
  bool executable = false;
};

// Writes `content` to `path`. The error names the target; a place the user can change (a folder
// that is missing, read-only or not writable, a directory in the way) is an input error, the disk
// failing (full, I/O) a runtime error. A failure leaves the target as it was and no temporary.
Status write_file_atomically(const std::filesystem::path& path, std::string_view content,
                             const AtomicWrite& how = {});

}  // namespace acceltune
