// The audit's token_texts table (schema version 2): each distinct token text once, by id, so that
// a token blob names a text in one or two bytes. Private to store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/completion.hpp"
#include "core/result.hpp"
#include "store/detail/sqlite.hpp"
#include "store/detail/text_id_cache.hpp"
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

  // Appends to `ids` the id of every text of `tokens`, token after token: the token's, then each
  // of its candidates' (as encode_token_blob() takes them); texts not stored yet are added, in
  // that order, inside the caller's write transaction.
  core::Result<void> intern(const std::vector<core::TokenLogprob>& tokens,
                            std::vector<std::uint64_t>& ids);

  // The caller's transaction committed: the ids it added stay cached.
  void commit();
  // The caller's transaction rolled back: the ids it added are gone from the file too.
  void rollback();

private:
  core::Result<std::uint64_t> intern_text(std::string_view text);

  const Connection& m_connection;
  Statement m_find;
  Statement m_insert;
  TextIdCache m_ids;
};

// Every stored token text, by id. Inside the caller's read transaction.
core::Result<TokenTexts> read_token_texts(const Connection& connection);

} // namespace llmrepro::store::detail
