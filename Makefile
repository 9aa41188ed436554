# The two commands a newcomer runs are `make demo` and `make test`; both install what
# they need through scripts/install-deps.sh first.
GO        ?= go
BIN       := bin
GOFLAGS_B := -trimpath
# The version cf plugins and cf-benchmark --version show (internal/version).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null)
export CGO_ENABLED := 0
PUSHED    := GOOS=linux GOARCH=amd64

.PHONY: build demo gallery check lint test bench deps clean cf-cli-suite

build:
	$(GO) build $(GOFLAGS_B) -ldflags "-X main.version=$(VERSION)" -o $(BIN)/cf-benchmark ./plugin
	$(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-stub ./cmd/cfbench-stub
	$(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-proxy ./cmd/cfbench-proxy
	$(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-pg ./cmd/cfbench-pg
	# Pushed to Cloud Foundry, whose cells run linux/amd64 whatever this machine is:
	# the generator, the tunnel, the drain, and the stub and the proxy in the app dirs that
	# manifests/stub.yml and manifests/proxy-plateau.yml push.
	$(PUSHED) $(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-worker ./cmd/cfbench-worker
	$(PUSHED) $(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-tunnel ./cmd/cfbench-tunnel
	$(PUSHED) $(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-relay ./cmd/cfbench-relay
	$(PUSHED) $(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-drain ./cmd/cfbench-drain
	$(PUSHED) $(GO) build $(GOFLAGS_B) -o $(BIN)/stub/cfbench-stub ./cmd/cfbench-stub
	$(PUSHED) $(GO) build $(GOFLAGS_B) -o $(BIN)/proxy/cfbench-proxy ./cmd/cfbench-proxy
	scripts/build-apps.sh

deps:
	scripts/install-deps.sh

demo: deps build
	scripts/demo.sh $(SPEC)

# The docs' gallery (docs/gallery.md, docs/gallery/*.png) from runs on the local
# foundation; GALLERY_ONLY="stub cc-api" reruns only some of its specs.
gallery: deps build
	scripts/gallery.sh

# The quick tier, for every change: vet, the gofmt check, and every Go test that needs
# nothing outside the Go toolchain (no Postgres, Elasticsearch, OpenSearch, JDK,
# Node.js, cf CLI or local foundation: those tests skip under -short, see
# internal/testtier). It installs nothing.
check: lint
	CGO_ENABLED=1 $(GO) test -race -short -count=1 -timeout 10m ./...

# The platforms the cf CLI ships for: the plugin must build and vet on each (vet
# type-checks the test files too). Vet only, so the cross check stays quick once the
# build cache is warm.
LINT_PLATFORMS = linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64

lint:
	fail=; for p in $(LINT_PLATFORMS); do echo "go vet $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./... || fail="$$fail $$p"; done; \
	test -z "$$fail" || { echo "go vet failed for:$$fail"; exit 1; }
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: the files above need formatting'; exit 1; }

# Everything, as CI runs it (.ci/run): the stages and why are in scripts/test.sh.
test: deps build lint
	GO=$(GO) scripts/test.sh

# The cf CLI's own integration specs (the selection of foundation/clisuite) against a
# fresh local foundation: specs passed / run per file and in total. `make test` runs a
# quick subset of them (TestCFCLISpecsQuickSubset).
cf-cli-suite: deps
	scripts/cf-cli-suite.sh $(CF_CLI_SUITE_FLAGS)

# The load-generator benchmark (cmd/cfbench-bench; BENCH_FLAGS="-seconds 3 -repeat 1" for
# a quick trial), the capacity simulation (cmd/cfbench-capacity: 1,000 instances on
# max_connections = 100; CAPACITY_FLAGS="-instances 200 -hold 3s" for a quick trial),
# then the hot-path micro-benchmarks.
bench: deps build
	$(GO) run ./cmd/cfbench-bench $(BENCH_FLAGS)
	$(GO) run ./cmd/cfbench-capacity -relay-bin $(BIN)/cfbench-relay $(CAPACITY_FLAGS)
	scripts/bench-go.sh
	scripts/bench-routerlogs.sh

clean:
	rm -rf $(BIN)
