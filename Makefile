# The tier a change must pass: unit, golden and integration tests (with the
# brokers started by .ci/services.sh), the alerting rules' promtool tests,
# the runtime's own tests, actionlint on the GitHub workflows, and vet.
GO ?= go
# The build's identity, printed by `asya-sync version` and logged at startup.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/asya-sh/asya-sync/internal/version.version=$(VERSION) \
	-X github.com/asya-sh/asya-sync/internal/version.commit=$(COMMIT)

.PHONY: run test services services-stop rules workflows vet unit runtime-test runtime-upstream-test e2e build image bench version

run:
	$(GO) run ./cmd/asya-sync render -f examples/flat-actor.yaml --config examples/config.yaml

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="$(LDFLAGS)" -o bin/asya-sync ./cmd/asya-sync

# The release image, offline and reproducible (build/image): the binary of
# `build` for each platform, on no base image, as an OCI layout
# (.cache/image/oci), an OCI archive (.cache/image/asya-sync.oci.tar) and the
# digests (.cache/image/digests), named ghcr.io/asya-sh/asya-sync:<appVersion>.
# Its time is SOURCE_DATE_EPOCH, by default the HEAD commit's.
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
image:
	$(GO) run ./build/image --platforms $(IMAGE_PLATFORMS) --version $(VERSION) --commit $(COMMIT) --out .cache/image

services:
	bash .ci/services.sh

# Stops the brokers `make test` started (RabbitMQ, the SQS and Pub/Sub
# emulators), which it leaves running for the next run.
services-stop:
	bash .ci/services.sh stop

# promtool check/test of the chart's alerting rules (installs promtool).
rules:
	bash .ci/rules.sh

# actionlint, with shellcheck, over .github/workflows/ (builds actionlint,
# installs shellcheck).
workflows:
	bash .ci/workflows.sh

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...

# The runtime scripts' tests, then the Redis state connector's
# (e2e/connector: through the runtime's state layer to a redis-server each
# test starts on a free port; skipped without redis-server, failed under
# ASYA_REQUIRE_INTEGRATION=1).
runtime-test:
	python3 -m unittest discover -s runtime -p 'test_*.py'
	python3 -m unittest discover -s e2e/connector -p 'test_*.py'

# Upstream Asya's own runtime tests, run against runtime/asya_runtime_http.py
# placed where they import asya_runtime from. Not part of `make test`:
# upstream's code is not in this repository. ASYA_UPSTREAM is a checkout of
# upstream Asya (runtime/README.md says which commit and how to get one);
# UPSTREAM_PYTHON a python3 with pytest (Debian: python3-pytest), by
# default the first of python3 and /usr/bin/python3 that has it. The tests
# that do not apply to this runtime are left out (runtime/README.md says
# why); UPSTREAM_NOT_APPLICABLE= runs them all.
UPSTREAM_PYTHON ?= $(firstword $(foreach p,python3 /usr/bin/python3,$(if $(shell $(p) -c 'import pytest' 2>/dev/null && echo y),$(p))) python3)
UPSTREAM_NOT_APPLICABLE ?= --deselect=tests/test_asya_runtime.py::TestFlyHelpers
runtime-upstream-test:
	@test -d "$(ASYA_UPSTREAM)/src/asya-runtime/tests" || { \
	  echo "ASYA_UPSTREAM=$(ASYA_UPSTREAM) is not a checkout of upstream Asya (no src/asya-runtime/tests)"; exit 2; }
	@$(UPSTREAM_PYTHON) -c 'import pytest' 2>/dev/null || { \
	  echo "$(UPSTREAM_PYTHON) has no pytest: apt-get install python3-pytest and set UPSTREAM_PYTHON=/usr/bin/python3"; exit 2; }
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	cp -R "$(ASYA_UPSTREAM)/src/asya-runtime/tests" "$$tmp/tests" && \
	cp runtime/asya_runtime_http.py "$$tmp/asya_runtime.py" && \
	cd "$$tmp" && env -u ASYA_HANDLER -u ASYA_ENABLE_VALIDATION -u ASYA_SOCKET_CHMOD \
	  $(UPSTREAM_PYTHON) -m pytest -p no:cacheprovider -q $(UPSTREAM_NOT_APPLICABLE) tests

test: services rules workflows vet unit runtime-test

e2e:
	bash .ci/e2e.sh

# One table: a sync of the realistic request against json.Valid of the same
# bytes, then asya-sync serve under 8 concurrent clients (docs/performance.md).
bench: services
	GO=$(GO) bash .ci/bench.sh

# make version V=X.Y.Z: the version everywhere it is spelled (chart/Chart.yaml,
# manifests/, CHANGELOG.md, the documents); a tag vX.Y.Z then releases it.
version:
	@test -n "$(V)" || { echo "usage: make version V=X.Y.Z"; exit 2; }
	bash .ci/release.sh version $(V)
