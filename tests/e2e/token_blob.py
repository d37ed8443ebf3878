"""A decoder of the audit database's packed tokens (token blob versions 1 and 2, schema versions 2
and 3), written from the format in docs/design.md ("Token blobs") so that the tests read the file
as any other program would; and the fixtures that rewrite a database as older schema versions
stored it."""

import sqlite3
import struct

BLOB_VERSION = 2

# The value forms a version 2 blob names for its regular tokens.
FORM_TAGGED, FORM_BINARY32, FORM_DECIMAL, FORM_BINARY64 = range(4)


class Token:
    """One generated token: its text (bytes), log probability (None when unknown) and candidates
    as (text, logprob) pairs, highest first."""

    def __init__(self, text, logprob, top):
        self.text = text
        self.logprob = logprob
        self.top = top


def _varint(blob, at):
    value, shift = 0, 0
    while True:
        byte = blob[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _binary32(blob, at):
    value = struct.unpack_from("<f", blob, at)[0]
    return (None if value != value else value), at + 4


def _binary64(blob, at):
    value = struct.unpack_from("<d", blob, at)[0]
    return (None if value != value else value), at + 8


def _decimal(blob, at, sign):
    mantissa, at = _varint(blob, at)
    exponent = struct.unpack_from("<b", blob, at)[0]
    return float(f"{sign}{mantissa}e{exponent}"), at + 1


def _tagged(blob, at):
    tag = blob[at]
    at += 1
    if tag == 0:
        return None, at
    if tag == 1:
        return float("inf"), at
    if tag == 2:
        return float("-inf"), at
    if tag == 3:
        return _binary64(blob, at)
    if tag == 4:
        return _binary32(blob, at)
    if tag in (5, 6):
        return _decimal(blob, at, "-" if tag == 5 else "")
    raise ValueError(f"unknown log probability tag {tag}")


def _in_form(blob, at, form):
    if form == FORM_TAGGED:
        return _tagged(blob, at)
    if form == FORM_BINARY32:
        return _binary32(blob, at)
    if form == FORM_DECIMAL:
        return _decimal(blob, at, "-")
    if form == FORM_BINARY64:
        return _binary64(blob, at)
    raise ValueError(f"unknown log probability form {form}")


def _shaped(blob, at, texts, text, logprob):
    """A token's candidates after its explicit shape (every version 1 token, an irregular version 2
    one): the count shifted left once, the low bit set when candidate 1 is the token itself."""
    shape, at = _varint(blob, at)
    top = [(text, logprob)] if shape & 1 else []
    for _ in range((shape >> 1) - len(top)):
        candidate_id, at = _varint(blob, at)
        candidate_logprob, at = _tagged(blob, at)
        top.append((texts[candidate_id], candidate_logprob))
    return top, at


def decode(blob, texts):
    """The tokens packed in `blob` (bytes; None or empty: no tokens), their texts from `texts`
    (id -> bytes)."""
    if not blob:
        return []
    version = blob[0]
    if version not in (1, 2):
        raise ValueError(f"token blob version {version}")
    count, at = _varint(blob, 1)
    usual, form = 0, FORM_TAGGED
    if version == 2 and count:
        usual, at = _varint(blob, at)
        form = blob[at]
        at += 1
    tokens = []
    for _ in range(count):
        head, at = _varint(blob, at)
        if version == 1:
            text = texts[head]
            logprob, at = _tagged(blob, at)
            top, at = _shaped(blob, at, texts, text, logprob)
        elif head & 1:
            text = texts[head >> 1]
            logprob, at = _tagged(blob, at)
            top, at = _shaped(blob, at, texts, text, logprob)
        else:
            text = texts[head >> 1]
            logprob, at = _in_form(blob, at, form)
            top = [(text, logprob)] if usual else []
            for _ in range(usual - 1):
                candidate_id, at = _varint(blob, at)
                candidate_logprob, at = _in_form(blob, at, form)
                top.append((texts[candidate_id], candidate_logprob))
        tokens.append(Token(text, logprob, top))
    if at != len(blob):
        raise ValueError(f"{len(blob) - at} bytes after the last token")
    return tokens


def texts_of(conn):
    """The audit's token texts, id -> bytes."""
    return {row[0]: bytes(row[1]) for row in conn.execute("SELECT id, text FROM token_texts")}


def tokens_by_request(conn, column="answer"):
    """request id -> its decoded tokens, for every request with a packed_tokens row; `column` is
    "answer" or "reasoning"."""
    assert column in ("answer", "reasoning")
    texts = texts_of(conn)
    return {request_id: decode(blob, texts) for request_id, blob in
            conn.execute(f"SELECT request_id, {column} FROM packed_tokens")}


def request_texts(conn, column="text"):
    """request id -> its completion text ("text") or reasoning ("reasoning_text") as a str, read
    back from its tokens where the row stores NULL (schema version 3)."""
    assert column in ("text", "reasoning_text")
    tokens = tokens_by_request(conn, "answer" if column == "text" else "reasoning")
    texts = {}
    for request_id, text in conn.execute(f"SELECT id, {column} FROM requests"):
        if text is None:
            text = b"".join(token.text for token in tokens.get(request_id, [])).decode("utf-8")
        texts[request_id] = text
    return texts


def token_count(conn, column="answer"):
    """How many tokens the database holds (the answers', or the reasoning's)."""
    return sum(len(tokens) for tokens in tokens_by_request(conn, column).values())


def stored_count(conn, column="answer"):
    """token_count() from each blob's count alone, without decoding the tokens: for the
    benchmark's millions of tokens."""
    assert column in ("answer", "reasoning")
    total = 0
    for (blob,) in conn.execute(f"SELECT {column} FROM packed_tokens WHERE {column} IS NOT NULL"):
        total += _varint(blob, 1)[0]
    return total


VERSION_1_TOKEN_TABLES = """
CREATE TABLE tokens (
  request_id INTEGER NOT NULL, position INTEGER NOT NULL, token TEXT NOT NULL, logprob REAL,
  c1_token TEXT, c1_logprob REAL, c2_token TEXT, c2_logprob REAL, more TEXT,
  PRIMARY KEY (request_id, position)) WITHOUT ROWID;
CREATE TABLE reasoning_tokens (
  request_id INTEGER NOT NULL, position INTEGER NOT NULL, token TEXT NOT NULL, logprob REAL,
  c1_token TEXT, c1_logprob REAL, c2_token TEXT, c2_logprob REAL, more TEXT,
  PRIMARY KEY (request_id, position)) WITHOUT ROWID;
"""


def _restore_request_texts(db):
    """Rebuilds `requests` as versions 1 and 2 defined it, every text stored (NOT NULL): version
    3's NULL texts filled in from their tokens."""
    texts = request_texts(db)
    reasoning = request_texts(db, "reasoning_text")
    (create,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'requests'").fetchone()
    old = (create.replace("text TEXT,", "text TEXT NOT NULL,")
           .replace("reasoning_text TEXT DEFAULT ''", "reasoning_text TEXT NOT NULL DEFAULT ''"))
    assert old.count("NOT NULL") == create.count("NOT NULL") + 2, create
    db.execute("ALTER TABLE requests RENAME TO requests_version_3")
    db.execute(old)
    columns = [row[1] for row in db.execute("PRAGMA table_info(requests)")]
    names = ", ".join(columns)
    values = ", ".join("coalesce(text, '')" if name in ("text", "reasoning_text") else name
                       for name in columns)
    db.execute(f"INSERT INTO requests ({names}) SELECT {values} FROM requests_version_3")
    db.execute("DROP TABLE requests_version_3")
    db.executemany("UPDATE requests SET text = ?, reasoning_text = ? WHERE id = ?",
                   [(texts[i], reasoning[i], i) for i in texts])


def _encode_version_1(tokens, ids):
    """`tokens` as token blob version 1 may hold them: every known value as its binary64 (tag 3),
    which version 1 reads as any other of its forms."""
    def varint(value):
        out = bytearray()
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)
        return bytes(out)

    def value(logprob):
        if logprob is None:
            return b"\x00"
        return b"\x03" + struct.pack("<d", logprob)

    out = bytearray([1]) + varint(len(tokens))
    for token in tokens:
        # The same text and the same stored value, bit for bit (-0.0 is not 0.0).
        first_same = bool(token.top) and token.top[0][0] == token.text and \
            value(token.top[0][1]) == value(token.logprob)
        out += varint(ids[token.text]) + value(token.logprob)
        out += varint(len(token.top) << 1 | first_same)
        for text, logprob in token.top[1 if first_same else 0:]:
            out += varint(ids[text]) + value(logprob)
    return bytes(out)


def downgrade_to_version_2(path):
    """Rewrites the current audit database at `path` as schema version 2 stored it (every text in
    `requests`, every blob in version 1), the fixture for the upgrade from it: no old build is
    needed. Returns the number of tokens, answers' and reasoning's."""
    db = sqlite3.connect(path)
    tokens = 0
    with db:
        _restore_request_texts(db)
        ids = {text: text_id for text_id, text in texts_of(db).items()}
        for column in ("answer", "reasoning"):
            for request_id, listed in tokens_by_request(db, column).items():
                blob = _encode_version_1(listed, ids) if listed else None
                db.execute(f"UPDATE packed_tokens SET {column} = ? WHERE request_id = ?",
                           (blob, request_id))
                tokens += len(listed)
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.close()
    return tokens


def downgrade_to_version_1(path):
    """Rewrites the current audit database at `path` as schema version 1 stored it (a row per
    token, candidates 1 and 2 in columns, the rest as JSON; every text in `requests`), the fixture
    for the upgrade: no old build is needed. Returns the number of token rows written."""
    import json
    db = sqlite3.connect(path)
    rows = 0
    with db:
        _restore_request_texts(db)
        db.executescript(VERSION_1_TOKEN_TABLES)
        for table, column in (("tokens", "answer"), ("reasoning_tokens", "reasoning")):
            for request_id, tokens in tokens_by_request(db, column).items():
                for position, token in enumerate(tokens):
                    top = [(text.decode("utf-8"), lp) for text, lp in token.top]
                    c1 = top[0] if len(top) > 0 else (None, None)
                    c2 = top[1] if len(top) > 1 else (None, None)
                    more = json.dumps([list(c) for c in top[2:]]) if len(top) > 2 else None
                    db.execute(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               (request_id, position, token.text.decode("utf-8"), token.logprob,
                                *c1, *c2, more))
                    rows += 1
        db.executescript("DROP TABLE packed_tokens; DROP TABLE token_texts; "
                         "UPDATE meta SET value = '1' WHERE key = 'schema_version';")
    db.close()
    return rows


if __name__ == "__main__":
    import sys
    with sqlite3.connect(sys.argv[1]) as db:
        print(token_count(db), token_count(db, "reasoning"))
