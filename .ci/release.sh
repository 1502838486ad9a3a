#!/usr/bin/env bash
# The steps of a release that run anywhere, each a command; the release
# workflow (.github/workflows/release.yml) runs them on a tag vX.Y.Z, and
# docs/install.md#release-artifacts says what it publishes.
#
#   .ci/release.sh check-tag vX.Y.Z [REPOSITORY]
#       the tag is chart/Chart.yaml's version and appVersion, CHANGELOG.md
#       has its section, and the chart's image.repository is REPOSITORY
#   .ci/release.sh push-image X.Y.Z REPOSITORY
#       push the image `make image` built (.cache/image) as
#       REPOSITORY:X.Y.Z (crane, pinned by go.mod); prints its digest,
#       which must be the one the build wrote
#   .ci/release.sh chart X.Y.Z OUTDIR
#       helm package the chart as version and appVersion X.Y.Z into OUTDIR;
#       prints the package's path
#   .ci/release.sh push-chart PACKAGE oci://REGISTRY/PATH [HELM_PUSH_FLAG...]
#       helm push the package (--plain-http for a local registry); prints
#       its digest
#   .ci/release.sh manifests DIGEST OUTDIR [REPOSITORY]
#       the plain manifests with the image REPOSITORY@DIGEST (the chart's
#       image.repository by default), the CRDs and namespace.yaml, into
#       OUTDIR, laid out as manifests/
#   .ci/release.sh assets OUTDIR SOURCE...
#       the release's files, flat in OUTDIR: each SOURCE file, and the YAML
#       files of each SOURCE directory and its crd/; with their SHA256SUMS
#   .ci/release.sh notes X.Y.Z
#       CHANGELOG.md's section of X.Y.Z: the release's notes
#   .ci/release.sh version X.Y.Z      (make version V=X.Y.Z)
#       bump the version everywhere it is spelled: chart/Chart.yaml,
#       manifests/ (regenerated), CHANGELOG.md (Unreleased becomes the
#       section of X.Y.Z, dated today) and the documents
#
# Relative paths are from the repository's root. helm is the one .ci/e2e.sh
# builds ($ASYA_E2E_BIN, default .cache/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${ASYA_E2E_BIN:-$ROOT/.cache/bin}
# The build `make image` leaves (build/image/).
IMAGE_DIR=$ROOT/.cache/image
IMAGE_ARCHIVE=$IMAGE_DIR/asya-sync.oci.tar
# Where the versioned image is named in the documents.
DOC_IMAGE=ghcr.io/asya-sh/asya-sync
SEMVER='[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?'

fail() {
  printf 'release: %s\n' "$*" >&2
  exit 1
}

SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

# chart_field KEY: a top-level scalar of chart/Chart.yaml, unquoted.
chart_field() {
  sed -n -E "s/^$1:[[:space:]]*\"?([^\"[:space:]]*)\"?[[:space:]]*\$/\\1/p" chart/Chart.yaml
}

# values_repository: the chart's default image.repository.
values_repository() {
  sed -n -E '/^image:/,/^[^[:space:]#]/s/^[[:space:]]+repository:[[:space:]]*"?([^"[:space:]]+)"?.*$/\1/p' chart/values.yaml | head -n 1
}

semver() {
  [[ $1 =~ ^$SEMVER$ ]] || fail "\"$1\" is not a version X.Y.Z"
}

# section VERSION: CHANGELOG.md's section of VERSION, without its heading,
# up to the next section or the link references.
section() {
  awk -v want="$1" '
    /^## \[/ {
      if (on) exit
      v = $0; sub(/^## \[/, "", v); sub(/\].*$/, "", v)
      if (v == want) { on = 1; found = 1; next }
    }
    /^\[[^]]+\]: / { if (on) exit }
    on { print }
    END { if (!found) exit 3 }
  ' CHANGELOG.md
}

notes() {
  [ $# = 1 ] || fail "usage: notes X.Y.Z"
  semver "$1"
  local text rc=0
  text=$(section "$1") || rc=$?
  [ "$rc" != 3 ] || fail "CHANGELOG.md has no section \"## [$1]\""
  [ "$rc" = 0 ] || fail "could not read CHANGELOG.md"
  # Without the blank lines before it (command substitution drops those after).
  text=$(printf '%s\n' "$text" | sed -e '/./,$!d')
  [ -n "$text" ] || fail "CHANGELOG.md's section \"## [$1]\" is empty"
  printf '%s\n' "$text"
}

check_tag() {
  { [ $# -ge 1 ] && [ $# -le 2 ]; } || fail "usage: check-tag vX.Y.Z [REPOSITORY]"
  local tag=$1 version chart app
  [[ $tag == v* ]] || fail "tag \"$tag\" does not start with v"
  version=${tag#v}
  semver "$version"
  chart=$(chart_field version)
  app=$(chart_field appVersion)
  [ "$chart" = "$version" ] || fail "tag $tag, but chart/Chart.yaml's version is \"$chart\" (make version V=$version)"
  [ "$app" = "$version" ] || fail "tag $tag, but chart/Chart.yaml's appVersion is \"$app\" (make version V=$version)"
  notes "$version" >/dev/null
  if [ $# = 2 ]; then
    local repo
    repo=$(values_repository)
    [ "$repo" = "$2" ] ||
      fail "the release pushes the image $2, but chart/values.yaml's image.repository is \"$repo\": the chart would install another image"
  fi
  echo "tag $tag: chart $chart, appVersion $app, CHANGELOG.md section present"
}

crane() {
  go run github.com/google/go-containerregistry/cmd/crane "$@"
}

# built_digest: the digest of the image index `make image` built, from its
# digests file.
built_digest() {
  local f=$IMAGE_DIR/digests d
  [ -f "$f" ] || fail "no $f: run make image first"
  d=$(sed -n -E 's/^index[[:space:]]+(sha256:[0-9a-f]{64})$/\1/p' "$f" | head -n 1)
  [ -n "$d" ] || fail "$f names no index digest (a line \"index sha256:...\")"
  echo "$d"
}

push_image() {
  [ $# = 2 ] || fail "usage: push-image X.Y.Z REPOSITORY"
  local version=$1 repo=$2 want layout out got
  semver "$version"
  [ -f "$IMAGE_ARCHIVE" ] || fail "no $IMAGE_ARCHIVE: run make image first"
  want=$(built_digest)
  layout=$SCRATCH/layout
  mkdir -p "$layout"
  tar -xf "$IMAGE_ARCHIVE" -C "$layout"
  # The layout's index.json names the multi-platform index, which crane
  # pushes as it is: its digest does not change.
  out=$(crane push "$layout" "$repo:$version")
  got=${out##*@}
  [ "$got" = "$want" ] || fail "pushed $repo:$version as $got, but the build's index is $want"
  echo "$got"
}

chart() {
  [ $# = 2 ] || fail "usage: chart X.Y.Z OUTDIR"
  local version=$1 out=$2 pkg
  semver "$version"
  [ -x "$BIN/helm" ] || fail "no helm in $BIN (.ci/e2e.sh tools builds it)"
  mkdir -p "$out"
  "$BIN/helm" package ./chart --version "$version" --app-version "$version" --destination "$out" >&2
  pkg=$out/asya-sync-$version.tgz
  [ -f "$pkg" ] || fail "helm package wrote no $pkg"
  # The package says the version it was given, and holds both CRDs.
  local meta
  meta=$("$BIN/helm" show chart "$pkg")
  grep -qx "version: $version" <<<"$meta" || fail "$pkg: version is not $version:
$meta"
  grep -qx "appVersion: $version" <<<"$meta" || fail "$pkg: appVersion is not $version:
$meta"
  local crds
  crds=$(tar -tzf "$pkg" | grep -c '^asya-sync/crds/.*\.yaml$' || true)
  [ "$crds" = 2 ] || fail "$pkg holds $crds CRDs, want 2"
  echo "$pkg"
}

push_chart() {
  [ $# -ge 2 ] || fail "usage: push-chart PACKAGE oci://REGISTRY/PATH [HELM_PUSH_FLAG...]"
  local pkg=$1 dest=$2 out digest
  shift 2
  [[ $dest == oci://* ]] || fail "\"$dest\" is not an oci:// address"
  out=$("$BIN/helm" push "$pkg" "$dest" "$@" 2>&1) || fail "helm push: $out"
  printf '%s\n' "$out" >&2
  digest=$(sed -n -E 's/^Digest:[[:space:]]*(sha256:[0-9a-f]{64})$/\1/p' <<<"$out")
  [ -n "$digest" ] || fail "helm push printed no digest"
  echo "$digest"
}

manifests() {
  { [ $# -ge 2 ] && [ $# -le 3 ]; } || fail "usage: manifests DIGEST OUTDIR [REPOSITORY]"
  local digest=$1 out=$2 repo=${3:-}
  [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || fail "\"$digest\" is not a digest sha256:<64 hex digits>"
  [ -n "$repo" ] || repo=$(values_repository)
  [ -n "$repo" ] || fail "chart/values.yaml names no image.repository"
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  bash .ci/e2e.sh manifests "$out" --set "image.repository=$repo" --set "image.digest=$digest"
  cp manifests/namespace.yaml "$out/namespace.yaml"
  grep -q "image: $repo@$digest\$" "$out/asya-sync.yaml" || fail "$out/asya-sync.yaml does not run $repo@$digest"
}

assets() {
  [ $# -ge 2 ] || fail "usage: assets OUTDIR SOURCE..."
  local out=$1 src f name files=()
  shift
  for src in "$@"; do
    if [ -d "$src" ]; then
      for f in "$src"/*.yaml "$src"/crd/*.yaml; do
        if [ -f "$f" ]; then files+=("$f"); fi
      done
    elif [ -f "$src" ]; then
      files+=("$src")
    else
      fail "no $src"
    fi
  done
  [ ${#files[@]} -gt 0 ] || fail "no file in $*"
  mkdir -p "$out"
  for f in "${files[@]}"; do
    name=${f##*/}
    [ ! -e "$out/$name" ] || fail "two files named $name"
    cp "$f" "$out/$name"
  done
  (cd "$out" && sha256sum -- * >"$SCRATCH/SHA256SUMS" && mv "$SCRATCH/SHA256SUMS" SHA256SUMS)
  ls "$out"
}

# bump VERSION: see the header.
bump() {
  [ $# = 1 ] || fail "usage: version X.Y.Z"
  local new=$1 old today
  semver "$new"
  old=$(chart_field version)
  semver "$old"
  [ "$new" != "$old" ] || fail "chart/Chart.yaml is at $new already"
  grep -q '^## \[Unreleased\]' CHANGELOG.md || fail "CHANGELOG.md has no \"## [Unreleased]\" section"
  ! grep -q "^## \\[$new\\]" CHANGELOG.md || fail "CHANGELOG.md has a section \"## [$new]\" already"
  today=$(date -u +%F)

  sed -i -E -e "s/^version:.*/version: $new/" -e "s/^appVersion:.*/appVersion: \"$new\"/" chart/Chart.yaml

  # Unreleased becomes the new version's section, under a new empty
  # Unreleased; the link references follow.
  local base
  base=$(sed -n -E 's|^\[Unreleased\]: (.*)/compare/.*$|\1|p' CHANGELOG.md)
  [ -n "$base" ] || fail "CHANGELOG.md has no link reference \"[Unreleased]: <repository>/compare/...\""
  awk -v new="$new" -v old="$old" -v today="$today" -v base="$base" '
    /^## \[Unreleased\]/ { print; print ""; print "## [" new "] - " today; next }
    /^\[Unreleased\]: / {
      print "[Unreleased]: " base "/compare/v" new "...HEAD"
      print "[" new "]: " base "/compare/v" old "...v" new
      next
    }
    { print }
  ' CHANGELOG.md >"$SCRATCH/changelog"
  cat "$SCRATCH/changelog" >CHANGELOG.md

  # The documents that spell the version: ASYA_SYNC_VERSION=X.Y.Z in a
  # command, or the image by its tag. docs/release_test.go finds the same.
  local old_re=${old//./\\.} f
  while IFS= read -r f; do
    sed -i -E -e "s/ASYA_SYNC_VERSION=$old_re([^0-9A-Za-z.-]|\$)/ASYA_SYNC_VERSION=$new\\1/g" \
      -e "s#${DOC_IMAGE//./\\.}:$old_re([^0-9A-Za-z.-]|\$)#$DOC_IMAGE:$new\\1#g" "$f"
  done < <(versioned_docs)

  # The manifests carry the image's tag and the version labels.
  bash .ci/e2e.sh manifests
  echo "version $old -> $new: chart/Chart.yaml, CHANGELOG.md, manifests/ and the documents; review with git diff" >&2
  if ! (notes "$new") >/dev/null 2>&1; then
    echo "CHANGELOG.md's section of $new is empty: write its notes before tagging v$new (the release takes them from there)" >&2
  fi
}

# versioned_docs: the files that may spell the version outside the chart
# and manifests/: the Markdown documents but the changelog, the examples
# and the chart's values.
versioned_docs() {
  find . \( -name .git -o -name .cache -o -name node_modules -o -name testdata \) -prune -o \
    -type f \( -name '*.md' -o -path './examples/*.yaml' -o -path ./chart/values.yaml \) \
    ! -path ./CHANGELOG.md -print | sort
}

main() {
  local cmd=${1:-}
  shift || true
  case "$cmd" in
    check-tag) check_tag "$@" ;;
    push-image) push_image "$@" ;;
    chart) chart "$@" ;;
    push-chart) push_chart "$@" ;;
    manifests) manifests "$@" ;;
    assets) assets "$@" ;;
    notes) notes "$@" ;;
    version) bump "$@" ;;
    *) fail "unknown command \"$cmd\" (check-tag, push-image, chart, push-chart, manifests, assets, notes, version)" ;;
  esac
}

main "$@"
