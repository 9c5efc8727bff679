"""The project's own fuzz suite (issue 23, "Done when"): property-based tests with hypothesis of
the four surfaces an attacker or a careless operator reaches — CLI arguments, config files,
Prometheus answers and dashboard callbacks. Every test is derandomized (the same examples on
every run, so CI is deterministic) with a bounded number of examples and a per-example time
bound; the whole package runs in about a minute and a half on the 2-core CI machine."""
