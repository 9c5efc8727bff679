"""The kinds of process that expose work-queue metrics, by the names queuelens gives them.

* ``controller-runtime``: a manager (kubebuilder, operator-sdk): ``workqueue_*`` with
  ``name`` and ``controller``, and ``controller_runtime_*`` (the worker count among them);
* ``component-base``: a Kubernetes component (kube-controller-manager and friends): the same
  ``workqueue_*`` with only ``name``, no ``controller_runtime_*`` (worker counts are flags);
* ``client-go``: a bare client-go queue with a metrics provider and nothing else.

The profile (:mod:`collectors.profile`) is one of the first two; the doctor
(:mod:`models.contract`) detects all three.
"""

from __future__ import annotations

__all__ = ["CLIENT_GO", "COMPONENT_BASE", "CONTROLLER_RUNTIME", "FRAMEWORKS"]

CONTROLLER_RUNTIME = "controller-runtime"
COMPONENT_BASE = "component-base"
CLIENT_GO = "client-go"
FRAMEWORKS: tuple[str, ...] = (CONTROLLER_RUNTIME, COMPONENT_BASE, CLIENT_GO)
