# Skiff: `make run` starts the server on the embedded default (SQLite, local
# gVisor host); `make test` runs every test. Both go through `make setup`,
# which installs what is missing and does nothing when all is present.

GO        ?= go
BIN       := bin/skiff
TESTFLAGS ?=
VERSION   := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/skiffhq/skiff/internal/cli.Version=$(VERSION)
export CGO_ENABLED := 0

.PHONY: setup build run test test-unit test-e2e test-short bench bench-go vet clean

setup:
	@bash scripts/setup.sh

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/skiff

run: setup build
	./$(BIN) server

# The PostgreSQL half of the store and API suites runs against a private
# throwaway cluster that the test targets start and stop. Tests that need a
# part missing here (root, runsc, buildah) skip, unless
# SKIFF_TEST_REQUIRE_ALL=1 (set by .ci/run) makes them fail. TESTFLAGS adds
# go test flags (.ci/run passes -json).
#
# Two tiers: `make test-unit` is the unit and seam tests beside the code
# (internal/..., a few minutes); `make test-e2e` is the system tests under
# test/ (the real skiff binary as a subprocess: test/e2e, test/security,
# test/payments). `make test` runs both in one go test, so their packages
# share the cores.
test: setup
	$(GO) vet ./...
	$(call gotest,./...)

test-unit: setup
	$(GO) vet ./...
	$(call gotest,$$($(GO) list ./... | grep -v /test/))

test-e2e: setup
	$(call gotest,./test/...)

# gotest runs go test on the packages $(1) with the throwaway PostgreSQL.
define gotest
@url=$$(bash scripts/test-postgres.sh start) && \
  trap 'bash scripts/test-postgres.sh stop' EXIT && \
  SKIFF_TEST_POSTGRES_URL=$$url $(GO) test $(TESTFLAGS) -count=1 -timeout 30m $(1)
endef

test-short:
	$(GO) test -short ./...

# `skiff bench` (docs/bench.md): job latency over bare gVisor and submissions
# per second, against a throwaway server; about a minute. BENCH_FLAGS passes
# flags, e.g. make bench BENCH_FLAGS='--jobs 100 --json'.
bench: setup build
	./$(BIN) bench $(BENCH_FLAGS)

# The Go benchmarks, once each (the build ones take minutes).
bench-go:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

vet:
	$(GO) vet ./...

clean:
	rm -rf bin
