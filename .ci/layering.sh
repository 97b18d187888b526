#!/usr/bin/env bash
# The invariants of ARCHITECTURE.md that a dependency can break, checked on
# the crate graph (cargo tree) and, inside the library crate, on the paths
# its modules name. Prints one line per check; exits 1 on the first
# violation it reports. Run from the repository root.
set -euo pipefail

fail=0
say_fail() { echo "layering: FAIL: $*"; fail=1; }

# The normal (non-dev, non-build) dependency tree of a crate, one name a line.
tree() {
  cargo tree -p "$1" -e normal --prefix none --no-dedupe 2>/dev/null | sed 's/ .*//' | sort -u
}

# toolgate-core: what an embedder that only loads artifacts compiles.
core=$(tree toolgate-core)
n=$(cargo tree -p toolgate-core -e normal --prefix none --no-dedupe | sort -u | wc -l)
if [ "$n" -gt 16 ]; then
  say_fail "toolgate-core's tree has $n crates, more than 16:"$'\n'"$core"
else
  echo "layering: toolgate-core's tree has $n crates (at most 16)"
fi
for banned in pest pest_derive bumpalo clap url toml blake3 ed25519-dalek regex-syntax memmap2 arbitrary \
  toolgate toolgate-shell toolgate-testing; do
  if grep -qx "$banned" <<<"$core"; then
    say_fail "toolgate-core depends on \`$banned\`"
  fi
done

# toolgate-shell: usable on its own, over the runtime's traits only.
shell=$(tree toolgate-shell)
for banned in toolgate toolgate-testing pest bumpalo clap url toml blake3; do
  if grep -qx "$banned" <<<"$shell"; then
    say_fail "toolgate-shell depends on \`$banned\`"
  fi
done

# The library: no command-line, test-support or fuzzing crate in its tree.
lib=$(tree toolgate)
for banned in clap memmap2 arbitrary brush-parser criterion toolgate-testing toolgate-cli \
  toolgate-server tokio hyper axum notify; do
  if grep -qx "$banned" <<<"$lib"; then
    say_fail "toolgate (the library) depends on \`$banned\`"
  fi
done

# The decision service: a library over the façade and the HTTP stack. It
# decides with the compiled engines only (no reference evaluator), reads no
# command line, and no library below it knows it exists.
server=$(tree toolgate-server)
for banned in toolgate-reference toolgate-testing toolgate-cli clap memmap2 arbitrary; do
  if grep -qx "$banned" <<<"$server"; then
    say_fail "toolgate-server depends on \`$banned\`"
  fi
done
for needed in toolgate tokio axum hyper arc-swap notify prometheus-client tonic envoy-types; do
  if ! grep -qx "$needed" <<<"$server"; then
    say_fail "toolgate-server no longer depends on \`$needed\`: update ARCHITECTURE.md's crate table"
  fi
done
for c in toolgate-core toolgate-shell toolgate toolgate-reference; do
  if cargo tree -q -p "$c" -e normal --prefix none 2>/dev/null | grep -q '^toolgate-server '; then
    say_fail "$c depends on toolgate-server"
  fi
done
echo "layering: toolgate-server sits above the library, beside no reference evaluator"

# The Redis store: the trait's implementation over the redis client, and
# nothing above it; only the server (and the command line through it)
# depends on it, so the library and the references never reach Redis.
redis_tree=$(tree toolgate-redis)
for banned in toolgate-server toolgate-cli toolgate-reference toolgate-testing tokio axum hyper clap; do
  if grep -qx "$banned" <<<"$redis_tree"; then
    say_fail "toolgate-redis depends on \`$banned\`"
  fi
done
for needed in toolgate redis; do
  if ! grep -qx "$needed" <<<"$redis_tree"; then
    say_fail "toolgate-redis no longer depends on \`$needed\`: update ARCHITECTURE.md's crate table"
  fi
done
for c in toolgate-core toolgate-shell toolgate toolgate-reference; do
  if cargo tree -q -p "$c" -e normal --prefix none 2>/dev/null | grep -qE '^(toolgate-redis|redis) '; then
    say_fail "$c depends on toolgate-redis or redis"
  fi
done
echo "layering: toolgate-redis sits on the library's state trait, below the server"

# The heavy front-end dependencies are optional: without its default
# features the library builds with no URL parser and no ICU tables.
lean=$(cargo tree -p toolgate -e normal --no-default-features --prefix none --no-dedupe 2>/dev/null | sed 's/ .*//' | sort -u)
for banned in url idna icu_normalizer; do
  if grep -qx "$banned" <<<"$lean"; then
    say_fail "toolgate without default features still depends on \`$banned\`"
  fi
done
if ! cargo check -q -p toolgate --no-default-features 2>/dev/null; then
  say_fail "toolgate does not build without its default features (cargo check -p toolgate --no-default-features)"
else
  echo "layering: toolgate builds without default features, with no url, idna or ICU tables"
fi

# The reference evaluators share no matching code with the compiler or the
# runtime: outside their test modules they name no walker, compiler,
# built-in kind, production glob or compiled guard scanner. They are a crate of their own above
# `toolgate`, so only the paths they name need checking (the harness in
# `conformance` builds every engine, and may).
refs=(crates/toolgate-reference/src/lib.rs crates/toolgate-reference/src/decide.rs
  crates/toolgate-reference/src/grants.rs crates/toolgate-reference/src/kinds.rs
  crates/toolgate-reference/src/explain.rs crates/toolgate-reference/src/rubric.rs
  crates/toolgate-reference/src/authensor.rs crates/toolgate-reference/src/guards.rs)
# (Doc comments may show a caller building one from the built-in registry.)
if hits=$(grep -nE '(crate|toolgate|toolgate_core)::(runtime|compile|builtins|kinds|glob|conditions::(eval|compile)|guards::(scanner|Scanner|Stream|Guards|GuardStream))\b' "${refs[@]}" \
  | grep -vE '^[^:]+:[0-9]+:\s*//'); then
  say_fail "a reference evaluator names the engine's matching code:"$'\n'"$hits"
else
  echo "layering: the reference evaluators name no walker, compiler, built-in kind or production glob"
fi

# Production code never calls the reference evaluators: the library crates
# cannot (none of them depends on toolgate-reference), and the command line
# builds a reference only as an engine a user asked for, never to answer a
# matching question of its own.
for c in toolgate-core toolgate-shell toolgate; do
  if cargo tree -q -p "$c" -e normal --prefix none 2>/dev/null | grep -q '^toolgate-reference '; then
    say_fail "$c depends on toolgate-reference"
  fi
done
if hits=$(grep -nE 'toolgate_reference::([a-z_]+::)*[a-z_]+\(' crates/toolgate-cli/src/*.rs \
  | grep -v 'toolgate_reference::conformance::' | grep -vE '^[^:]+:[0-9]+:\s*//'); then
  say_fail "the command line calls a reference evaluator's matching:"$'\n'"$hits"
fi

# The Python package: a binding over the façade, nothing else of ours. Its
# direct dependencies are toolgate, pyo3 and serde_json, and no crate
# depends on it.
py_direct=$(cargo tree -p toolgate-py -e normal --depth 1 --prefix none 2>/dev/null | sed 1d | sed 's/ .*//' | sort -u)
for d in $py_direct; do
  case "$d" in
    toolgate | pyo3 | serde_json) ;;
    *) say_fail "toolgate-py depends on \`$d\`; it may depend on toolgate, pyo3 and serde_json only" ;;
  esac
done
for c in toolgate-core toolgate-shell toolgate toolgate-reference toolgate-server toolgate-cli toolgate-testing; do
  if cargo tree -q -p "$c" -e normal --prefix none 2>/dev/null | grep -q '^toolgate-py '; then
    say_fail "$c depends on toolgate-py"
  fi
done
echo "layering: toolgate-py depends on toolgate, pyo3 and serde_json only"

[ "$fail" = 0 ] && echo "layering: ok"
exit "$fail"
