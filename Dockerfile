# memgest's container image: one static binary on distroless, run as a
# non-root user. Kubernetes manifests that use it: deploy/k8s/.
# `make check-deploy` runs this file's build command and checks the result
# is statically linked (no Docker daemon is needed for that check).

# GO_VERSION is the toolchain the image is built with; go.mod asks for 1.26.
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# The modules first, in a layer of their own, so that a change to the
# sources does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo: distroless/static has no libc) and reproducible
# (-trimpath drops the build machine's paths; -s -w the symbol tables).
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /memgest ./cmd/memgest

# distroless/static: CA certificates, tzdata and /etc/passwd, no shell and
# no package manager. The nonroot tag runs as uid/gid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /memgest /memgest
USER 65532:65532
# The default --data-dir (memgest-data) is relative: it lands in the
# nonroot user's home, which that user may write.
WORKDIR /home/nonroot
# memgest server's default ports: RESP clients, peers (node-to-node frames
# and Raft), HTTP (/metrics, /status).
EXPOSE 7001 17001 27001
ENTRYPOINT ["/memgest"]
