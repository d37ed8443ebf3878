// The packed form of one completion's tokens (schema versions 2 and 3): every token of a token
// list, with its log probability and all its candidates, in one BLOB whose token texts are ids of
// the audit's token_texts table. The byte format is specified in docs/design.md ("Token blobs");
// tests/e2e/token_blob.py decodes the same format. Private to store.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/completion.hpp"
#include "core/result.hpp"

namespace llmrepro::store::detail {

// The first byte of every token blob: the version of the blob format (not the schema's). Version 2
// is written (schema version 3); version 1 (schema version 2) is read too.
inline constexpr std::uint8_t k_token_blob_version = 2;

// The token texts of one audit by id (token_texts.id); ids never stored are absent.
struct TokenTexts {
  std::vector<core::TokenText> text;
  // A byte an id, not std::vector<bool>: the decoder asks for every text it reads, and a bit's
  // shifts and masks cost more than the rest of the lookup.
  std::vector<std::uint8_t> present;

  // Whether `id` names a stored text.
  bool has(std::uint64_t id) const { return id < present.size() && present[id] != 0; }
};

// Packs `tokens`; `text_ids` holds the token_texts id of each of their texts, token after token:
// the token's, then each of its candidates' (TextInterner::intern() gives them), one id for each
// distinct text and one text for each id. Every log probability is kept bit for bit, except that
// every NaN reads back as core::k_unknown_logprob, as version 1 kept them.
std::string encode_token_blob(const std::vector<core::TokenLogprob>& tokens,
                              std::span<const std::uint64_t> text_ids);

// Decodes the tokens packed in `blob` (version 1 or 2) into `tokens`, their texts taken from
// `texts`, in place of what it held: its elements are overwritten, so that a vector handed back
// from an earlier decode lends its tokens' and candidate lists' storage instead of a malloc a
// token. A blob of another version, a truncated or overlong one, or an id absent from `texts` is
// ErrorCode::input saying what is wrong ("truncated", "unknown token text id 7", ...); the caller
// names the request. `tokens` may then hold part of the list.
core::Result<void> decode_token_blob(std::string_view blob, const TokenTexts& texts,
                                     std::vector<core::TokenLogprob>& tokens);

// Whether `text` is exactly the texts of `tokens` one after another: schema version 3 then stores
// no text (NULL) and reads it back from the tokens.
bool is_token_concatenation(std::string_view text, const std::vector<core::TokenLogprob>& tokens);

// The texts of `tokens` one after another.
std::string token_concatenation(const std::vector<core::TokenLogprob>& tokens);

} // namespace llmrepro::store::detail
