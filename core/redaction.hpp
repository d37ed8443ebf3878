// The secrets of a run and the one place they are taken out of text. Every boundary where text
// is stored or printed (a request's error, a completion's text, a detection error, a stderr line,
// --dry-run's URLs, a report) passes it through redact(), so that a key, a --header value, a URL's
// password or a secret query parameter never reaches the database, a report or a log, also when
// a server echoes it back. docs/design.md "Secrets" says where each boundary calls it.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/request_record.hpp"

namespace llmrepro::core {

// What a secret is replaced by.
inline constexpr std::string_view k_redacted = "[redacted]";

// Values shorter than this are not taken as secrets: a one- or two-character header value
// ("X-Debug: 1") would otherwise turn every digit of every report into "[redacted]".
inline constexpr std::size_t k_min_secret_size = 4;

// Whether a URL query parameter named `name` carries a secret: the names key, token, api_key,
// api-key, apikey, access_token, sig, signature, password, secret, auth, and any name containing
// "key", "token", "secret", "password", "signature" or "auth", compared case-insensitively.
bool is_secret_parameter_name(std::string_view name);

// A set of secret values and the forms a server echo gives them. Adding is not meant to race
// with redacting, but both are guarded, so a late secret (an --embeddings key) is safe to add
// while requests finish.
class Redactor {
public:
  // A secret value, its JSON-escaped and percent-encoded forms (both hex cases) with it.
  // Values shorter than k_min_secret_size are ignored.
  void add_secret(std::string_view value);
  // A header line "Name: value": the value, and for an Authorization-style value
  // "<scheme> <credentials>" the credentials alone too.
  void add_header(std::string_view line);
  // A URL's secrets: the user:password of its authority (both together and the password alone)
  // and the value of each query parameter is_secret_parameter_name names.
  void add_url(std::string_view url);
  // A shell command line (--restart-cmd): the whole line; of each word (split at blanks, quotes
  // around a value dropped) NAME=value whose NAME is_secret_parameter_name names, or that follows
  // such a --NAME option, the value; and the secrets of each word that is a URL (add_url).
  void add_command(std::string_view command);

  // `text` with every occurrence of every known form replaced by k_redacted. Occurrences that
  // overlap or touch become one k_redacted. Text that holds no secret comes back unchanged.
  std::string redact(std::string_view text) const;
  // The same for the texts of a request record: its error, and its completion's text, reasoning,
  // tokens, candidates and finish reason (a server may echo a header into model text).
  void redact_record(RequestRecord& record) const;

  // Forgets every secret (tests).
  void clear();

private:
  void add_form(std::string form);

  mutable std::mutex m_mutex;
  std::vector<std::string> m_forms; // longest first
};

// The record boundary: every record passes through redact_record on its way to `next` (the
// database), so that neither requests.error nor a completion a server echoed a key into stores it.
class RedactingSink : public RecordSink {
public:
  RedactingSink(RecordSink& next, const Redactor& redactor) : m_next(next), m_redactor(redactor) {}
  Result<void> record(RequestRecord record) override {
    m_redactor.redact_record(record);
    return m_next.record(std::move(record));
  }

private:
  RecordSink& m_next;
  const Redactor& m_redactor;
};

// The run's secrets: what the CLI registers once it knows the keys, headers and URLs, and what
// every boundary redacts with.
Redactor& run_secrets();

// run_secrets().redact(text).
std::string redact(std::string_view text);

} // namespace llmrepro::core
