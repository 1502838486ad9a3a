# The tier a change must pass: unit, golden and integration tests (with the
# brokers started by .ci/services.sh), the alerting rules' promtool tests,
# the runtime's own tests, and vet.
GO ?= go
# The build's identity, printed by `asya-sync version` and logged at startup.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/asya-sh/asya-sync/internal/version.version=$(VERSION) \
	-X github.com/asya-sh/asya-sync/internal/version.commit=$(COMMIT)

.PHONY: run test services rules vet unit runtime-test e2e build bench

run:
	$(GO) run ./cmd/asya-sync render -f examples/hello-actor.yaml --config examples/config.yaml

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="$(LDFLAGS)" -o bin/asya-sync ./cmd/asya-sync

services:
	bash .ci/services.sh

# promtool check/test of the chart's alerting rules (installs promtool).
rules:
	bash .ci/rules.sh

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...

runtime-test:
	python3 -m unittest discover -s runtime -p 'test_*.py'

test: services rules vet unit runtime-test

e2e:
	bash .ci/e2e.sh

# One table: a sync of the realistic request against json.Valid of the same
# bytes, then asya-sync serve under 8 concurrent clients (docs/performance.md).
bench: services
	GO=$(GO) bash .ci/bench.sh
