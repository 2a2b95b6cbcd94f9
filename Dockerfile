# The worker: a static binary on a distroless base, running as non-root.
# The base has no shell and no Python: execute_shell_command and
# execute_python_code (off by default) need an image that has them.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/worker ./cmd/worker
# The workspace mount point, owned by the runtime user: a named volume
# mounted there starts with this ownership.
RUN mkdir -p /out/workspace

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/worker /usr/local/bin/worker
COPY --from=build --chown=65532:65532 /out/workspace /workspace
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/worker"]
