#!/usr/bin/env bash
# Fuzzes the JWS/JSON parsing path (Sources/FuzzJWS) with libFuzzer for a bounded time.
#
#   scripts/fuzz.sh [SECONDS]        default 20 seconds
#
# Exits 0 when the run ends without a crash, non-zero otherwise (libFuzzer's status; a crashing
# input is written to .build/fuzz/artifacts/). Reproduce one with the plain build:
#   swift build --product FuzzJWS && .build/debug/FuzzJWS .build/fuzz/artifacts/crash-…
# Set FUZZ_ASAN=1 to add AddressSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-20}"
scratch=.build/fuzz    # separate from .build so the normal build is not rebuilt with fuzzer flags
# One -sanitize= list: a second -sanitize= flag replaces the first instead of adding to it.
sanitizers=fuzzer
if [[ "${FUZZ_ASAN:-0}" == 1 ]]; then sanitizers=fuzzer,address; fi
flags=(-Xswiftc "-sanitize=$sanitizers" -Xswiftc -parse-as-library -Xswiftc -DFUZZING)

swift build -c debug --scratch-path "$scratch" --product FuzzJWS "${flags[@]}"

corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
# Seeds: Apple's signed fixtures when present, plus a few shapes of our own.
fixtures=../shared/apple-fixtures/app-store-server-library-python/tests/resources
for dir in "$fixtures/mock_signed_data" "$fixtures/xcode"; do
    if [[ -d "$dir" ]]; then cp "$dir"/* "$corpus"/ 2>/dev/null || true; fi
done
printf 'e30.e30.AA' > "$corpus/seed-empty-objects"
printf 'eyJhbGciOiJFUzI1NiIsIng1YyI6WyJBQT09Il19.eyJkYXRhIjp7fX0.AA' > "$corpus/seed-x5c"
printf '{"signedDate":1,"data":{"environment":"Sandbox"}}' > "$corpus/seed-json"
printf '{"transactionId":"t\\u00e9","purchaseDate":1.5,"price":-0,"advancedCommerceInfo":{"a":[1,null,true]}}' > "$corpus/seed-payload"

mkdir -p "$scratch/artifacts"
"$scratch/debug/FuzzJWS" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
    -artifact_prefix="$scratch/artifacts/" -print_final_stats=1 "$corpus"
