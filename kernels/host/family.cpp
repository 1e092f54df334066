// The host family: copies between host buffers, the memory reference of every node.
#include "tuner/family.hpp"

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "host",
                   (::acceltune::FamilyInfo{.what = "the memory-path check: host buffer copies against the node's memory ceiling",
                                            .order = 10,
                                            .kernels = {"host-copy"},
                                            .spaces = {"host-copy"},
                                            .bringup = ::acceltune::always_runs(
                                                "the memory-path check: host memory copies against the node's ceiling (no library reads their params)",
                                                {{"host", "host-copy", nullptr, {}, 1, 10}}),
                                            .links = {"host-memory"},
                                            .advice = "no library reads host-copy's params: its best config is "
                                                      "advice for programs that copy memory themselves"}))
