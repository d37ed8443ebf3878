// `llmrepro gpu-probe`: runs the reduction-order micro-probe (gpu/) on the CUDA helper or the CPU
// emulation, then writes the JSON and HTML reports. Wiring only; the experiments live in gpu/.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.hpp"
#include "cli/report_outputs.hpp"
#include "store/output_file.hpp"
#include "gpu/probe_json.hpp"
#include "gpu/probe_runner.hpp"
#include "gpu/probe_summary.hpp"
#include "report/probe_html_report.hpp"

namespace llmrepro::cli {

namespace {

struct GpuProbeOptions {
  std::string backend = "auto";
  std::string dtype = "bf16";
  bool quick = false;
  std::string json;
  std::string html;
  std::string from; // a saved JSON result to render instead of running the probe
};

// A result written by `gpu-probe --json` (or the probe-only build's driver on a GPU machine).
core::Result<core::ProbeResult> read_saved_result(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return core::make_error(core::ErrorCode::input, "cannot read probe result '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  auto result = gpu::probe_result_from_json(text.str());
  if (!result)
    return core::make_error(core::ErrorCode::input,
                            "probe result '" + path + "': " + result.error().message);
  return result;
}

int write_probe_outputs(const GpuProbeOptions& options, const core::ProbeResult& result) {
  if (!options.json.empty())
    if (auto written = write_file_atomically(options.json, gpu::probe_result_to_json(result));
        !written)
      return report_error(written.error());
  if (!options.html.empty())
    if (auto written = write_file_atomically(options.html, report::render_probe_html(result));
        !written)
      return report_error(written.error());
  std::fputs(gpu::probe_summary_text(result).c_str(), stdout);
  // Every other figure rests on the self-test: a failed one fails the command.
  return gpu::self_test_passed(result) ? k_exit_pass : k_exit_gate_failed;
}

int run_gpu_probe(const GpuProbeOptions& options) {
  // Before the probe runs (minutes on a GPU): no output may be the saved result or the other.
  if (auto checked = store::check_output_paths({{"--json", options.json}, {"--html", options.html}},
                                               {{"--from", options.from}});
      !checked)
    return report_error(checked.error());
  if (!options.from.empty()) {
    auto saved = read_saved_result(options.from);
    if (!saved) return report_error(saved.error());
    return write_probe_outputs(options, *saved);
  }
  auto backend = gpu::parse_backend(options.backend);
  if (!backend) return report_error(backend.error());
  auto precision = numerics::parse_precision(options.dtype);
  if (!precision) return report_error(precision.error());
  gpu::ProbeOptions probe;
  probe.backend = *backend;
  probe.precision = *precision;
  probe.quick = options.quick;
  probe.cuda_helper = gpu::find_cuda_helper();
  auto result = gpu::run_probe(probe);
  if (!result) return report_error(result.error());
  return write_probe_outputs(options, *result);
}

} // namespace

void register_gpu_probe_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<GpuProbeOptions>();
  CLI::App* command = app.add_subcommand(
      "gpu-probe", "Measure reduction-order drift on the local GPU (CUDA) or its CPU emulation");
  command
      ->add_option("--backend", options->backend,
                   "auto (CUDA when built and a device is visible, else CPU), cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  command->add_option("--dtype", options->dtype, "Input and output dtype: bf16, fp16 or fp32")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}))
      ->capture_default_str();
  command->add_flag("--quick", options->quick, "Smaller sweeps (seconds on CPU, < 5 min on GPU)");
  command->add_option("--json", options->json, "Write the JSON report (llmrepro.gpu-probe.v1)");
  command->add_option("--html", options->html, "Write the HTML report");
  command->add_option("--from", options->from,
                      "Render a saved JSON result (say, from a GPU machine) instead of probing");
  command->callback([options, &result] { result.exit_code = run_gpu_probe(*options); });
}

} // namespace llmrepro::cli
