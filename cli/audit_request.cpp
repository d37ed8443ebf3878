// The audit flags made into the audit room's request (cli/audit_options.hpp): which values were
// given, the judging settings, the report paths, and where notices go.
#include <unistd.h>

#include "cli/audit_options.hpp"
#include "cli/commands.hpp"
#include "cli/judging_options.hpp"
#include "cli/report_outputs.hpp"

namespace llmrepro::cli {

audit::AuditRequest request_of(const AuditOptions& options) {
  audit::AuditRequest request = options.request;
  const auto& plan = options.plan_flags;
  request.given.plan = {.api = given(plan.api),
                        .model = given(plan.model),
                        .runs = given(plan.runs),
                        .concurrency = given(plan.concurrency),
                        .max_tokens = given(plan.max_tokens),
                        .top_logprobs = given(plan.top_logprobs),
                        .seed = given(plan.seed),
                        .probe = given(plan.probe),
                        .shard = given(plan.shard),
                        .stream = given(plan.stream),
                        .logprobs_form = given(plan.logprobs_form),
                        .temperature = given(plan.temperature),
                        .profile = given(plan.profile),
                        .max_concurrency = given(plan.max_concurrency),
                        .engine_max_num_seqs = given(plan.engine_max_num_seqs),
                        .engine_batch_invariant = given(plan.engine_batch_invariant),
                        .engine_prefix_cache = given(plan.engine_prefix_cache),
                        .engine_seed = given(plan.engine_seed)};
  request.given.suite = given(plan.suite);
  request.given.max_requests = given(options.budget_flags.max_requests);
  request.given.max_tokens_total = given(options.budget_flags.max_tokens_total);
  request.given.max_cost = given(options.budget_flags.max_cost);
  request.given.stop_after = given(options.budget_flags.stop_after);
  request.given.adaptive_epsilon = given(options.adaptive_flags.epsilon);
  request.given.adaptive_initial = given(options.adaptive_flags.initial);
  request.given.adaptive_assume = given(options.adaptive_flags.assume);
  request.given.serial_spacing = given(options.plan_flags.serial_spacing);
  request.judging = judging_of(options.judging);
  request.report_paths = named_outputs(options.outputs);
  request.progress = !request.quiet && isatty(STDERR_FILENO);
  request.notify = print_stderr;
  request.tool = tool_info();
  return request;
}

} // namespace llmrepro::cli
