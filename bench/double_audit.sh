# shellcheck shell=bash
# Growing a recorded audit in SQL, sourced (bash, from the repository root) by bench/lib.sh and
# bench/analysis_audits.sh: double DB (twice the prompts) and double_runs DB (twice the runs).

# The requests columns after `id` (schema version 2 and later), copied as they are by double()
# and double_runs().
bench_columns="endpoint_index, prompt_index, concurrency, probe, repeat, ok, http_status, error,
  attempts, started_ms, finished_ms, text, has_logprobs, finish_reason, system_fingerprint, model,
  completion_tokens, numbers_nan, numbers_infinity, numbers_negative_infinity, numbers_overflow,
  numbers_null, reasoning_text, reasoning_split, usage_prompt_tokens, usage_reasoning_tokens"

# Twice the prompts: prompts, requests and their packed tokens copied under new ids (the token
# texts are the audit's, so the copies name the same ids).
double() { # db
  sqlite3 "$1" <<SQL
BEGIN;
CREATE TEMP TABLE k AS SELECT (SELECT MAX(idx) + 1 FROM prompts) AS p, (SELECT MAX(id) FROM requests) AS r;
INSERT INTO prompts SELECT idx + (SELECT p FROM k), id || '-' || (SELECT p FROM k), text, messages,
  max_tokens, tags, expect, extract, response_format, source_line FROM prompts;
INSERT INTO requests (id, $bench_columns) SELECT id + (SELECT r FROM k),
  ${bench_columns/prompt_index/prompt_index + (SELECT p FROM k)} FROM requests;
INSERT INTO packed_tokens SELECT request_id + (SELECT r FROM k), answer, reasoning FROM packed_tokens;
COMMIT;
SQL
}

# The same prompts run twice as often: every request copied under new repeat numbers.
double_runs() { # db
  sqlite3 "$1" <<SQL
BEGIN;
CREATE TEMP TABLE k AS SELECT (SELECT MAX(repeat) + 1 FROM requests) AS n, (SELECT MAX(id) FROM requests) AS r;
INSERT INTO requests (id, $bench_columns) SELECT id + (SELECT r FROM k),
  ${bench_columns/repeat,/repeat + (SELECT n FROM k),} FROM requests;
INSERT INTO packed_tokens SELECT request_id + (SELECT r FROM k), answer, reasoning FROM packed_tokens;
UPDATE audit SET config = json_set(config, '\$.runs', json_extract(config, '\$.runs') * 2);
COMMIT;
SQL
}
