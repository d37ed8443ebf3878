#!/usr/bin/python3
"""The comparison client: what users write today. An asyncio + aiohttp loop that keeps
`concurrency` chat requests in flight, parses each JSON response, and stores the request and its
tokens (with top-2 candidates) in SQLite, one transaction per request, like `llmrepro audit`.

    python_client.py URL DB CONCURRENCY REQUESTS

Prints "requests=<n> seconds=<s>" when every request has been stored."""
import asyncio
import sqlite3
import sys
import time

import aiohttp

SCHEMA = """
CREATE TABLE requests (id INTEGER PRIMARY KEY, prompt_index INTEGER NOT NULL,
  repeat INTEGER NOT NULL, ok INTEGER NOT NULL, http_status INTEGER NOT NULL,
  text TEXT NOT NULL, finish_reason TEXT NOT NULL, model TEXT NOT NULL,
  completion_tokens INTEGER NOT NULL);
CREATE TABLE tokens (request_id INTEGER NOT NULL, position INTEGER NOT NULL, token TEXT NOT NULL,
  logprob REAL, c1_token TEXT, c1_logprob REAL, c2_token TEXT, c2_logprob REAL,
  PRIMARY KEY (request_id, position)) WITHOUT ROWID;
"""


async def main(url, db_path, concurrency, total):
    db = sqlite3.connect(db_path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    body = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 256, "temperature": 0, "logprobs": True, "top_logprobs": 2, "seed": 0}
    queue = asyncio.Queue()
    for i in range(total):
        queue.put_nowait(i)

    def store(index, status, data):
        choice = data["choices"][0]
        content = choice["logprobs"]["content"]
        db.execute("BEGIN IMMEDIATE")
        cursor = db.execute(
            "INSERT INTO requests (prompt_index, repeat, ok, http_status, text, finish_reason,"
            " model, completion_tokens) VALUES (?,?,?,?,?,?,?,?)",
            (index, 0, 1, status, choice["message"]["content"], choice["finish_reason"],
             data.get("model", ""), len(content)))
        request_id = cursor.lastrowid
        rows = []
        for position, entry in enumerate(content):
            top = sorted(entry["top_logprobs"], key=lambda c: -c["logprob"])
            rows.append((request_id, position, entry["token"], entry["logprob"],
                         top[0]["token"], top[0]["logprob"], top[1]["token"], top[1]["logprob"]))
        db.executemany("INSERT INTO tokens VALUES (?,?,?,?,?,?,?,?)", rows)
        db.execute("COMMIT")

    async def worker(session):
        while True:
            try:
                index = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            async with session.post(url, json=body) as response:
                store(index, response.status, await response.json())

    connector = aiohttp.TCPConnector(limit=concurrency)
    start = time.monotonic()
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    seconds = time.monotonic() - start
    stored = db.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
    if stored != total:
        sys.exit(f"python_client: stored {stored} of {total}")
    print(f"requests={stored} seconds={seconds:.3f}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
