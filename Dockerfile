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
# Compile the simulator's numba loops once, at build time (10-15 s), into a cache the runtime
# user can read and write, so the first simulation in a running container does not pay it.
# (With a read-only root filesystem, mount a writable volume there, or the loops are compiled
# in memory by the first simulation of each process.)
ENV NUMBA_CACHE_DIR=/home/queuelens/.cache/numba
RUN queuelens simulate --arrival-rate 5 --keys 10 --workers 2 --service-mean 0.1 --duration 5 \
      --seed 0 >/dev/null \
 && queuelens retries --keys 10 --outage 1m --retry exp:0.005:10 >/dev/null
EXPOSE 8050
# One worker process keeps one shared query cache (ten browser tabs -> one set of queries);
# threads serve concurrent requests. Inside the container 0.0.0.0 is needed for -p to work.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8050/health', timeout=4).status != 200)"]
CMD ["gunicorn", "--bind", "0.0.0.0:8050", "--workers", "1", "--threads", "8", "--timeout", "120", "dashboard.app:create_app()"]
