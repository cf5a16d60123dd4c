# Entitled in a container: the Swift toolchain builds it, a slim Debian runs it.
#
#   docker build -t entitled .
#   docker run -p 8080:8080 -v entitled-data:/var/lib/entitled \
#     -v "$PWD/entitled.json:/etc/entitled/entitled.json:ro" -e ENTITLED_API_KEY=… entitled
#
# scripts/docker-equivalent-build.sh builds the same way without Docker and checks that
# RUNTIME_PACKAGES below is what the binary loads (CI runs the check; docs/deploy.md).

# Build stage: Debian bookworm with the Swift toolchain, the C libraries' headers (the -dev packages
# SwiftPM's system library targets name) and a release build with the Swift runtime linked in.
ARG SWIFT_IMAGE=swift:6.3-bookworm
FROM ${SWIFT_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libssl-dev libsqlite3-dev zlib1g-dev libzstd-dev libpq-dev libmicrohttpd-dev libcurl4-openssl-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
# The client and the sample's packages: the manifest depends on them by path (unused by `entitled`).
COPY Clients ./Clients
COPY Examples ./Examples
COPY certs ./certs
RUN swift build -c release --static-swift-stdlib --product entitled \
 && install -D -m 0755 .build/release/entitled /out/entitled

# Runtime stage: the six C libraries' runtime packages (OpenSSL 3, SQLite, libpq, libmicrohttpd,
# libcurl, which the outbound HTTP client, HTTPClient, links, and zstd, which compresses the
# ledger's JSON); nothing else.
FROM debian:bookworm-slim
ARG RUNTIME_PACKAGES="libssl3 libsqlite3-0 libpq5 libmicrohttpd12 libcurl4 libzstd1"
RUN apt-get update \
 && apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES} ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home-dir /var/lib/entitled --create-home --shell /usr/sbin/nologin entitled
COPY --from=build /out/entitled /usr/local/bin/entitled
USER entitled
WORKDIR /var/lib/entitled
# Only where the file is: listen and database are the file's ("listen": "0.0.0.0:8080",
# "database": "sqlite:/var/lib/entitled/entitled.sqlite"), never replaced by the image.
ENV ENTITLED_CONFIG=/etc/entitled/entitled.json
VOLUME /var/lib/entitled
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/entitled"]
CMD ["serve"]
