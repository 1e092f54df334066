// The NCCL tuner plugin, loaded with dlopen as NCCL loads it and driven through every interface
// version it exports, and the nccl-tuner / nccl-conf exports read back by it.
#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "results/nccl_tuner_table.hpp"
#include "tests/helpers.hpp"
#include "tools/nccl-plugin/nccl_tuner_abi.h"
#include "tuner/best.hpp"
#include "probe/fingerprint.hpp"
#include "tuner/store.hpp"

namespace acceltune {
namespace {

// What NCCL's logger received, for checking that problems are reported once.
std::vector<std::pair<int, std::string>> g_log;

void capture_log(acc_ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_log.emplace_back(static_cast<int>(level), buf);
}

int warnings() {
  int n = 0;
  for (const auto& [level, text] : g_log) n += level == ACC_NCCL_LOG_WARN ? 1 : 0;
  return n;
}

// Distinct positive costs, with the entries NCCL would rule out on a machine without NVLS or
// CollNet marked ignored.
struct Costs {
  float c[ACC_NCCL_NUM_ALGORITHMS][ACC_NCCL_NUM_PROTOCOLS];
  Costs() {
    for (int a = 0; a < ACC_NCCL_NUM_ALGORITHMS; ++a) {
      for (int p = 0; p < ACC_NCCL_NUM_PROTOCOLS; ++p) c[a][p] = 10.0f + static_cast<float>(a * 3 + p);
    }
    for (int a :
         {ACC_NCCL_ALGO_COLLNET_DIRECT, ACC_NCCL_ALGO_COLLNET_CHAIN, ACC_NCCL_ALGO_NVLS, ACC_NCCL_ALGO_NVLS_TREE}) {
      for (int p = 0; p < ACC_NCCL_NUM_PROTOCOLS; ++p) c[a][p] = ACC_NCCL_ALGO_PROTO_IGNORE;
    }
  }
  bool operator==(const Costs& o) const {
    for (int a = 0; a < ACC_NCCL_NUM_ALGORITHMS; ++a) {
      for (int p = 0; p < ACC_NCCL_NUM_PROTOCOLS; ++p) {
        if (c[a][p] != o.c[a][p]) return false;
      }
    }
    return true;
  }
};

struct Choice {
  int algorithm = -1, protocol = -1, channels = 0;
  bool operator==(const Choice& o) const {
    return algorithm == o.algorithm && protocol == o.protocol && channels == o.channels;
  }
};

std::ostream& operator<<(std::ostream& os, const Choice& c) {
  return os << "{algo " << c.algorithm << ", proto " << c.protocol << ", channels " << c.channels << "}";
}

// One dlopen()ed plugin with one communicator's context, hiding how the versions differ.
class Plugin {
 public:
  Plugin(int version, size_t ranks, size_t nodes) : version_(version) {
    lib_ = dlopen(test::nccl_plugin().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    sym_ = dlsym(lib_, ("ncclTunerPlugin_v" + std::to_string(version)).c_str());
    if (!sym_) return;
    acc_ncclResult_t rc = acc_ncclInternalError;
    if (version <= 4) {
      // v2, v3 and v4 share the layout of init.
      rc = static_cast<const acc_ncclTuner_v2_t*>(sym_)->init(ranks, nodes, capture_log, &context_);
    } else if (version >= 7) {
      rc = init_v5_layout<acc_ncclTuner_v7_t, acc_ncclNvlDomainInfo_v7_t, acc_ncclTunerConstants_v7_t>(ranks, nodes);
    } else {
      rc = init_v5_layout<acc_ncclTuner_v5_t, acc_ncclNvlDomainInfo_v5_t, acc_ncclTunerConstants_v5_t>(ranks, nodes);
    }
    init_ok_ = rc == acc_ncclSuccess && context_ != nullptr;
  }
  ~Plugin() {
    if (sym_ && context_) {
      if (version_ <= 4) {
        EXPECT_EQ(static_cast<const acc_ncclTuner_v2_t*>(sym_)->destroy(context_), acc_ncclSuccess);
      } else {
        EXPECT_EQ(static_cast<const acc_ncclTuner_v5_t*>(sym_)->finalize(context_), acc_ncclSuccess);
      }
    }
    if (lib_) dlclose(lib_);
  }
  // init of v5 and later, whose constants NCCL owns: the plugin must leave them as they were
  // (v7's constants are larger than v5's, a fifth compute-capability row).
  template <class Tuner, class NvlDomainInfo, class Constants>
  acc_ncclResult_t init_v5_layout(size_t ranks, size_t nodes) {
    NvlDomainInfo nvl{1, static_cast<int>(ranks), static_cast<int>(ranks)};
    Constants constants{};
    const Constants before = constants;
    const acc_ncclResult_t rc =
        static_cast<const Tuner*>(sym_)->init(&context_, 42, ranks, nodes, capture_log, &nvl, &constants);
    constants_untouched_ = std::memcmp(&before, &constants, sizeof constants) == 0;
    return rc;
  }

  bool ready() const { return lib_ && sym_ && init_ok_; }
  std::string why() const { return lib_ ? "no symbol or init failed" : dlerror(); }
  bool constants_untouched() const { return constants_untouched_; }

  // The pair NCCL would run: for v3 and later the cheapest entry of the cost table after the
  // call, for v2 the pair the plugin named (or none).
  Choice decide(int coll, size_t bytes, Costs& costs, int pipe_ops = 1, int reg_buff = 0, int num_algo = 7) {
    Choice ch;
    acc_ncclResult_t rc = acc_ncclInternalError;
    float** table = reinterpret_cast<float**>(costs.c);
    const auto f = static_cast<acc_ncclFunc_t>(coll);
    switch (version_) {
      case 2: {
        // As NCCL's v2 adapter derives them from the cost table.
        const int nvls = costs.c[ACC_NCCL_ALGO_NVLS][ACC_NCCL_PROTO_SIMPLE] >= 0 ||
                         costs.c[ACC_NCCL_ALGO_NVLS_TREE][ACC_NCCL_PROTO_SIMPLE] >= 0;
        const int collnet = costs.c[ACC_NCCL_ALGO_COLLNET_CHAIN][ACC_NCCL_PROTO_SIMPLE] >= 0;
        rc = static_cast<const acc_ncclTuner_v2_t*>(sym_)->getCollInfo(context_, f, bytes, collnet, nvls, pipe_ops,
                                                                       &ch.algorithm, &ch.protocol, &ch.channels);
        break;
      }
      case 3:
        rc = static_cast<const acc_ncclTuner_v3_t*>(sym_)->getCollInfo(context_, f, bytes, pipe_ops, table, num_algo, 3,
                                                                       &ch.channels);
        break;
      case 4:
        rc = static_cast<const acc_ncclTuner_v4_t*>(sym_)->getCollInfo(context_, f, bytes, pipe_ops, table, num_algo, 3,
                                                                       reg_buff, &ch.channels);
        break;
      case 5:
        rc = static_cast<const acc_ncclTuner_v5_t*>(sym_)->getCollInfo(context_, f, bytes, pipe_ops, table, num_algo, 3,
                                                                       reg_buff, &ch.channels);
        break;
      case 6:
        rc = static_cast<const acc_ncclTuner_v6_t*>(sym_)->getCollInfo(context_, f, bytes, pipe_ops, table, num_algo, 3,
                                                                       reg_buff, &ch.channels);
        break;
      default:
        rc = static_cast<const acc_ncclTuner_v7_t*>(sym_)->getCollInfo(context_, f, bytes, pipe_ops, table, num_algo, 3,
                                                                       reg_buff, &ch.channels);
    }
    EXPECT_EQ(rc, acc_ncclSuccess);
    if (version_ >= 3) {
      for (int a = 0; a < ACC_NCCL_NUM_ALGORITHMS; ++a) {
        for (int p = 0; p < ACC_NCCL_NUM_PROTOCOLS; ++p) {
          if (costs.c[a][p] == 0.0f) ch.algorithm = a, ch.protocol = p;
        }
      }
    }
    return ch;
  }

  // The chunk size after getChunkSize (v6 and v7), starting from NCCL's `computed`. NCCL asks
  // once per channel slice: `bytes` is the slice's, and nChannels 1, except for CollNet.
  size_t chunk(int coll, size_t bytes, int algorithm, int protocol, size_t computed, int channels = 1) {
    size_t c = computed;
    const auto hook = version_ >= 7 ? static_cast<const acc_ncclTuner_v7_t*>(sym_)->getChunkSize
                                    : static_cast<const acc_ncclTuner_v6_t*>(sym_)->getChunkSize;
    EXPECT_NE(hook, nullptr);
    if (hook) {
      EXPECT_EQ(hook(context_, static_cast<acc_ncclFunc_t>(coll), bytes, algorithm, protocol, channels, &c),
                acc_ncclSuccess);
    }
    return c;
  }

 private:
  int version_;
  void* lib_ = nullptr;
  const void* sym_ = nullptr;
  void* context_ = nullptr;
  bool init_ok_ = false;
  bool constants_untouched_ = true;
};

// Points the plugin at a table for the lifetime of the object.
class TableFile {
 public:
  explicit TableFile(const std::string& text) {
    test::write_file(dir_ / "table.csv", text);
    setenv("ACCELTUNE_NCCL_TUNER_TABLE", (dir_ / "table.csv").c_str(), 1);
    unsetenv("NCCL_TUNER_CONFIG_FILE");
    g_log.clear();
  }
  ~TableFile() { unsetenv("ACCELTUNE_NCCL_TUNER_TABLE"); }
  std::string path() const { return (dir_ / "table.csv").string(); }

 private:
  test::TempDir dir_;
};

constexpr int kTree = ACC_NCCL_ALGO_TREE, kRing = ACC_NCCL_ALGO_RING, kPat = ACC_NCCL_ALGO_PAT;
constexpr int kLL = ACC_NCCL_PROTO_LL, kLL128 = ACC_NCCL_PROTO_LL128, kSimple = ACC_NCCL_PROTO_SIMPLE;
constexpr int kAllReduce = acc_ncclFuncAllReduce, kAllGather = acc_ncclFuncAllGather;
constexpr int kBroadcast = acc_ncclFuncBroadcast, kReduce = acc_ncclFuncReduce;
constexpr int kReduceScatter = acc_ncclFuncReduceScatter;

// Row order matters: the first matching row wins, as in NCCL's example tuner.
const char* kTable = R"(# acceltune nccl-tuner table
collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff,chunkSize
allreduce,0,65535,tree,simple,2,-1,-1,2,-1
allreduce,0,65535,ring,ll,4,-1,-1
allreduce,65536,1048575,tree,ll128,8,-1,-1
allreduce,1048576,18446744073709551615,ring,simple,16,-1,-1,-1,-1,524288
allgather,0,1000,nvls,simple,-1,-1,-1
allgather,0,1000,pat,simple,2,-1,-1
allgather,2000,3000,ring,ll,6,-1,-1,-1,1
broadcast,0,4096,tree,ll,3,2,-1
reduce,0,4096,Ring,LL,5,-1,16
reducescatter,0,100,-1,ll128,-1,-1,-1
)";

class EveryVersion : public ::testing::TestWithParam<int> {};

TEST(NcclPlugin, ExportsEveryInterfaceVersion) {
  void* lib = dlopen(test::nccl_plugin().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  for (int v = 2; v <= 7; ++v) {
    const auto* sym =
        static_cast<const acc_ncclTuner_v2_t*>(dlsym(lib, ("ncclTunerPlugin_v" + std::to_string(v)).c_str()));
    ASSERT_NE(sym, nullptr) << "v" << v;
    EXPECT_STREQ(sym->name, "acceltune");
  }
  const auto* v6 = static_cast<const acc_ncclTuner_v6_t*>(dlsym(lib, "ncclTunerPlugin_v6"));
  EXPECT_NE(v6->getChunkSize, nullptr);
  const auto* v7 = static_cast<const acc_ncclTuner_v7_t*>(dlsym(lib, "ncclTunerPlugin_v7"));
  EXPECT_NE(v7->getChunkSize, nullptr);
  // Nothing of the implementation leaks into NCCL's namespace.
  EXPECT_EQ(
      dlsym(lib, "_ZN9acceltune10nccl_table11parse_tableERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEm"),
      nullptr);
  dlclose(lib);
}

TEST_P(EveryVersion, ChoosesByCollectiveSizeAndTopology) {
  const int v = GetParam();
  TableFile table(kTable);
  Plugin p(v, 8, 1);
  ASSERT_TRUE(p.ready()) << p.why();
  EXPECT_TRUE(p.constants_untouched());
  EXPECT_EQ(warnings(), 0);

  auto decide = [&](int coll, size_t bytes, int pipe_ops = 1, int reg_buff = 0) {
    Costs c;
    const Costs before = c;
    Choice ch = p.decide(coll, bytes, c, pipe_ops, reg_buff);
    // Entries NCCL ignored stay ignored, and at most one entry changed.
    int changed = 0;
    for (int a = 0; a < ACC_NCCL_NUM_ALGORITHMS; ++a) {
      for (int q = 0; q < ACC_NCCL_NUM_PROTOCOLS; ++q) {
        if (before.c[a][q] < 0) {
          EXPECT_EQ(c.c[a][q], ACC_NCCL_ALGO_PROTO_IGNORE) << "v" << v << " [" << a << "][" << q << "]";
        }
        changed += c.c[a][q] != before.c[a][q] ? 1 : 0;
      }
    }
    EXPECT_LE(changed, 1);
    return ch;
  };
  // Inside, at both edges of, and between the allreduce ranges.
  EXPECT_EQ(decide(kAllReduce, 0), (Choice{kRing, kLL, 4}));
  EXPECT_EQ(decide(kAllReduce, 4096), (Choice{kRing, kLL, 4}));
  EXPECT_EQ(decide(kAllReduce, 65535), (Choice{kRing, kLL, 4}));
  EXPECT_EQ(decide(kAllReduce, 65536), (Choice{kTree, kLL128, 8}));
  EXPECT_EQ(decide(kAllReduce, 1048575), (Choice{kTree, kLL128, 8}));
  EXPECT_EQ(decide(kAllReduce, 1048576), (Choice{kRing, kSimple, 16}));
  EXPECT_EQ(decide(kAllReduce, SIZE_MAX), (Choice{kRing, kSimple, 16}));
  // A row for a pipeline of two operations comes first and wins only there.
  EXPECT_EQ(decide(kAllReduce, 100, 2), (Choice{kTree, kSimple, 2}));
  // NVLS is ignored on this machine, so the next matching row (PAT) applies; outside every row
  // NCCL's choice stands.
  EXPECT_EQ(decide(kAllGather, 500), (Choice{kPat, kSimple, 2}));
  EXPECT_EQ(decide(kAllGather, 1001), (Choice{}));
  EXPECT_EQ(decide(kAllGather, 5000), (Choice{}));
  // The row for registered buffers: v2 and v3 are not told, so it does not apply there.
  EXPECT_EQ(decide(kAllGather, 2500, 1, 1), v >= 4 ? (Choice{kRing, kLL, 6}) : Choice{});
  EXPECT_EQ(decide(kAllGather, 2500, 1, 0), (Choice{}));
  // Rows for other topologies: broadcast only for 2 nodes, reduce for 16 ranks.
  EXPECT_EQ(decide(kBroadcast, 100), (Choice{}));
  EXPECT_EQ(decide(kReduce, 100), (Choice{}));
  // A protocol without an algorithm: the cheapest eligible algorithm with LL128 (tree here).
  // v2 cannot name half a pair, so NCCL decides there.
  EXPECT_EQ(decide(kReduceScatter, 50), v >= 3 ? (Choice{kTree, kLL128, 0}) : Choice{});
}

TEST_P(EveryVersion, RowsForThisTopologyApply) {
  TableFile table(kTable);
  Plugin two_nodes(GetParam(), 16, 2);
  ASSERT_TRUE(two_nodes.ready()) << two_nodes.why();
  Costs c1;
  EXPECT_EQ(two_nodes.decide(kBroadcast, 4096, c1), (Choice{kTree, kLL, 3}));
  Costs c2;
  EXPECT_EQ(two_nodes.decide(kReduce, 4096, c2), (Choice{kRing, kLL, 5}));
  Costs c3;
  EXPECT_EQ(two_nodes.decide(kReduce, 4097, c3), (Choice{}));
}

// The versions with a cost table are told how many algorithms this NCCL has.
TEST(NcclPlugin, AlgorithmsBeyondThisNcclAreNotChosen) {
  TableFile table("allgather,0,1000,pat,simple,2,-1,-1\nallgather,0,1000,ring,ll128,3,-1,-1\n");
  for (int v = 3; v <= 6; ++v) {
    Plugin p(v, 8, 1);
    ASSERT_TRUE(p.ready()) << p.why();
    Costs c;
    // An NCCL with six algorithms (before PAT): the PAT row is skipped, the next one applies.
    EXPECT_EQ(p.decide(kAllGather, 10, c, 1, 0, 6), (Choice{kRing, kLL128, 3})) << "v" << v;
    Costs all;
    EXPECT_EQ(p.decide(kAllGather, 10, all), (Choice{kPat, kSimple, 2})) << "v" << v;
  }
}

TEST_P(EveryVersion, ABadTableIsReportedOnceAndChangesNothing) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"allreduce,0,abc,ring,ll,4,-1,-1\n", "line 1: max_bytes 'abc'"},
      {"# ok\nallreduce,0,100,ring,ll,4,-1,-1\nallreduce,0,100,fastest,ll,4,-1,-1\n", "line 3: unknown algorithm"},
      {"allreduce,0,100,ring,ll\n", "expected 8 to 11"},
      {"alltoall,0,100,ring,ll,4,-1,-1\n", "unknown collective 'alltoall'"},
      {"allreduce,100,0,ring,ll,4,-1,-1\n", "min_bytes is larger"},
      {"allreduce,0,100,ring,ll,4,4,-1\n", "none of its 1 rows is for 1 nodes"},
      // NCCL indexes 64-entry arrays with the channel count.
      {"allreduce,0,100,ring,ll,65,-1,-1\n", "line 1: channels '65' is not -1 or 1 to 64"},
      {"# a\n# b\nallreduce,0,100,ring,ll,16777216,-1,-1\n", "line 3: channels '16777216'"},
      {"allreduce,0,100,ring,ll,0,-1,-1\n", "channels '0'"},
      {"allreduce,0,100,ring,ll,4,-1,-1,-1,2\n", "regBuff '2'"},
      {"allreduce,0,100,ring,ll,4,-1,-1,0\n", "numPipeOps '0'"},
      // A chunk below the named protocol's grain.
      {"allreduce,0,100,ring,simple,4,-1,-1,-1,-1,100\n", "chunkSize '100' is not -1 or a byte count from 512"},
      {"allreduce,0,100,ring,ll128,4,-1,-1,-1,-1,1919\n", "from 1920"},
      {"allreduce,0,100,ring,-1,4,-1,-1,-1,-1,8\n", "from 16"},
      // Every field out of range: the first is named.
      {"allreduce,7,99999999999999999999999,warp,ll256,100000,-7,0,0,7,3\n", "line 1: max_bytes"},
      {std::string("\x7f"
                   "ELF\x02\x01\x01",
                   7) +
           "\n",
       "line 1"},
  };
  for (const auto& [text, message] : cases) {
    TableFile table(text);
    Plugin p(GetParam(), 8, 1);
    ASSERT_TRUE(p.ready()) << p.why();
    for (int i = 0; i < 100; ++i) {
      Costs c;
      const Costs before = c;
      EXPECT_EQ(p.decide(kAllReduce, static_cast<size_t>(i), c), (Choice{})) << text;
      EXPECT_TRUE(c == before) << text;
    }
    ASSERT_EQ(warnings(), 1) << text;
    std::string warned;
    for (const auto& [level, t] : g_log) {
      if (level == ACC_NCCL_LOG_WARN) warned = t;
    }
    EXPECT_NE(warned.find(message), std::string::npos) << warned;
    EXPECT_NE(warned.find("NCCL chooses"), std::string::npos) << warned;
  }
}

TEST_P(EveryVersion, AMissingTableIsReportedOnce) {
  test::TempDir dir;
  setenv("ACCELTUNE_NCCL_TUNER_TABLE", (dir / "absent.csv").c_str(), 1);
  g_log.clear();
  {
    Plugin p(GetParam(), 8, 1);
    ASSERT_TRUE(p.ready()) << p.why();
    Costs c;
    EXPECT_EQ(p.decide(kAllReduce, 4096, c), (Choice{}));
    ASSERT_EQ(warnings(), 1);
    EXPECT_NE(g_log.back().second.find("absent.csv cannot be read"), std::string::npos) << g_log.back().second;
  }
  // Neither variable set: said once, at the informational level, and NCCL decides.
  unsetenv("ACCELTUNE_NCCL_TUNER_TABLE");
  unsetenv("NCCL_TUNER_CONFIG_FILE");
  g_log.clear();
  Plugin p(GetParam(), 8, 1);
  ASSERT_TRUE(p.ready()) << p.why();
  Costs c;
  EXPECT_EQ(p.decide(kAllReduce, 4096, c), (Choice{}));
  ASSERT_EQ(g_log.size(), 1u);
  EXPECT_EQ(g_log[0].first, ACC_NCCL_LOG_INFO);
}

// A table path that names a FIFO or a directory is refused at init without blocking NCCL's
// communicator setup (an open() of a FIFO waits for a writer).
TEST_P(EveryVersion, AFifoOrDirectoryTableIsRefusedAtOnce) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "pipe.csv").c_str(), 0600), 0);
  std::filesystem::create_directories(dir / "dir.csv");
  for (const char* name : {"pipe.csv", "dir.csv"}) {
    setenv("ACCELTUNE_NCCL_TUNER_TABLE", (dir / name).c_str(), 1);
    // In a child, so an init that blocks shows as a timeout instead of hanging the suite.
    const pid_t pid = ::fork();
    if (pid == 0) {
      g_log.clear();
      Plugin p(GetParam(), 8, 1);
      Costs c;
      const bool ok = p.ready() && p.decide(kAllReduce, 4096, c) == Choice{} && warnings() == 1 &&
                      g_log.back().second.find(std::string(name) + " cannot be read (is a") != std::string::npos;
      ::_exit(ok ? 0 : 1);
    }
    const int code = test::wait_exit(pid, 3.0);
    if (code < 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    EXPECT_EQ(code, 0) << name << (code < 0 ? ": init blocked" : ": not refused with a warning");
  }
  unsetenv("ACCELTUNE_NCCL_TUNER_TABLE");
}

// Runs `body` in a child process, so a plugin that blocks, crashes or exhausts memory fails the
// test instead of taking the suite with it: the child's exit code, -1 when it ran past `seconds`.
template <class Body>
int in_child(double seconds, Body body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body() ? 0 : 1);
  const int code = test::wait_exit(pid, seconds);
  if (code < 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  return code;
}

// A table no exporter would write: the plugin says so once, NCCL's choice stands and the job
// goes on, however the table is hostile.
TEST(NcclPlugin, HostileTablesAreReportedOnceAndLeaveNcclsChoice) {
  std::string many, nested;
  for (int i = 0; i < 100000; ++i) many += fmt::format("allreduce,{},{},ring,ll,4,-1,-1\n", i * 10, i * 10 + 9);
  // Ranges nested inside each other: an index of every (segment, row) pair grows as rows squared.
  for (int i = 0; i < 10000; ++i) nested += fmt::format("allreduce,{},{},ring,ll,4,-1,-1\n", i, 20000 - i);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {many, "line 10001: more than 10000 rows"},
      {nested, "overlap too much to index"},
      {"allreduce,7,99999999999999999999999,warp,ll256,100000,-7,0,0,7,3\n", "line 1: max_bytes"},
      {std::string(1 << 20, ','), "line 1: expected 8 to 11"},
  };
  for (const auto& [text, message] : cases) {
    TableFile table(text);
    for (int v : {2, 7}) {
      const int code = in_child(30.0, [&, v = v] {
        g_log.clear();
        Plugin p(v, 8, 1);
        Costs c;
        const Costs before = c;
        const bool unchanged = p.ready() && p.decide(kAllReduce, 15, c) == Choice{} && c == before;
        const bool said_once = warnings() == 1 && g_log.back().second.find(message) != std::string::npos;
        if (!said_once) std::fprintf(stderr, "log: %s\n", g_log.empty() ? "(empty)" : g_log.back().second.c_str());
        return unchanged && said_once;
      });
      EXPECT_EQ(code, 0) << "v" << v << ", " << message << (code < 0 ? ": init did not finish" : "");
    }
  }
}

// A table the job's user cannot read (root reads anything, so the child gives up root first).
TEST(NcclPlugin, AnUnreadableTableIsReportedOnce) {
  TableFile table("allreduce,0,100,ring,ll,4,-1,-1\n");
  ASSERT_EQ(::chmod(table.path().c_str(), 0), 0);
  ASSERT_EQ(::chmod(std::filesystem::path(table.path()).parent_path().c_str(), 0755), 0);
  const int code = in_child(10.0, [&] {
    // Loaded first: the build tree may not be readable by the user the child becomes.
    void* keep = dlopen(test::nccl_plugin().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!keep) return false;
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return false;
    g_log.clear();
    Plugin p(7, 8, 1);
    Costs c;
    return p.ready() && p.decide(kAllReduce, 10, c) == Choice{} && warnings() == 1 &&
           g_log.back().second.find("cannot be read (Permission denied)") != std::string::npos;
  });
  EXPECT_EQ(code, 0);
}

// The table is read at init: replacing the file while the job runs changes only the
// communicators created after, and a bad replacement is reported by them alone.
TEST_P(EveryVersion, ATableReplacedWhileTheJobRunsChangesOnlyNewCommunicators) {
  TableFile table("allreduce,0,1000,ring,ll,4,-1,-1\n");
  Plugin first(GetParam(), 8, 1);
  ASSERT_TRUE(first.ready()) << first.why();
  // Replaced by rename, as an editor or a new export does.
  test::write_file(table.path() + ".new", "allreduce,0,1000,tree,simple,2,-1,-1\n");
  std::filesystem::rename(table.path() + ".new", table.path());
  Plugin second(GetParam(), 8, 1);
  ASSERT_TRUE(second.ready()) << second.why();
  // Rewritten in place with something that is not a table.
  test::write_file(table.path(), "garbage\n");
  g_log.clear();
  Plugin third(GetParam(), 8, 1);
  ASSERT_TRUE(third.ready()) << third.why();
  EXPECT_EQ(warnings(), 1);
  for (int i = 0; i < 3; ++i) {
    Costs a, b, c;
    EXPECT_EQ(first.decide(kAllReduce, 500, a), (Choice{kRing, kLL, 4}));
    EXPECT_EQ(second.decide(kAllReduce, 500, b), (Choice{kTree, kSimple, 2}));
    EXPECT_EQ(third.decide(kAllReduce, 500, c), (Choice{}));
  }
  EXPECT_EQ(warnings(), 1);
}

TEST_P(EveryVersion, SixtyFourChannelsIsTheMost) {
  TableFile table("allreduce,0,100,ring,ll,64,-1,-1\n");
  Plugin p(GetParam(), 8, 1);
  ASSERT_TRUE(p.ready()) << p.why();
  Costs c;
  EXPECT_EQ(p.decide(kAllReduce, 10, c), (Choice{kRing, kLL, 64}));
  EXPECT_EQ(warnings(), 0);
}

TEST_P(EveryVersion, ReadsTheExampleTunersVariable) {
  test::TempDir dir;
  test::write_file(dir / "nccl_tuner.conf", "allreduce,0,1000,tree,ll,7,-1,-1\n");
  unsetenv("ACCELTUNE_NCCL_TUNER_TABLE");
  setenv("NCCL_TUNER_CONFIG_FILE", (dir / "nccl_tuner.conf").c_str(), 1);
  Plugin p(GetParam(), 8, 1);
  unsetenv("NCCL_TUNER_CONFIG_FILE");
  ASSERT_TRUE(p.ready()) << p.why();
  Costs c;
  EXPECT_EQ(p.decide(kAllReduce, 10, c), (Choice{kTree, kLL, 7}));
}

INSTANTIATE_TEST_SUITE_P(NcclPlugin, EveryVersion, ::testing::Values(2, 3, 4, 5, 6, 7),
                         [](const auto& tp) { return "v" + std::to_string(tp.param); });

class ChunkSizeVersion : public ::testing::TestWithParam<int> {};

// NCCL asks getCollInfo with the collective's size, then getChunkSize once per channel slice with
// the slice's size and nChannels 1: the chunk follows what getCollInfo decided for the call.
TEST_P(ChunkSizeVersion, ChunkSizeFollowsTheCollectivesDecision) {
  TableFile table(kTable);
  Plugin p(GetParam(), 8, 1);
  ASSERT_TRUE(p.ready()) << p.why();
  // An 8 MiB allreduce: ring/simple from the row from 1 MiB up, whose chunk is 512 KiB; its
  // slices (1 MiB each, a 4 KiB tail) get that chunk, whatever rows their own sizes fall in.
  Costs c;
  EXPECT_EQ(p.decide(kAllReduce, 8 << 20, c), (Choice{kRing, kSimple, 16}));
  EXPECT_EQ(p.chunk(kAllReduce, 1 << 20, kRing, kSimple, 131072), 524288u);
  EXPECT_EQ(p.chunk(kAllReduce, 4096, kRing, kSimple, 131072), 524288u);
  EXPECT_EQ(p.chunk(kAllReduce, 100, kRing, kSimple, 131072), 524288u);
  // A pair other than the one the row named (NCCL settled elsewhere): NCCL's chunk.
  EXPECT_EQ(p.chunk(kAllReduce, 1 << 20, kTree, kSimple, 131072), 131072u);
  // A 4 KiB allreduce decided by a row without a chunk: NCCL's chunk, even for a slice size that
  // the chunk row's range covers and the pair the chunk row names.
  Costs c2;
  EXPECT_EQ(p.decide(kAllReduce, 4096, c2), (Choice{kRing, kLL, 4}));
  EXPECT_EQ(p.chunk(kAllReduce, 2 << 20, kRing, kSimple, 131072), 131072u);
  EXPECT_EQ(p.chunk(kAllReduce, 2 << 20, kRing, kLL, 131072), 131072u);
  // A collective no row covers, and a chunk asked with no decision at all: NCCL's.
  Costs c3;
  EXPECT_EQ(p.decide(kAllGather, 1 << 30, c3), (Choice{}));
  EXPECT_EQ(p.chunk(kAllGather, 1 << 30, kRing, kSimple, 131072), 131072u);
  Plugin fresh(GetParam(), 8, 1);
  EXPECT_EQ(fresh.chunk(kAllReduce, 2 << 20, kRing, kSimple, 131072), 131072u);
  // CollNet asks once with the whole size and its channel count: the same rule.
  Costs c4;
  EXPECT_EQ(p.decide(kAllReduce, 4 << 20, c4), (Choice{kRing, kSimple, 16}));
  EXPECT_EQ(p.chunk(kAllReduce, 4 << 20, kRing, kSimple, 131072, 16), 524288u);
}

// The numPipeOps and regBuff columns pick the chunk row as they pick the pair.
TEST_P(ChunkSizeVersion, ChunkRowsHonourPipeOpsAndRegisteredBuffers) {
  TableFile table(
      "allreduce,0,18446744073709551615,ring,simple,-1,-1,-1,2,-1,1048576\n"
      "allreduce,0,18446744073709551615,ring,simple,-1,-1,-1,-1,1,262144\n"
      "allreduce,0,18446744073709551615,ring,simple,-1,-1,-1,-1,-1,65536\n");
  Plugin p(GetParam(), 8, 1);
  ASSERT_TRUE(p.ready()) << p.why();
  ASSERT_EQ(warnings(), 0) << (g_log.empty() ? "" : g_log.back().second);
  const struct {
    int pipe_ops, reg_buff;
    size_t chunk;
  } cases[] = {{2, 0, 1048576}, {1, 1, 262144}, {1, 0, 65536}, {2, 1, 1048576}};
  for (const auto& k : cases) {
    Costs c;
    EXPECT_EQ(p.decide(kAllReduce, 1 << 20, c, k.pipe_ops, k.reg_buff), (Choice{kRing, kSimple, 0}));
    EXPECT_EQ(p.chunk(kAllReduce, 65536, kRing, kSimple, 131072), k.chunk)
        << "numPipeOps " << k.pipe_ops << ", regBuff " << k.reg_buff;
  }
}

// NCCL decides every collective of a group before it asks for any chunk. Where the group decided
// two chunks for one pair, or left a pair to NCCL that a row tuned, no chunk can be told apart:
// NCCL's stands. The next group is decided afresh.
TEST_P(ChunkSizeVersion, AGroupWithTwoChunksForOnePairGetsNcclsOwn) {
  TableFile table(
      "allreduce,0,65535,ring,simple,-1,-1,-1,-1,-1,65536\n"
      "allreduce,65536,18446744073709551615,ring,simple,-1,-1,-1,-1,-1,524288\n"
      "allgather,65536,18446744073709551615,ring,simple,-1,-1,-1,-1,-1,262144\n");
  Plugin p(GetParam(), 8, 1);
  ASSERT_TRUE(p.ready()) << p.why();
  Costs a, b;
  EXPECT_EQ(p.decide(kAllReduce, 32768, a), (Choice{kRing, kSimple, 0}));
  EXPECT_EQ(p.decide(kAllReduce, 1 << 20, b), (Choice{kRing, kSimple, 0}));
  EXPECT_EQ(p.chunk(kAllReduce, 16384, kRing, kSimple, 131072), 131072u);
  EXPECT_EQ(p.chunk(kAllReduce, 262144, kRing, kSimple, 131072), 131072u);
  Costs c;
  EXPECT_EQ(p.decide(kAllReduce, 1 << 20, c), (Choice{kRing, kSimple, 0}));
  EXPECT_EQ(p.chunk(kAllReduce, 16384, kRing, kSimple, 131072), 524288u);
  // An allgather NCCL chose itself beside one the table tuned, in one group.
  Costs d, e;
  EXPECT_EQ(p.decide(kAllGather, 1024, d), (Choice{}));
  EXPECT_EQ(p.decide(kAllGather, 1 << 20, e), (Choice{kRing, kSimple, 0}));
  EXPECT_EQ(p.chunk(kAllGather, 65536, kRing, kSimple, 131072), 131072u);
  // Collectives of different kinds in one group do not disturb each other.
  Costs f, g;
  EXPECT_EQ(p.decide(kAllGather, 1 << 20, f), (Choice{kRing, kSimple, 0}));
  EXPECT_EQ(p.decide(kAllReduce, 1024, g), (Choice{kRing, kSimple, 0}));
  EXPECT_EQ(p.chunk(kAllGather, 65536, kRing, kSimple, 131072), 262144u);
  EXPECT_EQ(p.chunk(kAllReduce, 1024, kRing, kSimple, 131072), 65536u);
}

// NCCL rounds a chunk down to the protocol's grain (16 B LL, 1920 B LL128, 512 B Simple) and
// divides by the result: a chunk below the grain must never reach it.
TEST_P(ChunkSizeVersion, AChunkBelowTheProtocolsGrainLeavesNcclsValue) {
  TableFile table("allreduce,0,18446744073709551615,ring,-1,-1,-1,-1,-1,-1,1000\n");
  Plugin p(GetParam(), 8, 1);
  ASSERT_TRUE(p.ready()) << p.why();
  ASSERT_EQ(warnings(), 0) << (g_log.empty() ? "" : g_log.back().second);
  // Ring's cheapest protocol is LL here: 1000 B rounds down to 992.
  Costs ll;
  EXPECT_EQ(p.decide(kAllReduce, 4096, ll), (Choice{kRing, kLL, 0}));
  EXPECT_EQ(p.chunk(kAllReduce, 4096, kRing, kLL, 131072), 992u);
  // LL ruled out: LL128, whose grain (1920 B) is above 1000 B: NCCL's value.
  Costs ll128;
  ll128.c[kRing][kLL] = ACC_NCCL_ALGO_PROTO_IGNORE;
  EXPECT_EQ(p.decide(kAllReduce, 4096, ll128), (Choice{kRing, kLL128, 0}));
  EXPECT_EQ(p.chunk(kAllReduce, 4096, kRing, kLL128, 131072), 131072u);
  // Simple: rounded down to 512.
  Costs simple;
  simple.c[kRing][kLL] = simple.c[kRing][kLL128] = ACC_NCCL_ALGO_PROTO_IGNORE;
  EXPECT_EQ(p.decide(kAllReduce, 4096, simple), (Choice{kRing, kSimple, 0}));
  EXPECT_EQ(p.chunk(kAllReduce, 4096, kRing, kSimple, 131072), 512u);
}

INSTANTIATE_TEST_SUITE_P(NcclPlugin, ChunkSizeVersion, ::testing::Values(6, 7),
                         [](const auto& tp) { return "v" + std::to_string(tp.param); });

// A study directory written through the project's own code: four sizes, three ranges, the last
// one where the default won.
void write_study(const std::filesystem::path& dir, const Json& small, const Json& mid, bool certified = true,
                 const Json& more_defaults = Json::object()) {
  BestTable b;
  b.space = "nccl-allreduce";
  b.kernel = "nccl";
  b.unit = "GB/s";
  b.trials = 20;
  b.trials_ok = 20;
  b.overall_trial = 3;
  b.certified = certified;
  b.env = {{"algo", "NCCL_ALGO"}, {"proto", "NCCL_PROTO"}, {"buffsize", "NCCL_BUFFSIZE"}};
  b.default_config = Json{{"algo", "auto"}, {"proto", "auto"}, {"channels", 0}, {"buffsize", 4194304}};
  b.default_config.update(more_defaults);
  const std::vector<std::pair<uint64_t, Json>> chosen = {
      {4096, small}, {65536, small}, {1048576, mid}, {16777216, b.default_config}};
  for (const auto& [bytes, config] : chosen) {
    SizeBest s;
    s.bytes = bytes;
    s.best_trial = 3;
    s.best_config = config;
    s.chosen_config = config;
    s.chosen_is_default = config == b.default_config;
    s.best_value = 10;
    s.default_value = 5;
    s.ratio = 2;
    b.sizes.push_back(s);
  }
  finish_ranges(b);
  Json study = Json::object();
  study["format"] = "acceltune-study/1";
  study["space"] =
      Json{{"name", b.space}, {"kernel", "nccl"}, {"operation", "allreduce"}, {"nodes", 1}, {"ranks", "gpus"}};
  // The space names its rank count symbolically; the workload holds what it resolved to.
  study["workload"] =
      Json{{"kernel", "nccl"}, {"operation", "allreduce"}, {"sizes", {4096, 65536, 1048576, 16777216}}, {"ranks", 8}};
  study["fingerprint"] = probe_fingerprint();
  auto store = open_store("dir", dir.string());
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE((*store)->create(study)) << "create";
  ASSERT_TRUE((*store)->write_best(b.to_json())) << "write_best";
}

TEST(NcclPlugin, ExportedTableRoundTrips) {
  test::TempDir dir;
  write_study(dir / "study", Json{{"algo", "Ring"}, {"proto", "LL"}, {"channels", 4}, {"buffsize", 4194304}},
              Json{{"algo", "Tree"}, {"proto", "LL128"}, {"channels", 12}, {"buffsize", 4194304}});
  auto r = test::run_cli({"export", "study", "--format", "nccl-tuner", "-o", "table.csv"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = test::read_file(dir / "table.csv");
  EXPECT_NE(text.find("allreduce,0,1048575,ring,ll,4,1,8,-1,-1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("allreduce,1048576,16777215,tree,ll128,12,1,8,-1,-1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# bytes 16777216..18446744073709551615: the library default"), std::string::npos) << text;
  EXPECT_NE(text.find("# acceltune fingerprint: " + probe_fingerprint()["id"].get<std::string>()), std::string::npos);

  setenv("ACCELTUNE_NCCL_TUNER_TABLE", (dir / "table.csv").c_str(), 1);
  for (int v = 2; v <= 7; ++v) {
    g_log.clear();
    Plugin p(v, 8, 1);
    ASSERT_TRUE(p.ready()) << p.why();
    EXPECT_EQ(warnings(), 0) << (g_log.empty() ? "" : g_log.back().second);
    const std::vector<std::pair<size_t, Choice>> expect = {{0, {kRing, kLL, 4}},
                                                           {4096, {kRing, kLL, 4}},
                                                           {1048575, {kRing, kLL, 4}},
                                                           {1048576, {kTree, kLL128, 12}},
                                                           {16777215, {kTree, kLL128, 12}},
                                                           {16777216, {}},
                                                           {SIZE_MAX, {}}};
    for (const auto& [bytes, want] : expect) {
      Costs c;
      EXPECT_EQ(p.decide(kAllReduce, bytes, c), want) << "v" << v << " at " << bytes;
    }
    // The table is for 1 node and 8 ranks: another communicator gets NCCL's choice.
    Plugin other(v, 16, 2);
    Costs c;
    EXPECT_EQ(other.decide(kAllReduce, 4096, c), (Choice{})) << "v" << v;
    Costs g;
    EXPECT_EQ(p.decide(kAllGather, 4096, g), (Choice{})) << "v" << v;
  }
  unsetenv("ACCELTUNE_NCCL_TUNER_TABLE");

  // nccl-conf: the plan's NCCL_ lines: the plugin switched on with the study's own table, never a
  // per-size param as a variable, a job-wide one at the library's default left out; the fingerprint.
  auto conf = test::run_cli({"export", "study", "--format", "nccl-conf"}, dir.path());
  ASSERT_EQ(conf.exit_code, 0) << conf.err;
  EXPECT_EQ(conf.out.find("NCCL_ALGO="), std::string::npos) << conf.out;
  EXPECT_EQ(conf.out.find("NCCL_PROTO="), std::string::npos) << conf.out;
  EXPECT_NE(conf.out.find("NCCL_TUNER_PLUGIN=acceltune\n"), std::string::npos) << conf.out;
  const std::string table = (std::filesystem::absolute(dir / "study") / "plan" / "nccl-tuner.csv").string();
  EXPECT_NE(conf.out.find("NCCL_TUNER_CONFIG_FILE=" + table + "\n"), std::string::npos) << conf.out;
  EXPECT_NE(test::read_file(table).find("allreduce,0,1048575,ring,ll,4,1,8,-1,-1\n"), std::string::npos);
  EXPECT_NE(conf.out.find("# NCCL_BUFFSIZE is left to the library\n"), std::string::npos) << conf.out;
  EXPECT_NE(conf.out.find("# acceltune fingerprint: " + probe_fingerprint()["id"].get<std::string>()),
            std::string::npos);
  for (const auto& line : test::lines_of(conf.out)) {
    EXPECT_TRUE(line.empty() || line[0] == '#' || line.rfind("NCCL_", 0) == 0) << line;
  }
}

TEST(NcclPlugin, ExportRefusesWhatNcclDoesNotName) {
  test::TempDir dir;
  write_study(dir / "study", Json{{"algo", "Ring"}, {"proto", "LL"}, {"channels", 4}, {"buffsize", 1}},
              Json{{"algo", "Butterfly"}, {"proto", "LL"}, {"channels", 4}, {"buffsize", 1}});
  auto r = test::run_cli({"export", "study", "--format", "nccl-tuner", "-o", "t.csv"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'Butterfly'"), std::string::npos) << r.err;
  EXPECT_EQ(test::lines_of(r.err).size(), 1u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "t.csv"));

  test::TempDir dir2;
  write_study(dir2 / "study", Json{{"algo", "Ring"}, {"proto", "LL"}, {"channels", 4}, {"buffsize", 1}},
              Json{{"algo", "Ring"}, {"proto", "Fast"}, {"channels", 4}, {"buffsize", 1}});
  auto r2 = test::run_cli({"export", "study", "--format", "nccl-tuner"}, dir2.path());
  EXPECT_EQ(r2.exit_code, 2);
  EXPECT_NE(r2.err.find("'Fast'"), std::string::npos) << r2.err;
}

// A chunk size is acceltune's column: only the rows that tune one have eleven columns, and the
// header says what NCCL's example tuner makes of them. The plugin applies the chunk it reads.
TEST(NcclPlugin, ExportWritesTenColumnsUnlessAChunkWasTuned) {
  test::TempDir dir;
  write_study(dir / "study",
              Json{{"algo", "Ring"}, {"proto", "Simple"}, {"channels", 4}, {"buffsize", 1}, {"chunk_size", 262144}},
              Json{{"algo", "Tree"}, {"proto", "LL"}, {"channels", 8}, {"buffsize", 1}, {"chunk_size", "auto"}}, true,
              Json{{"chunk_size", "auto"}});
  auto r = test::run_cli({"export", "study", "--format", "nccl-tuner", "-o", "t.csv"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = test::read_file(dir / "t.csv");
  EXPECT_NE(text.find("allreduce,0,1048575,ring,simple,4,1,8,-1,-1,262144\n"), std::string::npos) << text;
  EXPECT_NE(text.find("allreduce,1048576,16777215,tree,ll,8,1,8,-1,-1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# a row with an 11th column, chunkSize,"), std::string::npos) << text;
  const auto parsed = nccl_table::parse_table(text);
  ASSERT_EQ(parsed.error, "") << text;
  ASSERT_EQ(parsed.rows.size(), 2u);
  EXPECT_EQ(parsed.rows[0].columns, 11);
  EXPECT_EQ(parsed.rows[1].columns, 10);

  setenv("ACCELTUNE_NCCL_TUNER_TABLE", (dir / "t.csv").c_str(), 1);
  Plugin p(7, 8, 1);
  unsetenv("ACCELTUNE_NCCL_TUNER_TABLE");
  ASSERT_TRUE(p.ready()) << p.why();
  Costs c;
  EXPECT_EQ(p.decide(kAllReduce, 65536, c), (Choice{kRing, kSimple, 4}));
  EXPECT_EQ(p.chunk(kAllReduce, 8192, kRing, kSimple, 131072), 262144u);

  // Without a tuned chunk no row has an eleventh column, and the header says nothing of one.
  test::TempDir plain;
  write_study(plain / "study", Json{{"algo", "Ring"}, {"proto", "LL"}, {"channels", 4}, {"buffsize", 1}},
              Json{{"algo", "Tree"}, {"proto", "LL"}, {"channels", 8}, {"buffsize", 1}});
  auto q = test::run_cli({"export", "study", "--format", "nccl-tuner"}, plain.path());
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out.find("chunkSize"), std::string::npos) << q.out;
  for (const auto& row : nccl_table::parse_table(q.out).rows) EXPECT_EQ(row.columns, 10) << q.out;
}

// The export checks its table as the plugin will: a value NCCL cannot take is an error that
// names it, and nothing is written.
TEST(NcclPlugin, ExportRefusesATableThePluginWouldRefuse) {
  test::TempDir dir;
  write_study(dir / "study", Json{{"algo", "Ring"}, {"proto", "LL"}, {"channels", 100}, {"buffsize", 1}},
              Json{{"algo", "Ring"}, {"proto", "LL"}, {"channels", 4}, {"buffsize", 1}});
  auto r = test::run_cli({"export", "study", "--format", "nccl-tuner", "-o", "t.csv"}, dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("channels '100' is not -1 or 1 to 64"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tuner plugin would refuse"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "t.csv"));

  test::TempDir small;
  write_study(small / "study",
              Json{{"algo", "Ring"}, {"proto", "LL128"}, {"channels", 4}, {"buffsize", 1}, {"chunk_size", 1024}},
              Json{{"algo", "Ring"}, {"proto", "LL"}, {"channels", 4}, {"buffsize", 1}, {"chunk_size", 1024}}, true,
              Json{{"chunk_size", "auto"}});
  auto s = test::run_cli({"export", "study", "--format", "nccl-tuner"}, small.path());
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_NE(s.err.find("chunkSize '1024' is not -1 or a byte count from 1920 (the ll128 grain)"), std::string::npos)
      << s.err;
}

// The one reader every party uses: each rule, with the line it names.
TEST(NcclTunerTable, EachRuleNamesTheLine) {
  const auto ok = nccl_table::parse_table(
      "# comment\n"
      "collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks\n"
      "\n"
      "AllReduce , 0 , 100 , NVLSTree , Simple , 64 , 2 , 16 , 3 , 0 , 512\r\n"
      "broadcast,0,18446744073709551615,-1,-1,-1,-1,-1\n");
  ASSERT_EQ(ok.error, "");
  ASSERT_EQ(ok.rows.size(), 2u);
  const nccl_table::Row& r = ok.rows[0];
  EXPECT_EQ(r.line, 4);
  EXPECT_EQ(r.collective, kAllReduce);
  EXPECT_EQ(r.algorithm, ACC_NCCL_ALGO_NVLS_TREE);
  EXPECT_EQ(r.protocol, kSimple);
  EXPECT_EQ(r.channels, 64);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.ranks, 16);
  EXPECT_EQ(r.pipe_ops, 3);
  EXPECT_EQ(r.reg_buff, 0);
  EXPECT_EQ(r.chunk_bytes, 512);
  EXPECT_EQ(r.columns, 11);
  EXPECT_EQ(ok.rows[1].max_bytes, UINT64_MAX);
  EXPECT_EQ(ok.rows[1].columns, 8);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"allreduce,0,1\n", "expected 8 to 11 comma-separated fields"},
      {"allreduce,0,1,ring,ll,1,1,1,1,1,512,9\n", "got more"},
      {"alltoall,0,1,ring,ll,1,1,1\n", "unknown collective 'alltoall'"},
      {"allreduce,-1,1,ring,ll,1,1,1\n", "min_bytes '-1'"},
      {"allreduce,2,1,ring,ll,1,1,1\n", "min_bytes is larger than max_bytes"},
      {"allreduce,0,1,butterfly,ll,1,1,1\n", "unknown algorithm 'butterfly'"},
      {"allreduce,0,1,ring,ll64,1,1,1\n", "unknown protocol 'll64'"},
      {"allreduce,0,1,ring,ll,65,1,1\n", "channels '65'"},
      {"allreduce,0,1,ring,ll,-2,1,1\n", "channels '-2'"},
      {"allreduce,0,1,ring,ll,1,0,1\n", "nNodes '0'"},
      {"allreduce,0,1,ring,ll,1,1,x\n", "nRanks 'x'"},
      {"allreduce,0,1,ring,ll,1,1,1,0\n", "numPipeOps '0'"},
      {"allreduce,0,1,ring,ll,1,1,1,1,2\n", "regBuff '2'"},
      {"allreduce,0,1,ring,ll,1,1,1,1,1,15\n", "chunkSize '15' is not -1 or a byte count from 16 (the ll grain)"},
      {"allreduce,0,1,ring,simple,1,1,1,1,1,511\n", "from 512 (the simple grain)"},
      {"allreduce,0,1,ring,simple,1,1,1,1,1,4294967296\n", "chunkSize '4294967296'"},
      {"allreduce,0,1,ring,ll,1,1,1,1,1,0\n", "chunkSize '0'"},
  };
  for (const auto& [text, message] : bad) {
    const auto r2 = nccl_table::parse_table("# first\n" + text);
    EXPECT_TRUE(r2.rows.empty()) << text;
    EXPECT_EQ(r2.error.rfind("line 2: ", 0), 0u) << r2.error;
    EXPECT_NE(r2.error.find(message), std::string::npos) << r2.error;
  }
  // Reading stops at the first row past the limit.
  std::string rows;
  for (int i = 0; i < 5; ++i) rows += "allreduce,0,1,ring,ll,1,1,1\n";
  EXPECT_EQ(nccl_table::parse_table(rows, 5).error, "");
  EXPECT_EQ(nccl_table::parse_table(rows + "garbage\n", 5).error, "line 6: more than 5 rows; a table this long is not a tuning table");
  // The grain arithmetic NCCL applies.
  EXPECT_EQ(nccl_table::usable_chunk(1000, kLL), 992);
  EXPECT_EQ(nccl_table::usable_chunk(1000, kLL128), 0);
  EXPECT_EQ(nccl_table::usable_chunk(3900, kLL128), 3840);
  EXPECT_EQ(nccl_table::usable_chunk(1000, kSimple), 512);
  EXPECT_EQ(nccl_table::usable_chunk(511, kSimple), 0);
}

TEST(NcclPlugin, ReplayStudyExportsAndLoads) {
  // A real search on a recorded landscape whose params are bound to NCCL's variables (channels too:
  // a replay param that no format carries is the application's, which a plan leaves at its default).
  test::TempDir dir;
  std::string csv = "algo,proto,channels,objective\n";
  for (const char* a : {"Ring", "Tree"}) {
    for (const char* p : {"Simple", "LL", "LL128"}) {
      for (int ch : {2, 4, 8}) {
        double v = 10 + (std::string(a) == "Tree" ? 5 : 0) + (std::string(p) == "LL128" ? 3 : 0) + ch;
        csv += fmt::format("{},{},{},{}\n", a, p, ch, v);
      }
    }
  }
  test::write_file(dir / "land.csv", csv);
  test::write_file(dir / "space.json", R"({
      "name": "nccl-land", "kernel": "replay", "operation": "allreduce", "landscape": "land.csv",
      "nodes": 1, "ranks": 4, "sizes": ["64K", "1M"],
      "params": [
        {"name": "algo", "kind": "categorical", "values": ["Ring", "Tree"], "default": "Ring", "env": "NCCL_ALGO"},
        {"name": "proto", "kind": "categorical", "values": ["Simple", "LL", "LL128"], "default": "Simple",
         "env": "NCCL_PROTO"},
        {"name": "channels", "kind": "ordinal", "values": [2, 4, 8], "default": 2, "env": "NCCL_MAX_NCHANNELS"}]})");
  auto s = test::run_cli({"search", "--space", "space.json", "--strategy", "grid", "--out", "s"}, dir.path());
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto e = test::run_cli({"export", "s", "--format", "nccl-tuner", "-o", "t.csv"}, dir.path());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const std::string text = test::read_file(dir / "t.csv");
  EXPECT_NE(text.find("allreduce,0,18446744073709551615,tree,ll128,8,1,4,-1,-1\n"), std::string::npos) << text;
  setenv("ACCELTUNE_NCCL_TUNER_TABLE", (dir / "t.csv").c_str(), 1);
  Plugin p(5, 4, 1);
  unsetenv("ACCELTUNE_NCCL_TUNER_TABLE");
  ASSERT_TRUE(p.ready()) << p.why();
  Costs c;
  EXPECT_EQ(p.decide(kAllReduce, 1 << 20, c), (Choice{kTree, kLL128, 8}));
}

}  // namespace
}  // namespace acceltune
