"""queuelens collectors: all I/O. Read work-queue signals from Prometheus (or the embedded
demo) and return typed data. Collectors decide nothing; models and the dashboard do."""
