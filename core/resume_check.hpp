// The --resume rule: an audit resumes with the plan it was started with, so every plan-defining
// value the command line gives must say what the stored audit says. These functions name each
// value that differs; the caller turns the list into one usage error before any request.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/audit.hpp"
#include "core/suite.hpp"

namespace llmrepro::core {

// The first field in which two prompts differ, named as a suite line names it ("id", "prompt",
// "prompt or messages", "messages", "max_tokens", "tags", "expect", "extract",
// "response_format"); empty when they are the same. The line a prompt came from does not count.
std::string prompt_difference(const Prompt& a, const Prompt& b);

// How the `given` suite differs from the `stored` one, in words ("3 prompts (stored) vs 2
// (given)", "prompt 2 'x' differs in its prompt"); empty when their prompts are the same.
std::string suite_difference(const Suite& stored, const Suite& given);

// Which plan-defining flags the command line gave; a flag not given says nothing of the plan.
struct PlanFlagsGiven {
  bool api = false;
  bool model = false;
  bool runs = false;
  bool concurrency = false;
  bool max_tokens = false;
  bool top_logprobs = false;
  bool seed = false;
  bool probe = false;
  bool shard = false;
  bool stream = false;
  bool logprobs_form = false;
  bool temperature = false;
  bool profile = false;
  bool max_concurrency = false; // compared as the levels it implies
  // The embedded engine's flags; compared only where the stored audit holds its settings.
  bool engine_max_num_seqs = false;
  bool engine_batch_invariant = false;
  bool engine_prefix_cache = false;
  bool engine_seed = false;
};

// What `audit --resume` was told of the plan.
struct ResumeRequest {
  // The values the flags give (a flag's default where it was not given); `engine` the --engine-*
  // values and `header_names` the --header names given (none: an empty list).
  AuditConfig config;
  PlanFlagsGiven given; // which of config's plan-defining values the command line gave
  // The suite --suite names, loaded, and the path as given; nullopt when --suite was not given.
  std::optional<Suite> suite;
  std::string suite_path;
  // The endpoints given: the --endpoint URLs ("" alone when none, for the embedded reference
  // engine), then the --compare URLs. Compared only when endpoints_given.
  std::vector<std::string> urls;
  std::size_t endpoint_flag_count = 1; // how many of `urls` stand for --endpoint (at least 1)
  bool endpoints_given = false;        // whether --endpoint or --compare was given
};

// How URLs read, which is the endpoint module's knowledge, not core's: `comparable` maps a base
// URL to the form in which two spellings of one endpoint are equal (no trailing slash, no
// credentials); `shown` to the form that may be printed (no credentials).
struct UrlForms {
  std::function<std::string(const std::string&)> comparable;
  std::function<std::string(const std::string&)> shown;
};

// One plan-defining value the command line gives otherwise than the stored audit.
struct PlanDifference {
  std::string flag;   // "--runs", "--suite", "--endpoint", "--compare", "--endpoint/--compare"
  std::string stored; // the stored value, as the flag would spell it
  std::string given;  // the given value, likewise
  std::string detail; // --suite only: how the prompts differ
};

// "--runs 5 (stored) vs 3 (given)"; with a detail, the values are quoted and the detail follows:
// "--suite 'a.jsonl' (stored) vs 'b.jsonl' (given): prompt 2 'x' differs in its prompt".
std::string to_string(const PlanDifference& difference);

// The plan `wanted` asks for: the `stored` plan with each value the command line gave in its
// place (the --header names too, given or not, where the stored plan holds them).
PlanSettings resume_plan_wanted(const PlanSettings& stored, const ResumeRequest& wanted);

// Every plan-defining value in `wanted` that differs from the audit `stored` was planned with
// (the stored plan compared with resume_plan_wanted by `==`, each field then named), in the
// order of the flags: --suite, the endpoints, --api, --model, --runs, --concurrency,
// --max-tokens, --top-logprobs, --seed, --probe, --shard, --stream, --profile, then the embedded
// engine's flags given (where the audit stored its settings) and the --header names (where it
// stored them: compared whether given or not, as a set, case-insensitively, since every request
// carries them). Empty when they agree.
std::vector<PlanDifference>
resume_plan_differences(const AuditData& stored, const ResumeRequest& wanted, const UrlForms& urls);

} // namespace llmrepro::core
