# Dockerfile -- mfud on Debian 12, built in two stages.
# The dependency and build steps call the same script and the same make
# targets CI runs (.ci/run: docker/deps.sh, make), so CI proves them even
# where no Docker engine runs.
#   docker build -t mfud .
#   docker run --rm -p 8080:8080 -v mfud-data:/var/lib/mfud mfud

FROM debian:12-slim AS build
WORKDIR /src
COPY docker/deps.sh docker/deps.sh
RUN sh docker/deps.sh build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN make -j"$(nproc)" all

FROM debian:12-slim
LABEL org.opencontainers.image.title="mfud" \
      org.opencontainers.image.description="LLM training speed (MFU) estimator daemon"
COPY docker/deps.sh /usr/local/share/mfud/deps.sh
RUN sh /usr/local/share/mfud/deps.sh runtime && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home-dir /var/lib/mfud --shell /usr/sbin/nologin mfud \
    && mkdir -p /var/lib/mfud && chown mfud:mfud /var/lib/mfud
COPY --from=build /src/build/mfud /src/build/mfu /usr/local/bin/
COPY docker/entrypoint.sh /usr/local/bin/mfud-entrypoint
USER mfud
WORKDIR /var/lib/mfud
ENV MFUD_BIND=0.0.0.0 \
    MFUD_PORT=8080 \
    MFUD_DB=/var/lib/mfud/mfud.db
EXPOSE 8080
VOLUME ["/var/lib/mfud"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/mfud-entrypoint"]
