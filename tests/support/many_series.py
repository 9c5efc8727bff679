"""A fake Prometheus whose every answer holds many series (issue 23 §4), for
:class:`tests.support.fault_servers.FaultServer`.

Far below the 64 MiB answer cap, 100,000 series (5 MB) cost ``snapshot`` 107 s and 3.7 GB,
1.1 million (58 MB) 11.4 GB: the cost is the per-series Python objects and the per-queue
work, not the bytes. :func:`many_series` answers every instant query with a vector and
every range query with a matrix of ``count`` series, each its own queue (``name``) and
process (``job``/``instance``) unless ``queues`` is smaller — a fleet that size, or a
selector that matches far more than the user meant. The bodies are built once, as the
upstream JSON (compact, as Prometheus writes it)."""

from __future__ import annotations

import socket
import threading

from tests.support.fault_servers import Behaviour, Request

AT = 1704070200


def _body(count: int, queues: int, matrix: bool) -> bytes:
    kind = b"matrix" if matrix else b"vector"
    point = (b'"values":[[%d,"1.5"],[%d,"1.5"]]' % (AT - 60, AT) if matrix
             else b'"value":[%d,"1.5"]' % AT)
    items = (b'{"metric":{"name":"queue-%07d","job":"job-%07d","instance":"10.0.%d.%d:8080",'
             b'"le":"%d"},%s}' % (i % queues, i, i // 250 % 250, i % 250, i // queues, point)
             for i in range(count))
    return (b'{"status":"success","data":{"resultType":"' + kind + b'","result":['
            + b",".join(items) + b"]}}")


def many_series(count: int, queues: int | None = None) -> Behaviour:
    """Every query answered with ``count`` series over ``queues`` queue names (default: one
    queue each), with an exact Content-Length, as fast as the client reads."""
    names = max(1, min(count, queues or count))
    bodies = {False: _body(count, names, False), True: _body(count, names, True)}

    def run(request: Request, conn: socket.socket, stop: threading.Event) -> None:
        data = bodies[request.path.endswith("query_range")]
        head = ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode()
        try:
            conn.sendall(head)
            view = memoryview(data)
            for start in range(0, len(data), 1 << 20):
                if stop.is_set():
                    return
                conn.sendall(view[start:start + (1 << 20)])
        except OSError:
            return  # the client refused the answer and closed

    return run
