// The audit's token_texts table (schema version 2): each distinct token text once, by id, so that
// a token blob names a text in one or two bytes. Private to store.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/completion.hpp"
#include "core/result.hpp"
#include "store/detail/sqlite.hpp"
#include "store/detail/token_blob.hpp"

namespace llmrepro::store::detail {

// Gives each token text its id in token_texts, adding the texts not stored yet. Ids are cached:
// a stored text keeps its id for the life of the file (rows are never deleted), so a cached id
// stays right even while another connection adds texts. Ids added inside a transaction are cached
// only once it commits (commit()); rollback() forgets them.
class TextInterner {
public:
  // `connection` must outlive the interner; prepare() before intern().
  explicit TextInterner(const Connection& connection);

  core::Result<void> prepare();

  // Makes sure every token and candidate text of `tokens` has an id (inside the caller's write
  // transaction), so that id_of() can answer for each.
  core::Result<void> intern(const std::vector<core::TokenLogprob>& tokens);

  // The id of a text intern() has seen in this transaction or a committed one.
  std::uint64_t id_of(const std::string& text) const;

  // The caller's transaction committed: the ids it added stay cached.
  void commit();
  // The caller's transaction rolled back: the ids it added are gone from the file too.
  void rollback();

private:
  core::Result<void> intern_text(const std::string& text);

  const Connection& m_connection;
  Statement m_find;
  Statement m_insert;
  std::unordered_map<std::string, std::uint64_t> m_ids;
  std::vector<std::string> m_added; // the texts this transaction added to m_ids
};

// Every stored token text, by id. Inside the caller's read transaction.
core::Result<TokenTexts> read_token_texts(const Connection& connection);

} // namespace llmrepro::store::detail
