// The collectives' table (tuner/collectives.hpp): every row complete, its expected values the
// collectives' results, and the kernels and export writers agreeing with it, since they read it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kernels/nccl/nccl_common.hpp"
#include "results/nccl_tuner_table.hpp"
#include "tests/helpers.hpp"
#include "tuner/best.hpp"
#include "tuner/collectives.hpp"
#include "tuner/kernel.hpp"
#include "tuner/space.hpp"

namespace acceltune {
namespace {

std::string text(std::string_view v) { return std::string(v); }

TEST(Collectives, EveryRowIsComplete) {
  const auto rows = collective_rows();
  ASSERT_EQ(rows.size(), 7u);
  std::set<std::string> names, mpi_names;
  std::set<int> tuner_ids, ompi_ids;
  for (size_t i = 0; i < rows.size(); ++i) {
    const CollectiveRow& r = rows[i];
    SCOPED_TRACE(text(r.name));
    EXPECT_EQ(static_cast<size_t>(r.op), i) << "rows are in CollectiveOp's order";
    EXPECT_EQ(&collective_row(r.op), &r);
    EXPECT_EQ(to_string(r.op), r.name);
    ASSERT_FALSE(r.name.empty());
    EXPECT_TRUE(names.insert(text(r.name)).second) << "two rows share a name";
    EXPECT_EQ(find_collective(r.name), &r);
    // A split collective shares its message out in blocks: one side holds a block or each rank's
    // result is made of the others' blocks.
    const bool blocks = r.send == Share::block || r.recv == Share::block || r.expect == Expect::gathered ||
                        r.expect == Expect::scattered_sum || r.expect == Expect::transposed;
    EXPECT_EQ(r.split, blocks);
    EXPECT_GT(busbw_factor(r, 8), 0.0);
    EXPECT_LE(busbw_factor(r, 8), 2.0);
    if (r.nccl_tuner_id >= 0) {
      EXPECT_LT(r.nccl_tuner_id, nccl_table::kCollectives);
      EXPECT_TRUE(tuner_ids.insert(r.nccl_tuner_id).second) << "two rows share NCCL tuner id " << r.nccl_tuner_id;
      EXPECT_EQ(text(r.nccl_tuner_name), nccl_table::folded(text(r.name)));
    } else {
      EXPECT_TRUE(r.nccl_tuner_name.empty());
    }
    if (r.mpi_name.empty()) {
      // Nothing on the MPI side runs or tunes it.
      EXPECT_EQ(r.ompi_coll_id, -1);
      EXPECT_TRUE(r.ompi_algorithms.empty());
      EXPECT_TRUE(r.mpich_cvar.empty() && r.mpich_function.empty() && r.mpich_size_key.empty());
      continue;
    }
    EXPECT_TRUE(mpi_names.insert(text(r.mpi_name)).second) << "two rows share MPI name " << r.mpi_name;
    EXPECT_EQ(find_mpi_collective(r.mpi_name), &r);
    EXPECT_GE(r.ompi_coll_id, 0);
    EXPECT_TRUE(ompi_ids.insert(r.ompi_coll_id).second) << "two rows share Open MPI id " << r.ompi_coll_id;
    ASSERT_GE(r.ompi_algorithms.size(), 2u);
    EXPECT_EQ(r.ompi_algorithms[0], "ignore") << "coll/tuned's algorithm 0 leaves the choice to Open MPI";
    EXPECT_FALSE(r.mpich_cvar.empty());
    EXPECT_FALSE(r.mpich_function.empty());
    EXPECT_EQ(r.mpich_size_key, r.split ? "total_msg_size" : "avg_msg_size");
  }
  EXPECT_EQ(static_cast<int>(tuner_ids.size()), nccl_table::kCollectives) << "every NCCL tuner id has its row";
  EXPECT_EQ(find_collective("nosuch"), nullptr);
  EXPECT_EQ(find_mpi_collective(""), nullptr);
}

// Each collective simulated on host buffers from its definition, rank by rank, against what the
// table says each rank must receive.
std::vector<float> simulated(const CollectiveRow& r, const std::vector<std::vector<float>>& in, int me,
                             uint64_t block) {
  const int n = static_cast<int>(in.size());
  const uint64_t total = in[0].size();
  std::vector<float> out;
  switch (r.op) {
    case CollectiveOp::allreduce:
    case CollectiveOp::reduce:
      out.assign(total, 0.0f);
      for (int q = 0; q < n; ++q) {
        for (uint64_t i = 0; i < total; ++i) out[i] += in[q][i];
      }
      break;
    case CollectiveOp::allgather:
      for (int q = 0; q < n; ++q) out.insert(out.end(), in[q].begin(), in[q].begin() + block);
      break;
    case CollectiveOp::reduce_scatter:
      out.assign(block, 0.0f);
      for (int q = 0; q < n; ++q) {
        for (uint64_t j = 0; j < block; ++j) out[j] += in[q][me * block + j];
      }
      break;
    case CollectiveOp::broadcast: out = in[0]; break;
    case CollectiveOp::alltoall:
      for (int q = 0; q < n; ++q) out.insert(out.end(), in[q].begin() + me * block, in[q].begin() + (me + 1) * block);
      break;
    case CollectiveOp::sendrecv: out = in[(me + n - 1) % n]; break;
  }
  return out;
}

TEST(Collectives, ExpectedValuesAreTheCollectivesResults) {
  auto element = [](int q, uint64_t i) { return static_cast<float>((i * 7 + static_cast<uint64_t>(q) * 13) % 16 + 1); };
  const int n = 3;
  for (const auto& r : collective_rows()) {
    SCOPED_TRACE(text(r.name));
    const Shares s = collective_shares(r, 12, n);
    EXPECT_EQ(s.block, r.split ? 4u : 12u);
    std::vector<std::vector<float>> in(n);
    for (int q = 0; q < n; ++q) {
      for (uint64_t i = 0; i < 12; ++i) in[static_cast<size_t>(q)].push_back(element(q, i));
    }
    for (int me = 0; me < n; ++me) {
      if (r.root_only_receives && me != 0) continue;
      const std::vector<float> want = simulated(r, in, me, s.block);
      ASSERT_EQ(want.size(), s.recv) << "rank " << me;
      EXPECT_EQ(r.send == Share::block ? s.block : 12u, s.send);
      for (uint64_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(expected_element(r, element, me, n, i, s.block), want[i]) << "rank " << me << " element " << i;
      }
    }
  }
}

TEST(Collectives, TheNcclKernelReadsTheTable) {
  std::vector<std::string> runs;
  for (const auto& r : collective_rows()) {
    if (r.nccl_kernel) runs.emplace_back(r.name);
  }
  EXPECT_EQ(nccl_op_names(), runs);
  for (const auto& r : collective_rows()) {
    SCOPED_TRACE(text(r.name));
    ASSERT_EQ(nccl_op_from_string(r.name), r.nccl_kernel ? std::optional<NcclOp>(r.op) : std::nullopt);
    for (int ranks : {1, 2, 3, 8}) EXPECT_DOUBLE_EQ(nccl_busbw_factor(r.op, ranks), busbw_factor(r, ranks));
    // Measured at a whole number of blocks where the table splits the message.
    EXPECT_EQ(nccl_effective_bytes(r.op, 1000, 3), r.split ? 83u * 3 * 4 : 1000u);
  }
}

// The refusal of an operation a kernel does not run lists the table's names for it; every name it
// lists is accepted (whatever else the kernel then needs).
void expect_kernel_names(const std::string& space_name, const std::vector<std::string>& names) {
  std::ifstream f(test::spaces_dir() / (space_name + ".json"));
  std::stringstream ss;
  ss << f.rdbuf();
  Json doc = Json::parse(ss.str());
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  doc["operation"] = "nosuch";
  auto bad = Space::from_json(doc, space_name, test::spaces_dir());
  ASSERT_TRUE(bad) << bad.error().message;
  auto refused = make_kernel(*bad);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("(" + list + ")"), std::string::npos) << refused.error().message;
  for (const auto& n : names) {
    doc["operation"] = n;
    auto s = Space::from_json(doc, space_name, test::spaces_dir());
    ASSERT_TRUE(s) << s.error().message;
    auto k = make_kernel(*s);
    if (!k) {
      EXPECT_EQ(k.error().message.find("is not a collective"), std::string::npos) << k.error().message;
    }
  }
}

TEST(Collectives, TheKernelsNameWhatTheTableNames) {
  std::vector<std::string> mpi, nccl;
  for (const auto& r : collective_rows()) {
    if (!r.mpi_name.empty()) mpi.emplace_back(r.mpi_name);
    if (r.nccl_kernel) nccl.emplace_back(r.name);
  }
  bool any = false;
  if (KernelRegistry::instance().find("mpi-coll")) {
    expect_kernel_names("mpi-allreduce", mpi);
    any = true;
  }
  if (KernelRegistry::instance().find("nccl")) {
    expect_kernel_names("nccl-allreduce", nccl);
    any = true;
  }
  if (!any) GTEST_SKIP() << "built without the mpi-coll and nccl kernels";
}

// The plain MPI client is C and knows nothing of acceltune: its own list must hold the same names.
TEST(Collectives, ThePlainMpiClientTimesTheTablesMpiNames) {
  const auto source = std::filesystem::path(ACCELTUNE_TEST_SOURCE_DIR) / "kernels" / "mpi" / "mpi_client.c";
  std::ifstream f(source);
  if (!f) GTEST_SKIP() << "no source tree here (" << source << "): a relocated test program";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string c = ss.str();
  const size_t begin = c.find("kCollectives[] = {");
  ASSERT_NE(begin, std::string::npos);
  const std::string list = c.substr(begin, c.find("};", begin) - begin);
  size_t quoted = 0;
  for (size_t p = list.find('"'); p != std::string::npos; p = list.find('"', list.find('"', p + 1) + 1)) ++quoted;
  size_t mpi = 0;
  for (const auto& r : collective_rows()) {
    if (r.mpi_name.empty()) continue;
    ++mpi;
    EXPECT_NE(list.find("\"" + text(r.mpi_name) + "\""), std::string::npos) << r.mpi_name << " in " << list;
  }
  EXPECT_EQ(quoted, mpi) << list;
}

BestTable one_range(const std::string& param, const std::string& variable, const Json& value,
                    const std::string& operation) {
  BestTable b;
  b.space = "s";
  b.kernel = "replay";
  b.trials = b.trials_ok = 1;
  b.env = {{param, variable}};
  b.default_config = Json{{param, nullptr}};
  b.export_config = Json{{param, value}};
  b.study = Json{{"workload", Json{{"operation", operation}, {"ranks", 4}}}};
  SizeRange r;
  r.min_bytes = 0;
  r.max_bytes = UINT64_MAX;
  r.config = Json{{param, value}};
  b.ranges = {r};
  return b;
}

TEST(Collectives, TheWritersTakeTheirNamesAndIdsFromTheRows) {
  for (const auto& r : collective_rows()) {
    SCOPED_TRACE(text(r.name));
    if (r.ompi_coll_id >= 0) {
      const std::string var = "OMPI_MCA_coll_tuned_" + text(r.mpi_name) + "_algorithm";
      auto rules = emit("ompi-rules", one_range("alg", var, text(r.ompi_algorithms[1]), text(r.mpi_name)));
      ASSERT_TRUE(rules) << rules.error().message;
      EXPECT_NE(rules->find(fmt::format("\n{}  # collective id: {}\n", r.ompi_coll_id, r.mpi_name)), std::string::npos)
          << *rules;
      EXPECT_NE(rules->find(fmt::format("\n0 1 0 0  # [0 B, max] {}\n", r.ompi_algorithms[1])), std::string::npos)
          << *rules;
    }
    if (!r.mpich_cvar.empty()) {
      const std::string var = fmt::format("MPIR_CVAR_{}_INTRA_ALGORITHM", r.mpich_cvar);
      auto sel = emit("mpich-json", one_range("alg", var, "ring", text(r.mpi_name)));
      ASSERT_TRUE(sel) << sel.error().message;
      EXPECT_NE(sel->find(fmt::format("\"collective={}\"", r.mpi_name)), std::string::npos) << *sel;
      EXPECT_NE(sel->find(fmt::format("\"{}=any\"", r.mpich_size_key)), std::string::npos) << *sel;
      EXPECT_NE(sel->find(fmt::format("\"algorithm=MPIR_{}_intra_ring\"", r.mpich_function)), std::string::npos)
          << *sel;
    }
    auto table = emit("nccl-tuner", one_range("algo", "NCCL_ALGO", "Ring", text(r.name)));
    if (r.nccl_tuner_id < 0) {
      ASSERT_FALSE(table);
      EXPECT_NE(table.error().message.find("is not a collective that NCCL asks a tuner about"), std::string::npos);
      continue;
    }
    ASSERT_TRUE(table) << table.error().message;
    EXPECT_NE(table->find("\n" + text(r.nccl_tuner_name) + ",0,"), std::string::npos) << *table;
    const auto parsed = nccl_table::parse_table(*table);
    ASSERT_EQ(parsed.error, "");
    ASSERT_EQ(parsed.rows.size(), 1u);
    EXPECT_EQ(parsed.rows[0].collective, r.nccl_tuner_id);
    EXPECT_EQ(nccl_table::collective_name(r.nccl_tuner_id), r.nccl_tuner_name);
  }
}

}  // namespace
}  // namespace acceltune
