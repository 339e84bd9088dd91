# delta-downgrade: local build, test and demo. Needs Python >= 3.10 and Java 17+ (PySpark 4).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
# deltalake 0.18.2, an older client the tests read with, beside the venv's deltalake 1.6.6: both
# cannot be installed in one environment, so this one goes to its own directory (PYTHONPATH).
DELTALAKE_018 := $(VENV)/deltalake-0.18.2
# Azurite (the Azure Blob emulator the object-store tests start) from the npm registry, into the
# venv; without npm the Azure tests skip with the reason.
AZURITE_VERSION := 3.37.0
NODE_DIR := $(VENV)/node
# Interpreters tried in order for a new venv; override with `make venv PYTHON=/path/to/python3.x`.
PYTHON_CANDIDATES := python3 python3.13 python3.12 python3.11 python3.10
PYTEST_ARGS ?=
# PySpark honours $JAVA_HOME before PATH; check the java it will actually use.
JAVA := $(if $(JAVA_HOME),$(JAVA_HOME)/bin/java,java)
# pip on some machines prints one "WARNING: Location '...' is ignored" per index; drop those lines
# (the `|| true` keeps grep's "nothing left" status from failing; pipefail keeps pip's status).
QUIET_PIP := { grep -v "WARNING: Location" || true; }

.PHONY: venv check-java jars test test-classic test-connect demo wheel clean distclean

# ---- Delta's jars: delta-spark for pyspark's Spark line, delta-storage, hadoop-aws + AWS SDK
# (jars/pom.xml), resolved by Maven into a repository-local Maven repository under .jars/ (ignored
# by git; fresh it takes ~25 s and ~770 MB, then nothing until jars/pom.xml changes). The tests read
# .jars/spark.classpath (tests/delta_jars.py) and fail without it.
JARS_DIR := .jars
JARS_CLASSPATH := $(JARS_DIR)/spark.classpath
MVN ?= mvn

jars: $(JARS_CLASSPATH)

$(JARS_CLASSPATH): jars/pom.xml
	@command -v $(MVN) >/dev/null 2>&1 || { \
	  echo "ERROR: Maven ($(MVN)) not found: the tests need Delta's jars (jars/pom.xml);" \
	       "install it (e.g. apt-get install maven)" >&2; exit 1; }
	$(MVN) -q -B -f jars/pom.xml -Dmaven.repo.local=$(abspath $(JARS_DIR))/m2 dependency:build-classpath
	@test -s $@ && touch $@
# ---- end of Delta's jars

venv: $(STAMP)

$(PY):
	@py=""; \
	for c in $(or $(PYTHON),$(PYTHON_CANDIDATES)); do \
	  if command -v "$$c" >/dev/null 2>&1 && \
	     "$$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' >/dev/null 2>&1; then \
	    py="$$c"; break; \
	  fi; \
	done; \
	if [ -z "$$py" ]; then \
	  echo "ERROR: no Python >= 3.10 found (tried: $(or $(PYTHON),$(PYTHON_CANDIDATES))); set PYTHON=/path/to/python3.x" >&2; \
	  exit 1; \
	fi; \
	echo "Creating $(VENV) with $$py ($$("$$py" -c 'import sys; print(sys.version.split()[0])'))"; \
	"$$py" -m venv $(VENV) || { \
	  echo "ERROR: '$$py -m venv' failed; on Debian/Ubuntu install the python3-venv package" >&2; \
	  rm -rf $(VENV); exit 1; }

# Re-install only when a pyproject.toml is newer than the stamp (or the venv is new). The
# repository-only tools (tools/: table builders, demo, run-job/validate-bundle) are installed
# here next to the package and nowhere else: the wheel (`make wheel`) never contains them.
$(STAMP): pyproject.toml tools/pyproject.toml | $(PY)
	@echo "$(PY) -m pip install --upgrade pip"
	@$(PY) -m pip install --upgrade pip 2>&1 | $(QUIET_PIP)
	@echo "$(PY) -m pip install -e '.[dev]' -e tools"
	@$(PY) -m pip install -e '.[dev]' -e tools 2>&1 | $(QUIET_PIP)
	@echo "$(PY) -m pip install --target $(DELTALAKE_018) deltalake==0.18.2"
	@rm -rf $(DELTALAKE_018)
	@$(PY) -m pip install --no-deps --target $(DELTALAKE_018) deltalake==0.18.2 pyarrow-hotfix==0.7 2>&1 | $(QUIET_PIP)
	@if command -v npm >/dev/null 2>&1; then \
	  echo "npm install --prefix $(NODE_DIR) azurite@$(AZURITE_VERSION)"; \
	  npm install --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error azurite@$(AZURITE_VERSION); \
	else \
	  echo "npm not found: Azurite is not installed and the Azure object-store tests will skip"; \
	fi
	@touch $(STAMP)

check-java:
	@if ! command -v "$(JAVA)" >/dev/null 2>&1; then \
	  echo "ERROR: Java not found ($(JAVA)). PySpark 4 needs Java 17+:" \
	       "install it (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME." >&2; \
	  exit 1; \
	fi; \
	raw=$$("$(JAVA)" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n 1); \
	major="$${raw%%[.+-]*}"; \
	if [ "$$major" = "1" ]; then major=$$(echo "$$raw" | cut -d. -f2); fi; \
	major="$${major%%[!0-9]*}"; \
	if [ -z "$$major" ]; then \
	  echo "ERROR: cannot parse the Java version from '$(JAVA) -version':" >&2; \
	  "$(JAVA)" -version >&2 || true; exit 1; \
	fi; \
	if [ "$$major" -lt 17 ]; then \
	  echo "ERROR: Java $$raw found ($(JAVA)), but PySpark 4 needs Java 17+:" \
	       "install a newer JDK and put it first on PATH or set JAVA_HOME." >&2; \
	  exit 1; \
	fi; \
	echo "Java $$raw OK ($(JAVA))"

# The whole suite on classic Spark, then every integration test and every unit test that uses
# Spark again on Spark Connect (a Connect
# server of its own, as Databricks serverless; tests/spark_connect_server.py).
test: test-classic test-connect

test-classic: venv check-java jars
	$(VENV)/bin/pytest -q $(PYTEST_ARGS)

test-connect: venv check-java jars
	$(VENV)/bin/pytest -q --spark-connect $(PYTEST_ARGS)

demo: venv check-java
	$(PY) -m delta_downgrade_tools.demo

wheel: venv
	$(PY) -m build --wheel

clean:
	rm -rf build dist .pytest_cache spark-warehouse metastore_db derby.log
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name '*.egg-info' \) -type d -print0 \
	  | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV) $(JARS_DIR)
