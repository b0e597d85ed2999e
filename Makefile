# lockstep: make help lists the targets.
GO      ?= go
PKGS    ?= ./...
TIMEOUT ?= 20m
FUZZTIME ?= 5s

.PHONY: help build run deps test test-race test-slow bench bench-smoke fuzz verify fmt vet tidy-check ci

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/lockstep
	$(GO) build -o bin/lockstep ./cmd/lockstep

run: ## run the main example (examples/dumbbell.yaml) into out/dumbbell
	$(GO) run ./cmd/lockstep run examples/dumbbell.yaml --out out/dumbbell

# tshark reads the pcap captures in runner/pcap_test.go. Debian's package asks
# whether non-root users may capture: preseed "no" so the install never waits.
deps: ## install what the tests need beyond Go: tshark (apt-get; needs root)
	@command -v tshark >/dev/null && exit 0; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	  echo "make deps: tshark is missing and installing it needs root and apt-get: run 'sudo make deps' or install tshark (Wireshark's CLI) yourself" >&2; exit 1; fi; \
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tshark >/dev/null && command -v tshark >/dev/null

test: deps ## the README's test command: tools (deps), verify, then every test with -race and -shuffle
	$(MAKE) verify
	$(GO) test -race -shuffle=on -timeout $(TIMEOUT) $(PKGS)

test-race: ## every test with the race detector
	$(GO) test -race -shuffle=on -timeout $(TIMEOUT) $(PKGS)

test-slow: ## long soaks and big fabrics (build tag slow)
	$(GO) test -tags slow -shuffle=on -timeout 60m $(PKGS)

bench: ## all benchmarks with allocation counts
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

bench-smoke: ## every benchmark once, briefly (CI)
	$(GO) test -run '^$$' -bench . -benchtime 100x $(PKGS)

# Every native fuzz target in the tree (found by grep, so a new one is never
# forgotten), each for FUZZTIME, with its seed corpus (testdata/fuzz/).
fuzz: ## run every Fuzz target briefly (FUZZTIME each, default 5s)
	@set -e; grep -rlE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' --include='*_test.go' . | sort | while read -r file; do \
	  dir=$$(dirname "$$file"); \
	  for t in $$(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$$file" | cut -d' ' -f2); do \
	    echo "fuzz $$dir $$t ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) "./$$dir" || exit 1; \
	  done; \
	done

verify: fmt vet tidy-check ## gofmt, go vet, go mod tidy clean

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

tidy-check:
	@cp go.mod /tmp/lockstep.go.mod.bak; cp go.sum /tmp/lockstep.go.sum.bak; \
	$(GO) mod tidy; \
	if ! cmp -s go.mod /tmp/lockstep.go.mod.bak || ! cmp -s go.sum /tmp/lockstep.go.sum.bak; then \
	  echo "go mod tidy changes go.mod/go.sum"; cp /tmp/lockstep.go.mod.bak go.mod; cp /tmp/lockstep.go.sum.bak go.sum; exit 1; fi

ci: test bench-smoke ## what .ci/run does
