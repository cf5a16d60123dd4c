#!/usr/bin/env bash
# The client's Apple-only code, which this Linux build cannot compile: parses it and checks it
# against the client's platform floor (iOS 15, macOS 12, tvOS 15, watchOS 8, visionOS 1).
#
#   scripts/check-client-floor.sh
#
# 1. `swiftc -parse` of every file of EntitledKit and of the sample's app (Examples/EntitledSample/App,
#    SwiftUI views that no package target builds): a syntax error fails here, not first in Xcode.
# 2. APIs newer than the floor may appear only behind an availability check: a line naming one
#    (comments aside) fails unless it or one of the three lines before it holds `#available(` or
#    `@available(`. On a Mac, `swift build --package-path Clients/EntitledKit` type-checks the
#    floor for real (the package's platforms are its deployment targets).
set -euo pipefail
cd "$(dirname "$0")/.."

files=(Clients/EntitledKit/Sources/EntitledKit/*.swift
       Examples/EntitledSample/App/*.swift)
status=0
for file in "${files[@]}"; do
  swiftc -parse "$file" || { echo "$file: does not parse" >&2; status=1; }
done

# Newer than the floor: Duration and clocks (iOS 16), Foundation's NSLock.withLock (iOS 16),
# AsyncStream.makeStream (Swift 5.9 runtime), Synchronization (iOS 18), Observation (iOS 17),
# AppTransaction (iOS 16), NavigationStack (iOS 16), Task.sleep(for:) (iOS 16).
w='[^A-Za-z0-9_]'  # a word boundary (mawk has no \b)
newer="(^|$w)(Duration|ContinuousClock|SuspendingClock|Mutex|AppTransaction|NavigationStack)(\$|$w)|[.]withLock(\$|$w)"
newer+="|makeStream|import (Synchronization|Observation)|@Observable(\$|$w)|Task[.]sleep[(]for:"

for file in "${files[@]}"; do
  awk -v pattern="$newer" -v file="$file" '
    { code = $0; sub(/\/\/.*/, "", code) }
    code ~ pattern {
      guarded = ($0 ~ /[#@]available\(/)
      for (back = 1; back <= 3; back++) if (previous[back] ~ /[#@]available\(/) guarded = 1
      if (!guarded) { printf "%s:%d: newer than the client floor, without an availability check: %s\n", file, NR, $0; bad = 1 }
    }
    { for (back = 3; back > 1; back--) previous[back] = previous[back - 1]; previous[1] = $0 }
    END { exit bad }
  ' "$file" >&2 || status=1
done
exit "$status"
