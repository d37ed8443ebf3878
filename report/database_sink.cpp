#include "report/database_sink.hpp"

namespace llmrepro::report {

core::Result<void> DatabaseSink::record(const core::RequestRecord& record) {
  return m_database.record(record);
}

} // namespace llmrepro::report
