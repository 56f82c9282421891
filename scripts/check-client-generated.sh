#!/usr/bin/env bash
# Fails when openapi.yaml changed since the Swift client's code was generated from it.
set -euo pipefail
cd "$(dirname "$0")/.."
recorded=$(cat clients/swift/Sources/BrowserdClient/Generated/openapi.sha256)
actual=$(sha256sum openapi.yaml | cut -d' ' -f1)
if [ "$recorded" != "$actual" ]; then
  echo "openapi.yaml changed since the Swift client was generated from it: run make client-generate and commit the result" >&2
  exit 1
fi
echo "the Swift client's generated code matches openapi.yaml"
