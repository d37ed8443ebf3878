#!/usr/bin/env bash
# The audit step of the GitHub action (action.yml at the repository root): maps the action's
# inputs, which arrive as INPUT_* environment variables, to one `llmrepro audit` command line (or,
# with INPUT_MERGE, to `llmrepro merge` and `llmrepro report`), appends the Markdown report to
# $GITHUB_STEP_SUMMARY and the verdict, headline, exit code and report paths to $GITHUB_OUTPUT
# when they are set, and exits with llmrepro's own code: 0 pass, 1 a gate failed, 2 bad input, 3 an
# audit that could not be judged (see docs/verdict.md "What the verdict means").
#
# Inputs are passed through the environment and never interpolated into a shell, and the
# space-separated ones (gates, args) are split into words without globbing or evaluation, so no
# input can run a command. The API key travels only as LLMREPRO_API_KEY, which llmrepro reads
# through --api-key-env; this script never prints it.
#
# LLMREPRO_ACTION_BINARY names the llmrepro to run (default: llmrepro on PATH, where the action
# installed its package); the tests point it at a build.
set -uo pipefail

binary=${LLMREPRO_ACTION_BINARY:-llmrepro}

# The judging flags `gates` may carry (docs/verdict.md "Gates"); anything else belongs in `args`.
gate_flags=(--fail-on --max-unique --max-unstable-rate --min-tara --max-logprob-drift
            --max-failed-rate --fragile-gap --fragile-window --fragile-p --compare-on)

usage_error() {
  echo "llmrepro action: $*" >&2
  write_outputs 2
  exit 2
}

# Appends name=value to $GITHUB_OUTPUT; values are single lines (paths, a verdict, a headline).
output() {
  [[ -n ${GITHUB_OUTPUT:-} ]] || return 0
  printf '%s=%s\n' "$1" "${2//$'\n'/ }" >>"$GITHUB_OUTPUT"
}

# Writes every output and the step summary for the exit code $1. The verdict and headline come
# from the JSON report when this run wrote one (read with python3, which GitHub's runners have);
# without one (bad input, an unreachable endpoint) the verdict follows the exit code and the
# headline says why.
write_outputs() {
  local code=$1 verdict="" headline=""
  if [[ -n ${INPUT_JSON:-} && -s ${INPUT_JSON:-} ]]; then
    { read -r verdict; read -r headline; } < <(python3 -c '
import json, sys
verdict = json.load(open(sys.argv[1], encoding="utf-8"))["summary"]["verdict"]
print(verdict["status"]); print(" ".join(verdict["headline"].split()))' "$INPUT_JSON" 2>/dev/null)
  fi
  if [[ -z $verdict ]]; then
    case $code in
      0) verdict=pass ;;
      1) verdict=fail ;;
      *) verdict=error ;;
    esac
    if [[ -n ${INPUT_JSON:-} && -s ${INPUT_JSON:-} ]]; then
      # Written, but not readable here (no python3 on this runner).
      headline="llmrepro exited $code; see $INPUT_JSON"
    else
      headline="llmrepro exited $code without a JSON report; see the step's log"
    fi
  fi
  output verdict "$verdict"
  output headline "$headline"
  output exit-code "$code"
  output database "${INPUT_DATABASE:-}"
  output json "${INPUT_JSON:-}"
  output html "${INPUT_HTML:-}"
  output junit "${INPUT_JUNIT:-}"
  output markdown "${INPUT_MARKDOWN:-}"
  if [[ -n ${GITHUB_STEP_SUMMARY:-} ]]; then
    if [[ -n ${INPUT_MARKDOWN:-} && -s ${INPUT_MARKDOWN:-} ]]; then
      cat "$INPUT_MARKDOWN" >>"$GITHUB_STEP_SUMMARY"
    else
      printf '## llmrepro\n\n%s (exit %s)\n' "$headline" "$code" >>"$GITHUB_STEP_SUMMARY"
    fi
  fi
}

reports=()
for format in json html junit markdown; do
  variable=INPUT_${format^^}
  path=${!variable:-}
  [[ -n $path ]] || continue
  # A report left by an earlier run must never be published as this run's.
  rm -f -- "$path"
  mkdir -p -- "$(dirname -- "$path")"
  reports+=("--$format" "$path")
done
# `read -a` splits on blanks and neither globs nor evaluates what it reads.
read -r -a gates <<<"${INPUT_GATES:-}"
# Each word is a judging flag followed by its value, or --flag=value: a stray word or another
# flag is refused before anything is sent.
expect_value=""
for word in "${gates[@]}"; do
  if [[ -n $expect_value ]]; then
    expect_value=""
    continue
  fi
  flag=${word%%=*}
  known=0
  for gate in "${gate_flags[@]}"; do [[ $flag == "$gate" ]] && known=1; done
  ((known)) || usage_error "input gates: '$word' is not a judging flag (${gate_flags[*]}); put other flags in args"
  [[ $word == *=* ]] || expect_value=$flag
done
[[ -z $expect_value ]] || usage_error "input gates: $expect_value needs a value"
read -r -a extra <<<"${INPUT_ARGS:-}"

[[ -n ${INPUT_DATABASE:-} ]] || usage_error "input database is empty: name the audit database to write"
mkdir -p -- "$(dirname -- "$INPUT_DATABASE")"

if [[ -n ${INPUT_MERGE:-} ]]; then
  # Merge and report: the plan was fixed by the shards, so plan inputs are refused here.
  for input in SUITE ENDPOINT API MODEL RUNS LEVELS SHARD ARGS; do
    variable=INPUT_$input
    [[ -z ${!variable:-} ]] ||
      usage_error "input ${input,,} cannot be combined with merge (the shards fixed the plan)"
  done
  read -r -a patterns <<<"$INPUT_MERGE"
  shards=()
  shopt -s nullglob
  for pattern in "${patterns[@]}"; do
    # shellcheck disable=SC2206 # a glob on purpose; read -a above left no blank in it
    matched=($pattern)
    ((${#matched[@]})) || usage_error "input merge: '$pattern' matches no shard database"
    shards+=("${matched[@]}")
  done
  shopt -u nullglob
  "$binary" merge "$INPUT_DATABASE" "${shards[@]}" --overwrite --quiet
  code=$?
  # 0, 1 and 3 all leave a merged database (3: shards are missing and it is partial); the
  # report below judges it. 2 (refused) and 70 leave none.
  if [[ $code == 0 || $code == 1 || $code == 3 ]]; then
    "$binary" report --db "$INPUT_DATABASE" "${reports[@]}" "${gates[@]}"
    code=$?
  fi
else
  [[ -n ${INPUT_SUITE:-} ]] || usage_error "input suite is empty: name the suite to audit (or give merge)"
  command=(audit --suite "$INPUT_SUITE")
  # Without an endpoint llmrepro audits its embedded reference engine (docs/audit.md "Endpoint").
  [[ -n ${INPUT_ENDPOINT:-} ]] && command+=(--endpoint "$INPUT_ENDPOINT")
  [[ -n ${INPUT_API:-} ]] && command+=(--api "$INPUT_API")
  [[ -n ${INPUT_MODEL:-} ]] && command+=(--model "$INPUT_MODEL")
  [[ -n ${INPUT_RUNS:-} ]] && command+=(--runs "$INPUT_RUNS")
  [[ -n ${INPUT_LEVELS:-} ]] && command+=(--concurrency "$INPUT_LEVELS")
  [[ -n ${INPUT_SHARD:-} ]] && command+=(--shard "$INPUT_SHARD")
  # A named key variable must hold a key (docs/security.md "Keys"): named only when one is given.
  [[ -n ${INPUT_API_KEY:-} ]] && command+=(--api-key-env LLMREPRO_API_KEY)
  command+=(--db "$INPUT_DATABASE" --overwrite)
  export LLMREPRO_API_KEY=${INPUT_API_KEY:-}
  unset INPUT_API_KEY
  "$binary" "${command[@]}" "${reports[@]}" "${gates[@]}" "${extra[@]}"
  code=$?
fi

write_outputs "$code"
exit "$code"
