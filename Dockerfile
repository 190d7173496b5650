# syntax=docker/dockerfile:1
# slivingdoc in a container: the MCP server on stdio by default.
#
#   docker build -t slivingdoc .
#   docker run -i --rm -v notebook:/notebook -v slivingdoc-state:/state slivingdoc
#
# /notebook is the notebook directory (the workspace root); /state holds the
# private root and the embedded store. docs/install.md has the settings.
# npm test builds this file unchanged with podman and drives the image over
# MCP (test/e2e/container.test.ts).

# The binary, cross-compiled on the build machine's platform for the image's
# with the release build (which fetches the target's Bun runtime from npm).
FROM --platform=$BUILDPLATFORM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY build ./build
COPY src ./src
ARG TARGETARCH
RUN case "$TARGETARCH" in \
      amd64) target=linux-x64 ;; \
      arm64) target=linux-arm64 ;; \
      *) echo "slivingdoc has no Linux binary for $TARGETARCH" >&2; exit 1 ;; \
    esac \
 && node_modules/.bin/bun build/release.ts --targets "$target" --out /out \
 && cp "/out/release/slivingdoc-$target" /out/slivingdoc

# The glibc binary needs only libc; tini is PID 1 because a PID 1 without a
# signal handler ignores SIGTERM, and `docker stop` should stop the server.
FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 slivingdoc \
 && useradd --system --uid 10001 --gid 10001 --home-dir /state --no-create-home --shell /usr/sbin/nologin slivingdoc \
 && mkdir /notebook /state \
 && chown 10001:10001 /notebook /state
COPY --from=build /out/slivingdoc /usr/local/bin/slivingdoc
# Everything that must outlive the container goes to the two volumes:
# checkouts' private state, the embedded store (XDG_DATA_HOME/slivingdoc/store.db)
# and the probe's trust marker under /state, the notebook under /notebook.
ENV HOME=/state \
    XDG_DATA_HOME=/state/data \
    SLIVINGDOC_PRIVATE_ROOT=/state/private \
    SLIVINGDOC_WORKSPACE_ROOT=/notebook
VOLUME ["/notebook", "/state"]
WORKDIR /notebook
USER 10001:10001
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/slivingdoc"]
CMD ["serve"]
