#!/usr/bin/env bash
# End-to-end tier: a real kube-apiserver and etcd on loopback, the CRDs,
# KEDA's operator and admission webhooks, the asya-sync service built from
# this tree, and a test driver that plays Metacontroller's part, applying
# children with either of its apply strategies; then the node tier
# (.ci/node.sh), where a kubelet, containerd and runc run the actors' pods.
#
#   .ci/e2e.sh                 build the tools if needed, then run everything
#   .ci/e2e.sh test [ARGS]     the same, passing ARGS to go test (e.g. -run Helm)
#   .ci/e2e.sh node [ARGS]     only the node tier: actors' pods on a real kubelet
#   .ci/e2e.sh tools           only build the tools into .cache/bin
#   .ci/e2e.sh crd             regenerate manifests/crd (controller-gen)
#   .ci/e2e.sh manifests       regenerate manifests/ and chart/crds/
#   .ci/e2e.sh manifests DIR HELM_ARG...
#                              the same manifests rendered with HELM_ARGs, into DIR
#   .ci/e2e.sh check           fail if manifests/ or chart/crds/ are stale
#   .ci/e2e.sh image           the release image (make image), checked static and reproducible
#
# ASYA_REQUIRE_INTEGRATION=1 turns every missing piece (broker, tool, binary)
# into a failure instead of a skip. ASYA_E2E_KEDA_VERSION=v2.x.y runs another
# KEDA release than the one go.mod pins (README: the oldest supported one).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${ASYA_E2E_BIN:-$ROOT/.cache/bin}
TOOLS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd controller-gen helm kubectl)
# KEDA: the version go.mod pins, unless ASYA_E2E_KEDA_VERSION names another
# (docs/install.md: the oldest supported version is run that way).
KEDA_VERSION=${ASYA_E2E_KEDA_VERSION:-$(go list -m -f '{{.Version}}' github.com/kedacore/keda/v2)}
PROMETHEUS_OPERATOR_VERSION=v0.85.0
# shellcheck source=node.sh
source "$ROOT/.ci/node.sh"

log() { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# missing: a piece of the environment is not there. A failure when
# ASYA_REQUIRE_INTEGRATION=1 (CI), a loud skip otherwise.
missing() {
  if [ "${ASYA_REQUIRE_INTEGRATION:-}" = 1 ]; then
    printf '\n[e2e] FAILED: %s\n\n' "$*" >&2
    exit 1
  fi
  printf '\n[e2e] SKIPPED: %s (set ASYA_REQUIRE_INTEGRATION=1 to fail instead)\n\n' "$*" >&2
  exit 0
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Scratch space of this run, removed on exit.
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

# Bump when the way the tools are built changes.
TOOLS_BUILD_REV=3

tools_stamp() {
  cat e2e/tools/go.mod e2e/tools/go.sum e2e/tools/tools.go | sha256sum | cut -c1-16
  echo "rev $TOOLS_BUILD_REV $(go env GOVERSION)"
}

build_tools() {
  mkdir -p "$BIN"
  local want have missing=0
  want=$(tools_stamp)
  have=$(cat "$BIN/.stamp" 2>/dev/null || true)
  for t in "${TOOLS[@]}"; do [ -x "$BIN/$t" ] || missing=1; done
  if [ "$missing" = 0 ] && [ "$want" = "$have" ]; then
    log "tools up to date in $BIN"
    return
  fi
  log "building ${TOOLS[*]} into $BIN (cold: docs/testing.md#how-long)"
  local start=$SECONDS
  (
    cd e2e/tools
    # -mod=readonly: the pins in go.mod/go.sum are the only source of truth.
    export CGO_ENABLED=0 GOFLAGS="-mod=readonly ${E2E_TOOLS_GOFLAGS:-}"
    local k8s helmv minor
    k8s=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
    helmv=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
    minor=$(echo "$k8s" | cut -d. -f2)
    # The version stamps the upstream release builds set: the API server
    # reports it (Helm checks charts' kubeVersion against it), and Helm's
    # offline rendering assumes it.
    local kv="-X k8s.io/component-base/version.gitVersion=$k8s"
    kv+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
    kv+=" -X k8s.io/client-go/pkg/version.gitVersion=$k8s"
    kv+=" -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
    local hv="-X helm.sh/helm/v3/internal/version.version=$helmv"
    hv+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor"
    hv+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
    go build -trimpath -ldflags="-s $kv" -o "$BIN/" k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
    go build -trimpath -ldflags="-s $hv" -o "$BIN/helm" helm.sh/helm/v3/cmd/helm
    go build -trimpath -ldflags=-s -o "$BIN/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen
    # etcd's main package is the root of its server module.
    go build -trimpath -ldflags=-s -o "$BIN/etcd" go.etcd.io/etcd/server/v3
  ) || missing "could not build the e2e tools (module proxy unreachable?)"
  echo "$want" >"$BIN/.stamp"
  log "tools built in $((SECONDS - start))s"
}

# build_keda: KEDA's operator, admission webhooks and metrics server
# (adapter) at KEDA_VERSION, into
# $BIN/keda-$KEDA_VERSION. Built from the module's own directory (copied
# writable) as the main module, so that its replace directives apply.
build_keda() {
  local out=$BIN/keda-$KEDA_VERSION want
  want="$KEDA_VERSION $(go env GOVERSION) rev 2"
  if [ -x "$out/keda-operator" ] && [ -x "$out/keda-webhooks" ] && [ -x "$out/keda-adapter" ] &&
    [ "$(cat "$out/.stamp" 2>/dev/null)" = "$want" ]; then
    log "KEDA $KEDA_VERSION up to date in $out"
    return
  fi
  log "building KEDA $KEDA_VERSION operator and webhooks into $out (cold: docs/testing.md#how-long)"
  local start=$SECONDS src
  module_dir "github.com/kedacore/keda/v2@$KEDA_VERSION" cmd/operator || missing "KEDA $KEDA_VERSION could not be downloaded"
  src=$SCRATCH/keda-src
  cp -r "$MODULE_DIR" "$src" && chmod -R u+w "$src"
  mkdir -p "$out"
  (cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags=-s -o "$out/keda-operator" ./cmd/operator &&
    CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags=-s -o "$out/keda-webhooks" ./cmd/webhooks &&
    CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags=-s -o "$out/keda-adapter" ./cmd/adapter) ||
    missing "could not build KEDA $KEDA_VERSION"
  rm -rf "$src"
  echo "$want" >"$out/.stamp"
  log "KEDA built in $((SECONDS - start))s"
}

# module_dir MODULE@VERSION SUBDIR sets MODULE_DIR to the module's directory
# in the module cache, downloading it outside any module (so no go.mod or
# go.sum moves); it fails when SUBDIR is not there.
module_dir() {
  mkdir -p "$SCRATCH/nomodule"
  MODULE_DIR=$(cd "$SCRATCH/nomodule" && GOFLAGS= go mod download -json "$1" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || true
  [ -n "$MODULE_DIR" ] && [ -d "$MODULE_DIR/$2" ]
}

require_tools() {
  build_tools
  export PATH="$BIN:$PATH"
}

# gen_crd DIR: the AsyncActor CRD from api/v1alpha1, as controller-gen
# writes it, into DIR. Every field keeps its description, for kubectl
# explain; the pod template is schemaless (api/v1alpha1.PodTemplate), so the
# CRD stays far below the 256 KiB that client-side kubectl apply can store
# in its last-applied annotation, and the check below keeps it there.
CRD_MAX_BYTES=$((128 * 1024))
gen_crd() {
  mkdir -p "$1"
  "$BIN/controller-gen" crd paths=./api/v1alpha1/... output:crd:artifacts:config="$1"
  local size
  size=$(wc -c <"$1/asya.sh_asyncactors.yaml")
  if [ "$size" -gt "$CRD_MAX_BYTES" ]; then
    echo "the AsyncActor CRD is $size bytes, over $CRD_MAX_BYTES: plain kubectl apply would soon refuse it" >&2
    return 1
  fi
}

# gen_manifests DIR: the plain manifests, rendered from the chart with its
# default values (release asya-sync in asya-system) and
# examples/values-rabbitmq.yaml (the broker user and the password Secrets
# of docs/install.md's first install; the chart defaults neither), plus the
# CRD. They carry no
# Secret: the hook credentials are named as existing Secrets of the default
# names, which manifests/README.md has the user create (the chart generates
# none in an offline render). HELM_ARGs, given after those values, render
# another variant (a release's: the image by digest, .ci/release.sh) and are
# named in the header.
gen_manifests() {
  local out=$1
  shift
  mkdir -p "$out/crd"
  gen_crd "$out/crd"
  local header="# Generated by .ci/e2e.sh manifests from chart/ with its default values
# and examples/values-rabbitmq.yaml${*:+, then $*}.
# Do not edit: change the chart and regenerate."
  local user=(-f examples/values-rabbitmq.yaml)
  local existing=(--set hooks.tls.existingSecret=asya-sync-tls --set hooks.auth.token.existingSecret=asya-sync-token)
  { echo "$header"
    "$BIN/helm" template asya-sync ./chart --namespace asya-system "${user[@]}" "${existing[@]}" "$@" \
      --show-only templates/compositecontroller.yaml
  } >"$out/compositecontroller.yaml"
  { echo "$header"
    "$BIN/helm" template asya-sync ./chart --namespace asya-system "${user[@]}" "${existing[@]}" "$@" \
      --show-only templates/serviceaccount.yaml \
      --show-only templates/rbac.yaml \
      --show-only templates/configmap.yaml \
      --show-only templates/service.yaml \
      --show-only templates/deployment.yaml \
      --show-only templates/pdb.yaml \
      --show-only templates/networkpolicy.yaml
  } >"$out/asya-sync.yaml"
}

# write_generated: regenerate manifests/ and chart/crds from their sources.
# ENVCONFIG_CRD: the EnvironmentConfig CRD flavors are written as, hand-written
# in chart/crds/ and copied beside the plain manifests (not into
# manifests/crd/, which users apply over whatever is there).
ENVCONFIG_CRD=apiextensions.crossplane.io_environmentconfigs.yaml

write_generated() {
  gen_manifests manifests
  mkdir -p chart/crds
  cp manifests/crd/asya.sh_asyncactors.yaml chart/crds/asya.sh_asyncactors.yaml
  cp chart/crds/$ENVCONFIG_CRD manifests/$ENVCONFIG_CRD
  log "regenerated manifests/ and chart/crds/"
}

# write_variant DIR HELM_ARG...: the manifests rendered with HELM_ARGs into
# DIR, with both CRDs, leaving manifests/ and chart/crds/ alone.
write_variant() {
  local out=$1
  shift
  gen_manifests "$out" "$@"
  cp chart/crds/$ENVCONFIG_CRD "$out/$ENVCONFIG_CRD"
  log "rendered the manifests into $out with $*"
}

# check_generated: regenerating must give no diff.
check_generated() {
  local tmp=$SCRATCH/generated
  gen_manifests "$tmp"
  local failed=0
  for f in crd/asya.sh_asyncactors.yaml compositecontroller.yaml asya-sync.yaml; do
    if ! diff -u "manifests/$f" "$tmp/$f"; then
      echo "manifests/$f is stale: run .ci/e2e.sh manifests" >&2
      failed=1
    fi
  done
  if ! diff -u chart/crds/$ENVCONFIG_CRD manifests/$ENVCONFIG_CRD; then
    echo "manifests/$ENVCONFIG_CRD differs from chart/crds/: run .ci/e2e.sh manifests" >&2
    failed=1
  fi
  if ! diff -u chart/crds/asya.sh_asyncactors.yaml "$tmp/crd/asya.sh_asyncactors.yaml"; then
    echo "chart/crds/asya.sh_asyncactors.yaml is stale: run .ci/e2e.sh manifests" >&2
    failed=1
  fi
  [ "$failed" = 0 ] || return 1
  log "manifests/ and chart/crds/ match their sources"
}

# The release image, as `make image` writes it (build/image).
IMAGE_DIR=$ROOT/.cache/image

# image_amd64 LAYOUT sets IMAGE_MANIFEST to the digest of the linux/amd64
# image in the OCI layout LAYOUT, and IMAGE_LAYER and IMAGE_CONFIG to its
# layer's and config's blobs.
image_amd64() {
  local index manifest
  index=$(jq -r '.manifests[0].digest' "$1/index.json")
  IMAGE_MANIFEST=$(jq -r '.manifests[] | select(.platform.os == "linux" and .platform.architecture == "amd64") | .digest' \
    "$1/blobs/${index/://}")
  manifest=$1/blobs/${IMAGE_MANIFEST/://}
  IMAGE_LAYER=$1/blobs/$(jq -r '.layers[0].digest' "$manifest" | tr : /)
  IMAGE_CONFIG=$1/blobs/$(jq -r '.config.digest' "$manifest" | tr : /)
}

# docker_context DIR: a copy of the tree as the Dockerfile's build context,
# filtered by .dockerignore, so that a file the build needs but
# .dockerignore drops fails the build from it.
docker_context() {
  local excludes=() line
  while IFS= read -r line; do
    line=${line%%#*}
    line=${line//[[:space:]]/}
    case "$line" in
      "") ;;
      # Docker anchors patterns at the context root; "**/" matches any depth.
      "**/"*) excludes+=(--exclude="${line#\*\*/}") ;;
      *) excludes+=(--exclude="/${line#/}") ;;
    esac
  done <.dockerignore
  command -v rsync >/dev/null || missing "rsync is not installed (the Docker build context is copied with it)"
  mkdir -p "$1"
  rsync -a "${excludes[@]}" ./ "$1/"
}

# image_step: `make image`, the release image for every platform, into
# $IMAGE_DIR. The amd64 binary in it must be static and say the build's
# version and commit; taken out of the image, it is the one the API tier
# runs (ASYA_SYNC_BIN), and the node tier runs the image itself. Then the
# amd64 image is built again from the Docker build context (another
# directory, no .git: the identity passed in as the Dockerfile's build
# arguments pass it): its manifest digest must be the first build's, and
# the --rootfs tree the Dockerfile copies must hold the same binary. Go's
# build is reproducible (-trimpath, the same toolchain), and the binary is
# linked again; what this catches is a time, an order, a path or a file of
# the tree leaking into the image.
image_step() {
  local start=$SECONDS version commit epoch ref bin=$ROOT/.cache/e2e/asya-sync
  version=$(git describe --tags --always --dirty 2>/dev/null || echo devel)
  commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
  epoch=$(git log -1 --format=%ct HEAD)
  SOURCE_DATE_EPOCH=$epoch make -s image VERSION="$version" COMMIT="$commit" >&2
  # From the archive, the file the node tier imports.
  local oci=$SCRATCH/image-oci
  mkdir -p "$oci" && tar -C "$oci" -xf "$IMAGE_DIR/asya-sync.oci.tar"
  image_amd64 "$oci"
  mkdir -p "$(dirname "$bin")"
  # Replaced by a rename, never rewritten: another run may be running it.
  tar -xzOf "$IMAGE_LAYER" asya-sync >"$bin.new"
  chmod 0755 "$bin.new"
  mv "$bin.new" "$bin"
  # Static: no dynamic section, so it runs on no base image.
  if readelf -d "$bin" 2>/dev/null | grep -q NEEDED; then
    echo "the image's asya-sync is dynamically linked" >&2
    return 1
  fi
  "$bin" --help >/dev/null
  local said
  said=$("$bin" version)
  case "$said" in
    "asya-sync $version (commit $commit, go"*) ;;
    *) echo "the image's asya-sync version printed \"$said\", want version $version and commit $commit" >&2; return 1 ;;
  esac
  local built=$SECONDS ctx=$SCRATCH/docker-context again=$SCRATCH/image-again
  ref=$(awk '$1 == "ref" {print $2}' "$IMAGE_DIR/digests")
  docker_context "$ctx"
  (cd "$ctx" && export SOURCE_DATE_EPOCH=$epoch &&
    go run ./build/image --platforms linux/amd64 --version "$version" --commit "$commit" --ref "$ref" --out "$again" >/dev/null &&
    go run ./build/image --rootfs "$again/rootfs" --platforms linux/amd64 --version "$version" --commit "$commit")
  local second
  second=$(awk '$1 == "linux/amd64" {print $2}' "$again/digests")
  if [ "$second" != "$IMAGE_MANIFEST" ]; then
    echo "the amd64 image built again from the Docker build context is $second, the first build $IMAGE_MANIFEST: the build is not reproducible" >&2
    return 1
  fi
  cmp "$again/rootfs/asya-sync" "$bin" || { echo "the Dockerfile's --rootfs tree holds another asya-sync than the image" >&2; return 1; }
  log "image OK: $(awk '$1 == "index" {print $2}' "$IMAGE_DIR/digests") ($ref), amd64 $IMAGE_MANIFEST, static;" \
    "built in $((built - start))s, the same digest again from the Docker build context in $((SECONDS - built))s"
}

# check_chart: helm lint --strict of the chart, with the values it needs to
# render offline (the broker user, the hook credentials generated) and with
# chart/ci/full-values.yaml; then helm package as a release makes it
# (.ci/release.sh chart, another version and appVersion), into scratch.
check_chart() {
  local start=$SECONDS out
  out=$("$BIN/helm" lint --strict ./chart -f e2e/testdata/values-broker-user.yaml --set hooks.generateOffline=true 2>&1) ||
    { echo "$out" >&2; return 1; }
  out=$("$BIN/helm" lint --strict ./chart -f chart/ci/full-values.yaml 2>&1) || { echo "$out" >&2; return 1; }
  ASYA_E2E_BIN=$BIN bash .ci/release.sh chart 0.0.0-ci.1 "$SCRATCH/chart" >/dev/null
  log "helm lint and helm package of the chart OK ($((SECONDS - start))s)"
}

# keda_crds sets KEDA_CRDS to the directory of KEDA's CRDs, all of them
# (the operator exits at start without eventing.keda.sh's).
keda_crds() {
  module_dir "github.com/kedacore/keda/v2@$KEDA_VERSION" config/crd/bases ||
    missing "KEDA $KEDA_VERSION CRDs not found (go mod download github.com/kedacore/keda/v2@$KEDA_VERSION failed)"
  KEDA_CRDS=$MODULE_DIR/config/crd/bases
}

# prometheus_operator_crds sets PROMETHEUS_OPERATOR_CRDS to the directory of
# the Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule).
prometheus_operator_crds() {
  local mod=github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION
  module_dir "$mod" example/prometheus-operator-crd ||
    missing "Prometheus Operator $PROMETHEUS_OPERATOR_VERSION CRDs not found (go mod download $mod failed)"
  PROMETHEUS_OPERATOR_CRDS=$MODULE_DIR/example/prometheus-operator-crd
}

# e2e_packages installs from Debian what is missing of jq (the tests run
# docs/migrate.md's blocks as printed, which use it, and the image step
# reads the image's index with it) and rsync (the image step copies the
# Docker build context with it).
e2e_packages() {
  local need=()
  command -v jq >/dev/null || need+=(jq)
  command -v rsync >/dev/null || need+=(rsync)
  [ ${#need[@]} = 0 ] && return
  [ "$(id -u)" = 0 ] || missing "${need[*]} not installed (jq: docs/migrate.md's blocks and the image step; rsync: the image step)"
  log "installing ${need[*]} from Debian"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } >&2 ||
    missing "could not install ${need[*]} from Debian"
}

# e2e_env: what every run of the tests needs, built or found, exported.
e2e_env() {
  require_tools
  e2e_packages
  check_generated
  check_chart
  image_step
  export ASYA_E2E_IMAGE_DIGESTS=$IMAGE_DIR/digests
  go vet -tags e2e ./e2e/... ./internal/testenv/
  listening 5672 || missing "RabbitMQ is not listening on 127.0.0.1:5672 (run .ci/services.sh)"
  listening "${ASYA_SQS_PORT:-9324}" || missing "the SQS emulator is not listening on 127.0.0.1:${ASYA_SQS_PORT:-9324} (run .ci/services.sh)"
  export ASYA_E2E_BIN=$BIN
  keda_crds
  export ASYA_E2E_KEDA_CRDS=$KEDA_CRDS
  build_keda
  export ASYA_E2E_KEDA_BIN=$BIN/keda-$KEDA_VERSION
  prometheus_operator_crds
  export ASYA_E2E_PROMETHEUS_OPERATOR_CRDS=$PROMETHEUS_OPERATOR_CRDS
  export ASYA_SYNC_BIN=$ROOT/.cache/e2e/asya-sync
}

# The test packages, one per tier, sharing internal/testenv (docs/testing.md,
# "Which folder is which tier"): e2e/api, and the ones that run only when
# asked and otherwise skip at once, e2e/metacontroller and e2e/cost. -p 1:
# one cluster at a time, and the output of -v streamed as the tests run.
E2E_PACKAGES=(./e2e/api/ ./e2e/metacontroller/ ./e2e/cost/)

# NODE_TESTS: the tests that run pods (e2e/node); they run once, in a tier of
# their own with the node up (ASYA_E2E_NODE=1), under Metacontroller's default
# apply.
NODE_TESTS='TestNode.*'

run_node() {
  node_tier
  log "running the node tests: actors' pods on a real kubelet"
  ASYA_E2E_NODE=1 go test -tags e2e -count=1 -timeout 30m ${E2E_TEST_FLAGS:--v} -run "^($NODE_TESTS)\$" ./e2e/node/ "$@"
}

run_e2e() {
  local start=$SECONDS
  e2e_env
  if [ $# -gt 0 ]; then
    log "running the e2e tests $* (apply strategy ${ASYA_E2E_APPLY_STRATEGY:-dynamic-apply})"
    go test -tags e2e -count=1 -p 1 -timeout 15m ${E2E_TEST_FLAGS:--v} "${E2E_PACKAGES[@]}" "$@"
  else
    log "running the e2e tests, children applied with Metacontroller's default dynamic apply"
    ASYA_E2E_APPLY_STRATEGY=dynamic-apply go test -tags e2e -count=1 -p 1 -timeout 15m ${E2E_TEST_FLAGS:--v} "${E2E_PACKAGES[@]}"
    log "running the core e2e tests again, children applied with server-side apply"
    ASYA_E2E_APPLY_STRATEGY=server-side-apply go test -tags e2e -count=1 -timeout 10m ${E2E_TEST_FLAGS:--v} \
      -run "^($CORE_TESTS)\$" ./e2e/api/
    run_node
  fi
  log "e2e done in $((SECONDS - start))s"
}

# The tests that run under both of Metacontroller's apply strategies (all in
# e2e/api): every shape of actor created, updated, scaled, made invalid and
# finalized.
CORE_TESTS='TestActorsChildrenAccepted|TestInvalidSpecInStatus|TestScalingToggle|TestFinalizeRemovesQueue'
CORE_TESTS+='|TestOneQueueOneOwner|TestHealthyActorWritesStatusThreeTimes|TestMigrateFromOperator|TestMigrateFromCrossplane'
CORE_TESTS+='|TestKEDAScalesFromZero|TestScalingStatusFollowsKEDA|TestKEDAWebhooksAdmitChildren|TestKubectlWaitForReady'


main() {
  case "${1:-all}" in
    tools) build_tools; build_keda; node_packages; build_containerd ;;
    node) shift; e2e_env; run_node "$@" ;;
    crd) require_tools; mkdir -p manifests/crd; gen_crd manifests/crd ;;
    manifests)
      require_tools
      if [ $# -gt 1 ]; then shift; write_variant "$@"; else write_generated; fi ;;
    check) require_tools; check_generated ;;
    image) e2e_packages; image_step ;;
    all) shift || true; run_e2e "$@" ;;
    test) shift; run_e2e "$@" ;;
    *) echo "unknown command: $1 (tools, crd, manifests, check, image, test, node)" >&2; exit 2 ;;
  esac
}

# One line, read whole before it runs: editing this file during a run
# cannot change what the run does.
main "$@"; exit $?
