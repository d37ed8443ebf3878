#include "store/detail/text_id_cache.hpp"

#include <algorithm>
#include <random>
#include <utility>

namespace llmrepro::store::detail {
namespace {

// splitmix64's finaliser: every input bit moves every output bit.
std::uint64_t mix(std::uint64_t value) {
  value ^= value >> 30;
  value *= 0xbf58476d1ce4e5b9ULL;
  value ^= value >> 27;
  value *= 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

// This process's key for the hash: token texts come from the endpoint, and a table probed by a
// hash anyone can compute lets a hostile server send texts that all land in one run of slots,
// each lookup then as slow as the table is full. Ids never depend on it.
std::uint64_t process_key() {
  static const std::uint64_t key = [] {
    std::random_device device;
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }();
  return key;
}

// A keyed hash of a token text, 8 bytes at a time (most texts are a few bytes). Only this process
// sees it, so the bytes are read in the machine's order.
std::uint64_t hash_of(std::string_view text) {
  std::uint64_t hash = mix(process_key() ^ text.size());
  std::size_t at = 0;
  for (; at + 8 <= text.size(); at += 8) {
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < 8; ++i)
      word |= static_cast<std::uint64_t>(static_cast<unsigned char>(text[at + i])) << (8 * i);
    hash = mix(hash ^ word);
  }
  std::uint64_t tail = 0;
  for (std::size_t i = 0; at + i < text.size(); ++i)
    tail |= static_cast<std::uint64_t>(static_cast<unsigned char>(text[at + i])) << (8 * i);
  return mix(hash ^ tail ^ 0x9e3779b97f4a7c15ULL);
}

constexpr std::size_t k_first_slots = 1024;

} // namespace

std::optional<std::uint64_t> TextIdCache::find(std::string_view text) const {
  if (m_slots.empty()) return std::nullopt;
  const std::uint64_t hash = hash_of(text);
  const std::size_t mask = m_slots.size() - 1;
  for (std::size_t at = hash & mask;; at = (at + 1) & mask) {
    const Slot& slot = m_slots[at];
    if (slot.entry == 0) return std::nullopt;
    if (slot.hash == hash) {
      const Entry& entry = m_entries[slot.entry - 1];
      if (entry.text == text) return entry.id;
    }
  }
}

void TextIdCache::insert(std::string_view text, std::uint64_t id, bool added) {
  if (2 * (m_entries.size() + 1) > m_slots.size()) grow();
  m_entries.push_back({std::string(text), id, hash_of(text)});
  place(m_entries.size() - 1);
  if (added) m_added.push_back(m_entries.size() - 1);
}

void TextIdCache::keep_added() { m_added.clear(); }

void TextIdCache::forget_added() {
  if (m_added.empty()) return;
  // Rare (a failed transaction): the entries are compacted and the table built again.
  std::vector<bool> dropped(m_entries.size(), false);
  for (const std::size_t entry : m_added) dropped[entry] = true;
  std::size_t kept = 0;
  for (std::size_t entry = 0; entry < m_entries.size(); ++entry) {
    if (dropped[entry]) continue;
    if (kept != entry) m_entries[kept] = std::move(m_entries[entry]); // not onto itself
    ++kept;
  }
  m_entries.resize(kept);
  m_added.clear();
  std::fill(m_slots.begin(), m_slots.end(), Slot{});
  for (std::size_t entry = 0; entry < m_entries.size(); ++entry) place(entry);
}

// Linear probing from the hash's slot to the first empty one.
void TextIdCache::place(std::size_t entry) {
  const std::uint64_t hash = m_entries[entry].hash;
  const std::size_t mask = m_slots.size() - 1;
  std::size_t at = hash & mask;
  while (m_slots[at].entry != 0) at = (at + 1) & mask;
  m_slots[at] = {hash, entry + 1};
}

void TextIdCache::grow() {
  m_slots.assign(std::max(k_first_slots, 2 * m_slots.size()), Slot{});
  for (std::size_t entry = 0; entry < m_entries.size(); ++entry) place(entry);
}

} // namespace llmrepro::store::detail
