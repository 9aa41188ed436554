# The two commands a newcomer runs are `make demo` and `make test`; both install what
# they need through scripts/install-deps.sh first (demo: only what the demo uses).
GO        ?= go
BIN       := bin
GOFLAGS_B := -trimpath
# The version cf plugins and cf-benchmark --version show (internal/version).
# Worked out once: the plugin and the program it carries must get the same one.
ifeq ($(origin VERSION), undefined)
VERSION   := $(shell git describe --tags --always --dirty 2>/dev/null)
export VERSION
endif
export CGO_ENABLED := 0
PUSHED    := GOOS=linux GOARCH=amd64
PAYLOAD   := plugin/payload/data/cfbench.gz

.PHONY: build build-demo apps release demo gallery check lint test bench deps deps-demo clean cf-cli-suite

# The plugin carries the program it pushes (cmd/cfbench, built for linux/amd64, what CF's
# cells run, whatever this machine is) gzip-compressed in plugin/payload/data, so the
# plugin file alone runs a benchmark; bin/cfbench is the same program, for --bin-dir.
# build-demo is what make demo uses of it: the plugin and the stub it pushes.
build: build-demo
	$(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-stub ./cmd/cfbench-stub
	$(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-proxy ./cmd/cfbench-proxy
	$(GO) build $(GOFLAGS_B) -o $(BIN)/cfbench-pg ./cmd/cfbench-pg
	# The proxy in the app dir that manifests/proxy-plateau.yml pushes.
	$(PUSHED) $(GO) build $(GOFLAGS_B) -o $(BIN)/proxy/cfbench-proxy ./cmd/cfbench-proxy

build-demo:
	$(PUSHED) $(GO) build $(GOFLAGS_B) -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN)/cfbench ./cmd/cfbench
	gzip -9 -n -c $(BIN)/cfbench > $(PAYLOAD)
	printf '%s\n' '$(VERSION)' > $(dir $(PAYLOAD))version
	$(GO) build $(GOFLAGS_B) -ldflags "-X main.version=$(VERSION)" -o $(BIN)/cf-benchmark ./plugin
	# The stub in the app dir that manifests/stub.yml pushes.
	$(PUSHED) $(GO) build $(GOFLAGS_B) -o $(BIN)/stub/cfbench-stub ./cmd/cfbench-stub

# The Java and Node.js sample apps (apps/), which the tests and the java-vs-node spec push.
apps:
	scripts/build-apps.sh

# A release the cf way (tools/release): the plugin for the five platforms the cf CLI ships
# for (and a macOS universal binary), SHA256SUMS, SHA1SUMS and the plugin repository
# index `list`, in dist/VERSION, to be served at RELEASE_URL:
#   make release VERSION=1.2.0 RELEASE_URL=https://example.com/cf-benchmark/1.2.0
release:
	$(GO) run ./tools/release -version $(VERSION) -url "$(RELEASE_URL)" -out dist/$(VERSION)

deps:
	scripts/install-deps.sh test

# What the demo uses (the PostgreSQL server, the cf CLI: minutes of CPU on a cold cache)
# installs while the Go programs build, on both cores.
deps-demo:
	scripts/install-deps.sh demo

# Only the programs the demo's spec uses are built; another SPEC may want make build
# (the proxy) and make apps (the Java and Node.js sample apps) first.
demo:
	$(MAKE) --no-print-directory -j2 deps-demo build-demo
	scripts/demo.sh $(SPEC)

# The docs' gallery (docs/gallery.md, docs/gallery/*.png) from runs on the local
# foundation; GALLERY_ONLY="stub cc-api" reruns only some of its specs.
gallery: deps build apps
	scripts/gallery.sh

# The quick tier, for every change: vet, the gofmt check, and every Go test that needs
# nothing outside the Go toolchain (no Postgres, Elasticsearch, OpenSearch, JDK,
# Node.js, cf CLI or local foundation: those tests skip under -short, see
# internal/testtier). It installs nothing.
check: lint
	CGO_ENABLED=1 $(GO) test -race -short -count=1 -timeout 10m ./...

# go vet for the platforms the cf CLI ships for (scripts/vet.sh says how it shares and
# spares compiles), the gofmt check, and the tests' HTTP client rule.
lint:
	GO=$(GO) scripts/vet.sh
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: the files above need formatting'; exit 1; }
	! git grep -nE 'http\.DefaultClient[.)]|http\.(Get|Post|Head|PostForm)\(' -- '*_test.go' 'internal/test*' 'dbaccess/testpg' 'foundation/testfoundation' || { echo 'lint: tests use testhttp.Client, not http.DefaultClient (internal/testhttp says why)'; exit 1; }

# Everything, as CI runs it (.ci/run): the stages and why are in scripts/test.sh.
test: deps build apps lint
	GO=$(GO) scripts/test.sh

# The cf CLI's own integration specs (the selection of foundation/clisuite) against a
# fresh local foundation: specs passed / run per file and in total. `make test` runs a
# quick subset of them (TestCFCLISpecsQuickSubset).
cf-cli-suite: deps
	scripts/cf-cli-suite.sh $(CF_CLI_SUITE_FLAGS)

# The load-generator benchmark (tools/bench; BENCH_FLAGS="-seconds 3 -repeat 1" for
# a quick trial), the capacity simulation (tools/capacity: 1,000 instances on
# max_connections = 100; CAPACITY_FLAGS="-instances 200 -hold 3s" for a quick trial),
# then the hot-path micro-benchmarks.
bench: deps build
	$(GO) run ./tools/bench $(BENCH_FLAGS)
	$(GO) run ./tools/capacity -relay-bin $(BIN)/cfbench $(CAPACITY_FLAGS)
	scripts/bench-go.sh
	scripts/bench-routerlogs.sh

clean:
	rm -rf $(BIN) $(PAYLOAD) $(dir $(PAYLOAD))version
