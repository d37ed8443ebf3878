#include "probes/detail/unreachable_rule.hpp"

#include <algorithm>

namespace llmrepro::probes::detail {

void UnreachableRule::begin_wave(std::size_t requests, std::size_t max_attempts) {
  m_watching = !m_watched_a_wave && requests > 0;
  m_watched_a_wave = m_watched_a_wave || m_watching;
  m_watch_limit = static_cast<int>(
      std::min<std::size_t>(static_cast<std::size_t>(k_watched_attempts), requests * max_attempts));
  m_watched = 0;
  m_unreachable = false;
  m_error.clear();
}

bool UnreachableRule::attempt_ended(bool connect_failed, const std::string& reason, bool spent) {
  // Anything but a connection or TLS failure proves that something answers there.
  if (!connect_failed) m_reached = true;
  if (!m_watching) return m_unreachable;
  ++m_watched;
  if (connect_failed && m_error.empty()) m_error = reason;
  if (m_reached) {
    m_watching = false;
  } else if (m_watched >= m_watch_limit || spent) {
    // Every attempt so far failed to connect: nothing is listening there.
    m_unreachable = true;
    m_watching = false;
  }
  return m_unreachable;
}

} // namespace llmrepro::probes::detail
