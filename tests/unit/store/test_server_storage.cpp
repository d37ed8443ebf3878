#include <doctest/doctest.h>

#include <string>

#include "store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using namespace testing::store_support;
using testing::TempDir;

namespace {

core::ServerDescription llama_description() {
  return {"llama.cpp",
          "b10470-34af94cd9",
          {{"slots", "8"}, {"context per slot", "512"}, {"model path", "/m/q\"uote.gguf"}},
          "llama.cpp b10470-34af94cd9, 8 slots, 512 tokens per slot"};
}

} // namespace

TEST_CASE("AuditDatabase: each endpoint's server description round-trips") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto header = make_header();
  header.endpoints[0].server = llama_description();
  auto database = create_or_fail(path, header);
  const core::AuditData loaded = load_or_fail(database);
  REQUIRE(loaded.endpoints.size() == 2);
  CHECK(loaded.endpoints[0].server == llama_description());
  CHECK_FALSE(loaded.endpoints[1].server.known());
  CHECK(query_text(path, "SELECT count(*) FROM meta WHERE key LIKE 'server:%'") == "1");
}

TEST_CASE("AuditDatabase::update_endpoint replaces the description, an unknown one removes it") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto header = make_header();
  header.endpoints[0].server = llama_description();
  auto database = create_or_fail(path, header);
  core::EndpointInfo resumed = header.endpoints[0];
  resumed.server.version = "b10500-0000000";
  REQUIRE(database.update_endpoint(0, resumed));
  CHECK(load_or_fail(database).endpoints[0].server.version == "b10500-0000000");
  resumed.server = {};
  REQUIRE(database.update_endpoint(0, resumed));
  CHECK_FALSE(load_or_fail(database).endpoints[0].server.known());
  CHECK(query_text(path, "SELECT count(*) FROM meta WHERE key LIKE 'server:%'") == "0");
}

TEST_CASE("AuditDatabase::load: an audit stored before descriptions reads back without one") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  auto header = make_header();
  header.endpoints[0].server = llama_description();
  { auto database = create_or_fail(path, header); }
  // As an older build left it: no server rows at all.
  run_sql(path, "DELETE FROM meta WHERE key LIKE 'server:%'");
  auto reopened = AuditDatabase::open(path);
  REQUIRE(reopened);
  CHECK_FALSE(load_or_fail(*reopened).endpoints[0].server.known());
}

TEST_CASE("AuditDatabase::load: an unreadable description is an input error naming its row") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  { auto database = create_or_fail(path, make_header()); }
  run_sql(path, "INSERT INTO meta (key, value) VALUES ('server:1', '{\"kind\": 3}')");
  auto reopened = AuditDatabase::open(path);
  REQUIRE(reopened);
  auto loaded = reopened->load();
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().code == core::ErrorCode::input);
  CHECK(loaded.error().message.find("meta 'server:1': unreadable") != std::string::npos);
}
