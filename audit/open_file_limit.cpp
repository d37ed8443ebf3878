#include "audit/open_file_limit.hpp"

#include <dirent.h>
#include <sys/resource.h>

#include <fmt/format.h>

#include <algorithm>

#include "audit/run.hpp"

namespace llmrepro::audit {

namespace {

constexpr long k_margin = 32;

// Descriptors this process holds now (its /proc/self/fd entries), or 3 where that cannot be
// read.
long open_descriptors() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 3;
  long count = 0;
  while (const dirent* entry = readdir(dir))
    if (entry->d_name[0] != '.') ++count;
  closedir(dir);
  return count > 0 ? count - 1 : 0; // less the directory's own descriptor
}

std::string limit_text(rlim_t value) {
  return value == RLIM_INFINITY ? std::string("unlimited") : std::to_string(value);
}

} // namespace

long open_files_needed(long in_flight, long per_request, long open_now) {
  return open_now + in_flight * per_request + k_margin;
}

core::Result<void> ensure_open_file_limit(long in_flight, long per_request,
                                          const std::string& flag_text) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  const long needed = open_files_needed(in_flight, per_request, open_descriptors());
  const auto wanted = static_cast<rlim_t>(needed);
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted) return {};
  if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= wanted) {
    rlimit raised = limit;
    raised.rlim_cur = wanted;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return {};
  }
  return core::make_error(
      core::ErrorCode::usage,
      fmt::format("the local open-file limit is too low for {}: it needs {} descriptors ({} "
                  "requests in flight, {} each, and {} for the rest), but `ulimit -n` allows "
                  "{} (hard limit {}); raise it (`ulimit -n {}`, as root or within the hard "
                  "limit) or lower the concurrency",
                  flag_text, needed, in_flight, per_request, needed - in_flight * per_request,
                  limit_text(limit.rlim_cur), limit_text(limit.rlim_max), needed));
}

} // namespace llmrepro::audit

namespace llmrepro::audit {

core::Result<void> check_open_file_limit(const AuditRun& run) {
  const core::AuditConfig& config = run.config();
  if (config.plan.levels.empty()) return {};
  const long level = *std::max_element(config.plan.levels.begin(), config.plan.levels.end());
  const bool mixed =
      std::any_of(config.plan.probes.begin(), config.plan.probes.end(),
                  [](core::ProbeKind kind) { return core::probe_uses_fillers(kind); });
  const bool embedded = std::find(run.urls.begin(), run.urls.end(), "") != run.urls.end();
  return ensure_open_file_limit(mixed ? 2 * level : level, embedded ? 3 : 2,
                                "--concurrency " + std::to_string(level));
}

} // namespace llmrepro::audit
