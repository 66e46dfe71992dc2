# syntax=docker/dockerfile:1

# Recall in a container: a static binary on distroless (CA certificates,
# tzdata, user nonroot 65532; no shell). Data lives in the /data volume.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t recall .
#   docker run -d --env-file .env -v recall-data:/data recall

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/bot ./cmd/bot \
 && mkdir -p -m 0700 /out/rootfs/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bot /bot
# An empty /data (0700) owned by nonroot: a new named volume copies it, owner and mode included.
COPY --from=build --chown=65532:65532 /out/rootfs/ /
USER 65532:65532
ENV RECALL_DATA_DIR=/data
WORKDIR /data
VOLUME ["/data"]
# Health and metrics listen on 127.0.0.1:9090 inside the container; nothing
# is exposed. To scrape /metrics from outside, set RECALL_HTTP_LISTEN=0.0.0.0:9090
# and publish the port (e.g. -p 127.0.0.1:9090:9090).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/bot", "healthcheck"]
# SIGTERM (docker stop) lets turns in flight finish: give it
# shutdown.timeout and more (docker stop -t 70, compose stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/bot"]
