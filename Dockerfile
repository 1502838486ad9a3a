# syntax=docker/dockerfile:1
# asya-sync: a static binary on a distroless base, running as nonroot.
# .ci/e2e.sh builds the same binary with the same flags (CGO_ENABLED=0,
# -trimpath, static) so this file's build step is exercised without Docker.

ARG GO_VERSION=1.26
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
# .git is not in the build context: pass the build's identity in, e.g.
#   docker build --build-arg VERSION=$(git describe --tags --always) --build-arg COMMIT=$(git rev-parse HEAD) .
ARG VERSION=devel
ARG COMMIT=unknown
# The runtime script is embedded from runtime/ by go:embed.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath \
      -ldflags="-s -w -X github.com/asya-sh/asya-sync/internal/version.version=${VERSION} -X github.com/asya-sh/asya-sync/internal/version.commit=${COMMIT}" \
      -o /out/asya-sync ./cmd/asya-sync

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/asya-sync /asya-sync
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/asya-sync", "serve"]
CMD ["--config", "/etc/asya-sync/config/config.yaml", "--listen", ":8080"]
