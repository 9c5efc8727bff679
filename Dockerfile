# queuelens dashboard image: multi-stage, slim, non-root, served by `queuelens serve` (waitress).
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
# One process keeps one shared query cache (ten browser tabs -> one set of queries); threads
# serve concurrent requests, and waitress reads each request whole before a thread sees it, so
# slow or idle clients cannot take the threads (limits: docs/operations.md "Limits"). /livez
# answers on threads of its own whatever Prometheus does. Inside the container 0.0.0.0 is
# needed for -p to work (serve warns about it: put an authenticating proxy in front).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8050/livez', timeout=4).status != 200)"]
CMD ["queuelens", "serve", "--host", "0.0.0.0", "--port", "8050"]
