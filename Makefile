# delta-downgrade: local build, test and demo. Needs Python >= 3.11 and Java 17+ (PySpark 4).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

VENV    := .venv
PY      := $(VENV)/bin/python
# One stamp per set of packages: `make demo` installs the package with its `local` extra, the
# repository's tools and deltalake 0.18.2 (the client it reads its result with); `make test` adds the `test` dependency group and the outside
# readers. Each is re-installed when a pyproject.toml is newer than its stamp.
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test
# pip's and npm's own output goes here, shown only when an install fails.
INSTALL_LOG := $(VENV)/install.log
# deltalake 0.18.2, an older client the demo and the tests read with, beside the venv's deltalake 1.6.6: both
# cannot be installed in one environment, so this one goes to its own directory (PYTHONPATH).
DELTALAKE_018 := $(VENV)/deltalake-0.18.2
# Azurite (the Azure Blob emulator the object-store tests start) from the npm registry, into the
# venv; without npm the Azure tests skip with the reason.
AZURITE_VERSION := 3.37.0
NODE_DIR := $(VENV)/node
# Interpreters tried in order for a new venv; override with `make venv PYTHON=/path/to/python3.x`.
PYTHON_CANDIDATES := python3 python3.13 python3.12 python3.11
PYTEST_ARGS ?=
# Test processes: 2 (pytest-xdist) on this project's 2-core machines, each with one Spark session;
# `make test PYTEST_WORKERS=0` runs in one process.
PYTEST_WORKERS ?= 2
PYTEST := $(VENV)/bin/pytest -q $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS))
# Which tests used Spark in the classic pass: the Connect pass runs those (tests/spark_use.py).
SPARK_RECORD := .test-records/spark-use
# PySpark honours $JAVA_HOME before PATH; check the java it will actually use.
JAVA := $(if $(JAVA_HOME),$(JAVA_HOME)/bin/java,java)
# Runs an install step with its output in $(INSTALL_LOG); on failure shows the log's end.
define quietly
	@echo "  $(1)"
	@{ echo "== $(1)"; } >> $(INSTALL_LOG)
	@$(2) >> $(INSTALL_LOG) 2>&1 || { echo "ERROR: '$(1)' failed; the end of $(INSTALL_LOG):" >&2; \
	  tail -n 40 $(INSTALL_LOG) >&2; exit 1; }
endef

.PHONY: venv venv-test check-java lint test test-unit test-lowest-deps test-classic test-connect test-delta-oracle demo wheel schemas clean distclean databricks-cli fake-gcs-server jars older-clients test-clients-matrix clients-matrix

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


# ---- Older Delta clients the compatibility tests run for real (tools/src/delta_downgrade_tools/
# older_clients.py; README "Client compatibility"), under .clients/ (ignored by git):
# - one venv per pyspark line (pyspark 3.3, 3.4, 3.5: ~330 MB each; 4.0: ~490 MB) and, per delta-spark release,
#   its jars resolved by Maven from jars/clients/delta-<release>.pom.xml into the repository-local
#   Maven repository .clients/m2, their paths in .clients/delta-<release>.classpath (spark.jars):
#   one pyspark serves every delta-spark of its Spark line;
# - deltalake and Polars releases, each into its own directory (pip install --target, no
#   dependencies: the .venv's pyarrow, arro3-core and numpy serve them, as for deltalake 0.18.2).
# Fresh it takes ~2 min and ~1.3 GB (measured: see README); then nothing until a POM or a version
# below changes. Python 3.11 runs pyspark 3.3 to 3.5; Java 17 needs the --add-opens flags the
# launcher of Spark >= 3.3 adds itself.
CLIENTS_DIR := .clients
CLIENTS_M2 := $(CLIENTS_DIR)/m2
# pyspark line -> the release installed for it
PYSPARK_3.3 := 3.3.4
PYSPARK_3.4 := 3.4.4
PYSPARK_3.5 := 3.5.3
PYSPARK_4.0 := 4.0.1
SPARK_LINES := 3.3 3.4 3.5 4.0
# delta-spark releases (jars/clients/delta-<release>.pom.xml names the exact version)
DELTA_CLIENTS := $(patsubst jars/clients/delta-%.pom.xml,%,$(wildcard jars/clients/delta-*.pom.xml))
# directory name -> what pip installs there (name==version ...; deps of each are the .venv's)
PY_CLIENTS := deltalake-0.20.2 deltalake-0.25.5 deltalake-1.0.2 deltalake-1.5.1 deltalake-1.6.3 \
              polars-1.38.1 polars-1.41.2 polars-2.1.0
PY_CLIENT_PKGS_deltalake-0.20.2 := deltalake==0.20.2
PY_CLIENT_PKGS_deltalake-0.25.5 := deltalake==0.25.5
PY_CLIENT_PKGS_deltalake-1.0.2 := deltalake==1.0.2
PY_CLIENT_PKGS_deltalake-1.5.1 := deltalake==1.5.1
PY_CLIENT_PKGS_deltalake-1.6.3 := deltalake==1.6.3
# Polars reads through deltalake: older_clients.py puts a deltalake directory of the range its
# catalogue entry names behind each (polars >= 1.34 is polars and its polars-runtime-32 binary).
PY_CLIENT_PKGS_polars-1.38.1 := polars==1.38.1 polars-runtime-32==1.38.1
PY_CLIENT_PKGS_polars-1.41.2 := polars==1.41.2 polars-runtime-32==1.41.2
PY_CLIENT_PKGS_polars-2.1.0 := polars==2.1.0 polars-runtime-32==2.1.0
OLDER_CLIENTS_STAMPS := $(foreach l,$(SPARK_LINES),$(CLIENTS_DIR)/pyspark-$(l)/.installed) \
  $(CLIENTS_DIR)/delta.classpaths $(foreach c,$(PY_CLIENTS),$(CLIENTS_DIR)/py/$(c)/.installed)

older-clients: $(OLDER_CLIENTS_STAMPS)

$(CLIENTS_DIR)/pyspark-%/.installed:
	@echo "  pyspark $(PYSPARK_$*) venv in $(CLIENTS_DIR)/pyspark-$*"
	@rm -rf $(CLIENTS_DIR)/pyspark-$* && mkdir -p $(CLIENTS_DIR)
	@$(or $(PYTHON),python3) -m venv $(CLIENTS_DIR)/pyspark-$*
	@$(CLIENTS_DIR)/pyspark-$*/bin/python -m pip install -q pyspark==$(PYSPARK_$*) \
	  > $(CLIENTS_DIR)/pyspark-$*.log 2>&1 || { tail -n 30 $(CLIENTS_DIR)/pyspark-$*.log >&2; exit 1; }
	@touch $@

# One Maven run after the other: they share .clients/m2.
$(CLIENTS_DIR)/delta.classpaths: $(wildcard jars/clients/delta-*.pom.xml)
	@command -v $(MVN) >/dev/null 2>&1 || { echo "ERROR: Maven ($(MVN)) not found (apt-get install maven)" >&2; exit 1; }
	@mkdir -p $(CLIENTS_DIR)
	@for c in $(DELTA_CLIENTS); do \
	  echo "  delta-spark $$c jars -> $(CLIENTS_DIR)/delta-$$c.classpath"; \
	  $(MVN) -q -B -f jars/clients/delta-$$c.pom.xml -Dmaven.repo.local=$(abspath $(CLIENTS_M2)) \
	    -Dclasspath.file=$(abspath $(CLIENTS_DIR))/delta-$$c.classpath dependency:build-classpath; \
	  test -s $(CLIENTS_DIR)/delta-$$c.classpath; \
	done
	@touch $@

$(CLIENTS_DIR)/py/%/.installed: | $(PY)
	@echo "  $(PY_CLIENT_PKGS_$*) -> $(CLIENTS_DIR)/py/$*"
	@rm -rf $(CLIENTS_DIR)/py/$* && mkdir -p $(CLIENTS_DIR)/py
	@$(PY) -m pip install -q --no-deps --target $(CLIENTS_DIR)/py/$* $(PY_CLIENT_PKGS_$*) \
	  > $(CLIENTS_DIR)/py/$*.log 2>&1 || { tail -n 30 $(CLIENTS_DIR)/py/$*.log >&2; exit 1; }
	@touch $@
# ---- end of the older Delta clients


# The Databricks CLI (Go; not on PyPI or npm), built from its Go module at a pinned version into
# .tools/bin (ignored by git), once per version: the tests run its `bundle validate` and
# `bundle deploy`. Its go.mod needs Go >= 1.26 (.ci/run installs it where missing). `go install
# module@version` asks the module proxy for the module's version list (its deprecation check),
# which some proxies refuse; a throw-away module that requires the pinned version builds the same
# package from the same checksum-verified sources without that call.
DATABRICKS_CLI_VERSION := 1.12.1
# The `go` line of that version's go.mod: an older Go (>= 1.21) fetches this toolchain itself from
# the module proxy (GOTOOLCHAIN=auto).
DATABRICKS_CLI_GO := 1.26.0
TOOLS_BIN := .tools/bin
DATABRICKS_CLI := $(TOOLS_BIN)/databricks-$(DATABRICKS_CLI_VERSION)
# go on PATH, else /usr/local/go (where this machine kind has it).
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)

databricks-cli: $(DATABRICKS_CLI)

$(DATABRICKS_CLI):
	@mkdir -p $(TOOLS_BIN) .tools/build
	@echo "building the Databricks CLI v$(DATABRICKS_CLI_VERSION) with $$($(GO) version) (a few minutes, once)"
	@cd .tools/build && rm -f go.mod go.sum && $(GO) mod init databricks-cli-build >/dev/null 2>&1 \
	  && $(GO) mod edit -go=$(DATABRICKS_CLI_GO) -require=github.com/databricks/cli@v$(DATABRICKS_CLI_VERSION) \
	  && start=$$(date +%s) \
	  && GOTOOLCHAIN=auto $(GO) build -mod=mod -trimpath \
	     -ldflags '-s -w -X github.com/databricks/cli/internal/build.buildVersion=$(DATABRICKS_CLI_VERSION)' -o ../../$(DATABRICKS_CLI).tmp github.com/databricks/cli \
	  && echo "built in $$(( $$(date +%s) - start )) s"
	@mv $(DATABRICKS_CLI).tmp $(DATABRICKS_CLI)
	@ln -sf databricks-$(DATABRICKS_CLI_VERSION) $(TOOLS_BIN)/databricks
	@$(DATABRICKS_CLI) --version

# fake-gcs-server (Go; the GCS emulator the object-store tests start), built from its Go module at
# a pinned version into .tools/bin like the Databricks CLI above, once per version. The PyPI
# wrapper's older binary ignores ifGenerationMatch=0 on uploads; this one decides it (the
# condition a commit relies on), so the GCS write tests run against it (tests/object_stores.py).
FAKE_GCS_SERVER_VERSION := 1.56.1
FAKE_GCS_SERVER_GO := 1.26.0
FAKE_GCS_SERVER := $(TOOLS_BIN)/fake-gcs-server-$(FAKE_GCS_SERVER_VERSION)

fake-gcs-server: $(FAKE_GCS_SERVER)

$(FAKE_GCS_SERVER):
	@mkdir -p $(TOOLS_BIN) .tools/build-fake-gcs-server
	@echo "building fake-gcs-server v$(FAKE_GCS_SERVER_VERSION) with $$($(GO) version) (a few minutes, once)"
	@cd .tools/build-fake-gcs-server && rm -f go.mod go.sum && $(GO) mod init fake-gcs-server-build >/dev/null 2>&1 \
	  && $(GO) mod edit -go=$(FAKE_GCS_SERVER_GO) -require=github.com/fsouza/fake-gcs-server@v$(FAKE_GCS_SERVER_VERSION) \
	  && start=$$(date +%s) \
	  && GOTOOLCHAIN=auto $(GO) build -mod=mod -trimpath -ldflags '-s -w' \
	     -o ../../$(FAKE_GCS_SERVER).tmp github.com/fsouza/fake-gcs-server \
	  && echo "built in $$(( $$(date +%s) - start )) s"
	@mv $(FAKE_GCS_SERVER).tmp $(FAKE_GCS_SERVER)
	@ln -sf fake-gcs-server-$(FAKE_GCS_SERVER_VERSION) $(TOOLS_BIN)/fake-gcs-server

venv: $(DEMO_STAMP)
venv-test: $(TEST_STAMP)

$(PY):
	@py=""; \
	for c in $(or $(PYTHON),$(PYTHON_CANDIDATES)); do \
	  if command -v "$$c" >/dev/null 2>&1 && \
	     "$$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' >/dev/null 2>&1; then \
	    py="$$c"; break; \
	  fi; \
	done; \
	if [ -z "$$py" ]; then \
	  echo "ERROR: no Python >= 3.11 found (tried: $(or $(PYTHON),$(PYTHON_CANDIDATES))); set PYTHON=/path/to/python3.x" >&2; \
	  exit 1; \
	fi; \
	echo "Creating $(VENV) with $$py ($$("$$py" -c 'import sys; print(sys.version.split()[0])'))"; \
	"$$py" -m venv $(VENV) || { \
	  echo "ERROR: '$$py -m venv' failed; on Debian/Ubuntu install the python3-venv package" >&2; \
	  rm -rf $(VENV); exit 1; }

# The repository-only tools (tools/: table builders, demo, run-job/validate-bundle) are installed
# here next to the package and nowhere else: the wheel (`make wheel`) never contains them.
$(DEMO_STAMP): pyproject.toml tools/pyproject.toml | $(PY)
	@echo "Installing into $(VENV) (pip's output: $(INSTALL_LOG))"
	$(call quietly,pip install --upgrade pip,$(PY) -m pip install --upgrade pip)
	$(call quietly,pip install -e '.[local]' -e tools,$(PY) -m pip install -e '.[local]' -e tools)
	@rm -rf $(DELTALAKE_018)
	$(call quietly,pip install --target $(DELTALAKE_018) deltalake==0.18.2,$(PY) -m pip install --no-deps --target $(DELTALAKE_018) deltalake==0.18.2 pyarrow-hotfix==0.7)
	@touch $@

# pip >= 25.1 reads dependency groups (--group); the step above upgraded it.
$(TEST_STAMP): $(DEMO_STAMP) pyproject.toml
	@echo "Installing the test tools into $(VENV) (output: $(INSTALL_LOG))"
	$(call quietly,pip install --group test,$(PY) -m pip install -e '.[local]' --group test)
	@if command -v npm >/dev/null 2>&1; then \
	  echo "  npm install azurite@$(AZURITE_VERSION)"; \
	  npm install --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error azurite@$(AZURITE_VERSION) \
	    >> $(INSTALL_LOG) 2>&1 || { tail -n 40 $(INSTALL_LOG) >&2; exit 1; }; \
	else \
	  echo "npm not found: Azurite is not installed and the Azure object-store tests will skip"; \
	fi
	@touch $@

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

# The whole suite on classic Spark (recording which tests used Spark), then those tests again on
# Spark Connect (a Connect server of its own, as Databricks serverless;
# tests/spark_connect_server.py).
test: lint test-lowest-deps test-classic test-connect

# The inner loop: the unit tier starts no JVM, server or child process (tests/unit_tier_guard.py).
# The linter ([tool.ruff] in pyproject.toml), on everything Python in the repository, then the
# type checker on the package ([tool.mypy]: strict on protocol/ and log/); first, as they take
# seconds.
lint: venv-test
	$(VENV)/bin/ruff check src tools/src bench tests
	$(VENV)/bin/mypy

test-unit: venv-test
	$(VENV)/bin/pytest -q tests/unit $(PYTEST_ARGS)

# The unit tier again with every runtime dependency at the lower bound pyproject.toml gives it
# (pip keeps what an environment already has when it satisfies the bound: a Databricks runtime's
# own pyarrow, say), laid over the test venv's packages with a numpy 1, as a runtime with the oldest
# pyarrow has: lower bounds that have been run, not guessed. The first line checks the pins are
# what is imported. The committed JSON Schemas are what the development pydantic generates (an
# older one spells some the same schema differently): that one comparison is left out.
LOWEST_PINS = $(shell $(PY) -m delta_downgrade_tools.lowest_requirements pyproject.toml 2>/dev/null)
LOWEST_DIR := $(VENV)/lowest-deps

test-lowest-deps: venv-test $(LOWEST_DIR)/.installed
	PYTHONPATH=$(abspath $(LOWEST_DIR)) $(PY) -m delta_downgrade_tools.lowest_requirements --check pyproject.toml
	PYTHONPATH=$(abspath $(LOWEST_DIR)) $(PYTEST) tests/unit $(PYTEST_ARGS) \
	  --deselect tests/unit/app/test_output_schemas.py::test_committed_schemas_are_what_the_models_generate

$(LOWEST_DIR)/.installed: pyproject.toml | $(TEST_STAMP)
	@test -n "$(LOWEST_PINS)" || { $(PY) -m delta_downgrade_tools.lowest_requirements pyproject.toml; exit 1; }
	@rm -rf $(LOWEST_DIR)
	$(PY) -m pip install -q --target $(LOWEST_DIR) $(LOWEST_PINS) "numpy<2"
	@touch $@

# --durations: the slowest tests of each pass are printed, to keep the suite inside its budget.
test-classic: venv-test check-java databricks-cli fake-gcs-server jars older-clients
	$(PYTEST) --spark-record=$(SPARK_RECORD) --durations=25 $(PYTEST_ARGS)

test-connect: venv-test check-java databricks-cli fake-gcs-server jars older-clients
	$(PYTEST) --spark-connect --spark-record=$(SPARK_RECORD) --durations=10 $(PYTEST_ARGS)

# delta-spark's DROP FEATURE against this package's on every golden and delta-spark corpus table x
# feature (make test runs a stratified sample of it: tests/integration/test_drop_against_delta_spark.py).
test-delta-oracle: venv-test check-java jars
	DELTA_DOWNGRADE_DELTA_ORACLE=all $(PYTEST) tests/integration/test_drop_against_delta_spark.py $(PYTEST_ARGS)

# The compatibility matrix verified with the real clients (tools/src/delta_downgrade_tools/
# clients_matrix.py): every table x droppable feature read and written by every older delta-spark
# installed here, before and after truncate-history, and every catalogue entry with a client here
# against that client, before and after drop-feature --for it. Writes docs/clients-matrix.md and
# .html (README links them) and fails on a failed cell; `make test` runs a sample of it
# (tests/integration/test_older_clients_read_dropped_tables.py). Hours on a busy 2-core machine.
# CLIENTS_MATRIX_JVMS: at most that many delta-spark JVMs at once, the reference's included (the
# run then goes client by client); CLIENTS_MATRIX_ARGS: a slice (--tables, --features, --clients,
# --parts, --cells FILE; README "Verified with the real clients").
CLIENTS_MATRIX_JVMS ?= 2
CLIENTS_MATRIX_ARGS ?=
clients-matrix: venv-test check-java jars older-clients
	$(PY) -m delta_downgrade_tools.clients_matrix --out docs --scope all --jvms $(CLIENTS_MATRIX_JVMS) $(CLIENTS_MATRIX_ARGS)

test-clients-matrix: clients-matrix

demo: venv check-java
	$(PY) -m delta_downgrade_tools.demo

# The wheel, then its METADATA checked against what its code imports (no development tool, no
# runtime requirement nobody imports: tools/src/delta_downgrade_tools/wheel_metadata.py).
wheel: venv-test
	rm -f dist/delta_downgrade-*.whl
	$(PY) -m build --wheel
	$(PY) -m delta_downgrade_tools.wheel_metadata dist/delta_downgrade-*.whl

# The JSON Schemas of every RESULT line and --json document, generated from their pydantic models
# (src/delta_downgrade/app/schemas/) into docs/schemas/; tests/unit/test_output_schemas.py fails
# when the committed files differ from what the models generate.
schemas: venv
	$(PY) -m delta_downgrade_tools.schemas

clean:
	rm -rf build dist .pytest_cache .test-records spark-warehouse metastore_db derby.log
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name '*.egg-info' \) -type d -print0 \
	  | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV) $(JARS_DIR) $(CLIENTS_DIR)
