# syntax=docker/dockerfile:1
# Build stage: wheels of the app and every dependency, so the runtime stage needs no
# compiler and no network.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
# The wheel carries the migrations (share/context-compactor/migrations).
COPY migrations ./migrations
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# Runtime stage: slim base, non-root user. The BPE ranks files ship inside the bpe-openai
# wheel and are verified (sha256) while building, so the container tokenizes with no
# network at all.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    COMPACTOR_DATABASE_URL=sqlite:////var/lib/compactor/compactor.db
RUN groupadd --system --gid 10001 compactor \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/compactor --create-home compactor
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index /wheels/*.whl \
    && rm -rf /wheels \
    && python -c "from app.tokenizers.bpe import TokenizerRegistry; TokenizerRegistry().warm()"
USER 10001:10001
WORKDIR /var/lib/compactor
# The data dir: the default SQLite file lives here (owned by the compactor user, so a
# fresh named volume mounted here is writable). With PostgreSQL nothing is written here.
VOLUME ["/var/lib/compactor"]
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"]
# Binding beyond loopback needs COMPACTOR_API_KEYS (or _API_KEYS_FILE); the service
# refuses to start without them unless COMPACTOR_ALLOW_UNAUTHENTICATED=true.
CMD ["compactor", "serve", "--host", "0.0.0.0", "--port", "8000"]
