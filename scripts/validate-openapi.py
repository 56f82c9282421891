"""Checks that openapi.yaml is a valid OpenAPI 3.1 document."""
import sys

import yaml
from openapi_spec_validator import validate

with open("openapi.yaml") as f:
    document = yaml.safe_load(f)
try:
    validate(document)
except Exception as error:  # the validator raises several kinds
    print(f"openapi.yaml is invalid: {error}", file=sys.stderr)
    sys.exit(1)
print(f"openapi.yaml: valid OpenAPI {document['openapi']}, {len(document.get('paths', {}))} paths")
