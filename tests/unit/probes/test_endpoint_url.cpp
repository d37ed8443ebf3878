#include <doctest/doctest.h>

#include "probes/endpoint_url.hpp"

using llmrepro::probes::join_url;
using llmrepro::probes::strip_credentials;
using llmrepro::probes::validate_base_url;

TEST_CASE("strip_credentials") {
  SUBCASE("user and password") {
    CHECK(strip_credentials("https://alice:s3cret@api.example.com/v1") ==
          "https://api.example.com/v1");
    CHECK(strip_credentials("http://token@10.0.0.1:8000") == "http://10.0.0.1:8000");
  }
  SUBCASE("secret query parameters, case-insensitive, others kept in order") {
    CHECK(strip_credentials("https://h/v1?api-version=2024-06-01&api_key=abc&b=2") ==
          "https://h/v1?api-version=2024-06-01&b=2");
    CHECK(strip_credentials("https://h/x?KEY=1&Token=2&access_token=3&sig=4&api-key=5") ==
          "https://h/x");
    CHECK(strip_credentials("https://h/x?x-goog-api-key=1&client_secret=2&authorization=3&n=1") ==
          "https://h/x?n=1");
  }
  SUBCASE("nothing to strip") {
    CHECK(strip_credentials("http://127.0.0.1:8080") == "http://127.0.0.1:8080");
    CHECK(strip_credentials("not a url") == "not a url");
  }
  SUBCASE("an @ in the path is not user info") {
    CHECK(strip_credentials("https://h/models/@latest") == "https://h/models/@latest");
  }
}

TEST_CASE("validate_base_url") {
  SUBCASE("accepts http and https, trims trailing slashes") {
    auto plain = validate_base_url("http://127.0.0.1:8000/");
    REQUIRE(plain.has_value());
    CHECK(*plain == "http://127.0.0.1:8000");
    auto with_path = validate_base_url("HTTPS://api.example.com/v1//?api-version=1");
    REQUIRE(with_path.has_value());
    CHECK(*with_path == "HTTPS://api.example.com/v1?api-version=1");
  }
  SUBCASE("rejects other schemes and malformed URLs with the reason") {
    auto ftp = validate_base_url("ftp://h");
    REQUIRE_FALSE(ftp.has_value());
    CHECK(ftp.error().code == llmrepro::core::ErrorCode::usage);
    CHECK(ftp.error().message ==
          "endpoint 'ftp://h': only http:// and https:// URLs are supported");
    CHECK(validate_base_url("localhost:8000").error().message.find("only http://") !=
          std::string::npos);
    CHECK(validate_base_url("http://").error().message.find("no host") != std::string::npos);
    CHECK(validate_base_url("http:///v1").error().message.find("no host") != std::string::npos);
    CHECK(validate_base_url("http://h /v1").error().message.find("whitespace") !=
          std::string::npos);
    CHECK(validate_base_url("http://h/#x").error().message.find("fragment") != std::string::npos);
    CHECK(validate_base_url("").has_value() == false);
  }
  SUBCASE("the error never quotes a credential") {
    auto bad = validate_base_url("ftp://u:hunter2@h/?token=hunter2");
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().message.find("hunter2") == std::string::npos);
  }
}

TEST_CASE("join_url") {
  CHECK(join_url("http://h:1", "/v1/models") == "http://h:1/v1/models");
  CHECK(join_url("http://h:1/", "/health") == "http://h:1/health");
  SUBCASE("a base ending in /v1 is not doubled") {
    CHECK(join_url("https://api.openai.com/v1", "/v1/chat/completions") ==
          "https://api.openai.com/v1/chat/completions");
    CHECK(join_url("https://h/v1", "/health") == "https://h/v1/health");
    CHECK(join_url("https://h/v10", "/v1/models") == "https://h/v10/v1/models");
  }
  SUBCASE("a base whose path goes beyond /v1 is the base whatever its path") {
    CHECK(join_url("https://api.deepinfra.com/v1/openai", "/v1/chat/completions") ==
          "https://api.deepinfra.com/v1/openai/chat/completions");
    CHECK(join_url("https://generativelanguage.googleapis.com/v1beta/openai/", "/v1/models") ==
          "https://generativelanguage.googleapis.com/v1beta/openai/models");
    CHECK(join_url("https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p/locations/"
                   "us-central1/endpoints/openapi",
                   "/v1/chat/completions") ==
          "https://us-central1-aiplatform.googleapis.com/v1beta1/projects/p/locations/"
          "us-central1/endpoints/openapi/chat/completions");
    CHECK(join_url("https://api.groq.com/openai/v1", "/v1/models") ==
          "https://api.groq.com/openai/v1/models");
    CHECK(join_url("https://h/v1/openai?key=k", "/v1/completions") ==
          "https://h/v1/openai/completions?key=k");
    // Native routes are not OpenAI paths: they are appended as they are.
    CHECK(join_url("https://h/v1/openai", "/health") == "https://h/v1/openai/health");
    // A reverse proxy's prefix that names no API version keeps the "/v1" of the path.
    CHECK(join_url("http://h/llama", "/v1/chat/completions") ==
          "http://h/llama/v1/chat/completions");
    CHECK(join_url("http://h/v2/x", "/v1/models") == "http://h/v2/x/v1/models");
    CHECK(join_url("http://h/v1x", "/v1/models") == "http://h/v1x/v1/models");
  }
  SUBCASE("the path goes before the query") {
    CHECK(join_url("https://h/openai?api-version=2", "/v1/models") ==
          "https://h/openai/v1/models?api-version=2");
  }
  SUBCASE("Gemini paths: /v1beta only where the base names no version, their query first") {
    const std::string path = "/v1beta/models/gemini-2.5-flash:generateContent";
    CHECK(
        join_url("https://generativelanguage.googleapis.com", path) ==
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent");
    CHECK(
        join_url("https://generativelanguage.googleapis.com/v1beta", path) ==
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent");
    CHECK(join_url("https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/"
                   "us-central1/publishers/google",
                   path) ==
          "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/"
          "us-central1/publishers/google/models/gemini-2.5-flash:generateContent");
    CHECK(join_url("http://h:1", "/v1beta/models/m:streamGenerateContent?alt=sse") ==
          "http://h:1/v1beta/models/m:streamGenerateContent?alt=sse");
    CHECK(join_url("http://h:1/v1beta?x=1", "/v1beta/models/m:streamGenerateContent?alt=sse") ==
          "http://h:1/v1beta/models/m:streamGenerateContent?alt=sse&x=1");
    // Only the OpenAI paths drop a version where the base's path is a proxy prefix.
    CHECK(join_url("http://h/v1beta", "/v1beta") == "http://h/v1beta/v1beta");
  }
}
