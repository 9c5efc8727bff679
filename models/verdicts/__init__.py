"""The advisor's verdict rules, one module per rule or close family, and their registry.

* :mod:`models.verdicts.inputs` — what the rules read besides the snapshot
  (:class:`~models.measurements.QueueSnapshot`): :class:`~models.verdicts.inputs.QueueHistory`,
  process totals;
* :mod:`models.verdicts.thresholds` — every threshold with its signal and reason;
* :mod:`models.verdicts.verdict` — the verdict, its typed kinds and severities;
* :mod:`models.verdicts.context` — one queue's evaluation context and the shared helpers;
* the rules: :mod:`~models.verdicts.stuck`, :mod:`~models.verdicts.retry_storm`,
  :mod:`~models.verdicts.requeue`, :mod:`~models.verdicts.contention` (its reasons in
  :mod:`~models.verdicts.contention_reasons`), :mod:`~models.verdicts.hot_key`,
  :mod:`~models.verdicts.long_passes`, :mod:`~models.verdicts.starvation`,
  :mod:`~models.verdicts.capacity` (backlog, add workers, over-provisioned) and
  :mod:`~models.verdicts.fallback` (insufficient data, healthy);
* :mod:`models.verdicts.registry` — each rule with its kind, its order of impact and its
  declared reads and suppressions; :func:`~models.verdicts.registry.run` evaluates them.

:mod:`models.advisor` is the facade over this package. Nothing is imported here, so that
:mod:`models.bindings` can read the kinds without importing the rules.
"""
