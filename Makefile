# browserd — the two commands that matter: `make run` and `make test`.
SWIFT ?= swift
DATA_DIR ?= ./data

.PHONY: deps openapi build release run test bench container clean

deps:
	@scripts/install-deps.sh

# The contract is served from the binary: embed it before every build.
openapi:
	@scripts/embed-openapi.sh

build: deps openapi
	$(SWIFT) build

release: deps openapi
	$(SWIFT) build -c release

## Runs the service on 127.0.0.1:8080 with its database under ./data.
run: release
	exec $$($(SWIFT) build -c release --show-bin-path)/browserd serve --data-dir $(DATA_DIR)

## Runs every test: the Swift suites (unit, live-server and process tests), the contract check, the
## event streams with a real SSE client (httpx-sse), and schemathesis against a live server (60 s; SCHEMATHESIS_SECONDS changes it).
test: deps openapi
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	python3 scripts/validate-openapi.py
	python3 tests/sse_client_test.py $$($(SWIFT) build --show-bin-path)/browserd
	scripts/schemathesis.sh $$($(SWIFT) build --show-bin-path)/browserd

## Benchmarks against an nginx baseline in the same run (installs wrk and nginx-light).
bench:
	@scripts/install-deps.sh bench
	@scripts/embed-openapi.sh
	bench/run.sh

## Builds and runs the container image with podman (no Docker engine needed).
container:
	../shared/tools/container-check

clean:
	rm -rf .build
