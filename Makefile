# lockstep: make help lists the targets.
GO      ?= go
PKGS    ?= ./...
TIMEOUT ?= 20m
# A count, not a duration: with a duration Go's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" as the time runs out, with
# no failing input (go.dev/issue/75804, fixed in Go 1.27; CI hit it).
FUZZTIME ?= 200000x

# golangci-lint is pinned in tools/go.mod and built from there into bin/
# (one go build, with only the Go module proxy); it is rebuilt when
# tools/go.mod or tools/go.sum change.
GOLANGCI_LINT ?= bin/golangci-lint

# Kubernetes (kube-apiserver, kube-controller-manager, kubectl,
# kube-scheduler, kubelet, kube-proxy) is pinned in tools/k8s/go.mod and
# CoreDNS in tools/coredns/go.mod, built from there into bin/k8s/ the same
# way, for make test-k8s: the first build takes about 13 minutes on 2
# cores (40 s from Go's build cache), later ones happen only when those
# go.mod or go.sum change. Static (no cgo) and with the version stamped,
# as Kubernetes' own release builds.
K8S_VERSION := $(shell sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' tools/k8s/go.mod)
K8S_BIN     ?= bin/k8s
K8S_MINOR   := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_LDFLAGS := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
  -X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(K8S_MINOR) -X $(p).gitTreeState=clean)
K8S_CONTROL := kube-apiserver kube-controller-manager kubectl
# What the kubelet test adds: a worker node (kube-scheduler, kubelet,
# kube-proxy) and cluster DNS (CoreDNS, from tools/coredns/go.mod).
K8S_NODE    := kube-scheduler kubelet kube-proxy coredns

.PHONY: help build run deps test test-race test-slow bench bench-smoke bench-scale bench-dist fuzz verify fmt vet lint tidy-check ci image image-extswitch test-cluster test-k8s k8s-control k8s-node deps-k8s

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +modified)
LDFLAGS := -X github.com/lockstep-sim/lockstep/internal/version.Version=$(VERSION) -X github.com/lockstep-sim/lockstep/internal/version.Commit=$(COMMIT)

build: ## build bin/lockstep (version and commit stamped: bin/lockstep version)
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/lockstep ./cmd/lockstep

# The image: the static binary (no cgo, -trimpath, no VCS stamp but the
# ldflags') FROM scratch, assembled by deploy/image (no Dockerfile, no
# registry) with its creation time SOURCE_DATE_EPOCH (the commit's time):
# the same source gives the same image ID. IMAGE_TAR is what docker loads.
IMAGE     ?= lockstep:$(VERSION)
IMAGE_TAR ?= bin/lockstep-image.tar
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
export SOURCE_DATE_EPOCH

image: ## build the container image lockstep:VERSION (FROM scratch, reproducible) and docker load it
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS) -s -w' -o bin/lockstep-static ./cmd/lockstep
	$(GO) run ./deploy/image/mkimage --binary bin/lockstep-static --tag $(IMAGE) --out $(IMAGE_TAR) --version $(VERSION) --commit $(COMMIT)
	docker load -i $(IMAGE_TAR) >/dev/null
	@docker image inspect --format '{{.RepoTags}} {{.Id}} {{.Size}} bytes' $(IMAGE)

# The example external switch (examples/extswitch/cmd/extswitch) as an
# image of its own, built the same way: its static binary FROM scratch.
EXTSWITCH_IMAGE     ?= lockstep-extswitch:$(VERSION)
EXTSWITCH_IMAGE_TAR ?= bin/extswitch-image.tar

image-extswitch: ## build the example external switch's image lockstep-extswitch:VERSION (FROM scratch) and docker load it
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -buildvcs=false -ldflags '-s -w' -o bin/extswitch-static ./examples/extswitch/cmd/extswitch
	$(GO) run ./deploy/image/mkimage --binary bin/extswitch-static --name extswitch --tag $(EXTSWITCH_IMAGE) --out $(EXTSWITCH_IMAGE_TAR) --version $(VERSION) --commit $(COMMIT)
	docker load -i $(EXTSWITCH_IMAGE_TAR) >/dev/null
	@docker image inspect --format '{{.RepoTags}} {{.Id}} {{.Size}} bytes' $(EXTSWITCH_IMAGE)

# The cluster tests (deploy/cluster, build tag cluster) run NATS,
# coordinators and nodes as containers of $(IMAGE), and external switches
# as containers of $(EXTSWITCH_IMAGE), on private Docker networks: they
# need a Docker daemon (.ci/run starts one if none answers).
test-cluster: image image-extswitch ## containers: identical runs, external switches, leader killed, node cut off, NATS restarted, node killed and restarted, a NATS server per node, nodes serving NATS themselves; k8s pod specs as rendered
	LOCKSTEP_IMAGE=$(IMAGE) LOCKSTEP_EXTSWITCH_IMAGE=$(EXTSWITCH_IMAGE) $(GO) test -tags cluster -count=1 -v -timeout 15m ./deploy/cluster/

# The Kubernetes tests (deploy/k8sapi, build tag k8sapi) start etcd
# (Debian's etcd-server), kube-apiserver and kube-controller-manager on
# loopback and check every rendering and overlay against them; then a
# worker (containerd with CRI, the CNI plugins, kube-scheduler, kubelet,
# kube-proxy, CoreDNS) runs a rendering's pods for real. About 1.5 minutes
# once bin/k8s is built (make k8s-control k8s-node).
deps-k8s: ## install etcd, containerd, runc, the CNI plugins, iptables and conntrack for make test-k8s (apt-get; needs root)
	@command -v etcd >/dev/null && command -v containerd >/dev/null && command -v runc >/dev/null && [ -x /usr/lib/cni/bridge ] && \
	  command -v iptables >/dev/null && command -v conntrack >/dev/null && exit 0; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	  echo "make deps-k8s: etcd, containerd, runc, the CNI plugins, iptables or conntrack is missing and installing them needs root and apt-get: run 'sudo make deps-k8s' or install etcd-server containerd runc containernetworking-plugins iptables conntrack yourself" >&2; exit 1; fi; \
	$(APT_GET) update -qq && $(APT_GET) install -y -qq etcd-server containerd runc containernetworking-plugins iptables conntrack iproute2 >/dev/null && \
	  command -v etcd >/dev/null && command -v containerd >/dev/null && [ -x /usr/lib/cni/bridge ]

test-k8s: deps-k8s k8s-control k8s-node ## the k8s manifests against a real control plane (dry-run of P = 1..64 and the overlays, applies, controllers) and a real kubelet running a rendering (first build about 13 min)
	LOCKSTEP_K8S_BIN=$(abspath $(K8S_BIN)) $(GO) test -tags k8sapi -count=1 -v -timeout 15m ./deploy/k8sapi/

run: ## run the main example (examples/dumbbell.yaml) into out/dumbbell
	$(GO) run ./cmd/lockstep run examples/dumbbell.yaml --out out/dumbbell

# tshark reads the pcap captures in runner/pcap_test.go; chromium runs the live
# view's browser test (cmd/lockstep/ui_browser_test.go, which fails without it
# when CI=true); prometheus scrapes a running multi-process run in
# cmd/lockstep/metrics_test.go (which fails without it when CI=true). Debian's
# tshark asks whether non-root users may capture: preseed "no" so the install
# never waits. apt-get waits up to 120 s for a lock another apt holds instead
# of failing at once.
APT_GET := DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120
deps: ## install what the tests need beyond Go: tshark, chromium and prometheus (apt-get; needs root)
	@command -v tshark >/dev/null && [ -x /usr/bin/chromium ] && command -v prometheus >/dev/null && exit 0; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
	  echo "make deps: tshark, /usr/bin/chromium or prometheus is missing and installing them needs root and apt-get: run 'sudo make deps' or install tshark (Wireshark's CLI), chromium and prometheus yourself" >&2; exit 1; fi; \
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true; \
	$(APT_GET) update -qq && $(APT_GET) install -y -qq tshark chromium prometheus >/dev/null && command -v tshark >/dev/null && [ -x /usr/bin/chromium ] && command -v prometheus >/dev/null

test: deps ## the README's test command: tools (deps), verify, then every test with -race and -shuffle
	$(MAKE) verify
	$(GO) test -race -shuffle=on -timeout $(TIMEOUT) $(PKGS)

test-race: ## every test with the race detector
	$(GO) test -race -shuffle=on -timeout $(TIMEOUT) $(PKGS)

test-slow: ## long soaks and big fabrics (build tag slow)
	$(GO) test -tags slow -shuffle=on -timeout 60m $(PKGS)

bench: ## all benchmarks with allocation counts
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

bench-scale: build ## fat-tree permutations k = 8..48 in 1, 2, 4 in-memory partitions and 2 node processes: setup s, run s, events/s, peak RSS (about 30 seconds)
	scripts/bench-scale.sh bin/lockstep

bench-dist: build ## a distributed run's cost: 1 partition, P in memory, P processes (CONTAINERS=1: P containers, after make image; SERVERS=node: a NATS server per node container; ONESERVER=1: also --procs --nodes-serve=false, the nodes on the launcher's server; PHASES=1: also with two-phase windows off over NATS and on in memory; CSV=FILE: every row also in FILE); per-window split, speed-up, efficiency, net wait in round trips (about 75 s)
	scripts/bench-dist.sh bin/lockstep

bench-smoke: ## every benchmark once, briefly (CI)
	$(GO) test -run '^$$' -bench . -benchtime 100x $(PKGS)

# Every Fuzz target of every package, found with go test -list, each for
# FUZZTIME (not part of make test). New corpus entries that fail land in
# the package's testdata/fuzz/ and then run as seeds in go test.
fuzz: ## run every Fuzz target for FUZZTIME executions (default 200000x) each
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for fz in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$fz"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$fz$$" -fuzztime $(FUZZTIME); \
	  done; \
	done

verify: fmt vet lint tidy-check ## gofmt, go vet, golangci-lint, go mod tidy clean (both modules)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

lint: $(GOLANGCI_LINT) ## golangci-lint with .golangci.yml (layers by depguard, exhaustive enums, dead code)
	$(GOLANGCI_LINT) run $(PKGS)

$(GOLANGCI_LINT): tools/go.mod tools/go.sum
	cd tools && $(GO) build -o $(abspath $(GOLANGCI_LINT)) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

k8s-control: $(addprefix $(K8S_BIN)/,$(K8S_CONTROL)) ## build Kubernetes' control plane into bin/k8s (tools/k8s; first time about 8 min)

k8s-node: $(addprefix $(K8S_BIN)/,$(K8S_NODE)) ## build the kubelet test's worker (kube-scheduler, kubelet, kube-proxy, CoreDNS) into bin/k8s

$(K8S_BIN)/coredns: tools/coredns/go.mod tools/coredns/go.sum tools/coredns/main.go
	cd tools/coredns && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(abspath $@) .

$(K8S_BIN)/%: tools/k8s/go.mod tools/k8s/go.sum
	cd tools/k8s && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(K8S_LDFLAGS)' -o $(abspath $@) k8s.io/kubernetes/cmd/$*

tidy-check:
	@for m in . tools tools/k8s tools/coredns; do \
	  if ! out=$$(cd $$m && $(GO) mod tidy -diff); then \
	    echo "go mod tidy changes $$m/go.mod or $$m/go.sum:"; echo "$$out"; exit 1; fi; \
	done

ci: test bench-smoke ## what .ci/run does
