// Recorded repeated responses read into an audit (`llmrepro import`): one line of a replay file
// is one logical request. docs/design.md "Recorded replays" and docs/import.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "core/audit.hpp"
#include "core/request_record.hpp"
#include "core/result.hpp"

namespace llmrepro::core {

// The formats `import` reads: our own JSONL (schemas/llmrepro.replay.v1.schema.json) and the raw
// files of the public chain-determinism-bench v1 (`raw_chains_v72/*.jsonl`).
enum class ReplayFormat { jsonl, chain_determinism };
const char* to_string(ReplayFormat format);
// "jsonl" or "chain-determinism", else a usage error naming --format.
Result<ReplayFormat> parse_replay_format(const std::string& text);

// One line read: the request it records, under the prompt it names.
struct ReplayRow {
  std::string model;       // empty where the line names none (jsonl's `model` is optional)
  std::string prompt_id;   // jsonl `prompt_id`; chain-determinism `query_id`
  std::string prompt_text; // jsonl `prompt` where given, else the id
  int level = 1;           // the concurrency the response was recorded at
  int repeat = 0;          // jsonl `repeat`; chain-determinism `run_idx`
  // ok = false with the line's error as the outcome's error: a failure, never an agreement.
  RequestOutcome outcome;
};

// Parses one line of `format`. A malformed line, or a field missing or of the wrong type, is an
// input error naming the field (the caller adds the file and line).
Result<ReplayRow> parse_replay_line(ReplayFormat format, std::string_view line);

// Builds one audit from the rows of one model: each prompt id a prompt (in the order first
// seen), each (level, repeat) a planned request of the sweep probe on one endpoint.
class ReplayImport {
public:
  // `source`: what the endpoint's url names ("import:FILE"); `format` its dialect.
  ReplayImport(std::string source, ReplayFormat format);

  // Adds a row read at `where` ("FILE:LINE"). An input error, naming both places, when its model
  // differs from an earlier row's (one database holds one model's audit) or when an earlier row
  // recorded the same prompt, level and repeat (nothing recorded is dropped silently).
  Result<void> add(ReplayRow row, const std::string& where);

  // The audit: runs = the largest repeat + 1, levels = the levels seen, status complete when
  // every (prompt, level, repeat) of that plan was recorded. An input error when no row was
  // added.
  Result<AuditData> finish(std::int64_t now_ms) &&;

private:
  ReplayFormat m_format;
  AuditData m_data;
  std::string m_model_where; // where the model was first named
  std::map<std::string, int> m_prompt_index;
  std::map<std::tuple<int, int, int>, std::string> m_seen; // (prompt, level, repeat) -> where
};

// Reads every line of the file at `path` into `import` (blank lines skipped). An input error
// naming "PATH:LINE" for a line that does not parse or cannot be added, and naming the file when
// it cannot be opened or is gzip-compressed (the raw files of chain-determinism-bench ship as
// .jsonl.gz: decompress them first, `gunzip -k`).
Result<void> add_replay_file(const std::string& path, ReplayFormat format, ReplayImport& import);

} // namespace llmrepro::core
