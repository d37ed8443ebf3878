// A token's text: 16 bytes, the text inside them up to 15 bytes (nearly every token a tokenizer
// has) and on the heap past them. std::string takes 32 for the same short texts; a response's
// tokens and their candidates are three texts a position, and what a report holds of a prompt
// is the run it reads and the completions the prompt's analysis keeps, so the text's size is
// most of what that costs.
//
// Any bytes (a token may be part of a UTF-8 sequence, or NUL). Read it as a std::string_view,
// which it converts to; std::string(text) where a std::string is needed.
#pragma once

#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace llmrepro::core {

class TokenText {
public:
  static constexpr std::size_t k_inline = 15;

  TokenText() noexcept { set_empty(); }
  TokenText(std::string_view text) { init(text.data(), text.size()); }
  TokenText(const char* text) : TokenText(std::string_view(text)) {}
  TokenText(const std::string& text) : TokenText(std::string_view(text)) {}
  // An inline text is copied as its 16 bytes.
  TokenText(const TokenText& other) {
    if (other.is_inline())
      std::memcpy(m_bytes, other.m_bytes, sizeof m_bytes);
    else
      init(other.data(), other.size());
  }
  TokenText(TokenText&& other) noexcept {
    std::memcpy(m_bytes, other.m_bytes, sizeof m_bytes);
    other.set_empty();
  }
  ~TokenText() { free_heap(); }

  TokenText& operator=(const TokenText& other) {
    if (this == &other) return *this;
    if (other.is_inline()) {
      free_heap();
      std::memcpy(m_bytes, other.m_bytes, sizeof m_bytes);
    } else {
      assign(other.data(), other.size());
    }
    return *this;
  }
  TokenText& operator=(TokenText&& other) noexcept {
    if (this != &other) {
      free_heap();
      std::memcpy(m_bytes, other.m_bytes, sizeof m_bytes);
      other.set_empty();
    }
    return *this;
  }
  TokenText& operator=(std::string_view text) {
    assign(text.data(), text.size());
    return *this;
  }
  TokenText& operator=(const std::string& text) { return *this = std::string_view(text); }
  TokenText& operator=(const char* text) { return *this = std::string_view(text); }

  // `text` may be this text's own bytes.
  void assign(const char* text, std::size_t size) {
    char* old = is_inline() ? nullptr : m_heap.data;
    init(text, size);
    delete[] old;
  }
  void assign(std::string_view text) { assign(text.data(), text.size()); }
  void clear() noexcept {
    free_heap();
    set_empty();
  }

  std::size_t size() const noexcept {
    return is_inline() ? inline_size() : static_cast<std::size_t>(m_heap.size_tag & k_size_mask);
  }
  bool empty() const noexcept { return size() == 0; }
  const char* data() const noexcept { return is_inline() ? m_bytes : m_heap.data; }
  const char* begin() const noexcept { return data(); }
  const char* end() const noexcept { return data() + size(); }
  char operator[](std::size_t i) const noexcept { return data()[i]; }
  bool is_inline() const noexcept { return tag() != k_heap_tag; }

  std::string_view view() const noexcept { return {data(), size()}; }
  operator std::string_view() const noexcept { return view(); }
  std::string str() const { return std::string(view()); }

  // Two inline texts are equal exactly when their 16 bytes are (the bytes past the text are zero
  // and the last holds the size), an inline text never equals one on the heap (15 bytes or fewer
  // against more), and two heap texts with the same bytes share pointer and size: two word
  // compares decide nearly every case without a call to memcmp, for the analysis compares every
  // token of a run with another run's, and its candidates.
  friend bool operator==(const TokenText& a, const TokenText& b) noexcept {
    if (a.words() == b.words()) return true;
    if (a.is_inline() || b.is_inline()) return false;
    return a.view() == b.view();
  }
  friend bool operator==(const TokenText& a, std::string_view b) noexcept { return a.view() == b; }
  friend bool operator==(const TokenText& a, const std::string& b) noexcept {
    return a.view() == std::string_view(b);
  }
  friend bool operator==(const TokenText& a, const char* b) noexcept {
    return a.view() == std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const TokenText& a, const TokenText& b) noexcept {
    return a.view() <=> b.view();
  }
  friend std::strong_ordering operator<=>(const TokenText& a, std::string_view b) noexcept {
    return a.view() <=> b;
  }

private:
  // The last byte tells the two forms apart: inline, it holds the size (0 to 15, the text in the
  // bytes before it, zeros after the text); on the heap, k_heap_tag, the top byte of the size's
  // word.
  static constexpr unsigned char k_heap_tag = 0xFF;
  static constexpr std::uint64_t k_size_mask = (std::uint64_t{1} << 56) - 1;
  struct Heap {
    char* data;
    std::uint64_t size_tag;
  };

  unsigned char tag() const noexcept { return static_cast<unsigned char>(m_bytes[15]); }
  std::size_t inline_size() const noexcept { return tag(); }
  void set_empty() noexcept { std::memset(m_bytes, 0, sizeof m_bytes); }
  struct Words {
    std::uint64_t low;
    std::uint64_t high;
    friend bool operator==(const Words&, const Words&) = default;
  };
  Words words() const noexcept {
    Words words;
    std::memcpy(&words, m_bytes, sizeof words);
    return words;
  }

  void init(const char* text, std::size_t size) {
    if (size <= k_inline) {
      store(short_words(text, size));
    } else {
      // The size's top byte is the tag: 2^56 bytes is beyond any response.
      m_heap.data = new char[size];
      std::memcpy(m_heap.data, text, size);
      m_heap.size_tag = static_cast<std::uint64_t>(size) | (std::uint64_t{k_heap_tag} << 56);
    }
  }
  void store(const Words& words) noexcept { std::memcpy(m_bytes, &words, sizeof m_bytes); }
  // The inline form of a text of up to 15 bytes, built in two registers from at most two
  // overlapping loads: a call to memmove for a few bytes cost more than the copy, and bytes
  // stored one by one and read back as words stall the read. `from` may be this text's bytes.
  static Words short_words(const char* from, std::size_t size) noexcept {
    Words words{0, static_cast<std::uint64_t>(size) << 56};
    if (size >= 8) {
      std::memcpy(&words.low, from, 8);
      if (size > 8) { // the last size - 8 bytes, the top of the last word's
        std::uint64_t tail = 0;
        std::memcpy(&tail, from + size - 8, 8);
        words.high |= tail >> (8 * (16 - size));
      }
    } else if (size >= 4) {
      std::uint32_t head = 0;
      std::uint32_t tail = 0;
      std::memcpy(&head, from, 4);
      std::memcpy(&tail, from + size - 4, 4);
      words.low = head | (std::uint64_t{tail} << (8 * (size - 4))); // the overlap is the same
    } else if (size > 0) {
      const auto byte = [&](std::size_t at) {
        return std::uint64_t{static_cast<unsigned char>(from[at])} << (8 * at);
      };
      words.low = byte(0) | byte(size / 2) | byte(size - 1);
    }
    return words;
  }
  void free_heap() noexcept {
    if (!is_inline()) delete[] m_heap.data;
  }

  union {
    char m_bytes[16];
    Heap m_heap;
  };
};

static_assert(sizeof(TokenText) == 16);
static_assert(std::endian::native == std::endian::little,
              "the tag is the size word's top byte, the text's last byte");

inline std::string& operator+=(std::string& out, const TokenText& text) {
  return out.append(text.data(), text.size());
}
inline std::string operator+(std::string a, const TokenText& b) { return a += b; }
inline std::string operator+(const TokenText& a, std::string_view b) {
  std::string out = a.str();
  out.append(b);
  return out;
}

} // namespace llmrepro::core
