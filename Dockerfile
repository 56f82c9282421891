# browserd container: build with the Swift toolchain, run on a slim Debian with three C libraries.
ARG SWIFT_IMAGE=swift:6.3-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${SWIFT_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libmicrohttpd-dev libsqlite3-dev liblz4-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift openapi.yaml ./
# Every folder Package.swift names a target in (the benchmarks' and fuzzers' too: the manifest checks them).
COPY Sources ./Sources
COPY Tests ./Tests
COPY bench/Sources ./bench/Sources
COPY fuzz/Sources ./fuzz/Sources
# With the PostgreSQL trait: the image runs one instance on SQLite or several on one PostgreSQL.
RUN swift build -c release --static-swift-stdlib --traits PostgreSQL --product browserd \
 && cp "$(swift build -c release --traits PostgreSQL --show-bin-path)/browserd" /usr/local/bin/browserd

FROM ${RUNTIME_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends libmicrohttpd12 libsqlite3-0 liblz4-1 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 browserd \
 && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin browserd \
 && mkdir -p /data \
 && chown 10001:10001 /data
COPY --from=build /usr/local/bin/browserd /usr/local/bin/browserd
ENV BROWSERD_HOST=0.0.0.0 \
    BROWSERD_PORT=8080 \
    BROWSERD_DATA_DIR=/data
USER 10001:10001
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/browserd", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/browserd"]
CMD ["serve"]
