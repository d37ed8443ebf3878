// A fresh temporary directory per test, removed with everything in it when the test ends: the
// one the unit tests of every room share.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace llmrepro::testing {

class TempDir {
public:
  // Creates $TMPDIR/llmrepro-<purpose>-XXXXXX; throws when the directory cannot be made, so
  // that the test fails where the cause is.
  explicit TempDir(const std::string& purpose = "test") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("llmrepro-" + purpose + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot create a temporary directory from " + pattern);
    m_path = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(m_path, ignored);
  }

  const std::filesystem::path& path() const { return m_path; }

  // The path of `name` inside the directory (the file need not exist).
  std::string file(const std::string& name) const { return (m_path / name).string(); }

  // Writes `text` to `name` inside the directory, byte for byte, and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(m_path / name, std::ios::binary) << text;
    return file(name);
  }

private:
  std::filesystem::path m_path;
};

} // namespace llmrepro::testing
