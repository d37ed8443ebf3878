// The token_texts ids an interner has seen, by text (TextInterner's cache): every token and
// candidate text of every recorded request is looked up here, so the lookup is a flat table
// probed by a cheap hash rather than a node-based map. Private to store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmrepro::store::detail {

class TextIdCache {
public:
  // The id cached for `text`, if any.
  std::optional<std::uint64_t> find(std::string_view text) const;

  // Caches `id` for `text`, which find() does not know yet; `added` marks it as added by the
  // current transaction, so that forget_added() can drop it.
  void insert(std::string_view text, std::uint64_t id, bool added);

  // The current transaction committed: its texts stay.
  void keep_added();
  // The current transaction rolled back: its texts are forgotten.
  void forget_added();

private:
  struct Entry {
    std::string text;
    std::uint64_t id = 0;
    std::uint64_t hash = 0;
  };
  // A slot of the table: the hash of its entry, and the entry's index plus one (0: empty).
  struct Slot {
    std::uint64_t hash = 0;
    std::size_t entry = 0;
  };

  void place(std::size_t entry);
  void grow();

  std::vector<Entry> m_entries;
  std::vector<Slot> m_slots;        // a power of two, at most half full
  std::vector<std::size_t> m_added; // entries the current transaction added
};

} // namespace llmrepro::store::detail
