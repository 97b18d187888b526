#!/usr/bin/env bash
# Runs every fuzz target for a time budget, one target at a time, on the
# nightly toolchain, and prints one summary line per target:
#
#   fuzz <target>: <N> executions in <S> s (<R>/s), cov <C>, ft <F>, corpus <K>, crashes <X>
#
# A crash is minimised into fuzz/artifacts/<target>/ (minimized-from-*); the
# script exits 1 when any target crashed, 0 otherwise.
#
# Environment:
#   FUZZ_SECONDS    seconds per target (default 30)
#   FUZZ_TARGETS    targets to run (default: all)
#   FUZZ_SANITIZER  cargo fuzz's sanitizer (default none: the crate has no
#                   unsafe code, and without ASan a target runs 2-3x faster;
#                   `address` to check the dependencies' unsafe code too)
#   FUZZ_RSS_MB     libFuzzer's memory limit per input (default 2048)
#   FUZZ_TIMEOUT    libFuzzer's time limit per input, seconds (default 10)
#   FUZZ_REPLAY     targets that only run their corpus and seeds once, with no
#                   search (default none): a regression check whose outcome
#                   does not depend on what a short search happens to find
set -euo pipefail

# The whole script is one function, read before it runs: editing the file
# during a long run cannot change what the run does.
main() {
  cd "$(dirname "$0")"

  seconds=${FUZZ_SECONDS:-30}
  sanitizer=${FUZZ_SANITIZER:-none}
  rss=${FUZZ_RSS_MB:-2048}
  per_input=${FUZZ_TIMEOUT:-10}

  # The nightly toolchain and cargo-fuzz, installed when missing.
  if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
  fi
  if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
  fi

  features=(--features artifact)
  if [ -n "${FUZZ_TARGETS:-}" ]; then
    read -r -a targets <<<"$FUZZ_TARGETS"
  else
    targets=(parse matchers decide policy_json artifact artifact_semantic hook rubric rubric_scan shell authensor reach strategies claude_kinds guards serve_intake state intake)
  fi

  if command -v python3 >/dev/null 2>&1; then
    python3 seeds.py >/dev/null
  else
    echo "fuzz: python3 is missing; running without the seed corpora" >&2
  fi
  mkdir -p logs
  flags=(-s "$sanitizer" --debug-assertions "${features[@]}")
  if [ -n "${FUZZ_TARGETS:-}" ]; then
    # Only the targets asked for: a full build links every target.
    for t in "${targets[@]}"; do
      cargo +nightly fuzz build "${flags[@]}" "$t"
    done
  else
    cargo +nightly fuzz build "${flags[@]}"
  fi

  # The inputs libFuzzer left for a target: crashes, out-of-memory, time-outs.
  list_findings() {
    find "artifacts/$1" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' \) | sort
  }

  failed=0
  summaries=()
  for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t" "seeds/$t"
    log="logs/$t.log"
    before=$(list_findings "$t")
    start=$(date +%s)
    set +e
    budget=(-max_total_time="$seconds")
    if [[ " ${FUZZ_REPLAY:-} " == *" $t "* ]]; then
      budget=(-runs=0)
    fi
    cargo +nightly fuzz run "${flags[@]}" "$t" "corpus/$t" "seeds/$t" -- \
      "${budget[@]}" -dict=dict/rules.dict -timeout="$per_input" \
      -rss_limit_mb="$rss" -malloc_limit_mb="$rss" \
      -print_final_stats=1 >"$log" 2>&1
    status=$?
    set -e
    took=$(($(date +%s) - start))
    new=$(comm -13 <(printf '%s\n' "$before") <(list_findings "$t") | grep . || true)
    n_crashes=$(grep -c . <<<"$new" || true)
    if [ "$status" != 0 ] && [ "$n_crashes" = 0 ]; then
      # The target failed without leaving an input (a build or run error).
      n_crashes=1
      echo "fuzz $t: exited with $status; see fuzz/$log" >&2
    fi
    if [ "$n_crashes" != 0 ]; then
      failed=1
      while IFS= read -r f; do
        [ -n "$f" ] || continue
        case "$(basename "$f")" in crash-*)
          cargo +nightly fuzz tmin "${flags[@]}" "$t" "$f" -- -runs=20000 >"logs/$t.tmin.log" 2>&1 || true
          small=$(sed -n 's/.*failed to minimize beyond \([^ ]*\).*/\1/p' "logs/$t.tmin.log" | tail -n 1)
          echo "fuzz $t: crash $f, minimised: ${small:-see fuzz/logs/$t.tmin.log}" >&2 ;;
        esac
      done <<<"$new"
    fi
    execs=$(grep -a 'stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
    rate=$(grep -a 'stat::average_exec_per_sec' "$log" | awk '{s += $2} END {print s + 0}')
    last=$(grep -a -E '^#[0-9]+.*cov: ' "$log" | tail -n 1 || true)
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(find "corpus/$t" -type f | wc -l)
    summaries+=("fuzz $t: ${execs} executions in ${took} s (${rate}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp}, crashes ${n_crashes}")
    echo "${summaries[-1]}"
  done

  echo "---"
  printf '%s\n' "${summaries[@]}"
  exit "$failed"
}

main "$@"
