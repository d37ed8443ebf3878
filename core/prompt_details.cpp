// Prompt details in a temporary file. An entry is one prompt's detail, written whole by keep()
// and read whole by restore(): integers as LEB128 varints (signed ones zigzagged), doubles as
// their 8 bytes (so every value, NaN and -0.0 included, comes back bit for bit), strings as a
// length and their bytes.
#include "core/prompt_details.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace llmrepro::core {

namespace {

class EntryWriter {
public:
  explicit EntryWriter(std::string& out) : m_out(out) {}
  void count(std::uint64_t value) {
    do {
      const auto low = static_cast<unsigned char>(value & 0x7f);
      value >>= 7;
      m_out.push_back(static_cast<char>(value != 0 ? low | 0x80 : low));
    } while (value != 0);
  }
  void integer(std::int64_t value) {
    count((static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63));
  }
  void number(double value) {
    char bytes[sizeof value];
    std::memcpy(bytes, &value, sizeof value);
    m_out.append(bytes, sizeof value);
  }
  void text(std::string_view value) {
    count(value.size());
    m_out += value;
  }
  void flag(bool value) { m_out.push_back(value ? '\1' : '\0'); }
  void counts(const std::map<std::string, int>& values) {
    count(values.size());
    for (const auto& [key, value] : values) {
      text(key);
      integer(value);
    }
  }

private:
  std::string& m_out;
};

// Reads an entry back; the first read past its end (or a value out of range) sets `broken`, and
// every later read gives zero.
class EntryReader {
public:
  explicit EntryReader(std::string_view in) : m_in(in) {}
  bool broken() const { return m_broken; }
  bool done() const { return m_at == m_in.size(); }
  std::uint64_t count() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (m_at >= m_in.size()) return fail();
      const auto byte = static_cast<unsigned char>(m_in[m_at++]);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return fail();
  }
  // A length of something whose items take at least `each` bytes.
  std::size_t size(std::size_t each = 1) {
    const std::uint64_t value = count();
    if (value > (m_in.size() - m_at) / each) return static_cast<std::size_t>(fail());
    return static_cast<std::size_t>(value);
  }
  std::int64_t integer() {
    const std::uint64_t value = count();
    return static_cast<std::int64_t>(value >> 1) ^ -static_cast<std::int64_t>(value & 1);
  }
  int small() { return static_cast<int>(integer()); }
  double number() {
    double value = 0.0;
    if (m_in.size() - m_at < sizeof value) return static_cast<double>(fail());
    std::memcpy(&value, m_in.data() + m_at, sizeof value);
    m_at += sizeof value;
    return value;
  }
  std::string text() {
    const std::size_t length = size();
    std::string value(m_in.substr(m_at, length));
    m_at += length;
    return value;
  }
  bool flag() {
    if (m_at >= m_in.size()) return fail() != 0;
    return m_in[m_at++] != '\0';
  }
  std::map<std::string, int> counts() {
    std::map<std::string, int> values;
    for (std::size_t i = size(); i > 0 && !m_broken; --i) {
      std::string key = text();
      values.emplace_hint(values.end(), std::move(key), small());
    }
    return values;
  }

private:
  std::uint64_t fail() {
    m_broken = true;
    m_at = m_in.size();
    return 0;
  }
  std::string_view m_in;
  std::size_t m_at = 0;
  bool m_broken = false;
};

void write_completion(EntryWriter& out, const DistinctCompletion& completion) {
  out.text(completion.text);
  out.count(completion.tokens.size());
  for (const TokenLogprob& token : completion.tokens) {
    out.text(token.token);
    out.number(token.logprob);
    out.count(token.top.size());
    for (const TokenCandidate& candidate : token.top) {
      out.text(candidate.token);
      out.number(candidate.logprob);
    }
  }
  out.integer(completion.count);
  out.count(completion.count_by_concurrency.size());
  for (const auto& [level, count] : completion.count_by_concurrency) {
    out.integer(level);
    out.integer(count);
  }
  out.flag(completion.is_reference);
  out.flag(completion.divergence.has_value());
  if (completion.divergence) out.integer(*completion.divergence);
  out.count(!completion.divergence_kind                            ? 0
            : *completion.divergence_kind == DivergenceKind::token ? 1
                                                                   : 2);
  out.counts(completion.finish_reasons);
  out.counts(completion.models);
  out.counts(completion.fingerprints);
}

DistinctCompletion read_completion(EntryReader& in) {
  DistinctCompletion completion;
  completion.text = in.text();
  completion.tokens.resize(in.size());
  for (TokenLogprob& token : completion.tokens) {
    token.token = in.text();
    token.logprob = in.number();
    token.top.resize(in.size());
    for (TokenCandidate& candidate : token.top) {
      candidate.token = in.text();
      candidate.logprob = in.number();
    }
  }
  completion.count = in.small();
  for (std::size_t i = in.size(); i > 0 && !in.broken(); --i) {
    const int level = in.small();
    completion.count_by_concurrency.emplace_hint(completion.count_by_concurrency.end(), level,
                                                 in.small());
  }
  completion.is_reference = in.flag();
  if (in.flag()) completion.divergence = in.small();
  switch (in.count()) {
  case 0: break;
  case 1: completion.divergence_kind = DivergenceKind::token; break;
  default: completion.divergence_kind = DivergenceKind::length; break;
  }
  completion.finish_reasons = in.counts();
  completion.models = in.counts();
  completion.fingerprints = in.counts();
  return completion;
}

// Frees a string's or a container's memory (assigning an empty string keeps the capacity).
template <typename T> void release_memory(T& value) { T().swap(value); }

} // namespace

Result<std::shared_ptr<PromptDetails>> PromptDetails::create() {
  const char* variable = std::getenv("TMPDIR");
  const std::string directory = variable != nullptr && *variable != '\0' ? variable : "/tmp";
  std::string path = directory + "/llmrepro-details.XXXXXX";
  const int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0)
    return make_error(ErrorCode::environment,
                      "cannot create a temporary file in '" + directory +
                          "' for the report's detail: " + std::strerror(errno));
  ::unlink(path.c_str()); // gone with the process, whatever ends it
  return std::shared_ptr<PromptDetails>(new PromptDetails(fd));
}

PromptDetails::~PromptDetails() {
  if (m_fd >= 0) ::close(m_fd);
}

void PromptDetails::keep(PromptAnalysis& prompt) {
  m_buffer.clear();
  EntryWriter out(m_buffer);
  out.count(prompt.completions.size());
  for (const DistinctCompletion& completion : prompt.completions) write_completion(out, completion);
  for (const auto& answer : prompt.answers) out.text(answer.first);
  out.text(prompt.modal.answer);
  for (const LevelAnalysis& level : prompt.by_concurrency) {
    out.counts(level.answers);
    out.text(level.modal.answer);
    if (level.shift) out.text(level.shift->answer);
    const std::vector<double>& noise = level.own_noise.sorted();
    out.count(noise.size());
    for (double sample : noise) out.number(sample);
  }
  for (std::size_t written = 0; m_error.empty() && written < m_buffer.size();) {
    const ssize_t n = ::pwrite(m_fd, m_buffer.data() + written, m_buffer.size() - written,
                               static_cast<off_t>(m_end + written));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      m_error = std::string("cannot write the report's detail to a temporary file: ") +
                std::strerror(n < 0 ? errno : ENOSPC);
    else
      written += static_cast<std::size_t>(n);
  }
  m_end += m_buffer.size();
  prompt.detail = static_cast<std::int64_t>(m_ends.size());
  m_ends.push_back(m_end);
  if (m_buffer.capacity() > (std::size_t{1} << 20)) release_memory(m_buffer);

  release_memory(prompt.completions);
  for (auto& answer : prompt.answers) release_memory(answer.first);
  release_memory(prompt.modal.answer);
  for (LevelAnalysis& level : prompt.by_concurrency) {
    release_memory(level.answers);
    release_memory(level.modal.answer);
    if (level.shift) release_memory(level.shift->answer);
    level.own_noise = NoiseDistribution();
  }
}

void PromptDetails::restore(PromptAnalysis& prompt) const {
  if (prompt.detail < 0) return;
  const auto index = static_cast<std::size_t>(prompt.detail);
  if (!m_error.empty()) return;
  if (index >= m_ends.size()) {
    m_error = "the report's detail has no entry " + std::to_string(index);
    return;
  }
  const std::uint64_t begin = index == 0 ? 0 : m_ends[index - 1];
  m_buffer.resize(static_cast<std::size_t>(m_ends[index] - begin));
  for (std::size_t read = 0; read < m_buffer.size();) {
    const ssize_t n = ::pread(m_fd, m_buffer.data() + read, m_buffer.size() - read,
                              static_cast<off_t>(begin + read));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      m_error = std::string("cannot read the report's detail back from its temporary file: ") +
                (n < 0 ? std::strerror(errno) : "it is shorter than written");
      return;
    }
    read += static_cast<std::size_t>(n);
  }
  EntryReader in(m_buffer);
  prompt.completions.resize(in.size());
  for (DistinctCompletion& completion : prompt.completions) completion = read_completion(in);
  for (auto& answer : prompt.answers) answer.first = in.text();
  prompt.modal.answer = in.text();
  for (LevelAnalysis& level : prompt.by_concurrency) {
    level.answers = in.counts();
    level.modal.answer = in.text();
    if (level.shift) level.shift->answer = in.text();
    std::vector<double> noise(in.size(sizeof(double)));
    for (double& sample : noise) sample = in.number();
    level.own_noise = NoiseDistribution(std::move(noise));
  }
  if (in.broken() || !in.done())
    m_error = "the report's detail of prompt '" + prompt.id + "' does not read back as written";
  prompt.detail = -1;
  if (m_buffer.capacity() > (std::size_t{1} << 20)) release_memory(m_buffer);
}

Result<void> PromptDetails::error() const {
  if (m_error.empty()) return {};
  return make_error(ErrorCode::environment, m_error);
}

const PromptAnalysis& detailed(const PromptDetails* details, const PromptAnalysis& prompt,
                               PromptAnalysis& scratch) {
  if (details == nullptr || prompt.detail < 0) return prompt;
  scratch = prompt;
  details->restore(scratch);
  return scratch;
}

} // namespace llmrepro::core
