// The token_texts table and the token blobs that name its ids (store/token_texts.cpp): each text
// stored once, with ids in order of first use (each token's text, then its candidates', answers
// before reasoning, record after record), a committed id kept across transactions and files
// reopened, a rolled-back one forgotten. The bytes of both tables are part of the format, so they
// are compared whole.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <limits>
#include <string>
#include <vector>

#include "store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/store/audit_database_support.hpp"

using namespace llmrepro;
using store::AuditDatabase;

using namespace testing::store_support;
using testing::TempDir;

namespace {

core::RequestRecord tokens_record(int prompt, int repeat, std::vector<core::TokenLogprob> answer,
                                  std::vector<core::TokenLogprob> reasoning) {
  auto record = make_record(prompt, 1, repeat, true);
  auto& completion = record.outcome.completion;
  completion.tokens = std::move(answer);
  completion.text = store::detail::token_concatenation(completion.tokens);
  completion.completion_tokens = static_cast<long>(completion.tokens.size());
  completion.reasoning_tokens = std::move(reasoning);
  completion.reasoning_text = store::detail::token_concatenation(completion.reasoning_tokens);
  return record;
}

// Two records of one batch that share texts with each other, as tokens and as candidates, in
// answers and in reasoning.
std::vector<core::RequestRecord> first_batch() {
  const double unknown = core::k_unknown_logprob;
  return {tokens_record(0, 0,
                        {token("The", -0.0123, {{"The", -0.0123}, {" A", -1.5}}),
                         token(" cat", -0.5, {{" cat", -0.5}, {"The", -2.25}}),
                         token("!", unknown, {})},
                        {token("Hmm", -0.1, {{"Hmm", -0.1}, {"The", -0.2}, {"Hm", -9999.0}})}),
          tokens_record(1, 0,
                        {token(" cat", -0.25, {{" cat", -0.25}, {" dog", -1.75}}),
                         token("\xff", -0.0, {{" A", -3.0}, {"\xff", -0.0}}),
                         token("", -1.0 / 3, {{"", -1.0 / 3}, {"!", -0.125}})},
                        {})};
}

// A record of a later transaction: texts stored before and new ones.
core::RequestRecord later_record() {
  return tokens_record(0, 1,
                       {token(" dog", static_cast<double>(-0.3f),
                              {{" dog", static_cast<double>(-0.3f)}, {" eel", -1e-9}}),
                        token("The", -0.5, {{"The", -0.5}, {" cat", -1.25}})},
                       {token("Hm", -0.75, {{"Hm", -0.75}, {" eel", -1.5}})});
}

// Every row of token_texts and packed_tokens, as text.
std::string token_tables(const std::string& path) {
  return query_text(path, "SELECT group_concat(id || ':' || hex(text), ' ') FROM (SELECT * FROM "
                          "token_texts ORDER BY id)") +
         " | " +
         query_text(path, "SELECT group_concat(request_id || ':' || hex(answer) || ':' || "
                          "hex(reasoning), ' ') FROM (SELECT * FROM packed_tokens ORDER BY "
                          "request_id)");
}

constexpr const char* k_token_tables =
    "1:546865 2:2041 3:20636174 4:21 5:486D6D 6:486D 7:20646F67 8:FF 9: 10:2065656C | "
    "1:02030202027BFC020FFF0605FF01E101FE090000:020103020A01FF0102FF068F4E00 "
    "2:020302020619FE07AF01FE110500000402050300080500001303555555555555D5BF0504057DFD: "
    "3:020202020F049A9999BE050A0501F70205FF037DFE:020102020C4BFE0A0FFF";

} // namespace

TEST_CASE("TextInterner: the ids and blobs an audit stores") {
  TempDir dir;
  const std::string path = dir.file("audit.db");
  {
    auto database = create_or_fail(path, make_header());
    SUBCASE("recorded at once") {}
    SUBCASE("after a transaction that stored the same texts rolled back") {
      // The second record's tokens cannot be stored: the transaction rolls back with the texts
      // it added, whose ids the next transaction assigns again.
      sqlite3* db = nullptr;
      REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
      const char* refuse = "CREATE TRIGGER refuse BEFORE INSERT ON packed_tokens WHEN "
                           "NEW.request_id = (SELECT id FROM requests WHERE prompt_index = 1) "
                           "BEGIN SELECT RAISE(ABORT, 'refused'); END";
      REQUIRE(sqlite3_exec(db, refuse, nullptr, nullptr, nullptr) == SQLITE_OK);
      CHECK_FALSE(database.record_batch(first_batch()));
      REQUIRE(sqlite3_exec(db, "DROP TRIGGER refuse", nullptr, nullptr, nullptr) == SQLITE_OK);
      sqlite3_close(db);
    }
    const auto recorded = database.record_batch(first_batch());
    REQUIRE_MESSAGE(recorded, (recorded ? "" : recorded.error().message));
  }
  // Reopened: the stored ids are looked up, not assigned again.
  auto database = AuditDatabase::open(path);
  REQUIRE(database);
  REQUIRE(database->record(later_record()));
  CHECK(token_tables(path) == k_token_tables);
  auto expected = first_batch();
  expected.push_back(later_record());
  const auto loaded = load_or_fail(*database);
  REQUIRE(loaded.records.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) check_same(loaded.records[i], expected[i]);
}
