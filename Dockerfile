# syntax=docker/dockerfile:1
# asya-sync for those who build with Docker: the same files as the release
# image, from build/image's --rootfs mode, on scratch, running as nonroot.
#
# Releases are not built by this file but by `make image` (build/image):
# it needs no Docker engine and no registry, so it runs offline, and two
# builds of one commit give the same digest, the very image CI's node tier
# runs and checks by digest. This file needs a registry for its golang
# stage, and its image has the same files and run configuration but not
# the same digest: Docker writes the config and manifest its own way.
# TestDockerfileRunsLikeTheImage fails if ENTRYPOINT, CMD, USER or EXPOSE
# below differ from the builder's.

ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
# .git is not in the build context: pass the build's identity in, e.g.
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) .
ARG VERSION=devel
ARG COMMIT=unknown
ARG SOURCE_DATE_EPOCH=0
# The runtime script is embedded from runtime/ by go:embed.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go run ./build/image --rootfs /out --platforms "$TARGETOS/$TARGETARCH" \
      --version "$VERSION" --commit "$COMMIT"

FROM scratch
COPY --from=build /out/ /
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/asya-sync", "serve"]
CMD ["--config", "/etc/asya-sync/config/config.yaml", "--listen", ":8080"]
