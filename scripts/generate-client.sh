#!/usr/bin/env bash
# Regenerates the Swift client's code from openapi.yaml (make client-generate) and records which
# openapi.yaml it was made from; scripts/check-client-generated.sh (in make test) compares the two.
# The generator is built in a package of its own (clients/swift/Generator): no other build compiles it.
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
out=clients/swift/Sources/BrowserdClient/Generated
$swift build --package-path clients/swift/Generator --scratch-path .build-generator --product swift-openapi-generator
generator=$($swift build --package-path clients/swift/Generator --scratch-path .build-generator --show-bin-path)/swift-openapi-generator
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$generator" generate --config clients/swift/openapi-generator-config.yaml --output-directory "$tmp" openapi.yaml
rm -f "$out"/*.swift
for file in "$tmp"/*.swift; do
  [ -s "$file" ] || continue   # Server.swift: empty (types and client only)
  { echo "// swift-format-ignore-file"; cat "$file"; } > "$out/$(basename "$file")"
done
sha256sum openapi.yaml | cut -d' ' -f1 > "$out/openapi.sha256"
echo "generated $(ls "$out"/*.swift | wc -l) files into $out from openapi.yaml ($(cat "$out/openapi.sha256"))"
