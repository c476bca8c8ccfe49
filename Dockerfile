# syntax=docker/dockerfile:1
# Maka Assistant: `docker build -t maka-assistant:0.1.0 .`
# Runs as a non-root user and works on a read-only root filesystem given writable /tmp and /data
# (the Helm chart in helm/maka-assistant mounts both).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: install the project and its dependencies into a virtual environment ---------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
RUN python -m venv /opt/maka
WORKDIR /src
# Dependencies first (one layer that changes only with pyproject.toml): every dependency ships a
# wheel except jieba, which is pure Python, so no compiler is needed.
COPY pyproject.toml README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && /opt/maka/bin/pip install -r /tmp/requirements.txt
COPY bot ./bot
COPY sources ./sources
COPY storage ./storage
# Not editable: the package, its migrations and the console page go into site-packages, compiled
# to bytecode here because the running container cannot write any.
RUN /opt/maka/bin/pip install --no-deps . \
    && /opt/maka/bin/maka --help > /dev/null

# --- runtime -----------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
ARG MAKA_UID=10001
# OCR for images in attachments (bot/attachments/extract): tesseract with Chinese and English.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid ${MAKA_UID} maka \
    && useradd --system --uid ${MAKA_UID} --gid maka --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin maka \
    && mkdir -p /data \
    && chown maka:maka /data
COPY --from=build /opt/maka /opt/maka
ENV PATH=/opt/maka/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    MAKA_HTTP_HOST=0.0.0.0 \
    MAKA_HTTP_PORT=8080 \
    MAKA_DATA_DIR=/data \
    MAKA_CONSOLE=false
USER ${MAKA_UID}:${MAKA_UID}
WORKDIR /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('MAKA_HTTP_PORT', '8080'), timeout=4)"]
# SIGTERM drains (stop claiming, finish or release work in hand within MAKA_SHUTDOWN_GRACE).
STOPSIGNAL SIGTERM
ENTRYPOINT ["maka"]
CMD ["serve"]
