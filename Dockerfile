# queuelens dashboard image: multi-stage, slim, non-root, served by gunicorn.
#   docker build -t queuelens .
#   docker run --rm -p 8050:8050 -e QUEUELENS_PROMETHEUS_URL=http://prometheus:9090 queuelens
# Without QUEUELENS_PROMETHEUS_URL the embedded demo fleet is shown.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY dashboard ./dashboard
COPY collectors ./collectors
COPY models ./models
# constraints.txt (scripts/lock.sh): the dependency versions the tests ran with.
RUN pip wheel --no-cache-dir --wheel-dir /wheels -c constraints.txt .

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin queuelens
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER queuelens
WORKDIR /home/queuelens
# Compile every copy of the simulator's numba loops once, at build time (about 12 s:
# models.simulate.warm_up, what `queuelens serve` does in the background), into a cache the
# runtime user can read and write, so no simulation in a running container compiles. (numba
# uses a cache folder only where it can write: with a read-only root filesystem mount a
# writable volume here; without one, the loops are compiled once per container into a private
# folder of the temporary directory, or in memory by each process if that is read-only too.)
ENV NUMBA_CACHE_DIR=/home/queuelens/.cache/numba
RUN python -c "from models.simulate import warm_up; warm_up()"
EXPOSE 8050
# One worker process keeps one shared query cache (ten browser tabs -> one set of queries);
# threads serve concurrent requests. Inside the container 0.0.0.0 is needed for -p to work.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8050/health', timeout=4).status != 200)"]
CMD ["gunicorn", "--bind", "0.0.0.0:8050", "--workers", "1", "--threads", "8", "--timeout", "120", "dashboard.app:create_app()"]
