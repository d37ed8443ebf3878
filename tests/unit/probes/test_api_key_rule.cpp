#include <doctest/doctest.h>

#include <map>
#include <string>

#include "probes/api_key_rule.hpp"

using llmrepro::probes::choose_api_key;
using llmrepro::probes::conventional_keys;
using llmrepro::probes::EnvLookup;
using llmrepro::probes::is_loopback_host;
using llmrepro::probes::key_in_clear_text;
using llmrepro::probes::url_host;

namespace {

EnvLookup environment(const std::map<std::string, std::string>& values) {
  return [values](const char* name) -> const char* {
    const auto found = values.find(name);
    return found == values.end() ? nullptr : found->second.c_str();
  };
}

std::string key_for(const std::string& url, const std::string& named, const EnvLookup& env) {
  auto key = choose_api_key(url, named, "--api-key-env", env);
  REQUIRE(key.has_value());
  return *key;
}

} // namespace

TEST_CASE("url_host") {
  CHECK(url_host("https://api.openai.com/v1") == "api.openai.com");
  CHECK(url_host("HTTPS://API.OpenAI.com:443/v1?x=1") == "api.openai.com");
  CHECK(url_host("https://user:pw@api.openai.com./v1") == "api.openai.com");
  CHECK(url_host("http://[::1]:8000/v1") == "::1");
  CHECK(url_host("http://127.0.0.1:8000") == "127.0.0.1");
  CHECK(url_host("no scheme").empty());
}

TEST_CASE("is_loopback_host and key_in_clear_text") {
  for (const char* host : {"localhost", "127.0.0.1", "127.1.2.3", "::1", "app.localhost"})
    CHECK_MESSAGE(is_loopback_host(host), host);
  for (const char* host : {"127.example.com", "10.0.0.1", "api.openai.com", "localhost.evil.com",
                           "127.0.0", "128.0.0.1"})
    CHECK_MESSAGE(!is_loopback_host(host), host);
  CHECK(key_in_clear_text("http://gpu-box:8000/v1"));
  CHECK(key_in_clear_text("HTTP://10.0.0.7"));
  CHECK(key_in_clear_text("http://api.openai.com/v1"));
  CHECK_FALSE(key_in_clear_text("http://127.0.0.1:8000"));
  CHECK_FALSE(key_in_clear_text("http://localhost:8000"));
  CHECK_FALSE(key_in_clear_text("http://[::1]:8000"));
  CHECK_FALSE(key_in_clear_text("https://gpu-box:8000"));
}

TEST_CASE("choose_api_key") {
  const EnvLookup env = environment({{"OPENAI_API_KEY", "sk-openai"},
                                     {"GEMINI_API_KEY", "gm-gemini"},
                                     {"GOOGLE_API_KEY", "gg-google"},
                                     {"ANTHROPIC_API_KEY", "sk-ant-anthropic"},
                                     {"MY_KEY", "sk-mine"},
                                     {"EMPTY", ""}});

  SUBCASE("a conventional variable goes to its provider's own https host only") {
    CHECK(key_for("https://api.openai.com/v1", "", env) == "sk-openai");
    CHECK(key_for("https://API.OPENAI.COM:443/v1", "", env) == "sk-openai");
    CHECK(key_for("https://generativelanguage.googleapis.com/v1beta", "", env) == "gm-gemini");
    CHECK(key_for("https://api.anthropic.com", "", env) == "sk-ant-anthropic");
    for (const char* url :
         {"http://api.anthropic.com", "https://anthropic.com/v1",
          "https://api.anthropic.com.evil.example", "http://127.0.0.1:8000",
          "http://localhost:8000/v1", "https://127.0.0.1:8443", "http://api.openai.com/v1",
          "https://api.openai.com.evil.example/v1", "https://evil.example/api.openai.com",
          "https://openai.com/v1", "https://my-proxy.example/v1"})
      CHECK_MESSAGE(key_for(url, "", env).empty(), url);
  }
  SUBCASE("GEMINI_API_KEY before GOOGLE_API_KEY, which stands in when it is unset") {
    const EnvLookup google = environment({{"GOOGLE_API_KEY", "gg-google"}, {"GEMINI_API_KEY", ""}});
    CHECK(key_for("https://generativelanguage.googleapis.com", "", google) == "gg-google");
  }
  SUBCASE("a named variable goes to any host") {
    CHECK(key_for("http://127.0.0.1:8000", "MY_KEY", env) == "sk-mine");
    CHECK(key_for("https://api.openai.com/v1", "MY_KEY", env) == "sk-mine");
    CHECK(key_for("http://127.0.0.1:8000", "OPENAI_API_KEY", env) == "sk-openai");
  }
  SUBCASE("a named variable that is unset or empty is a usage error naming the flag") {
    auto unset = choose_api_key("http://127.0.0.1:1", "NOPE", "--compare-api-key-env", env);
    REQUIRE_FALSE(unset.has_value());
    CHECK(unset.error().code == llmrepro::core::ErrorCode::usage);
    CHECK(unset.error().message.find("--compare-api-key-env NOPE: the environment variable is "
                                     "not set") == 0);
    auto empty = choose_api_key("https://api.openai.com", "EMPTY", "--api-key-env", env);
    REQUIRE_FALSE(empty.has_value());
    CHECK(empty.error().message.find("--api-key-env EMPTY: the environment variable is empty") ==
          0);
  }
  SUBCASE("every row names a variable and a host") {
    for (const auto& row : conventional_keys()) {
      CHECK(row.variable.size() > 8);
      CHECK(row.variable.substr(row.variable.size() - 8) == "_API_KEY");
      CHECK(url_host(std::string("https://") + std::string(row.host)) == row.host);
    }
  }
}
