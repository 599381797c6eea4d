# syntax=docker/dockerfile:1
# Build stage: a wheel of the app and its dependencies.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# Runtime stage: no compilers, a non-root user, tokenizer ranks inside the installed
# packages (bpe-openai ships them), so the container needs no network at all.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    COMPACTOR_DATABASE_URL=sqlite:////var/lib/compactor/compactor.db
RUN useradd --system --uid 10001 --home-dir /var/lib/compactor --create-home compactor
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && python -c "from app.tokenizers.bpe import TokenizerRegistry; TokenizerRegistry().warm()"
USER compactor
WORKDIR /var/lib/compactor
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"]
CMD ["compactor", "serve", "--host", "0.0.0.0", "--port", "8000"]
