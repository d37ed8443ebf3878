// Private to probes: how the scheduler decides that nothing is listening at an endpoint, so that
// a wrong URL ends the run after a few attempts instead of failing every planned request.
#pragma once

#include <cstddef>
#include <string>

namespace llmrepro::probes::detail {

// The unreachable rule of run_plan's contract. The first wave that has work is watched until
// either min(8, A) of its attempts have completed (A: the most attempts that wave may make) or
// one of its requests has spent all its attempts. If every attempt until then failed to connect,
// the endpoint is unreachable. One attempt that reached anything, even an error status, turns the
// rule off for the rest of the run.
class UnreachableRule {
public:
  // How many early attempts decide that nothing is listening.
  static constexpr int k_watched_attempts = 8;

  // A wave begins with `requests` requests to run, each allowed `max_attempts` attempts. The
  // first wave begun with work is watched; later ones are not.
  void begin_wave(std::size_t requests, std::size_t max_attempts);

  // An attempt of the current wave ended. `connect_failed`: it failed to connect (connection
  // refused, host not found, TLS failure), with `reason`; `spent`: its request may make no
  // more attempts. Returns unreachable().
  bool attempt_ended(bool connect_failed, const std::string& reason, bool spent);

  // Whether the current wave has found the endpoint unreachable; from then on the run starts
  // nothing more.
  bool unreachable() const { return m_unreachable; }

  // The first connection failure seen while watching: why the endpoint is unreachable.
  const std::string& error() const { return m_error; }

private:
  bool m_reached = false; // an attempt of the run reached something
  bool m_watched_a_wave = false;
  bool m_watching = false;
  int m_watch_limit = 0;
  int m_watched = 0;
  bool m_unreachable = false;
  std::string m_error;
};

} // namespace llmrepro::probes::detail
