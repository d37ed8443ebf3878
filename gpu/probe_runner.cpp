#include "gpu/probe_runner.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "gpu/detail/cpu_experiments.hpp"
#include "gpu/probe_json.hpp"

namespace llmrepro::gpu {

namespace {

struct HelperRun {
  int exit_code = -1;
  std::string output;
};

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out.push_back(c);
  }
  return out + "'";
}

// Runs the helper with `arguments`, capturing stdout; stderr (progress) goes to ours.
core::Result<HelperRun> run_helper(const std::string& helper, const std::string& arguments) {
  const std::string command = shell_quote(helper) + " " + arguments;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr)
    return core::make_error(core::ErrorCode::environment, "cannot start " + helper);
  HelperRun run;
  char buffer[65536];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, got);
  const int status = ::pclose(pipe);
  run.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  return run;
}

} // namespace

core::Result<Backend> parse_backend(const std::string& text) {
  if (text == "auto") return Backend::automatic;
  if (text == "cuda") return Backend::cuda;
  if (text == "cpu") return Backend::cpu;
  return core::make_error(core::ErrorCode::usage,
                          "unknown backend '" + text + "' (expected auto, cuda or cpu)");
}

std::string find_cuda_helper() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "";
  const auto helper = self.parent_path() / k_cuda_helper_name;
  if (::access(helper.c_str(), X_OK) != 0) return "";
  return helper.string();
}

core::Result<core::ProbeResult> run_probe(const ProbeOptions& options) {
  ExperimentConfig config;
  config.precision = options.precision;
  config.quick = options.quick;

  std::string reason;
  bool use_cuda = false;
  if (options.backend == Backend::cpu) {
    reason = "requested with --backend cpu";
  } else if (options.cuda_helper.empty()) {
    if (options.backend == Backend::cuda)
      return core::make_error(core::ErrorCode::environment,
                              "--backend cuda: this build has no CUDA backend (" +
                                  std::string(k_cuda_helper_name) +
                                  " not found beside the executable)");
    reason = "auto: this build has no CUDA backend, so the CPU emulation runs";
  } else {
    auto check = run_helper(options.cuda_helper, "--check-device");
    if (!check) return check.error();
    if (check->exit_code == 0) {
      use_cuda = true;
      std::string name = check->output;
      while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
      reason = (options.backend == Backend::cuda ? "requested with --backend cuda: "
                                                 : "auto: CUDA device visible: ") +
               name;
    } else if (options.backend == Backend::cuda) {
      return core::make_error(core::ErrorCode::environment,
                              check->exit_code == k_exit_no_device
                                  ? "--backend cuda: no CUDA device is visible"
                                  : "--backend cuda: the CUDA helper failed its device check");
    } else {
      reason = check->exit_code == k_exit_no_device
                   ? "auto: CUDA backend built but no CUDA device is visible, so the CPU "
                     "emulation runs"
                   : "auto: the CUDA helper failed its device check, so the CPU emulation runs";
    }
  }

  if (!use_cuda) {
    core::ProbeResult result = run_cpu_backend(config);
    result.backend_reason = reason;
    return result;
  }
  std::string arguments = std::string("--dtype ") + numerics::to_string(options.precision);
  if (options.quick) arguments += " --quick";
  auto run = run_helper(options.cuda_helper, arguments);
  if (!run) return run.error();
  if (run->exit_code != 0)
    return core::make_error(core::ErrorCode::internal,
                            "the CUDA helper exited with status " + std::to_string(run->exit_code));
  auto result = probe_result_from_json(run->output);
  if (!result)
    return core::make_error(core::ErrorCode::internal,
                            "the CUDA helper's report is unreadable: " + result.error().message);
  result->backend_reason = reason;
  return result;
}

} // namespace llmrepro::gpu
