// acceltune lint: files the project's own emitters write are clean; one broken file per check, each
// finding named with its line; exit codes 0, 2 and 5; a missing ucx_info is a note, not a finding.
#include <gtest/gtest.h>

#include <cstdlib>

#include "probe/fingerprint.hpp"
#include "results/lint.hpp"
#include "tests/helpers.hpp"
#include "tuner/best.hpp"

namespace acceltune {
namespace {

using test::TempDir;

bool have(const char* tool) {
  return std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) == 0;
}
#define REQUIRE_TOOL(tool) \
  if (!have(tool)) GTEST_SKIP() << tool << " is not installed, so the check against the installed library cannot run"

// The findings of one file, as lint prints them.
std::string lint_text(const std::filesystem::path& file, const std::string& format = "") {
  std::string out;
  for (const auto& f : lint_file(file.string(), format)) out += to_string(f) + "\n";
  return out;
}

// "NAME:LINE: " for a file in the test's folder.
std::string at(const std::string& name, int line) { return name + ":" + std::to_string(line) + ": "; }

#define EXPECT_FINDING(out, name, line, words)                                                     \
  EXPECT_NE((out).find(at(name, line)), std::string::npos) << (out);                              \
  EXPECT_NE((out).find(words), std::string::npos) << (out)

BestTable table(const std::string& param, const std::string& var, std::vector<SizeRange> ranges) {
  BestTable b;
  b.space = "s";
  b.kernel = "replay";
  b.trials = b.trials_ok = 3;
  b.env = {{param, var}};
  b.default_config = Json{{param, nullptr}};
  b.export_config = ranges.front().config;
  b.study = Json{{"workload", Json{{"ranks", 4}}}, {"fingerprint", probe_fingerprint(ProbeScope::identity)}};
  b.ranges = std::move(ranges);
  return b;
}

TEST(Lint, TheEmittersFilesAreClean) {
  TempDir dir;
  const auto write = [&](const std::string& format, const BestTable& b, const std::string& name) {
    auto text = emit(format, b);
    ASSERT_TRUE(text) << format << ": " << text.error().message;
    test::write_file(dir / name, *text);
  };
  write("ompi-rules",
        table("alg", "OMPI_MCA_coll_tuned_allreduce_algorithm",
              {SizeRange{0, 65535, {}, Json{{"alg", "ring"}}, false},
               SizeRange{65536, UINT64_MAX, {}, Json{{"alg", "recursive_doubling"}}, false}}),
        "ompi-rules.conf");
  write("mpich-json",
        table("alg", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM",
              {SizeRange{0, 2047, {}, Json{{"alg", "recursive_doubling"}}, false},
               SizeRange{2048, UINT64_MAX, {}, Json{{"alg", "ring"}}, false}}),
        "selection.json");
  BestTable nccl = table("algo", "NCCL_ALGO",
                         {SizeRange{0, 65535, {}, Json{{"algo", "Tree"}}, false},
                          SizeRange{65536, 1048575, {}, Json{{"algo", nullptr}}, true},
                          SizeRange{1048576, UINT64_MAX, {}, Json{{"algo", "Ring"}}, false}});
  nccl.study["workload"]["operation"] = "allreduce";
  write("nccl-tuner", nccl, "nccl-tuner.conf");
  write("ucx-env", table("zc", "UCX_ZCOPY_THRESH", {SizeRange{0, UINT64_MAX, {}, Json{{"zc", "64K"}}, false}}),
        "ucx.env");
  for (const char* f : {"ompi-rules.conf", "selection.json", "nccl-tuner.conf", "ucx.env"}) {
    EXPECT_EQ(lint_text(dir / f), "") << f << ":\n" << test::read_file(dir / f);
  }
  const auto r = test::run_cli({"lint", (dir / "ompi-rules.conf").string(), (dir / "selection.json").string(),
                                (dir / "nccl-tuner.conf").string(), (dir / "ucx.env").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(Lint, UcxNamesValuesAndTransports) {
  REQUIRE_TOOL("ucx_info");
  TempDir dir;
  test::write_file(dir / "ucx.env",
                   "# hand edited\n"
                   "UCX_ZCOPY_TRESH=64K\n"      // 2: misspelled
                   "UCX_RNDV_THRESH=lots\n"     // 3: not a size
                   "UCX_TLS=sm,tcpp\n"          // 4: no such transport
                   "UCX_TCP_TX_SEG_SIZE=16K\n"  // a transport's own field
                   "UCX_SEG_SIZE=16K\n"         // the same field for every transport
                   "UCX_TCP_RNDV_THRESH=1M\n"   // 7: UCP's threshold takes no transport prefix
                   "not a line\n");             // 8
  const std::string out = lint_text(dir / "ucx.env");
  EXPECT_FINDING(out, "ucx.env", 2, "write UCX_ZCOPY_THRESH=64K");
  EXPECT_FINDING(out, "ucx.env", 3, "UCX_RNDV_THRESH='lots'");
  EXPECT_FINDING(out, "ucx.env", 4, "'tcp' for 'tcpp'");
  EXPECT_FINDING(out, "ucx.env", 7, "write UCX_RNDV_THRESH=1M");
  EXPECT_FINDING(out, "ucx.env", 8, "expected KEY=VALUE");
  EXPECT_EQ(out.find(at("ucx.env", 5)), std::string::npos) << out;
  EXPECT_EQ(out.find(at("ucx.env", 6)), std::string::npos) << out;
  const auto r = test::run_cli({"lint", (dir / "ucx.env").string()});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
}

TEST(Lint, WithoutUcxInfoTheUcxCheckIsSkippedWithTheReason) {
  TempDir dir;
  test::write_file(dir / "ucx.env", "UCX_ZCOPY_TRESH=64K\n");
  const auto r = test::run_cli({"lint", (dir / "ucx.env").string()}, {}, "PATH=/nonexistent");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("UCX check skipped: ucx_info is not installed"), std::string::npos) << r.err;
}

TEST(Lint, AValueOneStudyChoseThatGovernsAnotherPath) {
  REQUIRE_TOOL("ucx_info");
  TempDir dir;
  test::write_file(dir / "acceltune.env",
                   "# from ucx-shm (its own plan: verdict 'ships')\n"
                   "UCX_ZCOPY_THRESH=256K\n"  // 2: measured on shared memory only
                   "\n"
                   "# from ucx-shm (its own plan); ucx-tcp (its own plan)\n"
                   "UCX_RNDV_THRESH=64K\n"  // both paths measured
                   "# from ucx-shm (its own plan)\n"
                   "UCX_POSIX_SEG_SIZE=16K\n");  // one transport's own
  const std::string out = lint_text(dir / "acceltune.env");
  EXPECT_FINDING(out, "acceltune.env", 2, "set by ucx-shm but also governs ucx-tcp's path");
  EXPECT_NE(out.find("measure both paths"), std::string::npos) << out;
  EXPECT_EQ(out.find(at("acceltune.env", 5)), std::string::npos) << out;
  EXPECT_EQ(out.find(at("acceltune.env", 7)), std::string::npos) << out;
}

TEST(Lint, ARulesFileNeedsTheSwitchThatReadsIt) {
  TempDir dir;
  test::write_file(dir / "ompi-rules.conf", "1\n2\n1\n4\n1\n0 4 0 0\n");
  test::write_file(dir / "job.env", "OMPI_MCA_pml=ob1\nOMPI_MCA_coll_tuned_dynamic_rules_filename=" +
                                        (dir / "ompi-rules.conf").string() + "\nNCCL_TUNER_CONFIG_FILE=/nonexistent/t.csv\n");
  const std::string out = lint_text(dir / "job.env");
  EXPECT_FINDING(out, "job.env", 2, "write OMPI_MCA_coll_tuned_use_dynamic_rules=1");
  EXPECT_FINDING(out, "job.env", 3, "/nonexistent/t.csv, which does not exist");
}

TEST(Lint, OpenMpiRulesStructureOrderAndAlgorithms) {
  TempDir dir;
  test::write_file(dir / "r.conf",
                   "2  # collectives\n"
                   "2  # allreduce\n"
                   "1\n"
                   "4\n"
                   "3\n"
                   "0 4 0 0\n"
                   "65536 99 0 0\n"  // 7: no such algorithm
                   "1024 3 0 0\n"    // 8: below the previous size
                   "7  # bcast\n"
                   "1\n"
                   "4\n"
                   "2\n"  // 12: promises two rules, one follows
                   "0 6 0 0\n");
  const std::string out = lint_text(dir / "r.conf", "ompi-rules");
  EXPECT_FINDING(out, "r.conf", 8, "message size 1024 is not above the previous rule's 65536");
  EXPECT_FINDING(out, "r.conf", 12, "the file ends where a message size should follow");
  if (have("ompi_info")) {
    EXPECT_FINDING(out, "r.conf", 7, "algorithm 99 is not one of the installed Open MPI's coll/tuned allreduce");
  }
  test::write_file(dir / "extra.conf", "1\n2\n1\n4\n1\n0 4 0 0\n0 4 0 0\n");
  const std::string extra = lint_text(dir / "extra.conf", "ompi-rules");
  EXPECT_FINDING(extra, "extra.conf", 7, "numbers after the 1 collective the count on line 1 declares");
}

TEST(Lint, NcclTablesThroughThePluginsReaderPairsAndRanges) {
  TempDir dir;
  test::write_file(dir / "nccl-tuner.conf",
                   "allreduce,0,65535,nvls,ll,-1,-1,-1\n"              // 1: NVLS runs Simple only
                   "allreduce,32768,1048575,ring,simple,-1,-1,-1\n"    // 2: overlaps line 1
                   "allreduce,2097152,4194303,tree,ll128,-1,-1,-1\n"  // 3: a gap before it
                   "broadcast,0,1000,tree,simple,-1,-1,-1\n"          // 4: broadcast is Ring only
                   "allreduce,0,100,rings,simple,-1,-1,-1\n");        // 5: the plugin refuses it
  const std::string out = lint_text(dir / "nccl-tuner.conf");
  EXPECT_FINDING(out, "nccl-tuner.conf", 1, "NCCL runs nvls with the simple protocol only");
  EXPECT_FINDING(out, "nccl-tuner.conf", 2, "overlap line 1's range 0..65535");
  EXPECT_FINDING(out, "nccl-tuner.conf", 3, "bytes 1048576..2097151 of allreduce fall between");
  EXPECT_FINDING(out, "nccl-tuner.conf", 4, "NCCL runs broadcast with ring only");
  EXPECT_FINDING(out, "nccl-tuner.conf", 5, "unknown algorithm 'rings'");
}

TEST(Lint, MpichSelectionTreeAndParseErrors) {
  TempDir dir;
  test::write_file(dir / "sel.json", R"({
  "collective=allreduce": {
    "comm_type=intra": {
      "comm_size=any": {
        "avg_msg_size<=65536": {"algorithm=MPIR_Allreduce_intra_recursive_doubling": {}},
        "avg_msg_size<=1024": {"algorithm=MPIR_Allreduce_intra_rign": {}},
        "avg_msg_size=any": {"algorithm=MPIR_Bcast_intra_binomial": {}}
      }
    }
  },
  "collective=allreduc": {}
}
)");
  const std::string out = lint_text(dir / "sel.json");
  EXPECT_FINDING(out, "sel.json", 6, "avg_msg_size<=1024 is not above line 5's bound 65536");
  EXPECT_FINDING(out, "sel.json", 6, "write algorithm=MPIR_Allreduce_intra_ring");
  EXPECT_FINDING(out, "sel.json", 7, "is an algorithm of bcast, under collective=allreduce");
  EXPECT_FINDING(out, "sel.json", 11, "write collective=allreduce");
  test::write_file(dir / "bad.json", "{\n \"collective=bcast\": {\n  \"x\" 1\n}\n}\n");
  EXPECT_FINDING(lint_text(dir / "bad.json"), "bad.json", 3, "not JSON");
}

TEST(Lint, AnExportForOtherHardwareNamesTheFieldsThatDiffer) {
  TempDir dir;
  test::write_file(dir / "x.env",
                   "# acceltune fingerprint: deadbeef0000\n"
                   "# acceltune fingerprint_fields: {\"cpu_model\":\"Other CPU\",\"logical_cpus\":4096}\n"
                   "NCCL_ALGO=Ring\n");
  const std::string out = lint_text(dir / "x.env");
  EXPECT_FINDING(out, "x.env", 2, "exported for other hardware (fingerprint deadbeef0000");
  EXPECT_NE(out.find("cpu_model (file \"Other CPU\""), std::string::npos) << out;
  EXPECT_NE(out.find("logical_cpus (file 4096"), std::string::npos) << out;
}

TEST(Lint, ExitCodesAndBundleFolders) {
  TempDir dir;
  test::write_file(dir / "mystery.txt", "hello world\n");
  EXPECT_EQ(test::run_cli({"lint", (dir / "mystery.txt").string()}).exit_code, 2);
  EXPECT_EQ(test::run_cli({"lint", (dir / "absent.env").string()}).exit_code, 2);
  EXPECT_EQ(test::run_cli({"lint", "--format", "yaml", (dir / "mystery.txt").string()}).exit_code, 2);
  // A bundle: its page, record and scripts are no lint targets.
  std::filesystem::create_directories(dir / "bundle");
  test::write_file(dir / "bundle/bringup.json", "{}\n");
  test::write_file(dir / "bundle/report.html", "<html></html>\n");
  test::write_file(dir / "bundle/job.sh", "#!/bin/sh\nexec \"$@\"\n");
  test::write_file(dir / "bundle/acceltune.env", "# no study's plan sets a variable\n");
  test::write_file(dir / "bundle/ompi-rules.conf", "# nothing to load\n");
  auto r = test::run_cli({"lint", (dir / "bundle").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  test::write_file(dir / "bundle/nccl-tuner.conf", "allreduce,0,100,ring,simple,99,-1,-1\n");
  r = test::run_cli({"lint", (dir / "bundle").string()});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("nccl-tuner.conf:1: "), std::string::npos) << r.out;
}

}  // namespace
}  // namespace acceltune
