// Private to probes: a read-only JSON document for endpoint responses, parsed in one pass into a
// flat node array (a tape). Strings without escapes are views into the parsed text, decoded
// strings live in one arena per document, numbers stay text until a getter converts them, and
// object members keep document order. This replaces a node-per-value DOM on the hot path, where
// allocating and freeing nodes was most of the cost of reading a response.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace llmrepro::probes::detail {

enum class JsonType : std::uint8_t { null, boolean, number, string, array, object };

// What a number node's literal stands for. Strict JSON has finite numbers only; endpoints also
// write NaN, Infinity and -Infinity (Python's json.dumps does, by default) and literals past a
// double's range (1e400), which the parser accepts as values so that one of them does not cost
// the whole response.
enum class JsonNumber : std::uint8_t {
  finite,
  nan,               // NaN
  infinity,          // Infinity
  negative_infinity, // -Infinity
  overflow,          // a positive literal past a double's range (1e400)
  negative_overflow, // a negative one (-1e400)
};

// Where a literal outside strict JSON (NaN, Infinity, -Infinity, an overflowing number) lies
// in the parsed text, by byte offset.
struct JsonSpan {
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
};

// One value of a JsonDocument. Containers list their children in JsonDocument::children().
struct JsonNode {
  static constexpr std::uint32_t k_no_parent = 0xFFFFFFFFU;

  JsonType type = JsonType::null;
  // boolean: its value; number: true when the literal has no fraction and no exponent.
  bool flag = false;
  // number: what the literal stands for.
  JsonNumber number = JsonNumber::finite;
  // The value was read by the parse's JsonValueReader, not put on the tape: a container taken so
  // has no children here (count 0).
  bool taken = false;
  std::uint32_t parent = k_no_parent; // node index of the enclosing container
  std::uint32_t index = 0;            // position in the enclosing array
  std::uint32_t first = 0;            // containers: offset of the first child in children()
  std::uint32_t count = 0;            // containers: number of elements or (distinct) members
  std::string_view text;              // string: decoded value; number: the literal
  std::string_view key;               // member name when the parent is an object
};

class JsonDocument;
class JsonScanner;

// Reads one member's value straight from the text instead of the tape: a dialect's hot array
// (the tokens of a response) read into its own types, with no node per value. The tape builder
// asks it about every object member before putting the member's value on the tape.
class JsonValueReader {
public:
  virtual ~JsonValueReader() = default;
  // Whether the value of member `key` of object node `object` is the reader's. The document
  // holds the object and its ancestors (not yet their counts).
  virtual bool wants(const JsonDocument& document, std::uint32_t object, std::string_view key) = 0;
  // Reads the value at the scanner (whitespace before it skipped), nesting at most `depth_left`
  // containers, itself included. True takes the value: its node is marked taken. False declines
  // it, for any reason (a shape the reader does not know, malformed text): the scanner is rewound
  // and the value goes on the tape, where it is accepted or refused as any other.
  virtual bool read(JsonScanner& scanner, std::size_t depth_left) = 0;
};

// A parsed document. Node 0 is the root. Views into the parsed text: the text passed to
// parse() must outlive the document (a document made from a copy owns that copy).
class JsonDocument {
public:
  JsonDocument() = default;
  JsonDocument(JsonDocument&&) noexcept = default;
  JsonDocument& operator=(JsonDocument&&) noexcept = default;
  JsonDocument(const JsonDocument&) = delete;
  JsonDocument& operator=(const JsonDocument&) = delete;
  // Hands the node and child arrays to the next document parsed on this thread, so that
  // parsing one response after another allocates nothing in steady state.
  ~JsonDocument();

  // Parses `text` as strict RFC 8259 JSON (a leading UTF-8 byte-order mark is skipped; a lone
  // surrogate escape decodes as U+FFFD, counted in lone_surrogates()), with
  // string contents checked as well-formed UTF-8 and containers nested at most `max_depth` deep,
  // and beyond it the number values endpoints write that strict JSON lacks: NaN, Infinity,
  // -Infinity and literals whose value overflows a double (see JsonNumber). Duplicate member
  // names keep the first position and the last value. Returns false, leaving the document
  // unusable but for nonstandard_numbers(), on any input it does not accept: the caller then
  // decides how to report it.
  // `reader`, when given, may take member values off the tape (JsonValueReader).
  bool parse(std::string_view text, std::size_t max_depth, JsonValueReader* reader = nullptr);

  // Parses a copy of `text` that the document keeps; for text that does not outlive it.
  bool parse_owned(std::string text, std::size_t max_depth);

  const JsonNode& node(std::uint32_t index) const { return m_nodes[index]; }
  // Node index of the `i`-th child of container node `parent` (i < node(parent).count).
  std::uint32_t child(const JsonNode& parent, std::size_t i) const {
    return m_children[parent.first + i];
  }
  // The literals outside strict JSON the last parse() accepted, in text order: all of them
  // after a successful parse, those before the fault after a failed one.
  const std::vector<JsonSpan>& nonstandard_numbers() const { return m_nonstandard; }
  // The lone surrogate escapes (\ud800 without its low half, or a low half alone) the last
  // parse() decoded as U+FFFD instead of refusing the text.
  std::size_t lone_surrogates() const { return m_lone_surrogates; }

private:
  friend class JsonTapeBuilder;
  friend class JsonScanner;

  std::vector<JsonNode> m_nodes;
  std::vector<std::uint32_t> m_children;
  std::vector<JsonSpan> m_nonstandard;
  std::size_t m_lone_surrogates = 0;
  // Decoded strings; sized once to the text's length (decoding never grows a string), so views
  // into it stay valid. unique_ptr: views survive moving the document.
  std::unique_ptr<char[]> m_arena;
  std::unique_ptr<std::string> m_owned_text;
};

} // namespace llmrepro::probes::detail
