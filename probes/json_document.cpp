#include "probes/detail/json_document.hpp"

#include "probes/detail/json_scanner.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <unordered_map>

namespace llmrepro::probes::detail {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool in_range(const char* p, unsigned low, unsigned high) {
  auto byte = static_cast<unsigned char>(*p);
  return byte >= low && byte <= high;
}

// Length of the well-formed UTF-8 sequence at `p` (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0 when it is not one.
std::size_t utf8_length(const char* p, const char* end) {
  auto lead = static_cast<unsigned char>(*p);
  auto left = static_cast<std::size_t>(end - p);
  if (lead >= 0xC2 && lead <= 0xDF) return left >= 2 && in_range(p + 1, 0x80, 0xBF) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (left < 3 || !in_range(p + 2, 0x80, 0xBF)) return 0;
    unsigned low = lead == 0xE0 ? 0xA0 : 0x80;
    unsigned high = lead == 0xED ? 0x9F : 0xBF;
    return in_range(p + 1, low, high) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (left < 4 || !in_range(p + 2, 0x80, 0xBF) || !in_range(p + 3, 0x80, 0xBF)) return 0;
    unsigned low = lead == 0xF0 ? 0x90 : 0x80;
    unsigned high = lead == 0xF4 ? 0x8F : 0xBF;
    return in_range(p + 1, low, high) ? 4 : 0;
  }
  return 0;
}

char* put_utf8(char* out, std::uint32_t code) {
  auto byte = [](std::uint32_t value) {
    return static_cast<char>(static_cast<unsigned char>(value));
  };
  if (code < 0x80) {
    *out++ = byte(code);
  } else if (code < 0x800) {
    *out++ = byte(0xC0U | (code >> 6));
    *out++ = byte(0x80U | (code & 0x3FU));
  } else if (code < 0x10000) {
    *out++ = byte(0xE0U | (code >> 12));
    *out++ = byte(0x80U | ((code >> 6) & 0x3FU));
    *out++ = byte(0x80U | (code & 0x3FU));
  } else {
    *out++ = byte(0xF0U | (code >> 18));
    *out++ = byte(0x80U | ((code >> 12) & 0x3FU));
    *out++ = byte(0x80U | ((code >> 6) & 0x3FU));
    *out++ = byte(0x80U | (code & 0x3FU));
  }
  return out;
}

// Arrays a finished document left for the next one parsed on this thread; kept only up to a
// bound, so one huge response does not pin its memory.
constexpr std::size_t k_max_spare_nodes = 1U << 16;
thread_local std::vector<JsonNode> t_spare_nodes;
thread_local std::vector<std::uint32_t> t_spare_children;
thread_local std::vector<std::uint32_t> t_scratch;

template <typename T> void take_spare(std::vector<T>& into, std::vector<T>& spare) {
  if (into.capacity() < spare.capacity()) into.swap(spare);
  into.clear();
}

template <typename T> void give_spare(std::vector<T>& from, std::vector<T>& spare) {
  if (from.capacity() > spare.capacity() && from.capacity() <= k_max_spare_nodes) {
    from.clear();
    spare.swap(from);
  }
}

} // namespace

// Recursive descent over the text, at most max_depth containers deep, appending one node per
// value in document order. Each container's children are gathered on a scratch stack and copied
// to the document's child list when the container closes, so every child list is contiguous.
// The lexical work (strings, numbers, literals) is the scanner's, which a JsonValueReader shares.
class JsonTapeBuilder {
public:
  JsonTapeBuilder(JsonDocument& document, std::string_view text, std::size_t max_depth,
                  JsonValueReader* reader)
      : m_document(document), m_scan(document, text), m_max_depth(max_depth), m_reader(reader) {}

  bool run() {
    const std::size_t size = m_scan.left();
    take_spare(m_document.m_nodes, t_spare_nodes);
    take_spare(m_document.m_children, t_spare_children);
    // A reader takes the bulk of a response off the tape: its nodes are then far fewer.
    const std::size_t expected = m_reader != nullptr ? size / 64 : size / 6;
    m_document.m_nodes.reserve(expected + 4);
    m_document.m_children.reserve(expected + 4);
    m_scratch.clear();
    // A leading UTF-8 byte-order mark is skipped.
    if (size >= 3) (void)m_scan.literal("\xEF\xBB\xBF");
    if (!value(JsonNode::k_no_parent, 0, {}, 0)) return false;
    m_scan.skip_whitespace();
    return m_scan.at_end();
  }

private:
  std::uint32_t add_node(JsonType type, std::uint32_t parent, std::uint32_t index,
                         std::string_view key) {
    auto self = static_cast<std::uint32_t>(m_document.m_nodes.size());
    JsonNode node;
    node.type = type;
    node.parent = parent;
    node.index = index;
    node.key = key;
    m_document.m_nodes.push_back(node);
    return self;
  }

  bool value(std::uint32_t parent, std::uint32_t index, std::string_view key, std::size_t depth) {
    m_scan.skip_whitespace();
    if (m_scan.at_end()) return false;
    switch (m_scan.peek()) {
    case '{': return object(add_node(JsonType::object, parent, index, key), depth + 1);
    case '[': return array(add_node(JsonType::array, parent, index, key), depth + 1);
    case '"': {
      std::uint32_t self = add_node(JsonType::string, parent, index, key);
      std::string_view text;
      if (!m_scan.string(text)) return false;
      m_document.m_nodes[self].text = text;
      return true;
    }
    case 't':
    case 'f': {
      std::uint32_t self = add_node(JsonType::boolean, parent, index, key);
      bool truth = m_scan.peek() == 't';
      m_document.m_nodes[self].flag = truth;
      return m_scan.literal(truth ? "true" : "false");
    }
    case 'n': add_node(JsonType::null, parent, index, key); return m_scan.literal("null");
    default: {
      std::uint32_t self = add_node(JsonType::number, parent, index, key);
      JsonLiteral literal;
      if (!m_scan.number(literal)) return false;
      JsonNode& node = m_document.m_nodes[self];
      node.text = literal.text;
      node.flag = literal.integral;
      node.number = literal.kind;
      return true;
    }
    }
  }

  // The member value at the scanner handed to the reader; false (the scanner where it was) when
  // the reader declines it.
  bool take(std::uint32_t parent, std::string_view key, std::size_t depth) {
    m_scan.skip_whitespace();
    if (m_scan.at_end()) return false;
    JsonType type = JsonType::number;
    switch (m_scan.peek()) {
    case '{': type = JsonType::object; break;
    case '[': type = JsonType::array; break;
    case '"': type = JsonType::string; break;
    case 't':
    case 'f': type = JsonType::boolean; break;
    case 'n': type = JsonType::null; break;
    default: break;
    }
    const JsonScanner::Mark mark = m_scan.mark();
    if (depth >= m_max_depth || !m_reader->read(m_scan, m_max_depth - depth)) {
      m_scan.rewind(mark);
      return false;
    }
    m_document.m_nodes[add_node(type, parent, 0, key)].taken = true;
    return true;
  }

  bool object(std::uint32_t self, std::size_t depth) {
    if (depth > m_max_depth) return false;
    m_scan.advance(1);
    std::size_t mark = m_scratch.size();
    if (m_scan.consume('}')) return close(self, mark, false);
    while (true) {
      m_scan.skip_whitespace();
      if (m_scan.at_end() || m_scan.peek() != '"') return false;
      std::string_view key;
      if (!m_scan.string(key)) return false;
      if (!m_scan.consume(':')) return false;
      m_scratch.push_back(static_cast<std::uint32_t>(m_document.m_nodes.size()));
      const bool taken =
          m_reader != nullptr && m_reader->wants(m_document, self, key) && take(self, key, depth);
      if (!taken && !value(self, 0, key, depth)) return false;
      m_scan.skip_whitespace();
      if (m_scan.at_end()) return false;
      char c = m_scan.peek();
      m_scan.advance(1);
      if (c == '}') return close(self, mark, true);
      if (c != ',') return false;
    }
  }

  bool array(std::uint32_t self, std::size_t depth) {
    if (depth > m_max_depth) return false;
    m_scan.advance(1);
    std::size_t mark = m_scratch.size();
    if (m_scan.consume(']')) return close(self, mark, false);
    for (std::uint32_t index = 0;; ++index) {
      m_scratch.push_back(static_cast<std::uint32_t>(m_document.m_nodes.size()));
      if (!value(self, index, {}, depth)) return false;
      m_scan.skip_whitespace();
      if (m_scan.at_end()) return false;
      char c = m_scan.peek();
      m_scan.advance(1);
      if (c == ']') return close(self, mark, false);
      if (c != ',') return false;
    }
  }

  // Moves the children gathered since `mark` to the document, folding duplicate member names
  // into the first one's slot with the last one's value.
  bool close(std::uint32_t self, std::size_t mark, bool members) {
    std::size_t count = m_scratch.size() - mark;
    if (members && count > 1) count = fold_duplicates(mark, count);
    JsonNode& node = m_document.m_nodes[self];
    node.first = static_cast<std::uint32_t>(m_document.m_children.size());
    node.count = static_cast<std::uint32_t>(count);
    m_document.m_children.insert(m_document.m_children.end(),
                                 m_scratch.begin() + static_cast<std::ptrdiff_t>(mark),
                                 m_scratch.begin() + static_cast<std::ptrdiff_t>(mark + count));
    m_scratch.resize(mark);
    return true;
  }

  std::size_t fold_duplicates(std::size_t mark, std::size_t count) {
    std::uint32_t* members = m_scratch.data() + mark;
    const auto& nodes = m_document.m_nodes;
    std::size_t kept = 0;
    if (count <= 16) {
      for (std::size_t i = 0; i < count; ++i) {
        std::size_t j = 0;
        while (j < kept && nodes[members[j]].key != nodes[members[i]].key) ++j;
        members[j] = members[i];
        if (j == kept) ++kept;
      }
      return kept;
    }
    std::unordered_map<std::string_view, std::size_t> slots;
    slots.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      auto [slot, inserted] = slots.try_emplace(nodes[members[i]].key, kept);
      members[slot->second] = members[i];
      if (inserted) ++kept;
    }
    return kept;
  }

  JsonDocument& m_document;
  JsonScanner m_scan;
  std::size_t m_max_depth;
  JsonValueReader* m_reader;
  // Children of the open containers; the thread's one, as parsing never nests.
  std::vector<std::uint32_t>& m_scratch = t_scratch;
};

double json_number_value(std::string_view literal) {
  double value = 0;
  if (exact_decimal(literal, value)) return value;
  auto [end, error] = std::from_chars(literal.data(), literal.data() + literal.size(), value);
  if (error == std::errc()) return value;
  // from_chars refuses underflow, which strtod turns into a subnormal or zero.
  std::string copy(literal);
  return std::strtod(copy.c_str(), nullptr);
}

bool json_finite_number(std::string_view text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc()) return end == text.data() + text.size();
  if (error != std::errc::result_out_of_range) return false;
  std::string copy(text);
  return std::isfinite(std::strtod(copy.c_str(), nullptr));
}

bool JsonScanner::string_rest(const char* start, std::string_view& out) {
  while (m_p < m_end) {
    auto c = static_cast<unsigned char>(*m_p);
    if (c == '"') {
      out = std::string_view(start, static_cast<std::size_t>(m_p - start));
      ++m_p;
      return true;
    }
    if (c == '\\') return decode(start, out);
    if (c < 0x20) return false;
    if (c < 0x80) {
      ++m_p;
      continue;
    }
    std::size_t length = utf8_length(m_p, m_end);
    if (length == 0) return false;
    m_p += length;
  }
  return false;
}

void JsonScanner::note_nonstandard(const char* start) {
  m_document.m_nonstandard.push_back(
      {static_cast<std::uint32_t>(start - m_begin), static_cast<std::uint32_t>(m_p - start)});
}

bool JsonScanner::named(JsonLiteral& out, std::string_view word, JsonNumber kind) {
  const char* start = m_p;
  if (!literal(word)) return false;
  out.text = std::string_view(start, word.size());
  out.integral = false;
  out.kind = kind;
  note_nonstandard(start);
  return true;
}

bool JsonScanner::hex4(std::uint32_t& code) {
  if (m_end - m_p < 4) return false;
  for (int i = 0; i < 4; ++i) {
    int digit = hex_value(*m_p++);
    if (digit < 0) return false;
    code = (code << 4) | static_cast<std::uint32_t>(digit);
  }
  return true;
}

// The rest of a string from its first escape, decoded into the arena. Decoding never makes a
// string longer, so the arena, as long as the text, never runs out.
bool JsonScanner::decode(const char* start, std::string_view& out) {
  if (m_arena_at == nullptr) {
    if (!m_document.m_arena)
      m_document.m_arena = std::make_unique<char[]>(static_cast<std::size_t>(m_end - m_begin));
    m_arena_at = m_document.m_arena.get();
  }
  char* first = m_arena_at;
  char* at = first;
  for (const char* p = start; p < m_p; ++p) *at++ = *p;
  while (m_p < m_end) {
    auto c = static_cast<unsigned char>(*m_p);
    if (c == '"') {
      ++m_p;
      out = std::string_view(first, static_cast<std::size_t>(at - first));
      m_arena_at = at;
      return true;
    }
    if (c < 0x20) return false;
    if (c >= 0x80) {
      std::size_t length = utf8_length(m_p, m_end);
      if (length == 0) return false;
      for (std::size_t i = 0; i < length; ++i) *at++ = *m_p++;
      continue;
    }
    if (c != '\\') {
      *at++ = *m_p++;
      continue;
    }
    if (++m_p == m_end) return false;
    char escape = *m_p++;
    switch (escape) {
    case '"': *at++ = '"'; break;
    case '\\': *at++ = '\\'; break;
    case '/': *at++ = '/'; break;
    case 'b': *at++ = '\b'; break;
    case 'f': *at++ = '\f'; break;
    case 'n': *at++ = '\n'; break;
    case 'r': *at++ = '\r'; break;
    case 't': *at++ = '\t'; break;
    case 'u': {
      std::uint32_t code = 0;
      if (!hex4(code)) return false;
      bool paired = false;
      if (code >= 0xD800 && code <= 0xDBFF && m_end - m_p >= 2 && m_p[0] == '\\' && m_p[1] == 'u') {
        const char* after_high = m_p;
        m_p += 2;
        std::uint32_t low = 0;
        paired = hex4(low) && low >= 0xDC00 && low <= 0xDFFF;
        if (paired)
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        else
          m_p = after_high; // the next escape is read on its own
      }
      if (!paired && code >= 0xD800 && code <= 0xDFFF) {
        // A lone surrogate (a high one not followed by a low one, or a low one alone) is no
        // character: it becomes U+FFFD, counted, instead of costing the whole response.
        code = 0xFFFD;
        ++m_document.m_lone_surrogates;
      }
      at = put_utf8(at, code);
      break;
    }
    default: return false;
    }
  }
  return false;
}

JsonDocument::~JsonDocument() {
  give_spare(m_nodes, t_spare_nodes);
  give_spare(m_children, t_spare_children);
}

bool JsonDocument::parse(std::string_view text, std::size_t max_depth, JsonValueReader* reader) {
  m_arena.reset();
  m_nonstandard.clear();
  m_lone_surrogates = 0;
  // Node indices and child offsets are 32-bit.
  if (text.size() >= JsonNode::k_no_parent) return false;
  JsonTapeBuilder builder(*this, text, max_depth, reader);
  return builder.run();
}

bool JsonDocument::parse_owned(std::string text, std::size_t max_depth) {
  m_owned_text = std::make_unique<std::string>(std::move(text));
  return parse(*m_owned_text, max_depth);
}

} // namespace llmrepro::probes::detail
