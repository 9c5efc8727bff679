"""One module per `queuelens` sub-command; each exposes ``register(subparsers)``.

Modules import heavy dependencies (dash, pandas, collectors) inside their handlers so that
``queuelens --help`` and the light commands start fast.
"""
