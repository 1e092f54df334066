// The ncclConfig_t fields of the nccl kernel's params, built against this NCCL's header
// (test_nccl_config) and against an NCCL 2.21 header without the newer fields
// (test_nccl_config_old, tests/fixtures/nccl-2.21): the kernel builds against both, applies what
// the header and the library have, and names the param it cannot apply.
#include <gtest/gtest.h>
#include <nccl.h>

#include <string>

#include "kernels/nccl/nccl_config.hpp"

namespace acceltune {
namespace {

using nlohmann::json;

TEST(NcclConfig, TheOldestFieldsAreApplied) {
  EXPECT_EQ(nccl_header_version(), ACCELTUNE_TEST_HEADER_VERSION);
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  const ncclConfig_t untouched = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(nccl_apply_config(json{{"channels", 8}, {"cga_cluster_size", 2}, {"min_ctas", -1}}, NCCL_VERSION_CODE, c),
            "");
  EXPECT_EQ(c.minCTAs, 8);
  EXPECT_EQ(c.maxCTAs, 8);
  EXPECT_EQ(c.cgaClusterSize, 2);
  EXPECT_EQ(c.blocking, untouched.blocking);
  // What the rank reports it passed to NCCL.
  const json fields = nccl_config_fields(c);
  EXPECT_EQ(fields.value("minCTAs", 0), 8);
  EXPECT_EQ(fields.value("maxCTAs", 0), 8);
  EXPECT_EQ(fields.value("cgaClusterSize", 0), 2);
  EXPECT_EQ(fields.contains("CTAPolicy"), NCCL_VERSION_CODE >= 22700);
  // -1 leaves a field to NCCL; explicit bounds win over channels' pair when both are given.
  ncclConfig_t d = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(nccl_apply_config(json{{"channels", -1}, {"max_ctas", 4}}, NCCL_VERSION_CODE, d), "");
  EXPECT_EQ(d.minCTAs, untouched.minCTAs);
  EXPECT_EQ(d.maxCTAs, 4);
}

TEST(NcclConfig, ANewerFieldIsAppliedOrNamed) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  const std::string why = nccl_apply_config(json{{"cta_policy", 1}, {"nvls_ctas", 16}}, NCCL_VERSION_CODE, c);
#if NCCL_VERSION_CODE >= 22700
  EXPECT_EQ(why, "");
  EXPECT_EQ(c.CTAPolicy, 1);
  EXPECT_EQ(c.nvlsCTAs, 16);
#else
  EXPECT_NE(why.find("param 'nvls_ctas' needs NCCL 2.27 or newer (this build's header is 2.21"), std::string::npos)
      << why;
#endif
  ncclConfig_t d = NCCL_CONFIG_INITIALIZER;
  const std::string per_peer = nccl_apply_config(json{{"channels_per_net_peer", 2}}, NCCL_VERSION_CODE, d);
#if NCCL_VERSION_CODE >= 22800
  EXPECT_EQ(per_peer, "");
  EXPECT_EQ(d.nChannelsPerNetPeer, 2);
#else
  EXPECT_NE(per_peer.find("'channels_per_net_peer' needs NCCL 2.28"), std::string::npos) << per_peer;
#endif
  // Unset, a newer param costs nothing on any NCCL.
  ncclConfig_t e = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(nccl_apply_config(json{{"cta_policy", -1}, {"channels_per_net_peer", -1}}, 21700, e), "");
}

// A library older than the header does not read the newer fields: a param that needs them is
// named, not silently dropped.
TEST(NcclConfig, ALibraryOlderThanTheParamIsNamed) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  const std::string why = nccl_apply_config(json{{"cta_policy", 1}}, 22105, c);
  EXPECT_NE(why.find("param 'cta_policy' needs NCCL 2.27 or newer"), std::string::npos) << why;
  EXPECT_NE(why.find("the library 2.21"), std::string::npos) << why;
}

}  // namespace
}  // namespace acceltune
