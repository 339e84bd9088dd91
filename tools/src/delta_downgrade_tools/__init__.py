"""delta-downgrade-tools: what the repository needs around the runtime package and a Databricks
job never does — table builders for tests and benchmarks, ``make demo``, and the local job runner
behind ``delta-downgrade run-job`` / ``validate-bundle``. Installed editable by ``make venv`` only;
never built into the wheel that a job installs."""
