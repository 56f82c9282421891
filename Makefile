# browserd — the two commands that matter: `make run` and `make test`.
SWIFT ?= swift
DATA_DIR ?= ./data
VENV := .venv
PYTHON := $(VENV)/bin/python
# The PostgreSQL build (several instances on one database): the `PostgreSQL` trait, in a build folder of
# its own so the embedded default (SQLite, nothing of NIO compiled) and it never rebuild each other.
WITH_POSTGRES := --traits PostgreSQL --scratch-path .build-postgres

.PHONY: deps test-deps build release build-postgres release-postgres run test test-steps client-generate bench fuzz container clean

## System packages for building and running (apt, only when missing). No Python involved.
deps:
	@scripts/install-deps.sh run

## System packages for the tests, then the pinned Python test tools in ./.venv.
test-deps:
	@echo "== $$(date +%T) system packages and the Python test tools"
	@scripts/install-deps.sh test
	@scripts/venv.sh

build: deps
	$(SWIFT) build --product browserd

release: deps
	$(SWIFT) build -c release --product browserd

## browserd with PostgreSQL and the cluster (`--database-url`): .build-postgres/{debug,release}/browserd.
build-postgres: deps
	$(SWIFT) build $(WITH_POSTGRES) --product browserd

release-postgres: deps
	$(SWIFT) build -c release $(WITH_POSTGRES) --product browserd

## Runs the service on 127.0.0.1:8080 with its database under ./data.
run: release
	exec $$($(SWIFT) build -c release --show-bin-path)/browserd serve --data-dir $(DATA_DIR)

## Runs every test: the code's format (.swift-format, `swift format lint`), the Swift suites (unit, in-process router, live-server and process tests, the
## store conformance suite on SQLite and on a private PostgreSQL cluster), the contract check, the
## README quickstart as written, the event streams with a real SSE client (httpx-sse), the inspector
## page and a cross-origin page in headless chromium (selenium), the WebDriver facade with selenium's
## webdriver.Remote and raw HTTP, automation clients (Playwright's connect_over_cdp, raw WebSockets, and
## WebDriver's scripts) on two profiles' real pages through browserd-renderer (tests/automation_test.py), a profile's web state
## (a login kept across a killed renderer, Playwright's storageState; tests/web_state_test.py), hostile tenants and clients against a real process (tests/hostile_test.py),
## hostile files and uploads against a real process (tests/hostile_files_test.py; the fuzz corpus is
## replayed by the Swift suites),
## the Swift client package (clients/swift: its suites, and browserd-renderer's with a real headless Chromium and
## pages on loopback, run with the server's) against a live server and its terminal tab strip in tmux,
## several instances on one PostgreSQL as real processes (kill -9,
## SIGSTOP and a PostgreSQL restart), and schemathesis against a live server, streams and stateful phase
## included (SCHEMATHESIS_SECONDS per phase). Python tools run from ./.venv; PostgreSQL runs for the
## length of the tests only (scripts/with-postgres.sh).
# The Swift packages resolve while the build's few C headers install; then the test packages install
# (mostly waiting on the network and dpkg) while the one test build runs, the code's format checked beside
# it (scripts/beside.sh, three times): none of them needs what apt brings for the tests. A failed build there
# does not stop make: test-steps builds again and shows why in full (when it built, test-steps does not
# build again: .build-test/prepared).
LINT := $(SWIFT) format lint --strict --recursive Sources Tests bench/Sources fuzz/Sources clients/swift/Sources clients/swift/Tests
test:
	@mkdir -p .build-test
	@scripts/beside.sh .build-test/resolve.log "BROWSERD_CLIENT_TESTS=1 $(SWIFT) package resolve --scratch-path .build-test" \
	  scripts/install-deps.sh run
	@scripts/beside.sh .build-test/prepare.log \
	  "scripts/prepare-tests.sh '$(SWIFT)' '$(TEST_BUILD)' '$(LINT)'" \
	  $(MAKE) --no-print-directory test-deps
	BROWSERD_REQUIRE_POSTGRES=1 scripts/with-postgres.sh $(MAKE) --no-print-directory test-steps

# make test builds in a folder of its own, without debug info (`-debug-info-format none`: no DWARF from
# swiftc or clang — `-Xcc -g0` alone was overridden by a later `-g`, so BoringSSL's ~760 C and C++ files
# were compiled with it; test failures still name their file and line): .build-test holds the PostgreSQL build with
# every test target, the Swift client's and browserd-renderer's included (the client package is a
# dependency of this one, so swift-nio, swift-crypto and async-http-client compile once for both), and
# then the embedded browserd (which compiles only browserd's own modules again: the dependencies are the
# same). The builds of `make build`, `make run` and `make build-postgres` are left alone.
TEST_BUILD := --scratch-path .build-test -debug-info-format none
TEST_BIN = $(POSTGRES_TEST_BIN)/browserd
# The PostgreSQL build's browserd and browserd-tabs, copied out before the embedded build replaces
# browserd in the same folder.
POSTGRES_BROWSERD = $(CURDIR)/.build-test/browserd-postgresql
BROWSERD_TABS = $(CURDIR)/.build-test/browserd-tabs
BROWSERD_RENDERER = $(CURDIR)/.build-test/browserd-renderer
# Asked once (make's "evaluate once" idiom): while the embedded build runs beside the suites it holds
# .build-test's lock, which `--show-bin-path` would wait for. Both builds put their products there.
POSTGRES_TEST_BIN = $(eval POSTGRES_TEST_BIN := $$(shell $(SWIFT) build $(TEST_BUILD) --traits PostgreSQL --show-bin-path))$(POSTGRES_TEST_BIN)
# The suites run from the test bundle itself (every suite is swift-testing's): `swift test` would plan
# the build again first (~20 s: make's environment here is not the preparation's).
TEST_BUNDLE = $(POSTGRES_TEST_BIN)/browserdPackageTests.xctest --testing-library swift-testing

# The order: the quick checks first; then the one build; then the suites, one at a time (the timing of
# live-server tests never shares the machine with a compiler that may take CPU from them): every Swift
# suite once, on both stores (SQLite included), the client's and the renderer's against that build's
# browserd, and the cluster; schemathesis, which runs for a fixed time and has no deadline; the embedded
# browserd, and what drives it (tests/embedded_build_test.py: nothing of PostgreSQL or NIO in it).
# The embedded build (and browserd-tabs) start after the Swift suites on idle CPU only
# (scripts/idle-build.sh: SCHED_IDLE, which the kernel runs only when nothing else wants the CPU): it
# advances while the renderer's suite and the cluster's scenarios wait (they mostly do: the cluster's
# 59 s use 40 s of CPU of two cores) and never takes CPU from them; what is left of it runs beside
# schemathesis. They run the PostgreSQL build's browserd from a copy, since the embedded build replaces
# it in the build folder (the Swift suites' process tests take the one beside the test bundle: they
# run before).
# The Swift client's and browserd-renderer's suites join the test build (Package.swift).
test-steps: export BROWSERD_CLIENT_TESTS = 1
test-steps:
	@echo "== $$(date +%T) the quick checks (the format was checked beside the packages' install)"
	$(PYTHON) scripts/validate-openapi.py
	scripts/check-client-generated.sh
	@echo "== $$(date +%T) the PostgreSQL build with every test target (the Swift client and browserd-renderer included; built beside the packages' install)"
	@if [ -f .build-test/prepared ]; then rm -f .build-test/prepared; echo "made by the preparation"; \
	  else echo "$(SWIFT) build --build-tests $(TEST_BUILD) --traits PostgreSQL"; $(SWIFT) build --build-tests $(TEST_BUILD) --traits PostgreSQL; fi
	@echo "== $$(date +%T) every Swift suite on both stores (the client's and the renderer's against this build's browserd), and the cluster"
	cp "$(POSTGRES_TEST_BIN)/browserd" $(POSTGRES_BROWSERD)
	BROWSERD_BIN=$(POSTGRES_BROWSERD) $(TEST_BUNDLE) --skip RendererTests
	@echo "== $$(date +%T) the embedded build (and browserd-tabs) start, on idle CPU only"
	@scripts/idle-build.sh start .build-test/embedded-build.log \
	  "$(SWIFT) build $(TEST_BUILD) --traits PostgreSQL --product browserd-tabs && cp $(POSTGRES_TEST_BIN)/browserd-tabs $(BROWSERD_TABS) && $(SWIFT) build $(TEST_BUILD) --traits PostgreSQL --product browserd-renderer && cp $(POSTGRES_TEST_BIN)/browserd-renderer $(BROWSERD_RENDERER) && $(SWIFT) build $(TEST_BUILD) --product browserd"
	@echo "== $$(date +%T) browserd-renderer's suite, alone: a starting Chromium takes both cores for a second, which the live-server suites' deadlines must not share"
	BROWSERD_BIN=$(POSTGRES_BROWSERD) $(TEST_BUNDLE) --filter RendererTests
	@echo "== $$(date +%T) several instances on one PostgreSQL"
	$(PYTHON) tests/cluster_test.py $(POSTGRES_BROWSERD)
	@echo "== $$(date +%T) schemathesis against a live server (the PostgreSQL build's browserd, on SQLite), beside what is left of the embedded build"
	scripts/schemathesis.sh $(POSTGRES_BROWSERD)
	@scripts/idle-build.sh wait .build-test/embedded-build.log
	@echo "== $$(date +%T) the embedded build's checks against a live server"
	$(PYTHON) tests/embedded_build_test.py $(TEST_BIN)
	$(PYTHON) tests/quickstart_test.py $(TEST_BIN)
	$(PYTHON) tests/docs_test.py $(TEST_BIN)
	$(PYTHON) tests/sse_client_test.py $(TEST_BIN)
	$(PYTHON) tests/browser_test.py $(TEST_BIN)
	$(PYTHON) tests/webdriver_test.py $(TEST_BIN)
	$(PYTHON) tests/automation_test.py $(TEST_BIN) $(BROWSERD_RENDERER)
	$(PYTHON) tests/renderers_test.py $(POSTGRES_BROWSERD) $(BROWSERD_RENDERER)
	$(PYTHON) tests/web_state_test.py $(POSTGRES_BROWSERD) $(BROWSERD_RENDERER)
	$(PYTHON) tests/hostile_test.py $(TEST_BIN)
	$(PYTHON) tests/hostile_files_test.py $(TEST_BIN)
	@echo "== $$(date +%T) the Swift client's terminal tab strip (browserd-tabs) in tmux against the embedded build"
	$(PYTHON) tests/tabs_tui_test.py $(TEST_BIN) $(BROWSERD_TABS)

## Regenerates the Swift client's code from openapi.yaml (after changing the contract; make test checks it).
client-generate:
	SWIFT=$(SWIFT) scripts/generate-client.sh

## Benchmarks against an nginx baseline in the same run (installs wrk and nginx-light).
bench:
	@scripts/install-deps.sh bench
	@scripts/venv.sh
	bench/run.sh

## Coverage-guided fuzzing of the import readers (libFuzzer + AddressSanitizer), FUZZ_SECONDS each
## (default 600); the test suite replays fuzz/corpus (seeds and every finding) on every run.
FUZZ_SECONDS ?= 600
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

## Builds and runs the container image with podman (no Docker engine needed).
container:
	../shared/tools/container-check

clean:
	rm -rf .build .build-postgres .build-test .build-fuzz clients/swift/.build clients/swift/.build-test renderer-state
