// A space file read against its tables: the kernel's native table and the environment variables'
// tables. A space names params and narrows them; kind, unit, doc and default come from the table,
// and a space that contradicts it is refused at load, naming the file and the field. Every shipped
// space loads against its tables.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "tests/helpers.hpp"
#include "tuner/env_params.hpp"
#include "tuner/kernel.hpp"

namespace acceltune {
namespace {

// The error of loading `params` (a JSON array) as a space of `kernel` from the file x.json.
Error load_error(const std::string& kernel, const std::string& params) {
  test::TempDir dir;
  const auto path = dir / "x.json";
  test::write_file(path, R"({"name": "x", "kernel": ")" + kernel + R"(", "sizes": ["64K"], "params": )" + params + "}");
  auto s = Space::load_file(path);
  if (s) {
    ADD_FAILURE() << "loaded but should not have: " << params;
    return Error{};
  }
  return s.error();
}

void expect_refused(const std::string& kernel, const std::string& params, const std::string& field,
                    const std::string& what) {
  const Error e = load_error(kernel, params);
  EXPECT_EQ(e.exit_code(), 2) << e.message;
  EXPECT_NE(e.message.find("x.json: " + field + ": "), std::string::npos) << field << " not in: " << e.message;
  EXPECT_NE(e.message.find(what), std::string::npos) << "'" << what << "' not in: " << e.message;
}

TEST(SpaceTables, ASpaceContradictingItsKernelsTableIsRefusedNamingFileAndField) {
  // A kind that cannot hold the row's values.
  expect_refused("host-copy", R"([{"name": "chunk", "kind": "categorical", "values": ["4096"]}])", "params.chunk.kind",
                 "cannot hold the integer param");
  // A bound outside the domain.
  expect_refused("host-copy", R"([{"name": "threads", "kind": "int", "min": 1, "max": 2000}])", "params.threads.max",
                 "value 2000 is outside 1..1024");
  expect_refused("host-copy", R"([{"name": "chunk", "kind": "pow2", "min": 32, "max": 1099511627776}])",
                 "params.chunk.min", "value 32 is outside 64..1T");
  expect_refused("host-copy", R"([{"name": "method", "values": ["memcpy", "memmove"]}])", "params.method.values",
                 "'memmove' is not one of memcpy, stream, rep_movsb");
  // A narrowing without the default, and a default other than the table's.
  expect_refused("host-copy", R"([{"name": "chunk", "kind": "pow2", "min": 4096, "max": 67108864}])",
                 "params.chunk.max", "leaves out the default of the table of kernel 'host-copy', 1T");
  expect_refused("host-copy", R"([{"name": "threads", "values": [2, 4]}])", "params.threads.values",
                 "leaves out the default");
  expect_refused("host-copy", R"([{"name": "chunk", "values": [4096, 1099511627776], "default": 4096}])",
                 "params.chunk.default", "is not the default of the table of kernel 'host-copy', 1T");
  // A unit or doc other than the table's.
  expect_refused("host-copy", R"([{"name": "threads", "min": 1, "max": 2, "unit": "bytes"}])", "params.threads.unit",
                 "differs from the table of kernel 'host-copy': \"threads\"");
  expect_refused("host-copy", R"([{"name": "hugepages", "doc": "huge pages"}])", "params.hugepages.doc",
                 "differs from");
}

TEST(SpaceTables, ASpaceContradictingAVariablesRowIsRefusedNamingFileAndField) {
  expect_refused("replay", R"([{"name": "algo", "env": "NCCL_ALGO", "values": ["default", "Rign"]}])",
                 "params.algo.values", "value 'Rign' is not one of Ring, Tree");
  expect_refused("replay", R"([{"name": "buff", "env": "NCCL_BUFFSIZE", "values": ["default", "1K"]}])",
                 "params.buff.values", "value '1K' is outside 4K..1G");
  expect_refused("replay", R"([{"name": "rails", "env": "UCX_MAX_RNDV_RAILS", "kind": "bool", "default": false}])",
                 "params.rails.kind", "cannot hold the integer param of the ucx table");
  expect_refused("replay", R"([{"name": "seg", "env": "UCX_SEG_SIZE", "values": ["8192"], "unit": "KiB"}])",
                 "params.seg.unit", "differs from the ucx table: \"bytes\"");
  // The variable's default is unset: a narrowing without it must name its own baseline.
  expect_refused("replay", R"([{"name": "algo", "env": "NCCL_ALGO", "values": ["Ring", "Tree"]}])",
                 "params.algo.values", "the variable's default is unset");
  // A variable of a known library that its table lacks: a misspelt name measures nothing.
  expect_refused("replay", R"([{"name": "algo", "env": "NCCL_ALGORITHM", "values": ["default", "Ring"]}])",
                 "params.algo.env", "NCCL_ALGORITHM is not one of the nccl variables");
  expect_refused("replay",
                 R"([{"name": "p", "env": "OMPI_MCA_coll_tuned_allreduce_algorithm", "values": ["ignore", "ring2"]}])",
                 "params.p.values", "'ring2' is not one of ignore");
}

TEST(SpaceTables, ASpaceMayLeaveToTheTableWhatItSays) {
  test::TempDir dir;
  test::write_file(dir / "x.json", R"({"name": "x", "kernel": "host-copy", "sizes": ["64K"], "params": [
    {"name": "threads", "min": 1, "max": 2},
    {"name": "chunk", "values": [4096, 1099511627776]},
    {"name": "hugepages"},
    {"name": "algo", "env": "NCCL_ALGO", "values": ["default", "ring", "Ring,Tree", "^NVLS"]},
    {"name": "thresh", "env": "UCX_RNDV_THRESH", "values": ["16384", "auto", "inf"]},
    {"name": "tls", "env": "UCX_TLS", "values": ["tcp"]},
    {"name": "method", "values": ["stream"]}]})");
  auto s = Space::load_file(dir / "x.json");
  ASSERT_TRUE(s) << s.error().message;
  const auto& p = s->params();
  EXPECT_EQ(p[0].kind, ParamKind::int_range);
  EXPECT_EQ(p[0].unit, "threads");
  EXPECT_NE(p[0].doc, "");
  EXPECT_EQ(p[1].kind, ParamKind::ordinal);
  EXPECT_EQ(p[1].unit, "bytes");
  EXPECT_EQ(p[2].kind, ParamKind::boolean);
  EXPECT_EQ(p[3].kind, ParamKind::categorical);
  EXPECT_NE(p[3].doc.find("algorithms NCCL may choose from"), std::string::npos) << p[3].doc;
  EXPECT_EQ(p[4].unit, "bytes");
  // Defaults: the kernel's, the variable left unset, the value UCX takes unset, pinned contexts.
  EXPECT_EQ(s->key(s->default_config()),
            "algo=default,chunk=1099511627776,hugepages=false,method=stream,threads=1,thresh=auto,tls=tcp");
  // What it restates the same is fine, and its definition reads back the same.
  test::write_file(dir / "y.json", R"({"name": "y", "kernel": "host-copy", "params": [
    {"name": "threads", "kind": "int", "min": 1, "max": 2, "default": 1, "unit": "threads"}]})");
  auto y = Space::load_file(dir / "y.json");
  ASSERT_TRUE(y) << y.error().message;
  auto again = Space::from_json(s->definition(), "again", ".");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->definition(), s->definition());
}

TEST(SpaceTables, EnvRowsReadTheirValuesAsText) {
  const auto algo = find_env_row("NCCL_ALGO");
  ASSERT_TRUE(algo && algo->row);
  EXPECT_EQ(algo->table, "nccl");
  EXPECT_EQ(outside_domain(*algo->row, Value{std::string("tree")}), "");  // NCCL ignores case
  EXPECT_EQ(outside_domain(*algo->row, Value{std::string("^NVLS,PAT")}), "");
  EXPECT_NE(outside_domain(*algo->row, Value{std::string("Ring,")}), "");
  EXPECT_EQ(describe_default(*algo->row), "unset");
  const auto thresh = find_env_row("UCX_RNDV_THRESH");
  ASSERT_TRUE(thresh && thresh->row);
  EXPECT_EQ(outside_domain(*thresh->row, Value{std::string("64K")}), "");
  EXPECT_EQ(outside_domain(*thresh->row, Value{int64_t{65536}}), "");
  EXPECT_NE(outside_domain(*thresh->row, Value{std::string("lots")}), "");
  EXPECT_EQ(describe_default(*thresh->row), "unset (auto)");
  const auto missing = find_env_row("UCX_NO_SUCH_VARIABLE");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->row, nullptr);
  EXPECT_FALSE(find_env_row("MY_OWN_VARIABLE"));  // no table claims it: a space binds it as it likes
  for (const auto& [name, table] : EnvTableRegistry::instance().entries()) {
    for (const auto& row : table.rows) {
      EXPECT_EQ(row.name.rfind(table.prefix, 0), 0u) << name << ": " << row.name;
      EXPECT_TRUE(row.env) << row.name;
      EXPECT_FALSE(row.doc.empty()) << row.name;
      if (!row.unset_as.empty()) {
        EXPECT_EQ(outside_domain(row, Value{row.unset_as}), "") << row.name;
      }
    }
  }
}

// Every shipped space reads against its tables: each param that a table describes takes its doc
// from there, and each bound variable has a row.
TEST(SpaceTables, EveryShippedSpaceLoadsAgainstItsTables) {
  int spaces = 0, described = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::spaces_dir())) {
    if (entry.path().extension() != ".json") continue;
    auto s = Space::load_file(entry.path());
    ASSERT_TRUE(s) << s.error().message;
    ++spaces;
    const bool kernel = KernelRegistry::instance().find(s->kernel()) != nullptr;
    for (const auto& p : s->params()) {
      if (!p.env.empty()) {
        ASSERT_TRUE(find_env_row(p.env) && find_env_row(p.env)->row) << p.env;
      }
      if (!p.env.empty() || kernel) {
        EXPECT_FALSE(p.doc.empty()) << entry.path().filename() << ": " << p.name;
        ++described;
      }
    }
  }
  EXPECT_GE(spaces, 20);
  EXPECT_GE(described, 60);
}

// The space file docs/formats.md shows reads against its tables (the docs test also runs it).
TEST(SpaceTables, TheDocumentedSpaceFileLoads) {
  const auto readme = test::source_dir() / "docs" / "formats.md";
  if (!std::filesystem::exists(readme)) GTEST_SKIP() << readme << " is not here (an installed copy)";
  const std::string text = test::read_file(readme);
  const size_t section = text.find("## Space files");
  ASSERT_NE(section, std::string::npos);
  const size_t begin = text.find("```json\n", section) + 8, end = text.find("```", begin);
  ASSERT_NE(end, std::string::npos);
  auto s = Space::from_json(Json::parse(text.substr(begin, end - begin)), "docs/formats.md", ".");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->key(s->default_config()), "algo=default,chunk=1099511627776,hugepages=false,method=memcpy,threads=1");
}

// host-copy measures its default chunk as before: one piece per thread (the table's default, the
// kernel's behaviour without the param), which the shipped space's narrowing holds.
TEST(SpaceTables, HostCopysDefaultChunkIsOnePiece) {
  auto s = Space::load_file(test::spaces_dir() / "host-copy.json");
  ASSERT_TRUE(s) << s.error().message;
  const auto k = KernelRegistry::instance().find("host-copy")->make();
  const NativeValues v(k->native_table(), *s, s->default_config());
  EXPECT_EQ(v.integer("chunk"), int64_t{1} << 40);
  EXPECT_EQ(to_double(find_native(k->native_table(), "chunk")->fallback), std::ldexp(1.0, 40));
  for (uint64_t bytes : s->sizes()) EXPECT_GE(static_cast<uint64_t>(v.integer("chunk")), bytes);
}

}  // namespace
}  // namespace acceltune
