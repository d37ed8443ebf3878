// A prompt's records read ahead of its analysis: while the analysis of one record runs on one
// thread, the next records' tokens are read (SQLite and the blob's decoding, a third of a report's
// time) on another. The reading stays on the thread that owns the audit file, and the analysis
// sees the records in the same order as when it reads them itself, so every figure is the same.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "core/record_tokens.hpp"
#include "core/request_record.hpp"

namespace llmrepro::audit {

class ReadAhead final : public core::RecordTokens {
public:
  // `source` is read on the thread that calls run(); at most `depth` records are read ahead of
  // the analysis. Where `records` are given (those `source` reads into), each successful one's
  // core::completion_facts are computed on the reading thread as it is read (facts()).
  ReadAhead(core::RecordTokens& source, std::size_t depth,
            const std::vector<core::RequestRecord>* records = nullptr);

  // Runs `analyse` (which reads its records through this object) on a thread of its own while
  // the calling thread reads for it, and returns what `analyse` returned. An analysis that does
  // not announce its order (will_read) is given the records as it asks for them, one at a time.
  core::Result<void> run(const std::function<core::Result<void>(core::RecordTokens&)>& analyse);

  // core::RecordTokens, on the analysis's thread.
  void will_read(const std::vector<std::size_t>& order) override;
  core::Result<void> read(std::size_t index) override;
  void drop(std::size_t index) override;
  void settle() override;
  const core::CompletionFacts* facts(std::size_t index) const override;

private:
  std::size_t in_flight() const { return m_read - m_used; }
  // Whether the next entry may be read now, and whether only a drop to come lets it.
  bool may_read() const;
  bool next_is_held() const;
  bool reader_should_wake() const;
  void wake_reader();
  void serve(); // the reading thread's loop, until the analysis is done
  void drop_asked(std::unique_lock<std::mutex>& lock); // the drops asked for so far
  int& held(std::size_t index);

  core::RecordTokens* m_source;
  std::size_t m_depth;
  const std::vector<core::RequestRecord>* m_records;
  // By record: its facts, written by the reader before the read is handed over (under the
  // mutex), read by the analysis after; a record is read again only once dropped.
  std::vector<std::optional<core::CompletionFacts>> m_facts;
  std::mutex m_mutex;
  std::condition_variable m_reader;   // the reading thread waits on it
  std::condition_variable m_analysis; // the analysis waits on it
  bool m_reader_waits = false;
  bool m_analysis_waits = false;
  std::vector<std::size_t> m_order;     // what the analysis reads, in order
  std::size_t m_read = 0;               // entries of m_order read
  std::size_t m_used = 0;               // entries the analysis has taken
  std::optional<core::Error> m_failure; // reading entry m_read failed
  std::vector<std::size_t> m_drops;     // dropped by the analysis, for the reader to drop
  std::size_t m_dropping = 0;           // drops the reader has taken and is doing
  std::vector<int> m_held;              // by record: reads not yet dropped
  bool m_settling = false;              // the analysis waits for its drops to be done
  bool m_done = false;                  // the analysis has returned
  bool m_reader_gone = false;           // the reading thread threw: nothing more is read
};

} // namespace llmrepro::audit
