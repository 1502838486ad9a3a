# The node tier's pieces, sourced by .ci/e2e.sh: containerd built from its
# module at a pinned version, runc and the CNI plugins from Debian, and the
# images the pods run, written as docker-archive tarballs without a
# registry or a Docker engine, except asya-sync's: the release image the
# image step built (make image), as it is. The kubelet, kube-proxy and the
# scheduler are built with the other Kubernetes tools (e2e/tools).
#
# Needs: root (containerd, runc and the kubelet), cgroups, and Debian's
# apt for runc, containernetworking-plugins, debootstrap and nftables.

CONTAINERD_VERSION=v2.4.2
# Bump when the way an image is built changes.
NODE_IMAGES_REV=1
NODE_CACHE=$ROOT/.cache/node
DEBIAN_MIRROR=${ASYA_E2E_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# node_packages installs runc, the CNI plugins (bridge, host-local),
# debootstrap and nft (kube-proxy's nftables mode) from Debian when they
# are missing.
node_packages() {
  local need=()
  [ -x /usr/sbin/runc ] || need+=(runc)
  [ -x /usr/sbin/nft ] || need+=(nftables)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  [ ${#need[@]} = 0 ] && return
  [ "$(id -u)" = 0 ] || missing "the node tier needs root to install ${need[*]}"
  log "installing ${need[*]} from Debian"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"; } >&2 ||
    missing "could not install ${need[*]} from Debian"
}

# build_containerd: containerd, ctr and the runc v2 shim at
# CONTAINERD_VERSION into $BIN/containerd-$CONTAINERD_VERSION, static and
# without the snapshotters the tier does not use.
build_containerd() {
  local out=$BIN/containerd-$CONTAINERD_VERSION want src
  want="$CONTAINERD_VERSION $(go env GOVERSION)"
  if [ -x "$out/containerd" ] && [ -x "$out/ctr" ] && [ -x "$out/containerd-shim-runc-v2" ] &&
    [ "$(cat "$out/.stamp" 2>/dev/null)" = "$want" ]; then
    log "containerd $CONTAINERD_VERSION up to date in $out"
    return
  fi
  log "building containerd $CONTAINERD_VERSION into $out"
  local start=$SECONDS
  module_dir "github.com/containerd/containerd/v2@$CONTAINERD_VERSION" cmd/containerd ||
    missing "containerd $CONTAINERD_VERSION could not be downloaded"
  src=$SCRATCH/containerd-src
  cp -r "$MODULE_DIR" "$src" && chmod -R u+w "$src"
  mkdir -p "$out"
  (cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -tags "no_btrfs no_devmapper no_zfs no_aufs" \
    -ldflags="-s -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
    -o "$out/" ./cmd/containerd ./cmd/ctr ./cmd/containerd-shim-runc-v2) ||
    missing "could not build containerd $CONTAINERD_VERSION (log above)"
  rm -rf "$src"
  echo "$want" >"$out/.stamp"
  log "containerd built in $((SECONDS - start))s"
}

# python_layer: Debian bookworm's python3 on a minimal base (debootstrap),
# as one layer tarball, cached by NODE_IMAGES_REV.
python_layer() {
  local out=$NODE_CACHE/python-layer.tar want="bookworm python3 rev $NODE_IMAGES_REV"
  if [ -f "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$want" ]; then
    return
  fi
  log "building the Python rootfs from Debian packages (debootstrap)"
  local start=$SECONDS rootfs=$SCRATCH/python-rootfs
  debootstrap --variant=minbase --include=python3 bookworm "$rootfs" "$DEBIAN_MIRROR" \
    >"$SCRATCH/debootstrap.log" 2>&1 ||
    { tail -20 "$SCRATCH/debootstrap.log" >&2; missing "debootstrap of the runtime image failed (log above)"; }
  rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc "$rootfs"/usr/share/man
  mkdir -p "$NODE_CACHE"
  # Device nodes are the runtime's business, not the image's.
  tar -C "$rootfs" --numeric-owner --exclude=./dev/* --exclude=./proc/* --exclude=./sys/* -cf "$out" .
  rm -rf "$rootfs"
  echo "$want" >"$out.stamp"
  log "Python rootfs built in $((SECONDS - start))s ($(du -h "$out" | cut -f1))"
}

# image_archive OUT REFS CONFIG LAYER...: a docker-archive tarball (what
# `docker save` writes and `ctr images import` reads) of the layers, in
# order, with the image config CONFIG (a JSON object: Entrypoint, Cmd,
# Env, User, WorkingDir), named by each of REFS (space-separated).
image_archive() {
  local out=$1 refs="" config=$3 dir diffs="" layers="" i=0 layer sum ref
  for ref in $2; do refs+="${refs:+,}\"$ref\""; done
  shift 3
  dir=$(mktemp -d "$SCRATCH/image.XXXX")
  for layer in "$@"; do
    cp "$layer" "$dir/layer$i.tar"
    sum=$(sha256sum "$dir/layer$i.tar" | cut -d' ' -f1)
    diffs+="${diffs:+,}\"sha256:$sum\""
    layers+="${layers:+,}\"layer$i.tar\""
    i=$((i + 1))
  done
  printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":[%s]}}' \
    "$config" "$diffs" >"$dir/config.json"
  sum=$(sha256sum "$dir/config.json" | cut -d' ' -f1)
  mv "$dir/config.json" "$dir/$sum.json"
  printf '[{"Config":"%s.json","RepoTags":[%s],"Layers":[%s]}]' "$sum" "$refs" "$layers" >"$dir/manifest.json"
  tar -C "$dir" -cf "$out" .
  rm -rf "$dir"
}

# layer_of DIR OUT: a layer tarball of DIR's contents, owned by root.
layer_of() {
  tar -C "$1" --owner=0 --group=0 --numeric-owner -cf "$2" .
}

# go_static PKG OUT: a static binary of one of this repository's commands.
go_static() {
  CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$2" "$1" || missing "could not build $1"
}

# quickstart_*: the images the README's quick start names, which the
# node tier runs as printed: the example actor's Python image, the chart's
# default asya-sync image, the sidecar of examples/values-rabbitmq.yaml and
# the default sidecar of flat actors.
quickstart_python() {
  echo "docker.io/library/$(sed -n 's/^ *image: *//p' examples/hello-actor.yaml)"
}
quickstart_service() {
  local repo version
  repo=$(sed -n 's/^  repository: *//p' chart/values.yaml | head -1)
  version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' chart/Chart.yaml)
  echo "$repo:$version"
}
quickstart_sidecar() {
  sed -n 's/^  sidecarImage: *//p' examples/values-rabbitmq.yaml
  # A flat actor's sidecar when the values name none: the service's default.
  sed -n 's/^\tDefaultFlatSidecarImage *= *"\(.*\)"$/\1/p' config/flat.go
}

# build_node_images writes every image the node tier imports into
# $NODE_CACHE/images, and exports ASYA_E2E_NODE_IMAGES. The references are
# e2e.local/<name>:e2e; the tests name them the same way. The quick start's
# images are the same ones under the names it prints (quickstart_*).
#   pause      the pod sandbox (e2e/pause)
#   runtime    Debian's python3 with the test handlers baked in at /app
#   sidecar    the test sidecar (e2e/sidecar)
#   state-connector  Debian's python3 with the test state connector
#              (e2e/connector), which keeps a state proxy's files in Redis
#   asya-sync  the release image (asya_sync_images), and asya-sync:e2e-next,
#              the same with another runtime script
build_node_images() {
  local images=$NODE_CACHE/images d start=$SECONDS
  mkdir -p "$images"
  python_layer

  d=$SCRATCH/pause && mkdir -p "$d"
  go_static ./e2e/pause "$d/pause"
  layer_of "$d" "$SCRATCH/pause.tar"
  image_archive "$images/pause.tar" e2e.local/pause:e2e '{"Entrypoint":["/pause"],"User":"65535:65535"}' "$SCRATCH/pause.tar"

  d=$SCRATCH/handlers && mkdir -p "$d/app"
  cp e2e/testdata/node/*.py "$d/app/"
  layer_of "$d" "$SCRATCH/handlers.tar"
  image_archive "$images/runtime.tar" e2e.local/runtime:e2e \
    '{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","PYTHONPATH=/app","PYTHONUNBUFFERED=1"],"WorkingDir":"/app","User":"1000:1000"}' \
    "$NODE_CACHE/python-layer.tar" "$SCRATCH/handlers.tar"
  # The stock Python image: Debian's python3 alone, as root, no handlers.
  image_archive "$images/python.tar" "$(quickstart_python)" \
    '{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","LANG=C.UTF-8"],"Cmd":["python3"]}' \
    "$NODE_CACHE/python-layer.tar"

  d=$SCRATCH/connector && mkdir -p "$d/connector"
  cp e2e/connector/redis_connector.py "$d/connector/"
  layer_of "$d" "$SCRATCH/connector.tar"
  image_archive "$images/state-connector.tar" e2e.local/state-connector:e2e \
    '{"Entrypoint":["python3","/connector/redis_connector.py"],"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","PYTHONUNBUFFERED=1"],"User":"1000:1000"}' \
    "$NODE_CACHE/python-layer.tar" "$SCRATCH/connector.tar"

  d=$SCRATCH/sidecar && mkdir -p "$d"
  go_static ./e2e/sidecar "$d/asya-sidecar"
  layer_of "$d" "$SCRATCH/sidecar.tar"
  image_archive "$images/sidecar.tar" "e2e.local/sidecar:e2e $(quickstart_sidecar)" '{"Entrypoint":["/asya-sidecar"],"User":"1000:1000"}' "$SCRATCH/sidecar.tar"

  asya_sync_images "$images"
  export ASYA_E2E_NODE_IMAGES=$images
  log "node images written in $((SECONDS - start))s"
}

# asya_sync_images DIR: the release image the image step built
# ($IMAGE_DIR, .ci/e2e.sh), byte for byte: its OCI archive, which names
# the chart's default image (quickstart_service), and a copy of it whose
# index.json names the same index e2e.local/asya-sync:e2e. The node
# imports both with the digest reference a pull records
# (internal/testenv, importImages). Then asya-sync:e2e-next: the amd64
# image's layer and run configuration under one more layer, holding
# another runtime script as the service's next release would embed one;
# the tests point ASYA_RUNTIME_SCRIPT_PATH at it.
asya_sync_images() {
  local images=$1 archive=$IMAGE_DIR/asya-sync.oci.tar d=$SCRATCH/asya-sync-oci name
  [ -f "$archive" ] || missing "no release image at $archive (the image step, .ci/e2e.sh image, builds it)"
  mkdir -p "$d"
  tar -C "$d" -xf "$archive"
  name=$(jq -r '.manifests[0].annotations["io.containerd.image.name"]' "$d/index.json")
  if [ "$name" != "$(quickstart_service)" ]; then
    echo "make image named the image $name, the chart's default image is $(quickstart_service)" >&2
    return 1
  fi
  cp "$archive" "$images/asya-sync.tar"
  jq '.manifests[0].annotations += {"io.containerd.image.name": "e2e.local/asya-sync:e2e", "org.opencontainers.image.ref.name": "e2e"}' \
    "$d/index.json" >"$SCRATCH/index.json"
  mv "$SCRATCH/index.json" "$d/index.json"
  tar -C "$d" -cf "$images/asya-sync-e2e.tar" .

  image_amd64 "$d"
  gunzip -c "$IMAGE_LAYER" >"$SCRATCH/asya-sync-layer.tar"
  local next=$SCRATCH/asya-sync-next && mkdir -p "$next/e2e"
  { cat runtime/asya_runtime.py; echo "# e2e: the next release's runtime"; } >"$next/e2e/asya_runtime.py"
  layer_of "$next" "$SCRATCH/asya-sync-next.tar"
  image_archive "$images/asya-sync-next.tar" e2e.local/asya-sync:e2e-next "$(jq -c .config "$IMAGE_CONFIG")" \
    "$SCRATCH/asya-sync-layer.tar" "$SCRATCH/asya-sync-next.tar"
}

# node_tier: everything the node tests need, or a loud skip (a failure in CI).
node_tier() {
  [ "$(id -u)" = 0 ] || missing "the node tier needs root (containerd, runc, the kubelet)"
  [ -d /sys/fs/cgroup ] || missing "the node tier needs cgroups"
  node_packages
  build_containerd
  build_node_images
  export ASYA_E2E_CONTAINERD_BIN=$BIN/containerd-$CONTAINERD_VERSION
}
