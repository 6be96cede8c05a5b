# syntax=docker/dockerfile:1
# Untested on the development machine (it has no container engine); see manifests/README.md.
#
#   docker build -t ghcr.io/ipam-guard/ipam-guard:0.1.0 .

# Builder: the same Debian release (12, bookworm) as the runtime image, so the binary links
# against the glibc it will run with. ring needs a C compiler, which this image has.
FROM rust:1.95-bookworm AS build
WORKDIR /src
# The whole crate (see .dockerignore): cargo needs every target Cargo.toml declares to exist.
COPY . .
# Cache mounts keep the registry and target directory between builds (BuildKit); the binary is
# copied out because the cache mount is not part of the layer.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin ipam-guard \
 && cp target/release/ipam-guard /ipam-guard

# Runtime: glibc, libgcc and CA certificates, no shell, no package manager, user 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /ipam-guard /ipam-guard
USER 65532:65532
# webhook (HTTPS), probes, metrics: the ports manifests/deployment.yaml passes.
EXPOSE 9443 8081 8080
ENTRYPOINT ["/ipam-guard"]
CMD ["serve"]
