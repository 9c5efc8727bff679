"""queuelens models: pure capacity math for controller work queues.

Rules for everything in this package: no I/O, no Dash, no Prometheus; plain functions and
frozen dataclasses; SI units (seconds, per-second rates) with the unit in the field name.
Bad input raises :class:`models.errors.ModelInputError` with a sentence a person can act on.
"""
