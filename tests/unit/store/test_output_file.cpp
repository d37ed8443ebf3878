#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "store/database_lock.hpp"
#include "store/output_file.hpp"
#include "tests/support/temp_dir.hpp"

using namespace llmrepro;
using store::check_output_paths;
using store::DatabaseLock;
using store::write_output_file;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

core::Result<void> write_text(const std::string& path, const std::string& text) {
  return write_output_file(path, [&](std::ostream& out) { out << text; });
}

} // namespace

TEST_CASE("check_output_paths: an output may not be an input, its side files, or another output") {
  const testing::TempDir dir("outputs");
  const std::string db = dir.write("a.db", "x");
  const std::string suite = dir.write("s.jsonl", "{}");
  std::filesystem::create_symlink(db, dir.file("link"));
  const auto refused = [&](const std::string& flag, const std::string& path) {
    auto checked = check_output_paths({{flag, path}}, {{"--suite", suite}}, {{"--db", db}});
    REQUIRE_FALSE(checked);
    CHECK(checked.error().code == core::ErrorCode::usage);
    return checked.error().message;
  };
  CHECK(refused("--json", db) == "--json '" + db + "' is the audit database --db '" + db +
                                     "': writing it would replace it; choose another path");
  CHECK(refused("--json", dir.file("link")).find("is the audit database --db") !=
        std::string::npos);
  CHECK(refused("--json", db + "-shm").find("is the -shm file of the audit database") !=
        std::string::npos);
  CHECK(refused("--json", db + ".lock").find("is the lock file of the audit database") !=
        std::string::npos);
  CHECK(refused("--html", suite).find("is the file named by --suite") != std::string::npos);
  // A hard link is the same file under another name.
  std::filesystem::create_hard_link(db, dir.file("hard"));
  CHECK(refused("--json", dir.file("hard")).find("is the audit database") != std::string::npos);

  auto twice = check_output_paths({{"--json", dir.file("r")}, {"--html", dir.file("./r")}}, {});
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message.find("is also the output of --json") != std::string::npos);
  auto stdout_twice = check_output_paths({{"--json", "-"}, {"--html", "-"}}, {});
  REQUIRE_FALSE(stdout_twice);
  CHECK(check_output_paths({{"--json", "-"}, {"--html", dir.file("r.html")}}, {}, {{"--db", db}}));
}

TEST_CASE("check_output_paths: the directory must exist and take files, and no directories") {
  const testing::TempDir dir("outputs");
  auto missing = check_output_paths({{"--json", dir.file("none/r.json")}}, {});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == "--json '" + dir.file("none/r.json") +
                                       "' is in a directory that does not exist ('" +
                                       dir.file("none") + "')");
  auto directory = check_output_paths({{"--json", dir.path().string()}}, {});
  REQUIRE_FALSE(directory);
  CHECK(directory.error().message.find("is a directory") != std::string::npos);
  std::filesystem::create_symlink(dir.file("nothing"), dir.file("dangling"));
  auto dangling = check_output_paths({{"--json", dir.file("dangling")}}, {});
  REQUIRE_FALSE(dangling);
  CHECK(dangling.error().message.find("symbolic link to a missing file") != std::string::npos);
  CHECK(check_output_paths({{"--json", "/dev/null"}}, {}));
}

TEST_CASE("write_output_file: a temporary beside the target, renamed over it, links followed") {
  const testing::TempDir dir("outputs");
  const std::string target = dir.write("r.json", "old");
  ::chmod(target.c_str(), 0640);
  // A link planted where a predictable temporary would go is never written through.
  const std::string victim = dir.write("victim", "keep");
  std::filesystem::create_symlink(victim, target + ".tmp");
  REQUIRE(write_text(target, "new"));
  CHECK(read(target) == "new");
  CHECK(read(victim) == "keep");
  struct stat status {};
  REQUIRE(::stat(target.c_str(), &status) == 0);
  CHECK((status.st_mode & 07777) == 0640);
  // Through a link: the file it names is replaced, the link stays.
  std::filesystem::create_symlink(target, dir.file("via"));
  REQUIRE(write_text(dir.file("via"), "linked"));
  CHECK(std::filesystem::is_symlink(dir.file("via")));
  CHECK(read(target) == "linked");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  CHECK(files == 4); // r.json, victim, r.json.tmp (the planted link), via: no temporary left
  // A device is written in place: /dev/null stays a character device.
  REQUIRE(write_text("/dev/null", "discarded"));
  REQUIRE(::stat("/dev/null", &status) == 0);
  CHECK(S_ISCHR(status.st_mode));
}

TEST_CASE("DatabaseLock: one holder at a time, named, released when dropped") {
  const testing::TempDir dir("lock");
  const std::string db = dir.file("a.db");
  {
    auto first = DatabaseLock::acquire(db, "llmrepro audit");
    REQUIRE(first);
    auto second = DatabaseLock::acquire(db, "llmrepro merge");
    REQUIRE_FALSE(second);
    CHECK(second.error().code == core::ErrorCode::usage);
    CHECK(second.error().message == "'" + db + "' is being written by pid " +
                                        std::to_string(::getpid()) +
                                        " (llmrepro audit); wait for it or choose another --db");
  }
  CHECK(DatabaseLock::acquire(db, "llmrepro audit"));
  CHECK(std::filesystem::exists(DatabaseLock::lock_path(db)));
}

TEST_CASE("DatabaseLock: the live budget charge outlives its holder, per audit") {
  const testing::TempDir dir("lock");
  const std::string db = dir.file("a.db");
  {
    auto lock = DatabaseLock::acquire(db, "llmrepro audit");
    REQUIRE(lock);
    CHECK_FALSE(lock->read_charge("audit-1"));
    REQUIRE(lock->write_charge("audit-1", {3, 300, 30}));
    REQUIRE(lock->write_charge("audit-1", {12, 1200, 120}));
  } // the holder ends, as a killed run does
  auto next = DatabaseLock::acquire(db, "llmrepro audit");
  REQUIRE(next);
  const auto charge = next->read_charge("audit-1");
  REQUIRE(charge);
  CHECK(*charge == core::BudgetCharge{12, 1200, 120});
  CHECK_FALSE(next->read_charge("audit-2")); // another audit at the same path (--overwrite)
}
