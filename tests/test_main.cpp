// The main of every test program: GoogleTest's, after pointing the kernels at the built acceltune
// binary, so a kernel measured in this process starts acceltune's hidden modes (its ranks, its
// workers), never this test program again.
#include <gtest/gtest.h>

#include "tests/helpers.hpp"
#include "tuner/binary.hpp"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  acceltune::set_acceltune_binary(acceltune::test::acceltune_binary());
  return RUN_ALL_TESTS();
}
