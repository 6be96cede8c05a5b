# The published image: a two-stage build (Rust builder, distroless runtime).
#
#   docker build -t ghcr.io/ipam-guard/ipam-guard:0.1.0 .
#
# Both bases are build arguments, so the image builds wherever equivalent bases can be had
# (a mirror, a registry cache): --build-arg BUILDER_IMAGE=... --build-arg RUNTIME_IMAGE=...
# Dockerfile.prebuilt is the same runtime stage around a binary built outside a container; CI
# builds and runs that one (crates/e2e/tests/e2e_image.rs), since no registry is reachable from it.
#
# Plain Dockerfile syntax only (no `RUN --mount`): the classic builder and BuildKit both build it.
# The price is a full dependency build on every source change; BuildKit users who want a cached
# registry and target dir can add cache mounts to the RUN below.
ARG BUILDER_IMAGE=rust:1.95-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# Builder: the same Debian release (12, bookworm) as the runtime image, so the binary links
# against the glibc it will run with. ring needs a C compiler, which this image has.
FROM ${BUILDER_IMAGE} AS build
WORKDIR /src
# The whole crate (see .dockerignore): cargo needs every target Cargo.toml declares to exist.
COPY . .
# The release profile keeps debug info for profiling (Cargo.toml); the image leaves it out
# (124 MB -> 22 MB) but keeps the symbols, so a panic's backtrace still names its functions.
RUN cargo build --release --locked --bin ipam-guard \
 && strip --strip-debug -o /ipam-guard target/release/ipam-guard

# Runtime: glibc, libgcc and CA certificates, no shell, no package manager, user 65532.
# Keep in step with Dockerfile.prebuilt (crates/e2e/tests/e2e_image.rs compares the two).
FROM ${RUNTIME_IMAGE}
COPY --from=build /ipam-guard /ipam-guard
USER 65532:65532
# glibc's per-thread cache of freed blocks: 64 per size up to 256 bytes (its default is 7 up to
# 1,032). A review allocates about 110 small blocks and frees them together; with 7 cached most
# of them went the slow way. -5% instructions per review, memory after a 210k-object load within
# its run-to-run spread; caching larger blocks too cost 6 MiB there (docs/performance.md,
# "Memory").
ENV GLIBC_TUNABLES=glibc.malloc.tcache_count=64:glibc.malloc.tcache_max=256
# webhook (HTTPS), probes, metrics, decider peers: the ports manifests/deployment.yaml passes.
EXPOSE 9443 8081 8080 9444
ENTRYPOINT ["/ipam-guard"]
CMD ["serve"]
