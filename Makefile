GO      ?= go
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build dist image deps test test-faults test-short test-race vet lint demo bench bench-short bench-go fuzz clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/binlog2ch ./cmd/binlog2ch

# Static binaries (linux/amd64, linux/arm64) and .deb/.rpm packages of
# them in dist/ (deploy/dist.sh; nfpm is a Go tool of the module). The
# image: deploy/Dockerfile, tagged IMAGE (push it to your registry).
dist:
	VERSION=$(VERSION) GO=$(GO) deploy/dist.sh

IMAGE ?= binlog2ch:$(VERSION)
image:
	docker build -f deploy/Dockerfile --build-arg VERSION=$(VERSION) -t $(IMAGE) .

# Installs MariaDB and ClickHouse when missing (apt-get on Debian as root;
# otherwise it says what to install) and downloads the Go modules.
deps:
	deploy/install-deps.sh
	$(GO) mod download

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# staticcheck, pinned (the module proxy serves exact versions only).
lint: vet
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# Unit tests plus integration tests against throwaway servers. An
# integration test whose servers cannot start fails; it never skips.
test: vet
	$(GO) test -count=1 -timeout 45m ./...

# The fault-injection suite alone (the tests named TestFault*; `make test`
# runs them too): daemon SIGKILLs, a 30 s ClickHouse outage, a MariaDB
# restart, killed copies, a 1M-row transaction, bad inputs, no passwords in
# logs. Each test bounds its own waits; the whole suite takes ~100 s.
test-faults: vet
	$(GO) test -count=1 -timeout 15m -run '^TestFault' -v ./replicator

# The same under the race detector (needs cgo and a C compiler).
test-race: vet
	$(GO) test -race -count=1 -timeout 45m ./...

# Unit tests only.
test-short:
	$(GO) test -count=1 -short ./...

demo: deps build
	bin/binlog2ch demo

# Runs each fuzz target for FUZZTIME (their seeds also run in `make test`).
FUZZTIME ?= 30s
fuzz:
	for p in ./schema ./block ./mysqltime ./mysqldecimal ./ddl; do \
		for f in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
			$(GO) test -short -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
		done; \
	done

# The benchmark scenarios (catch-up and live) against throwaway servers;
# reports go to bench-results/. bench-short takes under two minutes.
bench: deps build
	bin/binlog2ch bench

bench-short: deps build
	bin/binlog2ch bench -short

# The Go benchmarks (decoding, encoding, catch-up through the daemon).
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 1x ./replicator
	$(GO) test -run '^$$' -bench . -benchmem ./block

clean:
	rm -rf bin dist
