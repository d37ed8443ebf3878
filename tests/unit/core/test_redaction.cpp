#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/random.hpp"
#include "core/redaction.hpp"

using llmrepro::core::is_secret_parameter_name;
using llmrepro::core::k_redacted;
using llmrepro::core::Redactor;
using llmrepro::core::RequestRecord;
using llmrepro::core::SplitMix64;
using llmrepro::core::TokenLogprob;

namespace {

// The encodings a server echo gives a value, written out here independently of the redactor.
std::string json_form(const std::string& value) {
  std::string out;
  for (const char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string percent_form(const std::string& value, const char* pattern) {
  std::string out;
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, pattern, byte);
      out += hex;
    }
  }
  return out;
}

std::vector<std::string> forms_of(const std::string& secret) {
  return {secret, json_form(secret), percent_form(secret, "%%%02X"),
          percent_form(secret, "%%%02x")};
}

std::string random_text(SplitMix64& random, const std::string& alphabet, std::size_t max_size) {
  std::string out(random.below(max_size + 1), ' ');
  for (char& c : out) c = alphabet[random.below(alphabet.size())];
  return out;
}

// Secrets: letters, digits and the punctuation that keys, tokens and passwords carry, including
// what JSON and percent-encoding rewrite. No brackets, so no secret can be read across a
// k_redacted.
const std::string k_secret_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./+=\"\\:@% ";

} // namespace

TEST_CASE("Redactor property: no secret survives, in any echoed form") {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    SplitMix64 random(seed);
    Redactor redactor;
    std::vector<std::string> secrets;
    const std::size_t count = 1 + random.below(4);
    while (secrets.size() < count) {
      std::string secret = random_text(random, k_secret_alphabet, 24);
      if (secret.size() < 4 || std::string(k_redacted).find(secret) != std::string::npos) continue;
      secrets.push_back(secret);
      redactor.add_secret(secret);
    }
    // Text: pieces of random text and of the secrets' forms, adjacent and overlapping (a
    // secret's tail followed by the whole of another).
    std::string text;
    for (int piece = 0; piece < 12; ++piece) {
      const std::string& secret = secrets[random.below(secrets.size())];
      const std::vector<std::string> forms = forms_of(secret);
      switch (random.below(4)) {
      case 0: text += random_text(random, k_secret_alphabet + "[]{}<>\n", 16); break;
      case 1: text += forms[random.below(forms.size())]; break;
      case 2: text += secret.substr(0, random.below(secret.size())) + secret; break;
      default: text += secret + secret.substr(random.below(secret.size())); break;
      }
    }
    const std::string out = redactor.redact(text);
    for (const std::string& secret : secrets)
      for (const std::string& form : forms_of(secret))
        CHECK_MESSAGE(out.find(form) == std::string::npos, "seed ", seed, ": '", form,
                      "' survives in '", out, "'");
  }
}

TEST_CASE("Redactor property: text without a secret is unchanged") {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    SplitMix64 random(seed);
    Redactor redactor;
    // Upper-case secrets with punctuation; lower-case text holds none of their forms.
    for (int i = 0; i < 3; ++i) {
      std::string secret = "K" + random_text(random, "ABCDEFGHIJKLMNOPQRSTUVWXYZ/\"+", 20);
      redactor.add_secret(secret + "XYZ");
    }
    const std::string text = random_text(random, "abcdefghijklmnopqrstuvwxyz .,:;{}[]\n", 200);
    CHECK(redactor.redact(text) == text);
  }
  Redactor empty;
  CHECK(empty.redact("anything at all") == "anything at all");
}

TEST_CASE("Redactor::redact") {
  Redactor redactor;
  SUBCASE("overlapping and touching secrets become one [redacted]") {
    redactor.add_secret("abcdef");
    redactor.add_secret("defghi");
    CHECK(redactor.redact("x abcdefghi y") == "x [redacted] y");
    CHECK(redactor.redact("x abcdefdefghi y") == "x [redacted] y");
    CHECK(redactor.redact("abcdef defghi") == "[redacted] [redacted]");
  }
  SUBCASE("a secret inside another") {
    redactor.add_secret("SECRET");
    redactor.add_secret("my-SECRET-key");
    CHECK(redactor.redact("<my-SECRET-key> <SECRET>") == "<[redacted]> <[redacted]>");
  }
  SUBCASE("JSON-escaped and percent-encoded echoes") {
    redactor.add_secret("sk/a\"b+c");
    CHECK(redactor.redact(R"({"message":"key sk/a\"b+c"})") == R"({"message":"key [redacted]"})");
    CHECK(redactor.redact(R"({"message":"key sk\/a\"b+c"})") == R"({"message":"key [redacted]"})");
    CHECK(redactor.redact("?k=sk%2Fa%22b%2Bc&x") == "?k=[redacted]&x");
    CHECK(redactor.redact("?k=sk%2fa%22b%2bc&x") == "?k=[redacted]&x");
  }
  SUBCASE("values shorter than four characters are not secrets") {
    redactor.add_secret("1");
    redactor.add_secret("abc");
    CHECK(redactor.redact("1 abc") == "1 abc");
  }
  SUBCASE("a header's value, and an Authorization value's credentials alone") {
    redactor.add_header("Authorization: Bearer tok-12345");
    redactor.add_header("X-Debug: 1");
    CHECK(redactor.redact("got 'Bearer tok-12345' and tok-12345, debug 1") ==
          "got '[redacted]' and [redacted], debug 1");
  }
  SUBCASE("a URL's userinfo, its password, its Basic form and its secret parameters") {
    redactor.add_url("http://user:pa%40ss@host:8000/v1?api-version=2024&api_key=QK-1234&sig=S1G9");
    CHECK(redactor.redact("http://user:pa%40ss@host:8000/v1?api-version=2024&api_key=QK-1234") ==
          "http://[redacted]@host:8000/v1?api-version=2024&api_key=[redacted]");
    CHECK(redactor.redact("password pa@ss, sig S1G9") == "password [redacted], sig [redacted]");
    // "user:pa@ss" in base64, as curl sends it in Authorization: Basic.
    CHECK(redactor.redact("Basic dXNlcjpwYUBzcw==") == "Basic [redacted]");
    CHECK(redactor.redact("api-version=2024") == "api-version=2024");
  }
}

TEST_CASE("Redactor::redact_record") {
  Redactor redactor;
  redactor.add_secret("sk-SECRET-42");
  RequestRecord record;
  record.outcome.error = "HTTP 401: {\"error\":\"Incorrect API key sk-SECRET-42\"}";
  record.outcome.completion.text = "You sent: Bearer sk-SECRET-42.";
  for (const char* piece : {"You", " sent", ": Bearer sk-SE", "CRET", "-42", "."}) {
    TokenLogprob token;
    token.token = piece;
    token.top.push_back({piece, -0.1});
    record.outcome.completion.tokens.push_back(token);
  }
  redactor.redact_record(record);
  CHECK(record.outcome.error == "HTTP 401: {\"error\":\"Incorrect API key [redacted]\"}");
  CHECK(record.outcome.completion.text == "You sent: Bearer [redacted].");
  // The tokens still spell the redacted text; the secret, split across three, is in none.
  std::string spelled;
  for (const auto& token : record.outcome.completion.tokens) spelled += token.token;
  CHECK(spelled == "You sent: Bearer [redacted].");
  CHECK(record.outcome.completion.tokens[2].token == ": Bearer [redacted]");
  CHECK(record.outcome.completion.tokens[3].token.empty());
}

TEST_CASE("is_secret_parameter_name") {
  for (const char* name :
       {"key", "KEY", "api_key", "api-key", "apikey", "access_token", "token", "sig", "signature",
        "password", "secret", "auth", "client_secret", "x-goog-api-key", "Authorization"})
    CHECK_MESSAGE(is_secret_parameter_name(name), name);
  for (const char* name : {"api-version", "model", "alt", "n", "user"})
    CHECK_MESSAGE(!is_secret_parameter_name(name), name);
}

TEST_CASE("Redactor::add_command") {
  Redactor redactor;
  redactor.add_command(
      "HF_TOKEN='hf-abc123' API_KEY=sk-live-999 ./restart.sh --auth-token t0ps3cret "
      "--port 8000 https://admin:pw-4567@host/x?token=q-7788 MODE=fast");
  // The whole line, for an echo of it.
  CHECK(redactor.redact("ran HF_TOKEN='hf-abc123' API_KEY=sk-live-999 ./restart.sh --auth-token "
                        "t0ps3cret --port 8000 https://admin:pw-4567@host/x?token=q-7788 "
                        "MODE=fast") == "ran [redacted]");
  // Each secret on its own: assignments and options whose names say so, and a URL's secrets.
  CHECK(redactor.redact("token hf-abc123, key sk-live-999, option t0ps3cret") ==
        "token [redacted], key [redacted], option [redacted]");
  CHECK(redactor.redact("login admin:pw-4567 query q-7788") == "login [redacted] query [redacted]");
  // Words whose names say nothing secret stay.
  CHECK(redactor.redact("MODE=fast --port 8000 ./restart.sh") ==
        "MODE=fast --port 8000 ./restart.sh");
}
