#!/usr/bin/env bash
# Fuzzes with libFuzzer for a bounded time: the JWS/JSON parsing path (Sources/FuzzJWS), the
# entitlement engine over arbitrary facts (Sources/FuzzEngine) and app receipts: DER, PKCS#7 and
# the receipt payload (Sources/FuzzReceipt).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   each target runs SECONDS (default 20); targets default
#                                           to FuzzJWS FuzzEngine FuzzReceipt
#   scripts/fuzz.sh --build-only [TARGET...] builds the targets and runs none (scripts/test builds
#                                           them niced beside the tests' build, runs them after it)
#
# Exits 0 when every run ends without a crash, non-zero otherwise (libFuzzer's status; a crashing
# input is written to .build/fuzz/artifacts/). Reproduce one with the plain build:
#   swift build --product FuzzEngine && .build/debug/FuzzEngine .build/fuzz/artifacts/crash-…
# Set FUZZ_ASAN=1 to add AddressSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

build_only=0
if [[ "${1:-}" == --build-only ]]; then build_only=1; fi
seconds="${1:-20}"
shift $(( $# > 0 ? 1 : 0 ))
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then targets=(FuzzJWS FuzzEngine FuzzReceipt); fi
scratch=.build/fuzz    # separate from .build so the normal build is not rebuilt with fuzzer flags
# One -sanitize= list: a second -sanitize= flag replaces the first instead of adding to it.
sanitizers=fuzzer
if [[ "${FUZZ_ASAN:-0}" == 1 ]]; then sanitizers=fuzzer,address; fi
flags=(-Xswiftc "-sanitize=$sanitizers" -Xswiftc -parse-as-library -Xswiftc -DFUZZING)

corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT

# Seeds for FuzzJWS: Apple's signed fixtures when present, plus a few shapes of our own.
seed_jws() {
    local fixtures=../shared/apple-fixtures/app-store-server-library-python/tests/resources
    for dir in "$fixtures/mock_signed_data" "$fixtures/xcode"; do
        if [[ -d "$dir" ]]; then cp "$dir"/* "$1"/ 2>/dev/null || true; fi
    done
    printf 'e30.e30.AA' > "$1/seed-empty-objects"
    printf 'eyJhbGciOiJFUzI1NiIsIng1YyI6WyJBQT09Il19.eyJkYXRhIjp7fX0.AA' > "$1/seed-x5c"
    printf '{"signedDate":1,"data":{"environment":"Sandbox"}}' > "$1/seed-json"
    printf '{"transactionId":"t\\u00e9","purchaseDate":1.5,"price":-0,"advancedCommerceInfo":{"a":[1,null,true]}}' > "$1/seed-payload"
}

# Seeds for FuzzEngine: byte strings its reader turns into a few facts (policy, now, then facts).
seed_engine() {
    printf '\x00\x00\x01\x00' > "$1/seed-empty"
    # A subscription with ordinary dates, its renewal info in retry and a failure notification.
    printf '\x00\x01\x01\x05\x01\x00\x00\x00\x01\x01\x01\x1e\x01\x01\x00\x01\x00\x00\x01\x01\x01\x01\x01\x1e\x01\x02\x00\x01\x1e\x00\x00\x01' > "$1/seed-retry"
    # Expiry and purchase at the ends of the range.
    printf '\x00\x00\x24\x00\x00\x00\x00\x00\x00\x01\x24\x01\x00\x01\x00\x00\x00\x00\x00' > "$1/seed-extremes"
}

# Seeds for FuzzReceipt: Apple's Xcode receipts (DER, BER indefinite lengths), the legacy
# transaction receipt (a plist), and small receipt-shaped payloads.
seed_receipt() {
    local fixtures=../shared/apple-fixtures/app-store-server-library-python/tests/resources
    for name in xcode-app-receipt-empty xcode-app-receipt-with-transaction; do
        if [[ -f "$fixtures/xcode/$name" ]]; then base64 -d < "$fixtures/xcode/$name" > "$1/$name" 2>/dev/null || true; fi
    done
    if [[ -f "$fixtures/mock_signed_data/legacyTransaction" ]]; then
        base64 -d < "$fixtures/mock_signed_data/legacyTransaction" > "$1/legacyTransaction" 2>/dev/null || true
    fi
    # SET { SEQUENCE { 2, 1, OCTET STRING { UTF8String "a" } } } and an in-app record with a date.
    printf '\x31\x0b\x30\x09\x02\x01\x02\x02\x01\x01\x04\x01\x0c' > "$1/seed-attribute"
    printf '\x31\x21\x30\x1f\x02\x02\x06\xa8\x02\x01\x01\x04\x16\x16\x14\x32\x30\x32\x33\x2d\x31\x30\x2d\x31\x39\x54\x30\x31\x3a\x34\x35\x3a\x33\x36\x5a' > "$1/seed-date"
}

mkdir -p "$scratch/artifacts"
# Swift's backtracer would take the trap's signal before libFuzzer, which then writes no crash input.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
for target in "${targets[@]}"; do
    swift build -c debug --scratch-path "$scratch" --product "$target" "${flags[@]}"
    if [[ $build_only == 1 ]]; then continue; fi
    rm -rf "${corpus:?}"/* && mkdir -p "$corpus/$target"
    case "$target" in
        FuzzJWS) seed_jws "$corpus/$target"; max_len=65536 ;;
        FuzzEngine) seed_engine "$corpus/$target"; max_len=4096 ;;
        FuzzReceipt) seed_receipt "$corpus/$target"; max_len=16384 ;;
        *) echo "fuzz.sh: unknown target $target" >&2; exit 2 ;;
    esac
    "$scratch/debug/$target" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
        -artifact_prefix="$scratch/artifacts/" -print_final_stats=1 "$corpus/$target"
done
