// The runtime loader libacceltune: which variables it sets, that it keeps the user's, that it
// refuses another machine's configuration, and that the installed package works from CMake's
// find_package and from pkg-config.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "acceltune/loader.h"
#include "tests/helpers.hpp"
#include "tuner/best.hpp"
#include "tuner/fingerprint.hpp"
#include "tuner/store.hpp"

namespace acceltune {
namespace {

std::string this_machine() { return probe_fingerprint()["id"].get<std::string>(); }

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Variables a test sets, removed again when it ends.
class CleanEnv {
 public:
  explicit CleanEnv(std::vector<std::string> names) : names_(std::move(names)) { clear(); }
  ~CleanEnv() { clear(); }

 private:
  void clear() {
    for (const auto& n : names_) unsetenv(n.c_str());
  }
  std::vector<std::string> names_;
};

TEST(Loader, FingerprintIsTheOneProbePrints) {
  auto r = test::run_cli({"probe", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json probe = Json::parse(r.out);
  EXPECT_EQ(std::string(acceltune_fingerprint()), probe["id"].get<std::string>());
  EXPECT_EQ(std::string(acceltune_loader_version()), acceltune_version());
}

TEST(Loader, SetsOnlyKnownPrefixes) {
  CleanEnv env({"NCCL_AT_TEST_A", "UCX_AT_TEST_B", "OMPI_MCA_at_test_c", "MPIR_CVAR_AT_TEST_D", "AT_TEST_PLAIN",
                "LD_AT_TEST_PRELOAD"});
  test::TempDir dir;
  test::write_file(dir / "tuned.env", "# acceltune: space x\n# acceltune fingerprint: " + this_machine() +
                                          "\nNCCL_AT_TEST_A=1\nUCX_AT_TEST_B=rc,sm\nOMPI_MCA_at_test_c=3\n"
                                          "MPIR_CVAR_AT_TEST_D=4\nAT_TEST_PLAIN=5\nLD_AT_TEST_PRELOAD=/x.so\n");
  const std::string path = (dir / "tuned.env").string();
  // Strict: an unknown prefix fails the call, and nothing at all is set.
  EXPECT_EQ(acceltune_apply(path.c_str(), ACCELTUNE_STRICT), ACCELTUNE_E_PREFIX);
  EXPECT_NE(std::string(acceltune_last_error()).find("AT_TEST_PLAIN"), std::string::npos) << acceltune_last_error();
  EXPECT_EQ(std::getenv("NCCL_AT_TEST_A"), nullptr);

  ASSERT_EQ(acceltune_apply(path.c_str(), 0), ACCELTUNE_OK) << acceltune_last_error();
  EXPECT_STREQ(acceltune_last_error(), "");
  EXPECT_EQ(acceltune_applied_count(), 4);
  EXPECT_EQ(env_or_empty("NCCL_AT_TEST_A"), "1");
  EXPECT_EQ(env_or_empty("UCX_AT_TEST_B"), "rc,sm");
  EXPECT_EQ(env_or_empty("OMPI_MCA_at_test_c"), "3");
  EXPECT_EQ(env_or_empty("MPIR_CVAR_AT_TEST_D"), "4");
  EXPECT_EQ(std::getenv("AT_TEST_PLAIN"), nullptr);
  EXPECT_EQ(std::getenv("LD_AT_TEST_PRELOAD"), nullptr);
}

TEST(Loader, KeepsWhatTheUserSetUnlessAsked) {
  CleanEnv env({"NCCL_AT_TEST_KEEP", "NCCL_AT_TEST_NEW"});
  test::TempDir dir;
  test::write_file(dir / "t.env",
                   "# acceltune fingerprint: " + this_machine() + "\nNCCL_AT_TEST_KEEP=tuned\nNCCL_AT_TEST_NEW=2\n");
  const std::string path = (dir / "t.env").string();
  setenv("NCCL_AT_TEST_KEEP", "user", 1);
  ASSERT_EQ(acceltune_apply(path.c_str(), ACCELTUNE_DRY_RUN), ACCELTUNE_OK) << acceltune_last_error();
  EXPECT_EQ(acceltune_applied_count(), 1);
  EXPECT_EQ(std::getenv("NCCL_AT_TEST_NEW"), nullptr);  // a dry run sets nothing
  ASSERT_EQ(acceltune_apply(path.c_str(), 0), ACCELTUNE_OK) << acceltune_last_error();
  EXPECT_EQ(acceltune_applied_count(), 1);
  EXPECT_EQ(acceltune_kept_count(), 1);
  EXPECT_EQ(env_or_empty("NCCL_AT_TEST_KEEP"), "user");
  EXPECT_EQ(env_or_empty("NCCL_AT_TEST_NEW"), "2");
  // Even an empty value is the user's choice.
  setenv("NCCL_AT_TEST_KEEP", "", 1);
  ASSERT_EQ(acceltune_apply(path.c_str(), 0), ACCELTUNE_OK);
  EXPECT_EQ(env_or_empty("NCCL_AT_TEST_KEEP"), "");
  ASSERT_EQ(acceltune_apply(path.c_str(), ACCELTUNE_OVERRIDE), ACCELTUNE_OK) << acceltune_last_error();
  EXPECT_EQ(acceltune_applied_count(), 2);
  EXPECT_EQ(env_or_empty("NCCL_AT_TEST_KEEP"), "tuned");
}

TEST(Loader, RefusesAnotherMachinesConfigUnlessForced) {
  CleanEnv env({"NCCL_AT_TEST_FP"});
  test::TempDir dir;
  const std::string other = this_machine() == "000000000000" ? "111111111111" : "000000000000";
  test::write_file(dir / "other.env", "# acceltune fingerprint: " + other + "\nNCCL_AT_TEST_FP=other\n");
  test::write_file(dir / "none.env", "NCCL_AT_TEST_FP=none\n");
  const std::string o = (dir / "other.env").string(), n = (dir / "none.env").string();
  EXPECT_EQ(acceltune_apply(o.c_str(), 0), ACCELTUNE_E_FINGERPRINT);
  const std::string err = acceltune_last_error();
  EXPECT_NE(err.find(other), std::string::npos) << err;
  EXPECT_NE(err.find(this_machine()), std::string::npos) << err;
  EXPECT_NE(err.find("ACCELTUNE_FORCE"), std::string::npos) << err;
  EXPECT_EQ(std::getenv("NCCL_AT_TEST_FP"), nullptr);
  EXPECT_EQ(acceltune_apply(n.c_str(), 0), ACCELTUNE_E_FINGERPRINT);
  EXPECT_NE(std::string(acceltune_last_error()).find("no hardware fingerprint"), std::string::npos);
  EXPECT_EQ(std::getenv("NCCL_AT_TEST_FP"), nullptr);

  ASSERT_EQ(acceltune_apply(o.c_str(), ACCELTUNE_FORCE), ACCELTUNE_OK) << acceltune_last_error();
  EXPECT_EQ(env_or_empty("NCCL_AT_TEST_FP"), "other");
  ASSERT_EQ(acceltune_apply(n.c_str(), ACCELTUNE_FORCE | ACCELTUNE_OVERRIDE), ACCELTUNE_OK);
  EXPECT_EQ(env_or_empty("NCCL_AT_TEST_FP"), "none");
}

TEST(Loader, BadInputIsOneLineWithACode) {
  test::TempDir dir;
  EXPECT_EQ(acceltune_apply(nullptr, 0), ACCELTUNE_E_ARGUMENT);
  EXPECT_EQ(acceltune_apply("", 0), ACCELTUNE_E_ARGUMENT);
  EXPECT_EQ(acceltune_apply((dir / "x.env").c_str(), 0x100), ACCELTUNE_E_ARGUMENT);
  EXPECT_NE(std::string(acceltune_last_error()).find("0x100"), std::string::npos);
  EXPECT_EQ(acceltune_apply((dir / "absent.env").c_str(), 0), ACCELTUNE_E_READ);
  EXPECT_NE(std::string(acceltune_last_error()).find("absent.env"), std::string::npos);
  test::write_file(dir / "bad.env", "# comment\nNCCL_OK=1\nthis is not a setting\n");
  EXPECT_EQ(acceltune_apply((dir / "bad.env").c_str(), ACCELTUNE_FORCE), ACCELTUNE_E_FORMAT);
  EXPECT_NE(std::string(acceltune_last_error()).find("bad.env:3: expected KEY=VALUE"), std::string::npos)
      << acceltune_last_error();
  test::write_file(dir / "bad.json", "{ not json");
  EXPECT_EQ(acceltune_apply((dir / "bad.json").c_str(), 0), ACCELTUNE_E_FORMAT);
  std::filesystem::create_directories(dir / "empty");
  EXPECT_EQ(acceltune_apply((dir / "empty").c_str(), 0), ACCELTUNE_E_FORMAT);
  EXPECT_NE(std::string(acceltune_last_error()).find("not a study directory"), std::string::npos);
  EXPECT_EQ(std::string(acceltune_last_error()).find('\n'), std::string::npos);
}

TEST(Loader, AppliesAStudyAndItsExports) {
  CleanEnv env({"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE"});
  test::TempDir dir;
  test::write_file(dir / "land.csv",
                   "algo,proto,buffsize,objective\nRing,Simple,4194304,10\nTree,LL128,4194304,20\n"
                   "Tree,LL128,8388608,30\nRing,LL,8388608,15\n");
  test::write_file(dir / "space.json", R"({
      "name": "nccl-land", "kernel": "replay", "operation": "allreduce", "landscape": "land.csv",
      "params": [
        {"name": "algo", "kind": "categorical", "values": ["Ring", "Tree"], "default": "Ring", "env": "NCCL_ALGO"},
        {"name": "proto", "kind": "categorical", "values": ["Simple", "LL", "LL128"], "default": "Simple",
         "env": "NCCL_PROTO"},
        {"name": "buffsize", "kind": "ordinal", "values": [4194304, 8388608], "default": 4194304,
         "env": "NCCL_BUFFSIZE"}]})");
  auto s = test::run_cli({"search", "--space", "space.json", "--strategy", "grid", "--out", "s"}, dir.path());
  ASSERT_EQ(s.exit_code, 0) << s.err;
  for (const std::string p : {"s", "s/best.json"}) {
    CleanEnv again({"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE"});
    ASSERT_EQ(acceltune_apply((dir / p).c_str(), 0), ACCELTUNE_OK) << p << ": " << acceltune_last_error();
    EXPECT_EQ(env_or_empty("NCCL_ALGO"), "Tree") << p;
    EXPECT_EQ(env_or_empty("NCCL_PROTO"), "LL128") << p;
    EXPECT_EQ(env_or_empty("NCCL_BUFFSIZE"), "8388608") << p;
  }
  auto e = test::run_cli({"export", "s", "--format", "nccl-conf", "-o", "nccl.conf"}, dir.path());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  CleanEnv again({"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE"});
  ASSERT_EQ(acceltune_apply((dir / "nccl.conf").c_str(), 0), ACCELTUNE_OK) << acceltune_last_error();
  EXPECT_EQ(acceltune_applied_count(), 3);
  EXPECT_EQ(env_or_empty("NCCL_ALGO"), "Tree");
  // The plain env export carries the fingerprint too; with its line removed it needs ACCELTUNE_FORCE.
  auto plain = test::run_cli({"export", "s", "--format", "env", "-o", "plain.env"}, dir.path());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  CleanEnv third({"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE"});
  EXPECT_EQ(acceltune_apply((dir / "plain.env").c_str(), 0), ACCELTUNE_OK) << acceltune_last_error();
  std::string stripped;
  for (const auto& line : test::lines_of(test::read_file(dir / "plain.env"))) {
    if (line.rfind("# acceltune fingerprint:", 0) != 0) stripped += line + "\n";
  }
  test::write_file(dir / "anonymous.env", stripped);
  EXPECT_EQ(acceltune_apply((dir / "anonymous.env").c_str(), 0), ACCELTUNE_E_FINGERPRINT);
  EXPECT_EQ(acceltune_apply((dir / "anonymous.env").c_str(), ACCELTUNE_FORCE), ACCELTUNE_OK) << acceltune_last_error();
}

// Runs a shell command; its exit status and output.
std::pair<int, std::string> shell(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

const char* kConsumer = R"c(#include <stdio.h>
#include <stdlib.h>
#include <acceltune/loader.h>
int main(int argc, char** argv) {
  if (argc < 2) return 3;
  int rc = acceltune_apply(argv[1], 0);
  if (rc != ACCELTUNE_OK) { fprintf(stderr, "%s\n", acceltune_last_error()); return rc; }
  const char* v = getenv("NCCL_AT_CONSUMER");
  printf("NCCL_AT_CONSUMER=%s applied=%d\n", v ? v : "(unset)", acceltune_applied_count());
  return 0;
}
)c";

TEST(Loader, InstalledPackageWorksFromCMakeAndPkgConfig) {
  for (const char* tool : {"cmake", "cc", "pkg-config"}) {
    if (shell(std::string("command -v ") + tool).first != 0) GTEST_SKIP() << tool << " is not installed";
  }
  test::TempDir dir;
  const auto prefix = dir / "prefix";
  auto inst =
      shell("cmake --install " + quoted(test::build_dir()) + " --component loader --prefix " + quoted(prefix));
  ASSERT_EQ(inst.first, 0) << inst.second;
  test::write_file(dir / "t.env", "# acceltune fingerprint: " + this_machine() + "\nNCCL_AT_CONSUMER=42\n");

  // find_package(acceltune) and the imported target.
  const auto proj = dir / "consumer";
  std::filesystem::create_directories(proj);
  test::write_file(proj / "main.c", kConsumer);
  test::write_file(proj / "CMakeLists.txt",
                   "cmake_minimum_required(VERSION 3.25)\nproject(consumer C)\n"
                   "find_package(acceltune 0.1 REQUIRED)\nadd_executable(consumer main.c)\n"
                   "target_link_libraries(consumer PRIVATE acceltune::loader)\n");
  auto conf = shell("cmake -S " + quoted(proj) + " -B " + quoted(proj / "build") +
                    " -DCMAKE_PREFIX_PATH=" + quoted(prefix) + " -DCMAKE_BUILD_TYPE=Release");
  ASSERT_EQ(conf.first, 0) << conf.second;
  auto build = shell("cmake --build " + quoted(proj / "build"));
  ASSERT_EQ(build.first, 0) << build.second;
  // The build tree's run path finds the installed library.
  auto run = shell(quoted(proj / "build" / "consumer") + " " + quoted(dir / "t.env"));
  EXPECT_EQ(run.first, 0) << run.second;
  EXPECT_EQ(run.second, "NCCL_AT_CONSUMER=42 applied=1\n");

  // pkg-config, from the .pc file wherever the package landed.
  auto pc = shell("find " + quoted(prefix) + " -name acceltune.pc");
  ASSERT_EQ(pc.first, 0) << pc.second;
  ASSERT_FALSE(pc.second.empty()) << "no acceltune.pc installed";
  const std::filesystem::path pc_dir = std::filesystem::path(pc.second.substr(0, pc.second.find('\n'))).parent_path();
  const std::string pkg = "PKG_CONFIG_PATH=" + quoted(pc_dir) + " pkg-config";
  auto flags = shell(pkg + " --cflags --libs acceltune");
  ASSERT_EQ(flags.first, 0) << flags.second;
  auto cc = shell("cc " + quoted(proj / "main.c") + " -o " + quoted(dir / "consumer-pc") + " $(" + pkg +
                  " --cflags --libs acceltune)");
  ASSERT_EQ(cc.first, 0) << cc.second;
  auto libdir = shell(pkg + " --variable=libdir acceltune");
  ASSERT_EQ(libdir.first, 0) << libdir.second;
  const std::string ld = libdir.second.substr(0, libdir.second.find('\n'));
  auto run2 = shell("LD_LIBRARY_PATH='" + ld + "' " + quoted(dir / "consumer-pc") + " " + quoted(dir / "t.env"));
  EXPECT_EQ(run2.first, 0) << run2.second;
  EXPECT_EQ(run2.second, "NCCL_AT_CONSUMER=42 applied=1\n");
  // A mismatched fingerprint comes back as the documented code.
  test::write_file(dir / "other.env", "# acceltune fingerprint: zzzzzzzzzzzz\nNCCL_AT_CONSUMER=1\n");
  auto run3 = shell("LD_LIBRARY_PATH='" + ld + "' " + quoted(dir / "consumer-pc") + " " + quoted(dir / "other.env"));
  EXPECT_EQ(run3.first, ACCELTUNE_E_FINGERPRINT) << run3.second;
  EXPECT_NE(run3.second.find("zzzzzzzzzzzz"), std::string::npos) << run3.second;
}

}  // namespace
}  // namespace acceltune
