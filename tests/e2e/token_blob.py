"""A decoder of the audit database's packed tokens (schema version 2), written from the format in
docs/design.md ("Token blobs") so that the tests read the file as any other program would."""

import sqlite3
import struct

BLOB_VERSION = 1


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


def _value(blob, at):
    tag = blob[at]
    at += 1
    if tag == 0:
        return None, at
    if tag == 1:
        return float("inf"), at
    if tag == 2:
        return float("-inf"), at
    if tag == 3:
        return struct.unpack_from("<d", blob, at)[0], at + 8
    if tag == 4:
        return struct.unpack_from("<f", blob, at)[0], at + 4
    if tag in (5, 6):
        mantissa, at = _varint(blob, at)
        exponent = struct.unpack_from("<b", blob, at)[0]
        sign = "-" if tag == 5 else ""
        return float(f"{sign}{mantissa}e{exponent}"), at + 1
    raise ValueError(f"unknown log probability tag {tag}")


def decode(blob, texts):
    """The tokens packed in `blob` (bytes; None or empty: no tokens), their texts from `texts`
    (id -> bytes)."""
    if not blob:
        return []
    if blob[0] != BLOB_VERSION:
        raise ValueError(f"token blob version {blob[0]}")
    count, at = _varint(blob, 1)
    tokens = []
    for _ in range(count):
        text_id, at = _varint(blob, at)
        logprob, at = _value(blob, at)
        header, at = _varint(blob, at)
        top = [(texts[text_id], logprob)] if header & 1 else []
        for _ in range((header >> 1) - len(top)):
            candidate_id, at = _varint(blob, at)
            candidate_logprob, at = _value(blob, at)
            top.append((texts[candidate_id], candidate_logprob))
        tokens.append(Token(texts[text_id], logprob, top))
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


def downgrade_to_version_1(path):
    """Rewrites the version 2 audit database at `path` as schema version 1 stored it (a row per
    token, candidates 1 and 2 in columns, the rest as JSON), the fixture for the upgrade: no old
    build is needed. Returns the number of token rows written."""
    import json
    db = sqlite3.connect(path)
    rows = 0
    with db:
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
