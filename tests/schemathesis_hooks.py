"""schemathesis hooks (schemathesis.toml's `hooks`): the contract's one media type schemathesis cannot
send by itself. A pipeline of reads (`POST /v1/cluster/pipeline`, `application/http`) is bytes on the
wire, sent as `application/octet-stream` bodies are."""
import schemathesis

schemathesis.serializer.alias("application/http", "application/octet-stream")
