// libFuzzer target for the token blob decoder (blob versions 1 and 2): any bytes must
// decode or fail with an error, never crash or read out of bounds; what decodes must encode back
// to the same bytes when the input was the encoder's canonical form.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "store/detail/token_blob.hpp"

namespace {

// Texts 1..40 ("t1".."t40"); 0 and the rest absent, so that unknown ids are exercised.
llmrepro::store::detail::TokenTexts make_texts() {
  llmrepro::store::detail::TokenTexts texts;
  texts.text.resize(41);
  texts.present.assign(41, true);
  texts.present[0] = false;
  for (std::size_t id = 1; id < texts.text.size(); ++id) texts.text[id] = "t" + std::to_string(id);
  return texts;
}

// The ids of the texts of `tokens`, as encode_token_blob() takes them: "t7" is 7.
std::vector<std::uint64_t> text_ids(const std::vector<llmrepro::core::TokenLogprob>& tokens) {
  std::vector<std::uint64_t> ids;
  for (const auto& token : tokens) {
    ids.push_back(std::stoull(token.token.str().substr(1)));
    for (const auto& candidate : token.top)
      ids.push_back(std::stoull(candidate.token.str().substr(1)));
  }
  return ids;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto texts = make_texts();
  const std::string_view blob(reinterpret_cast<const char*>(data), size);
  std::vector<llmrepro::core::TokenLogprob> tokens;
  if (!llmrepro::store::detail::decode_token_blob(blob, texts, tokens)) return 0;
  // Decoded: the tokens must survive their own round trip exactly.
  const std::string again = llmrepro::store::detail::encode_token_blob(tokens, text_ids(tokens));
  std::vector<llmrepro::core::TokenLogprob> decoded;
  if (!llmrepro::store::detail::decode_token_blob(again, texts, decoded)) std::abort();
  if (llmrepro::store::detail::encode_token_blob(decoded, text_ids(decoded)) != again) std::abort();
  return 0;
}
