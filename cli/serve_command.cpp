// `llmrepro serve`: runs the reference engine until SIGINT or SIGTERM.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <pthread.h>

#include "cli/commands.hpp"
#include "engine/engine_server.hpp"

namespace llmrepro::cli {

void register_serve_command(CLI::App& app, CommandResult& result) {
  auto config = std::make_shared<engine::ServeConfig>();
  CLI::App* command = app.add_subcommand(
      "serve", "run the reference engine: a small transformer behind an OpenAI-compatible API");
  command->add_option("--host", config->host, "address to listen on")->capture_default_str();
  command->add_option("--port", config->port, "port to listen on (0: any free port)")
      ->capture_default_str();
  command
      ->add_option("--max-num-seqs", config->max_num_seqs,
                   "most sequences in one forward step (continuous batching)")
      ->capture_default_str();
  command->add_flag("--batch-invariant", config->batch_invariant,
                    "fix every reduction order, whatever the batch shape");
  command->add_flag("--prefix-cache", config->prefix_cache,
                    "reuse the keys and values of shared prompt prefixes");
  command
      ->add_option("--chunked-prefill", config->chunked_prefill,
                   "run prompts in chunks of N tokens beside other work (0: off)")
      ->capture_default_str();
  command->add_option("--seed", config->seed, "seed of the model's weights")->capture_default_str();
  command
      ->add_option("--threads", config->threads,
                   "threads per forward step (never changes a result)")
      ->capture_default_str();
  command
      ->add_option("--max-queue", config->max_queue,
                   "most requests queued or running (and connections waiting); beyond it a "
                   "request is answered 503 with Retry-After")
      ->capture_default_str();
  command
      ->add_option("--max-body-bytes", config->max_body_bytes,
                   "largest request body read; a larger one is answered 413 before it is parsed")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 34));
  command->callback([config, &result] {
    // Block the stop signals before any thread starts, so that every thread inherits the mask
    // and this one receives them through sigwait.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    auto server = engine::EngineServer::start(*config);
    if (!server) {
      result.exit_code = report_error(server.error());
      return;
    }
    std::printf("llmrepro serve: listening on %s (model %s, fingerprint %s)\n",
                (*server)->base_url().c_str(), (*server)->model_name().c_str(),
                (*server)->fingerprint().c_str());
    std::fflush(stdout);
    int received = 0;
    sigwait(&signals, &received);
    std::fprintf(stderr, "llmrepro serve: stopping (%s)\n",
                 received == SIGINT ? "SIGINT" : "SIGTERM");
    (*server)->stop();
    result.exit_code = k_exit_pass;
  });
}

} // namespace llmrepro::cli
