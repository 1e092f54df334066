// The runtime loader libacceltune: which variables it sets, that it keeps the user's, that it
// refuses another machine's configuration, and that the installed package works from CMake's
// find_package and from pkg-config.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "acceltune/loader.h"
#include "tests/helpers.hpp"
#include "tests/study_files.hpp"
#include "tuner/best.hpp"
#include "probe/fingerprint.hpp"
#include "tuner/store.hpp"

namespace acceltune {
namespace {

// The fingerprint lines an export of a study measured here carries (tuner/best.hpp).
std::string this_machine() {
  const Json probe = probe_fingerprint();
  return "# acceltune fingerprint: " + probe["id"].get<std::string>() + "\n# acceltune fingerprint_fields: " +
         probe["loader_fields"].dump() + "\n";
}

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

TEST(Loader, FingerprintFieldsAreTheOnesProbePrints) {
  auto r = test::run_cli({"probe", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json probe = Json::parse(r.out);
  ASSERT_TRUE(probe.contains("loader_fields")) << r.out;
  EXPECT_EQ(Json::parse(acceltune_fingerprint()), probe["loader_fields"]);
  for (const char* k : {"cpu_model", "logical_cpus", "machine", "memory_gib", "numa", "nics", "gpus"}) {
    EXPECT_TRUE(probe["loader_fields"].contains(k)) << k;
  }
  EXPECT_EQ(std::string(acceltune_loader_version()), acceltune_version());
}

TEST(Loader, SetsOnlyKnownPrefixes) {
  CleanEnv env({"NCCL_AT_TEST_A", "UCX_AT_TEST_B", "OMPI_MCA_at_test_c", "MPIR_CVAR_AT_TEST_D", "AT_TEST_PLAIN",
                "LD_AT_TEST_PRELOAD"});
  test::TempDir dir;
  test::write_file(dir / "tuned.env", "# acceltune: space x\n" + this_machine() +
                                          "NCCL_AT_TEST_A=1\nUCX_AT_TEST_B=rc,sm\nOMPI_MCA_at_test_c=3\n"
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
                   this_machine() + "NCCL_AT_TEST_KEEP=tuned\nNCCL_AT_TEST_NEW=2\n");
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
  // The same machine with eight more GPUs of another kind.
  Json other = probe_fingerprint()["loader_fields"];
  for (int i = 0; i < 8; ++i) other["gpus"].push_back("10de:2335");
  test::write_file(dir / "other.env", "# acceltune fingerprint: 0123456789ab\n# acceltune fingerprint_fields: " +
                                          other.dump() + "\nNCCL_AT_TEST_FP=other\n");
  test::write_file(dir / "none.env", "NCCL_AT_TEST_FP=none\n");
  test::write_file(dir / "id-only.env", "# acceltune fingerprint: 0123456789ab\nNCCL_AT_TEST_FP=old\n");
  const std::string o = (dir / "other.env").string(), n = (dir / "none.env").string();
  EXPECT_EQ(acceltune_apply(o.c_str(), 0), ACCELTUNE_E_FINGERPRINT);
  const std::string err = acceltune_last_error();
  EXPECT_NE(err.find("gpus: measured on [\"10de:2335\""), std::string::npos) << err;  // names the field
  EXPECT_NE(err.find("0123456789ab"), std::string::npos) << err;
  EXPECT_NE(err.find("ACCELTUNE_FORCE"), std::string::npos) << err;
  EXPECT_EQ(std::getenv("NCCL_AT_TEST_FP"), nullptr);
  EXPECT_EQ(acceltune_apply(n.c_str(), 0), ACCELTUNE_E_FINGERPRINT);
  EXPECT_NE(std::string(acceltune_last_error()).find("no hardware fingerprint"), std::string::npos);
  EXPECT_EQ(acceltune_apply((dir / "id-only.env").c_str(), 0), ACCELTUNE_E_FINGERPRINT);
  EXPECT_NE(std::string(acceltune_last_error()).find("only the id 0123456789ab"), std::string::npos)
      << acceltune_last_error();
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
  EXPECT_NE(std::string(acceltune_last_error()).find("neither a study directory (no study.json) nor a bring-up bundle"),
            std::string::npos)
      << acceltune_last_error();
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
  // The loader given the study applies the plan the env export writes, line for line.
  int lines = 0;
  for (const auto& line : test::lines_of(test::read_file(dir / "plain.env"))) {
    if (line.empty() || line[0] == '#') continue;
    ++lines;
    const auto eq = line.find('=');
    CleanEnv fourth({"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE"});
    ASSERT_EQ(acceltune_apply((dir / "s").c_str(), 0), ACCELTUNE_OK) << acceltune_last_error();
    EXPECT_EQ(acceltune_applied_count(), 3);
    EXPECT_EQ(env_or_empty(line.substr(0, eq).c_str()), line.substr(eq + 1)) << line;
  }
  EXPECT_EQ(lines, 3);
  std::string stripped;
  for (const auto& line : test::lines_of(test::read_file(dir / "plain.env"))) {
    if (line.rfind("# acceltune fingerprint", 0) != 0) stripped += line + "\n";
  }
  test::write_file(dir / "anonymous.env", stripped);
  EXPECT_EQ(acceltune_apply((dir / "anonymous.env").c_str(), 0), ACCELTUNE_E_FINGERPRINT);
  EXPECT_EQ(acceltune_apply((dir / "anonymous.env").c_str(), ACCELTUNE_FORCE), ACCELTUNE_OK) << acceltune_last_error();
}


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
  test::write_file(dir / "t.env", this_machine() + "NCCL_AT_CONSUMER=42\n");

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
  test::write_file(dir / "other.env", "# acceltune fingerprint: zzzzzzzzzzzz\n# acceltune fingerprint_fields: "
                                      "{\"machine\": \"vax\"}\nNCCL_AT_CONSUMER=1\n");
  auto run3 = shell("LD_LIBRARY_PATH='" + ld + "' " + quoted(dir / "consumer-pc") + " " + quoted(dir / "other.env"));
  EXPECT_EQ(run3.first, ACCELTUNE_E_FINGERPRINT) << run3.second;
  EXPECT_NE(run3.second.find("zzzzzzzzzzzz"), std::string::npos) << run3.second;
}

// The communication libraries and device runtimes a loaded job must not find in its address space.
const char* kForeignLibraries[] = {"libcuda.so", "libcudart", "libnccl", "libnvidia-ml", "libucp", "libucs",
                                   "libuct", "libmpi", "libopen-pal", "libibverbs", "libhwloc"};

TEST(Loader, NeedsNoCommunicationLibraryOrDeviceRuntime) {
  const std::string lib = test::built_path("ACCELTUNE_LOADER_LIB", ACCELTUNE_LOADER_LIB);
  auto r = shell("readelf -d " + quoted(std::filesystem::path(lib)));
  if (r.first == 127) GTEST_SKIP() << "readelf is not installed (binutils)";
  ASSERT_EQ(r.first, 0) << r.second;
  int needed = 0;
  for (const auto& line : test::lines_of(r.second)) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    ++needed;
    for (const char* bad : kForeignLibraries) EXPECT_EQ(line.find(bad), std::string::npos) << line;
  }
  EXPECT_GT(needed, 0) << r.second;  // it does need libc: the dynamic section was read
}

// A study whose best config keeps an env-bound param at "default" (here NCCL_ALGO), loaded by a C
// job linked with the loader alone: the variable stays unset, the tuned one is set, and the job
// maps no communication library and runs one thread.
TEST(Loader, ALoadedJobGetsItsVariablesAndNothingElse) {
  test::TempDir dir;
  test::write_file(dir / "land.csv",
                   "algo,proto,objective\ndefault,Simple,10\ndefault,LL128,30\nRing,Simple,12\nRing,LL128,20\n");
  test::write_file(dir / "space.json", R"({
      "name": "nccl-default", "kernel": "replay", "operation": "allreduce", "landscape": "land.csv",
      "params": [
        {"name": "algo", "kind": "categorical", "values": ["default", "Ring"], "default": "default", "env": "NCCL_ALGO"},
        {"name": "proto", "kind": "categorical", "values": ["Simple", "LL128"], "default": "Simple",
         "env": "NCCL_PROTO"}]})");
  auto s = test::run_cli({"search", "--space", "space.json", "--strategy", "grid", "--certify-top", "0", "--out", "s"},
                         dir.path());
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const Json best = Json::parse(test::read_file(dir / "s" / "best.json"));
  ASSERT_EQ(best["export_config"]["algo"], "default") << best.dump();
  const std::string job = test::built_path("ACCELTUNE_LOADER_JOB", ACCELTUNE_LOADER_JOB);
  auto r = shell("env -u NCCL_ALGO -u NCCL_PROTO " + quoted(std::filesystem::path(job)) + " " + quoted(dir / "s") + " NCCL_ALGO NCCL_PROTO");
  ASSERT_EQ(r.first, 0) << r.second;
  EXPECT_NE(r.second.find("rc=0\n"), std::string::npos) << r.second;
  EXPECT_NE(r.second.find("NCCL_ALGO=(unset)\n"), std::string::npos) << r.second;
  EXPECT_NE(r.second.find("NCCL_PROTO=LL128\n"), std::string::npos) << r.second;
  EXPECT_NE(r.second.find("mapped="), std::string::npos) << r.second;  // the maps were read
  for (const auto& line : test::lines_of(r.second)) {
    if (line.rfind("mapped=", 0) != 0) continue;
    for (const char* bad : kForeignLibraries) EXPECT_EQ(line.find(bad), std::string::npos) << line;
  }
  EXPECT_NE(r.second.find("threads=1\n"), std::string::npos) << r.second;
}

// A path that names a FIFO, a directory where a file belongs, or a device comes back at once
// with ACCELTUNE_E_READ and sets nothing; a FIFO would otherwise block the job in open().
TEST(Loader, FifosDirectoriesAndDevicesAreRefusedAtOnce) {
  CleanEnv env({"NCCL_AT_TEST_FIFO"});
  test::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "pipe.env").c_str(), 0600), 0);
  std::filesystem::create_directories(dir / "study");
  test::write_file(dir / "study" / "study.json", "{}");
  ASSERT_EQ(::mkfifo((dir / "study" / "best.json").c_str(), 0600), 0);
  std::filesystem::create_directories(dir / "dir.env");
  std::filesystem::create_directories(dir / "s2" / "best.json");
  test::write_file(dir / "s2" / "study.json", "{}");
  for (const std::string p : {"pipe.env", "study", "study/best.json", "dir.env", "s2", "/dev/zero"}) {
    const std::string path = p[0] == '/' ? p : (dir / p).string();
    // In a child, so a call that blocks shows as a timeout instead of hanging the suite.
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(acceltune_apply(path.c_str(), 0));
    const int code = test::wait_exit(pid, 2.0);
    if (code < 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    EXPECT_EQ(code, p == "dir.env" ? ACCELTUNE_E_FORMAT : ACCELTUNE_E_READ) << p << " (-1: it blocked)";
  }
  EXPECT_EQ(acceltune_apply((dir / "pipe.env").c_str(), 0), ACCELTUNE_E_READ);
  EXPECT_NE(std::string(acceltune_last_error()).find("is a FIFO"), std::string::npos) << acceltune_last_error();
  EXPECT_EQ(acceltune_apply((dir / "s2").c_str(), 0), ACCELTUNE_E_READ);
  EXPECT_NE(std::string(acceltune_last_error()).find("is a directory"), std::string::npos) << acceltune_last_error();
  EXPECT_EQ(std::getenv("NCCL_AT_TEST_FIFO"), nullptr);
}

// A shared-memory UCX study: UCX reads one environment for every path, so what it measured on
// shared memory alone (a transport list a job across nodes cannot connect with, a threshold that
// would govern the network too) is held back by each reader of the plan: the env export writes it
// commented out with why, exec and the loader do not set it; best.json keeps it for the study's
// own path (verify, the bring-up bundle).
TEST(Loader, AShmStudysUcxLinesAreHeldBackByEveryReader) {
  test::TempDir dir;
  test::StudySpec spec;
  spec.space_json = R"({"name": "ucx-shm", "kernel": "ucx", "operation": "tag_bw", "params": [
      {"name": "tls", "kind": "categorical", "values": ["all", "posix"], "default": "all", "env": "UCX_TLS"},
      {"name": "rndv_thresh", "kind": "categorical", "values": ["auto", "65536"], "default": "auto",
       "env": "UCX_RNDV_THRESH"}]})";
  spec.sizes = {65536, 1048576};
  spec.fingerprint = probe_fingerprint();
  spec.trials = {{Json::object(), {{65536, 1.0}, {1048576, 1.0}}, ""},
                 {Json{{"tls", "posix"}, {"rndv_thresh", "65536"}}, {{65536, 2.0}, {1048576, 2.0}}, ""}};
  test::write_study(dir / "s", spec);
  const Json best = Json::parse(test::read_file(dir / "s" / "best.json"));
  ASSERT_EQ(best["export_config"]["tls"], "posix") << best.dump();
  EXPECT_EQ(best["plan"]["env"], Json::array()) << best["plan"].dump();
  ASSERT_EQ(best["plan"]["held"].size(), 2u) << best["plan"].dump();
  std::map<std::string, std::string> held;
  for (const auto& h : best["plan"]["held"]) held[h["var"].get<std::string>()] = h["value"].get<std::string>();
  EXPECT_EQ(held, (std::map<std::string, std::string>{{"UCX_TLS", "posix"}, {"UCX_RNDV_THRESH", "65536"}}));

  auto e = test::run_cli({"export", "s", "--format", "env"}, dir.path());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out.find("\nUCX_TLS="), std::string::npos) << e.out;
  EXPECT_EQ(e.out.find("\nUCX_RNDV_THRESH="), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("\n# UCX_TLS=posix\n"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("names no network transport"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("governs ucx-tcp's too"), std::string::npos) << e.out;
  auto u = test::run_cli({"export", "s", "--format", "ucx-env"}, dir.path());
  ASSERT_EQ(u.exit_code, 0) << u.err;
  EXPECT_EQ(u.out.find("\nUCX_TLS="), std::string::npos) << u.out;
  EXPECT_NE(u.out.find("\n# UCX_RNDV_THRESH=65536\n"), std::string::npos) << u.out;

  auto x = test::run_cli({"exec", "--config", "s", "--", "sh", "-c", "echo \"[${UCX_TLS-unset}][${UCX_RNDV_THRESH-unset}]\""},
                         dir.path());
  EXPECT_EQ(x.exit_code, 0) << x.err;
  EXPECT_EQ(x.out, "[unset][unset]\n") << x.err;
  EXPECT_NE(x.err.find("not set: UCX_TLS=posix"), std::string::npos) << x.err;

  const std::string job = test::built_path("ACCELTUNE_LOADER_JOB", ACCELTUNE_LOADER_JOB);
  auto r = shell("env -u UCX_TLS -u UCX_RNDV_THRESH " + quoted(std::filesystem::path(job)) + " " + quoted(dir / "s") +
                 " UCX_TLS UCX_RNDV_THRESH");
  ASSERT_EQ(r.first, 0) << r.second;
  EXPECT_NE(r.second.find("rc=0\n"), std::string::npos) << r.second;
  EXPECT_NE(r.second.find("UCX_TLS=(unset)\n"), std::string::npos) << r.second;
  EXPECT_NE(r.second.find("UCX_RNDV_THRESH=(unset)\n"), std::string::npos) << r.second;
}

}  // namespace
}  // namespace acceltune
